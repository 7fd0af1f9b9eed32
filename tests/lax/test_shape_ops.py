"""Differential tests of arrax.lax's structural ops (broadcast, reshape, slicing, pad, ...)
against jax.lax: values, dtypes, shapes, weak types, errors and printed jaxprs."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import functools  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax as jlax  # noqa: E402

import arrax  # noqa: E402
import arrax.numpy as anp  # noqa: E402
from arrax import lax  # noqa: E402
import oracle  # noqa: E402
from oracle import BF16, assert_same, call_with, rand  # noqa: E402

ALL = [np.bool_, np.int8, np.int32, np.uint8, np.uint32, np.float16, BF16, np.float32,
       np.complex64]

# Cases are fn(lax_module, *args) on arrays made from the NumPy arguments; results are compared
# exactly, eagerly and under jit.
check = functools.partial(oracle.check, build=call_with("lax"), convert="arrays", jit=True,
                          exact=True)
check_raises = functools.partial(oracle.check_raises, build=call_with("lax"), convert="arrays")
check_jaxpr = functools.partial(oracle.check_jaxpr, build=call_with("lax"), convert=None)
# Small integer values, exactly representable (and products and sums exact) in every dtype.
exact_values = functools.partial(rand, ints=(-60, 60), step=1)

# ---- every op over every dtype -----------------------------------------------------------------
OPS = {
    "broadcast_in_dim": lambda L, x: L.broadcast_in_dim(x, (2, 3, 4), (1, 2)),
    "broadcast": lambda L, x: L.broadcast(x, (2,)),
    "reshape": lambda L, x: L.reshape(x, (4, 3)),
    "reshape_dims": lambda L, x: L.reshape(x, (2, 6), (1, 0)),
    "squeeze": lambda L, x: L.squeeze(L.expand_dims(x, (1,)), (1,)),
    "transpose": lambda L, x: L.transpose(x, (1, 0)),
    "rev": lambda L, x: L.rev(x, (0, 1)),
    "slice": lambda L, x: L.slice(x, (1, 0), (3, 4), (1, 2)),
    "dynamic_slice": lambda L, x: L.dynamic_slice(x, (1, -2), (2, 2)),
    "dynamic_update_slice": lambda L, x: L.dynamic_update_slice(
        x, L.slice(L.rev(x, (0,)), (0, 0), (1, 4)), (2, 1)),
    "concatenate": lambda L, x: L.concatenate([x, L.rev(x, (1,)), x], 1),
    "pad": lambda L, x: L.pad(x, L.index_in_dim(L.index_in_dim(x, 0, 0, False), 0, 0, False),
                              [(1, -1, 1), (-2, 2, 0)]),
    "split": lambda L, x: L.split(x, (1, 0, 2), 0),
}


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("op", list(OPS))
def test_op_dtypes(op, dtype):
  check(OPS[op], exact_values((3, 4), dtype))


# ---- broadcasting -------------------------------------------------------------------------------
@pytest.mark.parametrize("shape,out,dims", [
    ((), (2, 3), ()), ((3,), (2, 3), (1,)), ((1, 3), (4, 3), (0, 1)), ((2, 1), (2, 5), (0, 1)),
    ((0, 3), (2, 0, 3), (1, 2)), ((3,), (3, 2), (0,)), ((2, 3), (3, 2), (1, 0)),
    ((1,), (0,), (0,)), ((), (), ()), ((2, 3), (2, 3), (0, 1)),
])
def test_broadcast_in_dim(shape, out, dims):
  check(lambda L, x: L.broadcast_in_dim(x, out, dims), exact_values(shape))


def test_broadcast_variants():
  x = exact_values((2, 3))
  check(lambda L, x: L.broadcast(x, (4, 1)), x)
  check(lambda L, x: L.broadcast(x, ()), x)
  check(lambda L, x: L.broadcast_to_rank(x, 4), x)
  check(lambda L, x: L.broadcast_to_rank(x, 2), x)
  for dims in [(0,), (2,), (0, 3), (-1,), (1, -1)]:
    check(lambda L, x: L.expand_dims(x, dims), x)
  check(lambda L, x: L.expand_dims(x, ()), x)


def test_python_scalar_operands_weak():
  assert_same(lax.broadcast_in_dim(2.0, (2, 3), ()), jlax.broadcast_in_dim(2.0, (2, 3), ()),
              exact=True)
  assert_same(lax.broadcast(3, (2,)), jlax.broadcast(3, (2,)), exact=True)
  assert_same(lax.broadcast_to_rank(1.5, 2), jlax.broadcast_to_rank(1.5, 2), exact=True)
  assert_same(lax.pad(lax.broadcast(1.0, (2,)), 0.0, [(1, 1, 1)]),
              jlax.pad(jlax.broadcast(1.0, (2,)), 0.0, [(1, 1, 1)]), exact=True)
  assert_same(lax.reshape(2.0, (1, 1)), jlax.reshape(2.0, (1, 1)), exact=True)
  x, xj = anp.asarray(exact_values((2, 2))), jnp.asarray(exact_values((2, 2)))
  assert_same(lax.pad(x, np.float32(-1), [(1, 0, 0), (0, 1, 0)]),
              jlax.pad(xj, np.float32(-1), [(1, 0, 0), (0, 1, 0)]), exact=True)


# ---- reshape, squeeze, transpose, rev -------------------------------------------------------
@pytest.mark.parametrize("shape,new,dims", [
    ((2, 3), (6,), None), ((2, 3), (3, 2), (1, 0)), ((0, 3), (3, 0), None), ((), (1, 1), None),
    ((6,), (1, 2, 3, 1), None), ((2, 3, 4), (4, 6), (2, 0, 1)), ((1, 1), (), None),
    ((2, 3), (2, 3), (0, 1)), ((2, 3), (2, 3), (1, 0)),
])
def test_reshape(shape, new, dims):
  check(lambda L, x: L.reshape(x, new, dims), exact_values(shape))


def test_collapse():
  x = exact_values((2, 3, 4, 5))
  for args in [(0,), (1, 3), (0, 4), (2, 2), (-2,), (1, -1)]:
    check(lambda L, x: L.collapse(x, *args), x)


@pytest.mark.parametrize("shape,dims", [
    ((1, 3, 1), (0,)), ((1, 3, 1), (0, 2)), ((1, 3, 1), (-1,)), ((1,), (0,)), ((1, 0), (0,)),
    ((2, 3), ()),
])
def test_squeeze(shape, dims):
  check(lambda L, x: L.squeeze(x, dims), exact_values(shape))


@pytest.mark.parametrize("shape,perm", [
    ((2, 3, 4), (2, 0, 1)), ((2, 3, 4), (0, 1, 2)), ((0, 3), (1, 0)), ((), ()), ((5,), (0,)),
])
def test_transpose(shape, perm):
  check(lambda L, x: L.transpose(x, perm), exact_values(shape))


@pytest.mark.parametrize("shape,dims", [
    ((2, 3, 4), (0, 2)), ((2, 3, 4), ()), ((0, 3), (0, 1)), ((5,), (0,)), ((), ()),
])
def test_rev(shape, dims):
  check(lambda L, x: L.rev(x, dims), exact_values(shape))


# ---- static slicing -------------------------------------------------------------------------
@pytest.mark.parametrize("shape,start,limit,strides", [
    ((5, 6), (1, 2), (4, 6), None), ((5, 6), (0, 0), (5, 6), (2, 3)),
    ((5, 6), (3, 3), (3, 5), None), ((5, 6), (1, 0), (5, 6), (4, 1)),
    ((0, 4), (0, 1), (0, 3), (1, 2)), ((), (), (), None), ((7,), (6,), (7,), (5,)),
])
def test_slice(shape, start, limit, strides):
  check(lambda L, x: L.slice(x, start, limit, strides), exact_values(shape))


def test_slice_in_dim_and_index_in_dim():
  x = exact_values((4, 5))
  for args in [(1, 3), (None, None), (-3, None), (0, -1, 2), (None, 4, 3, 1), (-4, -1, 1, 1)]:
    check(lambda L, x: L.slice_in_dim(x, *args), x)
  for index, axis, keep in [(0, 0, True), (-1, 0, False), (2, 1, False), (-5, 1, True)]:
    check(lambda L, x: L.index_in_dim(x, index, axis, keep), x)


def test_reverse_strides_via_rev():
  # x[::-2] along each axis, built from rev and a strided slice.
  x = exact_values((5, 4))
  check(lambda L, x: L.slice(L.rev(x, (0, 1)), (0, 0), (5, 4), (2, 2)), x)


# ---- dynamic slicing --------------------------------------------------------------------------
@pytest.mark.parametrize("starts", [(0, 0), (1, 2), (3, 5), (-1, -2), (100, -100), (-7, 2)])
@pytest.mark.parametrize("sizes", [(2, 3), (4, 6), (0, 1)])
def test_dynamic_slice_python_ints(starts, sizes):
  check(lambda L, x: L.dynamic_slice(x, starts, sizes), exact_values((4, 6)))


@pytest.mark.parametrize("idx_dtype", [np.int32, np.int8, np.uint8, np.uint32])
def test_dynamic_slice_array_indices(idx_dtype):
  x = exact_values((4, 6))
  for i, j in [(1, 2), (3, 5), (0, 0)] + ([(-1, -3), (-9, 9)] if idx_dtype in (np.int32, np.int8)
                                          else [(200, 7)]):
    ii, jj = np.asarray(i, idx_dtype), np.asarray(j, idx_dtype)
    check(lambda L, x, a, b: L.dynamic_slice(x, (a, b), (2, 3)), x, ii, jj)


def test_dynamic_slice_index_forms():
  x = exact_values((4, 6))
  check(lambda L, x, idx: L.dynamic_slice(x, idx, (2, 3)), x, np.array([3, -2], np.int32))
  check(lambda L, x: L.dynamic_slice(x, np.array([1, 2]), (2, 3)), x)
  check(lambda L, x: L.dynamic_slice(x, (np.int32(1), np.int64(-1)), (2, 3)), x)
  check(lambda L, x: L.dynamic_slice(x, (1, 10), (2, 3), allow_negative_indices=False), x)
  check(lambda L, x: L.dynamic_slice(x, (2, 3), (2, 3), allow_negative_indices=[True, False]),
        x)


def test_dynamic_slice_traced_python_index():
  x = exact_values((4, 6))
  for i in [1, -1, 9, -9]:
    expected = jax.jit(lambda x, i: jlax.dynamic_slice(x, (i, 2), (2, 2)))(jnp.asarray(x), i)
    got = arrax.jit(lambda x, i: lax.dynamic_slice(x, (i, 2), (2, 2)))(anp.asarray(x), i)
    assert_same(got, expected, exact=True)


@pytest.mark.parametrize("starts", [(0, 0), (2, 3), (3, 5), (-1, -1), (50, -50)])
@pytest.mark.parametrize("ushape", [(2, 3), (4, 6), (0, 2), (1, 1)])
def test_dynamic_update_slice(starts, ushape):
  check(lambda L, x, u: L.dynamic_update_slice(x, u, starts), exact_values((4, 6)),
        exact_values(ushape, seed=1))


def test_dynamic_update_slice_array_indices():
  x, u = exact_values((4, 6), np.int32), exact_values((2, 2), np.int32, seed=3)
  for i, j in [(1, 2), (-1, -3), (9, -9)]:
    check(lambda L, x, u, a, b: L.dynamic_update_slice(x, u, (a, b)), x, u,
          np.int32(i), np.int32(j))
  check(lambda L, x, u, idx: L.dynamic_update_slice(x, u, idx), x, u,
        np.array([2, -1], np.int32))


def test_dynamic_in_dim_wrappers():
  x = exact_values((4, 6))
  for start, size, axis in [(1, 2, 0), (-2, 3, 1), (5, 2, 0), (-10, 6, 1)]:
    check(lambda L, x: L.dynamic_slice_in_dim(x, start, size, axis), x)
  check(lambda L, x, i: L.dynamic_slice_in_dim(x, i, 2, 1), x, np.int32(-1))
  for index, axis, keep in [(1, 0, True), (-1, 1, False), (7, 0, False)]:
    check(lambda L, x: L.dynamic_index_in_dim(x, index, axis, keep), x)
  check(lambda L, x, i: L.dynamic_index_in_dim(x, i, 1, False), x, np.int32(-2))
  u = exact_values((4, 2), seed=2)
  for start in [0, 3, -1, 100]:
    check(lambda L, x, u: L.dynamic_update_slice_in_dim(x, u, start, 1), x, u)
  row = exact_values((6,), seed=4)
  for index in [0, 2, -1, 10]:
    check(lambda L, x, r: L.dynamic_update_index_in_dim(x, r, index, 0), x, row)
    check(lambda L, x, r: L.dynamic_update_index_in_dim(x, L.broadcast(r, (1,)), index, 0), x, row)


# ---- concatenate, split, pad, iota -------------------------------------------------------------
@pytest.mark.parametrize("shapes,dim", [
    ([(2, 3), (4, 3)], 0), ([(2, 3), (2, 0), (2, 5)], 1), ([(3,)], 0), ([(1,), (1,), (1,)], 0),
    ([(0, 2), (0, 2)], 0),
])
def test_concatenate(shapes, dim):
  check(lambda L, *xs: L.concatenate(xs, dim),
        *[exact_values(s, seed=k) for k, s in enumerate(shapes)])


@pytest.mark.parametrize("shape,sizes,axis", [
    ((5, 3), (2, 3), 0), ((5, 3), (0, 3, 0), 1), ((5, 3), (3,), -1), ((0, 3), (0, 0), 0),
    ((4,), (4,), 0),
])
def test_split(shape, sizes, axis):
  check(lambda L, x: L.split(x, sizes, axis), exact_values(shape))


@pytest.mark.parametrize("shape,config", [
    ((3, 4), [(1, 2, 0), (0, 0, 0)]), ((3, 4), [(-1, -1, 0), (2, -3, 0)]),
    ((3, 4), [(0, 0, 2), (1, 1, 1)]), ((3, 4), [(-2, 1, 1), (-3, -2, 2)]),
    ((0, 2), [(1, 1, 3), (0, 0, 0)]), ((), []), ((4,), [(-4, 0, 0)]), ((2,), [(-3, 0, 1)]),
])
def test_pad(shape, config):
  check(lambda L, x, v: L.pad(x, v, config), exact_values(shape), np.float32(-7))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.uint32, np.float16, BF16,
                                   np.float32, np.complex64], ids=lambda d: np.dtype(d).name)
def test_iota(dtype):
  assert_same(lax.iota(dtype, 5), jlax.iota(dtype, 5), exact=True)
  assert_same(lax.broadcasted_iota(dtype, (2, 0, 3), 2), jlax.broadcasted_iota(dtype, (2, 0, 3), 2),
              exact=True)
  assert_same(arrax.jit(lambda: lax.broadcasted_iota(dtype, (3, 4), 1))(),
              jlax.broadcasted_iota(dtype, (3, 4), 1), exact=True)


def test_iota_python_dtypes():
  assert_same(lax.iota(int, 3), jlax.iota(int, 3), exact=True)
  assert_same(lax.broadcasted_iota(float, (2, 2), 0), jlax.broadcasted_iota(float, (2, 2), 0),
              exact=True)
  assert_same(lax.broadcasted_iota("uint8", [2, 3], np.int64(1)),
              jlax.broadcasted_iota("uint8", [2, 3], np.int64(1)), exact=True)


# ---- shortcuts --------------------------------------------------------------------------------
def test_identity_shortcuts_return_operand():
  x = anp.asarray(exact_values((2, 3)))
  assert lax.reshape(x, (2, 3)) is x
  assert lax.reshape(x, (2, 3), (0, 1)) is x
  assert lax.transpose(x, (0, 1)) is x
  assert lax.squeeze(x, ()) is x
  assert lax.concatenate([x], 0) is x
  assert lax.broadcast_to_rank(x, 2) is x
  s = anp.asarray(np.float32(1))
  assert lax.broadcast_in_dim(s, (), ()) is s
  assert lax.reshape(s, ()) is not s   # 0-d operands always get an equation, as in JAX


# ---- errors -----------------------------------------------------------------------------------
ERRORS = [
    lambda L, x: L.broadcast_in_dim(x, (2, 3, 4), (0, 2)),
    lambda L, x: L.broadcast_in_dim(x, (2, 3), (0,)),
    lambda L, x: L.broadcast_in_dim(x, (2, -3), (0, 1)),
    lambda L, x: L.broadcast_in_dim(x, (3,), (0, 1)),
    lambda L, x: L.broadcast_in_dim(x, (2, 3, 4), (0, 0)),
    lambda L, x: L.broadcast_in_dim(x, (2, 3, 4), (0, 3)),
    lambda L, x: L.reshape(x, (3, 2), (0, 0)),
    lambda L, x: L.reshape(x, (3, -2)),
    lambda L, x: L.reshape(x, (3, 2.0)),
    lambda L, x: L.squeeze(x, (0,)),
    lambda L, x: L.squeeze(x, (3,)),
    lambda L, x: L.expand_dims(x, (0, 0)),
    lambda L, x: L.expand_dims(x, (0, -4)),
    lambda L, x: L.expand_dims(x, (5,)),
    lambda L, x: L.transpose(x, (0, 0)),
    lambda L, x: L.transpose(x, (0,)),
    lambda L, x: L.rev(x, (2,)),
    lambda L, x: L.rev(x, (0, 0)),
    lambda L, x: L.rev(x, (-1,)),
    lambda L, x: L.slice(x, (0, 0), (3, 3)),
    lambda L, x: L.slice(x, (-1, 0), (2, 3)),
    lambda L, x: L.slice(x, (2, 0), (1, 3)),
    lambda L, x: L.slice(x, (0, 0), (2, 3), (1,)),
    lambda L, x: L.index_in_dim(x, 5),
    lambda L, x: L.index_in_dim(x, -4, 1),
    lambda L, x: L.dynamic_slice(x, (0, 0), (3, 1)),
    lambda L, x: L.dynamic_slice(x, (0,), (1, 1)),
    lambda L, x: L.dynamic_slice(x, (0.0, 0), (1, 1)),
    lambda L, x: L.dynamic_slice(x, (0, 0), (1, -1)),
    lambda L, x: L.dynamic_slice(x, (np.int32(0), np.int8(0)), (1, 1)),
    lambda L, x: L.dynamic_slice(x, (1, -4), (1, 2), allow_negative_indices=False),
    lambda L, x: L.dynamic_slice(x, np.array([[1, 1]]), (1, 2)),
    lambda L, x: L.dynamic_update_slice(x, L.convert_element_type(x, np.int8), (0, 0)),
    lambda L, x: L.dynamic_update_slice(x, L.broadcast(x, (1,)), (0, 0)),
    lambda L, x: L.dynamic_update_slice(x, L.concatenate([x, x], 0), (0, 0)),
    lambda L, x: L.dynamic_update_slice(x, x, (0,)),
    lambda L, x: L.concatenate([x, L.convert_element_type(x, np.int8)], 0),
    lambda L, x: L.concatenate([x, L.transpose(x, (1, 0))], 1),
    lambda L, x: L.concatenate([x, L.index_in_dim(x, 0, 0, False)], 0),
    lambda L, x: L.concatenate([x, x], 2),
    lambda L, x: L.concatenate([], 0),
    lambda L, x: L.split(x, (1, 2), 0),
    lambda L, x: L.split(x, (3, -1), 0),
    lambda L, x: L.split(x, (1, 1), 2),
    lambda L, x: L.pad(L.convert_element_type(x, np.int8), 0, [(1, 1, 0), (0, 0, 0)]),
    lambda L, x: L.pad(x, np.float32(0), [(1, 1, 0)]),
    lambda L, x: L.pad(x, x, [(1, 1, 0), (0, 0, 0)]),
    lambda L, x: L.pad(x, 0.0, [(1, 1, -1), (0, 0, 0)]),
    lambda L, x: L.pad(x, 0.0, [(-2, -1, 0), (0, 0, 0)]),
    lambda L, x: L.iota(np.bool_, 3),
    lambda L, x: L.broadcasted_iota(np.int32, (2, 3), 2),
    lambda L, x: L.collapse(x, 1, 0),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_error_classes(k):
  fn = ERRORS[k]
  x = exact_values((2, 3))
  check_raises(fn, x)
  check_raises(fn, x, jit=True)


# ---- printed jaxprs ---------------------------------------------------------------------------
JAXPRS = {
    "broadcast_in_dim": lambda L, x: L.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
    "broadcast_scalar": lambda L, x: L.broadcast_in_dim(1.0, (2, 3), ()),
    "broadcast_same": lambda L, x: L.broadcast_in_dim(x, (2, 3), (0, 1)),
    "expand_squeeze": lambda L, x: L.squeeze(L.expand_dims(x, (0, -1)), (0, 3)),
    "reshape": lambda L, x: (L.reshape(x, (3, 2)), L.reshape(x, (3, 2), (1, 0)),
                             L.reshape(x, (2, 3))),
    "collapse": lambda L, x: L.collapse(x, 0),
    "transpose_rev": lambda L, x: L.rev(L.transpose(x, (1, 0)), (1,)),
    "slice": lambda L, x: (L.slice(x, (0, 0), (2, 2), (1, 2)), L.slice(x, (1, 0), (2, 3))),
    "slice_in_dim": lambda L, x: L.slice_in_dim(x, -2, None, 1, 1),
    "index_in_dim": lambda L, x: L.index_in_dim(x, -1, 1, False),
    "dynamic_slice": lambda L, x: L.dynamic_slice(x, (1, -1), (1, 2)),
    "dus": lambda L, x: L.dynamic_update_slice(x, L.slice(x, (0, 0), (1, 3)), (1, 0)),
    "dyn_in_dim": lambda L, x: L.dynamic_slice_in_dim(x, 1, 2, 1),
    "dyn_index": lambda L, x: L.dynamic_index_in_dim(x, 1, 1, False),
    "dyn_update_index": lambda L, x: L.dynamic_update_index_in_dim(
        x, L.index_in_dim(x, 0, keepdims=False), 1, 0),
    "concatenate": lambda L, x: L.concatenate([x, x, x], 0),
    "pad": lambda L, x: L.pad(x, 0.0, [(1, 2, 0), (-1, 0, 1)]),
    "iota": lambda L, x: (L.iota(np.int32, 4), L.broadcasted_iota(np.float32, (2, 3), 1)),
    "split": lambda L, x: L.split(x, (1, 2), 1),
    "broadcast_to_rank": lambda L, x: (L.broadcast_to_rank(x, 4), L.broadcast_to_rank(1.0, 2)),
}


@pytest.mark.parametrize("name", list(JAXPRS))
def test_jaxpr_matches(name):
  check_jaxpr(JAXPRS[name], exact_values((2, 3)))


def test_jaxpr_traced_indices():
  x = exact_values((2, 3))
  check_jaxpr(lambda L, x, i: L.dynamic_slice(x, (i, 2), (1, 2)), x, np.int32(1))
  check_jaxpr(lambda L, x, i: L.dynamic_slice(x, i, (1, 2)), x, np.array([1, 2], np.int32))
  check_jaxpr(lambda L, x, i: L.dynamic_update_slice(x, L.slice(x, (0, 0), (1, 2)), (i, i)),
              x, np.int8(1))
  # A Python int jit argument is weakly typed: it is made strong before the wrap-around add.
  expected = str(jax.make_jaxpr(lambda x, i: jlax.dynamic_slice(x, (i, 2), (1, 2)))(x, 1))
  assert str(arrax.make_jaxpr(lambda x, i: lax.dynamic_slice(x, (i, 2), (1, 2)))(x, 1)) \
      == expected


def test_jaxpr_x64(x64):
  x = np.ones((2, 3))
  check_jaxpr(lambda L, x: L.dynamic_slice(x, (1, -1), (1, 2)), x)
  check_jaxpr(lambda L, x: L.dynamic_index_in_dim(x, 1, 1, False), x)
  check_jaxpr(lambda L, x: L.iota(int, 3), x)
  check(lambda L, x: L.dynamic_update_slice(x, L.slice(x, (0, 0), (1, 2)), (1, -1)), x)
