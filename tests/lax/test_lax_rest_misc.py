"""lax.rng_bit_generator, rng_uniform, approx_max_k/approx_min_k, ragged_dot(_general),
composite, platform_dependent, scaled_dot and pbroadcast against JAX 0.10.2: values (bits for
the generators), dtypes and shapes, jit, vmap, derivatives where JAX has them, printed jaxprs
and errors.
"""
from functools import partial

import jax as real_jax
import ml_dtypes
import numpy as np
import pytest

import arrax
from arrax import lax as alax
from arrax.test_util import check_grads
from oracle import (BF16, assert_same, call_with, check, check_all, check_jaxpr,
                    check_jvp_vjp, check_raises, check_vmap, rand)

LAX = call_with("lax")
TOP = call_with("top")


# ---- rng_bit_generator / rng_uniform ---------------------------------------------------------
KEY = np.array([0, 1, 2, 3], np.uint32)


@pytest.mark.parametrize("algorithm", ["RNG_DEFAULT", "RNG_THREE_FRY", "RNG_PHILOX"])
@pytest.mark.parametrize("dtype", [np.uint8, np.uint16, np.uint32])
def test_rng_bit_generator_bits(algorithm, dtype):
  def fn(lax, k):
    return lax.rng_bit_generator(k, (2, 3), dtype, getattr(lax.RandomAlgorithm, algorithm))
  check(fn, KEY, build=LAX, jit=True, strict_tree=True)
  check(lambda lax, k: lax.rng_bit_generator(k, (), dtype), KEY, build=LAX, strict_tree=True)
  check(lambda lax, k: lax.rng_bit_generator(k, [4, 0]), KEY, build=LAX)


def test_rng_bit_generator_x64_and_keys(x64):
  check(lambda lax, k: lax.rng_bit_generator(k, (5,), np.uint64), KEY, build=LAX, jit=True)
  check(lambda lax, k: lax.rng_bit_generator(k, (3,)), np.array([7, 9], np.uint64), build=LAX)


def test_rng_bit_generator_jaxprs_vmap_and_errors():
  check_jaxpr(lambda lax, k: lax.rng_bit_generator(k, (3,)), KEY, build=LAX)
  check_jaxpr(lambda lax, k: lax.rng_bit_generator(k, (3,), np.uint8,
                                                   lax.RandomAlgorithm.RNG_PHILOX), KEY,
              build=LAX)
  keys = np.arange(8, dtype=np.uint32).reshape(2, 4)
  check_vmap(lambda top: lambda k: top.lax.rng_bit_generator(k, (3,)), keys)
  check_vmap(lambda top: lambda k: top.lax.rng_bit_generator(k, (3,)), keys.T, in_axes=1)
  check_jaxpr(lambda top, k: top.vmap(lambda k: top.lax.rng_bit_generator(k, (3,)))(k), keys,
              build=TOP)
  for dtype in (np.int32, np.float32):
    check_raises(lambda lax, k: lax.rng_bit_generator(k, (2,), dtype), KEY, build=LAX,
                 match=["unsupported dtype"])
  check_raises(lambda lax, k: lax.rng_bit_generator(k, (2.5,)), KEY, build=LAX)


@pytest.mark.xfail(strict=True, reason="JAX fails an internal assertion on a key that is not "
                                       "uint32[4]/uint64[2]; arrax raises a TypeError")
def test_rng_bit_generator_bad_key():
  check_raises(lambda lax, k: lax.rng_bit_generator(k, (2,)), KEY[:3], build=LAX)


def test_rng_uniform():
  for lib in (real_jax, arrax):
    x = np.asarray(lib.lax.rng_uniform(np.float32(-1), np.float32(2), (1000,)))
    assert x.dtype == np.float32 and x.shape == (1000,)
    assert (x >= -1).all() and (x < 2).all() and x.std() > 0.5
    i = np.asarray(lib.jit(lambda: lib.lax.rng_uniform(0, 10, [3, 4]))())
    assert i.dtype == np.int32 and i.shape == (3, 4) and (i >= 0).all() and (i < 10).all()
  check_jaxpr(lambda lax: lax.rng_uniform(0, 10, (3,)), build=LAX)
  check_jaxpr(lambda lax, a: lax.rng_uniform(a, 2., (3,)), 1.0, build=LAX)
  for args in [(0., 1, (2,)), (np.zeros(2, np.float32), 1., (2,))]:
    check_raises(lambda lax: lax.rng_uniform(*args), build=LAX)
  check_raises(lambda top, a: top.grad(lambda a: top.lax.rng_uniform(a, 2., (3,)).sum())(a),
               1.0, build=TOP, match=["Differentiation rule for 'rng_uniform'"])
  check_raises(lambda top, a: top.vmap(lambda a: top.lax.rng_uniform(a, 2., (3,)))(a),
               np.ones(2, np.float32), build=TOP, match=["Batching rule for 'rng_uniform'"])


# ---- approx_max_k / approx_min_k --------------------------------------------------------------
@pytest.mark.parametrize("name", ["approx_max_k", "approx_min_k"])
@pytest.mark.parametrize("dtype", [np.float32, np.float16, BF16])
def test_approx_top_k_values(name, dtype):
  r = np.random.default_rng(0)
  x = r.permutation(np.arange(48)).reshape(4, 12).astype(dtype)   # distinct values
  xn = r.standard_normal((3, 7)).astype(dtype)
  xn[0, 1], xn[1, 2], xn[2, 3] = np.nan, np.inf, -np.inf
  cases = []
  for args, kw in [((x, 3), {}), ((x, 2), dict(reduction_dimension=0)),
                   ((x, 12), {}), ((x, 1), dict(recall_target=0.5)),
                   ((xn, 3), {}), ((x[0], 5), {}),
                   ((np.zeros((2, 0, 3), dtype), 1), dict(reduction_dimension=2))]:
    cases.append((f"{args[0].shape} {kw}", lambda args=args, kw=kw: check(
        lambda lax, v: getattr(lax, name)(v, *args[1:], **kw), args[0], build=LAX, jit=True,
        strict_tree=True)))
  check_all(cases)


def test_approx_top_k_unaggregated_sizes():
  y = np.random.default_rng(1).standard_normal((2, 3000)).astype(np.float32)
  for lib in (real_jax, arrax):
    v, i = lib.lax.approx_max_k(y, 5, aggregate_to_topk=False)
    assert v.shape == i.shape == (2, 256), v.shape
  check(lambda lax, v: lax.approx_max_k(v, 2, aggregate_to_topk=False), y[:, :5], build=LAX,
        jit=True)


def test_approx_top_k_errors():
  x = rand((3, 7), np.float32)
  for args in [(x, 0), (x, 8), (x.astype(np.int32), 2), (np.float32(1), 1)]:
    check_raises(lambda lax: lax.approx_max_k(*args), build=LAX)


def test_approx_top_k_derivatives_vmap_jaxprs():
  r = np.random.default_rng(2)
  x = r.permutation(np.arange(35)).reshape(5, 7).astype(np.float32)
  check_jvp_vjp(lambda lax, x: lax.approx_max_k(x, 3)[0], x)
  check_jvp_vjp(lambda lax, x: lax.approx_min_k(x, 2, reduction_dimension=0)[0], x)
  check_grads(lambda x: alax.approx_max_k(x, 3)[0], (x / 10,), order=1, eps=1e-2)
  for shape, dim in [((5,), -1), ((4, 3, 5), 1), ((4, 3, 5), 0)]:
    z = r.permutation(np.arange(np.prod(shape))).reshape(shape).astype(np.float32)
    check_jaxpr(lambda top, x, t: top.jvp(
        lambda x: top.lax.approx_min_k(x, 2, reduction_dimension=dim)[0], (x,), (t,)), z, z,
        build=TOP)
  check_jaxpr(lambda lax, x: lax.approx_max_k(x, 2), x, build=LAX)
  check_jaxpr(lambda lax, x: lax.approx_min_k(x, 2, recall_target=0.9, reduction_dimension=0),
              x, build=LAX)
  check_jaxpr(lambda top, x: top.grad(lambda x: top.lax.approx_max_k(x, 2)[0].sum())(x), x,
              build=TOP)
  x3 = r.permutation(np.arange(60)).reshape(4, 3, 5).astype(np.float32)
  check_vmap(lambda top: lambda x: top.lax.approx_max_k(x, 2), x3)
  check_vmap(lambda top: lambda x: top.lax.approx_max_k(x, 2, reduction_dimension=0), x3,
             in_axes=1)
  check_jaxpr(lambda top, x: top.vmap(lambda x: top.lax.approx_max_k(x, 2))(x), x3, build=TOP)


# ---- ragged_dot -------------------------------------------------------------------------------
def _ragged_operands(seed=0, m=6, k=3, n=4, g=3):
  r = np.random.default_rng(seed)
  return (r.standard_normal((m, k)).astype(np.float32),
          r.standard_normal((g, k, n)).astype(np.float32))


GS = np.array([2, 1, 3], np.int32)


def _dnums(lax, dots, ragged, group):
  return lax.RaggedDotDimensionNumbers(dot_dimension_numbers=dots, lhs_ragged_dimensions=ragged,
                                       rhs_group_dimensions=group)


@pytest.mark.parametrize("gs", [[2, 1, 3], [0, 6, 0], [6, 0, 0], [1, 1, 1], [3, 3, 5]], ids=str)
def test_ragged_dot_values(gs):
  x, y = _ragged_operands()
  gs = np.array(gs, np.int32)
  check(lambda lax, x, y, gs: lax.ragged_dot(x, y, gs), x, y, gs, build=LAX, jit=True)


def test_ragged_dot_dtypes_and_options():
  x, y = _ragged_operands(1)
  cases = [
      ("f16 -> f32", lambda: check(
          lambda lax, x, y: lax.ragged_dot(x, y, GS, preferred_element_type=np.float32),
          x.astype(np.float16), y.astype(np.float16), build=LAX)),
      ("bf16", lambda: check(lambda lax, x, y: lax.ragged_dot(x, y, GS), x.astype(BF16),
                             y.astype(BF16), build=LAX)),
      ("int8", lambda: check(lambda lax, x, y: lax.ragged_dot(x, y, GS),
                             (x * 3).astype(np.int8), (y * 3).astype(np.int8), build=LAX)),
      ("precision", lambda: check(
          lambda lax, x, y: lax.ragged_dot(x, y, GS, precision=lax.Precision.HIGHEST), x, y,
          build=LAX)),
      ("uint8 sizes", lambda: check(lambda lax, x, y: lax.ragged_dot(x, y, GS.astype(np.uint8)),
                                    x, y, build=LAX)),
  ]
  check_all(cases)


def test_ragged_dot_general_modes():
  r = np.random.default_rng(3)
  x2, y2 = r.standard_normal((4, 6)).astype(np.float32), r.standard_normal((6, 5)).astype(
      np.float32)
  x3, y3 = r.standard_normal((6, 2, 3)).astype(np.float32), r.standard_normal((6, 3, 5)).astype(
      np.float32)
  xb, yb = r.standard_normal((2, 6, 3)).astype(np.float32), r.standard_normal((2, 3, 3, 4)).astype(
      np.float32)
  gsb = np.array([[2, 1, 3], [0, 4, 2]], np.int32)
  cases = [
      ("contracting", x2, y2, GS, ((([1], [0]), ([], [])), [1], [])),
      ("batch", x3, y3, GS, ((([2], [1]), ([0], [0])), [0], [])),
      ("noncontracting batched sizes", xb, yb, gsb, ((([2], [2]), ([0], [0])), [1], [1])),
      ("contracting batched", r.standard_normal((2, 4, 6)).astype(np.float32),
       r.standard_normal((2, 6, 5)).astype(np.float32), gsb,
       ((([2], [1]), ([0], [0])), [2], [])),
  ]
  check_all([(name, lambda x=x, y=y, gs=gs, d=d: check(
      lambda lax, x, y, gs: lax.ragged_dot_general(x, y, gs, _dnums(lax, *d)), x, y, gs,
      build=LAX, jit=True, tol=1e-5)) for name, x, y, gs, d in cases])


def test_ragged_dot_errors():
  x, y = _ragged_operands()
  bad = [
      dict(dots=(([1], [1]), ([], [])), ragged=[0, 1], group=[0]),
      dict(dots=(([1], [1]), ([], [])), ragged=[0], group=[]),
      dict(dots=(([1], [1]), ([], [])), ragged=[5], group=[0]),
      dict(dots=(([1], [1]), ([], [])), ragged=[0], group=[1]),
  ]
  for d in bad:
    check_raises(lambda lax, x, y: lax.ragged_dot_general(
        x, y, GS, _dnums(lax, d["dots"], d["ragged"], d["group"])), x, y, build=LAX)
  check_raises(lambda lax, x, y: lax.ragged_dot(x, y, GS.astype(np.float32)), x, y, build=LAX,
               match=["group_sizes.dtype"])
  check_raises(lambda lax, x, y: lax.ragged_dot(x, y, GS[:2]), x, y, build=LAX)
  check_raises(lambda lax, x, y: lax.ragged_dot(x, y, np.int32(3)), x, y, build=LAX)
  check_raises(lambda lax, x, y: lax.ragged_dot(x, y[:, :2], GS), x, y, build=LAX)


def test_ragged_dot_derivatives_and_jaxprs():
  x, y = _ragged_operands(4)
  check_jvp_vjp(lambda lax, x, y: lax.ragged_dot(x, y, GS), x, y)
  # (first order: the transposed product is a contracting-mode ragged dot, which has no
  # transpose in JAX either)
  check_grads(lambda x, y: alax.ragged_dot(x, y, GS), (x, y), order=1, atol=2e-2, rtol=2e-2)
  check_jaxpr(lambda lax, x, y, gs: lax.ragged_dot(x, y, gs), x, y, GS, build=LAX)
  check_jaxpr(lambda lax, x, y: lax.ragged_dot(x, y, GS, precision="highest"), x, y, build=LAX)
  check_jaxpr(lambda top, x, y: top.grad(lambda x, y: top.lax.ragged_dot(x, y, GS).sum(),
                                         (0, 1))(x, y), x, y, build=TOP)
  r = np.random.default_rng(5)
  x2, y2 = r.standard_normal((4, 6)).astype(np.float32), r.standard_normal((6, 5)).astype(
      np.float32)
  d = ((([1], [0]), ([], [])), [1], [])
  check_jaxpr(lambda lax, x, y: lax.ragged_dot_general(x, y, GS, _dnums(lax, *d)), x2, y2,
              build=LAX)
  check(lambda top, x, y, t: top.jvp(
      lambda a, b: top.lax.ragged_dot_general(a, b, GS, _dnums(top.lax, *d)), (x, y), (t, y)),
      x2, y2, x2, build=TOP, tol=1e-5)
  # Reverse mode exists for the non-contracting mode only (as in JAX).
  check_raises(lambda top, x, y: top.grad(lambda x: top.lax.ragged_dot_general(
      x, y, GS, _dnums(top.lax, *d)).sum())(x), x2, y2, build=TOP, match=["Unimplemented"])


def test_ragged_dot_vmap():
  x, y = _ragged_operands(6)
  gs = np.stack([GS, GS[::-1]])
  check_vmap(lambda top: top.lax.ragged_dot, np.stack([x, x]), np.stack([y, 2 * y]), gs)
  check_jaxpr(lambda top, x, y, g: top.vmap(top.lax.ragged_dot)(x, y, g), np.stack([x, x]),
              np.stack([y, y]), gs, build=TOP)
  check_raises(lambda top, x, y: top.vmap(lambda x: top.lax.ragged_dot(x, y, GS))(x),
               np.stack([x, x]), y, build=TOP, match=["NYI"])


def test_ragged_dot_dimension_numbers():
  d = alax.RaggedDotDimensionNumbers(dot_dimension_numbers=(([1], [0]), ([], [])),
                                     lhs_ragged_dimensions=[1], rhs_group_dimensions=[])
  j = real_jax.lax.RaggedDotDimensionNumbers(dot_dimension_numbers=(([1], [0]), ([], [])),
                                             lhs_ragged_dimensions=[1], rhs_group_dimensions=[])
  assert repr(d) == repr(j)
  same = alax.RaggedDotDimensionNumbers((((1,), (0,)), ((), ())), (1,), ())
  assert d == same and hash(d) == hash(same)
  with pytest.raises(Exception):
    d.lhs_ragged_dimensions = (0,)


# ---- composite --------------------------------------------------------------------------------
def _tangent(lax, x):
  return lax.composite(lambda x: lax.sin(x) / lax.cos(x), name="my.tangent")(x)


def test_composite():
  x = np.array([0.0, 0.5, 1.0], np.float32)
  check(_tangent, x, build=LAX, jit=True)
  check_jaxpr(_tangent, x, build=LAX)

  def scaled(lax, x):
    @partial(lax.composite, name="my.scale", version=2)
    def scale(x, y, *, factor, unused=None):
      return x * factor + y, np.float32(3) * x
    return scale(x, 1.0, factor=2.0)
  check(scaled, x, build=LAX, jit=True)
  check_jaxpr(scaled, x, build=LAX)
  c = np.ones(3, np.float32)
  check_jaxpr(lambda lax, x: lax.composite(lambda x: x + c, name="my.addc")(x), x, build=LAX)
  check(lambda lax, x: lax.composite(lambda x: x + c, name="my.addc")(x), x, build=LAX)
  arr = lambda lax, x: lax.composite(lambda x, *, a: x + a, name="my.arr")(  # noqa: E731
      x, a=np.ones(3, np.float32))
  check(arr, x, build=LAX)
  check_jaxpr(arr, x, build=LAX)
  attrs = lambda lax, x: lax.composite(  # noqa: E731
      lambda x, *, n, s, flag, v: x * n, name="my.attrs")(x, n=3, s="hello", flag=True, v=(1, 2.5))
  check(attrs, x, build=LAX)
  check_jaxpr(attrs, x, build=LAX)


def test_composite_errors():
  x = np.array([0.0, 0.5, 1.0], np.float32)
  check_raises(lambda top, x: top.grad(lambda x: _tangent(top.lax, x).sum())(x), x, build=TOP,
               match=["JVP rule for composite not implemented"])
  check_raises(lambda top, x: top.jvp(partial(_tangent, top.lax), (x,), (x,)), x, build=TOP)
  check_raises(lambda top, x: top.vmap(partial(_tangent, top.lax))(x), np.ones((2, 3)),
               build=TOP, match=["Batching rule for 'composite' not implemented"])
  check_raises(lambda top, x, y: top.jit(lambda x, y: top.lax.composite(
      lambda x, *, a: x * a, name="my.bad")(x, a=y))(x, y), x, 1.0, build=TOP,
      match=["as an attribute"])
  check_raises(lambda top, x: top.jit(lambda x: top.lax.composite(
      lambda y: y + x, name="my.closes")(x))(x), x, build=TOP, match=["as a constant"])


# ---- platform_dependent -----------------------------------------------------------------------
def _per_platform(lax, x, which):
  branches = {
      "cpu": dict(cpu=lambda x: x * 2, default=lambda x: x + 1),
      "default": dict(tpu=lambda x: x * 2, cuda=lambda x: x - 1, default=lambda x: x + 1),
      "none": dict(tpu=lambda x: x * 2, cuda=lambda x: x - 1),
  }[which]
  return lax.platform_dependent(x, **branches)


@pytest.mark.parametrize("which", ["cpu", "default"])
def test_platform_dependent(which):
  x = np.arange(3, dtype=np.float32)
  f = lambda lax, x: _per_platform(lax, x, which)  # noqa: E731
  check(f, x, build=LAX, jit=True)
  check_jaxpr(f, x, build=LAX)
  check(lambda top, x: top.grad(lambda x: _per_platform(top.lax, x, which).sum())(x), x,
        build=TOP)
  check_jaxpr(lambda top, x: top.grad(lambda x: _per_platform(top.lax, x, which).sum())(x), x,
              build=TOP)
  check_vmap(lambda top: partial(_per_platform, top.lax, which=which), np.ones((2, 3)))
  check_jaxpr(lambda top, x: top.vmap(partial(_per_platform, top.lax, which=which))(x),
              np.ones((2, 3), np.float32), build=TOP)


def test_platform_dependent_shared_branch_and_errors():
  x = np.arange(3, dtype=np.float32)
  k = lambda x: x * 3  # noqa: E731
  check_jaxpr(lambda lax, x: lax.platform_dependent(x, cpu=k, tpu=k, default=lambda x: x), x,
              build=LAX)
  check(lambda lax, x: lax.platform_dependent(x, x, cpu=lambda a, b: (a, b * 2)), x,
        build=LAX, jit=True)
  check_raises(lambda lax, x: _per_platform(lax, x, "none"), x, build=LAX)
  check_raises(lambda lax, x: _per_platform(lax, x, "none"), x, build=LAX, jit=True)
  check_raises(lambda lax, x: lax.platform_dependent(x, gpu=lambda x: x), x, build=LAX,
               match=["'cuda' or 'rocm'"])
  check_raises(lambda lax, x: lax.platform_dependent(x, cpu=3), x, build=LAX,
               match=["must be a callable"])
  check_raises(lambda lax, x: lax.platform_dependent(x, cpu=k, default=3), x, build=LAX)


# ---- scaled_dot -------------------------------------------------------------------------------
E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)


def _scales(seed=0):
  r = np.random.default_rng(seed)
  lhs = r.standard_normal((4, 8)).astype(np.float32)
  rhs = r.standard_normal((8, 3)).astype(np.float32)
  ls = (2.0 ** r.integers(-2, 3, (4, 2))).astype(E8M0)
  rs = (2.0 ** r.integers(-2, 3, (2, 3))).astype(E8M0)
  return lhs, rhs, ls, rs


def test_scaled_dot_values():
  lhs, rhs, ls, rs = _scales()
  check(lambda lax, a, b: lax.scaled_dot(a, b, lhs_scale=ls, rhs_scale=rs), lhs, rhs,
        build=LAX, jit=True)
  check(lambda lax, a, b: lax.scaled_dot(a, b, lhs_scale=ls, rhs_scale=rs,
                                         preferred_element_type=np.float32), lhs, rhs,
        build=LAX, tol=1e-5)
  check(lambda lax, a, b: lax.scaled_dot(a, b), lhs, rhs, build=LAX)
  check(lambda lax, a, b: lax.scaled_dot(a, b, lhs_scale=ls[:, :1]), lhs, rhs, build=LAX)
  r = np.random.default_rng(1)
  a3 = r.standard_normal((2, 4, 6)).astype(np.float32)
  b3 = r.standard_normal((2, 6, 5)).astype(np.float32)
  check(lambda lax, a, b: lax.scaled_dot(a, b), a3, b3, build=LAX)
  f8 = np.dtype(ml_dtypes.float8_e4m3fn)
  check(lambda lax, a, b: lax.scaled_dot(a, b, lhs_scale=ls, rhs_scale=rs), lhs.astype(f8),
        rhs.astype(f8), build=LAX)


def test_scaled_dot_jaxprs_vmap_errors():
  lhs, rhs, ls, rs = _scales(2)
  check_jaxpr(lambda lax, a, b: lax.scaled_dot(a, b, lhs_scale=ls, rhs_scale=rs), lhs, rhs,
              build=LAX)
  check_jaxpr(lambda lax, a, b: lax.scaled_dot(a, b), lhs, rhs, build=LAX)
  check_vmap(lambda top: lambda a, b: top.lax.scaled_dot(a, b, lhs_scale=ls, rhs_scale=rs),
             np.stack([lhs, 2 * lhs]), rhs, in_axes=(0, None))
  check_jaxpr(lambda top, a, b: top.vmap(lambda a, b: top.lax.scaled_dot(
      a, b, lhs_scale=ls, rhs_scale=rs), in_axes=(0, None))(a, b), np.stack([lhs, lhs]), rhs,
      build=TOP)
  check_raises(lambda lax, a, b: lax.scaled_dot(a, b, lhs_scale=ls[:3]), lhs, rhs, build=LAX,
               match=["does not match scale dim size"])
  check_raises(lambda lax, a, b: lax.scaled_dot(a, b, lhs_scale=np.ones((4, 8), E8M0)), lhs,
               rhs, build=LAX, match=["must be at least 2"])
  check_raises(lambda lax, a, b: lax.scaled_dot(a[0], b[:, 0]), lhs, rhs, build=LAX)
  check_raises(lambda lax, a, b: lax.scaled_dot(a, b[:4]), lhs, rhs, build=LAX)
  check_raises(lambda top, a: top.grad(lambda a: top.lax.scaled_dot(a, rhs).astype(
      np.float32).sum())(a), lhs, build=TOP, match=["Differentiation rule for 'scaled_dot'"])


# ---- pbroadcast -------------------------------------------------------------------------------
def test_pbroadcast_under_vmap():
  # (JAX's batching rule fails on traced operands and returns NumPy values for NumPy ones;
  # arrax is compared with the definition: every example gets example `source`)
  x = np.arange(6.).reshape(3, 2).astype(np.float32)
  for lib in (real_jax, arrax):
    out = lib.vmap(lambda x: lib.lax.pbroadcast(x, "i", 1), axis_name="i")(x)
    np.testing.assert_array_equal(np.asarray(out), np.broadcast_to(x[1], (3, 2)))
  out = arrax.vmap(lambda x: alax.pbroadcast((x, x * 2), "i", 2), axis_name="i")(x)
  assert_same(out[1], arrax.numpy.asarray(np.broadcast_to(x[2] * 2, (3, 2))))
  inner = arrax.vmap(arrax.vmap(lambda x: alax.pbroadcast(x, "i", 0), axis_name="j"),
                     axis_name="i")(x)
  assert_same(inner, arrax.numpy.asarray(np.broadcast_to(x[0], (3, 2))))
  g = arrax.vmap(arrax.grad(lambda x: alax.pbroadcast(x, "i", 1).sum()), axis_name="i")(x)
  assert_same(g, arrax.numpy.asarray(np.array([[0, 0], [3, 3], [0, 0]], np.float32)))
  jitted = arrax.jit(arrax.vmap(lambda x: alax.pbroadcast(x, "i", 0), axis_name="i"))(x)
  assert_same(jitted, arrax.numpy.asarray(np.broadcast_to(x[0], (3, 2))))
  with pytest.raises(NotImplementedError):
    alax.pbroadcast(x, "i", 0)
