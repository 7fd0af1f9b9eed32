"""JVP and transpose rules of dot_general, gather/scatter and sort/top_k, against JAX.

arrax.jvp / arrax.vjp of one lax call agree with jax.jvp / jax.vjp (values, dtypes, shapes,
weak types): dot_general over dimension numbers with batch and permuted contracting axes,
preferred_element_type, mixed and complex dtypes; gather and every scatter in each mode,
with repeated indices; multi-operand sort with integer operands (float0 tangents) and top_k;
jnp compositions (indexing, .at[], dot, sort, take, concatenate); second derivatives; the
printed jaxprs of grad.
"""
import functools

import jax as real_jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import arrax
import arrax.numpy as anp
from arrax import lax as alax
from arrax import test_util as atu
from oracle import (BF16, ad_tol, assert_same, check, check_jaxpr, check_jvp_vjp, grad_of,
                    make_with, rand)

# grad of a jnp-level case mk(numpy_module) -> function, under jit (tolerance: ad_tol).
check_grad = functools.partial(check, build=make_with("np"), convert="arrays", tol=ad_tol,
                               eager=False, jit=True)

# ---- dot_general ------------------------------------------------------------------------------
DOT_CASES = {
    "vector_vector": ((3,), (3,), (((0,), (0,)), ((), ()))),
    "matrix_vector": ((4, 3), (3,), (((1,), (0,)), ((), ()))),
    "matmul": ((2, 3), (3, 4), (((1,), (0,)), ((), ()))),
    "outer": ((2,), (3,), (((), ()), ((), ()))),
    "batch": ((2, 3, 4), (2, 4, 5), (((2,), (1,)), ((0,), (0,)))),
    "batch_not_leading": ((3, 2, 4), (4, 5, 2), (((2,), (0,)), ((1,), (2,)))),
    "permuted_contract": ((2, 3, 4), (4, 3), (((1, 2), (1, 0)), ((), ()))),
    "two_batch": ((2, 3, 4, 5), (3, 5, 2), (((3,), (1,)), ((1, 0), (0, 2)))),
    "empty_contract": ((2, 0), (0, 3), (((1,), (0,)), ((), ()))),
}


@pytest.mark.parametrize("name", sorted(DOT_CASES))
def test_dot_general_float32(name):
  ls, rs, dn = DOT_CASES[name]
  rng = np.random.default_rng(len(name))
  check_jvp_vjp(lambda l, x, y: l.dot_general(x, y, dn), rand(ls, np.float32, rng),
                rand(rs, np.float32, rng))


@pytest.mark.parametrize("name", ["matmul", "batch_not_leading", "two_batch"])
def test_dot_general_one_operand(name):
  ls, rs, dn = DOT_CASES[name]
  rng = np.random.default_rng(1)
  x, y = rand(ls, np.float32, rng), rand(rs, np.float32, rng)
  check_jvp_vjp(lambda l, a, b: l.dot_general(a, b, dn), x, y, argnums=(0,))
  check_jvp_vjp(lambda l, a, b: l.dot_general(a, b, dn), x, y, argnums=(1,))


@pytest.mark.parametrize("name", ["matmul", "batch", "permuted_contract"])
def test_dot_general_complex64(name):
  ls, rs, dn = DOT_CASES[name]
  rng = np.random.default_rng(2)
  check_jvp_vjp(lambda l, x, y: l.dot_general(x, y, dn), rand(ls, np.complex64, rng),
                rand(rs, np.complex64, rng))


def test_dot_general_float64(x64):
  ls, rs, dn = DOT_CASES["two_batch"]
  rng = np.random.default_rng(3)
  x, y = rand(ls, np.float64, rng), rand(rs, np.float64, rng)
  check_jvp_vjp(lambda l, a, b: l.dot_general(a, b, dn), x, y)
  atu.check_grads(lambda a, b: alax.dot_general(a, b, dn), (x, y), 2)


def test_dot_general_preferred_element_type():
  rng = np.random.default_rng(4)
  x, y = rand((2, 3), BF16, rng), rand((3, 4), BF16, rng)
  dn = (((1,), (0,)), ((), ()))
  # The cotangent (float32) is contracted in float32 and converted back to bfloat16.
  check_jvp_vjp(lambda l, a, b: l.dot_general(a, b, dn, preferred_element_type=np.float32), x, y)
  xf = rand((2, 3), np.float32, rng)
  check_jvp_vjp(lambda l, a, b: l.dot_general(a, b, dn, precision=l.Precision.HIGHEST), xf,
                rand((3, 4), np.float32, rng))


def test_dot_general_integer_operand():
  rng = np.random.default_rng(5)
  xi = rand((2, 3), np.int32, rng)
  # The integer operand has a float0 tangent; the float one still gets its derivative.
  check_jvp_vjp(lambda l, a, b: l.dot_general(a, b, (((1,), (0,)), ((), ())),
                                              preferred_element_type=np.float32),
                xi, rand((3, 4), np.float32, rng))
  check_jvp_vjp(lambda l, a, b: l.dot_general(a, b, (((1,), (0,)), ((), ()))), xi,
                rand((3, 2), np.int32, rng))


def test_dot_second_order():
  rng = np.random.default_rng(6)
  x, y = rand((3, 3), np.float32, rng), rand((3,), np.float32, rng)

  def mk(np_):
    return lambda a, b: np_.sum(np_.dot(np_.dot(a, a), b) ** 2)
  for argnums in (0, 1):
    ha = arrax.jit(arrax.grad(lambda a, b: anp.sum(arrax.grad(mk(anp), argnums)(a, b)),
                              argnums))(x, y)
    hj = real_jax.jit(real_jax.grad(lambda a, b: jnp.sum(real_jax.grad(mk(jnp), argnums)(a, b)),
                                    argnums))(x, y)
    assert_same(ha, hj, tol=1e-4)


def test_jnp_dot_matmul_einsum_like():
  rng = np.random.default_rng(7)
  a, b = rand((2, 3, 4), np.float32, rng), rand((2, 4, 5), np.float32, rng)
  check_grad(lambda np_: lambda x, y: np_.sum(np_.matmul(x, y) ** 2), a, b,
             transform=grad_of((0, 1)))
  v = rand((4,), np.float32, rng)
  check_grad(lambda np_: lambda x, y: np_.sum(np_.dot(x, y)), a, v, transform=grad_of((0, 1)),
             eager=True, jit=False)


# ---- gather -----------------------------------------------------------------------------------


def _gather(l, x, idx, dn, sizes, **kw):
  cls = l.GatherDimensionNumbers
  return l.gather(x, idx, cls(*dn), sizes, **kw)


GATHER_CASES = {
    # operand shape, indices, (offset_dims, collapsed, start_index_map), slice_sizes
    "rows": ((5, 3), [[0], [2], [2], [4]], ((1,), (0,), (0,)), (1, 3)),
    "points": ((4, 5), [[0, 1], [3, 4], [0, 1]], ((), (0, 1), (0, 1)), (1, 1)),
    "windows": ((6, 4), [[1], [3]], ((1, 2), (), (0,)), (2, 4)),
    "batched_idx": ((5, 3), [[[1], [0]], [[4], [4]]], ((2,), (0,), (0,)), (1, 3)),
    "empty": ((5, 3), np.zeros((0, 1), np.int32), ((1,), (0,), (0,)), (1, 3)),
}


@pytest.mark.parametrize("mode", ["promise_in_bounds", "clip", "fill"])
@pytest.mark.parametrize("name", sorted(GATHER_CASES))
def test_gather(name, mode):
  shape, idx, dn, sizes = GATHER_CASES[name]
  idx = np.asarray(idx, np.int32)
  if mode != "promise_in_bounds" and idx.size:
    idx = idx.copy()
    idx.flat[0] = 9   # out of bounds: clamped, or filled with 0 and dropped in the transpose
  x = rand(shape, np.float32, np.random.default_rng(8))
  check_jvp_vjp(lambda l, v: _gather(l, v, idx, dn, sizes, mode=mode), x)


def test_gather_operand_batching_dims_and_complex():
  x = rand((3, 5), np.complex64, np.random.default_rng(9))
  idx = np.array([[1], [4], [0]], np.int32)
  dn = ((), (1,), (1,), (0,), (0,))
  check_jvp_vjp(lambda l, v: _gather(l, v, idx, dn, (1, 1)), x)


def test_gather_float64(x64):
  shape, idx, dn, sizes = GATHER_CASES["rows"]
  x = rand(shape, np.float64, np.random.default_rng(10))
  check_jvp_vjp(lambda l, v: _gather(l, v, np.asarray(idx), dn, sizes), x)
  atu.check_grads(lambda v: _gather(alax, v, np.asarray(idx), dn, sizes), (x,), 2)


# ---- scatter ----------------------------------------------------------------------------------
def _scatter(l, name, x, idx, upd, dn, **kw):
  return getattr(l, name)(x, idx, upd, l.ScatterDimensionNumbers(*dn), **kw)


# (update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims)
ROWS = ((1,), (0,), (0,))
POINTS = ((), (0, 1), (0, 1))
DUP_ROWS = np.array([[0], [2], [2], [4]], np.int32)
UNIQUE_ROWS = np.array([[3], [0], [4], [1]], np.int32)
DUP_POINTS = np.array([[0, 1], [2, 2], [0, 1]], np.int32)


def _scatter_args(seed, dtype=np.float32):
  rng = np.random.default_rng(seed)
  return rand((5, 3), dtype, rng), rand((4, 3), dtype, rng)


@pytest.mark.parametrize("unique", [False, True])
@pytest.mark.parametrize("name", ["scatter_add", "scatter_sub", "scatter"])
def test_scatter_linear_and_replace(name, unique):
  x, u = _scatter_args(11)
  idx = UNIQUE_ROWS if unique else DUP_ROWS
  for argnums in ((0, 1), (0,), (1,)):
    check_jvp_vjp(lambda l, a, b: _scatter(l, name, a, idx, b, ROWS, unique_indices=unique), x, u,
                  argnums=argnums)


@pytest.mark.parametrize("mode", ["clip", "fill"])
@pytest.mark.parametrize("name", ["scatter_add", "scatter"])
def test_scatter_modes_out_of_bounds(name, mode):
  x, u = _scatter_args(12)
  idx = np.array([[0], [7], [2], [-1]], np.int32)
  check_jvp_vjp(lambda l, a, b: _scatter(l, name, a, idx, b, ROWS, mode=mode), x, u)


def test_scatter_points_with_duplicates():
  rng = np.random.default_rng(13)
  x, u = rand((3, 4), np.float32, rng), rand((3,), np.float32, rng)
  for name in ("scatter", "scatter_add", "scatter_max", "scatter_min"):
    check_jvp_vjp(lambda l, a, b: _scatter(l, name, a, DUP_POINTS, b, POINTS), x, u)


def test_scatter_mul():
  x, u = _scatter_args(14)
  check_jvp_vjp(lambda l, a, b: _scatter(l, "scatter_mul", a, UNIQUE_ROWS, b, ROWS,
                                 unique_indices=True), x, u)
  # Only the operand is differentiable when indices may repeat.
  check_jvp_vjp(lambda l, a, b: _scatter(l, "scatter_mul", a, DUP_ROWS, b, ROWS), x, u,
                argnums=(0,))
  for lib, l in ((arrax, alax), (real_jax, jlax)):
    with pytest.raises(NotImplementedError):
      lib.jvp(lambda b: _scatter(l, "scatter_mul", x, DUP_ROWS, b, ROWS), (u,), (u,))


@pytest.mark.parametrize("name", ["scatter_max", "scatter_min"])
def test_scatter_extremal_with_ties(name):
  # Ties between updates, and between an update and the kept operand value, share the tangent.
  x = np.array([[1., 5., 0.], [2., 2., 2.], [0., 0., 0.], [3., 1., 4.], [0., 0., 0.]],
               np.float32)
  u = np.array([[1., 9., -1.], [2., 2., 2.], [2., 7., 2.], [0., 0., 0.]], np.float32)
  check_jvp_vjp(lambda l, a, b: _scatter(l, name, a, DUP_ROWS, b, ROWS), x, u)
  check_jvp_vjp(lambda l, a, b: _scatter(l, name, a, DUP_ROWS, b, ROWS), x, u, argnums=(1,))


def test_scatter_complex_and_float64(x64):
  x, u = _scatter_args(15, np.complex128)
  check_jvp_vjp(lambda l, a, b: _scatter(l, "scatter_add", a, DUP_ROWS, b, ROWS), x, u)
  x, u = _scatter_args(15, np.float64)
  check_jvp_vjp(lambda l, a, b: _scatter(l, "scatter", a, DUP_ROWS, b, ROWS), x, u)
  atu.check_grads(lambda a, b: _scatter(alax, "scatter", a, UNIQUE_ROWS, b, ROWS,
                                        unique_indices=True), (x, u), 2)


@pytest.mark.parametrize("unique", [False, True])
def test_scatter_transpose_needs_unique_indices(unique):
  # grad of a non-unique scatter goes through scatter-adds; transposing the scatter itself
  # (linear in the operand for constant updates) needs unique indices, in both libraries.
  x, u = _scatter_args(16)
  idx = UNIQUE_ROWS if unique else DUP_ROWS
  res = []
  for lib, l in ((real_jax, jlax), (arrax, alax)):
    t = lib.linear_transpose(lambda a: _scatter(l, "scatter", a, idx, u, ROWS,
                                                unique_indices=unique), x)
    if unique:
      res.append(t(x))
    else:
      with pytest.raises(NotImplementedError, match="unique_indices=True"):
        t(x)
  if unique:
    assert_same(res[1], res[0], tol=ad_tol)


@pytest.mark.parametrize("name", ["gather", "scatter_add", "dot"])
def test_linear_transpose(name):
  x, u = _scatter_args(17)
  y = rand((3, 2), np.float32, np.random.default_rng(17))
  fns = {
      "gather": lambda l: lambda a: _gather(l, a, DUP_ROWS, ROWS, (1, 3)),
      "scatter_add": lambda l: lambda a: _scatter(l, "scatter_add", a, DUP_ROWS, u, ROWS),
      "dot": lambda l: lambda a: l.dot_general(a, y, (((1,), (0,)), ((), ()))),
  }
  out = real_jax.eval_shape(fns[name](jlax), x)
  ct = rand(out.shape, np.float32, np.random.default_rng(18))
  assert_same(arrax.linear_transpose(fns[name](alax), x)(ct),
              real_jax.linear_transpose(fns[name](jlax), x)(ct), tol=ad_tol)


# ---- sort and top_k ---------------------------------------------------------------------------
@pytest.mark.parametrize("shape,dimension", [((7,), 0), ((3, 5), 1), ((4, 3), 0), ((0, 3), 0),
                                             ((2, 3, 4), 1)], ids=str)
def test_sort(shape, dimension):
  x = rand(shape, np.float32, np.random.default_rng(17))
  check_jvp_vjp(lambda l, v: l.sort(v, dimension), x)


def test_sort_ties_and_multi_operand():
  rng = np.random.default_rng(18)
  keys = np.array([[3., 1., 3., 0., 1.], [2., 2., 2., 1., 0.]], np.float32)
  vals = rand((2, 5), np.float32, rng)
  ints = rng.integers(0, 9, (2, 5)).astype(np.int32)
  check_jvp_vjp(lambda l, k: l.sort(k, 1), keys)
  check_jvp_vjp(lambda l, k, v: l.sort((k, v), 1, num_keys=1), keys, vals)
  check_jvp_vjp(lambda l, k, v: l.sort((k, v), 1, num_keys=2), keys, vals)
  # Integer operands (as keys or payloads) get float0 tangents.
  check_jvp_vjp(lambda l, i, v: l.sort((i, v), 1, num_keys=1), ints, vals)
  check_jvp_vjp(lambda l, k, i: l.sort_key_val(k, i, 0), keys, ints)


def test_sort_complex_and_float64(x64):
  x = rand((3, 4), np.complex128, np.random.default_rng(19))
  check_jvp_vjp(lambda l, v: l.sort(v, 1), x)
  xf = rand((3, 4), np.float64, np.random.default_rng(19))
  atu.check_grads(lambda v: alax.sort(v, 0), (xf,), 2)


@pytest.mark.parametrize("shape,k,axis", [((6,), 3, -1), ((3, 5), 2, -1), ((4, 3), 4, 0),
                                          ((3, 4), 0, -1)], ids=str)
def test_top_k(shape, k, axis):
  x = rand(shape, np.float32, np.random.default_rng(20))
  check_jvp_vjp(lambda l, v: l.top_k(v, k, axis=axis), x)


def test_top_k_ties():
  x = np.array([[1., 3., 3., 2.], [5., 5., 5., 5.]], np.float32)
  check_jvp_vjp(lambda l, v: l.top_k(v, 3), x)


# ---- jnp compositions -------------------------------------------------------------------------
X = rand((4, 3), np.float32, np.random.default_rng(21))


@pytest.mark.parametrize("name", ["index_sq", "take", "bool_free_slices", "at_set", "at_add",
                                  "at_mul", "at_min_max", "sort", "argsort_take", "concatenate",
                                  "dynamic_index", "at_set_scalar"])
def test_jnp_compositions(name):
  idx = np.array([0, 2, 2, -1], np.int32)
  fns = {
      "index_sq": lambda np_: lambda v: np_.sum(v[idx] ** 2),
      "take": lambda np_: lambda v: np_.sum(np_.take(v, np_.array([5, 0, 11, 5]))),
      "bool_free_slices": lambda np_: lambda v: np_.sum(v[1:, None, ::-2] * v[0, :2]),
      "at_set": lambda np_: lambda v: np_.sum(v.at[idx].set(v[0] * 3.0) ** 2),
      "at_add": lambda np_: lambda v: np_.sum(v.at[idx, 1].add(v[:, 0]) ** 2),
      "at_mul": lambda np_: lambda v: np_.sum(v.at[np_.array([1, 3])].multiply(
          2.0, unique_indices=True) ** 2),
      "at_min_max": lambda np_: lambda v: np_.sum(v.at[idx].max(v[1]) + v.at[idx].min(0.0)),
      "sort": lambda np_: lambda v: np_.sum(np_.sort(v, axis=0) * np_.arange(12.).reshape(4, 3)),
      "argsort_take": lambda np_: lambda v: np_.sum(
          v[np_.argsort(v[:, 0])] * np_.arange(3.)),
      "concatenate": lambda np_: lambda v: np_.sum(np_.concatenate([v, v[::2] ** 2], axis=0)),
      "dynamic_index": lambda np_: lambda v: np_.sum(v[np_.argmax(v[:, 0])] ** 2),
      "at_set_scalar": lambda np_: lambda v: np_.sum(v.at[1, 2].set(v[0, 0] ** 2) ** 2),
  }
  check_grad(fns[name], X, transform=grad_of(0))


def test_jnp_compositions_second_order():
  def mk(np_):
    return lambda v: np_.sum(np_.sort(v.at[np_.array([0, 0])].add(v[1]), axis=0) ** 3)
  ha = arrax.jit(arrax.grad(lambda v: anp.sum(arrax.grad(mk(anp))(v))))(X)
  hj = real_jax.jit(real_jax.grad(lambda v: jnp.sum(real_jax.grad(mk(jnp))(v))))(X)
  assert_same(ha, hj, tol=1e-4)


# ---- printed jaxprs ---------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["dot", "matmul_batched", "dot_rhs", "slice", "take",
                                  "at_add", "top_k"])
def test_grad_jaxpr_text(name):
  rng = np.random.default_rng(22)
  cases = {
      "dot": (lambda np_: lambda v, w: np_.sum(np_.dot(v, w)), (4, 3), (3,), (0, 1)),
      "matmul_batched": (lambda np_: lambda v, w: np_.sum(v @ w), (2, 4, 3), (2, 3, 5), (0, 1)),
      "dot_rhs": (lambda np_: lambda v, w: np_.sum(np_.dot(v, w) ** 2), (2, 3), (3, 4), 1),
      "slice": (lambda np_: lambda v, w: np_.sum(v[1:3] * w), (4,), (2,), 0),
      "take": (lambda np_: lambda v, w: np_.sum(v[np_.array([0, 2])] ** 2) + w, (4,), (), 0),
      "at_add": (lambda np_: lambda v, w: np_.sum(v.at[1].add(w)), (4,), (), (0, 1)),
      "top_k": (lambda np_: lambda v, w: np_.sum(
          (jlax if np_ is jnp else alax).top_k(v, 2)[0]) * w, (5,), (), 0),
  }
  mk, s1, s2, argnums = cases[name]
  check_jaxpr(mk, rand(s1, np.float32, rng), rand(s2, np.float32, rng), build=make_with("np"),
              transform=grad_of(argnums), convert="arrays")
