"""Iterative solvers of linear systems A x = b given as a matvec (or matrix), on pytrees of
arrays: conjugate gradients (`cg`) and BiCGSTAB (`bicgstab`). Each is a `while_loop` wrapped
in `lax.custom_linear_solve`, so gradients solve the transposed system instead of
differentiating the iterations."""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from arrax._src import dtypes
from arrax._src.api import device_put
from arrax._src.array import Array
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow.while_loop import while_loop
from arrax._src.lax.dot import Precision
from arrax._src.lax.solvers import custom_linear_solve
from arrax._src.numpy import creation, lax_numpy, ufuncs
from arrax._src.tree_util import Partial, tree_leaves, tree_map, tree_structure

_dot = partial(lax_numpy.dot, precision=Precision.HIGHEST)
_vdot = partial(lax_numpy.vdot, precision=Precision.HIGHEST)


def _vdot_real(x, y):
  out = _vdot(x.real, y.real)
  if lax_numpy.iscomplexobj(x) or lax_numpy.iscomplexobj(y):
    out = out + _vdot(x.imag, y.imag)
  return out


def _vdot_real_tree(x, y):
  return sum(tree_leaves(tree_map(_vdot_real, x, y)))


def _vdot_tree(x, y):
  return sum(tree_leaves(tree_map(_vdot, x, y)))


def _scale(scalar, tree):
  return tree_map(partial(operator.mul, scalar), tree)


_add = partial(tree_map, operator.add)
_sub = partial(tree_map, operator.sub)


@Partial
def _identity(x):
  return x


def _as_matvec(f):
  if callable(f):
    return f
  if isinstance(f, (np.ndarray, Array)):
    if f.ndim != 2 or f.shape[0] != f.shape[1]:
      raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
    return partial(_dot, f)
  if hasattr(f, "__matmul__"):
    if hasattr(f, "shape") and len(f.shape) != 2 or f.shape[0] != f.shape[1]:
      raise ValueError(f"linear operator must be a square matrix, but has shape: {f.shape}")
    return partial(operator.matmul, f)
  raise TypeError(f"linear operator must be either a function or ndarray: {f}")


def _cg(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):  # noqa: N803
  """Conjugate gradients for Hermitian positive-definite A, preconditioned by M."""
  atol2 = ufuncs.maximum(ufuncs.square(tol) * _vdot_real_tree(b, b), ufuncs.square(atol))
  r0 = _sub(b, A(x0))
  p0 = z0 = M(r0)
  dtype = dtypes.result_type(*tree_leaves(p0))
  gamma0 = _vdot_real_tree(r0, z0).astype(dtype)

  def cond(state):
    _, r, gamma, _, k = state
    rs = gamma.real if M is _identity else _vdot_real_tree(r, r)
    return (rs > atol2) & (k < maxiter)

  def body(state):
    x, r, gamma, p, k = state
    ap = A(p)
    alpha = gamma / _vdot_real_tree(p, ap).astype(dtype)
    x = _add(x, _scale(alpha, p))
    r = _sub(r, _scale(alpha, ap))
    z = M(r)
    gamma_new = _vdot_real_tree(r, z).astype(dtype)
    return x, r, gamma_new, _add(z, _scale(gamma_new / gamma, p)), k + 1

  return while_loop(cond, body, (x0, r0, gamma0, p0, 0))[0]


def _bicgstab(A, b, x0=None, *, maxiter, tol=1e-5, atol=0.0, M=_identity):  # noqa: N803
  """BiCGSTAB for general A; stops early (k < 0) on a breakdown."""
  atol2 = ufuncs.maximum(ufuncs.square(tol) * _vdot_real_tree(b, b), ufuncs.square(atol))

  def cond(state):
    r, k = state[1], state[-1]
    return (_vdot_real_tree(r, r) > atol2) & (k < maxiter) & (k >= 0)

  def body(state):
    x, r, rhat, alpha, omega, rho, p, q, k = state
    rho_new = _vdot_tree(rhat, r)
    beta = rho_new / rho * alpha / omega
    p = _add(r, _scale(beta, _sub(p, _scale(omega, q))))
    phat = M(p)
    q = A(phat)
    alpha = rho_new / _vdot_tree(rhat, q)
    s = _sub(r, _scale(alpha, q))
    done = _vdot_real_tree(s, s) < atol2
    shat = M(s)
    t = A(shat)
    omega = _vdot_tree(t, s) / _vdot_tree(t, t)
    x = tree_map(partial(lax_numpy.where, done), _add(x, _scale(alpha, phat)),
                 _add(x, _add(_scale(alpha, phat), _scale(omega, shat))))
    r = tree_map(partial(lax_numpy.where, done), s, _sub(s, _scale(omega, t)))
    k = lax_numpy.where((omega == 0) | (alpha == 0), -11, k + 1)
    k = lax_numpy.where(rho_new == 0, -10, k)
    return x, r, rhat, alpha, omega, rho_new, p, q, k

  r0 = _sub(b, A(x0))
  dtype, weak = dtypes.result_type(*tree_leaves(b), return_weak_type_flag=True)
  one = lax._convert_element_type(1, dtype, weak)
  return while_loop(cond, body, (x0, r0, r0, one, one, one, r0, r0, 0))[0]


def _shapes(tree):
  return [np.shape(x) for x in tree_leaves(tree)]


def _isolve(solver, A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None,  # noqa: N803
            check_symmetric=False):
  if x0 is None:
    x0 = tree_map(creation.zeros_like, b)
  b, x0 = device_put((b, x0))
  if maxiter is None:
    maxiter = 10 * sum(leaf.size for leaf in tree_leaves(b))   # SciPy's default
  A = _as_matvec(A)  # noqa: N806
  M = _as_matvec(_identity if M is None else M)  # noqa: N806
  if tree_structure(x0) != tree_structure(b):
    raise ValueError("x0 and b must have matching tree structure: "
                     f"{tree_structure(x0)} vs {tree_structure(b)}")
  if _shapes(x0) != _shapes(b):
    raise ValueError(f"arrays in x0 and b must have matching shapes: {_shapes(x0)} vs "
                     f"{_shapes(b)}")
  solve = partial(solver, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
  symmetric = (all(not issubclass(x.dtype.type, np.complexfloating) for x in tree_leaves(b))
               if check_symmetric else False)
  x = custom_linear_solve(A, b, solve=solve, transpose_solve=solve, symmetric=symmetric)
  return x, None


def cg(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):  # noqa: N803
  """Solve A x = b for Hermitian positive-definite A by conjugate gradients: (x, None)."""
  return _isolve(_cg, A=A, b=b, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M,
                 check_symmetric=True)


def bicgstab(A, b, x0=None, *, tol=1e-5, atol=0.0, maxiter=None, M=None):  # noqa: N803
  """Solve A x = b for general A by BiCGSTAB: (x, None)."""
  return _isolve(_bicgstab, A=A, b=b, x0=x0, tol=tol, atol=atol, maxiter=maxiter, M=M)
