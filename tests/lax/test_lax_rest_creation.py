"""lax names beyond the primitive families, against JAX 0.10.2: full, full_like, empty,
broadcast_shapes, broadcast_like, dtype, shape_as_value, stage, optimization_barrier, dce_sink,
mulhi, index_take, tokens (create_token, after_all), with_sharding_constraint and the type
names (DotAlgorithm, DotAlgorithmPreset, AccuracyMode, Tolerance, RandomAlgorithm, ...);
values, dtypes, weak types, jit, vmap, derivatives, printed jaxprs and errors.
"""
import inspect
import typing
import warnings

import jax as real_jax
import ml_dtypes
import numpy as np
import pytest
from jax import lax as jlax

import arrax
from arrax import lax as alax
from arrax.test_util import check_grads
from oracle import (BF16, JAX, ARRAX, assert_same, call_with, check, check_all, check_jaxpr,
                    check_jvp_vjp, check_raises, check_vmap, rand)

LAX = call_with("lax")
DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, BF16, np.float32, np.complex64]


# ---- full / full_like / empty ----------------------------------------------------------------
@pytest.mark.parametrize("dtype", [None, *DTYPES])
@pytest.mark.parametrize("fill", [2, 2.5, True, 1 + 2j, np.float32(3), np.int8(-1),
                                  np.array(4, np.int16)], ids=repr)
def test_full_values(dtype, fill):
  if dtype is not None and np.dtype(dtype).kind != "c" and isinstance(fill, complex):
    fill = 3   # (complex -> real conversions of Python scalars fail or warn)
  check_all([(str(shape), lambda shape=shape: check(
      lambda lax: lax.full(shape, fill, dtype), build=LAX, jit=shape == (2, 3)))
      for shape in [(), (2, 0), (2, 3), 4]])


def test_full_traced_fill_and_jaxprs():
  x = np.float32(1.5)
  check(lambda lax, v: lax.full((2, 3), v), x, build=LAX, jit=True)
  check(lambda lax, v: lax.full((2,), v, np.int32), x, build=LAX, jit=True)
  for fn in [lambda lax, v: lax.full((2, 3), v),
             lambda lax, v: lax.full((2, 3), 2, np.float16),
             lambda lax, v: lax.full((), 2.0),
             lambda lax, v: lax.full((), v, np.int8),
             lambda lax, v: lax.full((3,), True)]:
    check_jaxpr(fn, x, build=LAX)


def test_full_errors():
  check_raises(lambda lax: lax.full((2,), np.ones(2)), build=LAX, match=["scalar fill_value"])
  check_raises(lambda lax: lax.full((2.0,), 1), build=LAX)
  check_raises(lambda lax: lax.full((2,), 1, "foo"), build=LAX)


def test_full_grad_and_vmap():
  check(lambda top: top.grad(lambda v: top.lax.full((3,), v).sum()), 2.0,
        build=call_with("top"))
  check_grads(lambda v: alax.full((2, 2), v) * v, (np.float32(1.3),), order=2)
  check_vmap(lambda top: lambda v: top.lax.full((2,), v), np.arange(3, dtype=np.float32))


@pytest.mark.parametrize("dtype", [None, np.int32, np.float16, BF16, np.complex64, np.bool_])
@pytest.mark.parametrize("shape", [None, (), (2, 3)])
def test_full_like(dtype, shape):
  cases = []
  for x in [np.ones((3,), np.int32), rand((2, 2), np.float16), 1.0, True]:
    for fill in [0, -1.5]:
      cases.append((f"{x!r} {fill}", lambda x=x, fill=fill: check(
          lambda lax, x: lax.full_like(x, fill, dtype, shape), x, build=LAX,
          jit=fill == 0)))
  check_all(cases)


def test_full_like_weak_types_and_jaxprs():
  # A weakly typed prototype gives a weakly typed result unless a dtype is given.
  check(lambda top: top.jit(lambda: top.lax.full_like(2.0, 3))(), build=call_with("top"))
  x = np.ones(3, np.int32)
  for fn in [lambda lax, x: lax.full_like(x, 2.0),
             lambda lax, x: lax.full_like(x, 2.0, np.float32, (2,)),
             lambda lax, x: lax.full_like(x[0], x[1]),
             lambda lax, x: lax.full_like(1.0, x[0])]:
    check_jaxpr(fn, x, build=LAX)
  check_jaxpr(lambda lax, v: lax.full_like(v, 2.0, shape=(2,)), 1.0, build=LAX)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.bool_, np.complex64, np.uint8,
                                   np.float16])
@pytest.mark.parametrize("shape", [(3,), (), (2, 0), (2, 3), 4])
def test_empty(dtype, shape):
  # The contents are unspecified (zeros in both); shape and dtype must agree.
  check(lambda lax: lax.empty(shape, dtype), build=LAX, jit=True)


def test_empty_jaxpr_vmap_and_errors():
  check_jaxpr(lambda lax: lax.empty((3,), np.float32), build=LAX)
  check_jaxpr(lambda lax: lax.empty(3, np.int32), build=LAX)
  check_vmap(lambda top: lambda v: top.lax.empty((2,), np.float32) + v,
             np.ones(3, np.float32))
  check_raises(lambda lax: lax.empty((2.0,), np.float32), build=LAX)
  check_raises(lambda lax: lax.empty([2, 3], np.float32), build=LAX)


# ---- broadcast_shapes / broadcast_like / dtype / shape_as_value -------------------------------
@pytest.mark.parametrize("shapes", [
    [(1,), (4,)], [(3, 1), (4,)], [(3, 1), (1, 4), (5, 1, 1)], [(), (2, 3)], [(0,), (1,)],
    [(2, 3)], [[2, 3]], [(2, 3), (2, 3)], [(1, 1), (1,)], [(4, 1, 3), (5, 1)],
    [(2,), (3,)], [(3, 1), (4, 1)], [(0,), (2,)], [(-1,), (1,)], [(2.0,), (1,)],
    [(np.int64(2),), (1,)],
], ids=str)
def test_broadcast_shapes(shapes):
  check(lambda lax: lax.broadcast_shapes(*shapes), build=LAX, strict_tree=True)


def test_broadcast_shapes_no_arguments():
  # JAX fails on an internal assertion; arrax raises a TypeError.
  with pytest.raises(TypeError, match="At least one shape"):
    alax.broadcast_shapes()


@pytest.mark.parametrize("arr,like", [
    (np.arange(3, dtype=np.int32), np.zeros((2, 3))),
    (np.float32(2), np.zeros((2, 2), np.int8)),
    (np.ones((2, 1), np.float16), np.zeros((4, 2, 3))),
    (np.ones((2, 3)), np.zeros((2, 3))),
    (np.ones((3,)), np.zeros((2, 4))),
    (np.ones((2, 3)), np.zeros((3,))),
    (1.5, np.zeros((2,))),
], ids=lambda v: str(np.shape(v)))
def test_broadcast_like(arr, like):
  check(lambda lax, a, b: lax.broadcast_like(a, b), arr, like, build=LAX, jit=True)


def test_broadcast_like_jaxpr_grad_vmap():
  x, y = np.ones((3,), np.float32), np.zeros((2, 3), np.float32)
  check_jaxpr(lambda lax, a, b: lax.broadcast_like(a, b), x, y, build=LAX)
  check_jvp_vjp(lambda lax, a: lax.broadcast_like(a, y), x)
  check_vmap(lambda top: lambda a: top.lax.broadcast_like(a, y), np.ones((4, 3), np.float32))


@pytest.mark.parametrize("x", [
    np.float64, float, int, bool, complex, 1, 1.0, True, 1j, np.float32, np.int8, "float64",
    "int16", np.dtype("int64"), np.dtype(BF16), np.ones(3), np.ones(3, np.float16),
    np.ones(2, np.uint64), ml_dtypes.bfloat16, np.float32(1), [1, 2], (1.0, 2), None, "foo",
    object(), np.array(["a"]),
], ids=lambda v: "object()" if type(v) is object else repr(v))
def test_dtype(x):
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    check(lambda lax: lax.dtype(x), build=LAX, check_type=False)


def test_dtype_of_arrays_is_kept(x64):
  check(lambda top: top.lax.dtype(top.numpy.ones(2, np.float64)), build=call_with("top"),
        check_type=False)
  check(lambda top: top.lax.dtype(top.numpy.ones(2, np.int16)), build=call_with("top"),
        check_type=False)


def test_dtype_warns_when_64_bits_are_dropped():
  for lib in (real_jax.lax, alax):
    with pytest.warns(UserWarning, match="Explicitly requested dtype"):
      assert lib.dtype(np.float64) == np.float32


@pytest.mark.parametrize("shape", [(2, 3), (), (0,), (5,), (2 ** 40, 1)], ids=str)
def test_shape_as_value(shape):
  check(lambda lax: lax.shape_as_value(shape), build=LAX, strict_tree=True)


# ---- stage -------------------------------------------------------------------------------------
def test_stage():
  check(lambda lax: lax.stage(2), build=LAX)
  check(lambda lax: lax.stage(np.ones(2)), build=LAX)
  check(lambda lax: lax.stage(np.float32(3)), build=LAX)
  check(lambda lax, x: lax.stage(x), np.ones(2, np.int8), build=LAX, jit=True)
  check_jaxpr(lambda lax, x: lax.stage(np.ones(3)) + x, 1.0, build=LAX)
  check_jaxpr(lambda lax, x: (lax.stage(np.float32(2)), lax.stage(3), lax.stage(x)), 1.0,
              build=LAX)
  check_jaxpr(lambda lax, x: lax.stage(x) * lax.stage(2.0), np.ones(3, np.float32), build=LAX)
  check(lambda top: top.grad(lambda x: top.lax.stage(x) * top.lax.stage(2.0)), 1.0,
        build=call_with("top"))
  check_jaxpr(lambda top, x: top.grad(lambda x: top.lax.stage(x) * top.lax.stage(2.0))(x),
              1.0, build=call_with("top"))
  check_vmap(lambda top: lambda x: top.lax.stage(x) * top.lax.stage(2.0), np.ones(3))


# ---- optimization_barrier / dce_sink -----------------------------------------------------------
def test_optimization_barrier_values():
  x = rand((3,), np.float32)
  check(lambda lax, x: lax.optimization_barrier(x), x, build=LAX, jit=True)
  check(lambda lax, x: lax.optimization_barrier((x, x * 2, [3, 2.0])), x, build=LAX, jit=True,
        strict_tree=True)
  check(lambda lax: lax.optimization_barrier([1.0, np.ones(2), 2]), build=LAX)
  check(lambda lax: lax.optimization_barrier(()), build=LAX, jit=True, strict_tree=True)
  check(lambda lax, x: lax.optimization_barrier({"a": x, "b": np.int8(1)}), x, build=LAX,
        jit=True, strict_tree=True)


def test_optimization_barrier_jaxprs_and_transforms():
  x = rand((3,), np.float32)
  check_jaxpr(lambda lax, x: lax.optimization_barrier(x), 1.0, build=LAX)
  check_jaxpr(lambda lax, x: lax.optimization_barrier((x, x * 2)), x, build=LAX)
  check_jaxpr(lambda lax: lax.optimization_barrier([1.0, np.ones(2), 2]), build=LAX)
  grad = lambda top: top.grad(lambda x: top.lax.optimization_barrier((x * 2, 3.0))[0])  # noqa
  check(grad, 1.0, build=call_with("top"))
  check_jaxpr(lambda top, x: grad(top)(x), 1.0, build=call_with("top"))
  check_jvp_vjp(lambda lax, x, y: lax.optimization_barrier((x * y, x))[0] * 2, x,
                rand((3,), np.float32, 1))
  check_grads(lambda x: alax.optimization_barrier(x * x), (x,), order=2)
  check_vmap(lambda top: lambda x, y: top.lax.optimization_barrier((x * 2, y)), x, 1.0,
             in_axes=(0, None))
  check_jaxpr(lambda top, x: top.vmap(lambda x, y: top.lax.optimization_barrier((x * 2, y)),
                                      in_axes=(0, None))(x, 1.0), x, build=call_with("top"))


def test_dce_sink():
  x = np.float32(2)
  check(lambda lax, x: lax.dce_sink((x, x * 2)), x, build=LAX, check_type=False)
  check(lambda lax, x: lax.dce_sink(x), x, build=LAX, jit=True, check_type=False)
  check_jaxpr(lambda lax, x: lax.dce_sink((x, x * 2)), 1.0, build=LAX)
  check_jaxpr(lambda top, x: top.vmap(lambda x: top.lax.dce_sink((x, x * 2)))(x),
              np.ones(2), build=call_with("top"))
  check_jaxpr(lambda top, x: top.grad(lambda x: (top.lax.dce_sink((x, x * 2)), x)[1])(x), 1.0,
              build=call_with("top"))
  check_jaxpr(lambda top, x: top.jvp(lambda x: (top.lax.dce_sink(x * 2), x * 3)[1], (x,),
                                     (x,)), 1.0, build=call_with("top"))
  # The work feeding a sink is kept by dead-code elimination inside jit.
  check_jaxpr(lambda top, x: top.jit(lambda x: (top.lax.dce_sink(x * 2), x)[1])(x), 1.0,
              build=call_with("top"))


# ---- mulhi -------------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.int16, np.uint16, np.int32,
                                   np.uint32])
def test_mulhi_values(dtype):
  info = np.iinfo(dtype)
  edges = np.array([info.min, info.max, 0, 1, info.max // 2, info.min // 2 if info.min else 2,
                    -1 if info.min else 3, 7], dtype)
  x, y = np.meshgrid(edges, edges)
  r = np.random.default_rng(0)
  rx = r.integers(info.min, info.max, 50, endpoint=True).astype(dtype)
  ry = r.integers(info.min, info.max, 50, endpoint=True).astype(dtype)
  check(lambda lax, a, b: lax.mulhi(a, b), x, y, build=LAX, jit=True)
  check(lambda lax, a, b: lax.mulhi(a, b), rx, ry, build=LAX)


def test_mulhi_x64(x64):
  info = np.iinfo(np.int64)
  x = np.array([info.min, info.max, -1, 2 ** 40, 3], np.int64)
  check(lambda lax, a, b: lax.mulhi(a, b), x, x[::-1].copy(), build=LAX, jit=True)
  u = np.array([2 ** 64 - 1, 2 ** 63, 5, 2 ** 33], np.uint64)
  check(lambda lax, a, b: lax.mulhi(a, b), u, u, build=LAX)


def test_mulhi_types_jaxpr_vmap_grad_errors():
  x = np.array([5, -7, 100], np.int32)
  check(lambda lax: lax.mulhi(3, 4), build=LAX)
  check(lambda lax, a: lax.mulhi(a, 2 ** 30), x, build=LAX)
  check(lambda lax, a: lax.mulhi(a, np.int32(-2 ** 31)), np.int32(7), build=LAX)
  check_jaxpr(lambda lax, a, b: lax.mulhi(a, b), np.int32(1), 2, build=LAX)
  check_vmap(lambda top: lambda a, b: top.lax.mulhi(a, b), np.arange(6, dtype=np.int32).reshape(2, 3),
             np.int32(2 ** 30), in_axes=(1, None))
  # (integer operands: float0 tangents; XLA's CPU compiler cannot fuse mulhi with a following
  # conversion, so the derivative is taken eagerly)
  check_jvp_vjp(lambda lax, a: lax.mulhi(a, a), x, eager=True)
  for args in [(np.float32(1), np.float32(2)), (np.int8(1), np.int16(2)),
               (np.ones(3, np.int32), np.ones(2, np.int32)), (True, True)]:
    check_raises(lambda lax, a, b: lax.mulhi(a, b), *args, build=LAX)


# ---- index_take --------------------------------------------------------------------------------
def test_index_take():
  x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
  i, j = np.array([0, 2, -1, 5]), np.array([1, 3, -2, 7])
  cases = [
      ("axis 0", (x, (i,), (0,))),
      ("axes 0 2", (x, (i, j), (0, 2))),
      ("axes 1 2, 2-d indices", (x, (i[:, None] * np.ones((4, 2), int),
                                     j[:, None] * np.ones((4, 2), int)), (1, 2))),
      ("int operand", (x.astype(np.int8), (np.array([1]),), (1,))),
      ("scalar index", (x, (np.array(2),), (0,))),
      ("unsorted axes", (x, (i, j), (2, 0))),
  ]
  check_all([(name, lambda a=args: check(lambda lax, s, idx: lax.index_take(s, idx, a[2]),
                                         a[0], a[1], build=LAX, jit=True))
             for name, args in cases])


def test_index_take_jaxpr_grad_vmap():
  x = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
  i, j = np.array([0, 2, -1, 5]), np.array([1, 3, -2, 7])
  check_jaxpr(lambda lax, x, i: lax.index_take(x, (i,), (0,)), x, i, build=LAX)
  check_jaxpr(lambda lax, x, i, j: lax.index_take(x, (i, j), (0, 1)), x, i, j, build=LAX)
  check_jaxpr(lambda top, x, i: top.grad(lambda x: top.lax.index_take(x, (i,), (1,)).sum())(x),
              x, i, build=call_with("top"))
  check_jvp_vjp(lambda lax, x: lax.index_take(x, (i,), (1,)), x)
  check_vmap(lambda top: lambda x, i: top.lax.index_take(x, (i,), (0,)), x,
             np.stack([i, j]), in_axes=(None, 0))


# ---- tokens ------------------------------------------------------------------------------------
def _token_kind(t):
  return type(t).__name__


def test_tokens():
  for lib in (JAX, ARRAX):
    t = lib.lax.create_token()
    assert _token_kind(t) == "Token"
    assert _token_kind(lib.lax.after_all(t, t)) == "Token"
    assert _token_kind(lib.lax.after_all()) == "Token"
    assert _token_kind(lib.lax.create_token(np.ones(2))) == "Token"
    assert _token_kind(lib.top.jit(lambda: lib.lax.create_token())()) == "Token"
    assert _token_kind(lib.top.jit(lambda t: lib.lax.after_all(t))(t)) == "Token"
    out = lib.top.jit(lambda t, x: (lib.lax.after_all(t, lib.lax.create_token()), x + 1))(t, 1.0)
    assert _token_kind(out[0]) == "Token" and float(out[1]) == 2.0
    t.block_until_ready()
  check(lambda top, x: top.jit(lambda x: (top.lax.create_token(), x))(x)[1],
        np.ones(2, np.float32), build=call_with("top"))


def test_token_jaxprs_and_errors():
  check_jaxpr(lambda lax: lax.after_all(lax.create_token(), lax.create_token()), build=LAX)
  check_jaxpr(lambda lax, x: (lax.create_token(), x * 2), 1.0, build=LAX)
  check_jaxpr(lambda lax: lax.after_all(), build=LAX)
  for lib in (JAX, ARRAX):
    t = lib.lax.create_token()
    a = str(lib.top.make_jaxpr(lambda t: lib.lax.after_all(t))(t))
    assert a == "{ lambda ; a:Tok. let b:Tok = after_all a in (b,) }"
  check_raises(lambda lax: lax.after_all(1.0), build=LAX, match=["must be tokens"])
  check_raises(lambda lax: lax.after_all(lax.create_token(), np.ones(2)), build=LAX)


# ---- with_sharding_constraint ------------------------------------------------------------------
def test_with_sharding_constraint_single_device():
  x = rand((2, 3), np.float32)
  d = arrax.devices()[0]
  assert_same(alax.with_sharding_constraint(x, d), arrax.numpy.asarray(x))
  out = alax.with_sharding_constraint((x, {"a": x * 2}), d)
  assert_same(out[1]["a"], arrax.numpy.asarray(x * 2))
  closed = arrax.make_jaxpr(lambda x: alax.with_sharding_constraint(x, d))(x)
  assert [e.primitive.name for e in closed.jaxpr.eqns] == ["sharding_constraint"]
  assert alax.sharding_constraint_p.name == real_jax.lax.sharding_constraint_p.name
  g = arrax.grad(lambda x: (alax.with_sharding_constraint(x, d) ** 2).sum())(x)
  assert_same(g, arrax.numpy.asarray(2 * x))
  v = arrax.vmap(lambda x: alax.with_sharding_constraint(x, d))(x)
  assert_same(v, arrax.numpy.asarray(x))
  with pytest.raises(ValueError, match="not allowed"):
    alax.with_sharding_constraint(x, None)
  for lax_ in (alax, real_jax.lax):   # a string is not a sharding (JAX's TypeError)
    with pytest.raises(TypeError, match="expected to be PartitionSpec"):
      lax_.with_sharding_constraint(x, "model")


def test_device_put_primitive_is_identity():
  from jaxlib import _jax
  x = arrax.numpy.arange(3.0)
  params = dict(devices=(None,), srcs=(None,),
                copy_semantics=(_jax.ArrayCopySemantics.REUSE_INPUT,))
  (out,) = alax.device_put_p.bind(x, **params)
  assert_same(out, x)
  g = arrax.grad(lambda x: (alax.device_put_p.bind(x, **params)[0] ** 2).sum())(x)
  assert_same(g, 2 * x)
  v = arrax.vmap(lambda x: alax.device_put_p.bind(x, **params)[0])(x)
  assert_same(v, x)
  assert alax.device_put_p.name == real_jax.lax.device_put_p.name


# ---- types and signatures ----------------------------------------------------------------------
NEW_NAMES = [
    "AccuracyMode", "DotAlgorithm", "DotAlgorithmPreset", "DotDimensionNumbers",
    "PrecisionLike", "RaggedDotDimensionNumbers", "RandomAlgorithm", "Tolerance", "after_all",
    "after_all_p", "approx_max_k", "approx_min_k", "approx_top_k_p", "bessel_i0e",
    "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p", "betainc", "broadcast_like",
    "broadcast_shapes", "composite", "create_token", "create_token_p", "custom_linear_solve",
    "custom_root", "dce_sink", "dce_sink_p", "device_put_p", "dtype", "empty", "full",
    "full_like", "index_take", "linear_solve_p", "mulhi", "mulhi_p", "optimization_barrier",
    "optimization_barrier_p", "pbroadcast", "platform_dependent", "ragged_dot",
    "ragged_dot_general", "regularized_incomplete_beta_p", "rng_bit_generator",
    "rng_bit_generator_p", "rng_uniform", "rng_uniform_p", "scaled_dot", "shape_as_value",
    "sharding_constraint_p", "stage", "stage_p", "with_sharding_constraint", "zeta", "zeta_p",
]


def _params(fn):
  return [(p.name, p.kind, p.default) for p in inspect.signature(fn).parameters.values()]


@pytest.mark.parametrize("name", NEW_NAMES)
def test_names_and_signatures(name):
  ours, theirs = getattr(alax, name), getattr(real_jax.lax, name)
  if hasattr(theirs, "bind"):   # primitives: the same name
    assert ours.name == theirs.name and ours.multiple_results == theirs.multiple_results
  elif inspect.isfunction(theirs) or inspect.isfunction(getattr(theirs, "__wrapped__", None)):
    assert _params(ours) == _params(theirs)


def test_enums_and_type_names():
  for name in ["AccuracyMode", "DotAlgorithmPreset", "RandomAlgorithm"]:
    ours, theirs = getattr(alax, name), getattr(real_jax.lax, name)
    assert [(m.name, m.value) for m in ours] == [(m.name, m.value) for m in theirs]
    for m, n in zip(ours, theirs):
      assert str(m) == str(n)
  assert repr(alax.DotAlgorithmPreset.F16_F16_F32) == repr(jlax.DotAlgorithmPreset.F16_F16_F32)
  assert isinstance(alax.RandomAlgorithm.RNG_PHILOX, int)
  assert alax.DotAlgorithm._fields == jlax.DotAlgorithm._fields
  assert alax.DotAlgorithm._field_defaults == jlax.DotAlgorithm._field_defaults
  algo = (np.float16, np.float16, np.float32)
  assert repr(alax.DotAlgorithm(*algo)) == repr(jlax.DotAlgorithm(*algo))
  t = alax.Tolerance(atol=1e-3, ulps=2)
  assert (t.atol, t.rtol, t.ulps) == (1e-3, 0.0, 2)
  for kw in [dict(), dict(atol=-1.0), dict(rtol=-1e-3)]:
    with pytest.raises(ValueError):
      jlax.Tolerance(**kw)
    with pytest.raises(ValueError):
      alax.Tolerance(**kw)
  assert str(alax.DotDimensionNumbers) == str(jlax.DotDimensionNumbers)
  ours = [getattr(a, "__name__", str(a)) for a in typing.get_args(alax.PrecisionLike)]
  theirs = [getattr(a, "__name__", str(a)) for a in typing.get_args(jlax.PrecisionLike)]
  assert [o.split(".")[-1] for o in ours] == [t.split(".")[-1] for t in theirs]


def _norm(types):
  return None if types is None else tuple(np.dtype(t) for t in types)


@pytest.mark.parametrize("preset", [p.name for p in jlax.DotAlgorithmPreset])
def test_dot_algorithm_presets(preset):
  from arrax._src import mlir as amlir
  from jax._src.interpreters import mlir as jmlir
  ours, theirs = alax.DotAlgorithmPreset[preset], jlax.DotAlgorithmPreset[preset]
  assert _norm(ours.supported_lhs_types) == _norm(theirs.supported_lhs_types)
  assert _norm(ours.supported_rhs_types) == _norm(theirs.supported_rhs_types)
  acc = ours.accumulation_type
  assert (acc is None) == (theirs.accumulation_type is None)
  assert acc is None or np.dtype(acc) == np.dtype(theirs.accumulation_type)
  for lhs, rhs in [(np.float16, np.float16), (np.float32, np.float16), (BF16, BF16),
                   (np.float32, np.float32)]:
    assert _norm(ours.supported_output_types(lhs, rhs)) == \
        _norm(theirs.supported_output_types(lhs, rhs))
  for lhs, rhs in [(np.float32, np.float32),
                   (np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2))]:
    def attr(preset, ctx):
      try:
        with ctx():
          return str(preset._convert_to_hlo_attr(lhs, rhs))
      except ValueError as e:
        return type(e).__name__
    assert attr(ours, amlir.make_ir_context) == attr(theirs, jmlir.make_ir_context)
