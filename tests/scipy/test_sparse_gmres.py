"""arrax.scipy.sparse.linalg.gmres against JAX 0.10.2 and NumPy's solve, on well-conditioned
systems: both solve methods, matrices and matvec functions, preconditioners, x0, restart and
maxiter, pytrees, complex and x64, gradients (through custom_linear_solve), jit, vmap,
errors."""
import jax
import jax.scipy.sparse.linalg as jspl
import numpy as np
import pytest

import arrax
import arrax.scipy.sparse.linalg as aspl
from arrax.test_util import check_grads
from oracle import assert_raises_like, assert_same


def system(n, dtype=np.float32, seed=0):
  r = np.random.default_rng(seed)
  a = np.eye(n) * 4 + r.standard_normal((n, n)) * 0.5
  b = r.standard_normal(n)
  if np.dtype(dtype).kind == "c":
    a = a + 0.3j * r.standard_normal((n, n))
    b = b + 1j * r.standard_normal(n)
  return a.astype(dtype), b.astype(dtype)


def both(*args, tol=(1e-4, 1e-5), **kw):
  got = aspl.gmres(*args, **kw)
  want = jspl.gmres(*args, **kw)
  assert_same(got, want, tol=tol)
  return got[0]


@pytest.mark.parametrize("method", ["batched", "incremental"])
@pytest.mark.parametrize("n", [1, 3, 12, 30])
def test_matrix(method, n):
  a, b = system(n, seed=n)
  x = both(a, b, solve_method=method)
  np.testing.assert_allclose(x, np.linalg.solve(a.astype(np.float64), b), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("method", ["batched", "incremental"])
def test_options(method):
  a, b = system(16, seed=2)
  x0 = np.ones(16, np.float32)
  both(a, b, x0, solve_method=method)
  both(a, b, solve_method=method, restart=4)
  both(a, b, solve_method=method, restart=3, maxiter=2)     # stops before converging
  both(a, b, solve_method=method, tol=1e-2)
  both(a, b, solve_method=method, atol=1e-1)
  m = np.diag(1 / np.diag(a)).astype(np.float32)
  both(a, b, solve_method=method, M=m)
  both(lambda v: a @ v, b, solve_method=method)           # a matvec function
  both(a, np.zeros(16, np.float32), solve_method=method)   # zero right-hand side


def test_pytree_and_complex():
  a, b = system(8, seed=4)

  def mv(mod):
    return lambda t: {"u": mod.numpy.dot(a[:4, :4], t["u"]) + 0.1 * t["v"][:4],
                      "v": 2.0 * t["v"]}

  tb = {"u": b[:4], "v": b}
  assert_same(aspl.gmres(mv(arrax), tb), jspl.gmres(mv(jax), tb), tol=(1e-4, 1e-5),
              strict_tree=True)
  a, b = system(10, np.complex64, seed=5)
  for method in ("batched", "incremental"):
    x = both(a, b, solve_method=method)
    np.testing.assert_allclose(x, np.linalg.solve(a.astype(np.complex128), b), rtol=1e-4,
                               atol=1e-4)


def test_float64(x64):
  a, b = system(20, np.float64, seed=6)
  for method in ("batched", "incremental"):
    x = aspl.gmres(a, b, solve_method=method, tol=1e-12)[0]
    assert_same(x, jspl.gmres(a, b, solve_method=method, tol=1e-12)[0], tol=(1e-10, 1e-12))
    np.testing.assert_allclose(x, np.linalg.solve(a, b), rtol=1e-10, atol=1e-10)


def test_grads():
  a, b = system(6, seed=8)
  for method in ("batched", "incremental"):
    def loss(mod, method=method):
      return lambda a, b: mod.numpy.sum(mod.scipy.sparse.linalg.gmres(
          a, b, solve_method=method, tol=1e-6)[0] ** 2)

    assert_same(arrax.jit(arrax.grad(loss(arrax), (0, 1)))(a, b),
                jax.jit(jax.grad(loss(jax), (0, 1)))(a, b), tol=(1e-3, 1e-4))


def test_grads_numerical(x64):
  a, b = system(6, np.float64, seed=8)
  for method in ("batched", "incremental"):
    solve = arrax.jit(lambda a, b, method=method: aspl.gmres(a, b, tol=1e-12,
                                                             solve_method=method)[0])
    check_grads(solve, (a, b), order=1, modes=("fwd", "rev"))


def test_jit_vmap():
  a, b = system(9, seed=9)

  def solve(mod):
    return lambda a, b: mod.scipy.sparse.linalg.gmres(a, b, solve_method="incremental")[0]

  assert_same(arrax.jit(solve(arrax))(a, b), jax.jit(solve(jax))(a, b), tol=(1e-4, 1e-5))
  bs = np.stack([system(9, seed=s)[1] for s in range(3)])
  assert_same(arrax.vmap(solve(arrax), (None, 0))(a, bs), jax.vmap(solve(jax), (None, 0))(a, bs),
              tol=(1e-4, 1e-5))


@pytest.mark.parametrize("call", [
    lambda m, a, b: m.gmres(a, b, solve_method="qr"),
    lambda m, a, b: m.gmres(a, b, x0=(b,)),
    lambda m, a, b: m.gmres(a[:, :3], b),
    lambda m, a, b: m.gmres("A", b),
])
def test_errors(call):
  a, b = system(4)
  assert_raises_like(lambda: call(jspl, a, b), lambda: call(aspl, a, b))
