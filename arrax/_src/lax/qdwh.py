"""QDWH (QR-based dynamically weighted Halley iteration): the polar decomposition x = u h of a
tall matrix, as `jax.lax.linalg.qdwh`.

The weights (a, b, c) of each step follow from the running lower bound l of the smallest
singular value of the scaled iterate, computed on the host: steps with large c solve through a
QR factorization, the others through a Cholesky factorization; once l reaches 1, Halley steps
(a, b, c) = (3, 1, 3) continue until the iterate stops moving. A final Newton-Schulz step
polishes u; h = (uᴴ x + (uᴴ x)ᴴ) / 2.
"""
from __future__ import annotations

import numpy as np

from arrax._src import dtypes
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax, reductions, shape_ops
from arrax._src.lax import linalg as _la
from arrax._src.lax.control_flow import fori_loop, while_loop
from arrax._src.lax.utils import asarray_operand

__all__ = ["qdwh"]

_CHOLESKY_CUTOFF = 100


def _bcast(s, like):
  """Scalar s (a Python number or a rank-0 array) broadcast to the shape and dtype of `like`."""
  if isinstance(s, (int, float)):
    s = lax.scalar_literal(s, _la._dtype(like))
  else:
    s = _la._astype(s, _la._dtype(like))
  return shape_ops.broadcast_in_dim(s, _la._shape(like), ())


def _scale(s, x):
  return lax.mul(_bcast(s, x), x)


def _mask(x, dims, alternative=None):
  """x inside the leading `dims` sizes (ints or traced scalars; None: all), else
  `alternative` (zeros by default)."""
  shape = _la._shape(x)
  mask = None
  for i, d in enumerate(dims):
    if d is None or (isinstance(d, int) and d == shape[i]):
      continue
    d = shape_ops.broadcast_in_dim(_la._astype(asarray_operand(d), np.int32), shape, ())
    inside = lax.lt(shape_ops.broadcasted_iota(np.int32, shape, i), d)
    mask = inside if mask is None else lax.bitwise_and(mask, inside)
  if mask is None:
    return x
  other = _la._zeros_like(x) if alternative is None else alternative
  return lax.select(mask, x, other)


def _abs2_sum(x):
  ax = lax.abs(x)
  return reductions.reduce_sum(lax.mul(ax, ax), tuple(range(_la._ndim(x))))


def _fro_norm(x):
  return lax.sqrt(_abs2_sum(x))


def _qr_step(u, m, n, params):
  """One weighted step through a QR factorization of [√c u; I]."""
  a_minus_e_by_sqrt_c, sqrt_c, e = params
  big_m, big_n = _la._shape(u)
  eye = _la._eye(big_n, big_n, _la._dtype(u))
  top = _scale(sqrt_c, u)
  if isinstance(m, int) and m == big_m:
    y = shape_ops.concatenate([top, eye], 0)
  else:
    padded = shape_ops.concatenate([top, _la._zeros_like(eye)], 0)
    y = shape_ops.dynamic_update_slice_in_dim(padded, eye, m, 0)
  q, _ = _la.qr(y, full_matrices=False)
  q1 = _mask(shape_ops.slice(q, (0, 0), (big_m, big_n)), (m, n))
  q2 = _mask(shape_ops.dynamic_slice_in_dim(q, m, big_n, axis=0), (n, n))
  return lax.add(_scale(e, u), _scale(a_minus_e_by_sqrt_c, _la._mm(q1, _la._H(q2))))


def _cholesky_step(u, m, n, params):
  """One weighted step through a Cholesky factorization of c uᴴ u + I."""
  a_minus_e, c, e = params
  big_n = _la._shape(u)[1]
  eye = _la._eye(big_n, big_n, _la._dtype(u))
  x = lax.add(_scale(c, _la._mm(_la._H(u), u)), eye)
  x = _mask(x, (n, n), eye)
  y = _la.cholesky(x, symmetrize_input=False)
  z = _la._conj(_la.triangular_solve(y, _la._T(u), left_side=True, lower=True,
                                     conjugate_a=True))
  z = _la._H(_la.triangular_solve(y, z, left_side=True, lower=True, transpose_a=True,
                                  conjugate_a=True))
  return lax.add(_scale(e, u), _scale(a_minus_e, z))


def _weights(max_iterations, eps):
  """The host-side schedule: lists of (QR step, Cholesky step) parameters."""
  tol_l = 10.0 * eps / 2.0
  lo, k = eps, 0
  qr_coefs, chol_coefs = [], []
  while lo + tol_l < 1 and k < max_iterations:
    k += 1
    l2 = lo * lo
    dd = (4 * (1 / l2 - 1) / l2) ** (1 / 3)
    sqd = (1.0 + dd) ** (1 / 2)
    a = sqd + (2 - dd + 2 * (2 - l2) / (l2 * sqd)) ** (1 / 2)
    b = (a - 1) ** 2 / 4
    c = a + b - 1
    lo = lo * (a + b * l2) / (1 + c * l2)
    e = b / c
    if c > _CHOLESKY_CUTOFF:
      qr_coefs.append(((a - e) / c ** (1 / 2), c ** (1 / 2), e))
    else:
      chol_coefs.append((a - e, c, e))
  return qr_coefs, chol_coefs, tol_l


def _qdwh(x, m, n, max_iterations, eps):
  dtype = _la._dtype(x)
  if eps is None:
    eps = float(dtypes.finfo(dtype).eps)
  real = _la._real_dtype(dtype)
  abs_x = lax.abs(x)
  one_norm = reductions.reduce_max(reductions.reduce_sum(abs_x, (0,)), (0,))
  inf_norm = reductions.reduce_max(reductions.reduce_sum(abs_x, (1,)), (0,))
  alpha_inv = lax.mul(lax.rsqrt(one_norm), lax.rsqrt(inf_norm))
  alpha_inv = lax.select(lax.eq(one_norm, lax.scalar_literal(0, real)),
                         lax.scalar_literal(1, real), alpha_inv)
  u = _scale(alpha_inv, x)

  qr_coefs, chol_coefs, tol_l = _weights(max_iterations, eps)
  tol_norm = lax.scalar_literal(np.cbrt(np.asarray(tol_l, real)), real)

  def run(u, coefs, step, test):
    if not coefs:
      return u, lax.scalar_literal(True, np.bool_)
    table = np.asarray(coefs, np.float64).astype(dtype)

    def body(i, state):
      u, _ = state
      row = shape_ops.dynamic_index_in_dim(table, i, 0, keepdims=False)
      params = [shape_ops.reshape(shape_ops.slice_in_dim(row, j, j + 1), ()) for j in range(3)]
      new = step(u, m, n, params)
      moving = (lax.gt(_fro_norm(lax.sub(new, u)), tol_norm) if test
                else lax.scalar_literal(True, np.bool_))
      return new, moving
    return fori_loop(0, len(coefs), body, (u, lax.scalar_literal(True, np.bool_)))

  u, _ = run(u, qr_coefs, _qr_step, False)
  u, moving = run(u, chol_coefs, _cholesky_step, True)

  halley = (3 - 1 / 3, 3, 1 / 3)

  def cond(state):
    k, _, moving = state
    return lax.bitwise_and(moving, lax.lt(k, lax.scalar_literal(max_iterations, _la._dtype(k),
                                                                weak_type=True)))

  def body(state):
    k, u, _ = state
    new = _cholesky_step(u, m, n, halley)
    return (lax.add(k, lax.scalar_literal(1, _la._dtype(k), weak_type=True)), new,
            lax.gt(_fro_norm(lax.sub(new, u)), tol_norm))

  k0 = asarray_operand(len(qr_coefs) + len(chol_coefs))   # weak, of the default int type
  num_iters, u, moving = while_loop(cond, body, (k0, u, moving))

  u = lax.sub(_scale(1.5, u), _scale(0.5, _la._mm(u, _la._mm(_la._H(u), u))))
  h = _la._mm(_la._H(u), x)
  h = _scale(0.5, lax.add(h, _la._H(h)))
  return u, h, num_iters, lax.bitwise_not(moving)


def qdwh(x, *, is_hermitian=False, max_iterations=None, eps=None, dynamic_shape=None):
  """Polar decomposition x = u h of a full-rank x [M, N], M >= N, by QDWH iteration.

  Returns (u, h, num_iters, is_converged): u with orthonormal columns, h Hermitian positive
  semidefinite, the number of iterations run, and whether the iterate converged within
  `max_iterations` (default 10). `eps` sets the tolerance (default: the dtype's machine
  epsilon); `dynamic_shape` (m, n) treats x as an m x n matrix padded to M x N.
  `is_hermitian` is accepted and unused.
  """
  del is_hermitian
  max_iterations = 10 if max_iterations is None else int(max_iterations)
  x = asarray_operand(x)
  big_m, big_n = _la._shape(x)
  if big_m < big_n:
    raise ValueError("The input matrix of shape M x N must have M >= N.")
  if dynamic_shape is not None:
    m, n = dynamic_shape
    x = _mask(x, (m, n))
  else:
    m, n = big_m, big_n
  return _qdwh(x, m, n, max_iterations, eps)


qdwh = jit(qdwh, static_argnames=("is_hermitian", "max_iterations", "eps"))
