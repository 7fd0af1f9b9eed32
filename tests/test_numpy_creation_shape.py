"""arrax.numpy array creation, shape manipulation, Array protocol methods, printing and the
products (dot, matmul, tensordot, inner, outer, vdot), compared with jax.numpy 0.10.2."""
import functools
import math
import operator
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from oracle import BF16, Raw, assert_same, call_with, check, check_all, same_exception

# A case written as make(numpy_module) -> result.
check_np = functools.partial(check, build=call_with("np"))


def _id(v):
  return repr(v).replace(" ", "")


def values(dtype, shape):
  n = math.prod(shape)
  base = (np.arange(n) * 7) % 11 - 5
  dt = np.dtype(dtype)
  if dt == np.bool_:
    return (base > 0).reshape(shape)
  if dt.kind in "iu":
    return base.astype(np.int64).astype(dt).reshape(shape)
  v = base * 0.5
  if dt.kind == "c":
    v = v + 0.25j * ((np.arange(n) % 3) - 1)
  return v.astype(dt).reshape(shape)


# ---- array / asarray ---------------------------------------------------------------------------
ARRAY_INPUTS = [
    ("int_list", [1, 2, 3]), ("float_int_list", [1.0, 2]), ("bool_list", [True, False]),
    ("mixed_scalars", [1, 2.5, True]), ("complex_list", [1 + 2j, 3]),
    ("nested", [[1, 2], [3, 4]]), ("nested_mixed", [[1, 2.0], [3, 4]]),
    ("tuple", (1, 2, 3)), ("nested_tuple_list", ([1, 2], (3, 4))),
    ("empty_list", []), ("empty_nested", [[]]), ("python_int", 3), ("python_float", 2.5),
    ("python_bool", True), ("python_complex", 1 + 1j), ("big_python_int", 2**40),
    ("numpy_scalar_list", [np.float16(1), 2]), ("numpy_int8_list", [np.int8(1), np.int8(2)]),
    ("numpy_f64_scalar", np.float64(1.5)), ("numpy_i64_scalar", np.int64(7)),
    ("numpy_u8_scalar", np.uint8(200)), ("numpy_0d", np.array(3.5)),
    ("ragged", [[1, 2], [3]]), ("string", "abc"), ("none", None), ("string_list", ["a", "b"]),
    ("object_array", np.array([1, "a"], dtype=object)),
]


@pytest.mark.parametrize("fname", ["array", "asarray"])
@pytest.mark.parametrize("name,obj", ARRAY_INPUTS, ids=[c[0] for c in ARRAY_INPUTS])
def test_array_from_python_and_numpy_objects(fname, name, obj):
  check(lambda o: getattr(anp, fname)(o), lambda o: getattr(jnp, fname)(o), Raw(obj))


NUMPY_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16,
                np.uint32, np.uint64, np.float16, np.float32, np.float64, np.complex64,
                np.complex128, BF16]


@pytest.mark.parametrize("shape", [(), (3,), (2, 0)], ids=_id)
@pytest.mark.parametrize("dtype", NUMPY_DTYPES, ids=lambda d: np.dtype(d).name)
def test_array_from_numpy_array_canonicalizes(dtype, shape):
  x = values(np.float64 if np.dtype(dtype) == BF16 else dtype, shape).astype(dtype)
  check(anp.array, jnp.array, Raw(x))
  check(anp.asarray, jnp.asarray, Raw(x))


def test_array_from_numpy_array_with_x64(x64):
  for dt in (np.float64, np.int64, np.uint64, np.complex128, np.float32):
    check(anp.asarray, jnp.asarray, Raw(values(dt, (3,))))
  check(anp.array, jnp.array, Raw([1.5, 2]))
  check(anp.array, jnp.array, Raw(3))
  check(lambda: anp.arange(3), lambda: jnp.arange(3))
  check(lambda: anp.zeros(2), lambda: jnp.zeros(2))


ARRAY_KWARG_CASES = [
    ("dtype_float16", [1, 2], dict(dtype=np.float16)),
    ("dtype_int_from_float", [1.7, -2.5], dict(dtype=np.int32)),
    ("dtype_bool", [0.0, 1.5], dict(dtype=bool)),
    ("dtype_float64_canonical", [1, 2], dict(dtype=np.float64)),
    ("dtype_int64_canonical", 3, dict(dtype=np.int64)),
    ("dtype_bfloat16", [1.5, 2.25], dict(dtype=BF16)),
    ("dtype_str", [1, 2], dict(dtype="float16")),
    ("dtype_python_float", 3, dict(dtype=float)),
    ("dtype_python_int", 3.5, dict(dtype=int)),
    ("dtype_complex_from_int", [1, 2], dict(dtype=np.complex64)),
    ("ndmin3", [1, 2], dict(ndmin=3)),
    ("ndmin_scalar", 2.5, dict(ndmin=2)),
    ("ndmin_smaller", [[1, 2]], dict(ndmin=1)),
    ("weak_scalar_dtype", 2.5, dict(dtype=np.float16)),
    ("copy_false", [1, 2], dict(copy=False)),
    ("order_F", [1, 2], dict(order="F")),
]


@pytest.mark.parametrize("name,obj,kwargs", ARRAY_KWARG_CASES,
                         ids=[c[0] for c in ARRAY_KWARG_CASES])
def test_array_keywords(name, obj, kwargs):
  check(lambda o: anp.array(o, **kwargs), lambda o: jnp.array(o, **kwargs), Raw(obj))


def test_array_of_arrays_and_mixed_leaves():
  x8 = values(np.int8, (3,))
  xf = values(np.float16, (3,))
  check_all([
      ("list of arrays", lambda: check(lambda a, b: anp.array([a, b]),
                                       lambda a, b: jnp.array([a, b]), x8, x8)),
      ("mixed dtype arrays", lambda: check(lambda a, b: anp.array([a, b]),
                                           lambda a, b: jnp.array([a, b]), x8, xf)),
      ("array and python scalars", lambda: check(
          lambda a: anp.array([a[0], 2.5, 1]), lambda a: jnp.array([a[0], 2.5, 1]), xf)),
      ("0-d arrays in list", lambda: check(
          lambda: anp.array([anp.array(1, np.int8), 3]),
          lambda: jnp.array([jnp.array(1, np.int8), 3]))),
      ("array with dtype", lambda: check(lambda a: anp.array(a, dtype=np.float32),
                                         lambda a: jnp.array(a, dtype=np.float32), x8)),
      ("asarray same dtype", lambda: check(lambda a: anp.asarray(a, dtype=np.int8),
                                           lambda a: jnp.asarray(a, dtype=np.int8), x8)),
      ("array of weak", lambda: check(lambda: anp.array(anp.asarray(2.0)),
                                      lambda: jnp.array(jnp.asarray(2.0)))),
  ])


def test_asarray_identity_and_copy_semantics():
  a, j = anp.arange(3), jnp.arange(3)
  assert (anp.asarray(a) is a) == (jnp.asarray(j) is j)
  assert (anp.array(a) is a) == (jnp.array(j) is j)
  assert (anp.array(a, copy=False) is a) == (jnp.array(j, copy=False) is j)


# ---- zeros / ones / full / empty and *_like ----------------------------------------------------
SHAPES = [3, (3,), (2, 3), (), 0, (0, 3), np.int64(2), (np.int32(2), 2)]
FILL_DTYPES = [None, np.int8, bool, BF16, np.complex64, np.float64]


@pytest.mark.parametrize("dtype", FILL_DTYPES, ids=lambda d: "None" if d is None else
                         np.dtype(d).name)
@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_zeros_ones_empty(name, dtype):
  check_all([(f"shape={_id(s)}", lambda s=s: check(lambda: getattr(anp, name)(s, dtype),
                                                   lambda: getattr(jnp, name)(s, dtype)))
             for s in SHAPES])


FULL_CASES = [
    ("int_fill", 3, 7, None), ("float_fill_weak", 3, 1.0, None), ("bool_fill", (2,), True, None),
    ("complex_fill", (2,), 1j, None), ("np_float32_fill", (2,), np.float32(1), None),
    ("np_float64_fill", (2,), np.float64(1), None), ("fill_with_dtype", (2, 2), 2.5, np.int8),
    ("broadcast_fill", (2, 3), [1, 2, 3], None), ("broadcast_fill_dtype", (2, 3), [1, 2, 3],
                                                   np.float16),
    ("array_fill", (2, 3), np.array([1.5, 2.5, 3.5], np.float32), None),
    ("bad_broadcast", (2, 3), [1, 2], None), ("scalar_shape", (), -1, None),
    ("negative_shape", (-1,), 0, None), ("float_shape", (2.0,), 0, None),
    ("bf16_fill", 2, 1.5, BF16),
]


@pytest.mark.parametrize("name,shape,fill,dtype", FULL_CASES, ids=[c[0] for c in FULL_CASES])
def test_full(name, shape, fill, dtype):
  check(lambda f: anp.full(shape, f, dtype), lambda f: jnp.full(shape, f, dtype), Raw(fill))


def test_full_with_array_fill_value():
  check_all([
      ("0-d array fill", lambda: check(lambda v: anp.full((2,), v), lambda v: jnp.full((2,), v),
                                       np.array(3, np.int8))),
      ("weak 0-d fill", lambda: check(lambda: anp.full((2,), anp.asarray(2.0)),
                                      lambda: jnp.full((2,), jnp.asarray(2.0)))),
  ])


LIKE_PROTOTYPES = [
    ("int8", lambda m: m.asarray(values(np.int8, (2, 3)))),
    ("bf16", lambda m: m.asarray(values(BF16, (3,)))),
    ("weak_float", lambda m: m.asarray(2.0)),
    ("python_int", lambda m: 3), ("python_float", lambda m: 2.5),
    ("numpy_f64", lambda m: np.zeros(2)), ("list", lambda m: [1, 2]),
    ("bool_0d", lambda m: m.asarray(True)),
]
LIKE_KWARGS = [dict(), dict(dtype=np.float16), dict(shape=(2, 2)), dict(dtype=bool, shape=3)]


@pytest.mark.parametrize("kwargs", LIKE_KWARGS,
                         ids=lambda k: ",".join(f"{a}={_id(b)}" for a, b in k.items()) or "none")
@pytest.mark.parametrize("proto", LIKE_PROTOTYPES, ids=[p[0] for p in LIKE_PROTOTYPES])
def test_like_functions(proto, kwargs):
  make = proto[1]
  cases = [(n, lambda n=n: check_np(lambda m: getattr(m, n)(make(m), **kwargs)))
           for n in ("zeros_like", "ones_like", "empty_like")]
  cases += [(f"full_like {v!r}", lambda v=v: check_np(lambda m: m.full_like(make(m), v, **kwargs)))
            for v in (7, 2.5)]
  check_all(cases)


# ---- arange / linspace -------------------------------------------------------------------------
ARANGE_CASES = [
    ((5,), {}), ((2, 10, 3), {}), ((5.0,), {}), ((0, 1, 0.1), {}), ((10, 0, -2), {}),
    ((5,), dict(dtype=np.float16)), ((0.5, 3), {}), ((-3,), {}), ((3, 1), {}),
    ((1, 5), dict(dtype=np.uint8)), ((np.int64(4),), {}), ((np.float32(2.5),), {}),
    ((0, 5, 0), {}), ((True,), {}), ((1, 2, 0.25), dict(dtype=np.int32)),
    ((0, 10), dict(step=3)), ((5,), dict(dtype=np.float64)), ((np.int8(3),), {}),
    ((np.uint8(1), 4), {}), ((0, 1 + 1j), {}), ((2,), dict(dtype=bool)),
]


@pytest.mark.parametrize("args,kwargs", ARANGE_CASES,
                         ids=[f"{_id(a)}-{_id(k)}" for a, k in ARANGE_CASES])
def test_arange(args, kwargs):
  check(lambda *a: anp.arange(*a, **kwargs), lambda *a: jnp.arange(*a, **kwargs),
        *[Raw(a) for a in args])


def test_arange_from_array_scalars():
  check_all([
      ("0-d int array", lambda: check_np(lambda m: m.arange(m.asarray(4)))),
      ("0-d float array stop", lambda: check_np(lambda m: m.arange(1, m.asarray(3.5)))),
      ("1-d array", lambda: check_np(lambda m: m.arange(m.asarray([3])))),
  ])


LINSPACE_CASES = [
    ((0, 1, 5), {}), ((0, 1, 5), dict(endpoint=False)), ((0, 1, 5), dict(retstep=True)),
    ((0, 1, 5), dict(retstep=True, endpoint=False)), ((2, 3, 0), {}), ((2, 3, 1), {}),
    ((2, 3, 1), dict(retstep=True)), ((2, 3, 0), dict(retstep=True)),
    ((2, 3, 1), dict(endpoint=False, retstep=True)),
    ((0, 10, 4), dict(dtype=np.int32)), ((-5, 5, 7), dict(dtype=np.int8)),
    ((0, 1, 4), dict(dtype=np.float16)), ((1, -1, 5), {}), ((0, 1), {}),
    ((0, 1, 4), dict(dtype=BF16)), ((0, 1 + 2j, 3), {}), ((0, 1, -1), {}),
    ((np.float16(0), 1, 3), {}), ((0, 10, 6), dict(dtype=np.uint8, endpoint=False)),
]


@pytest.mark.parametrize("args,kwargs", LINSPACE_CASES,
                         ids=[f"{_id(a)}-{_id(k)}" for a, k in LINSPACE_CASES])
def test_linspace(args, kwargs):
  check(lambda *a: anp.linspace(*a, **kwargs), lambda *a: jnp.linspace(*a, **kwargs),
        *[Raw(a) for a in args])


@pytest.mark.parametrize("axis", [0, 1, -1], ids=_id)
def test_linspace_array_endpoints_and_axis(axis):
  start = np.array([0.0, 1.0], np.float32)
  stop = np.array([[1.0, 3.0], [2.0, 5.0], [4.0, 4.0]], np.float32)
  check(lambda a, b: anp.linspace(a, b, 4, axis=axis),
        lambda a, b: jnp.linspace(a, b, 4, axis=axis), start, stop)
  check(lambda a: anp.linspace(a, 10, 3, axis=axis, retstep=True),
        lambda a: jnp.linspace(a, 10, 3, axis=axis, retstep=True), start)


# ---- eye / identity ----------------------------------------------------------------------------
EYE_CASES = [((3,), {}), ((3, 4), {}), ((4, 3), dict(k=1)), ((4, 3), dict(k=-2)),
             ((3,), dict(k=5)), ((0,), {}), ((3,), dict(dtype=np.int8)),
             ((2, 3), dict(dtype=bool, k=-1)), ((3, None, 1), {}), ((np.int64(2),), {}),
             ((-1,), {}), ((2,), dict(dtype=BF16))]


@pytest.mark.parametrize("args,kwargs", EYE_CASES, ids=[f"{_id(a)}-{_id(k)}" for a, k in EYE_CASES])
def test_eye(args, kwargs):
  check(lambda *a: anp.eye(*a, **kwargs), lambda *a: jnp.eye(*a, **kwargs),
        *[Raw(a) for a in args])


@pytest.mark.parametrize("args", [(3,), (1, np.int8), (2, bool), (0,)], ids=_id)
def test_identity(args):
  check(lambda *a: anp.identity(*a), lambda *a: jnp.identity(*a), *[Raw(a) for a in args])


# ---- reshape / ravel / transpose / axes --------------------------------------------------------
SHAPE_OPS = [
    ("reshape_2x3", lambda m, x: m.reshape(x, (2, 3))),
    ("reshape_-1", lambda m, x: m.reshape(x, -1)),
    ("reshape_3x-1", lambda m, x: m.reshape(x, (3, -1))),
    ("reshape_-1x-1", lambda m, x: m.reshape(x, (-1, -1))),
    ("reshape_bad_size", lambda m, x: m.reshape(x, (4, 2))),
    ("reshape_order_F", lambda m, x: m.reshape(x, (3, 2), order="F")),
    ("reshape_shape_kw", lambda m, x: m.reshape(x, shape=(6, 1))),
    ("reshape_newshape_kw", lambda m, x: m.reshape(x, newshape=(6,))),
    ("method_reshape_args", lambda m, x: x.reshape(3, 2)),
    ("method_reshape_tuple", lambda m, x: x.reshape((1, 6))),
    ("method_reshape_-1", lambda m, x: x.reshape(-1)),
    ("ravel", lambda m, x: m.ravel(x)),
    ("method_ravel", lambda m, x: x.ravel()),
    ("method_flatten", lambda m, x: x.flatten()),
    ("transpose", lambda m, x: m.transpose(x)),
    ("transpose_axes", lambda m, x: m.transpose(x, (1, 0))),
    ("transpose_negative_axes", lambda m, x: m.transpose(x, (-1, 0))),
    ("transpose_bad_axes", lambda m, x: m.transpose(x, (0, 0))),
    ("method_transpose_args", lambda m, x: x.transpose(1, 0)),
    ("method_transpose_tuple", lambda m, x: x.transpose((1, 0))),
    ("permute_dims", lambda m, x: m.permute_dims(x, (1, 0))),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, -1)),
    ("method_swapaxes", lambda m, x: x.swapaxes(1, 0)),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, -1)),
    ("matrix_transpose", lambda m, x: m.matrix_transpose(x)),
    ("T", lambda m, x: x.T), ("mT", lambda m, x: x.mT),
    ("squeeze_none", lambda m, x: m.squeeze(x)),
    ("squeeze_bad_axis", lambda m, x: m.squeeze(x, 0)),
    ("expand_dims_0", lambda m, x: m.expand_dims(x, 0)),
    ("expand_dims_-1", lambda m, x: m.expand_dims(x, -1)),
    ("expand_dims_tuple", lambda m, x: m.expand_dims(x, (0, 3))),
    ("expand_dims_out_of_range", lambda m, x: m.expand_dims(x, 4)),
    ("flip_none", lambda m, x: m.flip(x)), ("flip_0", lambda m, x: m.flip(x, 0)),
    ("flip_-1", lambda m, x: m.flip(x, -1)), ("flip_tuple", lambda m, x: m.flip(x, (0, 1))),
    ("fliplr", lambda m, x: m.fliplr(x)), ("flipud", lambda m, x: m.flipud(x)),
    ("atleast_1d", lambda m, x: m.atleast_1d(x)), ("atleast_2d", lambda m, x: m.atleast_2d(x)),
]


@pytest.mark.parametrize("dtype", [np.float32, BF16, np.bool_], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name,op", SHAPE_OPS, ids=[c[0] for c in SHAPE_OPS])
def test_shape_ops_2d(name, op, dtype):
  x = values(np.float32, (2, 3)).astype(dtype)
  check(lambda a: op(anp, a), lambda a: op(jnp, a), x)


SHAPE_OPS_3D = [
    ("transpose_default", lambda m, x: m.transpose(x)),
    ("transpose_102", lambda m, x: m.transpose(x, (1, 0, 2))),
    ("method_transpose_none", lambda m, x: x.transpose()),
    ("swapaxes_0_2", lambda m, x: m.swapaxes(x, 0, 2)),
    ("moveaxis_tuple", lambda m, x: m.moveaxis(x, (0, 1), (-1, 0))),
    ("moveaxis_negative", lambda m, x: m.moveaxis(x, -1, 0)),
    ("moveaxis_mismatch", lambda m, x: m.moveaxis(x, (0, 1), (0,))),
    ("squeeze_axis", lambda m, x: m.squeeze(x, 1)),
    ("squeeze_tuple", lambda m, x: m.squeeze(x, (1, -2))),
    ("squeeze_all", lambda m, x: m.squeeze(x)),
    ("method_squeeze", lambda m, x: x.squeeze(axis=1)),
    ("reshape_-1_keep", lambda m, x: m.reshape(x, (-1, 4))),
    ("mT_3d", lambda m, x: x.mT), ("T_3d", lambda m, x: x.T),
    ("matrix_transpose_3d", lambda m, x: m.matrix_transpose(x)),
    ("flip_tuple_neg", lambda m, x: m.flip(x, (-1, 0))),
    ("expand_dims_neg_tuple", lambda m, x: m.expand_dims(x, (-1, -3))),
    ("expand_dims_dup", lambda m, x: m.expand_dims(x, (0, 0))),
    ("ravel", lambda m, x: m.ravel(x)),
]


@pytest.mark.parametrize("name,op", SHAPE_OPS_3D, ids=[c[0] for c in SHAPE_OPS_3D])
def test_shape_ops_3d(name, op):
  x = values(np.int8, (2, 1, 4))
  check(lambda a: op(anp, a), lambda a: op(jnp, a), x)


ZERO_D_OPS = [
    ("reshape_1", lambda m, x: m.reshape(x, (1,))),
    ("reshape_empty", lambda m, x: m.reshape(x, ())),
    ("ravel", lambda m, x: m.ravel(x)), ("transpose", lambda m, x: m.transpose(x)),
    ("T", lambda m, x: x.T), ("mT", lambda m, x: x.mT), ("squeeze", lambda m, x: m.squeeze(x)),
    ("expand_dims", lambda m, x: m.expand_dims(x, 0)), ("flip", lambda m, x: m.flip(x)),
    ("atleast_2d", lambda m, x: m.atleast_2d(x)), ("swapaxes", lambda m, x: m.swapaxes(x, 0, 0)),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (2, 2))),
]


@pytest.mark.parametrize("name,op", ZERO_D_OPS, ids=[c[0] for c in ZERO_D_OPS])
def test_shape_ops_0d_and_python_scalars(name, op):
  check(lambda a: op(anp, a), lambda a: op(jnp, a), np.array(2.5, np.float32))
  check(lambda a: op(anp, a), lambda a: op(jnp, a), 3)   # weak Python scalar input


# ---- concatenate / stack / hstack / vstack -----------------------------------------------------
def _arrs(*specs):
  return [values(dt, shape) for dt, shape in specs]


JOIN_CASES = [
    ("concat_axis0", "concatenate", _arrs((np.float32, (2, 3)), (np.float32, (1, 3))), dict()),
    ("concat_axis-1", "concatenate", _arrs((np.float32, (2, 3)), (np.float32, (2, 1))),
     dict(axis=-1)),
    ("concat_axis_none", "concatenate", _arrs((np.int8, (2, 3)), (np.int8, (4,))),
     dict(axis=None)),
    ("concat_mixed_dtypes", "concatenate",
     _arrs((np.int8, (2,)), (np.float16, (3,)), (np.bool_, (1,))), dict()),
    ("concat_u8_i8", "concatenate", _arrs((np.uint8, (2,)), (np.int8, (2,))), dict()),
    ("concat_dtype", "concatenate", _arrs((np.float32, (2,)), (np.int32, (2,))),
     dict(dtype=np.int8)),
    ("concat_single", "concatenate", _arrs((np.float32, (2, 2))), dict(axis=1)),
    ("concat_0d", "concatenate", _arrs((np.float32, ()), (np.float32, ())), dict()),
    ("concat_shape_mismatch", "concatenate", _arrs((np.float32, (2, 3)), (np.float32, (2, 2))),
     dict()),
    ("concat_rank_mismatch", "concatenate", _arrs((np.float32, (2, 3)), (np.float32, (3,))),
     dict()),
    ("concat_bad_axis", "concatenate", _arrs((np.float32, (2,)), (np.float32, (2,))),
     dict(axis=1)),
    ("concat_empty_piece", "concatenate", _arrs((np.float32, (0, 3)), (np.float32, (2, 3))),
     dict()),
    ("concat_alias", "concat", _arrs((np.float32, (2,)), (np.bool_, (2,))), dict()),
    ("stack_axis0", "stack", _arrs((np.float32, (2, 3)), (np.float32, (2, 3))), dict()),
    ("stack_axis-1", "stack", _arrs((np.int8, (2, 3)), (np.float16, (2, 3))), dict(axis=-1)),
    ("stack_axis2", "stack", _arrs((np.float32, (2, 3)), (np.float32, (2, 3))), dict(axis=2)),
    ("stack_0d", "stack", _arrs((np.float32, ()), (np.int32, ())), dict()),
    ("stack_mismatch", "stack", _arrs((np.float32, (2,)), (np.float32, (3,))), dict()),
    ("stack_dtype", "stack", _arrs((np.float32, (2,)), (np.float32, (2,))),
     dict(dtype=np.int32)),
    ("hstack_1d", "hstack", _arrs((np.float32, (2,)), (np.int8, (3,))), dict()),
    ("hstack_2d", "hstack", _arrs((np.float32, (2, 1)), (np.float32, (2, 3))), dict()),
    ("hstack_0d", "hstack", _arrs((np.float32, ()), (np.float32, ())), dict()),
    ("vstack_1d", "vstack", _arrs((np.float32, (3,)), (np.float32, (3,))), dict()),
    ("vstack_2d", "vstack", _arrs((np.bool_, (1, 3)), (np.uint8, (2, 3))), dict()),
    ("vstack_0d", "vstack", _arrs((np.float32, ()), (np.float32, ())), dict()),
]


@pytest.mark.parametrize("name,fn,arrays,kwargs", JOIN_CASES, ids=[c[0] for c in JOIN_CASES])
def test_join(name, fn, arrays, kwargs):
  check(lambda *xs: getattr(anp, fn)(list(xs), **kwargs),
        lambda *xs: getattr(jnp, fn)(list(xs), **kwargs), *arrays)


def test_join_edge_cases():
  x = values(np.float32, (2, 3))
  check_all([
      ("tuple input", lambda: check(lambda a: anp.concatenate((a, a)),
                                    lambda a: jnp.concatenate((a, a)), x)),
      ("empty list", lambda: check(lambda: anp.concatenate([]), lambda: jnp.concatenate([]))),
      ("stack empty list", lambda: check(lambda: anp.stack([]), lambda: jnp.stack([]))),
      ("array as sequence", lambda: check(lambda a: anp.concatenate(a),
                                          lambda a: jnp.concatenate(a), x)),
      ("python scalars in stack", lambda: check(lambda: anp.stack([1, 2.5]),
                                                lambda: jnp.stack([1, 2.5]))),
      ("weak + strong", lambda: check(lambda a: anp.concatenate([a, anp.asarray([1.0])]),
                                      lambda a: jnp.concatenate([a, jnp.asarray([1.0])]),
                                      values(BF16, (2,)))),
      ("numpy arrays", lambda: check(lambda: anp.concatenate([np.ones(2), np.zeros(1)]),
                                     lambda: jnp.concatenate([np.ones(2), np.zeros(1)]))),
      ("lists rejected", lambda: check(lambda: anp.concatenate([[1, 2], [3]]),
                                       lambda: jnp.concatenate([[1, 2], [3]]))),
  ])


# ---- broadcast_to / broadcast_arrays / split ---------------------------------------------------
BROADCAST_CASES = [((3,), (2, 3)), ((1, 3), (4, 3)), ((2, 1), (2, 5)), ((), (2,)),
                   ((3,), 3), ((3,), (4,)), ((2, 3), (3,)), ((1,), (0,)), ((2, 1, 1), (2, 3, 4))]


@pytest.mark.parametrize("src,shape", BROADCAST_CASES, ids=[f"{_id(a)}-to-{_id(b)}"
                                                             for a, b in BROADCAST_CASES])
def test_broadcast_to(src, shape):
  check(lambda a: anp.broadcast_to(a, shape), lambda a: jnp.broadcast_to(a, shape),
        values(np.float16, src))


def test_broadcast_to_python_scalar_and_list():
  check_all([
      ("python float", lambda: check_np(lambda m: m.broadcast_to(2.5, (2, 2)))),
      ("python int", lambda: check_np(lambda m: m.broadcast_to(1, (3,)))),
      ("list", lambda: check_np(lambda m: m.broadcast_to([1, 2], (2, 2)))),
  ])


BROADCAST_ARRAYS_CASES = [[(3,), (2, 3)], [(2, 1), (1, 4), ()], [(3,), (4,)], [(2, 3)],
                          [(0, 1), (1, 5)]]


@pytest.mark.parametrize("shapes", BROADCAST_ARRAYS_CASES, ids=_id)
def test_broadcast_arrays(shapes):
  arrays = [values(dt, s) for dt, s in zip([np.float32, np.int8, np.bool_], shapes)]
  check(lambda *xs: anp.broadcast_arrays(*xs), lambda *xs: jnp.broadcast_arrays(*xs), *arrays)


def test_broadcast_shapes():
  for shapes in [((3,), (2, 3)), ((2, 1), (1, 4), ()), ((3,), (4,))]:
    try:
      expected = jnp.broadcast_shapes(*shapes)
    except Exception as e:  # noqa: BLE001
      same_exception(lambda: anp.broadcast_shapes(*shapes), e)
      continue
    assert anp.broadcast_shapes(*shapes) == expected


SPLIT_CASES = [((6,), 3, 0), ((6,), [1, 4], 0), ((2, 6), 2, 1), ((2, 6), [2], -1),
               ((5,), 2, 0), ((6,), [4, 2], 0), ((6,), [0, 10], 0), ((4, 3), 1, 0),
               ((0,), 1, 0), ((6,), np.array([2, 3]), 0)]


@pytest.mark.parametrize("shape,sections,axis", SPLIT_CASES,
                         ids=[f"{_id(s)}-{_id(k)}-axis={a}" for s, k, a in SPLIT_CASES])
def test_split(shape, sections, axis):
  check(lambda a: anp.split(a, sections, axis), lambda a: jnp.split(a, sections, axis),
        values(np.float32, shape))


# ---- astype ------------------------------------------------------------------------------------
ASTYPE_CASES = [
    (np.float32, np.int32), (np.float32, np.uint8), (np.float32, np.int8), (np.float32, bool),
    (np.int32, np.float16), (np.int32, BF16), (np.bool_, np.float32), (np.uint8, np.int8),
    (np.complex64, np.float32), (np.complex64, np.int32), (np.complex64, bool),
    (np.float32, np.complex64), (BF16, np.float16), (np.float32, np.float64),
    (np.int8, np.int64), (np.float16, np.uint32),
]
SPECIAL_F = np.array([np.nan, np.inf, -np.inf, -0.0, 1.7, -1.7, 300.0, -300.0, 2.5e9])


@pytest.mark.parametrize("src,dst", ASTYPE_CASES,
                         ids=[f"{np.dtype(a).name}-to-{np.dtype(b).name}" for a, b in ASTYPE_CASES])
def test_astype(src, dst):
  if np.dtype(src).kind in "fc" or np.dtype(src) == BF16:
    with np.errstate(all="ignore"):
      x = SPECIAL_F.astype(src)
    if np.dtype(src).kind == "c":
      x = x + 1j * SPECIAL_F[::-1].astype(np.float32)
      x = x.astype(src)
  else:
    x = values(src, (9,))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    check(lambda a: anp.astype(a, dst), lambda a: jnp.astype(a, dst), x)
    check(lambda a: a.astype(dst), lambda a: a.astype(dst), x)


def test_astype_of_weak_and_python_scalars():
  check_all([
      ("weak array", lambda: check_np(lambda m: m.asarray(2.5).astype(np.float16))),
      ("python scalar", lambda: check_np(lambda m: m.astype(3, np.float32))),
      ("same dtype", lambda: check_np(lambda m: m.asarray(2.5).astype(np.float32))),
      ("list", lambda: check_np(lambda m: m.astype([1, 2], np.float32))),
  ])


# ---- repr / str --------------------------------------------------------------------------------
REPR_CASES = [
    ("int_list", lambda m: m.array([1, 2])), ("float", lambda m: m.array([1.5, -2.0, 3.25])),
    ("weak_float_0d", lambda m: m.asarray(2.0)), ("weak_full", lambda m: m.full(3, 1.0)),
    ("weak_int_0d", lambda m: m.asarray(3)), ("strong_0d", lambda m: m.array(3, np.int32)),
    ("bool", lambda m: m.array([True, False])), ("bool_0d", lambda m: m.asarray(True)),
    ("bfloat16", lambda m: m.array([1.0, 2.5, -3.0], m.bfloat16)),
    ("float16", lambda m: m.array([0.1, 2.0], m.float16)),
    ("complex", lambda m: m.array([1 + 2j, -0.5j])),
    ("uint8", lambda m: m.array([0, 255], m.uint8)), ("int8_2d", lambda m: m.ones((2, 3), m.int8)),
    ("empty", lambda m: m.zeros((0,))), ("empty_2d", lambda m: m.zeros((2, 0), m.int32)),
    ("empty_weak", lambda m: m.full((0, 3), 1.0)),
    ("nan_inf", lambda m: m.array([float("nan"), float("inf"), -float("inf"), -0.0])),
    ("wide_float", lambda m: m.arange(40.0)), ("wide_int", lambda m: m.arange(100)),
    ("wide_2d", lambda m: m.arange(60.0).reshape(3, 20)),
    ("wrap_weak", lambda m: m.full(30, 1.5)),
    ("summarized", lambda m: m.arange(2000)), ("small_floats", lambda m: m.array([1e-8, 1.0])),
    ("big_floats", lambda m: m.array([1e10, 1.0])), ("3d", lambda m: m.ones((2, 2, 2))),
    ("scalar_float_0d", lambda m: m.array(1.5)), ("neg_zero", lambda m: m.array(-0.0)),
    ("bf16_0d", lambda m: m.array(1.25, m.bfloat16)),
    ("complex_0d", lambda m: m.asarray(1j)),
]


@pytest.mark.parametrize("name,make", REPR_CASES, ids=[c[0] for c in REPR_CASES])
def test_repr_and_str(name, make):
  a, j = make(anp), make(jnp)
  assert repr(a) == repr(j)
  assert str(a) == str(j)


def test_format():
  a, j = anp.array(2.5), jnp.array(2.5)
  assert f"{a:.3f}" == f"{j:.3f}"
  assert f"{a}" == f"{j}"
  assert format(anp.array([1, 2])) == format(jnp.array([1, 2]))


# ---- Python protocol: item, tolist, len, iteration, scalar conversion, __array__ ---------------
def _py_compare(fn, a, j):
  try:
    expected = fn(j)
  except Exception as e:  # noqa: BLE001
    same_exception(lambda: fn(a), e)
    return
  actual = fn(a)
  assert type(actual) is type(expected), (type(actual), type(expected))
  assert actual == expected or repr(actual) == repr(expected), (actual, expected)  # NaN-safe


PY_VALUES = [
    ("f32_0d", lambda m: m.array(2.5, np.float32)), ("i8_0d", lambda m: m.array(-3, np.int8)),
    ("bool_0d", lambda m: m.array(True)), ("c64_0d", lambda m: m.array(1 + 2j, np.complex64)),
    ("bf16_0d", lambda m: m.array(1.5, m.bfloat16)), ("u8_0d", lambda m: m.array(200, np.uint8)),
    ("f32_size1", lambda m: m.array([[7.0]])), ("i32_vec", lambda m: m.array([1, 2, 3])),
    ("nan_0d", lambda m: m.array(float("nan"))), ("weak_0d", lambda m: m.asarray(2.0)),
    ("f16_vec", lambda m: m.array([0.5, 1.0], np.float16)), ("empty", lambda m: m.zeros((0,))),
]
PY_FNS = [("item", lambda x: x.item()), ("tolist", lambda x: x.tolist()),
          ("len", len), ("float", float), ("int", int), ("bool", bool), ("complex", complex),
          ("index", operator.index), ("iter", lambda x: [v.item() for v in x]),
          ("ndim_shape_size", lambda x: (x.ndim, x.shape, x.size, str(x.dtype))),
          ("item0", lambda x: x.item(0)), ("hash", hash)]


@pytest.mark.parametrize("fname,fn", PY_FNS, ids=[f[0] for f in PY_FNS])
@pytest.mark.parametrize("vname,make", PY_VALUES, ids=[v[0] for v in PY_VALUES])
def test_python_protocol(vname, make, fname, fn):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    _py_compare(fn, make(anp), make(jnp))


def test_iteration_yields_arrays_like_jax():
  a, j = anp.array([[1, 2], [3, 4]], np.int8), jnp.array([[1, 2], [3, 4]], np.int8)
  rows_a, rows_j = list(a), list(j)
  assert len(rows_a) == len(rows_j)
  for ra, rj in zip(rows_a, rows_j):
    assert_same(ra, rj)
  check_all([("0-d iteration", lambda: _py_compare(list, anp.array(1), jnp.array(1)))])


@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, np.complex64, BF16, np.uint32],
                         ids=lambda d: np.dtype(d).name)
def test_dunder_array(dtype):
  x = values(np.float32, (2, 3)).astype(dtype)
  a, j = anp.asarray(x), jnp.asarray(x)
  na, nj = np.asarray(a), np.asarray(j)
  assert na.dtype == nj.dtype and na.shape == nj.shape
  np.testing.assert_array_equal(na, nj)
  na64, nj64 = np.asarray(a, dtype=np.float64), np.asarray(j, dtype=np.float64)
  assert na64.dtype == nj64.dtype
  np.testing.assert_array_equal(na64, nj64)
  assert np.array(a).flags.writeable == np.array(j).flags.writeable


def test_dunder_array_of_weak_and_0d():
  for make in (lambda m: m.asarray(2.0), lambda m: m.array(3, np.int8)):
    na, nj = np.asarray(make(anp)), np.asarray(make(jnp))
    assert na.dtype == nj.dtype and na.shape == nj.shape and na == nj


@pytest.mark.parametrize("dtype", [np.float32, np.complex64, np.int8, BF16],
                         ids=lambda d: np.dtype(d).name)
def test_real_imag_conj_properties(dtype):
  x = values(np.complex64 if dtype == np.complex64 else np.float32, (2, 3)).astype(dtype)
  check_all([
      ("real", lambda: check(lambda a: a.real, lambda a: a.real, x)),
      ("imag", lambda: check(lambda a: a.imag, lambda a: a.imag, x)),
      ("conj()", lambda: check(lambda a: a.conj(), lambda a: a.conj(), x)),
      ("conjugate()", lambda: check(lambda a: a.conjugate(), lambda a: a.conjugate(), x)),
  ])


def test_misc_query_functions():
  x = values(np.float32, (2, 3))
  cases = [
      ("shape", lambda m, a: m.shape(a)), ("ndim", lambda m, a: m.ndim(a)),
      ("size", lambda m, a: m.size(a)), ("size_axis", lambda m, a: m.size(a, 1)),
      ("isscalar_array", lambda m, a: m.isscalar(a)),
      ("isscalar_0d", lambda m, a: m.isscalar(m.asarray(1.0))),
      ("isscalar_py", lambda m, a: m.isscalar(2.0)),
      ("iscomplexobj", lambda m, a: m.iscomplexobj(a)),
      ("isrealobj", lambda m, a: m.isrealobj(a)),
      ("result_type", lambda m, a: m.result_type(a, 2.0, np.int8)),
      ("result_type_weak", lambda m, a: m.result_type(np.int8, 2)),
      ("promote_types", lambda m, a: m.promote_types(np.int8, np.uint8)),
      ("promote_types_bf16", lambda m, a: m.promote_types(m.bfloat16, np.float16)),
      ("can_cast", lambda m, a: m.can_cast(np.int8, np.int16)),
  ]
  out = []
  for name, fn in cases:
    def run(fn=fn):
      _py_compare(lambda pair: fn(*pair), (anp, anp.asarray(x)), (jnp, jnp.asarray(x)))
    out.append((name, run))
  check_all(out)


# ---- dot / matmul / tensordot / inner / outer / vdot -------------------------------------------
def _mat(dtype, shape, seed=0):
  n = math.prod(shape)
  v = ((np.arange(n) * (3 + seed)) % 7 - 3).reshape(shape)
  if np.dtype(dtype).kind == "c":
    return (v + 0.5j * (v % 2)).astype(dtype)
  if np.dtype(dtype) == np.bool_:
    return (v > 0).astype(dtype)
  return v.astype(dtype)


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((1, 2, 3), (5, 3, 4)), ((2, 1, 2, 3), (3, 3, 2)),
                 ((2, 3), (4, 2)), ((0, 3), (3, 2)), ((2, 0), (0, 3)), ((), (3,))]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES, ids=lambda s: f"{_id(s[0])}@{_id(s[1])}")
@pytest.mark.parametrize("fn", ["matmul", "dot"])
def test_matmul_and_dot_shapes(fn, shapes):
  x, y = _mat(np.float32, shapes[0]), _mat(np.float32, shapes[1], 1)
  check(getattr(anp, fn), getattr(jnp, fn), x, y)


PRODUCT_DTYPES = [(np.int8, np.int8), (np.int8, np.float16), (BF16, BF16), (np.bool_, np.bool_),
                  (np.complex64, np.float32), (np.uint8, np.int32), (np.int32, np.int32)]


@pytest.mark.parametrize("dtypes", PRODUCT_DTYPES,
                         ids=lambda d: f"{np.dtype(d[0]).name}-{np.dtype(d[1]).name}")
@pytest.mark.parametrize("fn", ["matmul", "dot", "inner", "outer", "vdot"])
def test_product_dtypes(fn, dtypes):
  x, y = _mat(dtypes[0], (2, 3)), _mat(dtypes[1], (3, 3) if fn != "inner" else (4, 3), 1)
  check(getattr(anp, fn), getattr(jnp, fn), x, y)


PREFERRED = [(np.int8, np.int32), (BF16, np.float32), (np.float16, np.float32),
             (np.int8, np.float32), (np.float32, np.int32)]


@pytest.mark.parametrize("dtypes", PREFERRED,
                         ids=lambda d: f"{np.dtype(d[0]).name}-pref-{np.dtype(d[1]).name}")
@pytest.mark.parametrize("fn", ["matmul", "dot", "tensordot", "inner", "vdot"])
def test_preferred_element_type(fn, dtypes):
  src, pref = dtypes
  x, y = _mat(src, (2, 3)), _mat(src, (3, 3) if fn != "inner" else (4, 3), 1)
  check(lambda a, b: getattr(anp, fn)(a, b, preferred_element_type=pref),
        lambda a, b: getattr(jnp, fn)(a, b, preferred_element_type=pref), x, y)


TENSORDOT_CASES = [((2, 3, 4), (3, 4, 5), 2), ((2, 3), (3, 4), 1), ((2, 3), (4, 5), 0),
                   ((2, 3, 4), (4, 3), ([1, 2], [1, 0])), ((2, 3, 4), (4, 2), (-1, 0)),
                   ((2, 3), (3, 4), ((1,), (0,))), ((2, 3), (2, 3), 3), ((2, 3), (4, 3), (1, 0))]


@pytest.mark.parametrize("a_shape,b_shape,axes", TENSORDOT_CASES,
                         ids=[f"{_id(a)}-{_id(b)}-axes={_id(x)}" for a, b, x in TENSORDOT_CASES])
def test_tensordot_axes(a_shape, b_shape, axes):
  check(lambda a, b: anp.tensordot(a, b, axes), lambda a, b: jnp.tensordot(a, b, axes),
        _mat(np.float32, a_shape), _mat(np.float32, b_shape, 1))


INNER_OUTER_VDOT = [((3,), (3,)), ((2, 3), (4, 3)), ((), (3,)), ((2, 3), (3,)), ((2, 2), (4,)),
                    ((3,), (4,))]


@pytest.mark.parametrize("shapes", INNER_OUTER_VDOT, ids=lambda s: f"{_id(s[0])}-{_id(s[1])}")
@pytest.mark.parametrize("fn", ["inner", "outer", "vdot"])
def test_inner_outer_vdot_shapes(fn, shapes):
  check(getattr(anp, fn), getattr(jnp, fn), _mat(np.complex64, shapes[0]),
        _mat(np.complex64, shapes[1], 1))


def test_products_with_python_scalars_and_methods():
  x = _mat(np.float16, (2, 3))
  check_all([
      ("dot scalar", lambda: check(lambda a: anp.dot(a, 2.5), lambda a: jnp.dot(a, 2.5), x)),
      ("dot scalar left", lambda: check(lambda a: anp.dot(2, a), lambda a: jnp.dot(2, a), x)),
      ("inner scalar", lambda: check(lambda a: anp.inner(a, 3), lambda a: jnp.inner(a, 3), x)),
      ("matmul scalar", lambda: check(lambda a: anp.matmul(a, 2.0),
                                      lambda a: jnp.matmul(a, 2.0), x)),
      ("outer scalar", lambda: check(lambda a: anp.outer(a, 2), lambda a: jnp.outer(a, 2), x)),
      ("method dot", lambda: check(lambda a: a.dot(a.T), lambda a: a.dot(a.T), x)),
      ("matmul numpy", lambda: check(lambda a: anp.matmul(a, np.ones((3, 2))),
                                     lambda a: jnp.matmul(a, np.ones((3, 2))), x)),
      ("weak 0-d dot", lambda: check(lambda: anp.dot(anp.asarray(2.0), anp.asarray(3.0)),
                                     lambda: jnp.dot(jnp.asarray(2.0), jnp.asarray(3.0)))),
  ])


@pytest.mark.parametrize("fn", ["matmul", "dot", "tensordot", "inner", "outer", "vdot"])
def test_products_under_jit(fn):
  x, y = _mat(np.float32, (2, 3)), _mat(np.float32, (3, 3) if fn != "inner" else (4, 3), 1)
  check(arrax.jit(getattr(anp, fn)), jax.jit(getattr(jnp, fn)), x, y)


# ---- creation and shape functions under jit ----------------------------------------------------
JIT_CASES = [
    ("zeros_like", lambda m, x: m.zeros_like(x)), ("full_like", lambda m, x: m.full_like(x, 2)),
    ("full_traced_fill", lambda m, x: m.full((2,), m.sum(x))),
    ("ones_dtype", lambda m, x: m.ones(3, m.int8) + x.shape[0]),
    ("arange", lambda m, x: m.arange(4) * x.sum()),
    ("linspace_traced", lambda m, x: m.linspace(m.min(x), m.max(x), 5)),
    ("eye", lambda m, x: m.eye(3) * x.mean()),
    ("reshape", lambda m, x: m.reshape(x, (-1,))), ("transpose", lambda m, x: x.T),
    ("concatenate", lambda m, x: m.concatenate([x, x], axis=1)),
    ("stack", lambda m, x: m.stack([x, x + 1])), ("split", lambda m, x: m.split(x, 3, axis=1)),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (4, 2, 3))),
    ("array_of_tracers", lambda m, x: m.array([m.sum(x), 1.0])),
    ("asarray_tracer", lambda m, x: m.asarray(x, dtype=m.int8)),
    ("astype", lambda m, x: x.astype(m.bfloat16)),
    ("flip", lambda m, x: m.flip(x, 1)), ("expand_squeeze", lambda m, x: m.squeeze(
        m.expand_dims(x, 0))),
    ("arange_traced_stop", lambda m, x: m.arange(m.sum(x))),
]


@pytest.mark.parametrize("name,fn", JIT_CASES, ids=[c[0] for c in JIT_CASES])
def test_under_jit(name, fn):
  x = values(np.float32, (2, 3))
  check(arrax.jit(lambda a: fn(anp, a)), jax.jit(lambda a: fn(jnp, a)), x)
