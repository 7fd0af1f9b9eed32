"""lax.bessel_i0e, bessel_i1e, zeta and betainc (regularized_incomplete_beta) against JAX
0.10.2: values over grids with the domain edges (zeros, infinities, NaNs, negative operands),
float16/bfloat16/float32 and float64 (x64); weak types and type errors; jit and vmap; JVP/VJP
against JAX, check_grads by finite differences, the derivatives JAX does not define, and
printed jaxprs.
"""
import jax as real_jax
import numpy as np
import pytest

import arrax
from arrax import lax as alax
from arrax.test_util import check_grads
from oracle import (BF16, assert_same, call_with, check, check_jaxpr, check_jvp_vjp,
                    check_raises, check_vmap, rand)

LAX = call_with("lax")
FLOATS = [np.float16, BF16, np.float32]

_X = np.concatenate([np.linspace(-30, 30, 41), [0., 1e-8, -1e-8, 1e-3, 7.99, 8.0, 8.01, -8.0,
                                                100., -250., 1e4, np.inf, -np.inf, np.nan]])


def _tol(dtype):
  return {np.dtype(np.float16): 2e-3, BF16: 1e-2, np.dtype(np.float32): 2e-6,
          np.dtype(np.float64): 1e-14}[np.dtype(dtype)]


# ---- Bessel functions -----------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bessel_i0e", "bessel_i1e"])
@pytest.mark.parametrize("dtype", FLOATS)
def test_bessel_values(name, dtype):
  x = _X.astype(dtype)
  check(lambda lax, x: getattr(lax, name)(x), x, build=LAX, jit=True, tol=_tol(dtype))


@pytest.mark.parametrize("name", ["bessel_i0e", "bessel_i1e"])
def test_bessel_values_x64(name, x64):
  check(lambda lax, x: getattr(lax, name)(x), _X, build=LAX, jit=True, tol=1e-14)


@pytest.mark.parametrize("name", ["bessel_i0e", "bessel_i1e"])
def test_bessel_types_and_errors(name):
  check(lambda lax: getattr(lax, name)(2.0), build=LAX)            # weakly typed
  check(lambda lax: getattr(lax, name)(np.float32(-3)), build=LAX)
  check(lambda lax, x: getattr(lax, name)(x), np.zeros((0, 2), np.float32), build=LAX)
  check(lambda lax, x: getattr(lax, name)(x), rand((2, 3, 4), np.float32), build=LAX)
  for bad in [np.int32(1), np.ones(2, np.complex64), True]:
    check_raises(lambda lax, x: getattr(lax, name)(x), bad, build=LAX)


@pytest.mark.parametrize("name", ["bessel_i0e", "bessel_i1e"])
def test_bessel_derivatives(name):
  x = np.array([-5., -1., -1e-9, 0., 1e-9, 0.3, 2., 9., 40.], np.float32)
  check_jvp_vjp(lambda lax, x: getattr(lax, name)(x), x)
  f = lambda x: getattr(alax, name)(x)  # noqa: E731
  check_grads(f, (np.array([-3.0, -0.4, 0.7, 2.5, 11.0], np.float32),), order=2,
              modes=["fwd", "rev"], atol=2e-2, rtol=2e-2)
  check_jaxpr(lambda top, x: top.grad(getattr(top.lax, name))(x), 1.0, build=call_with("top"))
  check_jaxpr(lambda top, x: top.grad(lambda x: getattr(top.lax, name)(x).sum())(x),
              np.array([0.0, 2.0], np.float32), build=call_with("top"))
  check(lambda top, x: top.vmap(top.grad(getattr(top.lax, name)))(x), x,
        build=call_with("top"))


def test_bessel_x64_derivatives(x64):
  x = np.array([-4., -1e-20, 0., 0.5, 3., 12.])
  check_jvp_vjp(lambda lax, x: lax.bessel_i1e(x), x)
  check_jvp_vjp(lambda lax, x: lax.bessel_i0e(x), x)


@pytest.mark.parametrize("name", ["bessel_i0e", "bessel_i1e"])
def test_bessel_jaxprs_and_vmap(name):
  x = rand((3, 4), np.float32)
  check_jaxpr(lambda lax, x: getattr(lax, name)(x), x, build=LAX)
  check_vmap(lambda top: getattr(top.lax, name), x, in_axes=1)
  check_vmap(lambda top: getattr(top.lax, name), x, jit=True)


# ---- zeta -----------------------------------------------------------------------------------
def _zeta_grid(dtype):
  xs = np.array([1.5, 2., 3., 10., 1.0, 0.5, -1.0, 4.5, 30., np.inf, np.nan, 2.])
  qs = np.array([1., 0.5, 2., 1., 1., 1., 2., 0.1, 3., 1., 1., -1.5])
  x, q = np.meshgrid(xs, qs[:6])
  return (np.concatenate([xs, x.ravel()]).astype(dtype),
          np.concatenate([qs, q.ravel()]).astype(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_zeta_values(dtype):
  x, q = _zeta_grid(dtype)
  check(lambda lax, x, q: lax.zeta(x, q), x, q, build=LAX, jit=True, tol=_tol(dtype) * 5)


def test_zeta_values_x64(x64):
  x, q = _zeta_grid(np.float64)
  check(lambda lax, x, q: lax.zeta(x, q), x, q, build=LAX, jit=True, tol=1e-13)


def test_zeta_types_broadcasting_vmap_jaxpr_errors():
  x = np.array([2., 3., 4.], np.float32)
  check(lambda lax, x: lax.zeta(x, 1.0), x, build=LAX)
  check(lambda lax: lax.zeta(2.0, 1.5), build=LAX)
  check(lambda lax, x: lax.zeta(x[:, None], x[None, :] * np.ones((3, 3), np.float32)), x,
        build=LAX)
  check_jaxpr(lambda lax, x, q: lax.zeta(x, q), x, x, build=LAX)
  check_vmap(lambda top: top.lax.zeta, x, np.float32(2.0), in_axes=(0, None))
  for args in [(np.int32(2), np.int32(1)), (np.float32(2), np.float16(1)),
               (np.ones(2, np.float32), np.ones(3, np.float32))]:
    check_raises(lambda lax, a, b: lax.zeta(a, b), *args, build=LAX)
  # JAX defines no derivative of zeta.
  check_raises(lambda top, x: top.grad(lambda x: top.lax.zeta(x, 2.0))(x), 3.0,
               build=call_with("top"), match=["Differentiation rule for 'zeta'"])


# ---- betainc ----------------------------------------------------------------------------------
def _beta_grid(dtype, n=300, seed=0):
  r = np.random.default_rng(seed)
  a = np.concatenate([r.uniform(0, 5, n), r.uniform(0, 0.1, 20), r.uniform(20, 300, 20)])
  b = np.concatenate([r.uniform(0, 5, n), r.uniform(20, 300, 20), r.uniform(0, 0.1, 20)])
  x = r.uniform(0, 1, len(a))
  edges = [(0., 1., .5), (1., 0., .5), (0., 0., .5), (np.inf, 1, .5), (1, np.inf, .5),
           (1, 1, 0.), (1, 1, 1.), (2, 3, -0.1), (2, 3, 1.1), (np.nan, 1, .5), (1, np.nan, .5),
           (1, 1, np.nan), (-1, 2, .5), (1e-40, 2, .3), (1e-30, 1e-30, .5), (100, 200, .33),
           (1000., 1000., .5), (0.5, 0.5, 1e-7), (3., 2., 1 - 1e-7), (2., 5., 0.)]
  ea, eb, ex = (np.array(v) for v in zip(*edges))
  cat = lambda u, v: np.concatenate([u, v]).astype(dtype)  # noqa: E731
  return cat(a, ea), cat(b, eb), cat(x, ex)


@pytest.mark.parametrize("dtype", FLOATS)
def test_betainc_values(dtype):
  a, b, x = _beta_grid(dtype)
  check(lambda lax, a, b, x: lax.betainc(a, b, x), a, b, x, build=LAX, jit=True,
        tol=_tol(dtype) * 10)


def test_betainc_values_x64(x64):
  a, b, x = _beta_grid(np.float64, n=100)
  check(lambda lax, a, b, x: lax.betainc(a, b, x), a, b, x, build=LAX, jit=True, tol=1e-12)


def test_betainc_matches_scipy_definition():
  # I_x(a, b) for integer a, b has a closed form (binomial tail).
  from math import comb
  a, b = 3, 4
  xs = np.linspace(0.05, 0.95, 7)
  want = [sum(comb(a + b - 1, j) * x ** j * (1 - x) ** (a + b - 1 - j) for j in range(a, a + b))
          for x in xs]
  got = alax.betainc(np.float32(a), np.float32(b), xs.astype(np.float32))
  np.testing.assert_allclose(np.asarray(got), want, rtol=2e-6, atol=1e-7)


def test_betainc_types_broadcasting_vmap_jaxpr_errors():
  a = np.array([1.5, 2., 3.], np.float32)
  check(lambda lax: lax.betainc(2.0, 3.0, 0.25), build=LAX)
  check(lambda lax, a: lax.betainc(a, 2.0, 0.5), a, build=LAX)
  check(lambda lax, a: lax.betainc(a, np.float32(2), np.float32(0.5)), a, build=LAX)
  check_jaxpr(lambda lax, a, b, x: lax.betainc(a, b, x), 1., 2., .5, build=LAX)
  check_jaxpr(lambda lax, a: lax.betainc(a, a, a / 4), a, build=LAX)
  check_vmap(lambda top: top.lax.betainc, a, a, np.float32(0.3), in_axes=(0, 0, None))
  check_vmap(lambda top: top.lax.betainc, a, np.float32(2), a / 4, in_axes=(0, None, 0),
             jit=True)
  for args in [(np.int32(2), np.int32(1), np.int32(0)),
               (np.float32(2), np.float16(1), np.float32(0.5)),
               (np.ones(2, np.float32), np.ones(3, np.float32), np.float32(0.5))]:
    check_raises(lambda lax, a, b, x: lax.betainc(a, b, x), *args, build=LAX)


def test_betainc_derivatives():
  a = np.array([0.5, 2., 3.5], np.float32)
  b = np.array([1.5, 0.7, 4.], np.float32)
  x = np.array([0.2, 0.6, 0.9], np.float32)
  check_jvp_vjp(lambda lax, x: lax.betainc(a, b, x), x)
  check_grads(lambda x: alax.betainc(a, b, x), (x,), order=1, atol=2e-2, rtol=2e-2)
  for argnum in (0, 1):
    check_raises(lambda top, a, b, x: top.grad(lambda *v: top.lax.betainc(*v).sum(),
                                              argnum)(a, b, x),
                 a, b, x, build=call_with("top"), match=["with respect to a and b"])
  check_jaxpr(lambda top, a, b, x: top.grad(top.lax.betainc, 2)(a, b, x), 1., 2., .5,
              build=call_with("top"))
  check(lambda top, x: top.vmap(top.grad(lambda x: top.lax.betainc(2.0, 3.0, x)))(x), x,
        build=call_with("top"))


def test_special_functions_under_jit_with_closed_over_values():
  x = np.array([0.3, 0.7], np.float32)
  ours = arrax.jit(lambda x: (alax.bessel_i0e(x) + alax.bessel_i1e(x * 2)
                              + alax.betainc(x, 2 * x, x / 2) + alax.zeta(x + 2, x)))(x)
  jl = real_jax.lax
  theirs = real_jax.jit(lambda x: (jl.bessel_i0e(x) + jl.bessel_i1e(x * 2)
                                   + jl.betainc(x, 2 * x, x / 2) + jl.zeta(x + 2, x)))(x)
  assert_same(ours, theirs, tol=1e-6)
