"""Window functions (bartlett, blackman, hamming, hanning, kaiser), the Bessel function i0,
floating-point decomposition (frexp, ldexp, modf), integer gcd / lcm / bitwise_count, and the
logarithmic grids logspace / geomspace.

i0 is exp(|x|) * i0e(|x|), with i0e (and i1e, for the derivative) evaluated from Cephes'
Chebyshev expansions on [0, 8] and (8, inf), in float32 for the 16-bit float types, as JAX does.
"""
from __future__ import annotations

import operator

import numpy as np

from arrax._src import core, dtypes
from arrax._src.custom_derivatives import custom_jvp
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import shape_ops
from arrax._src.lax import special as lax_special
from arrax._src.lax.control_flow import while_loop
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs, util
from arrax._src.numpy.util import (ensure_arraylike, promote_args_inexact,
                                   promote_args_numeric, promote_dtypes,
                                   promote_dtypes_inexact)
from arrax._src.numpy.util import _dtype

_where = lax_numpy._where


def _static(fn, x, what):
  if isinstance(x, core.Tracer):
    raise ConcretizationTypeError(x, f"The problem arose with the {what}.\n")
  return fn(x)


# ---- i0 (on lax's exponentially scaled Bessel functions, as JAX) --------------------------
@custom_jvp
def _i0(x):
  ax = lax_ew.abs(x)
  return lax_ew.mul(lax_ew.exp(ax), lax_special.bessel_i0e(ax))


@_i0.defjvp
def _i0_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  ax = lax_ew.abs(x)
  ex, i0e = lax_ew.exp(ax), lax_special.bessel_i0e(ax)
  t_abs = lax_ew.select(lax_ew.ge(x, lax_ew._const(x, 0)), t, lax_ew.neg(t))
  # d/dz [exp(z) i0e(z)] = exp(z) i0e(z) + exp(z) (i1e(z) - sign(z) i0e(z))
  d_i0e = lax_ew.mul(t_abs, lax_ew.sub(lax_special.bessel_i1e(ax),
                                       lax_ew.mul(lax_ew.sign(ax), i0e)))
  t_out = lax_ew.add(lax_ew.mul(lax_ew.mul(t_abs, ex), i0e), lax_ew.mul(ex, d_i0e))
  # |x| has no derivative at 0; i0 is flat there.
  return lax_ew.mul(ex, i0e), _where(lax_ew.eq(x, lax_ew._const(x, 0)), 0.0, t_out)


@jit
def i0(x):
  """The modified Bessel function of the first kind of order zero, I0(x)."""
  x, = promote_args_inexact("i0", x)
  if not dtypes.issubdtype(_dtype(x), np.floating):
    raise ValueError(f"Unsupported input type to jax.numpy.i0: {_dtype(x)}")
  return _i0(x)


# ---- window functions ----------------------------------------------------------------------------
def _window_grid(M, name):
  """(M, n): the static length and the float grid 0..M-1, or (M, None) for M <= 1."""
  M = _static(int, M, f"M argument of jnp.{name}")
  if M <= 1:
    return M, None
  return M, shape_ops.iota(dtypes.default_float_dtype(), M)


def _ones_window(M):
  return creation.full((M,), 1, dtypes.default_float_dtype())


def bartlett(M):
  """The Bartlett (triangular) window of length M."""
  M, n = _window_grid(M, "bartlett")
  if n is None:
    return _ones_window(M)
  return 1 - abs(2 * n + 1 - M) / (M - 1)


def blackman(M):
  """The Blackman window of length M."""
  M, n = _window_grid(M, "blackman")
  if n is None:
    return _ones_window(M)
  return (0.42 - 0.5 * ufuncs.cos(2 * np.pi * n / (M - 1))
          + 0.08 * ufuncs.cos(4 * np.pi * n / (M - 1)))


def hamming(M):
  """The Hamming window of length M."""
  M, n = _window_grid(M, "hamming")
  if n is None:
    return _ones_window(M)
  return 0.54 - 0.46 * ufuncs.cos(2 * np.pi * n / (M - 1))


def hanning(M):
  """The Hann window of length M."""
  M, n = _window_grid(M, "hanning")
  if n is None:
    return _ones_window(M)
  return 0.5 * (1 - ufuncs.cos(2 * np.pi * n / (M - 1)))


def kaiser(M, beta):
  """The Kaiser window of length M with shape parameter beta."""
  M, n = _window_grid(M, "kaiser")
  if n is None:
    return _ones_window(M)
  half = 0.5 * (M - 1)
  return i0(beta * ufuncs.sqrt(1 - ((n - half) / half) ** 2)) / i0(beta)


# ---- floating-point decomposition ----------------------------------------------------------------
_INT_OF_BITS = {16: np.int16, 32: np.int32, 64: np.int64}


def _bits_normalized(x):
  """x's bits as a same-width integer, subnormals first scaled up by 2**nmant; and the
  exponent correction (-nmant for those, else 0)."""
  info = dtypes.finfo(_dtype(x))
  int_dt = _INT_OF_BITS[info.bits]
  tiny = ufuncs.less(lax_ew.abs(x), info.tiny)
  x = _where(tiny, ufuncs.multiply(x, lax_ew._const(x, 1 << info.nmant)), x)
  shift = _where(tiny, int_dt(-info.nmant), int_dt(0))
  return lax_ew.bitcast_convert_type(x, int_dt), shift


@custom_jvp
def _frexp(x):
  dt = _dtype(x)
  info = dtypes.finfo(dt)
  exp_mask = (1 << info.nexp) - 1
  bias = 1 - info.minexp
  bits, e = _bits_normalized(x)
  biased = ufuncs.bitwise_and(ufuncs.right_shift(bits, info.nmant), exp_mask)
  e = ufuncs.add(e, ufuncs.add(ufuncs.subtract(biased, bias), 1))
  bits = ufuncs.bitwise_and(bits, ~(exp_mask << info.nmant))   # clear the exponent ...
  bits = ufuncs.bitwise_or(bits, (bias - 1) << info.nmant)     # ... and set it to 2**-1
  mantissa = lax_ew.bitcast_convert_type(bits, dt)
  special = ufuncs.logical_or(ufuncs.logical_or(ufuncs.isinf(x), ufuncs.isnan(x)),
                              ufuncs.equal(x, 0))
  e = _where(special, ufuncs._full_like(e, 0), e)
  return _where(special, x, mantissa), lax_ew.convert_element_type(e, np.int32)


@_frexp.defjvp
def _frexp_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  m, e = frexp(x)
  dm = ufuncs.multiply(t, ufuncs.exp2(ufuncs.negative(lax_numpy.astype(e, _dtype(t)))))
  return (m, e), (dm, ufuncs._full_like(e, 0, dtype=dtypes.float0))


@jit
def frexp(x, /):
  """Split x into a mantissa in [0.5, 1) (in magnitude) and an int32 exponent: x = m * 2**e."""
  x = ensure_arraylike("frexp", x)
  x, = promote_dtypes_inexact(x)
  if dtypes.issubdtype(_dtype(x), np.complexfloating):
    raise TypeError("frexp does not support complex-valued inputs")
  return _frexp(x)


@jit
def ldexp(x1, x2, /):
  """x1 * 2**x2 for integer x2 (without intermediate overflow)."""
  x1, x2 = ensure_arraylike("ldexp", x1, x2)
  d1, d2 = _dtype(x1), _dtype(x2)
  if dtypes.issubdtype(d1, np.complexfloating) or dtypes.issubdtype(d2, np.inexact):
    raise ValueError(f"ldexp not supported for input types {(d1, d2)}")
  x1, = promote_args_inexact("ldexp", x1)
  x2 = lax_ew.convert_element_type(x2, _dtype(x1))
  # Scale the mantissa, not x1 itself: x1 * 2**x2 may be finite while 2**x2 overflows.
  m, e = frexp(x1)
  e = lax_numpy.astype(ufuncs.add(lax_numpy.astype(e, _dtype(x2)), x2), _dtype(x1))
  m = _where(ufuncs.greater(e, 0), ufuncs.multiply(m, 2), m)
  e = _where(ufuncs.greater(e, 0), ufuncs.subtract(e, 1), e)
  x = ufuncs.multiply(m, ufuncs.power(2, lax_numpy.astype(e, _dtype(m))))
  keep = ufuncs.logical_or(ufuncs.isinf(x1), ufuncs.equal(x1, 0))
  return _where(keep, x1, x)


@jit
def modf(x, /, out=None):
  """Fractional and integral parts of x, both with x's sign."""
  x = ensure_arraylike("modf", x)
  x, = promote_dtypes_inexact(x)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.modf is not supported.")
  whole = _where(lax_ew.ge(x, lax_ew._const(x, 0)), ufuncs.floor(x), ufuncs.ceil(x))
  return ufuncs.subtract(x, whole), whole


# ---- integer functions ---------------------------------------------------------------------------
def _gcd_cond(carry):
  _, b = carry
  return reductions.any(ufuncs.not_equal(b, 0))


def _gcd_body(carry):
  a, b = carry
  a, b = (_where(ufuncs.not_equal(b, 0), b, a),
          _where(ufuncs.not_equal(b, 0), lax_ew.rem(a, b), lax_ew._const(b, 0)))
  return _where(ufuncs.less(a, b), b, a), _where(ufuncs.less(a, b), a, b)


@jit
def gcd(x1, x2):
  """Greatest common divisor of |x1| and |x2| (Euclid's algorithm, elementwise)."""
  x1, x2 = ensure_arraylike("gcd", x1, x2)
  x1, x2 = promote_dtypes(x1, x2)
  if not dtypes.issubdtype(_dtype(x1), np.integer):
    raise ValueError("Arguments to jax.numpy.gcd must be integers.")
  x1, x2 = lax_numpy.broadcast_arrays(x1, x2)
  result, _ = while_loop(_gcd_cond, _gcd_body, (ufuncs.absolute(x1), ufuncs.absolute(x2)))
  return result


@jit
def lcm(x1, x2):
  """Least common multiple of |x1| and |x2| (0 if either is 0)."""
  x1, x2 = ensure_arraylike("lcm", x1, x2)
  x1, x2 = promote_dtypes(x1, x2)
  x1, x2 = ufuncs.absolute(x1), ufuncs.absolute(x2)
  if not dtypes.issubdtype(_dtype(x1), np.integer):
    raise ValueError("Arguments to jax.numpy.lcm must be integers.")
  d = gcd(x1, x2)
  return _where(ufuncs.equal(d, 0), lax_ew._const(d, 0),
                ufuncs.multiply(x1, ufuncs.floor_divide(x2, d)))


@jit
def bitwise_count(x, /):
  """Number of 1 bits in |x|, as uint8."""
  x, = promote_args_numeric("bitwise_count", x)
  return lax_ew.convert_element_type(lax_ew.population_count(ufuncs.absolute(x)), np.uint8)


# ---- logarithmic grids ---------------------------------------------------------------------------
def logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
  """`num` values base**t for t evenly spaced from start to stop."""
  num = _static(operator.index, num, "'num' argument of jnp.logspace")
  axis = _static(operator.index, axis, "'axis' argument of jnp.logspace")
  return _logspace(start, stop, num, endpoint, base, dtype, axis)


def _space_operands(name, start, stop, dtype):
  """(start, stop in the computation dtype, the result dtype, the computation dtype) of
  logspace / geomspace."""
  if dtype is None:
    dtype = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    dtype = dtypes.check_user_dtype(dtype, name)
  computation_dtype = dtypes.to_inexact_dtype(dtype)
  start, stop = ensure_arraylike(name, start, stop)
  return (lax_numpy.astype(start, computation_dtype), lax_numpy.astype(stop, computation_dtype),
          dtype, computation_dtype)


@jit(static_argnames=("num", "endpoint", "dtype", "axis"))
def _logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
  start, stop, dtype, computation_dtype = _space_operands("logspace", start, stop, dtype)
  grid = creation.linspace(start, stop, num, endpoint=endpoint, retstep=False, dtype=None,
                           axis=axis)
  return lax_ew.convert_element_type(ufuncs.power(base, grid), dtype)


def geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
  """`num` values in geometric progression from start to stop."""
  num = _static(operator.index, num, "'num' argument of jnp.geomspace")
  axis = _static(operator.index, axis, "'axis' argument of jnp.geomspace")
  return _geomspace(start, stop, num, endpoint, dtype, axis)


@jit(static_argnames=("num", "endpoint", "dtype", "axis"))
def _geomspace(start, stop, num=50, endpoint=True, dtype=None, axis=0):
  start, stop, dtype, computation_dtype = _space_operands("geomspace", start, stop, dtype)
  sign = ufuncs.sign(start)
  res = ufuncs.multiply(sign, logspace(ufuncs.log10(ufuncs.true_divide(start, sign)),
                                       ufuncs.log10(ufuncs.true_divide(stop, sign)), num,
                                       endpoint=endpoint, base=10.0, dtype=computation_dtype,
                                       axis=0))
  nd = util.ndim_of(res)
  axis = util.canonicalize_axis(axis, nd)
  if axis != 0:
    res = shape_ops.transpose(res, (*range(1, axis + 1), 0, *range(axis + 1, nd)))
  return lax_ew.convert_element_type(res, dtype)
