"""arrax.scipy.optimize.minimize (BFGS) against jax.scipy.optimize 0.10.2: the same iterates
(x, value, gradient, inverse Hessian, counts, status) on several problems and options, float64
under x64, under jit and vmap, and the errors."""
import jax
import jax.numpy as jnp
import jax.scipy.optimize as jso
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
import arrax.scipy.optimize as aso
from oracle import assert_raises_like, assert_same


def rosen(np_):
  return lambda x: np_.sum(100. * (x[1:] - x[:-1] ** 2) ** 2 + (1 - x[:-1]) ** 2)


def quad(np_):
  a = np.diag(np.arange(1., 6.)).astype(np.float32) + 0.1
  return lambda x, c: 0.5 * x @ np_.asarray(a) @ x - c * np_.sum(x)


def himmelblau(np_):
  return lambda x: (x[0] ** 2 + x[1] - 11) ** 2 + (x[0] + x[1] ** 2 - 7) ** 2


def both(make, x0, args=(), tol=(1e-4, 1e-5), **kw):
  got = aso.minimize(make(anp), x0, args, method="BFGS", **kw)
  want = jso.minimize(make(jnp), x0, args, method="BFGS", **kw)
  assert type(got).__name__ == "OptimizeResults"
  assert got._fields == want._fields
  assert_same(tuple(got), tuple(want), tol=tol)
  return got


@pytest.mark.parametrize("x0", [np.float32([-1.2, 1.]), np.float32([-1.2, 1., 0.5, 2.]),
                                np.float32([1., 1.]), np.float32([3., -2., 0.])])
def test_rosenbrock(x0):
  both(rosen, x0)


@pytest.mark.parametrize("options", [None, {"maxiter": 3}, {"gtol": 1e-2}, {"norm": 2},
                                     {"line_search_maxiter": 2}, {"maxiter": 0}])
def test_options(options):
  both(rosen, np.float32([-1.2, 1., 0.5]), options=options)


def test_args_and_other_problems():
  both(quad, np.zeros(5, np.float32), (np.float32(2.),))
  both(himmelblau, np.float32([0., 0.]))
  both(himmelblau, np.float32([-4., 4.]))


def test_float64(x64):
  both(rosen, np.array([-1.2, 1., 0.5, 2.]), tol=(1e-9, 1e-12))


def test_jit_and_vmap():
  x0 = np.float32([-1.2, 1., 0.5])
  got = arrax.jit(lambda x: aso.minimize(rosen(anp), x, method="BFGS"))(x0)
  want = jax.jit(lambda x: jso.minimize(rosen(jnp), x, method="BFGS"))(x0)
  assert_same(tuple(got), tuple(want), tol=(1e-4, 1e-5))
  xs = np.float32([[-1.2, 1.], [0.5, 0.5], [2., 2.]])
  got = arrax.vmap(lambda x: aso.minimize(himmelblau(anp), x, method="BFGS").x)(xs)
  want = jax.vmap(lambda x: jso.minimize(himmelblau(jnp), x, method="BFGS").x)(xs)
  assert_same(got, want, tol=(1e-4, 1e-5))


@pytest.mark.parametrize("call", [
    lambda m, np_: m.minimize(rosen(np_), np.zeros(2, np.float32), method="nelder-mead"),
    lambda m, np_: m.minimize(rosen(np_), np.zeros(2, np.float32), [1.], method="BFGS"),
    lambda m, np_: m.minimize(rosen(np_), np.zeros(2, np.float32)),
])
def test_errors(call):
  assert_raises_like(lambda: call(jso, jnp), lambda: call(aso, anp))
