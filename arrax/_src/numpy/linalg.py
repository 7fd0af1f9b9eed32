"""arrax.numpy.linalg: NumPy's linear algebra API over the lax.linalg primitives."""
from __future__ import annotations

import functools
import itertools
import math
import operator
from typing import NamedTuple

import numpy as np

from arrax._src import core, dtypes
from arrax._src.custom_derivatives import custom_jvp
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import linalg as lax_linalg
from arrax._src.lax import shape_ops
from arrax._src.lax import sort as lax_sort
from arrax._src.numpy import creation, index_tricks, indexing, lax_numpy, reductions, ufuncs
from arrax._src.numpy import einsum as np_einsum
from arrax._src.numpy.util import canonicalize_axis, ensure_arraylike, promote_dtypes_inexact
from arrax._src.numpy.vectorize import vectorize
from arrax._src.numpy.util import _shape


class EigResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class EighResult(NamedTuple):
  eigenvalues: object
  eigenvectors: object


class QRResult(NamedTuple):
  Q: object
  R: object


class SVDResult(NamedTuple):
  U: object
  S: object
  Vh: object


class SlogdetResult(NamedTuple):
  sign: object
  logabsdet: object


def _inexact(name, a):
  a = ensure_arraylike(name, a)
  a, = promote_dtypes_inexact(a)
  return a


def _check_square(name, a):
  shape = _shape(a)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to {name} must have shape [..., n, n], got {shape}.")


# ---- eigendecompositions -------------------------------------------------------------------------
def eig(a):
  """Eigenvalues and right eigenvectors (columns, unit norm) of general square matrices.

  >>> w, v = jnp.linalg.eig(jnp.array([[2., 0.], [0., 3.]]))
  """
  a = _inexact("jnp.linalg.eig", a)
  w, v = lax_linalg.eig(a, compute_left_eigenvectors=False)
  return EigResult(w, v)


@jit
def eigvals(a):
  """Eigenvalues (complex) of general square matrices a [..., n, n].

  >>> jnp.linalg.eigvals(jnp.array([[0., 1.], [-1., 0.]]))   # ±1j
  """
  a = _inexact("jnp.linalg.eigvals", a)
  return lax_linalg.eig(a, compute_left_eigenvectors=False, compute_right_eigenvectors=False)[0]


@jit(static_argnames=("UPLO", "symmetrize_input"))
def eigh(a, UPLO=None, symmetrize_input=True):
  """Eigenvalues (real, ascending) and orthonormal eigenvectors of Hermitian matrices.

  >>> w, v = jnp.linalg.eigh(jnp.array([[2., 1.], [1., 2.]]))   # w = [1, 3]
  """
  a = ensure_arraylike("jnp.linalg.eigh", a)
  if UPLO is None or UPLO == "L":
    lower = True
  elif UPLO == "U":
    lower = False
  else:
    raise ValueError(f"UPLO must be one of None, 'L', or 'U', got {UPLO}")
  a, = promote_dtypes_inexact(a)
  v, w = lax_linalg.eigh(a, lower=lower, symmetrize_input=symmetrize_input)
  return EighResult(w, v)


@jit(static_argnames=("UPLO", "symmetrize_input"))
def eigvalsh(a, UPLO="L", *, symmetrize_input=True):
  """The eigenvalues (real, ascending) of Hermitian matrices a [..., n, n].

  >>> jnp.linalg.eigvalsh(jnp.array([[2., 1.], [1., 2.]]))   # [1, 3]
  """
  a = _inexact("jnp.linalg.eigvalsh", a)
  return eigh(a, UPLO, symmetrize_input=symmetrize_input)[0]


# ---- cholesky, solve, inv ------------------------------------------------------------------------
def cholesky(a, *, upper=False, symmetrize_input=True):
  """The Cholesky factor of Hermitian positive-definite a: lower L with a = L Lᴴ (or U = Lᴴ).

  >>> jnp.linalg.cholesky(jnp.array([[4., 2.], [2., 3.]]))
  """
  a = _inexact("jnp.linalg.cholesky", a)
  factor = lax_linalg.cholesky(a, symmetrize_input=symmetrize_input)
  return lax_linalg._H(factor) if upper else factor


@jit
def solve(a, b):
  """x with a @ x = b, for square a [..., n, n] and b [n] or [..., n, k] (batch axes broadcast).

  >>> jnp.linalg.solve(jnp.array([[2., 0.], [0., 4.]]), jnp.array([2., 2.]))
  """
  a, b = ensure_arraylike("jnp.linalg.solve", a, b)
  a, b = promote_dtypes_inexact(a, b)
  a_shape, b_shape = _shape(a), _shape(b)
  if len(a_shape) < 2:
    raise ValueError(f"left hand array must be at least two dimensional; got a.shape={a_shape}")
  _check_square("jnp.linalg.solve", a)
  n = a_shape[-1]
  if (len(b_shape) > 1 and len(a_shape) == len(b_shape) + 1 and b_shape[-1] == n
      and b_shape[-2] != n):
    raise ValueError(f"Invalid shapes for solve: {a_shape}, {b_shape}. Prior to JAX v0.5.0, "
                     "this would have been treated as a batched 1-dimensional solve. To "
                     "recover this behavior, use solve(a, b[..., None]).squeeze(-1).")
  vector = len(b_shape) == 1
  if b_shape[0 if vector else -2] != n:
    raise ValueError(f"solve: the last two axes of a {a_shape} and b {b_shape} do not match: "
                     f"b needs {n} rows.")
  signature = "(m,m),(m)->(m)" if vector else "(m,m),(m,n)->(m,n)"
  return vectorize(lax_linalg._solve, signature=signature)(a, b)


@jit
def inv(a):
  """The inverse of square matrices a [..., n, n] (computed by an LU solve).

  >>> jnp.linalg.inv(jnp.array([[2., 0.], [0., 4.]]))
  """
  a = ensure_arraylike("jnp.linalg.inv", a)
  shape = _shape(a)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to inv must have shape [..., n, n], got {shape}.")
  eye = creation.eye(shape[-1], dtype=core.get_aval(a).dtype)
  return solve(a, shape_ops.broadcast(eye, shape[:-2]))


# ---- qr ------------------------------------------------------------------------------------------
@jit(static_argnames=("mode",))
def qr(a, mode="reduced"):
  """QR decomposition a = Q R: mode 'reduced' (default), 'complete', 'r' (R only) or 'raw'.

  >>> q, r = jnp.linalg.qr(jnp.array([[1., 2.], [3., 4.], [5., 6.]]))   # q 3x2, r 2x2
  """
  a = _inexact("jnp.linalg.qr", a)
  if mode == "raw":
    h, taus = lax_linalg.geqrf(a)
    return QRResult(lax_numpy.matrix_transpose(h), taus)
  if mode in ("reduced", "r", "full"):
    full_matrices = False
  elif mode == "complete":
    full_matrices = True
  else:
    raise ValueError(f"Unsupported QR decomposition mode '{mode}'; use 'reduced', "
                     "'complete', 'r' or 'raw'.")
  q, r = lax_linalg.qr(a, pivoting=False, full_matrices=full_matrices)
  return r if mode == "r" else QRResult(q, r)


# ---- determinants --------------------------------------------------------------------------------
@custom_jvp
def _slogdet_lu(a):
  dtype = core.get_aval(a).dtype
  factors, pivots, _ = lax_linalg.lu(a)
  diag = lax_linalg._diagonal(factors)
  is_zero = reductions.any(diag == 0, axis=-1)
  n = _shape(a)[-1]
  parity = reductions.sum(pivots != creation.arange(n, dtype=np.int32), axis=-1)
  if dtype.kind == "c":
    sign = reductions.prod(diag / ufuncs.abs(diag).astype(dtype), axis=-1)
  else:
    sign = creation.array(1, dtype=dtype)
    parity = parity + reductions.sum(diag < 0, axis=-1)
  flip = (-2 * (parity % 2) + 1).astype(dtype)
  sign = lax_numpy.where(is_zero, creation.array(0, dtype=dtype), sign * flip)
  logdet = lax_numpy.where(is_zero, creation.array(-np.inf, dtype=dtype),
                           reductions.sum(ufuncs.log(ufuncs.abs(diag)).astype(dtype), axis=-1))
  return sign, ufuncs.real(logdet)


@_slogdet_lu.defjvp
def _slogdet_jvp(primals, tangents):
  (x,), (g,) = primals, tangents
  sign, logdet = _slogdet_lu(x)
  # d log det x = tr(x⁻¹ dx).
  dlog = reductions.sum(lax_linalg._diagonal(solve(x, g)), axis=-1)
  if core.get_aval(x).dtype.kind == "c":
    sign_dot = (dlog - ufuncs.real(dlog).astype(dlog.dtype)) * sign
    dlog = ufuncs.real(dlog)
  else:
    sign_dot = creation.zeros_like(sign)
  return (sign, logdet), (sign_dot, dlog)


def slogdet(a, *, method=None):
  """(sign, log|det|) of square matrices a [..., n, n], from an LU factorization.

  >>> jnp.linalg.slogdet(jnp.array([[2., 0.], [0., -3.]]))   # (-1, log 6)
  """
  a = _inexact("jnp.linalg.slogdet", a)
  shape = _shape(a)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to slogdet() must have shape [..., n, n], got {shape}")
  if method not in (None, "lu"):
    raise ValueError(f"Unknown slogdet method '{method}'. Supported methods are 'lu' "
                     "(`None`); arrax does not implement 'qr'.")
  return SlogdetResult(*_slogdet_lu(a))


def _det_2x2(a):
  return a[..., 0, 0] * a[..., 1, 1] - a[..., 0, 1] * a[..., 1, 0]


def _det_3x3(a):
  return (a[..., 0, 0] * a[..., 1, 1] * a[..., 2, 2]
          + a[..., 0, 1] * a[..., 1, 2] * a[..., 2, 0]
          + a[..., 0, 2] * a[..., 1, 0] * a[..., 2, 1]
          - a[..., 0, 2] * a[..., 1, 1] * a[..., 2, 0]
          - a[..., 0, 0] * a[..., 1, 2] * a[..., 2, 1]
          - a[..., 0, 1] * a[..., 1, 0] * a[..., 2, 2])


def _det(a):
  shape = _shape(a)
  if shape[-2:] == (2, 2):
    return _det_2x2(a)
  if shape[-2:] == (3, 3):
    return _det_3x3(a)
  sign, logdet = _slogdet_lu(a)
  return sign * ufuncs.exp(logdet).astype(sign.dtype)


@jit
def det(a):
  """The determinant of square matrices a [..., n, n].

  >>> jnp.linalg.det(jnp.array([[1., 2.], [3., 4.]]))   # -2
  """
  a = _inexact("jnp.linalg.det", a)
  shape = _shape(a)
  if len(shape) < 2 or shape[-1] != shape[-2]:
    raise ValueError(f"Argument to _det() must have shape [..., n, n], got {shape}")
  return _det(a)


# ---- svd and what is built on it ----------------------------------------------------------------
_HIGHEST = lax_dot.Precision.HIGHEST


def _mT(x):
  return lax_numpy.matrix_transpose(x)


def _H(x):
  return ufuncs.conj(_mT(x))


def _hermitian_svd(a, compute_uv, subset_by_index):
  """SVD of Hermitian a from its eigendecomposition: s = |w| descending, vh = (u sign(w))ᴴ."""
  vecs, w = lax_linalg.eigh(a, subset_by_index=subset_by_index)
  s = ufuncs.abs(w)
  last = len(_shape(s)) - 1
  if not compute_uv:
    return shape_ops.rev(lax_sort.sort(s, dimension=-1), (last,))
  idxs = shape_ops.broadcasted_iota(np.int32, _shape(s), last)
  s, idxs, sign = lax_sort.sort((s, idxs, ufuncs.sign(w)), dimension=-1, num_keys=1)
  s, idxs, sign = (shape_ops.rev(t, (last,)) for t in (s, idxs, sign))
  u = indexing.take_along_axis(vecs, idxs[..., None, :], axis=-1)
  vh = _H(u * sign[..., None, :].astype(u.dtype))
  return SVDResult(u, s, vh)


@jit(static_argnames=("full_matrices", "compute_uv", "hermitian", "subset_by_index"))
def svd(a, full_matrices=True, compute_uv=True, hermitian=False, subset_by_index=None):
  """Singular value decomposition a = U diag(S) Vh: SVDResult(U, S, Vh), or S.

  >>> u, s, vh = jnp.linalg.svd(jnp.array([[3., 0.], [0., -2.]]))   # s = [3, 2]
  """
  a = _inexact("jnp.linalg.svd", a)
  if hermitian:
    return _hermitian_svd(a, compute_uv, subset_by_index)
  if compute_uv:
    u, s, vh = lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=True,
                              subset_by_index=subset_by_index)
    return SVDResult(u, s, vh)
  return lax_linalg.svd(a, full_matrices=full_matrices, compute_uv=False,
                        subset_by_index=subset_by_index)


def svdvals(x, /):
  """The singular values (descending) of matrices x [..., m, n].

  >>> jnp.linalg.svdvals(jnp.array([[3., 0.], [0., -2.]]))   # [3, 2]
  """
  x = ensure_arraylike("jnp.linalg.svdvals", x)
  return svd(x, compute_uv=False, hermitian=False)


def _sum_sq(x, axis, keepdims):
  return ufuncs.sqrt(reductions.sum(ufuncs.real(x * ufuncs.conj(x)), axis=axis,
                                    keepdims=keepdims))


def vector_norm(x, /, *, axis=None, keepdims=False, ord=2):
  """The vector ord-norm of x over `axis` (all axes, flattened, by default).

  >>> jnp.linalg.vector_norm(jnp.array([3., 4.]))   # 5
  """
  x = ensure_arraylike("jnp.linalg.vector_norm", x)
  if ord is None or (not isinstance(ord, str) and ord == 2):
    return _sum_sq(x, axis, keepdims)
  if isinstance(ord, str):   # JAX raises ValueError here, not TypeError
    msg = f"Invalid order '{ord}' for vector norm."
    if ord in ("inf", "-inf"):
      msg += f"Use '{ord[:-3]}jax.numpy.inf' instead."
    raise ValueError(msg)
  if ord == np.inf:
    return reductions.max(ufuncs.abs(x), axis=axis, keepdims=keepdims, initial=0)
  if ord == -np.inf:
    return reductions.min(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  if ord == 0:
    dtype = dtypes.finfo(core.get_aval(x).dtype).dtype
    return reductions.sum(x != 0, dtype=dtype, axis=axis, keepdims=keepdims)
  if ord == 1:
    return reductions.sum(ufuncs.abs(x), axis=axis, keepdims=keepdims)
  abs_x = ufuncs.abs(x)
  dtype = core.get_aval(abs_x).dtype
  total = reductions.sum(abs_x ** creation.array(ord, dtype), axis=axis, keepdims=keepdims)
  return ufuncs.power(total, creation.array(1. / np.asarray(ord, dtype), dtype))


def _matrix_norm(x, ord, axis, keepdims):
  row, col = axis
  if ord is None or ord in ("f", "fro"):
    return _sum_sq(x, axis, keepdims)
  if ord in (1, -1, np.inf, -np.inf):
    # 1-norms: max/min column sum; inf-norms: max/min row sum.
    inner, outer = (row, col) if ord in (1, -1) else (col, row)
    if not keepdims and outer > inner:
      outer -= 1
    sums = reductions.sum(ufuncs.abs(x), axis=inner, keepdims=keepdims)
    if ord > 0:
      return reductions.max(sums, axis=outer, keepdims=keepdims, initial=0)
    return reductions.min(sums, axis=outer, keepdims=keepdims)
  if not isinstance(ord, str) and ord in (2, -2) or ord == "nuc":
    s = svd(lax_numpy.moveaxis(x, axis, (-2, -1)), compute_uv=False)
    if ord == 2:
      y = reductions.max(s, axis=-1, initial=0)
    elif ord == -2:
      y = reductions.min(s, axis=-1)
    else:
      y = reductions.sum(s, axis=-1)
    return lax_numpy.expand_dims(y, axis) if keepdims else y
  raise ValueError(f"Invalid order '{ord}' for matrix norm.")


@jit(static_argnames=("ord", "axis", "keepdims"))
def norm(x, ord=None, axis=None, keepdims=False):
  """The vector norm (one axis) or matrix norm (two axes) of x; `ord` as in NumPy.

  >>> jnp.linalg.norm(jnp.array([[1., 2.], [3., 4.]]), 'nuc')
  """
  x = _inexact("jnp.linalg.norm", x)
  ndim = len(_shape(x))
  if axis is None:
    if ord is None:   # NumPy takes any rank here: the 2-norm of the flattened array
      return _sum_sq(x, None, keepdims)
    axis = tuple(range(ndim))
  elif isinstance(axis, tuple):
    axis = tuple(canonicalize_axis(ax, ndim) for ax in axis)
  else:
    axis = (canonicalize_axis(axis, ndim),)
  if len(axis) == 1:
    return vector_norm(x, ord=2 if ord is None else ord, axis=axis, keepdims=keepdims)
  if len(axis) == 2:
    return _matrix_norm(x, ord, axis, keepdims)
  raise ValueError(f"Improper number of axes for norm: {axis=}. Pass one axis to compute a "
                   "vector-norm, or two axes to compute a matrix-norm.")


def matrix_norm(x, /, *, keepdims=False, ord="fro"):
  """The matrix ord-norm of the last two axes of x.

  >>> jnp.linalg.matrix_norm(jnp.eye(3))   # sqrt(3)
  """
  x = ensure_arraylike("jnp.linalg.matrix_norm", x)
  return norm(x, ord=ord, keepdims=keepdims, axis=(-2, -1))


@jit(static_argnames=("hermitian",))
def matrix_rank(M, rtol=None, *, hermitian=False, tol=None):
  """The number of singular values of M [..., m, n] above rtol times the largest one.

  >>> jnp.linalg.matrix_rank(jnp.array([[1., 0.], [0., 0.]]))   # 1
  """
  M = ensure_arraylike("jnp.linalg.matrix_rank", M)
  if tol is not None:
    if rtol is not None:
      raise ValueError("matrix_rank: only one of tol or rtol may be specified.")
    rtol = tol
  M, = promote_dtypes_inexact(M)
  if M.ndim < 2:
    return reductions.any(M != 0).astype(np.int32)
  s = svd(M, full_matrices=False, compute_uv=False, hermitian=hermitian)
  if rtol is None:
    eps = dtypes.finfo(s.dtype).eps
    rtol = reductions.max(s, axis=-1) * np.asarray(max(_shape(M)[-2:]), s.dtype) * eps
  rtol = creation.asarray(rtol)
  rtol = lax_numpy.expand_dims(rtol, rtol.ndim)
  return reductions.sum(s > rtol, axis=-1)


def pinv(a, rtol=None, hermitian=False, *, rcond=None):
  """The Moore-Penrose pseudo-inverse [..., n, m] of matrices a [..., m, n], from an SVD.

  >>> jnp.linalg.pinv(jnp.array([[2., 0.], [0., 0.]]))   # [[0.5, 0], [0, 0]]
  """
  if rcond is not None:
    if rtol is not None:
      raise ValueError("pinv: only one of rtol and rcond may be specified.")
    rtol = rcond
  return _pinv(a, rtol, hermitian)


@functools.partial(custom_jvp, nondiff_argnums=(1, 2))
@jit(static_argnames=("hermitian",))
def _pinv(a, rtol=None, hermitian=False):
  a = _inexact("jnp.linalg.pinv", a)
  m, n = _shape(a)[-2:]
  dtype = core.get_aval(a).dtype
  if m == 0 or n == 0:
    return creation.empty(_shape(a)[:-2] + (n, m), dtype)
  a = ufuncs.conj(a)
  if rtol is None:
    rtol = 10. * max(m, n) * creation.array(dtypes.finfo(dtype).eps)
  rtol = creation.asarray(rtol)
  u, s, vh = svd(a, full_matrices=False, hermitian=hermitian)
  # Singular values at or below rtol times the largest count as zero (their inverse as 0).
  rtol = lax_numpy.expand_dims(rtol[..., None], tuple(range(s.ndim - rtol.ndim - 1)))
  cutoff = rtol * s[..., 0:1]
  s = lax_numpy.where(s > cutoff, s, np.inf).astype(u.dtype)
  res = lax_numpy.matmul(_mT(vh), ufuncs.divide(_mT(u), s[..., None]), precision=_HIGHEST)
  return res.astype(dtype)


def _symmetrize(x):
  return (x + _H(x)) / 2


@_pinv.defjvp
def _pinv_jvp(rtol, hermitian, primals, tangents):
  # Golub & Pereyra (1973): the derivative of the pseudo-inverse p of a.
  (a,), (a_dot,) = primals, tangents
  p = pinv(a, rtol=rtol, hermitian=hermitian)
  a, = promote_dtypes_inexact(a)
  a_dot = creation.asarray(a_dot).astype(p.dtype)
  if hermitian:   # the Hermitian SVD symmetrizes its input: so must the tangent
    a, a_dot = _symmetrize(a), _symmetrize(a_dot)
  mm = lambda x, y: lax_numpy.matmul(x, y, precision=_HIGHEST)  # noqa: E731
  m, n = _shape(a)[-2:]
  if m >= n:
    s = mm(mm(p, _H(p)), _H(a_dot))
    t = mm(mm(_H(a_dot), _H(p)), p)
    p_dot = -mm(mm(p, a_dot), p) + s - mm(mm(s, a), p) + t - mm(mm(p, a), t)
  else:
    s = mm(p, mm(_H(p), _H(a_dot)))
    t = mm(_H(a_dot), mm(_H(p), p))
    p_dot = -mm(p, mm(a_dot, p)) + s - mm(s, mm(a, p)) + t - mm(p, mm(a, t))
  return p, p_dot


def _lstsq(a, b, rcond, numpy_resid=False):
  a, b = promote_dtypes_inexact(a, b)
  if _shape(a)[0] != _shape(b)[0]:
    raise ValueError("Leading dimensions of input arrays must match")
  b_orig_ndim = b.ndim
  if b_orig_ndim == 1:
    b = b[:, None]
  if a.ndim != 2:
    raise TypeError(f"{a.ndim}-dimensional array given. Array must be two-dimensional")
  if b.ndim != 2:
    raise TypeError(f"{b.ndim}-dimensional array given. Array must be one or two-dimensional")
  m, n = _shape(a)
  dtype = a.dtype
  mm = lambda x, y: lax_numpy.matmul(x, y, precision=_HIGHEST)  # noqa: E731
  if a.size == 0:
    s = creation.empty(0, dtype=dtype)
    rank = creation.array(0, dtype=int)
    x = creation.zeros((n, *_shape(b)[1:]), dtype=dtype)
  else:
    eps = dtypes.finfo(dtype).eps
    if rcond is None:
      rcond = float(eps) * max(n, m)
    else:
      rcond = lax_numpy.where(creation.asarray(rcond) < 0, eps, rcond)
    u, s, vt = svd(a, full_matrices=False)
    mask = (s > 0) & (s >= creation.array(rcond, dtype=s.dtype) * s[0])
    rank = mask.sum()
    safe_s = lax_numpy.where(mask, s, 1).astype(dtype)
    s_inv = lax_numpy.where(mask, 1 / safe_s, 0)[:, None]
    x = mm(_H(vt), s_inv * mm(_H(u), b))
  # NumPy leaves the residuals empty in some cases; with numpy_resid=False (jit-friendly)
  # they are always computed.
  if numpy_resid and (rank < n or m <= n):
    resid = creation.asarray([])
  else:
    resid = norm(b - mm(a, x), axis=0) ** 2
  if b_orig_ndim == 1:
    x = x.ravel()
  return x, resid, rank, s


_jit_lstsq = jit(lambda a, b, rcond: _lstsq(a, b, rcond))


def lstsq(a, b, rcond=None, *, numpy_resid=False):
  """Least-squares solution x of a x = b (a [m, n], b [m] or [m, k]): (x, resid, rank, s).

  >>> x, resid, rank, s = jnp.linalg.lstsq(jnp.array([[1., 0.], [1., 1.], [1., 2.]]),
  ...                                      jnp.array([1., 2., 2.]))
  """
  a, b = ensure_arraylike("jnp.linalg.lstsq", a, b)
  if numpy_resid:
    return _lstsq(a, b, rcond, numpy_resid=True)
  return _jit_lstsq(a, b, rcond)


@jit(static_argnames=("n",))
def matrix_power(a, n):
  """a raised to the integer power n (negative n inverts first), by repeated squaring.

  >>> jnp.linalg.matrix_power(jnp.array([[1., 1.], [0., 1.]]), 3)   # [[1, 3], [0, 1]]
  """
  arr = ensure_arraylike("jnp.linalg.matrix_power", a)
  if arr.ndim < 2:
    raise TypeError(f"{arr.ndim}-dimensional array given. Array must be at least "
                    "two-dimensional")
  if _shape(arr)[-2] != _shape(arr)[-1]:
    raise TypeError("Last 2 dimensions of the array must be square")
  try:
    n = operator.index(n)
  except TypeError as err:
    raise TypeError(f"exponent must be an integer, got {n}") from err
  if n == 0:
    return lax_numpy.broadcast_to(creation.eye(_shape(arr)[-2], dtype=arr.dtype), _shape(arr))
  if n < 0:
    arr = inv(arr)
    n = -n
  if n <= 3:
    result = arr
    for _ in range(n - 1):
      result = result @ arr
    return result
  z = result = None
  while n > 0:
    z = arr if z is None else z @ z
    n, bit = divmod(n, 2)
    if bit:
      result = z if result is None else result @ z
  return result


@jit(static_argnames=("p",))
def cond(x, p=None):
  """The condition number of x in the p-norm (None/2/-2: from singular values).

  >>> jnp.linalg.cond(jnp.array([[2., 0.], [0., 1.]]))   # 2
  """
  arr = ensure_arraylike("cond", x)
  if arr.ndim < 2:
    raise ValueError(f"jnp.linalg.cond: input array must be at least 2D; got {arr.shape=}")
  if arr.shape[-1] == 0 or arr.shape[-2] == 0:
    raise ValueError(f"jnp.linalg.cond: input array must not be empty; got {arr.shape=}")
  if p is None or p == 2:
    s = svdvals(arr)
    return s[..., 0] / s[..., -1]
  if p == -2:
    s = svdvals(arr)
    r = s[..., -1] / s[..., 0]
  else:
    if arr.shape[-2] != arr.shape[-1]:
      raise ValueError(f"jnp.linalg.cond: for {p=}, array must be square; got {arr.shape=}")
    r = norm(arr, ord=p, axis=(-2, -1)) * norm(inv(arr), ord=p, axis=(-2, -1))
  # A NaN from a singular matrix means an infinite condition number (unless x has NaNs).
  return lax_numpy.where(ufuncs.isnan(r) & ~reductions.any(ufuncs.isnan(arr), axis=(-2, -1)),
                         np.inf, r)


# ---- array-API names of jnp.linalg (thin layers over the jnp functions of the same names) --------
def cross(x1, x2, /, *, axis=-1):
  """Cross products of 3-vectors laid along `axis` of x1 and x2 (other axes broadcast).

  >>> jnp.linalg.cross(jnp.array([1., 0., 0.]), jnp.array([0., 1., 0.]))   # [0, 0, 1]
  """
  x1, x2 = ensure_arraylike("jnp.linalg.outer", x1, x2)
  n1, n2 = _shape(x1)[axis], _shape(x2)[axis]
  if n1 != 3 or n2 != 3:
    raise ValueError("Both input arrays must be (arrays of) 3-dimensional vectors, but they "
                     f"have x1.shape[axis]={n1} and x2.shape[axis]={n2}")
  return index_tricks.cross(x1, x2, axis=axis)


def outer(x1, x2, /):
  """The outer product x1[i] * x2[j] of two 1-D arrays (no flattening, unlike jnp.outer).

  >>> jnp.linalg.outer(jnp.array([1, 2]), jnp.array([1, 10, 100]))
  """
  x1, x2 = ensure_arraylike("jnp.linalg.outer", x1, x2)
  n1, n2 = len(_shape(x1)), len(_shape(x2))
  if n1 != 1 or n2 != 1:
    raise ValueError(f"Input arrays must be one-dimensional, but they are x1.ndim={n1} "
                     f"x2.ndim={n2}")
  return ufuncs.multiply(x1[:, None], x2[None, :])


def matrix_transpose(x, /):
  """Swap the last two axes of x [..., m, n] (no conjugation).

  >>> jnp.linalg.matrix_transpose(jnp.ones((2, 3, 4))).shape   # (2, 4, 3)
  """
  x = ensure_arraylike("jnp.linalg.matrix_transpose", x)
  nd = len(_shape(x))
  if nd < 2:
    raise ValueError(f"matrix_transpose requires at least 2 dimensions; got ndim={nd}")
  return shape_ops.transpose(x, (*range(nd - 2), nd - 1, nd - 2))


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """sum(conj(x1) * x2) along `axis`, with the other axes broadcast (batched vdot).

  >>> jnp.linalg.vecdot(jnp.array([[1., 2.], [3., 4.]]), jnp.array([1., 1.]))   # [3, 7]
  """
  x1, x2 = ensure_arraylike("jnp.linalg.vecdot", x1, x2)
  return index_tricks.vecdot(x1, x2, axis=axis, precision=precision,
                             preferred_element_type=preferred_element_type)


def matmul(x1, x2, /, *, precision=None, preferred_element_type=None):
  """The matrix product of x1 [..., n] and x2 [n, ...] (NumPy's matmul broadcasting).

  >>> jnp.linalg.matmul(jnp.eye(2), jnp.array([1., 2.]))   # [1, 2]
  """
  x1, x2 = ensure_arraylike("jnp.linalg.matmul", x1, x2)
  return lax_numpy.matmul(x1, x2, precision=precision,
                          preferred_element_type=preferred_element_type)


def tensordot(x1, x2, /, *, axes=2, precision=None, preferred_element_type=None,
              out_sharding=None):
  """Sum of products over axes of x1 and x2: the last `axes` of x1 with the first of x2, or
  the two axis lists given as ``axes=(x1_axes, x2_axes)``.

  >>> jnp.linalg.tensordot(jnp.ones((2, 3)), jnp.ones((3, 4)), axes=1).shape   # (2, 4)
  """
  x1, x2 = ensure_arraylike("jnp.linalg.tensordot", x1, x2)
  n1, n2 = len(_shape(x1)), len(_shape(x2))
  if preferred_element_type is None:
    pet, weak = dtypes.result_type(x1, x2, return_weak_type_flag=True)
  else:
    pet, weak = dtypes.check_user_dtype(preferred_element_type, "tensordot"), False
  if type(axes) is int:
    if axes > min(n1, n2):
      raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                      f"({_shape(x1)} and {_shape(x2)})")
    contract = tuple(range(n1 - axes, n1)), tuple(range(axes))
  elif isinstance(axes, (tuple, list)) and len(axes) == 2:
    ax1, ax2 = axes
    if isinstance(ax1, int) and isinstance(ax2, int):
      contract = (canonicalize_axis(ax1, n1),), (canonicalize_axis(ax2, n2),)
    elif isinstance(ax1, (tuple, list)) and isinstance(ax2, (tuple, list)):
      if len(ax1) != len(ax2):
        raise TypeError(f"tensordot requires axes lists to have equal length, got {ax1} and "
                        f"{ax2}.")
      contract = (tuple(canonicalize_axis(i, n1) for i in ax1),
                  tuple(canonicalize_axis(i, n2) for i in ax2))
    else:
      raise TypeError("tensordot requires both axes lists to be either ints, tuples or lists, "
                      f"got {ax1} and {ax2}")
  else:
    raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of "
                    "lists/tuples of ints.")
  out = lax_dot.dot_general(x1, x2, (contract, ((), ())), precision=precision,
                            preferred_element_type=pet, out_sharding=out_sharding)
  return lax_ew._convert_element_type(out, pet, weak)


def diagonal(x, /, *, offset=0):
  """The `offset`-th diagonals of the matrices x [..., m, n] (above the main one for
  offset > 0), shape [..., k].

  >>> jnp.linalg.diagonal(jnp.array([[1, 2], [3, 4]]))   # [1, 4]
  """
  x = ensure_arraylike("jnp.linalg.diagonal", x)
  return index_tricks.diagonal(x, offset=offset, axis1=-2, axis2=-1)


def trace(x, /, *, offset=0, dtype=None):
  """Sums of the `offset`-th diagonals of the matrices x [..., m, n], shape [...].

  >>> jnp.linalg.trace(jnp.array([[1, 2], [3, 4]]))   # 5
  """
  x = ensure_arraylike("jnp.linalg.trace", x)
  return index_tricks.trace(x, offset, axis1=-2, axis2=-1, dtype=dtype)


def multi_dot(arrays, *, precision=None):
  """The product arrays[0] @ arrays[1] @ ... in the cheapest order (found by opt_einsum).

  The first array may be 1-D (a row vector) and the last 1-D (a column vector); the others
  must be 2-D.

  >>> jnp.linalg.multi_dot([jnp.ones(3), jnp.ones((3, 4)), jnp.ones((4, 2))])   # [12, 12]
  """
  arrs = [ensure_arraylike("jnp.linalg.multi_dot", a) for a in arrays]
  if len(arrs) < 2:
    raise ValueError(f"multi_dot requires at least two arrays; got len(arrays)={len(arrs)}")
  shapes = [_shape(a) for a in arrs]
  if not (len(shapes[0]) in (1, 2) and len(shapes[-1]) in (1, 2)
          and all(len(s) == 2 for s in shapes[1:-1])):
    raise ValueError("multi_dot: input arrays must all be two-dimensional, except for the "
                     "first and last array which may be 1 or 2 dimensional. Got array shapes "
                     f"{shapes}")
  if any(s[-1] != t[0] for s, t in itertools.pairwise(shapes)):
    raise ValueError("multi_dot: last dimension of each array must match first dimension of "
                     f"following array. Got array shapes {shapes}")
  labels = [(i, i + 1) for i in range(len(arrs))]
  if len(shapes[0]) == 1:
    labels[0] = labels[0][1:]
  if len(shapes[-1]) == 1:
    labels[-1] = labels[-1][:1]
  return np_einsum.einsum(*itertools.chain(*zip(arrs, labels)), optimize="auto",
                          precision=precision)


def tensorinv(a, ind=2):
  """The inverse of `a` under tensordot with `ind` axes: tensordot(tensorinv(a), a, ind) is
  the identity on the shape a.shape[:ind] (which must have as many elements as the rest).

  >>> jnp.linalg.tensorinv(jnp.eye(4).reshape(4, 2, 2), ind=1).shape   # (2, 2, 4)
  """
  arr = ensure_arraylike("tensorinv", a)
  ind = operator.index(ind)
  if ind <= 0:
    raise ValueError(f"ind must be a positive integer; got ind={ind}")
  shape = _shape(arr)
  contracted, rest = shape[:ind], shape[ind:]
  rows, cols = math.prod(contracted), math.prod(rest)
  if rows != cols:
    raise ValueError("tensorinv is only possible when the product of the first `ind` "
                     "dimensions equals that of the remaining dimensions. got "
                     f"arr.shape={shape} with ind={ind}.")
  return lax_numpy.reshape(inv(lax_numpy.reshape(arr, (rows, cols))), (*rest, *contracted))


def tensorsolve(a, b, axes=None):
  """x with tensordot(a, x, x.ndim) == b; `axes` of a are first moved to the end.

  >>> jnp.linalg.tensorsolve(jnp.eye(6).reshape(2, 3, 6), jnp.ones((2, 3))).shape   # (6,)
  """
  a, b = ensure_arraylike("tensorsolve", a, b)
  if axes is not None:
    a = lax_numpy.moveaxis(a, axes, len(axes) * (len(_shape(a)) - 1,))
  b_shape = _shape(b)
  out_shape = _shape(a)[len(b_shape):]
  if _shape(a)[:len(b_shape)] != b_shape:
    raise ValueError("After moving axes to end, leading shape of a must match shape of b. "
                     f"got a.shape={_shape(a)}, b.shape={b_shape}")
  b_size = math.prod(b_shape)
  if b_size != math.prod(out_shape):
    raise ValueError("Input arrays must have prod(a.shape[:b.ndim]) == prod(a.shape[b.ndim:]);"
                     f" got a.shape={_shape(a)}, b.ndim={len(b_shape)}.")
  a = lax_numpy.reshape(a, (b_size, math.prod(out_shape)))
  return lax_numpy.reshape(solve(a, lax_numpy.ravel(b)), out_shape)
