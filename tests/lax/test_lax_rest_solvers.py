"""lax.custom_root and lax.custom_linear_solve against JAX 0.10.2: values, implicit
derivatives (grad, jvp, vjp, jacfwd, against JAX and by finite differences), has_aux, pytree
operands, vmap (batched operators, right-hand sides and both), jit, printed jaxprs and the
errors of mismatched structures, shapes and missing transpose solvers.
"""
import numpy as np
import pytest

import arrax
from arrax import lax as alax
from arrax.test_util import check_grads
from oracle import call_with, check, check_jaxpr, check_raises

TOP = call_with("top")


# ---- custom_root ------------------------------------------------------------------------------
def sqrt_cubed(top, x, tangent_solve=None):
  """sqrt(x**3) as the root of y**2 - x**3, found by Newton's method."""
  f = lambda y: y ** 2 - x ** 3  # noqa: E731

  def solve(f, y0):
    # Newton's method while |f| is large, at most 40 steps (the bound ends it where float32
    # cannot get |f| below the threshold).
    def body(state):
      i, y = state
      return i + 1, y - f(y) / (2 * y)
    return top.lax.while_loop(lambda s: (abs(f(s[1])) > 1e-6) & (s[0] < 40), body, (0, y0))[1]
  tangent_solve = tangent_solve or (lambda g, y: y / g(1.0))
  return top.lax.custom_root(f, 1.0, solve, tangent_solve)


# x values whose root is exact in float32 (Newton's method then stops).
XS = [1.0, 4.0, 0.25]


def test_custom_root_values_and_grads():
  for x in XS:
    check(lambda top, x: sqrt_cubed(top, x), x, build=TOP, jit=True)
    check(lambda top, x: top.grad(lambda x: sqrt_cubed(top, x))(x), x, build=TOP, jit=True)
  check(lambda top, x: top.vmap(lambda x: sqrt_cubed(top, x))(x), np.array(XS, np.float32),
        build=TOP)
  check(lambda top, x: top.vmap(top.grad(lambda x: sqrt_cubed(top, x)))(x),
        np.array(XS, np.float32), build=TOP)
  check(lambda top, x, t: top.jvp(lambda x: sqrt_cubed(top, x), (x,), (t,)), 4.0, 0.5,
        build=TOP)


def test_custom_root_numerical_gradient():
  # d/dx x**1.5 = 1.5 x**0.5, by the implicit function theorem (not through the loop).
  g = arrax.grad(lambda x: sqrt_cubed(arrax, x))(4.0)
  np.testing.assert_allclose(float(g), 3.0, rtol=1e-6)
  check_grads(lambda x: sqrt_cubed(arrax, x), (np.float32(4.0),), order=1, modes=["fwd", "rev"],
              atol=5e-2, rtol=5e-2, eps=1e-2)


def test_custom_root_jaxprs():
  check_jaxpr(lambda top, x: sqrt_cubed(top, x), 2.0, build=TOP)
  check_jaxpr(lambda top, x: top.grad(lambda x: sqrt_cubed(top, x))(x), 2.0, build=TOP)
  check_jaxpr(lambda top, x: top.vmap(lambda x: sqrt_cubed(top, x))(x),
              np.array(XS, np.float32), build=TOP)


def test_custom_root_pytree_and_aux():
  def root(top, a):
    # Roots of (x - a, 2y - a): x = a, y = a / 2, with the iteration count as aux.
    f = lambda v: {"x": v["x"] - a, "y": 2 * v["y"] - a}  # noqa: E731

    def solve(f, v0):
      r = f(v0)
      return {"x": v0["x"] - r["x"], "y": v0["y"] - r["y"] / 2}, np.float32(1)

    def tangent_solve(g, y):
      return {"x": y["x"], "y": y["y"] / 2}
    guess = {"x": np.float32(0), "y": np.float32(0)}
    return top.lax.custom_root(f, guess, solve, tangent_solve, has_aux=True)
  a = np.float32(3.0)
  # (eagerly JAX returns the constant aux as a NumPy subclass: compared under jit only)
  check(lambda top, a: root(top, a), a, build=TOP, eager=False, jit=True, strict_tree=True)
  check(lambda top, a: root(top, a)[0], a, build=TOP, strict_tree=True)
  check(lambda top, a: top.grad(lambda a: root(top, a)[0]["y"])(a), a, build=TOP)
  check(lambda top, a: top.jacfwd(lambda a: root(top, a)[0])(a), a, build=TOP,
        strict_tree=True)
  check_jaxpr(lambda top, a: root(top, a), a, build=TOP)


def test_custom_root_errors():
  def bad_f(top, x):
    return top.lax.custom_root(lambda y: (y, y), x, lambda f, y: y, lambda g, y: y)

  def bad_solve(top, x):
    return top.lax.custom_root(lambda y: y, x, lambda f, y: (y, y), lambda g, y: y)

  def bad_aux(top, x):
    return top.lax.custom_root(lambda y: y, x, lambda f, y: y, lambda g, y: y, has_aux=True)

  def bad_tangent(top, x):
    return top.lax.custom_root(lambda y: y, x, lambda f, y: y, lambda g, y: (y, y))
  for fn in (bad_f, bad_solve, bad_tangent):
    check_raises(fn, 1.0, build=TOP, match=["output pytree structure must match"])
  check_raises(bad_aux, 1.0, build=TOP, match=["auxiliary output was expected"])
  check_raises(bad_aux, (1.0, 2.0, 3.0), build=TOP, match=["auxiliary output was expected"])


# ---- custom_linear_solve ----------------------------------------------------------------------
A = np.array([[3., 1., 0.], [1., 4., 1.], [0., 1., 2.]], np.float32)    # symmetric
B = np.array([[2., 1., 0.], [0., 3., 1.], [1., 0., 4.]], np.float32)    # not symmetric
RHS = np.array([1., -2., 3.], np.float32)


def linear_solve(top, a, b, symmetric=False, transpose=True):
  np_ = top.numpy
  matvec = lambda x: np_.dot(a, x)  # noqa: E731
  solve = lambda mv, y: np_.linalg.solve(top.lax.stop_gradient(a), y)  # noqa: E731
  tsolve = lambda vm, y: np_.linalg.solve(top.lax.stop_gradient(a).T, y)  # noqa: E731
  if symmetric:
    return top.lax.custom_linear_solve(matvec, b, solve, symmetric=True)
  return top.lax.custom_linear_solve(matvec, b, solve, tsolve if transpose else None)


@pytest.mark.parametrize("sym", [True, False], ids=["symmetric", "general"])
def test_custom_linear_solve_values_and_derivatives(sym):
  a = A if sym else B
  check(lambda top, a, b: linear_solve(top, a, b, sym), a, RHS, build=TOP, jit=True, tol=1e-5)
  check(lambda top, a, b: top.grad(lambda a, b: linear_solve(top, a, b, sym).sum(), (0, 1))(
      a, b), a, RHS, build=TOP, tol=1e-5)
  check(lambda top, a, b: top.jacfwd(lambda a, b: linear_solve(top, a, b, sym), (0, 1))(a, b),
        a, RHS, build=TOP, tol=1e-5)
  check(lambda top, a, b: top.jit(top.jacrev(lambda b: linear_solve(top, a, b, sym)))(b),
        a, RHS, build=TOP, tol=1e-5)
  check_grads(lambda a, b: linear_solve(arrax, a, b, sym), (a, RHS), order=1,
              atol=2e-2, rtol=2e-2, eps=1e-3)


def test_custom_linear_solve_vmap():
  bs = np.stack([RHS, 2 * RHS - 1])
  as_ = np.stack([A, B])
  check(lambda top, a, b: top.vmap(lambda b: linear_solve(top, a, b))(b), B, bs, build=TOP,
        tol=1e-5)
  check(lambda top, a, b: top.vmap(lambda a: linear_solve(top, a, b))(a), as_, RHS, build=TOP,
        tol=1e-5)
  check(lambda top, a, b: top.vmap(lambda a, b: linear_solve(top, a, b))(a, b), as_, bs,
        build=TOP, tol=1e-5)
  check(lambda top, a, b: top.vmap(lambda a, b: top.grad(
      lambda a, b: linear_solve(top, a, b).sum(), (0, 1))(a, b))(a, b), as_, bs, build=TOP,
      tol=1e-5)
  check(lambda top, a, b: top.vmap(lambda b: linear_solve(top, a, b, True), in_axes=1)(b), A,
        bs.T, build=TOP, tol=1e-5)


def _simple_solve(top, a, b, transpose_solve="same", has_aux=False):
  # A solver whose jaxpr stays small: the diagonal of a (as a closed-over value) divides b.
  diag = a[0] + 1.0
  matvec = lambda x: a @ x  # noqa: E731

  def solve(mv, y):
    return (y / diag, y.sum()) if has_aux else y / diag
  tsolve = None if transpose_solve is None else solve
  return top.lax.custom_linear_solve(matvec, b, solve, tsolve, has_aux=has_aux)


def test_custom_linear_solve_jaxprs():
  b = RHS
  check_jaxpr(lambda top, a, b: _simple_solve(top, a, b), A, b, build=TOP)
  check_jaxpr(lambda top, a, b: _simple_solve(top, a, b, transpose_solve=None), A, b,
              build=TOP)
  check_jaxpr(lambda top, a, b: top.grad(lambda a, b: _simple_solve(top, a, b).sum(),
                                         (0, 1))(a, b), A, b, build=TOP)
  check_jaxpr(lambda top, a, b: top.vmap(lambda b: _simple_solve(top, a, b))(b), A,
              np.stack([b, b]), build=TOP)
  check_jaxpr(lambda top, a, b: top.jvp(lambda a: _simple_solve(top, a, b), (a,), (a,)), A, b,
              build=TOP)
  check_jaxpr(lambda top, a, b: _simple_solve(top, a, b, has_aux=True), A, b, build=TOP)


def test_custom_linear_solve_pytrees_and_aux():
  def solve_tree(top, a, b):
    matvec = lambda x: {"u": a * x["u"], "v": 2.0 * x["v"]}  # noqa: E731
    solve = lambda mv, y: ({"u": y["u"] / a, "v": y["v"] / 2.0}, np.int32(7))  # noqa: E731
    return top.lax.custom_linear_solve(matvec, b, solve, symmetric=True, has_aux=True)
  a = np.float32(4.0)
  b = {"u": np.array([1., 2.], np.float32), "v": np.float32(3.0)}
  # (eagerly JAX returns the constant aux as a NumPy subclass: compared under jit only)
  check(lambda top, a, b: solve_tree(top, a, b), a, b, build=TOP, eager=False, jit=True,
        strict_tree=True)
  check(lambda top, a, b: solve_tree(top, a, b)[0], a, b, build=TOP, strict_tree=True)
  check(lambda top, a, b: top.grad(lambda a, b: solve_tree(top, a, b)[0]["u"].sum(), (0, 1))(
      a, b), a, b, build=TOP, strict_tree=True)


def test_custom_linear_solve_errors():
  b = RHS
  check_raises(lambda top, a, b: top.grad(
      lambda b: linear_solve(top, a, b, transpose=False).sum())(b), B, b, build=TOP,
      match=["transpose_solve required"])
  check_raises(lambda top, b: top.lax.custom_linear_solve(lambda x: x[:2], b, lambda m, y: y),
               b, build=TOP, match=["matvec() output shapes must match b"])
  check_raises(lambda top, b: top.lax.custom_linear_solve(lambda x: x, b, lambda m, y: (y, y)),
               b, build=TOP, match=["solve() output shapes must match b"])
  check_raises(lambda top, b: top.lax.custom_linear_solve(lambda x: x, b, lambda m, y: y,
                                                          has_aux=True), b, build=TOP)
  check_raises(lambda top, b: top.lax.custom_linear_solve(lambda x: x, b, lambda m, y: y,
                                                          has_aux=True), 1.0, build=TOP)
  check_raises(lambda top, b: top.lax.custom_linear_solve(lambda x: (x, x), b,
                                                          lambda m, y: y),
               b, build=TOP)
  # The forward-mode derivative needs no transpose solver.
  check(lambda top, a, b: top.jvp(lambda b: linear_solve(top, a, b, transpose=False), (b,),
                                  (b,)), B, b, build=TOP, tol=1e-5)


def test_linear_solve_primitive_name():
  import jax
  assert alax.linear_solve_p.name == jax.lax.linear_solve_p.name == "custom_linear_solve"
  assert alax.linear_solve_p.multiple_results
