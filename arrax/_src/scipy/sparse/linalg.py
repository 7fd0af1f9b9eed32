"""Iterative solvers of linear systems A x = b given as a matvec (or matrix), on pytrees of
arrays: conjugate gradients (`cg`), BiCGSTAB (`bicgstab`) and restarted GMRES (`gmres`). Each
is a `while_loop` wrapped in `lax.custom_linear_solve`, so gradients solve the transposed system
instead of differentiating the iterations."""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from arrax._src import dtypes
from arrax._src.api import device_put
from arrax._src.array import Array
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import loops
from arrax._src.lax.control_flow.while_loop import while_loop
from arrax._src.lax.dot import Precision
from arrax._src.lax.solvers import custom_linear_solve
from arrax._src.numpy import creation, einsum, lax_numpy, padding, ufuncs
from arrax._src.scipy import linalg as scipy_linalg
from arrax._src.tree_util import Partial, tree_leaves, tree_map, tree_reduce, tree_structure

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


# ---- GMRES ---------------------------------------------------------------------------------------
_einsum = partial(einsum.einsum, precision=Precision.HIGHEST)


def _norm(tree):
  leaves = tree_leaves(tree)
  return ufuncs.sqrt(sum(_vdot_real(x, x) for x in leaves))


def _safe_normalize(tree, thresh=None):
  """(tree / |tree|, |tree|), or zeros and 0 when the norm is at most `thresh` (default eps)."""
  norm = _norm(tree)
  dtype, weak = dtypes.result_type(*tree_leaves(tree), return_weak_type_flag=True)
  if thresh is None:
    thresh = dtypes.finfo(norm.dtype).eps
  thresh = thresh.astype(dtype).real
  keep = norm > thresh
  norm_as = lax._convert_element_type(norm, dtype, weak)
  unit = tree_map(lambda y: lax_numpy.where(keep, y / norm_as, 0.0), tree)
  return unit, lax_numpy.where(keep, norm, 0.0)


def _overlaps(basis, v):
  """basis^H v, summed over the leaves (each basis leaf has the Krylov index last)."""
  return tree_reduce(operator.add,
                     tree_map(lambda X, y: _einsum("...n,...->n", X.conj(), y), basis, v))


def _orthogonalize(basis, v, v_norm, max_iterations=2):
  """Classical Gram-Schmidt of v against the basis columns, repeated (at most
  `max_iterations` passes) while the removed part is large next to what remains."""
  first = tree_leaves(basis)[0]
  r = creation.zeros(first.shape[-1], dtype=first.dtype)

  def one_pass(carry):
    k, q, r, q_norm_scaled = carry
    h = _overlaps(basis, q)
    q = _sub(q, tree_map(lambda X: _dot(X, h), basis))
    r = _add(r, h)

    def renorm(c):
      k, _, q, _ = c
      _, q_norm = _safe_normalize(q)
      return k, False, q, q_norm / ufuncs.sqrt(2.0)

    _, _, q, q_norm_scaled = while_loop(
        lambda c: ufuncs.logical_and(c[1], c[0] < (max_iterations - 1)), renorm,
        (k, True, q, q_norm_scaled))
    return k + 1, q, r, q_norm_scaled

  def again(carry):
    k, _, r, q_norm_scaled = carry
    _, r_norm = _safe_normalize(r)
    return ufuncs.logical_and(k < (max_iterations - 1), r_norm < q_norm_scaled)

  carry = one_pass((0, v, r, v_norm / ufuncs.sqrt(2.0)))
  _, q, r, _ = while_loop(again, one_pass, carry)
  return q, r


def _arnoldi_step(k, A, M, V, H):  # noqa: N803
  """Extend the Krylov basis V by the orthonormalized M(A(V[:, k])) and record its overlaps
  in row k of H; breakdown (an invariant subspace) leaves a zero vector."""
  dtype, _ = dtypes.result_type(*tree_leaves(V), return_weak_type_flag=True)
  eps = dtypes.finfo(dtype).eps
  v = M(A(tree_map(lambda X: X[..., k], V)))
  _, v_norm0 = _safe_normalize(v)
  v, h = _orthogonalize(V, v, v_norm0)
  unit, v_norm1 = _safe_normalize(v, thresh=eps * v_norm0)
  V = tree_map(lambda X, y: X.at[..., k + 1].set(y), V, unit)  # noqa: N806
  h = h.at[k + 1].set(v_norm1.astype(dtype))
  return V, H.at[k, :].set(h), v_norm1 == 0.


def _rotate(vec, i, cs, sn):
  x, y = vec[i], vec[i + 1]
  return vec.at[i].set(cs.conj() * x - sn.conj() * y).at[i + 1].set(sn * x + cs * y)


def _givens(a, b):
  """(cos, sin) of the rotation that zeroes b against a."""
  b_zero = abs(b) == 0
  swap = abs(a) < abs(b)
  t = -lax_numpy.where(swap, a, b) / lax_numpy.where(swap, b, a)
  r = lax.rsqrt(1 + abs(t) ** 2).astype(t.dtype)
  cs = lax_numpy.where(b_zero, 1, lax_numpy.where(swap, r * t, r))
  sn = lax_numpy.where(b_zero, 0, lax_numpy.where(swap, r, r * t))
  return cs, sn


def _krylov_basis(unit_residual, restart):
  return tree_map(lambda x: padding.pad(x[..., None], ((0, 0),) * x.ndim + ((0, restart),)),
                  unit_residual)


def _finish_restart(A, b, x0, V, y, M):  # noqa: N803
  x = _add(x0, tree_map(lambda X: _dot(X[..., :-1], y), V))
  unit, norm = _safe_normalize(M(_sub(b, A(x))))
  return x, unit, norm


def _gmres_incremental(A, b, x0, unit_residual, residual_norm, ptol, restart, M):  # noqa: N803
  """One restart, with the QR factorization of the Hessenberg matrix updated by Givens
  rotations as the basis grows (so it stops early once the residual estimate is below
  ptol)."""
  V = _krylov_basis(unit_residual, restart)  # noqa: N806
  dtype = dtypes.result_type(*tree_leaves(b))
  R = creation.eye(restart, restart + 1, dtype=dtype)  # noqa: N806
  rotations = creation.zeros((restart, 2), dtype=dtype)
  beta = creation.zeros(restart + 1, dtype=dtype).at[0].set(residual_norm.astype(dtype))

  def step(carry):
    k, _, V, R, beta, rotations = carry  # noqa: N806
    V, H, _ = _arnoldi_step(k, A, M, V, R)  # noqa: N806
    row = loops.fori_loop(0, k, lambda i, row: _rotate(row, i, *rotations[i, :]), H[k, :])
    g = _givens(row[k], row[k + 1])
    rotations = rotations.at[k, :].set(g)
    R = R.at[k, :].set(_rotate(row, k, *g))  # noqa: N806
    beta = _rotate(beta, k, *rotations[k, :])
    return k + 1, abs(beta[k + 1]), V, R, beta, rotations

  _, _, V, R, beta, _ = while_loop(  # noqa: N806
      lambda c: ufuncs.logical_and(c[0] < restart, c[1] > ptol), step,
      (0, residual_norm, V, R, beta, rotations))
  y = scipy_linalg.solve_triangular(R[:, :-1].T, beta[:-1])
  return _finish_restart(A, b, x0, V, y, M)


def _gmres_batched(A, b, x0, unit_residual, residual_norm, ptol, restart, M):  # noqa: N803
  """One restart: the whole Arnoldi basis, then the small least-squares problem solved through
  its normal equations."""
  del ptol
  V = _krylov_basis(unit_residual, restart)  # noqa: N806
  dtype, weak = dtypes.result_type(*tree_leaves(b), return_weak_type_flag=True)
  H = lax._convert_element_type(creation.eye(restart, restart + 1, dtype=dtype),  # noqa: N806
                                weak_type=weak)

  def step(carry):
    V, H, _, k = carry  # noqa: N806
    V, H, breakdown = _arnoldi_step(k, A, M, V, H)  # noqa: N806
    return V, H, breakdown, k + 1

  V, H, _, _ = while_loop(  # noqa: N806
      lambda c: ufuncs.logical_and(c[3] < restart, ufuncs.logical_not(c[2])), step,
      (V, H, False, 0))
  beta = creation.zeros_like(H, shape=(restart + 1,)).at[0].set(residual_norm.astype(dtype))
  Ht = H.T  # noqa: N806
  y = scipy_linalg.solve(_dot(Ht.T.conj(), Ht), _dot(Ht.T.conj(), beta), assume_a="pos")
  return _finish_restart(A, b, x0, V, y, M)


def _gmres(A, b, x0, atol, ptol, restart, maxiter, M, one_restart):  # noqa: N803
  unit, norm = _safe_normalize(M(_sub(b, A(x0))))

  def body(carry):
    x, k, unit, norm = carry
    x, unit, norm = one_restart(A, b, x, unit, norm, ptol, restart, M)
    return x, k + 1, unit, norm

  return while_loop(lambda c: ufuncs.logical_and(c[1] < maxiter, c[3] > atol), body,
                    (x0, 0, unit, norm))[0]


def gmres(A, b, x0=None, *, tol=1e-5, atol=0.0, restart=20, maxiter=None, M=None,  # noqa: N803
          solve_method="batched"):
  """Solve A x = b for general A by restarted GMRES: (x, info), info 0 (or -1 if x has NaNs).

  Converged when |b - A x| <= max(tol |b|, atol); each restart builds a Krylov basis of size
  `restart`, at most `maxiter` restarts (10 * size of b by default). `solve_method`
  'incremental' (Givens QR, early exit) or 'batched' (least squares at the end).
  """
  if x0 is None:
    x0 = tree_map(creation.zeros_like, b)
  if M is None:
    M = _identity  # noqa: N806
  A = _as_matvec(A)  # noqa: N806
  M = _as_matvec(M)  # noqa: N806
  b, x0 = device_put((b, x0))
  size = sum(leaf.size for leaf in tree_leaves(b))
  if maxiter is None:
    maxiter = 10 * size   # SciPy's default
  restart = min(restart, size)
  if tree_structure(x0) != tree_structure(b):
    raise ValueError("x0 and b must have matching tree structure: "
                     f"{tree_structure(x0)} vs {tree_structure(b)}")
  b_norm = _norm(b)
  atol = ufuncs.maximum(tol * b_norm, atol)
  ptol = _norm(M(b)) * ufuncs.minimum(1.0, atol / b_norm)
  if solve_method == "incremental":
    one_restart = _gmres_incremental
  elif solve_method == "batched":
    one_restart = _gmres_batched
  else:
    raise ValueError(f"invalid solve_method {solve_method}, must be either 'incremental' or "
                     "'batched'")

  def solve(A, b):  # noqa: N803
    return _gmres(A, b, x0, atol, ptol, restart, maxiter, M, one_restart)

  x = custom_linear_solve(A, b, solve=solve, transpose_solve=solve)
  info = lax_numpy.where(ufuncs.isnan(_norm(x)), -1, 0)
  return x, info
