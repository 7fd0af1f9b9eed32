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


# ---- Bessel functions i0e / i1e (Cephes coefficients) -------------------------------------------
# exp(-x) I0(x) on [0, 8] in the variable x / 2 - 2, and sqrt(x) exp(-x) I0(x) on (8, inf) in the
# variable 32 / x - 2; the float32 expansions are the trailing terms of the float64 ones.
_I0E_A = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0E_B = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1)
# exp(-x) I1(x) / x on [0, 8] and sqrt(x) exp(-x) I1(x) on (8, inf).
_I1E_A = (
    2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16,
    -1.10559694773538630805e-15, 7.60068429473540693410e-15, -5.04218550472791168711e-14,
    3.22379336594557470981e-13, -1.98397439776494371520e-12, 1.17361862988909016308e-11,
    -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-9,
    9.38153738649577178388e-9, -4.44505912879632808065e-8, 2.00329475355213526229e-7,
    -8.56872026469545474066e-7, 3.47025130813767847674e-6, -1.32731636560394358279e-5,
    4.78156510755005422638e-5, -1.61760815825896745588e-4, 5.12285956168575772895e-4,
    -1.51357245063125314899e-3, 4.15642294431288815669e-3, -1.05640848946261981558e-2,
    2.47264490306265168283e-2, -5.29459812080949914269e-2, 1.02643658689847095384e-1,
    -1.76416518357834055153e-1, 2.52587186443633654823e-1)
_I1E_B = (
    7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17,
    -3.20952592199342395980e-17, 2.96262899764595013876e-16, 3.30820231092092828324e-16,
    -1.88035477551078244854e-15, -3.81440307243700780478e-15, 1.04202769841288027642e-14,
    4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
    -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11,
    3.25260358301548823856e-11, -1.89749581235054123450e-11, -5.58974346219658380687e-10,
    -3.83538038596423702205e-9, -2.63146884688951950684e-8, -2.51223623787020892529e-7,
    -3.88256480887769039346e-6, -1.10588938762623716291e-4, -9.76109749136146840777e-3,
    7.78576235018280120474e-1)
_F32_TERMS = {"i0e": (18, 7), "i1e": (17, 7)}


def _full_like(x, value):
  return ufuncs._full_like(x, value)


def _chebyshev(t, coeffs):
  """Clenshaw's recurrence for sum' c_k T_k(t / 2), highest-order coefficient first."""
  b0 = _full_like(t, 0)
  b1 = _full_like(t, 0)
  b2 = _full_like(t, 0)
  for c in coeffs:
    b2, b1 = b1, b0
    b0 = lax_ew.add(lax_ew.sub(lax_ew.mul(t, b1), b2), _full_like(t, c))
  return lax_ew.mul(lax_ew.sub(b0, b2), lax_ew._const(b0, 0.5))


def _bessel_scaled(x, name):
  """exp(-|x|) I0(|x|) (name 'i0e') or exp(-|x|) I1(|x|) (name 'i1e', odd in x)."""
  dt = _dtype(x)
  if dt not in (np.float32, np.float64):
    return lax_ew.convert_element_type(
        _bessel_scaled(lax_ew.convert_element_type(x, np.float32), name), dt)
  a, b = (_I0E_A, _I0E_B) if name == "i0e" else (_I1E_A, _I1E_B)
  if dt == np.float32:
    na, nb = _F32_TERMS[name]
    a, b = a[-na:], b[-nb:]
  z = lax_ew.abs(x)
  small = _chebyshev(lax_ew.sub(lax_ew.mul(_full_like(z, 0.5), z), _full_like(z, 2.0)), a)
  large = lax_ew.div(
      _chebyshev(lax_ew.sub(lax_ew.div(_full_like(z, 32.0), z), _full_like(z, 2.0)), b),
      lax_ew.sqrt(z))
  if name == "i1e":
    small = lax_ew.mul(small, z)
  out = lax_ew.select(lax_ew.le(z, lax_ew._const(z, 8.0)), small, large)
  if name == "i1e":
    out = lax_ew.select(lax_ew.lt(x, lax_ew._const(x, 0)), lax_ew.neg(out), out)
  return out


@custom_jvp
def _i0(x):
  ax = lax_ew.abs(x)
  return lax_ew.mul(lax_ew.exp(ax), _bessel_scaled(ax, "i0e"))


@_i0.defjvp
def _i0_jvp(primals, tangents):
  (x,), (t,) = primals, tangents
  ax = lax_ew.abs(x)
  ex, i0e = lax_ew.exp(ax), _bessel_scaled(ax, "i0e")
  t_abs = lax_ew.select(lax_ew.ge(x, lax_ew._const(x, 0)), t, lax_ew.neg(t))
  # d/dz [exp(z) i0e(z)] = exp(z) i0e(z) + exp(z) (i1e(z) - sign(z) i0e(z))
  d_i0e = lax_ew.mul(t_abs, lax_ew.sub(_bessel_scaled(ax, "i1e"),
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


@jit(static_argnames=("num", "endpoint", "dtype", "axis"))
def _logspace(start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
  if dtype is None:
    dtype = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    dtype = dtypes.check_user_dtype(dtype, "logspace")
  computation_dtype = dtypes.to_inexact_dtype(dtype)
  start, stop = ensure_arraylike("logspace", start, stop)
  start = lax_numpy.astype(start, computation_dtype)
  stop = lax_numpy.astype(stop, computation_dtype)
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
  if dtype is None:
    dtype = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    dtype = dtypes.check_user_dtype(dtype, "geomspace")
  computation_dtype = dtypes.to_inexact_dtype(dtype)
  start, stop = ensure_arraylike("geomspace", start, stop)
  start = lax_numpy.astype(start, computation_dtype)
  stop = lax_numpy.astype(stop, computation_dtype)
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
