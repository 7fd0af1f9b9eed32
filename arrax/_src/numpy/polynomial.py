"""Polynomials as 1-D coefficient arrays, highest power first (NumPy's legacy poly1d convention):
poly, polyadd, polyder, polydiv, polyfit, polyint, polymul, polysub, polyval, roots.

roots are the eigenvalues of the companion matrix; polyfit is a least-squares fit on the scaled
Vandermonde matrix; polyval is Horner's rule as a scan over the coefficients.
"""
from __future__ import annotations

import operator

import numpy as np

from arrax._src import core, dtypes
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import shape_ops
from arrax._src.lax import sort as lax_sort
from arrax._src.lax.control_flow import scan
from arrax._src.numpy import creation, lax_numpy, linalg, reductions, ufuncs
from arrax._src.numpy.statistics import convolve
from arrax._src.numpy.util import ensure_arraylike, promote_dtypes, promote_dtypes_inexact
from arrax._src.numpy.util import _dtype, _ndim, _shape


def _len(x):
  shape = _shape(x)
  if not shape:
    raise TypeError("len() of unsized object")
  return shape[0]


def _static(fn, x, what):
  if isinstance(x, core.Tracer):
    raise ConcretizationTypeError(x, f"The problem arose with the {what}.\n")
  return fn(x)


def _complex_dtype(dt):
  return dtypes.canonicalize_dtype(np.result_type(dt, np.complex64))


# ---- roots and poly ------------------------------------------------------------------------------
@jit
def _roots_no_zeros(p):
  """Eigenvalues of the companion matrix of p (p[0] != 0)."""
  n = core.get_aval(p).size
  if n < 2:
    return creation.array([], dtype=_complex_dtype(_dtype(p)))
  companion = creation.eye(n - 1, k=-1, dtype=_dtype(p))
  companion = companion.at[0, :].set(ufuncs.true_divide(ufuncs.negative(p[1:]), p[0]))
  return linalg.eigvals(companion)


def _roll_left(p, shift):
  """p rotated left by the traced amount `shift` (p[shift:] followed by p[:shift])."""
  n = _shape(p)[0]
  start = ufuncs.remainder(lax_ew.convert_element_type(shift, np.int32),
                           lax_ew.max(np.int32(n), np.int32(1)))
  doubled = shape_ops.concatenate([p, p], 0)
  return shape_ops.dynamic_slice_in_dim(doubled, start, n, axis=0)


@jit
def _roots_with_zeros(p, num_leading_zeros):
  n = _shape(p)[0]
  # An all-zero p would make the companion matrix NaN: use ones (all roots become NaN anyway).
  p = lax_numpy.where(ufuncs.equal(n, num_leading_zeros), 1.0, p)
  r = _roots_no_zeros(_roll_left(p, num_leading_zeros))
  r = lax_sort.sort_key_val(ufuncs.equal(r, 0), r)[1]   # zero roots last
  m = _shape(r)[0]
  keep = ufuncs.less(creation.arange(m), ufuncs.subtract(m, num_leading_zeros))
  return lax_numpy.where(keep, r, complex(np.nan, np.nan))


def roots(p, *, strip_zeros=True):
  """Roots of the polynomial with coefficients p (highest power first), as complex values.

  Leading zeros are stripped, which needs concrete coefficients; with strip_zeros=False (usable
  under jit) the roots they would remove are NaN instead.
  """
  p = ensure_arraylike("roots", p)
  p, = promote_dtypes_inexact(p)
  p_arr = lax_numpy.atleast_1d(p)
  if _ndim(p_arr) != 1:
    raise ValueError("Input must be a rank-1 array.")
  n = _shape(p_arr)[0]
  if n < 2:
    return creation.array([], dtype=_complex_dtype(_dtype(p_arr)))
  is_zero = ufuncs.equal(p_arr, 0)
  num_leading_zeros = lax_numpy.where(reductions.all(is_zero), n, reductions.argmin(is_zero))
  if strip_zeros:
    if isinstance(num_leading_zeros, core.Tracer):
      raise ConcretizationTypeError(
          num_leading_zeros,
          "The error occurred in the jnp.roots() function. To use this within a JIT-compiled "
          "context, pass strip_zeros=False, but be aware that leading zeros will result in "
          "some returned roots being set to NaN.")
    return _roots_no_zeros(p_arr[int(num_leading_zeros):])
  return _roots_with_zeros(p_arr, num_leading_zeros)


@jit
def poly(seq_of_zeros):
  """Coefficients of the monic polynomial with the given roots (or of the characteristic
  polynomial of a square matrix)."""
  seq = ensure_arraylike("poly", seq_of_zeros)
  seq, = promote_dtypes_inexact(seq)
  seq = lax_numpy.atleast_1d(seq)
  sh = _shape(seq)
  if len(sh) == 2 and sh[0] == sh[1] and sh[0] != 0:
    seq = linalg.eigvals(seq)
  if _ndim(seq) != 1:
    raise ValueError("input must be 1d or non-empty square 2d array.")
  dt = _dtype(seq)
  if _shape(seq)[0] == 0:
    return creation.ones((), dtype=dt)
  a = creation.ones((1,), dtype=dt)
  for k in range(_shape(seq)[0]):
    a = convolve(a, creation.array([1, ufuncs.negative(seq[k])], dtype=dt), mode="full")
  return a


# ---- evaluation, arithmetic ----------------------------------------------------------------------
@jit(static_argnames=("unroll",))
def polyval(p, x, *, unroll=16):
  """The polynomial p evaluated at x by Horner's rule (p may have trailing batch axes)."""
  p, x = ensure_arraylike("polyval", p, x)
  p_arr, x_arr = promote_dtypes(p, x)
  shape = lax_numpy.broadcast_shapes(_shape(p_arr)[1:], _shape(x_arr))
  y = creation.zeros(shape, _dtype(x_arr))
  y, _ = scan(lambda acc, c: (ufuncs.add(ufuncs.multiply(acc, x_arr), c), None), y, p_arr,
              unroll=unroll)
  return y


@jit
def polyadd(a1, a2):
  """Sum of two polynomials (the shorter is aligned to the end of the longer)."""
  a1, a2 = ensure_arraylike("polyadd", a1, a2)
  a1, a2 = promote_dtypes(a1, a2)
  if _shape(a2)[0] <= _shape(a1)[0]:
    return a1.at[-_shape(a2)[0]:].add(a2)
  return a2.at[-_shape(a1)[0]:].add(a1)


@jit
def polysub(a1, a2):
  """Difference of two polynomials."""
  a1, a2 = ensure_arraylike("polysub", a1, a2)
  a1, a2 = promote_dtypes(a1, a2)
  return polyadd(a1, ufuncs.negative(a2))


def _trim_leading_zeros(filt):
  """filt without its leading zeros (filt must be concrete)."""
  filt = ensure_arraylike("trim_zeros", filt)
  if isinstance(filt, core.Tracer):
    raise ConcretizationTypeError(filt, "Error arose in the `filt` argument of trim_zeros()")
  nonzero = ufuncs.not_equal(filt, 0)
  if not bool(reductions.any(nonzero)):
    return filt[0:0]
  return filt[int(reductions.argmax(nonzero)):]


def polymul(a1, a2, *, trim_leading_zeros=False):
  """Product of two polynomials (their full convolution)."""
  a1, a2 = ensure_arraylike("polymul", a1, a2)
  a1, a2 = promote_dtypes_inexact(a1, a2)
  if trim_leading_zeros and (_len(a1) > 1 or _len(a2) > 1):
    a1, a2 = _trim_leading_zeros(a1), _trim_leading_zeros(a2)
  if _len(a1) == 0:
    a1 = creation.zeros(1, dtype=_dtype(a2))
  if _len(a2) == 0:
    a2 = creation.zeros(1, dtype=_dtype(a1))
  return convolve(a1, a2, mode="full")


def polydiv(u, v, *, trim_leading_zeros=False):
  """Quotient and remainder of the polynomial division u / v."""
  u, v = ensure_arraylike("polydiv", u, v)
  u, v = promote_dtypes_inexact(u, v)
  m, n = _len(u) - 1, _len(v) - 1
  scale = ufuncs.true_divide(1., v[0])
  q = creation.zeros(max(m - n + 1, 1), dtype=_dtype(u))
  for k in range(0, m - n + 1):
    d = ufuncs.multiply(scale, u[k])
    q = q.at[k].set(d)
    u = u.at[k:k + n + 1].add(ufuncs.multiply(ufuncs.negative(d), v))
  if trim_leading_zeros:
    # NumPy's tolerance, approximated by sqrt(eps) of the dtype.
    if isinstance(u, core.Tracer):
      raise ConcretizationTypeError(u, "Error arose in the `filt` argument of "
                                    "trim_zeros_tol()")
    small = ufuncs.less(ufuncs.absolute(u), ufuncs.sqrt(dtypes.finfo(_dtype(u)).eps))
    if bool(reductions.all(small)):
      return q, creation.empty(0, _dtype(u))
    u = u[int(reductions.argmin(small)):]
  return q, u


# ---- calculus -----------------------------------------------------------------------------------
@jit(static_argnames=("m",))
def polyder(p, m=1):
  """The m-th derivative of the polynomial p."""
  p = ensure_arraylike("polyder", p)
  m = _static(operator.index, m, "'m' argument of jnp.polyder")
  p, = promote_dtypes_inexact(p)
  if m < 0:
    raise ValueError("Order of derivative must be positive")
  if m == 0:
    return p
  dt = _dtype(p)
  grid = ufuncs.subtract(creation.arange(m, _len(p), dtype=dt)[None],
                         creation.arange(m, dtype=dt)[:, None])
  coeff = reductions.prod(grid, 0)
  return ufuncs.multiply(p[:-m], coeff[::-1])


@jit(static_argnames=("m",))
def polyint(p, m=1, k=None):
  """The m-th antiderivative of p, with integration constants k (a scalar or m values)."""
  m = _static(operator.index, m, "'m' argument of jnp.polyint")
  k = 0 if k is None else k
  p, k = ensure_arraylike("polyint", p, k)
  p, k = promote_dtypes_inexact(p, k)
  if m < 0:
    raise ValueError("Order of integral must be positive (see polyder)")
  k = lax_numpy.atleast_1d(k)
  if _len(k) == 1:
    k = creation.full((m,), k[0])
  if _shape(k) != (m,):
    raise ValueError("k must be a scalar or a rank-1 array of length 1 or m.")
  if m == 0:
    return p
  dt = _dtype(p)
  grid = ufuncs.subtract(creation.arange(_len(p) + m, dtype=dt)[None],
                         creation.arange(m, dtype=dt)[:, None])
  coeff = reductions.prod(ufuncs.maximum(1, grid), 0)[::-1]
  return ufuncs.true_divide(lax_numpy.concatenate((p, k)), coeff)


# ---- least-squares fit --------------------------------------------------------------------------
def _vander(x, n):
  powers = shape_ops.iota(_dtype(x), n)
  powers = lax_ew.sub(lax_ew._const(powers, n - 1), powers)
  return ufuncs.power(x[..., None], powers[None])


@jit(static_argnames=("deg", "rcond", "full", "cov"))
def polyfit(x, y, deg, rcond=None, full=False, w=None, cov=False):
  """Least-squares polynomial fit of degree `deg` to the points (x, y), highest power first.

  `w` weights the residuals; `full=True` also returns (residuals, rank, singular values, rcond);
  `cov=True` (or 'unscaled') also returns the covariance matrix of the coefficients.
  """
  if w is None:
    x, y = ensure_arraylike("polyfit", x, y)
  else:
    x, y, w = ensure_arraylike("polyfit", x, y, w)
  deg = _static(int, deg, "deg must be int")
  order = deg + 1
  if deg < 0:
    raise ValueError("expected deg >= 0")
  if _ndim(x) != 1:
    raise TypeError("expected 1D vector for x")
  if core.get_aval(x).size == 0:
    raise TypeError("expected non-empty vector for x")
  if _ndim(y) < 1 or _ndim(y) > 2:
    raise TypeError("expected 1D or 2D array for y")
  if _shape(x)[0] != _shape(y)[0]:
    raise TypeError("expected x and y to have same length")
  if rcond is None:
    rcond = _shape(x)[0] * float(dtypes.finfo(_dtype(x)).eps)
  rcond = _static(float, rcond, "rcond must be float")
  lhs = _vander(x, order)
  rhs = y
  if w is not None:
    w, = promote_dtypes_inexact(w)
    if _ndim(w) != 1:
      raise TypeError("expected a 1-d array for weights")
    if _shape(w)[0] != _shape(y)[0]:
      raise TypeError("expected w and y to have the same length")
    lhs = ufuncs.multiply(lhs, w[:, None])
    rhs = ufuncs.multiply(rhs, w[:, None] if _ndim(rhs) == 2 else w)
  # Column scaling improves the conditioning of the least-squares problem.
  scale = ufuncs.sqrt(reductions.sum(ufuncs.multiply(lhs, lhs), axis=0))
  lhs = ufuncs.true_divide(lhs, scale[None, :])
  c, resids, rank, s = linalg.lstsq(lhs, rhs, rcond)
  if _ndim(c) > 1:
    c = lax_numpy.transpose(ufuncs.true_divide(lax_numpy.transpose(c), scale[None, :]))
  else:
    c = ufuncs.true_divide(c, scale)
  if full:
    return c, resids, rank, s, creation.asarray(rcond)
  if not cov:
    return c
  vbase = linalg.inv(lax_numpy.dot(lax_numpy.transpose(lhs), lhs))
  vbase = ufuncs.true_divide(vbase, lax_numpy.outer(scale, scale))
  if cov == "unscaled":
    fac = creation.array(1.0)
  else:
    if _shape(x)[0] <= order:
      raise ValueError("the number of data points must exceed order to scale the covariance "
                       "matrix")
    fac = ufuncs.true_divide(resids, _shape(x)[0] - order)
  if _ndim(y) == 1:
    return c, ufuncs.multiply(vbase, lax_numpy.atleast_1d(fac)[None])
  return c, ufuncs.multiply(vbase[:, :, None], lax_numpy.atleast_1d(fac)[None, None, :])
