"""scipy.linalg.eigh_tridiagonal: eigenvalues of a real symmetric (or complex Hermitian)
tridiagonal matrix by parallel bisection on Sturm sequence counts, as JAX 0.10.2 (the LAPACK
xSTEBZ scheme: Gershgorin bounds, pivmin-guarded pivots, nmant + 1 halvings at most).
Eigenvectors are not computed (see `eigh_tridiagonal`)."""
from __future__ import annotations

import numpy as np

from arrax._src import dtypes
from arrax._src.lax.control_flow.loops import fori_loop
from arrax._src.lax.control_flow.while_loop import while_loop
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs

__all__ = ["eigh_tridiagonal"]


def _sturm_counts(alpha, beta_sq, pivmin, alpha0_perturbation, x):
  """For each shift x, the number of eigenvalues below x (the negative pivots of the LDL^T
  factorization of T - x I)."""
  n = alpha.shape[0]
  q = alpha[0] - x
  count = lax_numpy.where(q < 0, 1, 0).astype(np.int32)
  q = lax_numpy.where(alpha[0] == x, alpha0_perturbation, q)

  def step(i, carry):
    q, count = carry
    q = alpha[i] - beta_sq[i - 1] / q - x
    small = q <= pivmin
    return (lax_numpy.where(small, ufuncs.minimum(q, -pivmin), q),
            lax_numpy.where(small, count + 1, count))

  return fori_loop(1, n, step, (q, count))[1]


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None,
                     key=None):
  """Eigenvalues of the symmetric tridiagonal matrix with diagonal d (N,) and off-diagonal
  e (N - 1,), ascending. select='a' (all) or 'i' (indices select_range[0]..[1]); `tol` is an
  absolute tolerance. Only eigvals_only=True is supported (eigenvectors raise
  NotImplementedError)."""
  del key
  alpha = creation.asarray(d)
  beta = creation.asarray(e)
  supported = (np.float32, np.float64, np.complex64, np.complex128)
  if alpha.dtype != beta.dtype:
    raise TypeError("diagonal and off-diagonal values must have same dtype, "
                    f"got {alpha.dtype} and {beta.dtype}")
  if alpha.dtype not in supported or beta.dtype not in supported:
    raise TypeError("Only float32 and float64 inputs are supported as inputs to "
                    "jax.scipy.linalg.eigh_tridiagonal, got "
                    f"{alpha.dtype} and {beta.dtype}")
  if not eigvals_only:
    raise NotImplementedError(
        "arrax's eigh_tridiagonal computes eigenvalues only: pass eigvals_only=True.")
  n = alpha.shape[0]
  if n <= 1:
    return ufuncs.real(alpha)
  if dtypes.issubdtype(alpha.dtype, np.complexfloating):
    alpha = ufuncs.real(alpha)
    beta_sq = ufuncs.real(beta * ufuncs.conj(beta))
    beta_abs = ufuncs.sqrt(beta_sq)
  else:
    beta_abs = ufuncs.abs(beta)
    beta_sq = ufuncs.square(beta)

  # Gershgorin bounds of the spectrum
  row_sums = lax_numpy.concatenate([beta_abs[:1], beta_abs[:-1] + beta_abs[1:], beta_abs[-1:]],
                                   axis=0)
  est_max = reductions.amax(alpha + row_sums)
  est_min = reductions.amin(alpha - row_sums)
  t_norm = ufuncs.maximum(ufuncs.abs(est_min), ufuncs.abs(est_max))

  # the smallest pivot allowed in the Sturm recurrence (no overflow)
  finfo = np.finfo(alpha.dtype)
  one = np.ones([], dtype=alpha.dtype)
  safemin = np.maximum(one / finfo.max, (one + finfo.eps) * finfo.tiny)
  pivmin = safemin * ufuncs.maximum(1, reductions.amax(beta_sq))
  alpha0_perturbation = ufuncs.square(finfo.eps * beta_abs[0])
  abs_tol = finfo.eps * t_norm
  if tol is not None:
    abs_tol = ufuncs.maximum(tol, abs_tol)
  max_it = finfo.nmant + 1   # enough halvings to reach eps * t_norm

  if select == "a":
    targets = creation.arange(n, dtype=np.int32)
  elif select == "i":
    if select_range is None:
      raise ValueError("for select='i', select_range must be specified.")
    if select_range[0] > select_range[1]:
      raise ValueError("Got empty index range in select_range.")
    targets = creation.arange(select_range[0], select_range[1] + 1, dtype=np.int32)
  elif select == "v":
    raise NotImplementedError("eigh_tridiagonal(..., select='v') is not implemented")
  else:
    raise ValueError("'select must have a value in {'a', 'i', 'v'}.")

  # bisect every wanted eigenvalue at once, from a slightly widened Gershgorin interval
  fudge = 2.1
  slack = creation.array(n, alpha.dtype) * fudge * finfo.eps * t_norm
  shape = np.shape(targets)
  lower = lax_numpy.broadcast_to(est_min - slack - 2 * fudge * pivmin, shape)
  upper = lax_numpy.broadcast_to(est_max + slack + fudge * pivmin, shape)
  mid = 0.5 * (upper + lower)
  pivmin = lax_numpy.broadcast_to(pivmin, shape)
  alpha0_perturbation = lax_numpy.broadcast_to(alpha0_perturbation, shape)

  def cond(carry):
    i, lower, _, upper = carry
    return ufuncs.logical_and(i < max_it, abs_tol < reductions.amax(upper - lower))

  def body(carry):
    i, lower, mid, upper = carry
    counts = _sturm_counts(alpha, beta_sq, pivmin, alpha0_perturbation, mid)
    lower = lax_numpy.where(counts <= targets, mid, lower)
    upper = lax_numpy.where(counts > targets, mid, upper)
    return i + 1, lower, 0.5 * (lower + upper), upper

  return while_loop(cond, body, (0, lower, mid, upper))[2]
