"""jax.experimental.sparse beyond BCOO's basics, against JAX 0.10.2: BCOO's structural
operations (buffers and flags compared, where JAX's layout is deterministic), the primitives
under jit/grad/vmap, sparsify and the operator methods built on it, BCSR/COO/CSR/CSC, the
sparse autodiff wrappers and the errors JAX raises."""
import numpy as np
import pytest
from jax.experimental import sparse as jsp

import arrax.numpy as anp
from arrax.experimental import sparse as asp
from arrax.test_util import check_grads
from tests.oracle import assert_close
from tests.test_sparse_bcoo import LIBS, _bufs, _check_cases, _sparse_values

X = np.array([[0, 1., 0, 2], [3, 0, 0, 0], [0, 0, 4, 5]], np.float32)
X3 = _sparse_values((2, 3, 4), seed=3)
DN = (([1], [0]), ([], []))


def _m(n, s, x=X, **kw):
  return s.BCOO.fromdense(n.asarray(x), **kw)


def test_structural_ops():
  dup = lambda n, s: s.BCOO((n.array([1., 2, 3, 4]), n.array([[0, 1], [2, 2], [0, 1], [5, 0]])),
                            shape=(3, 3))
  _check_cases({
      "update_layout_unbatch": lambda t, n, s: _bufs(s.bcoo_update_layout(
          _m(n, s, X3, n_batch=1), n_batch=0)),
      "concat_sparse": lambda t, n, s: _bufs(s.bcoo_concatenate([_m(n, s), _m(n, s)],
                                                                dimension=1)),
      "slice": lambda t, n, s: _bufs(s.bcoo_slice(_m(n, s), start_indices=(1, 0),
                                                  limit_indices=(3, 4), strides=(1, 2))),
      "dynamic_slice": lambda t, n, s: _bufs(s.bcoo_dynamic_slice(_m(n, s, X3, n_batch=1),
                                                                  (1, 1, -1), (1, 2, 2))),
      "rev": lambda t, n, s: _bufs(s.bcoo_rev(_m(n, s, X3, n_batch=1), (0, 2))),
      "broadcast_in_dim": lambda t, n, s: _bufs(s.bcoo_broadcast_in_dim(
          _m(n, s), shape=(2, 3, 4), broadcast_dimensions=(1, 2))),
      "reshape": lambda t, n, s: _bufs(s.bcoo_reshape(_m(n, s, X3, n_batch=1),
                                                      new_sizes=(2, 12))),
      "squeeze": lambda t, n, s: _bufs(s.bcoo_squeeze(_m(n, s, X[None]), dimensions=(0,))),
      "multiply_sparse": lambda t, n, s: _bufs(s.bcoo_multiply_sparse(_m(n, s), _m(n, s))),
      "multiply_dense": lambda t, n, s: s.bcoo_multiply_dense(_m(n, s), n.arange(4.)),
      "sampled": lambda t, n, s: s.bcoo_dot_general_sampled(
          n.ones((3, 2)), n.arange(8.).reshape(2, 4), _m(n, s).indices, dimension_numbers=DN),
      "extract_dup": lambda t, n, s: s.bcoo_extract(dup(n, s), n.arange(9.).reshape(3, 3),
                                                    assume_unique=False).data,
      "sum_duplicates": lambda t, n, s: _bufs(s.bcoo_sum_duplicates(dup(n, s))),
      "sum_duplicates_nse": lambda t, n, s: _bufs(dup(n, s).sum_duplicates(nse=4)),
      "sort_indices": lambda t, n, s: _bufs(s.bcoo_sort_indices(dup(n, s))),
      "spdot": lambda t, n, s: _bufs(s.bcoo_dot_general(_m(n, s), _m(n, s).T,
                                                        dimension_numbers=DN)),
      "dot_batched_dense": lambda t, n, s: s.bcoo_dot_general(
          _m(n, s, X3, n_batch=1, n_dense=1), n.ones((2, 3, 5)),
          dimension_numbers=(([1], [1]), ([0], [0]))),
      "rdot": lambda t, n, s: s.bcoo_dot_general(n.ones((2, 3)), _m(n, s),
                                                 dimension_numbers=(([1], [0]), ([], []))),
      "dot_preferred": lambda t, n, s: s.bcoo_dot_general(
          _m(n, s, X.astype(np.int8)), n.ones(4, np.int8), dimension_numbers=DN,
          preferred_element_type=np.int32),

  })


def test_transformations_of_primitives():
  v = np.arange(4.0, dtype=np.float32)

  def dot(s, d, i, v):
    return s.bcoo_dot_general(s.BCOO((d, i), shape=(3, 4)), v, dimension_numbers=DN)
  _check_cases({
      "jit_dot": lambda t, n, s: t.jit(lambda m, v: m @ v)(_m(n, s), n.asarray(v)),
      "grad_dot": lambda t, n, s: t.grad(lambda d, v: dot(s, d, _m(n, s).indices, v).sum(),
                                         (0, 1))(_m(n, s).data, n.asarray(v)),
      "grad_todense": lambda t, n, s: t.grad(lambda d: (s.BCOO((d, _m(n, s).indices),
                                                               shape=(3, 4)).todense()
                                                        * n.arange(12.).reshape(3, 4)).sum())(
          _m(n, s).data),
      "vmap_fromdense": lambda t, n, s: _bufs(t.vmap(lambda x: s.bcoo_fromdense(x, nse=3))(
          n.asarray(X3))),
      "vmap_dot": lambda t, n, s: t.vmap(lambda x, v: s.bcoo_fromdense(x, nse=4) @ v,
                                         (0, None))(n.asarray(X3), n.asarray(v)),
      "vmap_bcoo_arg": lambda t, n, s: t.vmap(lambda m: (m.T @ n.ones(3)))(
          _m(n, s, X3, n_batch=1)),
      "vmap_bcoo_axis1": lambda t, n, s: t.vmap(lambda m: m.todense(), in_axes=1)(
          _m(n, s, X3, n_batch=2)),
      "sparse_grad": lambda t, n, s: _bufs(s.grad(lambda m, v: (m @ v).sum())(
          _m(n, s), n.asarray(v))),
      "sparse_value_and_grad": lambda t, n, s: (lambda vg: (vg[0], _bufs(vg[1])))(
          s.value_and_grad(lambda m: (m @ n.ones(4)).sum())(_m(n, s))),
      "sparse_jacfwd": lambda t, n, s: _bufs(s.jacfwd(lambda m: m @ n.ones(4))(_m(n, s))),
      "todense_grad": lambda t, n, s: t.grad(lambda d: s.todense(
          s.BCOO((d, _m(n, s).indices), shape=(3, 4))).sum())(_m(n, s).data),
  })
  m = asp.BCOO.fromdense(anp.asarray(X))
  check_grads(lambda d, v: asp.bcoo_dot_general(asp.BCOO((d, m.indices), shape=m.shape), v,
                                                dimension_numbers=DN),
              (m.data, anp.asarray(v)), order=1, modes=("fwd", "rev"))


def test_jaxpr_text():
  texts = []
  for t, n, s in LIBS:
    m = _m(n, s)
    texts.append(str(t.make_jaxpr(lambda m, v, s=s, n=n: (m @ v, m.T.todense(), s.bcoo_extract(
        m, v * n.ones((3, 1))).data, s.bcoo_sort_indices(m).data))(m, n.ones(4))))
  assert texts[0] == texts[1]


def test_sparsify_and_methods():
  v3 = np.arange(3.0, dtype=np.float32)
  _check_cases({
      "sparsify_dot": lambda t, n, s: s.sparsify(lambda M, v: 2 * M.T @ v)(_m(n, s),
                                                                          n.asarray(v3)),
      "sparsify_sparse_out": lambda t, n, s: _bufs(s.sparsify(lambda M: (M * 3).T)(_m(n, s))),
      "sparsify_sum": lambda t, n, s: s.sparsify(lambda M: M.sum(1))(_m(n, s)).todense(),
      "sparsify_add": lambda t, n, s: _bufs(s.sparsify(lambda A, B: A + B)(_m(n, s),
                                                                          _m(n, s))),
      "sparsify_add_dense": lambda t, n, s: s.sparsify(lambda A, B: A + B)(
          _m(n, s), n.ones((3, 4))),
      "sparsify_jit_inside": lambda t, n, s: s.sparsify(t.jit(lambda M, v: M @ v))(
          _m(n, s), n.ones(4)),
      "sparsify_cond": lambda t, n, s: s.sparsify(lambda m: t.lax.cond(
          True, lambda x: x.sum(), lambda x: (2 * x).sum(), m))(_m(n, s)),
      "sparsify_while": lambda t, n, s: _bufs(s.sparsify(lambda m: t.lax.while_loop(
          lambda c: c[1] < 3, lambda c: (c[0] * 2, c[1] + 1), (m, 0))[0])(_m(n, s))),
      "sparsify_fori": lambda t, n, s: s.sparsify(lambda m, v: t.lax.fori_loop(
          0, 3, lambda i, v: m @ (m.T @ v), v))(_m(n, s), n.ones(3)),
      "jit_bcoo_result": lambda t, n, s: _bufs(t.jit(lambda m: m * 2)(_m(n, s))),
      "exp_densifies": lambda t, n, s: s.sparsify(n.exp)(_m(n, s)),
      "sub_dense": lambda t, n, s: s.sparsify(lambda A, B: A - B)(_m(n, s), n.ones((3, 4))),
      "div_by_sparse": lambda t, n, s: s.sparsify(lambda A: 1.0 / A)(_m(n, s)),
      "methods": lambda t, n, s: [x.todense() if isinstance(x, s.BCOO) else x for x in (
          _m(n, s) * 2, -_m(n, s), abs(_m(n, s)), _m(n, s) / 2.0, _m(n, s) ** 2,
          _m(n, s).sum(), _m(n, s)[1], _m(n, s)[:, 1:3], _m(n, s).reshape(4, 3),
          _m(n, s).astype(np.int32), n.ones((2, 3)) @ _m(n, s), _m(n, s) - _m(n, s))],
  })


def test_other_formats():
  x = n_x = X
  _check_cases({
      "bcsr": lambda t, n, s: (lambda b: (b.data, b.indices, b.indptr, b.todense(), repr(b),
                                          b @ n.ones(4), b.to_bcoo().indices,
                                          s.BCSR.from_bcoo(_m(n, s)).indptr))(
          s.BCSR.fromdense(n.asarray(x))),
      "bcsr_dot": lambda t, n, s: s.bcsr_dot_general(
          s.BCSR.fromdense(n.asarray(x)), n.ones((4, 2)), dimension_numbers=DN),
      "bcsr_extract": lambda t, n, s: (lambda b: s.bcsr_extract(b.indices, b.indptr,
                                                                n.ones((3, 4))))(
          s.BCSR.fromdense(n.asarray(x))),
      "bcsr_grad": lambda t, n, s: t.grad(lambda x: s.bcsr_fromdense(x, nse=5).data.sum())(
          n.asarray(x)),
      "coo": lambda t, n, s: (lambda c: (c.data, c.row, c.col, c.todense(), c @ n.ones(4),
                                         c.T @ n.ones(3), s.coo_matmat(c, n.ones((4, 2)))))(
          s.COO.fromdense(n.asarray(x))),
      "csr": lambda t, n, s: (lambda c: (c.data, c.indices, c.indptr, c.todense(),
                                         c @ n.ones(4), c.T @ n.ones(3),
                                         s.csr_matvec(c, n.ones(3), transpose=True)))(
          s.CSR.fromdense(n.asarray(x))),
      "csc": lambda t, n, s: (lambda c: (c.data, c.indices, c.indptr, c.todense(),
                                         c @ n.ones((4, 2))))(s.CSC.fromdense(n.asarray(x))),
      "eye": lambda t, n, s: [s.eye(3, 4, k=k, sparse_format=f).todense()
                              for f, k in (("coo", -1), ("csr", 2), ("csc", 1))],
      "empty": lambda t, n, s: [s.empty((2, 3), sparse_format=f).todense()
                                for f in ("bcoo", "bcsr", "coo", "csr", "csc")],
      "coo_grad": lambda t, n, s: t.grad(lambda d: s.coo_matvec(
          s.COO((d, n.array([0, 2]), n.array([1, 1])), shape=(3, 2)), n.ones(2)).sum())(
          n.ones(2)),
  })
  del n_x


def test_errors():
  _check_cases({
      "update_layout_inefficient": lambda t, n, s: _m(n, s).update_layout(n_batch=1),
      "update_layout_bad": lambda t, n, s: _m(n, s).update_layout(n_batch=3),
      "dense_contraction": lambda t, n, s: s.bcoo_dot_general(
          _m(n, s, n_dense=1), n.ones(4), dimension_numbers=DN),
      "concat_dense_dim": lambda t, n, s: s.bcoo_concatenate(
          [_m(n, s, n_dense=1)] * 2, dimension=1),
      "slice_bad": lambda t, n, s: s.bcoo_slice(_m(n, s), start_indices=(0, 0),
                                                limit_indices=(4, 4)),
      "squeeze_bad": lambda t, n, s: s.bcoo_squeeze(_m(n, s), dimensions=(0,)),
      "fromdense_traced_nse": lambda t, n, s: t.jit(lambda x: s.BCOO.fromdense(x).data)(
          n.asarray(X)),
      "sum_duplicates_traced": lambda t, n, s: t.jit(lambda m: m.sum_duplicates().data)(
          _m(n, s)),
      "eye_batched": lambda t, n, s: _bufs(s.eye(3, 4, k=1, n_batch=1)),
      "empty_format": lambda t, n, s: s.empty((2, 2), sparse_format="foo"),
      "bcsr_transpose": lambda t, n, s: s.BCSR.fromdense(n.asarray(X)).T,
      "efficiency_classes": lambda t, n, s: (issubclass(s.SparseEfficiencyError, ValueError),
                                             issubclass(s.CuSparseEfficiencyWarning,
                                                        s.SparseEfficiencyWarning)),
  })
  with pytest.warns(asp.SparseEfficiencyWarning):
    asp.BCOO.fromdense(anp.asarray(X)).update_layout(n_batch=1, on_inefficient="warn")


def test_spsolve():
  import jax.experimental.sparse.linalg  # noqa: F401
  a = np.array([[4., 1, 0], [1, 3, 0], [0, 0, 2]], np.float32)
  b = np.arange(1., 4, dtype=np.float32)
  outs = []
  for t, n, s in LIBS:
    m = s.CSR.fromdense(n.asarray(a))
    f = lambda d, b, s=s, m=m: s.linalg.spsolve(d, m.indices, m.indptr, b)
    outs.append((f(m.data, n.asarray(b)),
                 t.grad(lambda d, b, f=f: f(d, b).sum(), (0, 1))(m.data, n.asarray(b)),
                 t.jit(f)(m.data, n.asarray(b))))
  assert_close(*outs, tol=1e-5)
  with pytest.raises(ValueError, match="data types do not match"):
    asp.linalg.spsolve(anp.ones(3), anp.arange(3), anp.arange(4), anp.ones(3, np.int32))


def test_public_names():
  ours = {n for n in dir(asp) if not n.startswith("_")}
  theirs = {n for n in dir(jsp) if not n.startswith("_")}
  assert ours == theirs
  assert {n for n in dir(asp.linalg) if not n.startswith("_")} >= {
      "spsolve", "spsolve_p", "lobpcg_standard"}


def test_lobpcg_standard():
  import jax.experimental.sparse.linalg  # noqa: F401
  rng = np.random.default_rng(0)
  q = np.linalg.qr(rng.standard_normal((12, 12)))[0]
  a = ((q * np.arange(1, 13)) @ q.T).astype(np.float32)
  x = rng.standard_normal((12, 2)).astype(np.float32)
  outs = []
  for _, n, s in LIBS:
    theta, u, i = s.linalg.lobpcg_standard(n.asarray(a), n.asarray(x), m=30)
    theta2, _, _ = s.linalg.lobpcg_standard(lambda v, n=n: n.asarray(a) @ v, n.asarray(x), m=30)
    outs.append((theta, abs(u), i, theta2))
  assert_close(*outs, tol=1e-4)
  with pytest.raises(ValueError, match="search dim"):
    asp.linalg.lobpcg_standard(anp.asarray(a), anp.ones((12, 3)))
