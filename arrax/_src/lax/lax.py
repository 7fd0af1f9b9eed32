"""The lax API over the elementwise primitives, with JAX's signatures.

lax functions do no dtype promotion: Python scalars become weakly typed constants of the
default dtype for their kind, and operand dtypes must otherwise match.
"""
from __future__ import annotations

import numpy as np

from arrax._src import core, dtypes
from arrax._src.array import Array, device_put_value
from arrax._src.core import Literal, ShapedArray
from arrax._src.lax import elementwise as ew
from arrax._src.lax.elementwise import RoundingMethod  # noqa: F401  (re-exported)


def asarray_operand(x):
  """Python scalars -> weakly typed literal constants; arrays and tracers unchanged."""
  t = type(x)
  if t in dtypes.python_scalar_dtypes:
    dtypes.check_python_int(x)
    dt, weak = dtypes.dtype_and_weak_type(x)
    # The Python value is kept (JAX prints weak literals from it: `0.1:f32[]`).
    return Literal(x, ShapedArray((), dt, weak))
  if isinstance(x, (list, tuple)):
    raise TypeError(f"lax operations do not accept {t.__name__}s; use jnp.asarray first.")
  return x


def scalar_literal(value, dtype, weak_type=False):
  """A rank-0 constant of `dtype` (no device transfer; becomes a jaxpr literal when traced)."""
  dtype = np.dtype(dtype)
  val = np.asarray(value, dtype)[()]
  # Weak literals hold Python scalars, so evaluating a jaxpr again keeps them weak.
  return Literal(val.item() if weak_type else val, ShapedArray((), dtype, weak_type))


def _unary(prim):
  def fn(x):
    return prim.bind(asarray_operand(x))
  fn.__name__ = prim.name
  fn.__doc__ = f"Elementwise {prim.name}."
  return fn


def _binary(prim):
  def fn(x, y):
    return prim.bind(asarray_operand(x), asarray_operand(y))
  fn.__name__ = prim.name
  fn.__doc__ = f"Elementwise {prim.name}."
  return fn


add = _binary(ew.add_p)
sub = _binary(ew.sub_p)
mul = _binary(ew.mul_p)
div = _binary(ew.div_p)
rem = _binary(ew.rem_p)
max = _binary(ew.max_p)  # noqa: A001
min = _binary(ew.min_p)  # noqa: A001
pow = _binary(ew.pow_p)  # noqa: A001
atan2 = _binary(ew.atan2_p)
nextafter = _binary(ew.nextafter_p)
complex = _binary(ew.complex_p)  # noqa: A001
eq = _binary(ew.eq_p)
ne = _binary(ew.ne_p)
lt = _binary(ew.lt_p)
le = _binary(ew.le_p)
gt = _binary(ew.gt_p)
ge = _binary(ew.ge_p)
bitwise_and = _binary(ew.and_p)
bitwise_or = _binary(ew.or_p)
bitwise_xor = _binary(ew.xor_p)
shift_left = _binary(ew.shift_left_p)
shift_right_arithmetic = _binary(ew.shift_right_arithmetic_p)
shift_right_logical = _binary(ew.shift_right_logical_p)

neg = _unary(ew.neg_p)
sign = _unary(ew.sign_p)
floor = _unary(ew.floor_p)
ceil = _unary(ew.ceil_p)
is_finite = _unary(ew.is_finite_p)
abs = _unary(ew.abs_p)  # noqa: A001
bitwise_not = _unary(ew.not_p)
population_count = _unary(ew.population_count_p)
clz = _unary(ew.clz_p)
exp = _unary(ew.exp_p)
exp2 = _unary(ew.exp2_p)
log = _unary(ew.log_p)
log1p = _unary(ew.log1p_p)
expm1 = _unary(ew.expm1_p)
sqrt = _unary(ew.sqrt_p)
rsqrt = _unary(ew.rsqrt_p)
cbrt = _unary(ew.cbrt_p)
tanh = _unary(ew.tanh_p)
logistic = _unary(ew.logistic_p)
sin = _unary(ew.sin_p)
cos = _unary(ew.cos_p)
tan = _unary(ew.tan_p)
asin = _unary(ew.asin_p)
acos = _unary(ew.acos_p)
atan = _unary(ew.atan_p)
sinh = _unary(ew.sinh_p)
cosh = _unary(ew.cosh_p)
asinh = _unary(ew.asinh_p)
acosh = _unary(ew.acosh_p)
atanh = _unary(ew.atanh_p)
erf = _unary(ew.erf_p)
erfc = _unary(ew.erfc_p)
erf_inv = _unary(ew.erf_inv_p)
lgamma = _unary(ew.lgamma_p)
digamma = _unary(ew.digamma_p)
polygamma = _binary(ew.polygamma_p)
real = _unary(ew.real_p)
imag = _unary(ew.imag_p)


def conj(x):
  """Elementwise complex conjugate (real inputs become complex, as in JAX)."""
  x = asarray_operand(x)
  return ew.conj_p.bind(x, input_dtype=core.get_aval(x).dtype)


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001
  """Round to the nearest integer; ties away from zero unless `rounding_method` says otherwise."""
  return ew.round_p.bind(asarray_operand(x), rounding_method=RoundingMethod(rounding_method))


def integer_pow(x, y: int):
  """x ** y for a static Python integer y, computed by repeated multiplication."""
  return ew.integer_pow_p.bind(asarray_operand(x), y=int(y))


def square(x):
  """x * x elementwise."""
  return ew.square_p.bind(asarray_operand(x))


def reciprocal(x):
  return integer_pow(x, -1)


def select_n(which, *cases):
  """cases[which] elementwise; `which` is bool (2 cases) or int32."""
  return ew.select_n_p.bind(asarray_operand(which), *map(asarray_operand, cases))


def select(pred, on_true, on_false):
  """on_true where pred, else on_false."""
  return select_n(pred, on_false, on_true)


def clamp(min, x, max):  # noqa: A002
  """min(max(x, min), max) elementwise."""
  x = asarray_operand(x)
  dt, weak = dtypes.dtype_and_weak_type(x)
  lo, hi = (scalar_literal(v, dt, weak) if type(v) in dtypes.python_scalar_dtypes else v
            for v in (min, max))
  return ew.clamp_p.bind(lo, x, hi)


def convert_element_type(operand, new_dtype):
  """Cast `operand` to `new_dtype` (canonicalized under jax_enable_x64)."""
  out = _convert_element_type(operand, new_dtype, weak_type=False)
  if core.trace_ctx.trace is core.eval_trace and not isinstance(out, Array):
    # A host scalar (or the Literal made of it) becomes an Array, as JAX returns.
    aval = core.get_aval(out)
    return device_put_value(out.val if type(out) is Literal else out, None, dtype=aval.dtype,
                            weak_type=False)
  return out


def _convert_element_type(operand, new_dtype=None, weak_type=False):
  operand = asarray_operand(operand)
  aval = core.get_aval(operand)
  new_dtype = aval.dtype if new_dtype is None else dtypes.canonicalize_dtype(new_dtype)
  if aval.dtype == new_dtype and aval.weak_type == weak_type:
    return operand
  if not isinstance(operand, core.Tracer) and aval.shape == () and not hasattr(operand, "_buf"):
    value = operand.val if isinstance(operand, Literal) else operand
    return scalar_literal(_host_cast(value, new_dtype), new_dtype, weak_type)
  return ew.convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type),
                                        sharding=None)


def _host_cast(value, dtype):
  v = np.asarray(value)
  if v.dtype.kind == "c" and dtype.kind != "c":
    v = v.real
  return v.astype(dtype)


def bitcast_convert_type(operand, new_dtype):
  """Reinterpret the bits of `operand` as `new_dtype`."""
  return ew.bitcast_convert_type_p.bind(asarray_operand(operand),
                                        new_dtype=dtypes.canonicalize_dtype(new_dtype))


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
  """Round `operand` to a float format with the given exponent and mantissa widths."""
  return ew.reduce_precision_p.bind(asarray_operand(operand), exponent_bits=int(exponent_bits),
                                    mantissa_bits=int(mantissa_bits))
