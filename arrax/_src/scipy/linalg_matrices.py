"""The special matrices of jax.scipy.linalg (block_diag, toeplitz, pascal, dft, ...).

Short jnp programs; the ones built from vectors are vectorized over leading axes, as JAX's are.
"""
from __future__ import annotations

import math
import operator
from functools import partial

import numpy as np

from arrax._src import dtypes
from arrax._src.jit import jit
from arrax._src.lax import convolution as lax_conv
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax
from arrax._src.lax import shape_ops
from arrax._src.numpy import assembly, creation, index_tricks, lax_numpy, padding, searching, ufuncs
from arrax._src.numpy.util import check_arraylike, promote_dtypes
from arrax._src.numpy.vectorize import vectorize
from arrax._src.scipy.special import comb, promote_args_inexact

_HIGHEST = lax_dot.Precision.HIGHEST


def _asarray(x):
  return creation.asarray(x)


# ---- assembling matrices ----------------------------------------------------------------------
@jit
def block_diag(*arrs):
  """The block-diagonal matrix of the given (at most 2-D) arrays."""
  if len(arrs) == 0:
    arrs = (creation.zeros((1, 0)),)
  arrs = tuple(promote_dtypes(*arrs))
  bad = [i for i, a in enumerate(arrs) if np.ndim(a) > 2]
  if bad:
    raise ValueError("Arguments to jax.scipy.linalg.block_diag must have at most 2 "
                     f"dimensions, got {arrs[bad[0]]} at argument {bad[0]}.")
  arrs = [lax_numpy.atleast_2d(a) for a in arrs]
  dtype = arrs[0].dtype
  total = sum(a.shape[1] for a in arrs)
  padded, col = [], 0
  for a in arrs:
    cols = a.shape[1]
    padded.append(shape_ops.pad(a, dtype.type(0), ((0, 0, 0), (col, total - cols - col, 0))))
    col += cols
  return lax_numpy.concatenate(padded, axis=0)


def _windows(v, width):
  """The sliding windows v[i:i + width] as rows (v 1-D), by a patches convolution."""
  return lax_conv.conv_general_dilated_patches(
      v.reshape((1, v.shape[0], 1)), (width,), (1,), "VALID",
      dimension_numbers=("NTC", "IOT", "NTC"), precision=_HIGHEST)[0]


@partial(vectorize, signature="(m),(n)->(m,n)")
def _toeplitz(c, r):
  m, = c.shape
  n, = r.shape
  if m == 0 or n == 0:
    return creation.empty((m, n), dtype=dtypes.promote_types(c.dtype, r.dtype))
  return lax_numpy.flip(_windows(lax_numpy.concatenate((c[::-1], r[1:])), n), axis=0)


@jit
def toeplitz(c, r=None):
  """The Toeplitz matrix with first column c and first row r (default conj(c))."""
  if r is None:
    check_arraylike("toeplitz", c)
    r = ufuncs.conjugate(_asarray(c))
  else:
    check_arraylike("toeplitz", c, r)
  return _toeplitz(lax_numpy.atleast_1d(_asarray(c)), lax_numpy.atleast_1d(_asarray(r)))


@partial(vectorize, signature="(m),(n)->(m,n)")
def _hankel(c, r):
  m, = c.shape
  n, = r.shape
  if m == 0 or n == 0:
    return creation.empty((m, n), dtype=dtypes.result_type(c, r))
  return _windows(lax_numpy.concatenate((c, r[1:])), n)


def hankel(c, r=None):
  """The Hankel matrix with first column c and last row r (default zeros)."""
  if r is None:
    check_arraylike("hankel", c)
    c = _asarray(c)
    r = creation.zeros_like(c)
  else:
    check_arraylike("hankel", c, r)
    c, r = _asarray(c), _asarray(r)
  if c.ndim == 0:
    raise ValueError("hankel: c must be at least 1-dimensional, got a scalar.")
  if r.ndim == 0:
    raise ValueError("hankel: r must be at least 1-dimensional, got a scalar.")
  if c.ndim < r.ndim:
    c = shape_ops.expand_dims(c, tuple(range(r.ndim - c.ndim)))
  elif r.ndim < c.ndim:
    r = shape_ops.expand_dims(r, tuple(range(c.ndim - r.ndim)))
  return _hankel(c, r)


@partial(vectorize, signature="(n)->(n,n)")
def _circulant(c):
  n, = c.shape
  return c[(creation.arange(n)[:, None] - creation.arange(n)[None, :]) % n]


def circulant(c):
  """The circulant matrix whose first column is c."""
  check_arraylike("circulant", c)
  return _circulant(lax_numpy.atleast_1d(_asarray(c)))


@partial(vectorize, signature="(n),(m)->(n,n)")
def _leslie(f, s):
  f, s = promote_dtypes(f, s)
  return index_tricks.diag(s, k=-1).at[0].set(f)


def leslie(f, s):
  """The Leslie matrix: fecundities f on the first row, survival rates s below the diagonal."""
  check_arraylike("leslie", f, s)
  f, s = lax_numpy.atleast_1d(f), lax_numpy.atleast_1d(s)
  if f.shape[-1] < 2:
    raise ValueError("The length of f along the last axis must be at least 2; got shape "
                     f"{f.shape}.")
  if s.shape[-1] != f.shape[-1] - 1:
    raise ValueError("Incorrect lengths for f and s. The length of s along the last axis must "
                     f"be one less than the length of f; got f shape {f.shape} and s shape "
                     f"{s.shape}.")
  return _leslie(f, s)


@partial(vectorize, signature="(n)->(m,m)")
def _companion(a):
  first_row = -a[1:] / a[0]
  m = a.shape[0] - 1
  return creation.eye(m, m, k=-1, dtype=first_row.dtype).at[0].set(first_row)


def companion(a):
  """The companion matrix of the polynomial with coefficients a (highest degree first)."""
  a, = promote_args_inexact("companion", a)
  a = lax_numpy.atleast_1d(a)
  if a.shape[-1] < 2:
    raise ValueError("The length of `a` along the last axis must be at least 2; got shape "
                     f"{a.shape}.")
  return _companion(a)


def fiedler(a):
  """The symmetric Fiedler matrix |a_i - a_j|."""
  check_arraylike("fiedler", a)
  a = lax_numpy.atleast_1d(a)
  return ufuncs.abs(a[..., None] - a[..., None, :])


@partial(vectorize, signature="(n)->(m,m)")
def _fiedler_companion(a):
  n = a.shape[0] - 1
  if n == 0:
    return creation.empty((0, 0), dtype=a.dtype)
  a = a / a[0]
  if n == 1:
    return -a[1:].reshape(1, 1)
  i = creation.arange(n)[:, None]
  j = creation.arange(n)[None, :]
  above = -a[ufuncs.minimum(i + 2, n)]
  below = -a[ufuncs.minimum(i + 1, n)]
  even, odd = i % 2 == 0, i % 2 == 1
  one, zero = creation.array(1, dtype=a.dtype), creation.array(0, dtype=a.dtype)
  conds = [(i == 0) & (j == 0), (i == 1) & (j == 0), (j == i + 1) & even, (j == i + 2) & even,
           (j == i - 1) & even & (i >= 2), (j == i - 2) & odd & (i >= 3)]
  return searching.select(conds, [-a[1], one, above, one, below, one], default=zero)


def fiedler_companion(a):
  """The pentadiagonal Fiedler companion matrix of the polynomial a."""
  a, = promote_args_inexact("fiedler_companion", a)
  a = lax_numpy.atleast_1d(a)
  if a.shape[-1] == 0:
    raise ValueError("fiedler_companion requires the last axis of 'a' to have nonzero length, "
                     f"but got an array of shape {a.shape}.")
  return _fiedler_companion(a)


@jit(static_argnames=("n", "mode"))
def convolution_matrix(a, n, mode="full"):
  """The Toeplitz matrix whose product with a length-n vector is its convolution with a."""
  n = operator.index(n)
  if n <= 0:
    raise ValueError(f"n must be a positive integer; got {n}.")
  check_arraylike("convolution_matrix", a)
  a = _asarray(a)
  if a.ndim == 0:
    raise ValueError("convolution_matrix: a must be at least 1-dimensional, got a scalar.")
  m = a.shape[-1]
  if m < 1:
    raise ValueError(f"len(a) must be at least 1; got shape {a.shape}.")
  if mode not in ("full", "valid", "same"):
    raise ValueError(f"mode must be one of 'full', 'valid', 'same'; got {mode!r}.")
  widths = [(0, 0)] * (a.ndim - 1) + [(0, n - 1)]
  az = padding.pad(a, widths)
  raz = padding.pad(lax_numpy.flip(a, axis=-1), widths)
  total = m + n - 1
  if mode == "same":
    trim = min(n, m) - 1
    tb, te = trim // 2, trim - trim // 2
  elif mode == "valid":
    tb = te = min(n, m) - 1
  else:
    tb = te = 0
  col0 = shape_ops.slice_in_dim(az, tb, total - te, axis=a.ndim - 1)
  row0 = shape_ops.slice_in_dim(raz, total - n - tb, total - tb, axis=a.ndim - 1)
  return toeplitz(col0, row0)


@jit(static_argnames=("n",))
def hilbert(n):
  """The n x n Hilbert matrix 1 / (i + j + 1)."""
  a = shape_ops.broadcasted_iota(dtypes.canonicalize_dtype(float), (n, 1), 0)
  return 1 / (a + a.T + 1)


@jit(static_argnames=("n",))
def invhilbert(n):
  """The inverse of the n x n Hilbert matrix (in floating point)."""
  a = creation.arange(n, dtype=dtypes.default_float_dtype())
  i, j = a[:, None], a[None, :]
  s = i + j
  return ((-1.0) ** s * (s + 1.0) * comb(n + i, n - j - 1) * comb(n + j, n - i - 1)
          * comb(s, i) ** 2)


def _binom(n, k):
  return lax.exp(lax.lgamma(n + 1.0) - lax.lgamma(n - k + 1.0) - lax.lgamma(k + 1.0))


def _check_kind(kind, sep):
  kind = "symmetric" if kind is None else kind
  valid = ["symmetric", "lower", "upper"]
  if kind not in valid:
    raise ValueError(f"Expected kind to be {sep} of: {valid}; got {kind}")
  return kind


@jit(static_argnames=("n", "kind"))
def pascal(n, kind=None):
  """The n x n Pascal matrix: 'symmetric' (default), 'lower' or 'upper' binomials."""
  kind = _check_kind(kind, "on")
  a = creation.arange(n, dtype=np.float32)
  lower = jit(_binom)(a[:, None], a[None, :])
  if kind == "lower":
    return lower
  if kind == "upper":
    return lower.T
  return lax_numpy.dot(lower, lower.T)


@jit(static_argnames=("n", "kind"))
def invpascal(n, kind=None):
  """The inverse of pascal(n, kind)."""
  kind = _check_kind(kind, "one")
  a = creation.arange(n, dtype=dtypes.default_float_dtype())
  i, j = a[:, None], a[None, :]
  lower = ((-1.0) ** (i - j)) * jit(_binom)(i, j)
  if kind == "lower":
    return lower
  if kind == "upper":
    return lower.T
  return lax_numpy.dot(lower.T, lower)


@jit(static_argnames=("n", "full"))
def helmert(n, full=False):
  """The Helmert matrix of order n (its first row dropped unless `full`)."""
  if n < 1:
    raise ValueError(f"n must be a positive integer; got {n}.")
  i = creation.arange(n - 1)[:, None]
  j = creation.arange(n)[None, :]
  k = (i + 1).astype(dtypes.default_float_dtype())
  denom = ufuncs.sqrt(k * (k + 1))
  h = lax_numpy.where(j <= i, 1.0 / denom,
                      lax_numpy.where(j == i + 1, -k / denom, creation.zeros_like(denom)))
  if full:
    first = creation.full((1, n), 1.0 / ufuncs.sqrt(n), dtype=h.dtype)
    h = lax_numpy.concatenate([first, h], axis=0)
  return h


@jit(static_argnames=("n", "dtype"))
def hadamard(n, dtype=int):
  """The n x n Hadamard matrix (Sylvester's construction; n a power of 2)."""
  if n < 1 or not math.log2(n).is_integer():
    raise ValueError(f"n must be a positive power of 2; got {n}.")
  h = creation.ones((1, 1), dtype=dtype)
  for _ in range(int(math.log2(n))):
    h = assembly.block([[h, h], [h, -h]])
  return h


@jit(static_argnames=("n", "scale", "dtype"))
def dft(n, scale=None, *, dtype=None):
  """The n x n discrete Fourier transform matrix (scale None, 'sqrtn' or 'n')."""
  if scale is not None and scale not in ("sqrtn", "n"):
    raise ValueError(f"scale must be None, 'sqrtn', or 'n'; got {scale!r}.")
  if dtype is None:
    dtype = dtypes.canonicalize_dtype(complex)
  else:
    dtype = dtypes.check_user_dtype(dtype, "dft")
    if not dtypes.issubdtype(dtype, np.complexfloating):
      raise ValueError(f"dtype must be a complex floating-point type; got {dtype}.")
  a = creation.arange(n, dtype=dtype)
  omegas = ufuncs.exp(-2j * np.pi * a[:, None] * a[None, :] / n)
  if scale == "sqrtn":
    omegas = omegas / ufuncs.sqrt(n)
  elif scale == "n":
    omegas = omegas / n
  return omegas
