"""arrax.scipy.special's exponential, sine/cosine and Fresnel integrals (expi, exp1, expn, sici,
fresnel) against jax.scipy.special 0.10.2: values over edge grids (0, negative, large, inf, NaN),
dtypes and weak types, float64 (x64), gradients (JAX's custom JVPs, and finite differences),
jit, vmap, errors.

expn runs a while loop per element under `vectorize`; batched, every branch's loop runs for
every element, and JAX 0.10.2 (so arrax too) does not terminate for some of them (n < 0 next to
large x): those edge cases are checked one scalar at a time."""
import jax
import jax.scipy.special as jsp
import numpy as np
import pytest

import arrax
import arrax.scipy.special as asp
from arrax.test_util import check_grads
from oracle import assert_raises_like, assert_same

GRID = np.float32([-np.inf, -100., -30., -5., -1.5, -0.3, -0., 0., 1e-8, 0.1, 0.5, 1., 1.5, 2.,
                   3., 4., 4.5, 7., 8., 9., 15., 16., 20., 33., 50., 64., 70., 100., 500.,
                   1e9, 2e9, np.inf, np.nan])
POSITIVE = np.float32([0., 0.1, 0.5, 1., 1.5, 2., 5., 10., 30.])


def both(name, *args, tol=(2e-5, 1e-6), **kw):
  got = getattr(asp, name)(*args, **kw)
  want = getattr(jsp, name)(*args, **kw)
  assert_same(got, want, tol=tol)


# exp1 batched runs the continued fraction for every element, which converges very slowly near 0
SLOW = {"exp1": 1e-8}


@pytest.mark.parametrize("name", ["expi", "exp1", "sici", "fresnel"])
def test_unary_grid(name):
  grid = GRID[GRID != SLOW.get(name)]
  both(name, grid)
  both(name, grid[:30].reshape(3, 10))
  both(name, np.float32(1e-8))
  both(name, 2)            # weak-typed Python scalar
  both(name, np.int32([1, 4, -3]))
  both(name, np.float32(0.7))
  both(name, np.zeros((0,), np.float32))


@pytest.mark.parametrize("name", ["expi", "exp1", "sici", "fresnel"])
def test_half_precision(name):
  x = np.float32([-3., -0.5, 0.25, 1., 2.5, 6., 40.])
  for dt in (np.float16, jax.numpy.bfloat16):
    both(name, x.astype(dt), tol=(2e-2, 1e-3))


@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, 10, 50, 5000, 6000])
def test_expn_grid(n):
  both("expn", np.float32(n), POSITIVE, tol=(5e-5, 1e-6))
  both("expn", n, POSITIVE, tol=(5e-5, 1e-6))


@pytest.mark.parametrize("n, x", [(-1, 2.), (-1, 0.5), (0, 0.), (1, 0.), (2, 0.), (3, -1.),
                                  (1, np.inf), (2, np.nan), (np.nan, 1.), (1, 1e9), (7, 1e3),
                                  (2.5, 1.5), (0.5, 0.2)])
def test_expn_edges(n, x):
  both("expn", np.float32(n), np.float32(x), tol=(5e-5, 1e-6))


def test_expn_broadcast():
  n = np.float32([[0], [1], [2], [7]])
  both("expn", n, POSITIVE, tol=(5e-5, 1e-6))
  both("expn", np.int32([1, 2, 3]), np.float32([0.5, 1.5, 4.]), tol=(5e-5, 1e-6))


def test_float64(x64):
  x = np.concatenate([np.linspace(-40, 70, 23), [0., 0.25, 1e3, 1e10, np.inf, -np.inf,
                                                 np.nan]])
  for name in ("expi", "exp1", "sici", "fresnel"):
    both(name, x, tol=(1e-12, 1e-14))
  both("fresnel", np.array([3e4, 4e4, 1e6]), tol=(1e-12, 1e-14))
  for n in (0, 1, 3, 10):
    both("expn", float(n), np.array([0., 0.3, 1., 2., 8., 25.]), tol=(1e-12, 1e-14))
  both("expi", np.float32([1., 3.]), tol=(1e-6, 1e-7))   # float32 stays float32 under x64


@pytest.mark.parametrize("name, xs", [
    ("expi", [-3., -0.2, 0.4, 1.5, 5., 12., 40.]),
    ("exp1", [0.2, 1., 3., 9.]),
    ("sici", [-6., -0.5, 0.3, 2., 5., 10.]),
    ("fresnel", [-2., 0.3, 1.2, 1.7, 4.]),
])
def test_grads(name, xs):
  xs = np.float32(xs)
  a_fn, j_fn = getattr(asp, name), getattr(jsp, name)
  if name in ("sici", "fresnel"):
    for i in (0, 1):
      a_g = arrax.vmap(arrax.grad(lambda t, i=i: a_fn(t)[i]))(xs)
      j_g = jax.vmap(jax.grad(lambda t, i=i: j_fn(t)[i]))(xs)
      assert_same(a_g, j_g, tol=(1e-5, 1e-6))
  else:
    assert_same(arrax.vmap(arrax.grad(a_fn))(xs), jax.vmap(jax.grad(j_fn))(xs), tol=(1e-5, 1e-6))
  assert_same(arrax.jvp(a_fn, (xs,), (np.ones_like(xs),)),
              jax.jvp(j_fn, (xs,), (np.ones_like(xs),)), tol=(1e-5, 1e-6))


def test_grads_numerical(x64):
  check_grads(asp.expi, (np.array([-2., 0.5, 3., 20.]),), order=1, modes=("fwd", "rev"))
  check_grads(asp.exp1, (np.array([0.3, 2., 7.]),), order=1, modes=("fwd", "rev"))
  check_grads(lambda x: asp.expn(3, x), (np.array([0.3, 2., 7.]),), order=1,
              modes=("fwd", "rev"))
  check_grads(lambda x: asp.sici(x)[0] + 2 * asp.sici(x)[1], (np.array([-3., 0.5, 6.]),),
              order=1, modes=("fwd", "rev"))
  check_grads(lambda x: asp.fresnel(x)[0] - asp.fresnel(x)[1], (np.array([-1., 0.4, 2.]),),
              order=1, modes=("fwd", "rev"))


def test_expn_grad():
  x = np.float32([0.5, 2., 6.])
  for n in (1, 2, 4):
    assert_same(arrax.vmap(arrax.grad(lambda t, n=n: asp.expn(n, t)))(x),
                jax.vmap(jax.grad(lambda t, n=n: jsp.expn(n, t)))(x), tol=(1e-5, 1e-6))


def test_jit_vmap():
  x = np.float32([-2., 0.3, 1., 5., 70.])
  for name in ("expi", "exp1", "sici", "fresnel"):
    assert_same(arrax.jit(getattr(asp, name))(x), jax.jit(getattr(jsp, name))(x),
                tol=(2e-5, 1e-6))
    assert_same(arrax.vmap(getattr(asp, name))(x), jax.vmap(getattr(jsp, name))(x),
                tol=(2e-5, 1e-6))
  n = np.float32([1, 2, 3, 4, 5])
  assert_same(arrax.vmap(asp.expn)(n, np.abs(x)), jax.vmap(jsp.expn)(n, np.abs(x)),
              tol=(5e-5, 1e-6))
  assert_same(arrax.jit(asp.expn)(2, np.abs(x)), jax.jit(jsp.expn)(2, np.abs(x)),
              tol=(5e-5, 1e-6))


@pytest.mark.parametrize("call", [
    lambda m: m.expi(1j), lambda m: m.exp1(np.complex64(1 + 1j)),
    lambda m: m.expn(1, 1j), lambda m: m.sici(np.complex64(2j)), lambda m: m.fresnel(1j),
])
def test_errors(call):
  assert_raises_like(lambda: call(jsp), lambda: call(asp))
