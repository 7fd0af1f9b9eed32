"""The newer arrax.scipy.special functions (Bessel i0/i0e/i1/i1e and bessel_jn, zeta, loggamma,
poch, bernoulli, betainc) against jax.scipy.special 0.10.2: values over edge grids, dtypes and
weak types, float64 (x64), gradients (custom JVPs where JAX has them), jit, vmap, errors."""
import jax
import jax.scipy.special as jsp
import numpy as np
import pytest

import arrax
import arrax.scipy.special as asp
from arrax.test_util import check_grads
from oracle import assert_raises_like, assert_same

GRID = np.float32([-np.inf, -30., -3., -0.5, -0., 0., 1e-3, 0.5, 1., 2.5, 10., 80., np.inf,
                   np.nan])


def both(name, *args, tol=(1e-4, 1e-6), **kw):
  got = getattr(asp, name)(*args, **kw)
  want = getattr(jsp, name)(*args, **kw)
  assert_same(got, want, tol=tol)


@pytest.mark.parametrize("name", ["i0", "i0e", "i1", "i1e", "loggamma"])
def test_unary(name):
  both(name, GRID)
  both(name, 2)        # weak-typed Python scalar
  both(name, np.int32([1, 4]))
  both(name, np.float16([0.5, 2.]), tol=(1e-2, 1e-3))


def test_loggamma_complex():
  z = np.complex64([1 + 1j, -2.5 + 0j, -3 + 0j, 0.2 - 4j, -7.3 - 1j, 12 + 0.5j,
                    complex(np.nan, 0)])
  both("loggamma", z, tol=(1e-4, 1e-5))


@pytest.mark.parametrize("v", [0, 1, 4])
def test_bessel_jn(v):
  z = np.float32([0.1, 0.5, 1., 3., 10.])
  both("bessel_jn", z, v=v, tol=(1e-4, 1e-5))
  both("bessel_jn", z.reshape(5, 1), v=v, n_iter=30, tol=(1e-4, 1e-5))


def test_zeta_poch_betainc():
  x, q = np.meshgrid(np.float32([1., 1.5, 2., 5., 30.]), np.float32([-1., 0.5, 1., 3.]))
  both("zeta", x, q, tol=(1e-4, 1e-6))
  z, m = np.meshgrid(np.float32([-1.5, 0.5, 1., 4.]), np.float32([0., 1., 2.5, -0.5]))
  both("poch", z, m, tol=(1e-4, 1e-6))
  a, b = np.meshgrid(np.float32([0.5, 1., 3.]), np.float32([0.5, 2., 10.]))
  for x in (0., 0.3, 0.9, 1.):
    both("betainc", a, b, np.float32(x), tol=(1e-4, 1e-6))
  both("betainc", 1, 2, 0.5)


@pytest.mark.parametrize("n", [0, 1, 2, 3, 4, 9, 20])
def test_bernoulli(n):
  both("bernoulli", n, tol=(1e-5, 1e-7))


def test_float64(x64):
  x = np.linspace(-10, 40, 11)
  for name in ("i0", "i1", "i0e", "i1e", "loggamma"):
    both(name, x, tol=(1e-12, 1e-14))
  both("zeta", np.array([2., 3.5]), np.array([1., 4.]), tol=(1e-12, 1e-14))
  both("bessel_jn", np.array([0.5, 2., 7.]), v=3, tol=(1e-10, 1e-12))
  both("bernoulli", 12, tol=(1e-12, 1e-14))


def test_grads():
  for fn, args in [(asp.i0, (np.float32([0.5, 2.]),)), (asp.i1e, (np.float32([-1., 3.]),)),
                   (asp.loggamma, (np.float32([0.5, 3.]),)),
                   (asp.poch, (np.float32([1.5, 3.]), np.float32([0.5, 2.]))),
                   (lambda z: asp.bessel_jn(z, v=2), (np.float32([1., 2.]),))]:
    check_grads(fn, args, order=1, modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
  for argnum in (0, 1):
    assert_same(arrax.grad(asp.zeta, argnum)(3., 2.), jax.grad(jsp.zeta, argnum)(3., 2.),
                tol=(1e-5, 1e-6))
    assert_same(arrax.grad(asp.poch, argnum)(3., 2.), jax.grad(jsp.poch, argnum)(3., 2.),
                tol=(1e-5, 1e-6))


def test_jit_vmap():
  assert_same(arrax.jit(asp.i0)(GRID), jax.jit(jsp.i0)(GRID), tol=(1e-5, 1e-6))
  assert_same(arrax.vmap(asp.loggamma)(GRID), jax.vmap(jsp.loggamma)(GRID), tol=(1e-5, 1e-6))
  z = np.float32([[0.5, 1.], [2., 3.]])
  assert_same(arrax.vmap(lambda t: asp.bessel_jn(t, v=2))(z),
              jax.vmap(lambda t: jsp.bessel_jn(t, v=2))(z), tol=(1e-4, 1e-5))


@pytest.mark.parametrize("call", [
    lambda m: m.zeta(2.), lambda m: m.bernoulli(-1), lambda m: m.poch(1j, 2.),
    lambda m: m.betainc(1., 2., 0.5j), lambda m: m.bessel_jn(1j, v=2),
    lambda m: m.bessel_jn(1., v=1.5), lambda m: m.dawsn(1j),
])
def test_errors(call):
  assert_raises_like(lambda: call(jsp), lambda: call(asp))


WIDE = np.float32([-30., -3., -1., -0., 0., 0.3, 1., 1.7, 2.5, 10., 30., 1e4, np.inf, np.nan])


@pytest.mark.parametrize("name", ["spence", "erfcx", "dawsn"])
def test_spence_erfcx(name):
  both(name, WIDE, tol=(1e-4, 1e-6))
  if name != "spence":
    both(name, 2)
    both(name, np.float16([0.5, 3.]), tol=(1e-2, 1e-3))


def test_wofz_and_complex_erfcx():
  re, im = np.meshgrid(np.float32([-8., -1., 0., 0.5, 3., 40.]),
                       np.float32([-6., -0.5, 0., 0.2, 2., 30.]))
  z = (re + 1j * im).astype(np.complex64)
  both("wofz", z, tol=(1e-4, 1e-6))
  both("erfcx", z, tol=(1e-4, 1e-6))
  both("wofz", np.float32([0., 1.5]))
  assert_same(arrax.grad(lambda t: asp.wofz(t).real)(0.7 + 0.2j),
              jax.grad(lambda t: jsp.wofz(t).real)(0.7 + 0.2j), tol=(1e-4, 1e-6))


def test_spence_erfcx_grads_and_errors(x64):
  x = np.linspace(0.1, 5, 7)
  both("spence", x, tol=(1e-10, 1e-12))
  both("erfcx", x, tol=(1e-10, 1e-12))
  both("dawsn", np.linspace(-8, 8, 17), tol=(1e-10, 1e-12))
  for name in ("spence", "erfcx", "dawsn"):
    assert_same(arrax.grad(getattr(asp, name))(0.7), jax.grad(getattr(jsp, name))(0.7),
                tol=(1e-10, 1e-12))
  for call in (lambda m: m.spence(np.int32(1)), lambda m: m.spence(np.complex64(1j))):
    with pytest.raises(TypeError):
      call(jsp)
    with pytest.raises(TypeError):
      call(asp)


def test_owens_t():
  h, a = np.meshgrid(np.float32([-2., -0.5, 0., 0.3, 0.67, 1., 3., np.nan]),
                     np.float32([-3., -1., 0., 0.5, 1., 1.5, 10., np.nan]))
  both("owens_t", h, a, tol=(1e-5, 1e-7))
  both("owens_t", 0.5, 2)
  for argnum in (0, 1):
    assert_same(arrax.grad(asp.owens_t, argnum)(0.5, 0.7), jax.grad(jsp.owens_t, argnum)(0.5, 0.7),
                tol=(1e-5, 1e-7))
  check_grads(asp.owens_t, (np.float32([0.3, 1.2]), np.float32([0.4, 2.])), order=1,
              modes=("fwd", "rev"), atol=5e-2, rtol=5e-2)
