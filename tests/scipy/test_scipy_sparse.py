"""arrax.scipy.sparse.linalg (cg, bicgstab) against jax.scipy.sparse.linalg 0.10.2: matrices,
matvec functions and pytrees, tolerances and maxiter, preconditioners, complex systems, float64,
gradients through custom_linear_solve, jit and vmap, errors. (gmres is not implemented.)"""
import jax
import jax.scipy.sparse.linalg as jsl
import numpy as np
import pytest

import arrax
import arrax.scipy.sparse.linalg as asl
from oracle import assert_raises_like, assert_same

RS = np.random.RandomState(0)
M = RS.randn(6, 6).astype(np.float32)
SPD = M @ M.T + 6 * np.eye(6, dtype=np.float32)
GEN = M + 4 * np.eye(6, dtype=np.float32)
B = RS.randn(6).astype(np.float32)
TOL = (1e-4, 1e-5)


def both(name, *args, **kw):
  got = getattr(asl, name)(*args, **kw)
  want = getattr(jsl, name)(*args, **kw)
  assert got[1] is None and want[1] is None
  assert_same(got[0], want[0], tol=TOL)


@pytest.mark.parametrize("name,mat", [("cg", SPD), ("bicgstab", SPD), ("bicgstab", GEN)])
@pytest.mark.parametrize("kw", [{}, {"tol": 1e-3, "maxiter": 3}, {"atol": 1e-2},
                                {"x0": np.ones(6, np.float32)},
                                {"M": np.diag(1 / np.diag(SPD)).astype(np.float32)}])
def test_solve(name, mat, kw):
  both(name, mat, B, **kw)
  fn_kw = dict(kw)
  if "M" in fn_kw:
    pre = fn_kw["M"]
    fn_kw["M"] = lambda x: pre @ x
  got = getattr(asl, name)(lambda x: mat @ x, B, **fn_kw)[0]
  want = getattr(jsl, name)(lambda x: mat @ x, B, **fn_kw)[0]
  assert_same(got, want, tol=TOL)


@pytest.mark.parametrize("name", ["cg", "bicgstab"])
def test_pytree_and_complex(name):
  def mv(t):
    return {"a": SPD[:3, :3] @ t["a"], "b": 2. * t["b"]}
  b = {"a": B[:3], "b": B[3:]}
  got, want = getattr(asl, name)(mv, b)[0], getattr(jsl, name)(mv, b)[0]
  assert_same(got, want, tol=TOL, strict_tree=True)
  c = (SPD + 1j * (M - M.T)).astype(np.complex64)
  bc = (B + 1j * B[::-1]).astype(np.complex64)
  both(name, c, bc)


def test_float64(x64):
  spd, b = SPD.astype(np.float64), B.astype(np.float64)
  for name in ("cg", "bicgstab"):
    got, want = getattr(asl, name)(spd, b, tol=1e-10)[0], getattr(jsl, name)(spd, b, tol=1e-10)[0]
    assert_same(got, want, tol=(1e-9, 1e-10))


def test_grad_jit_vmap():
  for name in ("cg", "bicgstab"):
    a_fn, j_fn = getattr(asl, name), getattr(jsl, name)
    got = arrax.grad(lambda b: (a_fn(SPD, b)[0] ** 2).sum())(B)
    want = jax.grad(lambda b: (j_fn(SPD, b)[0] ** 2).sum())(B)
    assert_same(got, want, tol=TOL)
    got = arrax.grad(lambda m: a_fn(lambda x: m @ x, B)[0].sum())(SPD)
    want = jax.grad(lambda m: j_fn(lambda x: m @ x, B)[0].sum())(SPD)
    assert_same(got, want, tol=(1e-3, 1e-5))
    assert_same(arrax.jit(lambda b: a_fn(SPD, b)[0])(B), jax.jit(lambda b: j_fn(SPD, b)[0])(B),
                tol=TOL)
    bs = np.stack([B, B[::-1], 2 * B])
    assert_same(arrax.vmap(lambda b: a_fn(SPD, b)[0])(bs), jax.vmap(lambda b: j_fn(SPD, b)[0])(bs),
                tol=TOL)


@pytest.mark.parametrize("call", [
    lambda m: m.cg(np.ones((2, 3)), np.ones(2)), lambda m: m.cg("A", np.ones(2)),
    lambda m: m.cg(SPD, B, x0=np.ones(5, np.float32)),
    lambda m: m.bicgstab(SPD, B, x0={"a": B}),
])
def test_errors(call):
  assert_raises_like(lambda: call(jsl), lambda: call(asl))
