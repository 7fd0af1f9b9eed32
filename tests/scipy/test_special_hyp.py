"""arrax.scipy.special's hypergeometric functions and spherical harmonics (hyp1f1, hyp2f1,
sph_harm_y) against jax.scipy.special 0.10.2: values over parameter grids and their special
cases (a = 0, a = b, b = 0, terminating series, x near and at 1, x > 1, Euler's transformation,
the digamma expansion), dtypes and weak types, x64, gradients (JAX's custom JVPs; finite
differences), jit, vmap, errors.

JAX's own 1F1/2F1 are inaccurate in places (float32, large parameters: see its docstring); the
oracle is JAX, not SciPy, so those places are compared with JAX."""
import jax
import jax.scipy.special as jsp
import numpy as np
import pytest

import arrax
import arrax.scipy.special as asp
from arrax.test_util import check_grads
from oracle import assert_same, raised, same_exception


def both(name, *args, tol=(1e-4, 1e-6), **kw):
  got = getattr(asp, name)(*args, **kw)
  want = getattr(jsp, name)(*args, **kw)
  assert_same(got, want, tol=tol)


def test_hyp1f1_grid():
  a, b, x = np.meshgrid(np.float32([0., 0.5, 1., 2.5, -1.5, 4.]),
                        np.float32([0., 0.5, 1., 2.5, 4.]),
                        np.float32([-120., -5., -0.5, 0., 0.3, 2., 10., 99., 150.]),
                        indexing="ij")
  both("hyp1f1", a, b, x)
  both("hyp1f1", 1, 2, 0.5)        # weak-typed Python scalars
  both("hyp1f1", np.int32(1), np.int32(3), np.int32(2))
  both("hyp1f1", np.float32([1., np.nan, 2.]), np.float32([2., 1., np.nan]),
       np.float32([np.nan, 1., 1.]))


def test_hyp2f1_grid():
  a, b, c = np.meshgrid(np.float32([-3., -1., 0., 0.5, 1., 2.5]),
                        np.float32([-2., 0.5, 1.5, 3.]),
                        np.float32([-2., 0., 0.5, 1.5, 4., 7.]), indexing="ij")
  for x in (-3., -0.5, 0., 0.3, 0.8, 0.93, 0.99, 1., 1.5):
    both("hyp2f1", a, b, c, np.float32(x), tol=(5e-4, 1e-5))


@pytest.mark.parametrize("a, b, c, x", [
    (0.5, 1., 1.5, 0.95),      # digamma expansion, c - a - b = 0
    (1., 1., 3., 0.97),        # c - a - b = 1
    (1., 2., 1., 0.5),         # a == c
    (2., 1., 1., 0.5),         # b == c
    (1.5, 2.5, 2., 0.9),       # Euler's transformation
    (0.3, 0.7, 2.3, 1.),       # Gauss' theorem
    (-3., 2., 1.5, 0.7),       # terminating
    (2., -4., -5., 0.4),
    (1., 1., 2., 2.),          # x > 1: inf
])
def test_hyp2f1_cases(a, b, c, x):
  both("hyp2f1", np.float32(a), np.float32(b), np.float32(c), np.float32(x), tol=(5e-4, 1e-5))
  both("hyp2f1", a, b, c, x, tol=(5e-4, 1e-5))


def test_float64(x64):
  a, b, x = np.meshgrid([0.5, 1., 3.], [1.5, 2.], [-50., -2., 0.4, 3., 40., 120.],
                        indexing="ij")
  both("hyp1f1", a, b, x, tol=(1e-10, 1e-12))
  a, b, c = np.meshgrid([-2., 0.5, 1.], [0.5, 2.], [1.5, 3.], indexing="ij")
  for x in (-0.5, 0.3, 0.95, 1.):
    both("hyp2f1", a, b, c, x, tol=(1e-9, 1e-12))
  n, m = np.array([0, 1, 2, 3, 4, 4]), np.array([0, 1, -2, 3, 0, -4])
  theta, phi = np.linspace(0.1, 3., 6), np.linspace(0., 6., 6)
  both("sph_harm_y", n, m, theta, phi, n_max=4, tol=(1e-12, 1e-14))


def test_hyp_grads():
  args1 = (0.5, 1.5, 0.7)
  for i in range(3):
    assert_same(arrax.grad(asp.hyp1f1, i)(*args1), jax.grad(jsp.hyp1f1, i)(*args1),
                tol=(1e-4, 1e-6))
  args2 = (0.5, 1.5, 2.5, 0.3)
  for i in range(4):
    assert_same(arrax.grad(asp.hyp2f1, i)(*args2), jax.grad(jsp.hyp2f1, i)(*args2),
                tol=(1e-4, 1e-6))
  x = np.float32([0.1, 0.5, 2.])
  assert_same(arrax.vmap(arrax.grad(asp.hyp1f1, 2), (None, None, 0))(1., 2., x),
              jax.vmap(jax.grad(jsp.hyp1f1, 2), (None, None, 0))(1., 2., x), tol=(1e-4, 1e-6))


def test_hyp_grads_numerical(x64):
  check_grads(asp.hyp1f1, (np.array([0.5, 2.]), np.array([1.5, 3.]), np.array([0.7, -1.])),
              order=1, modes=("fwd", "rev"), rtol=1e-4, atol=1e-4)
  check_grads(asp.hyp2f1, (np.array([0.5, 1.]), np.array([1.5, 0.3]), np.array([2.5, 3.]),
                           np.array([0.3, -0.4])), order=1, modes=("fwd", "rev"),
              rtol=1e-4, atol=1e-4)


def test_jit_vmap():
  a, b, x = np.float32([0.5, 1., 2.]), np.float32([1.5, 2., 3.]), np.float32([0.3, -2., 120.])
  assert_same(arrax.jit(asp.hyp1f1)(a, b, x), jax.jit(jsp.hyp1f1)(a, b, x), tol=(1e-4, 1e-6))
  assert_same(arrax.vmap(asp.hyp1f1)(a, b, x), jax.vmap(jsp.hyp1f1)(a, b, x), tol=(1e-4, 1e-6))
  c, y = np.float32([2.5, 3., 4.]), np.float32([0.2, 0.95, -1.])
  assert_same(arrax.jit(asp.hyp2f1)(a, b, c, y), jax.jit(jsp.hyp2f1)(a, b, c, y),
              tol=(1e-4, 1e-6))
  assert_same(arrax.vmap(asp.hyp2f1, (0, 0, None, 0))(a, b, 3., y),
              jax.vmap(jsp.hyp2f1, (0, 0, None, 0))(a, b, 3., y), tol=(1e-4, 1e-6))


SPH_N = np.array([0, 1, 1, 2, 2, 3, 3, 5, 5])
SPH_M = np.array([0, -1, 1, 2, -1, -3, 0, 4, -5])


def test_sph_harm_y():
  theta = np.float32([0., 0.3, 1., 1.5, 2., 2.5, 3., np.pi, 0.7])
  phi = np.float32([0., 1., 2., 3., 4., 5., 6., 0.5, 2 * np.pi])
  both("sph_harm_y", SPH_N, SPH_M, theta, phi, n_max=5, tol=(1e-4, 1e-6))
  both("sph_harm_y", SPH_N, SPH_M, theta, phi, tol=(1e-4, 1e-6))   # n_max from n
  both("sph_harm_y", SPH_N, SPH_M, theta, phi, n_max=3, tol=(1e-4, 1e-6))   # n clipped
  both("sph_harm_y", np.array([2]), np.array([1]), 0.5, np.float32(1.), n_max=2)   # scalar theta
  assert_same(arrax.jit(asp.sph_harm_y, static_argnames="n_max")(SPH_N, SPH_M, theta, phi,
                                                                   n_max=5),
              jax.jit(jsp.sph_harm_y, static_argnames="n_max")(SPH_N, SPH_M, theta, phi,
                                                               n_max=5), tol=(1e-4, 1e-6))


def test_sph_harm_y_grad():
  theta = np.float32([0.3, 1., 2.])
  phi = np.float32([0.5, 1., 4.])
  n, m = np.array([1, 2, 3]), np.array([1, -2, 0])

  def f(mod):
    return lambda t, p: mod.numpy.sum(mod.numpy.real(mod.scipy.special.sph_harm_y(
        n, m, t, p, n_max=3)))

  for i in (0, 1):
    assert_same(arrax.grad(f(arrax), i)(theta, phi), jax.grad(f(jax), i)(theta, phi),
                tol=(1e-4, 1e-6))


@pytest.mark.parametrize("call", [
    lambda m: m.hyp1f1(1., 2., 1j), lambda m: m.hyp1f1(1j, 2., 1.),
    lambda m: m.sph_harm_y(np.array([1]), np.array([0]), 0.5, 0.5, diff_n=1),
    lambda m: _jit_of(m)(lambda k: m.sph_harm_y(np.array([1]), np.array([0]), np.array([0.5]),
                                               np.array([0.5]), n_max=k))(2),
])
def test_errors(call):
  same_exception(lambda: call(asp), raised(lambda: call(jsp)))


def _jit_of(special):
  return jax.jit if special is jsp else arrax.jit


def test_sph_harm_removed():
  with pytest.raises(AttributeError):
    jsp.sph_harm  # noqa: B018
  with pytest.raises(AttributeError):
    asp.sph_harm  # noqa: B018
