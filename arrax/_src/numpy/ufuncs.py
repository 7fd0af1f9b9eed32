"""NumPy's elementwise functions on top of the lax primitives.

Like JAX, most are `jit(inline=True)`: one cached executable per signature when called eagerly,
inlined into an enclosing trace. Some (floor_divide, remainder, hypot, ...) are plain `jit` and
show up as nested `jit` equations in jaxprs, as in JAX. Each function promotes its arguments and
emits its lax operations in the order JAX does, so values (including signed zeros, NaNs and
integer wrap-around), dtypes, weak types, errors and jaxprs agree with jax.numpy.
"""
from __future__ import annotations

import functools
import operator

import numpy as np

from arrax._src import core, dtypes
from arrax._src.custom_derivatives import custom_jvp
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.numpy.util import (_where, check_arraylike, ensure_arraylike, inline_jit,
                                   promote_args, promote_args_inexact, promote_args_numeric,
                                   promote_dtypes_inexact, promote_dtypes_numeric,
                                   promote_shapes)
from arrax._src.numpy.util import _dtype, _ndim


# ---- helpers -----------------------------------------------------------------------------------
def _is_integral(dt):
  """Signed or unsigned integer (not bool)."""
  return np.dtype(dt).kind in "iu"


def _is_complex(dt):
  return np.dtype(dt).kind == "c"


def _constant_like(x, value):
  """A strongly typed rank-0 constant of x's dtype (jnp.array(value, dtype=x.dtype))."""
  return lax.scalar_literal(value, _dtype(x))


def _full_like(x, fill_value, dtype=None):
  """lax.full_like: x's shape, `dtype` or x's dtype (keeping x's weak type if dtype is None)."""
  aval = core.get_aval(x)
  if dtype is None:
    dt, weak = aval.dtype, aval.weak_type
  else:
    dt, weak = np.dtype(dtype), False
  value = lax._convert_element_type(fill_value, dt, weak)
  if not aval.shape:
    return value
  return shape_ops.broadcast_in_dim(value, aval.shape, ())


def _ones(x):
  return _full_like(x, 1)


def _isnan(x):
  return lax.ne(x, x)


def _to_bool(x):
  return x if _dtype(x) == np.bool_ else lax.ne(x, lax._const(x, 0))


def _rename(fn, name):
  fn._fun.__name__ = name
  fn._fun.__qualname__ = name
  fn._name = name
  fn.__name__ = name
  fn.__qualname__ = name
  return fn


# ---- unary functions ---------------------------------------------------------------------------
def _unary_inexact(name, lax_fn):
  """x promoted to an inexact dtype, then one lax operation."""
  @inline_jit
  def fn(x, /):
    return lax_fn(*promote_args_inexact(name, x))
  fn.__doc__ = f"Elementwise {name}, as numpy.{name} (integers and bools promote to float)."
  return _rename(fn, name)


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
arctanh = _unary_inexact("arctanh", lax.atanh)
exp = _unary_inexact("exp", lax.exp)
exp2 = _unary_inexact("exp2", lax.exp2)
expm1 = _unary_inexact("expm1", lax.expm1)
log = _unary_inexact("log", lax.log)
log1p = _unary_inexact("log1p", lax.log1p)
sqrt = _unary_inexact("sqrt", lax.sqrt)
cbrt = _unary_inexact("cbrt", lax.cbrt)


@jit
def arccosh(x, /):
  """Inverse hyperbolic cosine; for complex inputs the branch with a non-negative real part."""
  out = lax.acosh(*promote_args_inexact("arccosh", x))
  if _is_complex(_dtype(out)):
    out = _where(less(real(out), 0), lax.neg(out), out)
  return out


asin, acos, atan, asinh, acosh, atanh = arcsin, arccos, arctan, arcsinh, arccosh, arctanh


@inline_jit
def log2(x, /):
  """Base-2 logarithm."""
  x, = promote_args_inexact("log2", x)
  if _is_complex(_dtype(x)):
    r = lax.log(x)
    re, im = lax.real(r), lax.imag(r)
    ln2 = lax.log(_constant_like(re, 2))
    return lax.complex(lax.div(re, ln2), lax.div(im, ln2))
  return lax.div(lax.log(x), lax.log(_constant_like(x, 2)))


_INV_LN10 = 0.4342944819032518   # 1 / ln(10)


@inline_jit
def log10(x, /):
  """Base-10 logarithm."""
  x, = promote_args_inexact("log10", x)
  scale = lax.scalar_literal(_INV_LN10, dtypes.finfo(_dtype(x)).dtype)
  if _is_complex(_dtype(x)):
    r = lax.log(x)
    re, im = lax.real(r), lax.imag(r)
    return lax.complex(lax.mul(re, scale), lax.mul(im, scale))
  return lax.mul(lax.log(x), scale)


@inline_jit
def fabs(x, /):
  """Absolute value as a float (integers and bools promote; complex inputs are an error)."""
  x = ensure_arraylike("fabs", x)
  if _is_complex(_dtype(x)):
    raise TypeError("fabs is only defined for real inputs; got a complex array (use abs).")
  return lax.abs(*promote_args_inexact("fabs", x))


@inline_jit
def absolute(x, /):
  """Absolute value (the modulus for complex inputs); bools and unsigned ints unchanged."""
  x = ensure_arraylike("absolute", x)
  dt = _dtype(x)
  if dt == np.bool_ or dt.kind == "u":
    return x
  return lax.abs(x)


abs = absolute  # noqa: A001


@inline_jit
def bitwise_not(x, /):
  """Bitwise NOT (logical NOT for booleans)."""
  return lax.bitwise_not(*promote_args("bitwise_not", x))


invert = bitwise_invert = bitwise_not


@inline_jit
def negative(x, /):
  """Numerical negative."""
  return lax.neg(*promote_args("negative", x))


@inline_jit
def positive(x, /):
  """Numerical positive (the input, as an array)."""
  x, = promote_args("positive", x)
  return x


@inline_jit
def sign(x, /):
  """-1, 0 or 1 by sign (x / |x| for complex inputs)."""
  return lax.sign(*promote_args("sign", x))


@inline_jit
def floor(x, /):
  """Round toward -inf (integers and bools unchanged)."""
  x = ensure_arraylike("floor", x)
  if _is_integral(_dtype(x)) or _dtype(x) == np.bool_:
    return x
  return lax.floor(*promote_args_inexact("floor", x))


@inline_jit
def ceil(x, /):
  """Round toward +inf (integers and bools unchanged)."""
  x = ensure_arraylike("ceil", x)
  if _is_integral(_dtype(x)) or _dtype(x) == np.bool_:
    return x
  return lax.ceil(*promote_args_inexact("ceil", x))


@jit
def rint(x, /):
  """Round to the nearest integer, ties to even; integers and bools become floats."""
  x = ensure_arraylike("rint", x)
  dt = _dtype(x)
  if dt == np.bool_ or _is_integral(dt):
    return lax.convert_element_type(x, dtypes.default_float_dtype())
  if _is_complex(dt):
    return lax.complex(rint(lax.real(x)), rint(lax.imag(x)))
  return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)


@jit
def trunc(x):
  """Round toward zero (integers and bools unchanged)."""
  x = ensure_arraylike("trunc", x)
  dt = _dtype(x)
  if dt == np.bool_ or _is_integral(dt):
    return x
  return _where(lax.lt(x, lax._const(x, 0)), ceil(x), floor(x))


fix = trunc


@jit(static_argnames=("decimals",))
def round(a, decimals=0, out=None):  # noqa: A001
  """Round to `decimals` decimals, ties to even (as numpy.round)."""
  a = ensure_arraylike("round", a)
  decimals = operator.index(decimals)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.round is not supported.")
  dt = _dtype(a)
  if _is_integral(dt):
    if decimals < 0:
      raise NotImplementedError("integer np.round not implemented for decimals < 0")
    return a

  def round_float(x):
    if decimals == 0:
      return lax.round(x, lax.RoundingMethod.TO_NEAREST_EVEN)
    # Scaling loses too much in float16: compute in float32 (JAX does the same).
    if dt == np.float16:
      x = lax.convert_element_type(x, np.float32)
    factor = lax._const(x, 10 ** decimals)
    y = lax.div(lax.round(lax.mul(x, factor), lax.RoundingMethod.TO_NEAREST_EVEN), factor)
    return lax.convert_element_type(y, dt) if dt == np.float16 else y

  # finfo rejects bool (and other non-inexact dtypes) with a ValueError, as in JAX.
  if decimals > np.log10(float(dtypes.finfo(dt).max)):
    return a   # rounding past the precision of the type changes nothing
  if _is_complex(dt):
    return lax.complex(round_float(lax.real(a)), round_float(lax.imag(a)))
  return round_float(a)


@jit(static_argnames=("decimals",))
def around(a, decimals=0, out=None):
  """Alias of round (its own `jit` equation, as in JAX)."""
  return round(a, decimals, out)


@jit
def isinf(x, /):
  """True where x is +inf or -inf (either part, for complex)."""
  x = ensure_arraylike("isinf", x)
  dt = _dtype(x)
  if dtypes.is_float(dt):
    return lax.eq(lax.abs(x), _constant_like(x, np.inf))
  if _is_complex(dt):
    re, im = lax.real(x), lax.imag(x)
    return lax.bitwise_or(lax.eq(lax.abs(re), _constant_like(re, np.inf)),
                          lax.eq(lax.abs(im), _constant_like(im, np.inf)))
  return _full_like(x, False, dtype=np.bool_)


@inline_jit
def isfinite(x, /):
  """True where x is neither inf nor NaN."""
  x = ensure_arraylike("isfinite", x)
  dt = _dtype(x)
  if dtypes.is_float(dt):
    return lax.is_finite(x)
  if _is_complex(dt):
    return lax.bitwise_and(lax.is_finite(real(x)), lax.is_finite(imag(x)))
  return _full_like(x, True, dtype=np.bool_)


@inline_jit
def isnan(x, /):
  """True where x is NaN (x != x)."""
  x = ensure_arraylike("isnan", x)
  return lax.ne(x, x)


def _isposinf(x):
  x = ensure_arraylike("isposinf", x)
  dt = _dtype(x)
  if dtypes.is_float(dt):
    return lax.eq(x, _constant_like(x, np.inf))
  if _is_complex(dt):
    raise ValueError("isposinf/isneginf have no meaning for complex inputs.")
  return _full_like(x, False, dtype=np.bool_)


_INT_OF_BITS = {16: np.int16, 32: np.int32, 64: np.int64}


@jit
def signbit(x, /):
  """True where the sign bit is set."""
  x, = promote_args("signbit", x)
  dt = _dtype(x)
  if _is_integral(dt):
    return lax.lt(x, _constant_like(x, 0))
  if dt == np.bool_:
    return _full_like(x, False, dtype=np.bool_)
  if not dtypes.is_float(dt):
    raise ValueError(f"signbit has no meaning for dtype {dt}.")
  info = dtypes.finfo(dt)
  if info.bits not in _INT_OF_BITS:
    raise NotImplementedError(f"signbit is implemented for 16-, 32- and 64-bit floats, not {dt}.")
  bits = lax.bitcast_convert_type(x, _INT_OF_BITS[info.bits])
  return lax.convert_element_type(right_shift(bits, info.nexp + info.nmant), np.bool_)


@inline_jit
def square(x, /):
  """x * x."""
  x = ensure_arraylike("square", x)
  x, = promote_dtypes_numeric(x)
  return lax.square(x)


@inline_jit
def reciprocal(x, /):
  """1 / x (integers and bools promote to float)."""
  x = ensure_arraylike("reciprocal", x)
  x, = promote_dtypes_inexact(x)
  return lax.integer_pow(x, -1)


@inline_jit
def real(val, /):
  """Real part (identity for real inputs)."""
  val = ensure_arraylike("real", val)
  return lax.real(val) if _is_complex(_dtype(val)) else val


@inline_jit
def imag(val, /):
  """Imaginary part (zeros for real inputs)."""
  val = ensure_arraylike("imag", val)
  return lax.imag(val) if _is_complex(_dtype(val)) else _full_like(val, 0)


@inline_jit
def conjugate(x, /):
  """Complex conjugate (identity for real inputs)."""
  x = ensure_arraylike("conjugate", x)
  return lax.conj(x) if _is_complex(_dtype(x)) else x


conj = conjugate


@jit(static_argnames=("deg",))
def angle(z, deg=False):
  """The argument of complex numbers (0 or pi for real inputs)."""
  z = ensure_arraylike("angle", z)
  re, im = real(z), imag(z)
  dt = _dtype(re)
  if not dtypes.is_inexact(dt) or (dtypes.is_float(_dtype(z)) and _ndim(z) == 0):
    dt = dtypes.default_float_dtype()
    re = lax.convert_element_type(re, dt)
    im = lax.convert_element_type(im, dt)
  out = lax.atan2(im, re)
  return rad2deg(out) if deg else out


@inline_jit
def deg2rad(x, /):
  """Degrees to radians."""
  x, = promote_args_inexact("deg2rad", x)
  return lax.mul(x, lax._const(x, np.pi / 180))


@inline_jit
def rad2deg(x, /):
  """Radians to degrees."""
  x, = promote_args_inexact("rad2deg", x)
  return lax.mul(x, lax._const(x, 180 / np.pi))


radians, degrees = deg2rad, rad2deg


@inline_jit
def logical_not(x, /):
  """Logical NOT (nonzero counts as True)."""
  return lax.bitwise_not(*map(_to_bool, promote_args("logical_not", x)))


@functools.partial(custom_jvp, nondiff_argnums=(0,))
def _sinc_maclaurin(k, x):
  # The k-th derivative of t -> sin(t)/t at t = 0 (x only carries the type: x * 0 + c).
  if k % 2:
    return lax.mul(x, lax._const(x, 0))
  return lax.add(lax.mul(x, lax._const(x, 0)), lax._const(x, (-1) ** (k // 2) / (k + 1)))


@_sinc_maclaurin.defjvp
def _sinc_maclaurin_jvp(k, primals, tangents):
  (x,), (t,) = primals, tangents
  return _sinc_maclaurin(k, x), lax.mul(_sinc_maclaurin(k + 1, x), t)


def _sinc_at_zero(pi_x):
  # sin(t)/t at t = 0, with every derivative right there too (a custom_jvp, as in JAX).
  return _sinc_maclaurin(0, pi_x)


@jit
def sinc(x, /):
  """sin(pi x) / (pi x), with sinc(0) = 1."""
  x = ensure_arraylike("sinc", x)
  x, = promote_dtypes_inexact(x)
  eq_zero = lax.eq(x, lax._const(x, 0))
  pi_x = lax.mul(lax._const(x, np.pi), x)
  safe_pi_x = _where(eq_zero, lax._const(x, 1), pi_x)
  return _where(eq_zero, _sinc_at_zero(pi_x), lax.div(lax.sin(safe_pi_x), safe_pi_x))


# ---- binary functions --------------------------------------------------------------------------
def _binary(name, lax_fn, promote=promote_args, bool_fn=None, doc=None):
  @inline_jit
  def fn(x1, x2, /):
    x1, x2 = promote(name, x1, x2)
    if bool_fn is not None and _dtype(x1) == np.bool_:
      return bool_fn(x1, x2)
    return lax_fn(x1, x2)
  fn.__doc__ = doc or f"Elementwise {name}, as numpy.{name}."
  return _rename(fn, name)


add = _binary("add", lax.add, bool_fn=lax.bitwise_or,
              doc="x1 + x2 (logical OR for booleans).")
subtract = _binary("subtract", lax.sub, doc="x1 - x2 (an error for booleans).")
multiply = _binary("multiply", lax.mul, bool_fn=lax.bitwise_and,
                   doc="x1 * x2 (logical AND for booleans).")
true_divide = _binary("true_divide", lax.div, promote=promote_args_inexact,
                      doc="x1 / x2 (integers and bools promote to float).")
divide = true_divide
arctan2 = _binary("arctan2", lax.atan2, promote=promote_args_inexact,
                  doc="The angle of the point (x2, x1) (the quadrant-aware arctan(x1 / x2)).")


@inline_jit
def atan2(x1, x2, /):
  """arctan2 after ordinary (not inexact) promotion of the two arguments, as jnp.atan2 does:
  e.g. uint8 with a negative Python int wraps before the conversion to float."""
  return arctan2(*promote_args("atan2", x1, x2))


nextafter = _binary("nextafter", lax.nextafter, promote=promote_args_inexact,
                    doc="The next representable value after x1 toward x2.")
float_power = _binary("float_power", lax.pow, promote=promote_args_inexact,
                      doc="x1 ** x2 computed in an inexact dtype.")
equal = _binary("equal", lax.eq)
not_equal = _binary("not_equal", lax.ne)
maximum = _binary("maximum", lax.max,
                  doc="Elementwise maximum (NaNs propagate; complex: lexicographic order).")
minimum = _binary("minimum", lax.min,
                  doc="Elementwise minimum (NaNs propagate; complex: lexicographic order).")
bitwise_and = _binary("bitwise_and", lax.bitwise_and)
bitwise_or = _binary("bitwise_or", lax.bitwise_or)
bitwise_xor = _binary("bitwise_xor", lax.bitwise_xor)
left_shift = _binary("left_shift", lax.shift_left, promote=promote_args_numeric,
                     doc="x1 << x2 (bools promote to int32).")
bitwise_left_shift = left_shift


def _complex_comparison(lax_op):
  def compare(x, y):
    if _is_complex(_dtype(x)):
      # Lexicographic: by real part, by imaginary part where the real parts are equal.
      return lax.select(lax.eq(real(x), real(y)), lax_op(imag(x), imag(y)),
                        lax_op(real(x), real(y)))
    return lax_op(x, y)
  return compare


less = _binary("less", _complex_comparison(lax.lt))
less_equal = _binary("less_equal", _complex_comparison(lax.le))
greater = _binary("greater", _complex_comparison(lax.gt))
greater_equal = _binary("greater_equal", _complex_comparison(lax.ge))


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
  def fn(x1, x2, /):
    return lax_fn(*map(_to_bool, promote_args(name, x1, x2)))
  fn.__doc__ = f"Elementwise {name} (nonzero counts as True)."
  return _rename(fn, name)


logical_and = _logical("logical_and", lax.bitwise_and)
logical_or = _logical("logical_or", lax.bitwise_or)
logical_xor = _logical("logical_xor", lax.bitwise_xor)


# ---- division ----------------------------------------------------------------------------------
@jit
def floor_divide(x1, x2, /):
  """Division rounded toward -inf (Python's //)."""
  x1, x2 = promote_args_numeric("floor_divide", x1, x2)
  dt = _dtype(x1)
  if dt.kind == "u":
    return lax.div(x1, x2)
  if dt.kind == "i":
    quotient = lax.div(x1, x2)
    select = logical_and(not_equal(lax.sign(x1), lax.sign(x2)),
                         not_equal(lax.rem(x1, x2), 0))
    return _where(select, subtract(quotient, 1), quotient)
  if _is_complex(dt):
    raise TypeError("floor_divide does not support complex-valued inputs")
  return _float_divmod(x1, x2)[0]


def _float_divmod(x1, x2):
  """(floor(x1 / x2), x1 mod x2) for floats, the way CPython's float divmod computes them."""
  mod = lax.rem(x1, x2)
  x1_corrected = _where(equal(x2, 0), x1, lax.sub(x1, mod))
  div = lax.div(x1_corrected, x2)
  ind = lax.bitwise_and(not_equal(mod, 0), not_equal(lax.sign(x2), lax.sign(mod)))
  mod = lax.select(ind, add(mod, x2), mod)
  div = lax.select(ind, subtract(div, 1.0), div)
  return lax.round(div), mod


@jit
def remainder(x1, x2, /):
  """Remainder with the sign of the divisor (Python's %); x % 0 is 0 for integers."""
  x1, x2 = promote_args_numeric("remainder", x1, x2)
  zero = _constant_like(x1, 0)
  if _is_integral(_dtype(x2)):
    x2 = _where(equal(x2, 0), _ones(x2), x2)
  trunc_mod = lax.rem(x1, x2)
  trunc_mod_not_zero = lax.ne(trunc_mod, zero)
  do_plus = lax.bitwise_and(lax.ne(lax.lt(trunc_mod, zero), lax.lt(x2, zero)),
                            trunc_mod_not_zero)
  return lax.select(do_plus, lax.add(trunc_mod, x2), trunc_mod)


mod = remainder


@jit
def fmod(x1, x2, /):
  """C-style remainder (sign of the dividend); x % 0 is x for integers."""
  x1, x2 = ensure_arraylike("fmod", x1, x2)
  if _is_integral(dtypes.result_type(x1, x2)):
    x2 = _where(equal(x2, 0), _ones(x2), x2)
  return lax.rem(*promote_args_numeric("fmod", x1, x2))


@jit
def divmod(x1, x2, /):  # noqa: A001
  """(floor_divide(x1, x2), remainder(x1, x2))."""
  x1, x2 = promote_args_numeric("divmod", x1, x2)
  if _is_integral(_dtype(x1)):
    return floor_divide(x1, x2), remainder(x1, x2)
  return _float_divmod(x1, x2)


# ---- powers ------------------------------------------------------------------------------------
def power(x1, x2, /):
  """x1 ** x2 elementwise (integer powers of integers stay integers)."""
  check_arraylike("power", x1, x2)
  m1 = getattr(x1, "__jax_array__", None)
  x1 = m1() if m1 is not None and not isinstance(x1, core.Tracer) else x1
  m2 = getattr(x2, "__jax_array__", None)
  x2 = m2() if m2 is not None and not isinstance(x2, core.Tracer) else x2
  # A concrete integer exponent (Python int or bool, NumPy integer, concrete integer scalar
  # array): exponentiation by squaring unrolled for that exponent.
  if not isinstance(x2, core.Tracer):
    try:
      n = operator.index(x2.val if isinstance(x2, core.Literal) else x2)
    except TypeError:
      pass
    else:
      x1, = promote_dtypes_numeric(x1)
      return lax.integer_pow(x1, n)
  return _power(x1, x2)


pow = power  # noqa: A001


@inline_jit
def _power(x1, x2):
  x1, x2 = promote_shapes("power", x1, x2)   # shapes only; dtypes below
  x1_, x2_ = promote_args_numeric("power", x1, x2)
  if _is_integral(_dtype(x1_)):
    return _pow_int_int(x1_, x2_)
  d1, d2 = _dtype(x1), _dtype(x2)
  if dtypes.is_inexact(d1) and _is_integral(d2):
    return lax.pow(x1, x2)   # an inexact base keeps its dtype for an integer exponent
  return lax.pow(x1_, x2_)


def _pow_int_int(x1, x2):
  """Integer power by binary exponentiation over the exponent's low 6 bits (anything larger
  overflows for |x1| > 1)."""
  zero = _constant_like(x2, 0)
  one = _constant_like(x2, 1)
  # pow(0, n) is 0 for n != 0, 1 for n == 0.
  acc = _where(lax.bitwise_and(lax.eq(x1, zero), lax.ne(x2, zero)), zero, one)
  for _ in range(6):
    acc = _where(lax.bitwise_and(x2, one), lax.mul(acc, x1), acc)
    x1 = lax.mul(x1, x1)
    x2 = lax.shift_right_logical(x2, one)
  return acc


_rename(_power, "_power")


# ---- other binary functions --------------------------------------------------------------------
@jit
def copysign(x1, x2, /):
  """|x1| with the sign of x2."""
  x1, x2 = promote_args_inexact("copysign", x1, x2)
  if _is_complex(_dtype(x1)):
    raise TypeError("copysign is only defined for real inputs; got complex values.")
  neg_sign = lax.convert_element_type(signbit(x2), np.bool_)
  return _where(neg_sign, negative(lax.abs(x1)), lax.abs(x1))


@jit
def heaviside(x1, x2, /):
  """0 for x1 < 0, 1 for x1 > 0, x2 where x1 == 0 (NaN where x1 is NaN)."""
  x1, x2 = ensure_arraylike("heaviside", x1, x2)
  x1, x2 = promote_dtypes_inexact(x1, x2)
  zero = lax._const(x1, 0)
  return _where(lax.lt(x1, zero), zero,
                _where(lax.gt(x1, zero), lax._const(x1, 1),
                       _where(_isnan(x1), x1, x2)))


@jit
def hypot(x1, x2, /):
  """sqrt(x1**2 + x2**2) without undue overflow or underflow."""
  x1, x2 = promote_args_inexact("hypot", x1, x2)
  if _is_complex(_dtype(x1)):
    raise ValueError("hypot is only defined for real inputs; got complex values (take abs() "
                     "or the real/imaginary parts first).")
  x1, x2 = lax.abs(x1), lax.abs(x2)
  idx_inf = lax.bitwise_or(_isposinf(x1), _isposinf(x2))
  x1, x2 = maximum(x1, x2), minimum(x1, x2)
  is_zero = equal(x1, 0)
  safe_x1 = _where(equal(x1, 0), _ones(x1), x1)
  scaled = multiply(x1, lax.sqrt(add(1, lax.square(lax.div(x2, safe_x1)))))
  x = _where(is_zero, x1, scaled)
  return _where(idx_inf, lax._const(x, np.inf), x)


def _wrap_between(x, a):
  """x wrapped into [-a, a)."""
  a_c, two_a, zero = lax._const(x, a), lax._const(x, 2 * a), lax._const(x, 0)
  r = lax.rem(lax.add(x, a_c), two_a)
  r = lax.select(lax.lt(r, zero), lax.add(r, two_a), r)
  return lax.sub(r, a_c)


def _replace_inf(x):
  return lax.select(_isposinf(real(x)), _full_like(x, 0), x)


def _logaddexp_impl(x1, x2, exp_fn, scale):
  amax = lax.max(x1, x2)
  if dtypes.is_float(_dtype(x1)):
    delta = lax.sub(x1, x2)
    is_nan = _isnan(delta)
    same_inf = lax.add(x1, x2)   # NaNs, or infinities of the same sign
    tail = lax.log1p(exp_fn(lax.neg(lax.abs(delta))))
    return lax.select(is_nan, same_inf,
                      lax.add(amax, tail if scale is None else lax.mul(lax._const(amax, scale), tail)))
  if _is_complex(_dtype(x1)):
    delta = lax.sub(lax.add(x1, x2), lax.mul(amax, lax._const(amax, 2)))
    tail = lax.log1p(exp_fn(delta))
    out = lax.add(amax, tail if scale is None else lax.mul(lax._const(amax, scale), tail))
    period = np.pi if scale is None else np.pi / np.log(2)
    return lax.complex(lax.real(out), _wrap_between(lax.imag(out), period))
  name = "logaddexp" if scale is None else "logaddexp2"
  raise ValueError(f"{name} requires floating-point or complex inputs; got {_dtype(x1)}")


@custom_jvp
def _lax_logaddexp(x1, x2):
  return _logaddexp_impl(x1, x2, lax.exp, None)


@_lax_logaddexp.defjvp
def _logaddexp_jvp(primals, tangents):
  (x1, x2), (t1, t2) = primals, tangents
  out = _lax_logaddexp(x1, x2)
  return out, lax.add(lax.mul(t1, lax.exp(lax.sub(_replace_inf(x1), _replace_inf(out)))),
                      lax.mul(t2, lax.exp(lax.sub(_replace_inf(x2), _replace_inf(out)))))


@custom_jvp
def _lax_logaddexp2(x1, x2):
  return _logaddexp_impl(x1, x2, lax.exp2, 1 / np.log(2))


@_lax_logaddexp2.defjvp
def _logaddexp2_jvp(primals, tangents):
  (x1, x2), (t1, t2) = primals, tangents
  out = _lax_logaddexp2(x1, x2)
  return out, lax.add(lax.mul(t1, lax.exp2(lax.sub(_replace_inf(x1), _replace_inf(out)))),
                      lax.mul(t2, lax.exp2(lax.sub(_replace_inf(x2), _replace_inf(out)))))


# The primal functions print as `name=logaddexp` / `logaddexp2` in jaxprs, as in JAX.
_lax_logaddexp.fun.__name__ = "logaddexp"
_lax_logaddexp2.fun.__name__ = "logaddexp2"


@inline_jit
def logaddexp(x1, x2, /):
  """log(exp(x1) + exp(x2)) computed stably."""
  return _lax_logaddexp(*promote_args_inexact("logaddexp", x1, x2))


@inline_jit
def logaddexp2(x1, x2, /):
  """log2(exp2(x1) + exp2(x2)) computed stably."""
  return _lax_logaddexp2(*promote_args_inexact("logaddexp2", x1, x2))


@jit
def fmax(x1, x2):
  """Elementwise maximum ignoring NaNs."""
  return _where(bitwise_or(greater(x1, x2), isnan(x2)), x1, x2)


@jit
def fmin(x1, x2):
  """Elementwise minimum ignoring NaNs."""
  return _where(bitwise_or(less(x1, x2), isnan(x2)), x1, x2)
