"""scipy.linalg.eigh_tridiagonal: eigenvalues of a real symmetric (or complex Hermitian)
tridiagonal matrix by parallel bisection on Sturm sequence counts, as JAX 0.10.2 (the LAPACK
xSTEBZ scheme: Gershgorin bounds, pivmin-guarded pivots, nmant + 1 halvings at most), and
eigenvectors by inverse iteration from random vectors (the LAPACK xSTEIN scheme, as JAX):
each step solves the shifted systems by pivoted elimination with tiny pivots perturbed, and
re-orthonormalizes clusters of close eigenvalues by QR. JAX solves with jaxlib's perturbed
LAPACK-style kernel, whose perturbation rule arrax does not reproduce: the eigenvalues are
JAX's bit for bit and the eigenvectors span the same lines, but a column's sign (which the
near-singular solves decide) can differ from JAX's."""
from __future__ import annotations

import numpy as np

from arrax._src import dtypes, random
from arrax._src.lax import shape_ops
from arrax._src.lax.control_flow.loops import fori_loop, scan
from arrax._src.lax.control_flow.while_loop import while_loop
from arrax._src.numpy import creation, lax_numpy, padding, reductions, searching, ufuncs
from arrax._src.numpy import linalg as jnp_linalg

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


def _solve_shifted(dl, d, du, b):
  """Solve the tridiagonal systems (dl, d, du) x = b, batched over the leading axis, by
  elimination with partial pivoting (LAPACK xGTSV's scheme); pivots below eps * |T| are
  perturbed to that size (keeping their sign) so nearly singular shifted systems give finite
  results."""
  real = dtypes.finfo(d.dtype).dtype
  eps = dtypes.finfo(d.dtype).eps
  scale = ufuncs.maximum(reductions.amax(ufuncs.abs(d), axis=-1),
                         reductions.amax(ufuncs.abs(du), axis=-1))
  tiny = lax_numpy.where(scale > 0, eps * scale, dtypes.finfo(real).tiny).astype(real)

  def guard(p):
    size = ufuncs.abs(p)
    direction = lax_numpy.where(size == 0, 1, p / lax_numpy.where(size == 0, 1, size))
    return lax_numpy.where(size < tiny, direction * tiny, p)

  def eliminate(carry, row):
    a0, a1, r = carry                      # active row: columns i, i + 1; right-hand side
    l_next, d_next, u_next, b_next = row   # row i + 1: columns i, i + 1, i + 2
    swap = ufuncs.abs(a0) < ufuncs.abs(l_next)
    p0 = guard(lax_numpy.where(swap, l_next, a0))
    p1 = lax_numpy.where(swap, d_next, a1)
    p2 = lax_numpy.where(swap, u_next, 0)
    pr = lax_numpy.where(swap, b_next, r)
    o1 = lax_numpy.where(swap, a1, d_next)
    o2 = lax_numpy.where(swap, 0, u_next)
    orr = lax_numpy.where(swap, r, b_next)
    m = lax_numpy.where(swap, a0, l_next) / p0
    return (o1 - m * p1, o2 - m * p2, orr - m * pr), (p0, p1, p2, pr)

  rows = tuple(lax_numpy.moveaxis(v[..., 1:], -1, 0) for v in (dl, d, du, b))
  (a0, _, r), (u0, u1, u2, rhs) = scan(eliminate, (d[..., 0], du[..., 0], b[..., 0]), rows)
  last = r / guard(a0)

  def back(carry, row):
    x1, x2 = carry
    p0, p1, p2, pr = row
    x = (pr - p1 * x1 - p2 * x2) / p0
    return (x, x1), x

  _, xs = scan(back, (last, creation.zeros_like(last)), (u0, u1, u2, rhs), reverse=True)
  return lax_numpy.concatenate([lax_numpy.moveaxis(xs, 0, -1), last[..., None]], axis=-1)


def _eigenvectors(alpha, beta, eigvals, key):
  """Inverse iteration for all eigenvectors at once (rows), clusters re-orthonormalized."""
  n, k = alpha.shape[0], eigvals.shape[0]
  dl = padding.pad(ufuncs.conj(beta), (1, 0))
  du = padding.pad(beta, (0, 1))
  gap = eigvals[1:] - eigvals[:-1]
  eps = np.finfo(eigvals.dtype).eps
  gaptol = np.sqrt(eps) * ufuncs.maximum(ufuncs.abs(eigvals[0]), ufuncs.abs(eigvals[-1]))
  close = gap < gaptol
  left = padding.pad(close, (1, 0), constant_values=False)
  right = padding.pad(close, (0, 1), constant_values=False)
  starts_mask = ufuncs.logical_and(ufuncs.logical_not(left), right)
  ends_mask = ufuncs.logical_and(left, ufuncs.logical_not(right))
  max_clusters = k // 2 + 1
  starts = searching.nonzero(starts_mask, size=max_clusters)[0]
  ends = searching.nonzero(ends_mask, size=max_clusters)[0] + 1
  num_clusters = reductions.sum(starts_mask)
  ks = creation.arange(k)
  solve_dtype = np.result_type(alpha.dtype, beta.dtype)
  base = np.finfo(solve_dtype).dtype
  v = random.normal(key, (k, n), dtype=base).astype(solve_dtype)
  v = v / jnp_linalg.norm(v, axis=-1, keepdims=True).astype(solve_dtype)

  def orthonormalize(ev):
    def cluster(i, ev):
      start, stop = starts[i], ends[i]
      block = shape_ops.dynamic_slice(padding.pad(ev, ((0, k), (0, 0))), (start, 0), (k, n))
      mask = (ks < stop - start).astype(ev.dtype)
      q, _ = jnp_linalg.qr((block * mask[:, None]).T)
      update = shape_ops.dynamic_update_slice(creation.zeros((2 * k, n), dtype=ev.dtype),
                                              q.T * mask[:, None], (start, 0))[:k, :]
      inside = (ks >= start) & (ks < stop)
      return lax_numpy.where(inside[:, None], update, ev)

    return fori_loop(0, num_clusters, cluster, ev)

  shifted = (alpha[None, :] - eigvals[:, None]).astype(solve_dtype)
  dl_k = lax_numpy.broadcast_to(dl[None, :], (k, n)).astype(solve_dtype)
  du_k = lax_numpy.broadcast_to(du[None, :], (k, n)).astype(solve_dtype)

  def step(state):
    i, v, norm, _ = state
    w = _solve_shifted(dl_k, shifted, du_k, v.astype(solve_dtype))
    w_norm = jnp_linalg.norm(w, axis=-1, keepdims=True)
    w = orthonormalize(w / w_norm.astype(w.dtype))
    return i + 1, w, w_norm[:, 0], norm

  def more(state):
    i, _, norm, old = state
    return ufuncs.logical_and(i < 5, reductions.any(norm >= 1.1 * old))   # xSTEIN: 5 steps

  return while_loop(more, step, (0, v, creation.ones(k, dtype=eigvals.dtype),
                                 creation.zeros(k, dtype=eigvals.dtype)))[1]


def eigh_tridiagonal(d, e, *, eigvals_only=False, select="a", select_range=None, tol=None,
                     key=None):
  """Eigenvalues of the symmetric tridiagonal matrix with diagonal d (N,) and off-diagonal
  e (N - 1,), ascending. select='a' (all) or 'i' (indices select_range[0]..[1]); `tol` is an
  absolute tolerance. Unless eigvals_only, also the eigenvectors (columns), by inverse
  iteration from random vectors drawn with `key` (default random.key(42), as JAX)."""
  if not eigvals_only and key is None:
    key = random.key(42)
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
  n = alpha.shape[0]
  if n <= 1:
    if eigvals_only:
      return ufuncs.real(alpha)
    return ufuncs.real(alpha), creation.eye(n, dtype=alpha.dtype)
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

  eigvals = while_loop(cond, body, (0, lower, mid, upper))[2]
  if eigvals_only:
    return eigvals
  return eigvals, _eigenvectors(alpha, beta, eigvals, key).T
