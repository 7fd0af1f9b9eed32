"""jax.experimental.sparse's BCOO format against JAX 0.10.2: buffers (data, indices, padding)
and layout of fromdense, todense, transposes, sums, contractions, empty and eye; jit, grad and
vmap of functions through them; the errors JAX raises."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.experimental import sparse as jsp

import arrax
import arrax.numpy as anp
from arrax.experimental import sparse as asp
from arrax.test_util import check_grads
from tests.oracle import BF16, assert_same, rand, same_exception

LIBS = ((arrax, anp, asp), (jax, jnp, jsp))


def _sparse_values(shape, dtype=np.float32, seed=0, density=0.5):
  x = rand(shape, dtype, seed)
  keep = np.random.default_rng(seed + 1).random(shape) < density
  return np.where(keep, x, np.zeros((), x.dtype)).astype(x.dtype)


def _bufs(m):
  return (m.data, m.indices, m.shape, m.nse, m.n_batch, m.n_sparse, m.n_dense,
          m.indices_sorted, m.unique_indices)


def _check_cases(cases):
  """Each case fn(top, np, sparse) gives the same result in both libraries (or the same
  error class); reports every failing case at once."""
  failures = []
  for name, fn in cases.items():
    out = []
    for lib in LIBS:
      try:
        out.append(fn(*lib))
      except Exception as e:  # noqa: BLE001
        out.append(e)
    a, j = out
    try:
      if isinstance(j, Exception):
        def rerun(a=a):
          if isinstance(a, Exception):
            raise a
        same_exception(rerun, j)
      else:
        assert not isinstance(a, Exception), f"arrax raised {type(a).__name__}: {a}"
        assert_same(a, j, strict_tree=True)
    except (AssertionError, pytest.fail.Exception) as e:
      failures.append(f"{name}: {str(e)[:500]}")
  assert not failures, "\n".join(failures)


X3 = _sparse_values((2, 3, 4))
# (n_batch, n_dense) of a 3-d array: a few, as each new layout compiles new programs
LAYOUTS = [(0, 0), (1, 1), (2, 0)]


def test_fromdense_todense_layouts():
  cases = {}
  for nb, nd in LAYOUTS:
    def layout(t, n, s, nb=nb, nd=nd):
      m = s.bcoo_fromdense(n.asarray(X3), n_batch=nb, n_dense=nd)
      return _bufs(m), s.bcoo_todense(m), repr(m)
    cases[f"b{nb}d{nd}"] = layout
  x2 = _sparse_values((3, 4), seed=3)
  for nse in (None, 2, 9):
    cases[f"nse={nse}"] = lambda t, n, s, nse=nse: (
        lambda m: (_bufs(m), m.todense()))(s.BCOO.fromdense(n.asarray(x2), nse=nse))
  cases["index_dtype"] = lambda t, n, s: _bufs(s.BCOO.fromdense(n.asarray(x2),
                                                                 index_dtype=np.int8))
  cases["0d"] = lambda t, n, s: _bufs(s.BCOO.fromdense(n.asarray(np.float32(2))))
  cases["empty_array"] = lambda t, n, s: _bufs(s.BCOO.fromdense(n.zeros((0, 3))))
  cases["all_zero"] = lambda t, n, s: _bufs(s.BCOO.fromdense(n.zeros((2, 3)), n_batch=1))
  cases["nan_inf"] = lambda t, n, s: (lambda m: (_bufs(m), m.todense()))(
      s.BCOO.fromdense(n.array([[np.nan, 0.0], [-np.inf, -0.0]], np.float32)))
  cases["from_buffers_duplicates"] = lambda t, n, s: s.BCOO(
      (n.array([1.0, 2.0, 3.0]), n.array([[0, 1], [0, 1], [3, 0]])), shape=(3, 2)).todense()
  cases["properties"] = lambda t, n, s: (
      lambda m: (len(m), m.size, m.ndim, str(m.dtype), m.T.shape))(s.eye(3, 4))
  cases["bad_data_shape"] = lambda t, n, s: s.BCOO(
      (n.ones(3), n.zeros((2, 2), n.int32)), shape=(3, 4))
  cases["bad_batch"] = lambda t, n, s: s.BCOO(
      (n.ones((2, 1)), n.zeros((3, 1, 1), n.int32)), shape=(2, 4))
  _check_cases(cases)


@pytest.mark.parametrize("dtype", [np.bool_, np.uint8, BF16, np.complex64])
def test_dtypes(dtype):
  x = _sparse_values((3, 4), dtype, seed=5)
  v = rand((4, 2), dtype, seed=6)
  cases = {
      "roundtrip": lambda t, n, s: (lambda m: (_bufs(m), s.todense(m)))(
          s.BCOO.fromdense(n.asarray(x), n_batch=1)),
      "matmul": lambda t, n, s: s.BCOO.fromdense(n.asarray(x)) @ n.asarray(v),
  }
  if dtype == np.bool_:   # (JAX's sparse product of booleans is weakly typed: not matched)
    del cases["matmul"]
  _check_cases(cases)


def test_transpose_and_reduce_sum():
  cases = {}
  for nb, nd in [(0, 0), (1, 0), (0, 1)]:
    for perm in [(0, 2, 1), (2, 1, 0)]:
      cases[f"transpose b{nb}d{nd} {perm}"] = lambda t, n, s, nb=nb, nd=nd, perm=perm: (
          lambda m: (_bufs(m), m.todense()))(s.bcoo_transpose(
              s.bcoo_fromdense(n.asarray(X3), n_batch=nb, n_dense=nd), permutation=perm))
    for axes in [(0,), (2,), (0, 1, 2)]:
      cases[f"sum b{nb}d{nd} {axes}"] = lambda t, n, s, nb=nb, nd=nd, axes=axes: (
          lambda m: (_bufs(m), m.todense()))(s.bcoo_reduce_sum(
              s.bcoo_fromdense(n.asarray(X3), n_batch=nb, n_dense=nd), axes=axes))
  cases[".T"] = lambda t, n, s: _bufs(s.BCOO.fromdense(n.asarray(X3[0])).T)
  cases["transpose()"] = lambda t, n, s: _bufs(s.BCOO.fromdense(n.asarray(X3)).transpose())
  cases["not_a_permutation"] = lambda t, n, s: s.bcoo_transpose(
      s.BCOO.fromdense(n.asarray(X3)), permutation=(0, 1))
  cases["permutation_type"] = lambda t, n, s: s.bcoo_transpose(
      s.BCOO.fromdense(n.asarray(X3)), permutation=range(3))
  _check_cases(cases)


def test_dot_general_and_matmul():
  x = _sparse_values((3, 4), seed=7)
  y = rand((2, 4, 5), seed=8)
  dn_batch = (((2,), (1,)), ((0,), (0,)))
  _check_cases({
      "sparse_dense": lambda t, n, s: s.bcoo_dot_general(
          s.bcoo_fromdense(n.asarray(X3), n_batch=1), n.asarray(y), dimension_numbers=dn_batch),
      "dense_sparse": lambda t, n, s: s.bcoo_dot_general(
          n.asarray(y), s.bcoo_fromdense(n.asarray(X3), n_dense=1),
          dimension_numbers=(((1,), (2,)), ((0,), (0,)))),
      "dense_dense": lambda t, n, s: s.bcoo_dot_general(
          n.asarray(x), n.asarray(x), dimension_numbers=(((1,), (1,)), ((), ()))),
      "preferred": lambda t, n, s: s.bcoo_dot_general(
          s.BCOO.fromdense(n.asarray(x.astype(np.int8))), n.ones((4,), n.int8),
          dimension_numbers=(((1,), (0,)), ((), ())), preferred_element_type=n.int32),
      "matmul": lambda t, n, s: s.BCOO.fromdense(n.asarray(x)) @ n.ones((4, 2)),
      "matvec_promotes": lambda t, n, s: s.BCOO.fromdense(n.asarray(x)) @ n.ones(4, n.int32),
      "rmatmul": lambda t, n, s: n.ones((2, 3)) @ s.BCOO.fromdense(n.asarray(x)),
      "scalar_weak": lambda t, n, s: s.BCOO.fromdense(n.asarray(x)) @ n.ones(4) * 2,
  })


def test_empty_and_eye():
  cases = {
      "empty": lambda t, n, s: _bufs(s.empty((3, 4))),
      "empty_layout": lambda t, n, s: _bufs(s.empty((2, 3, 4), n.int8, n_batch=1, n_dense=1,
                                                    nse=2)),
      "empty_index_dtype": lambda t, n, s: _bufs(s.empty((5,), index_dtype=n.int16)),
      "empty_bad_layout": lambda t, n, s: s.empty((3,), n_batch=2),
      "empty_bad_format": lambda t, n, s: s.empty((3,), sparse_format="dia"),
      "eye_square": lambda t, n, s: _bufs(s.eye(3)),
      "eye_dense": lambda t, n, s: _bufs(s.eye(3, n_dense=1)),
      "eye_batch2": lambda t, n, s: _bufs(s.eye(2, 3, n_batch=2)),
      "eye_dtype": lambda t, n, s: _bufs(s.eye(2, 3, 1, dtype=n.complex64,
                                               index_dtype=n.int8)),
      "eye_bad_layout": lambda t, n, s: s.eye(2, n_batch=3),
  }
  for k in (-5, -1, 0, 2, 4):
    for nb in (0, 1):
      cases[f"eye k={k} n_batch={nb}"] = lambda t, n, s, k=k, nb=nb: (
          lambda m: (_bufs(m), m.todense()))(s.eye(3, 4, k, n_batch=nb))
  _check_cases(cases)


def test_todense_passes_dense_through():
  _check_cases({
      "dense": lambda t, n, s: s.todense(n.ones(3, n.int8)),
      "sparse": lambda t, n, s: s.todense(s.eye(2)),
  })


def test_transformations():
  x = _sparse_values((3, 4), seed=9)
  idx = np.array([[0, 1], [2, 3], [0, 1]])
  _check_cases({
      "jit_bcoo_in_out": lambda t, n, s: (lambda r: (_bufs(r[0]), r[1]))(
          t.jit(lambda m: (m.T, m.todense() * 2))(s.BCOO.fromdense(n.asarray(x)))),
      "jit_fromdense": lambda t, n, s: _bufs(
          t.jit(lambda a: s.BCOO.fromdense(a, nse=5))(n.asarray(x))),
      "jit_fromdense_needs_nse": lambda t, n, s: t.jit(s.BCOO.fromdense)(n.asarray(x)),
      "jit_reduce_sum": lambda t, n, s: _bufs(t.jit(
          lambda m: s.bcoo_reduce_sum(m, axes=(1,)))(s.BCOO.fromdense(n.asarray(X3),
                                                                       n_batch=1))),
      "grad_data": lambda t, n, s: t.grad(lambda d: (s.BCOO((d, n.asarray(idx)), shape=(3, 4))
                                                     .todense() ** 2).sum())(n.ones(3)),
      "grad_matmul": lambda t, n, s: t.grad(
          lambda v: (s.BCOO.fromdense(n.asarray(x)) @ v).sum())(n.ones(4)),
      "grad_fromdense": lambda t, n, s: t.grad(
          lambda a: (s.BCOO.fromdense(a, nse=5).todense() * a).sum())(n.asarray(x)),
      "vmap_dense_in": lambda t, n, s: t.vmap(
          lambda a: s.bcoo_reduce_sum(s.BCOO.fromdense(a, nse=3), axes=(0,)).todense())(
              n.asarray(X3)),
      "vmap_matmul": lambda t, n, s: t.vmap(
          lambda v: s.BCOO.fromdense(n.asarray(x)) @ v)(n.asarray(rand((2, 4)))),
  })


def test_numerical_gradients():
  x = _sparse_values((3, 4), seed=10)
  m = asp.BCOO.fromdense(anp.asarray(x))
  check_grads(lambda v: m @ v, (anp.asarray(rand((4, 2), seed=11)),), order=2,
              modes=("fwd", "rev"))
  check_grads(lambda d: asp.bcoo_reduce_sum(asp.BCOO((d, m.indices), shape=m.shape),
                                            axes=(0,)).todense(), (m.data,), order=1)


def test_x64_default_dtypes(x64):
  _check_cases({
      "fromdense": lambda t, n, s: _bufs(s.BCOO.fromdense(n.asarray(X3.astype(np.float64)))),
      "eye": lambda t, n, s: _bufs(s.eye(3, 2)),
      "empty": lambda t, n, s: _bufs(s.empty((2, 2))),
  })


def test_vmap_over_bcoo_argument():
  _check_cases({"vmap": lambda t, n, s: t.vmap(lambda m: m.todense())(
      s.bcoo_fromdense(n.asarray(X3), n_batch=1))})


def test_sparse_sparse_product():
  x = _sparse_values((3, 4), seed=12)
  _check_cases({"spsp": lambda t, n, s: _bufs(
      s.BCOO.fromdense(n.asarray(x)) @ s.BCOO.fromdense(n.asarray(x.T)))})


def test_array_transpose_with_one_int_axis():
  # (used by bcoo_transpose: `x.transpose(0)` of a 1-d array, as NumPy and JAX take it)
  _check_cases({"1d": lambda t, n, s: n.arange(3).transpose(0),
                "bad": lambda t, n, s: n.ones((2, 2)).transpose(1)})
