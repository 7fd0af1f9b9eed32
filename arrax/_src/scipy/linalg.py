"""arrax.scipy.linalg: SciPy's dense linear algebra over the lax.linalg primitives.

The factorizations wrap lax.linalg (LAPACK on CPU); `expm` is Higham's Pade scaling and
squaring (degree chosen from the 1-norm, then a rolled loop of conditional squarings), so it is
differentiable and `expm_frechet` is its JVP. The special matrices (toeplitz, pascal, ...) are
short jnp programs, vectorized over leading axes as JAX's are.
"""
from __future__ import annotations

import warnings
from functools import partial

import numpy as np

from arrax._src import dtypes
from arrax._src.ad_api import jvp
from arrax._src.batching import vmap
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax
from arrax._src.lax import linalg as lax_linalg
from arrax._src.lax import linalg_schur as lax_schur
from arrax._src.lax import shape_ops as slicing_ops
from arrax._src.lax import solvers
from arrax._src.lax.control_flow import conditionals, loops
from arrax._src.numpy import (assembly, creation, index_tricks, lax_numpy, reductions,
                              searching, ufuncs)
from arrax._src.numpy import linalg as jnp_linalg
from arrax._src.numpy.util import promote_dtypes_inexact
from arrax._src.numpy.vectorize import vectorize
from arrax._src.scipy.special import promote_args_inexact

_HIGHEST = lax_dot.Precision.HIGHEST
_dot = partial(lax_numpy.matmul, precision=_HIGHEST)


def _asarray(x):
  return creation.asarray(x)


# ---- Cholesky --------------------------------------------------------------------------------
@jit(static_argnames=("lower",))
def _cholesky(a, lower):
  a, = promote_dtypes_inexact(_asarray(a))
  factor = lax_linalg.cholesky(a if lower else ufuncs.conj(a.mT), symmetrize_input=False)
  return factor if lower else ufuncs.conj(factor.mT)


def cholesky(a, lower=False, overwrite_a=False, check_finite=True):
  """The Cholesky factor of Hermitian positive-definite a: upper U (a = Uᴴ U) or lower L."""
  del overwrite_a, check_finite
  return _cholesky(a, lower)


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
  """(factor, lower): the Cholesky factor in the form cho_solve takes."""
  del overwrite_a, check_finite
  return (cholesky(a, lower=lower), lower)


def _solve_signature(name, a, b, extra=""):
  """The vectorize signature of a solve: b [n] (vector), or [n, k]; batched 1-D is deprecated."""
  vec = f"(n,n),{extra}(n)->(n)"
  if b.ndim == 1:
    return vec
  if a.ndim == b.ndim + 1 and a.shape[-1] == b.shape[-1]:
    warnings.warn(
        f"jax.scipy.linalg.{name}: batched 1D solves with b.ndim > 1 are deprecated, and in "
        "the future will be treated as a batched 2D solve. Use "
        f"{name}(..., b[..., None]).squeeze(-1) to avoid this warning.",
        category=FutureWarning)
    return vec
  return f"(n,n),{extra}(n,k)->(n,k)"


def _on_columns(solve, b):
  """solve(b) for b [n, k]; a vector b [n] is solved as one column."""
  return solve(b[:, None])[:, 0] if b.ndim == 1 else solve(b)


def _tri_solve(a, b, **kw):
  """triangular_solve on the left for b [n] or [n, k]."""
  return _on_columns(partial(lax_linalg.triangular_solve, a, left_side=True, **kw), b)


@jit(static_argnames=("lower",))
def _cho_solve(c, b, lower):
  c, b = promote_dtypes_inexact(_asarray(c), _asarray(b))
  sig = _solve_signature("cho_solve", c, b)
  b = vectorize(partial(_tri_solve, lower=lower, transpose_a=not lower, conjugate_a=not lower),
                signature=sig)(c, b)
  return vectorize(partial(_tri_solve, lower=lower, transpose_a=lower, conjugate_a=lower),
                   signature=sig)(c, b)


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
  """x with a x = b, from cho_factor(a) = (c, lower)."""
  del overwrite_b, check_finite
  c, lower = c_and_lower
  return _cho_solve(c, b, lower)


# ---- SVD, det, eigh, inv -----------------------------------------------------------------------
@jit(static_argnames=("full_matrices", "compute_uv"))
def _svd(a, *, full_matrices, compute_uv):
  a, = promote_dtypes_inexact(_asarray(a))
  return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def svd(a, full_matrices=True, compute_uv=True, overwrite_a=False, check_finite=True,
        lapack_driver="gesdd"):
  """Singular value decomposition: (u, s, vh) with a = u diag(s) vh, or s."""
  del overwrite_a, check_finite, lapack_driver
  return _svd(a, full_matrices=full_matrices, compute_uv=compute_uv)


def det(a, overwrite_a=False, check_finite=True):
  """The determinant of square matrices a [..., n, n]."""
  del overwrite_a, check_finite
  return jnp_linalg.det(a)


@jit(static_argnames=("lower", "eigvals_only", "eigvals", "type"))
def _eigh(a, b, lower, eigvals_only, eigvals, type):  # noqa: A002
  if b is not None:
    raise NotImplementedError("Only the b=None case of eigh is implemented")
  if type != 1:
    raise NotImplementedError("Only the type=1 case of eigh is implemented.")
  if eigvals is not None:
    raise NotImplementedError("Only the eigvals=None case of eigh is implemented.")
  a, = promote_dtypes_inexact(_asarray(a))
  v, w = lax_linalg.eigh(a, lower=lower)
  return w if eigvals_only else (w, v)


def eigh(a, b=None, lower=True, eigvals_only=False, overwrite_a=False, overwrite_b=False,
         turbo=True, eigvals=None, type=1, check_finite=True):  # noqa: A002
  """Eigenvalues (ascending) and eigenvectors of Hermitian a: (w, v), or w."""
  del overwrite_a, overwrite_b, turbo, check_finite
  return _eigh(a, b, lower, eigvals_only, eigvals, type)


def inv(a, overwrite_a=False, check_finite=True):
  """The inverse of square matrices a [..., n, n]."""
  del overwrite_a, check_finite
  return jnp_linalg.inv(a)


# ---- LU --------------------------------------------------------------------------------------
@jit(static_argnames=("overwrite_a", "check_finite"))
def lu_factor(a, overwrite_a=False, check_finite=True):
  """(lu, piv): packed LU factors and LAPACK's row swaps, for lu_solve."""
  del overwrite_a, check_finite
  a, = promote_dtypes_inexact(_asarray(a))
  lu_, pivots, _ = lax_linalg.lu(a)
  return lu_, pivots


def _lu_solve_one(lu_, perm, b, trans):
  return _on_columns(lambda cols: lax_linalg._lu_solve_perm(lu_, perm, cols, trans), b)


@jit(static_argnames=("trans", "overwrite_b", "check_finite"))
def lu_solve(lu_and_piv, b, trans=0, overwrite_b=False, check_finite=True):
  """x with a x = b (trans 0), aᵀ x = b (1) or aᴴ x = b (2), from lu_factor(a)."""
  del overwrite_b, check_finite
  lu_, pivots = lu_and_piv
  lu_, b = promote_dtypes_inexact(_asarray(lu_), _asarray(b))
  perm = lax_linalg.lu_pivots_to_permutation(pivots, lu_.shape[-2])
  sig = _solve_signature("lu_solve", lu_, b, extra="(n),")
  return vectorize(partial(_lu_solve_one, trans=trans), signature=sig)(lu_, perm, b)


@jit(static_argnums=(1,))
def _lu(a, permute_l):
  a, = promote_dtypes_inexact(_asarray(a))
  lu_, _, perm = lax_linalg.lu(a)
  dtype = a.dtype
  m, n = np.shape(a)
  p = ufuncs.real(creation.array(perm[None, :] == creation.arange(m, dtype=perm.dtype)[:, None],
                                 dtype=dtype))
  k = min(m, n)
  lower = index_tricks.tril(lu_, -1)[:, :k] + creation.eye(m, k, dtype=dtype)
  upper = index_tricks.triu(lu_)[:k, :]
  if permute_l:
    return _dot(p, lower), upper
  return p, lower, upper


@jit(static_argnames=("permute_l", "overwrite_a", "check_finite"))
def lu(a, permute_l=False, overwrite_a=False, check_finite=True):
  """LU decomposition a = p l u of a 2-D matrix: (p, l, u), or (p l, u) with permute_l."""
  del overwrite_a, check_finite
  return _lu(a, permute_l)


# ---- QR --------------------------------------------------------------------------------------
@jit(static_argnames=("mode", "pivoting"))
def _qr(a, mode, pivoting):
  if mode in ("full", "r"):
    full_matrices = True
  elif mode == "economic":
    full_matrices = False
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'")
  a, = promote_dtypes_inexact(_asarray(a))
  q, r, *p = lax_linalg.qr(a, pivoting=pivoting, full_matrices=full_matrices)
  if mode == "r":
    return (r, p[0]) if pivoting else (r,)
  return (q, r, p[0]) if pivoting else (q, r)


def qr(a, overwrite_a=False, lwork=None, mode="full", pivoting=False, check_finite=True):
  """QR decomposition: (q, r) ('full', 'economic'), (r,) ('r'), with pivots if `pivoting`."""
  del overwrite_a, lwork, check_finite
  return _qr(a, mode, pivoting)


def qr_multiply(a, c, mode="right", pivoting=False, conjugate=False, overwrite_a=False,
                overwrite_c=False):
  """The product of a's Q factor with c: (c Q or Q c, r[, p]), without forming Q in full."""
  del overwrite_a, overwrite_c
  a, c = promote_dtypes_inexact(_asarray(a), _asarray(c))
  if mode not in ("right", "left"):
    raise ValueError(f"mode must be 'right' or 'left', got {mode!r}")
  onedim = c.ndim == 1
  if onedim:
    c = c[:, None] if mode == "left" else c[None, :]
  m, n = a.shape[-2:]
  k = min(m, n)
  if mode == "left" and c.shape[-2] != k:
    raise ValueError(f"Array shapes are not compatible for Q @ c operation: a has shape "
                     f"{tuple(a.shape)} so Q has {k} columns, but c has {c.shape[-2]} rows "
                     f"(expected {k}).")
  if mode == "right" and c.shape[-1] != m:
    raise ValueError(f"Array shapes are not compatible for c @ Q operation: a has shape "
                     f"{tuple(a.shape)} so Q has {m} rows, but c has {c.shape[-1]} columns "
                     f"(expected {m}).")
  batch = lax_numpy.broadcast_shapes(a.shape[:-2], c.shape[:-2])
  a = lax_numpy.broadcast_to(a, batch + a.shape[-2:])
  c = lax_numpy.broadcast_to(c, batch + c.shape[-2:])
  p = None
  if pivoting:
    r, p, taus = lax_linalg.geqp3(a, creation.zeros(a.shape[:-2] + (n,), dtype=np.int32))
    p = p - 1
  else:
    r, taus = lax_linalg.geqrf(a)
  q = lax_linalg.householder_product(r[..., :, :k], taus)   # the thin Q, [..., m, k]
  if conjugate:
    q = ufuncs.conj(q)
  cq = _dot(q, c) if mode == "left" else _dot(c, q)
  if onedim:
    cq = cq.ravel()
  r = index_tricks.triu(r[..., :k, :])
  return (cq, r, p) if pivoting else (cq, r)


# ---- solves ----------------------------------------------------------------------------------
def _matvec(a, x):
  """a @ x for x [..., n] with a's batch axes broadcast."""
  return _dot(a, x[..., None])[..., 0]


@jit(static_argnames=("assume_a", "lower"))
def _solve(a, b, assume_a, lower):
  if assume_a != "pos":
    return jnp_linalg.solve(a, b)
  a, b = promote_dtypes_inexact(_asarray(a), _asarray(b))
  if a.ndim < 2 or a.shape[-1] != a.shape[-2]:
    raise ValueError(f"The first input to solve must be a square matrix. Got shape "
                     f"{a.shape}.")
  factors = cho_factor(lax.stop_gradient(a), lower=lower)
  custom_solve = partial(solvers.custom_linear_solve, lambda x: _matvec(a, x),
                         solve=lambda _, x: cho_solve(factors, x), symmetric=True)
  if a.ndim == b.ndim + 1:
    return custom_solve(b)
  return vmap(custom_solve, b.ndim - 1, max(a.ndim, b.ndim) - 1)(b)


def solve(a, b, lower=False, overwrite_a=False, overwrite_b=False, debug=False,
          check_finite=True, assume_a="gen"):
  """x with a x = b; assume_a='pos' uses a Cholesky factorization."""
  del overwrite_a, overwrite_b, debug, check_finite
  valid = ["gen", "sym", "her", "pos"]
  if assume_a not in valid:
    raise ValueError(f"Expected assume_a to be one of {valid}; got {assume_a!r}")
  return _solve(a, b, assume_a, lower)


@jit(static_argnames=("trans", "lower", "unit_diagonal"))
def _solve_triangular(a, b, trans, lower, unit_diagonal):
  if trans == 0 or trans == "N":
    transpose_a, conjugate_a = False, False
  elif trans == 1 or trans == "T":
    transpose_a, conjugate_a = True, False
  elif trans == 2 or trans == "C":
    transpose_a, conjugate_a = True, True
  else:
    raise ValueError(f"Invalid 'trans' value {trans}")
  a, b = promote_dtypes_inexact(_asarray(a), _asarray(b))
  sig = _solve_signature("solve_triangular", a, b)
  return vectorize(partial(_tri_solve, lower=lower, transpose_a=transpose_a,
                           conjugate_a=conjugate_a, unit_diagonal=unit_diagonal),
                   signature=sig)(a, b)


def solve_triangular(a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False,
                     debug=None, check_finite=True):
  """x with a x = b for triangular a (trans: 0/'N', 1/'T' aᵀ, 2/'C' aᴴ)."""
  del overwrite_b, debug, check_finite
  return _solve_triangular(a, b, trans, lower, unit_diagonal)


# ---- matrix exponential ----------------------------------------------------------------------
# Pade numerator coefficients b_0..b_m of degrees 3, 5, 7, 9, 13 (Higham 2005, table 2.3).
_PADE = {
    3: (120., 60., 12., 1.),
    5: (30240., 15120., 3360., 420., 30., 1.),
    7: (17297280., 8648640., 1995840., 277200., 25200., 1512., 56., 1.),
    9: (17643225600., 8821612800., 2075673600., 302702400., 30270240., 2162160., 110880.,
        3960., 90., 1.),
    13: (64764752532480000., 32382376266240000., 7771770303897600., 1187353796428800.,
         129060195264000., 10559470521600., 670442572800., 33522128640., 1323241920.,
         40840800., 960960., 16380., 182., 1.),
}


def _precise_dot(x, y):
  return lax_numpy.dot(x, y, precision=_HIGHEST)


def _weighted_sum(coefs, mats, first=None):
  """first + coefs[0] mats[0] + coefs[1] mats[1] + ..., added left to right."""
  total = coefs[0] * mats[0] if first is None else first + coefs[0] * mats[0]
  for c, m in zip(coefs[1:], mats[1:]):
    total = total + c * m
  return total


def _pade(degree):
  """(u, v) of the degree-`degree` Pade approximant at a: u the odd part of its numerator, v
  the even part (numerator u + v, denominator -u + v)."""
  b = _PADE[degree]

  def uv(a):
    rows, cols = a.shape
    ident = creation.eye(rows, cols, dtype=a.dtype)
    a2 = _precise_dot(a, a)
    if degree == 13:   # a^8, a^10, a^12 through one more product with a^6
      a4 = _precise_dot(a2, a2)
      a6 = _precise_dot(a4, a2)
      u_high = _precise_dot(a6, _weighted_sum((b[13], b[11], b[9]), (a6, a4, a2)))
      u = _precise_dot(a, _weighted_sum((b[7], b[5], b[3], b[1]), (a6, a4, a2, ident),
                                        first=u_high))
      v_high = _precise_dot(a6, _weighted_sum((b[12], b[10], b[8]), (a6, a4, a2)))
      v = _weighted_sum((b[6], b[4], b[2], b[0]), (a6, a4, a2, ident), first=v_high)
      return u, v
    evens = [ident, a2]   # a^0, a^2, a^4 = a^2 a^2, a^6 = a^4 a^2, a^8 = a^6 a^2
    while len(evens) <= degree // 2:
      evens.append(_precise_dot(evens[-1], a2))
    high_first = evens[::-1]
    u = _precise_dot(a, _weighted_sum(b[degree::-2], high_first))
    v = _weighted_sum(b[degree - 1::-2], high_first)
    return u, v
  uv.__name__ = f"_pade{degree}"
  return uv


_PADE_FNS = {d: _pade(d) for d in _PADE}


@jit
def _calc_P_Q(a):   # (JAX's name, which jaxprs print)
  a_l1 = jnp_linalg.norm(a, 1)
  if a.dtype in (np.float64, np.complex128):
    maxnorm, conds, degrees = 5.371920351148152, (1.495585217958292e-002, 2.539398330063230e-001,
                                                  9.504178996162932e-001,
                                                  2.097847961257068e+000), (3, 5, 7, 9, 13)
  elif a.dtype in (np.float32, np.complex64):
    maxnorm, conds, degrees = 3.925724783138660, (4.258730016922831e-001,
                                                  1.880152677804762e+000), (3, 5, 7)
  else:
    raise TypeError(f"A.dtype={a.dtype} is not supported.")
  n_squarings = ufuncs.maximum(0, ufuncs.floor(ufuncs.log2(a_l1 / maxnorm)))
  a = a / (2 ** n_squarings.astype(a.dtype))
  idx = searching.digitize(a_l1, creation.array(conds, dtype=a_l1.dtype))
  u, v = conditionals.switch(idx, [_PADE_FNS[d] for d in degrees], a)
  return u + v, -u + v, n_squarings


def _solve_P_Q(p, q, upper_triangular):
  """r = q⁻¹ p, the Pade approximant at the scaled matrix."""
  return solve_triangular(q, p) if upper_triangular else jnp_linalg.solve(q, p)


@jit(static_argnums=2)
def _squaring(r, n_squarings, max_squarings):
  """r squared n_squarings times: a rolled loop of max_squarings conditional squarings."""
  def step(c, i):
    return conditionals.cond(i < n_squarings, lambda x: _precise_dot(x, x), lambda x: x, c), None
  res, _ = loops.scan(step, r, creation.arange(max_squarings, dtype=n_squarings.dtype))
  return res


@jit(static_argnames=("upper_triangular", "max_squarings"))
def expm(A, *, upper_triangular=False, max_squarings=16):  # noqa: N803
  """The matrix exponential of (batched) square A, by Pade scaling and squaring."""
  A, = promote_dtypes_inexact(A)  # noqa: N806
  if A.ndim < 2 or A.shape[-1] != A.shape[-2]:
    raise ValueError(f"Expected A to be a (batched) square matrix, got A.shape={A.shape}.")
  if A.ndim > 2:
    return vectorize(partial(expm, upper_triangular=upper_triangular,
                             max_squarings=max_squarings), signature="(n,n)->(n,n)")(A)
  p, q, n_squarings = _calc_P_Q(_asarray(A))

  def all_nan(args):
    return creation.full_like(args[0], np.nan)

  def compute(args):
    _, p, q = args
    return _squaring(_solve_P_Q(p, q, upper_triangular), n_squarings, max_squarings)

  return conditionals.cond(n_squarings > max_squarings, all_nan, compute, (A, p, q))


@jit(static_argnames=("method", "compute_expm"))
def expm_frechet(A, E, *, method=None, compute_expm=True):  # noqa: N803
  """The Frechet derivative of expm at A in direction E: (expm(A), L(A, E)), or L(A, E)."""
  del method
  A, E = _asarray(A), _asarray(E)  # noqa: N806
  if A.ndim < 2 or A.shape[-2] != A.shape[1]:
    raise ValueError(f"expected A to be a (batched) square matrix, got A.shape={A.shape}")
  if E.ndim < 2 or E.shape[-2] != E.shape[-1]:
    raise ValueError(f"expected E to be a (batched) square matrix, got E.shape={E.shape}")
  if A.shape != E.shape:
    raise ValueError(f"expected A and E to be the same shape, got A.shape={A.shape} "
                     f"E.shape={E.shape}")
  expm_a, frechet = jvp(partial(expm, upper_triangular=False, max_squarings=16), (A,), (E,))
  return (expm_a, frechet) if compute_expm else frechet


# ---- polar -------------------------------------------------------------------------------------
@jit(static_argnames=("side", "method"))
def _polar_2d(a, side, method, eps, max_iterations):
  # Both methods compute the same factors; arrax computes them from the SVD (qdwh's
  # iteration converges to these factors, to working precision, for full-rank a).
  if method not in ("qdwh", "svd"):
    raise ValueError(f"Unknown polar decomposition method {method}.")
  m, n = a.shape
  if method == "qdwh" and not ((m >= n and side == "right") or (m < n and side == "left")):
    raise NotImplementedError("method='qdwh' only supports mxn matrices where m < n where "
                              f"side='right' and m >= n side='left', got {a.shape} with "
                              f"side={side!r}")
  u, s, vh = lax_linalg.svd(a, full_matrices=False)
  s = s.astype(u.dtype)
  unitary = _dot(u, vh)
  if side == "right":
    posdef = _dot(ufuncs.conj(vh.T) * s[None, :], vh)
  else:
    posdef = _dot(u * s[None, :], ufuncs.conj(u.T))
  return unitary, posdef


@jit(static_argnames=("side", "method"))
def polar(a, side="right", *, method="qdwh", eps=None, max_iterations=None):
  """The polar decomposition a = u p (side 'right') or p u ('left')."""
  a = _asarray(a)
  if a.ndim < 2:
    raise ValueError("The input `a` must be at least a 2-D array.")
  if side not in ["right", "left"]:
    raise ValueError("The argument `side` must be either 'right' or 'left'.")
  sig = "(m,n)->(m,n),(n,n)" if side == "right" else "(m,n)->(m,n),(m,m)"
  return vectorize(partial(_polar_2d, side=side, method=method, eps=eps,
                           max_iterations=max_iterations), signature=sig)(a)


# ---- Schur, Hessenberg and what is built on them ---------------------------------------------
@jit(static_argnames=("output",))
def _schur(a, output):
  if output == "complex":
    a = a.astype(lax_linalg._complex_dtype(a.dtype))
  return lax_schur.schur(a)


def schur(a, output="real"):
  """Schur decomposition a = z t zᴴ: (t, z); 'real' output keeps 2x2 blocks for real a."""
  if output not in ("real", "complex"):
    raise ValueError(f"Expected 'output' to be either 'real' or 'complex', got {output=}.")
  return _schur(a, output)


@jit(static_argnames=("calc_q", "check_finite", "overwrite_a"))
def hessenberg(a, *, calc_q=False, overwrite_a=False, check_finite=True):
  """The upper Hessenberg form h = qᴴ a q of square a: h, or (h, q) with calc_q."""
  del overwrite_a, check_finite
  n = np.shape(a)[-1]
  if n == 0:
    return (creation.zeros_like(a), creation.zeros_like(a)) if calc_q else creation.zeros_like(a)
  packed, taus = lax_schur.hessenberg(a)
  h = index_tricks.triu(packed, -1)
  if not calc_q:
    return h
  q = lax_linalg.householder_product(packed[..., 1:, :-1], taus)
  batch = packed.shape[:-2]
  dt = packed.dtype
  q = assembly.block([[creation.ones(batch + (1, 1), dtype=dt),
                       creation.zeros(batch + (1, n - 1), dtype=dt)],
                      [creation.zeros(batch + (n - 1, 1), dtype=dt), q]])
  return h, q


def _dyn_rows(x, start, size, axis):
  return slicing_ops.dynamic_slice_in_dim(x, start, size, axis=axis)


@jit
def _rsf2csf_2d(t, z):
  t, z = _promote_complex(t, z)
  eps = dtypes.finfo(t.dtype).eps
  n = t.shape[0]
  if n == 1:
    return t, z

  def rotate(m, t, z):
    # A Givens rotation that zeroes t[m, m-1], from an eigenvalue of the 2x2 block there.
    mu = jnp_linalg.eigvals(slicing_ops.dynamic_slice(t, (m - 1, m - 1), (2, 2))) - t[m, m]
    r = jnp_linalg.norm(creation.array([mu[0], t[m, m - 1]])).astype(t.dtype)
    c, s = mu[0] / r, t[m, m - 1] / r
    g = creation.array([[c.conj(), s], [-s, c]], dtype=t.dtype)
    rows = _dyn_rows(t, m - 1, 2, 0)
    col_mask = creation.arange(n) >= m - 1
    rows = lax_numpy.where(col_mask, g @ lax_numpy.where(col_mask, rows, 0), rows)
    t = slicing_ops.dynamic_update_slice_in_dim(t, rows, m - 1, axis=0)
    cols = _dyn_rows(t, m - 1, 2, 1)
    row_mask = creation.arange(n)[:, None] < m + 1
    cols = lax_numpy.where(row_mask, lax_numpy.where(row_mask, cols, 0) @ g.conj().T, cols)
    t = slicing_ops.dynamic_update_slice_in_dim(t, cols, m - 1, axis=1)
    zc = _dyn_rows(z, m - 1, 2, 1)
    z = slicing_ops.dynamic_update_slice_in_dim(z, zc @ g.conj().T, m - 1, axis=1)
    return t, z

  def step(i, tz):
    m = n - i
    t, z = tz
    big = ufuncs.abs(t[m, m - 1]) > eps * (ufuncs.abs(t[m - 1, m - 1]) + ufuncs.abs(t[m, m]))
    t, z = conditionals.cond(big, rotate, lambda m, t, z: (t, z), m, t, z)
    return t.at[m, m - 1].set(0.0), z

  return loops.fori_loop(1, n, step, (t, z))


def _promote_complex(*args):
  """The args promoted to a common inexact dtype, then to its complex counterpart."""
  return [x.astype(lax_linalg._complex_dtype(x.dtype)) for x in promote_dtypes_inexact(*args)]


@jit(static_argnames=("check_finite",))
def rsf2csf(T, Z, check_finite=True):  # noqa: N803
  """Convert a real Schur form (T, Z) to the complex one (upper triangular T)."""
  del check_finite
  T, Z = _asarray(T), _asarray(Z)  # noqa: N806
  if T.ndim < 2 or T.shape[-1] != T.shape[-2]:
    raise ValueError("Input 'T' must be square.")
  if Z.ndim < 2 or Z.shape[-1] != Z.shape[-2]:
    raise ValueError("Input 'Z' must be square.")
  if T.shape[-1] != Z.shape[-1]:
    raise ValueError(f"Input array shapes must match: Z: {Z.shape} vs. T: {T.shape}")
  return vectorize(_rsf2csf_2d, signature="(n,n),(n,n)->(n,n),(n,n)")(T, Z)


@jit
def _sqrtm_triu(t):
  """The upper-triangular square root of upper-triangular t (column by column)."""
  diag = ufuncs.sqrt(index_tricks.diag(t))
  n = diag.size
  u = index_tricks.diag(diag)

  def i_loop(l, data):
    j, u = data
    i = j - 1 - l
    s = loops.fori_loop(i + 1, j, lambda k, acc: acc + u[i, k] * u[k, j], 0.0)
    value = lax_numpy.where(t[i, j] == s, 0.0, (t[i, j] - s) / (diag[i] + diag[j]))
    return j, u.at[i, j].set(value)

  return loops.fori_loop(0, n, lambda j, u: loops.fori_loop(0, j, i_loop, (j, u))[1], u)


@jit
def _sqrtm(a):
  t, z = schur(a, output="complex")
  return _dot(_dot(z, _sqrtm_triu(t)), ufuncs.conj(z.T))


def sqrtm(A, blocksize=1):  # noqa: N803
  """The principal square root of square A (a complex result, from its Schur form)."""
  if blocksize > 1:
    raise NotImplementedError("Blocked version is not implemented yet.")
  return _sqrtm(A)


@jit
def _parlett(f, t):
  """Parlett's recurrence (Golub & Van Loan, algorithm 11.1.1): f(t) above the diagonal."""
  n = t.shape[0]
  idx = creation.arange(n)

  def inner(i, state):
    p, f, minden = state
    j = i + p
    s = t[i - 1, j - 1] * (f[j - 1, j - 1] - f[i - 1, i - 1])
    between = (idx >= i) & (idx < j - 1)
    s = s + (lax_numpy.where(between, t[i - 1], 0) @ lax_numpy.where(between, f[:, j - 1], 0)
             - lax_numpy.where(between, f[i - 1], 0) @ lax_numpy.where(between, t[:, j - 1], 0))
    den = t[j - 1, j - 1] - t[i - 1, i - 1]
    s = lax_numpy.where(den != 0, s / den, s)
    return p, f.at[i - 1, j - 1].set(s), ufuncs.minimum(minden, ufuncs.abs(den))

  def outer(p, state):
    _, f, minden = loops.fori_loop(1, n - p + 1, inner, (p, *state))
    return f, minden

  return loops.fori_loop(1, n, outer, (f, ufuncs.abs(t[0, 0])))


def funm(A, func, disp=True):  # noqa: N803
  """The matrix function func(A) of square A, by the Schur-Parlett method.

  With disp=False, returns (func(A), an estimate of the relative error).
  """
  A = _asarray(A)  # noqa: N806
  if A.ndim != 2 or A.shape[0] != A.shape[1]:
    raise ValueError("expected square array_like input")
  t, z = schur(A)
  t, z = rsf2csf(t, z)
  f = index_tricks.diag(func(index_tricks.diag(t))).astype(t.dtype.char)
  f, minden = _parlett(f, t)
  f = z @ f @ z.conj().T
  if disp:
    return f
  # As JAX (and SciPy), a float16 tolerance is overridden by the float32/float64 one.
  tol = dtypes.finfo(np.float32 if f.dtype.char.lower() == "f" else np.float64).eps
  minden = lax_numpy.where(minden == 0.0, tol, minden)
  err = lax_numpy.where(reductions.any(ufuncs.isinf(f)), np.inf, ufuncs.minimum(1, ufuncs.maximum(
      tol, (tol / minden) * jnp_linalg.norm(index_tricks.triu(t, 1), 1))))
  return f, err


def _sylvester_triangular(r, s, f):
  """y with r y + y s = f for upper-triangular r, s: one entry per scan step, bottom-right first."""
  r, s, f = promote_args_inexact("_solve_sylvester_triangular_scan", r, s, f)
  m, n = f.shape

  def step(y_flat, idx):
    i, j = idx // n, idx % n
    y = y_flat.reshape((m, n))
    row = reductions.sum(lax_numpy.where(creation.arange(m) > i, r[i, :] * y[:, j], 0.0))
    col = reductions.sum(lax_numpy.where(creation.arange(n) > j, y[i, :] * s[:, j], 0.0))
    val = (f[i, j] - (row + col)) / (r[i, i] + s[j, j])
    return y_flat.at[i * n + j].set(val), None

  y, _ = loops.scan(step, creation.zeros((m * n,), dtype=f.dtype),
                    creation.arange(m * n - 1, -1, -1))
  return y.reshape((m, n))


@jit(static_argnames=["method"])
def _sylvester_2d(a, b, c, *, method, tol):
  m, n = c.shape[-2:]
  if method == "schur":
    r, u = schur(a, output="complex")
    s, v = schur(b.conj().T, output="complex")
    f = u.conj().T @ c.astype(r.dtype) @ v
    x = u @ _sylvester_triangular(r, s.conj().T, f) @ v.conj().T
  elif method == "eigen":
    ra, ua = jnp_linalg.eig(a)
    rb, ub = jnp_linalg.eig(b)
    f = solve(ua, c.astype(ra.dtype) @ ub)
    y = f / (ra[:, None] + rb[None, :])
    x = ua[:m, :m] @ y[:m, :n] @ inv(ub)[:n, :n]
  else:
    raise ValueError(f"Unrecognized method {method}. The two valid methods are either "
                     "\"schur\" or \"eigen\".")
  if not dtypes.issubdtype(c.dtype, np.complexfloating):
    x = x.real
  near_singular = reductions.any(ufuncs.abs(jnp_linalg.eigvals(a)[:, None]
                                            + jnp_linalg.eigvals(b)[None, :]) < tol)
  return conditionals.cond(near_singular, lambda: creation.zeros_like(x) * np.nan, lambda: x)


@jit(static_argnames=["method"])
def solve_sylvester(A, B, C, *, method="schur", tol=1e-8):  # noqa: N803
  """X with A X + X B = C ('schur' or 'eigen' method); NaNs when nearly singular."""
  A, B, C = promote_dtypes_inexact(_asarray(A), _asarray(B), _asarray(C))  # noqa: N806
  m, n = C.shape[-2:]
  if A.shape[-2:] != (m, m) or B.shape[-2:] != (n, n):
    raise ValueError(f"Incompatible shapes for Sylvester equation:\nA: {A.shape}\nB: {B.shape}"
                     f"\nC: {C.shape}")
  return vectorize(partial(_sylvester_2d, method=method, tol=tol),
                   signature="(m,m),(n,n),(m,n)->(m,n)")(A, B, C)
