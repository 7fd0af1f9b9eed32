"""NumPy's elementwise functions on top of the lax primitives.

Like JAX, most are `jit(inline=True)`: one cached executable per signature when called eagerly,
inlined into an enclosing trace. A few (floor_divide, remainder, ...) are plain `jit` and show up
as nested `jit` equations in jaxprs, as in JAX.
"""
from __future__ import annotations

import operator

import numpy as np

from arrax._src import core, dtypes
from arrax._src.jit import jit
from arrax._src.lax import lax
from arrax._src.numpy.util import (check_arraylike, inline_jit, promote_args,
                                   promote_args_inexact, promote_args_numeric)


def _dtype(x):
  return core.get_aval(x).dtype


def _is_int(x):
  return _dtype(x).kind in "iu"


def _is_bool(x):
  return _dtype(x) == np.bool_


def _is_complex(x):
  return _dtype(x).kind == "c"


def _unary_inexact(name, lax_fn):
  @inline_jit
  def fn(x, /):
    x, = promote_args_inexact(name, x)
    return lax_fn(x)
  _rename(fn, name)
  fn.__doc__ = f"Elementwise {name}, as numpy.{name}."
  return fn


def _rename(fn, name):
  fn._fun.__name__ = name
  fn._name = name
  fn.__name__ = name
  return fn


sin = _unary_inexact("sin", lax.sin)
cos = _unary_inexact("cos", lax.cos)
tan = _unary_inexact("tan", lax.tan)
arcsin = _unary_inexact("arcsin", lax.asin)
arccos = _unary_inexact("arccos", lax.acos)
arctan = _unary_inexact("arctan", lax.atan)
sinh = _unary_inexact("sinh", lax.sinh)
cosh = _unary_inexact("cosh", lax.cosh)
tanh = _unary_inexact("tanh", lax.tanh)
arcsinh = _unary_inexact("arcsinh", lax.asinh)
arccosh = _unary_inexact("arccosh", lax.acosh)
arctanh = _unary_inexact("arctanh", lax.atanh)
exp = _unary_inexact("exp", lax.exp)
exp2 = _unary_inexact("exp2", lax.exp2)
expm1 = _unary_inexact("expm1", lax.expm1)
log = _unary_inexact("log", lax.log)
log1p = _unary_inexact("log1p", lax.log1p)
sqrt = _unary_inexact("sqrt", lax.sqrt)
cbrt = _unary_inexact("cbrt", lax.cbrt)
asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh


@inline_jit
def log2(x, /):
  """Base-2 logarithm."""
  x, = promote_args_inexact("log2", x)
  return lax.div(lax.log(x), lax.log(lax._convert_element_type(2, _dtype(x), False)))


@inline_jit
def log10(x, /):
  """Base-10 logarithm."""
  x, = promote_args_inexact("log10", x)
  return lax.div(lax.log(x), lax.log(lax._convert_element_type(10, _dtype(x), False)))


def _binary(name, lax_fn, promote=promote_args, bool_fn=None):
  @inline_jit
  def fn(x1, x2, /):
    x1, x2 = promote(name, x1, x2)
    if bool_fn is not None and _is_bool(x1):
      return bool_fn(x1, x2)
    return lax_fn(x1, x2)
  _rename(fn, name)
  fn.__doc__ = f"Elementwise {name}, as numpy.{name}."
  return fn


def _no_bool_subtract(x1, x2):
  raise TypeError("numpy boolean subtract, the `-` operator, is not supported, use the "
                  "bitwise_xor, the `^` operator, or the logical_xor function instead.")


add = _binary("add", lax.add, bool_fn=lax.bitwise_or)
subtract = _binary("subtract", lax.sub, bool_fn=_no_bool_subtract)
multiply = _binary("multiply", lax.mul, bool_fn=lax.bitwise_and)
true_divide = _binary("true_divide", lax.div, promote=promote_args_inexact)
divide = true_divide
arctan2 = _binary("arctan2", lax.atan2, promote=promote_args_inexact)
atan2 = arctan2
nextafter = _binary("nextafter", lax.nextafter, promote=promote_args_inexact)
equal = _binary("equal", lax.eq)
not_equal = _binary("not_equal", lax.ne)
less = _binary("less", lax.lt)
less_equal = _binary("less_equal", lax.le)
greater = _binary("greater", lax.gt)
greater_equal = _binary("greater_equal", lax.ge)
maximum = _binary("maximum", lax.max)
minimum = _binary("minimum", lax.min)
bitwise_and = _binary("bitwise_and", lax.bitwise_and)
bitwise_or = _binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)
left_shift = _binary("left_shift", lax.shift_left)
bitwise_left_shift = left_shift


@inline_jit
def right_shift(x1, x2, /):
  """Arithmetic shift for signed ints, logical for unsigned, as numpy.right_shift."""
  x1, x2 = promote_args_numeric("right_shift", x1, x2)
  if _dtype(x1).kind == "u":
    return lax.shift_right_logical(x1, x2)
  return lax.shift_right_arithmetic(x1, x2)


bitwise_right_shift = right_shift


def _logical(name, lax_fn):
  @inline_jit
  def fn(*args):
    check_arraylike(name, *args)
    args = [lax._convert_element_type(a, np.bool_, False) for a in args]
    from arrax._src.numpy.util import promote_shapes
    return lax_fn(*promote_shapes(name, *args))
  return _rename(fn, name)


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)
logical_not = _logical("logical_not", lax.bitwise_not)


@inline_jit
def bitwise_not(x, /):
  """Bitwise NOT (logical NOT for booleans)."""
  x, = promote_args("bitwise_not", x)
  return lax.bitwise_not(x)


invert = bitwise_invert = bitwise_not


@inline_jit
def negative(x, /):
  """Numerical negative."""
  x, = promote_args("negative", x)
  if _is_bool(x):
    raise TypeError("The numpy boolean negative, the `-` operator, is not supported, use the "
                    "`~` operator or the logical_not function instead.")
  return lax.neg(x)


@inline_jit
def positive(x, /):
  x, = promote_args("positive", x)
  return x


@inline_jit
def absolute(x, /):
  """Absolute value (the modulus for complex inputs)."""
  x, = promote_args("absolute", x)
  if _is_bool(x) or _dtype(x).kind == "u":
    return x
  return lax.abs(x)


abs = fabs = absolute  # noqa: A001


@inline_jit
def sign(x, /):
  """-1, 0 or 1 by sign (x/|x| for complex)."""
  x, = promote_args("sign", x)
  if _is_complex(x):
    re = lax.real(x)
    return lax.complex(lax.sign(re), lax._convert_element_type(0, _dtype(re), False))
  return lax.sign(x)


def _float_or_identity(name, lax_fn):
  @inline_jit
  def fn(x, /):
    check_arraylike(name, x)
    x, = promote_args(name, x)
    if _is_int(x) or _is_bool(x):
      return lax.asarray_operand(x)
    return lax_fn(x)
  return _rename(fn, name)


floor = _float_or_identity("floor", lax.floor)
ceil = _float_or_identity("ceil", lax.ceil)


@jit
def rint(x, /):
  """Round to the nearest integer, ties to even."""
  x, = promote_args_inexact("rint", x)
  if _is_complex(x):
    return lax.complex(lax.round(lax.real(x), lax.RoundingMethod.TO_NEAREST_EVEN),
                       lax.round(lax.imag(x), lax.RoundingMethod.TO_NEAREST_EVEN))
  return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


@inline_jit
def trunc(x, /):
  """Round toward zero."""
  x, = promote_args("trunc", x)
  if _is_int(x) or _is_bool(x):
    return x
  return _select(lax.lt(x, lax._convert_element_type(0, _dtype(x), False)), lax.ceil(x),
                 lax.floor(x))


fix = trunc


def round(a, decimals=0, out=None):  # noqa: A001
  """Round to `decimals` decimals, ties to even (as numpy.round)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
  return _round(a, operator.index(decimals))


def _round(a, decimals):
  check_arraylike("round", a)
  a, = promote_args("round", a)
  dt = _dtype(a)
  if dt.kind in "iub":
    if decimals < 0:
      raise NotImplementedError("integer np.round not implemented for decimals < 0")
    return lax.asarray_operand(a)

  def _round_float(x):
    if decimals == 0:
      return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    cdt = np.float32 if dtypes.finfo(_dtype(x)).bits < 32 else _dtype(x)
    xc = lax._convert_element_type(x, cdt, False)
    factor = lax._convert_element_type(10.0 ** decimals, cdt, False)
    out = lax.div(lax.round(lax.mul(xc, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
    return lax._convert_element_type(out, _dtype(x), False)

  if dt.kind == "c":
    return lax.complex(_round_float(lax.real(a)), _round_float(lax.imag(a)))
  return _round_float(a)


around = round


@inline_jit
def isfinite(x, /):
  """True where x is neither inf nor NaN."""
  check_arraylike("isfinite", x)
  x = lax.asarray_operand(x)
  dt = _dtype(x)
  if dt.kind == "c":
    return lax.bitwise_and(lax.is_finite(lax.real(x)), lax.is_finite(lax.imag(x)))
  if dtypes.is_float(dt):
    return lax.is_finite(x)
  from arrax._src.numpy.creation import full_like
  return full_like(x, True, dtype=np.bool_)


@jit
def isinf(x, /):
  """True where x is +inf or -inf."""
  check_arraylike("isinf", x)
  x = lax.asarray_operand(x)
  dt = _dtype(x)
  if dt.kind == "c":
    return lax.bitwise_or(isinf(lax.real(x)), isinf(lax.imag(x)))
  if dtypes.is_float(dt):
    return lax.eq(lax.abs(x), lax._convert_element_type(np.inf, dt, False))
  from arrax._src.numpy.creation import full_like
  return full_like(x, False, dtype=np.bool_)


@inline_jit
def isnan(x, /):
  """True where x is NaN."""
  check_arraylike("isnan", x)
  x = lax.asarray_operand(x)
  if dtypes.is_inexact(_dtype(x)):
    return lax.ne(x, x)
  from arrax._src.numpy.creation import full_like
  return full_like(x, False, dtype=np.bool_)


@jit
def signbit(x, /):
  """True where the sign bit is set."""
  x, = promote_args("signbit", x)
  dt = _dtype(x)
  if dt.kind in "iu":
    return lax.lt(x, lax._convert_element_type(0, dt, False))
  if dt == np.bool_:
    from arrax._src.numpy.creation import full_like
    return full_like(x, False, dtype=np.bool_)
  if not dtypes.is_float(dt):
    raise ValueError(f"jnp.signbit is not well defined for {dt}")
  int_dt = np.dtype(f"int{dt.itemsize * 8}")
  bits = lax.bitcast_convert_type(x, int_dt)
  return lax.lt(bits, lax._convert_element_type(0, int_dt, False))


@inline_jit
def square(x, /):
  """x * x."""
  x, = promote_args_numeric("square", x)
  return lax.integer_pow(x, 2)


@inline_jit
def reciprocal(x, /):
  """1 / x."""
  x, = promote_args_inexact("reciprocal", x)
  return lax.integer_pow(x, -1)


@inline_jit
def real(val, /):
  """Real part (identity for real inputs)."""
  val = lax.asarray_operand(val)
  return lax.real(val) if _is_complex(val) else val


@inline_jit
def imag(val, /):
  """Imaginary part (zeros for real inputs)."""
  val = lax.asarray_operand(val)
  if _is_complex(val):
    return lax.imag(val)
  from arrax._src.numpy.creation import full_like
  return full_like(val, 0)


@inline_jit
def conjugate(x, /):
  """Complex conjugate (identity for real inputs)."""
  x = lax.asarray_operand(x)
  return lax.conj(x) if _is_complex(x) else x


conj = conjugate


def angle(z, deg=False):
  """The argument of complex numbers."""
  z = lax.asarray_operand(z)
  if _is_complex(z):
    re, im = lax.real(z), lax.imag(z)
  else:
    z, = promote_args_inexact("angle", z)
    re, im = z, lax._convert_element_type(0, _dtype(z), False)
  out = lax.atan2(im, re)
  return rad2deg(out) if deg else out


@inline_jit
def deg2rad(x, /):
  x, = promote_args_inexact("deg2rad", x)
  return lax.mul(x, lax._convert_element_type(np.pi / 180, _dtype(x), False))


@inline_jit
def rad2deg(x, /):
  x, = promote_args_inexact("rad2deg", x)
  return lax.mul(x, lax._convert_element_type(180 / np.pi, _dtype(x), False))


radians, degrees = deg2rad, rad2deg


@jit
def floor_divide(x1, x2, /):
  """Division rounded toward -inf (Python's //)."""
  x1, x2 = promote_args_numeric("floor_divide", x1, x2)
  dt = _dtype(x1)
  if dt.kind == "u":
    return lax.div(x1, x2)
  if dt.kind == "i":
    quotient = lax.div(x1, x2)
    select = logical_and(lax.ne(lax.sign(x1), lax.sign(x2)),
                         lax.ne(lax.rem(x1, x2), lax._convert_element_type(0, dt, False)))
    from arrax._src.numpy.lax_numpy import where
    return where(select, lax.sub(quotient, lax._convert_element_type(1, dt, False)), quotient)
  if dt.kind == "c":
    raise TypeError("floor_divide does not support complex-valued inputs")
  return _float_divmod(x1, x2)[0]


def _float_divmod(x1, x2):
  dt = _dtype(x1)
  zero = lax._convert_element_type(0, dt, False)
  mod = lax.rem(x1, x2)
  div = lax.div(lax.sub(x1, mod), x2)
  ind = lax.bitwise_and(lax.ne(mod, zero), lax.ne(lax.sign(x2), lax.sign(mod)))
  mod = _select(ind, lax.add(mod, x2), mod)
  div = _select(ind, lax.sub(div, lax._convert_element_type(1, dt, False)), div)
  return lax.round(div), mod


@jit
def remainder(x1, x2, /):
  """Remainder with the sign of the divisor (Python's %)."""
  x1, x2 = promote_args_numeric("remainder", x1, x2)
  dt = _dtype(x1)
  if dt.kind == "c":
    raise TypeError("remainder does not support complex-valued inputs")
  zero = lax._convert_element_type(0, dt, False)
  trunc_mod = lax.rem(x1, x2)
  trunc_mod_not_zero = lax.ne(trunc_mod, zero)
  do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, zero)),
                            trunc_mod_not_zero)
  return _select(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder


@jit
def fmod(x1, x2, /):
  """C-style remainder (sign of the dividend)."""
  x1, x2 = promote_args_numeric("fmod", x1, x2)
  return lax.rem(x1, x2)


def divmod(x1, x2, /):  # noqa: A001
  """(floor_divide(x1, x2), remainder(x1, x2))."""
  return floor_divide(x1, x2), remainder(x1, x2)


def power(x1, x2, /):
  """x1 ** x2 elementwise (integer powers of integers stay integers)."""
  check_arraylike("power", x1, x2)
  if isinstance(x2, (int, np.integer)) and not isinstance(x2, (bool, np.bool_)):
    x1, = promote_args_numeric("power", x1)
    return lax.integer_pow(x1, int(x2))
  return _power(x1, x2)


@inline_jit
def _power(x1, x2):
  x1, x2 = promote_args_numeric("power", x1, x2)
  dt = _dtype(x1)
  if dt.kind not in "iu":
    return lax.pow(x1, x2)
  from arrax._src.numpy.lax_numpy import broadcast_arrays
  x1, x2 = broadcast_arrays(x1, x2)
  return _int_pow(x1, x2, dt)


def _int_pow(x, y, dt):
  one = lax._convert_element_type(1, dt, False)
  zero = lax._convert_element_type(0, dt, False)
  acc = lax.add(lax.mul(x, zero), one)
  for _ in range(dt.itemsize * 8):
    acc = lax.select(lax.ne(lax.bitwise_and(y, one), zero), lax.mul(acc, x), acc)
    x = lax.mul(x, x)
    y = lax.shift_right_logical(y, one)
  return acc


pow = power  # noqa: A001


@jit
def float_power(x1, x2, /):
  x1, x2 = promote_args_inexact("float_power", x1, x2)
  return lax.pow(x1, x2)


def _select(pred, on_true, on_false):
  """lax.select after broadcasting rank-0 operands (lax's select needs equal shapes)."""
  from arrax._src.numpy.lax_numpy import broadcast_arrays
  pred, on_true, on_false = broadcast_arrays(pred, on_true, on_false)
  return lax.select(pred, on_true, on_false)


@jit
def hypot(x1, x2, /):
  """sqrt(x1**2 + x2**2) without undue overflow."""
  x1, x2 = promote_args_inexact("hypot", x1, x2)
  x1, x2 = lax.abs(x1), lax.abs(x2)
  big, small = lax.max(x1, x2), lax.min(x1, x2)
  dt = _dtype(big)
  zero = lax._convert_element_type(0, dt, False)
  one = lax._convert_element_type(1, dt, False)
  is_zero = lax.eq(big, zero)
  ratio = lax.div(small, _select(is_zero, one, big))
  return _select(is_zero, big, lax.mul(big, lax.sqrt(lax.add(one, lax.mul(ratio, ratio)))))


@jit
def copysign(x1, x2, /):
  x1, x2 = promote_args_inexact("copysign", x1, x2)
  return _select(signbit(x2), lax.neg(lax.abs(x1)), lax.abs(x1))


@jit
def heaviside(x1, x2, /):
  x1, x2 = promote_args_inexact("heaviside", x1, x2)
  dt = _dtype(x1)
  zero = lax._convert_element_type(0, dt, False)
  one = lax._convert_element_type(1, dt, False)
  return _select(lax.lt(x1, zero), lax.mul(x1, zero),
                 _select(lax.eq(x1, zero), x2, lax.add(lax.mul(x1, zero), one)))


@jit
def logaddexp(x1, x2, /):
  """log(exp(x1) + exp(x2)) computed stably."""
  x1, x2 = promote_args_inexact("logaddexp", x1, x2)
  amax = lax.max(x1, x2)
  delta = lax.sub(x1, x2)
  out = lax.add(amax, lax.log1p(lax.exp(lax.neg(lax.abs(delta)))))
  return lax.select(lax.ne(delta, delta), lax.add(x1, x2), out)


@jit
def sinc(x, /):
  """sin(pi x) / (pi x), with sinc(0) = 1."""
  x, = promote_args_inexact("sinc", x)
  dt = _dtype(x)
  zero = lax._convert_element_type(0, dt, False)
  one = lax._convert_element_type(1, dt, False)
  pi_x = lax.mul(lax._convert_element_type(np.pi, dt, False), x)
  safe = _select(lax.eq(x, zero), one, pi_x)
  return _select(lax.eq(x, zero), one, lax.div(lax.sin(safe), safe))


@jit
def fmax(x1, x2):
  """Elementwise maximum ignoring NaNs."""
  x1, x2 = promote_args("fmax", x1, x2)
  return _select(lax.bitwise_or(lax.gt(x1, x2), isnan(x2)), x1, x2)


@jit
def fmin(x1, x2):
  """Elementwise minimum ignoring NaNs."""
  x1, x2 = promote_args("fmin", x1, x2)
  return _select(lax.bitwise_or(lax.lt(x1, x2), isnan(x2)), x1, x2)
