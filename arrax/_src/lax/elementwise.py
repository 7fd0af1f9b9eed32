"""Elementwise primitives: arithmetic, comparisons, bitwise, transcendental, complex, conversions.

Operands have equal shapes, except that rank-0 operands broadcast (as JAX's lax allows for
scalar literals). Each primitive is defined with its shape/dtype rule and its lowering.
"""
from __future__ import annotations

import enum

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo as hlo

from arrax._src import core, dtypes, mlir
from arrax._src.core import ShapedArray
from arrax._src.lax import utils
from arrax._src.lax.utils import (ANY, BOOL, BOOL_OR_INT, COMPLEX, FLOAT, INEXACT, INT, NUM,
                                  ORDERED, SIGNED)


def _naryop(name, arg_classes, emit, *, out_dtype=None, same_dtype=True, weak=None):
  """An elementwise primitive. `emit(ctx, *ir_values, **params)` builds the op."""
  prim = core.Primitive(name)

  def abstract_eval(*avals, **params):
    if len(avals) != len(arg_classes):
      raise TypeError(f"{name} takes {len(arg_classes)} operands, got {len(avals)}")
    for i, (aval, classes) in enumerate(zip(avals, arg_classes)):
      utils.check_dtype(name, aval, classes, i if len(avals) > 1 else None)
    if same_dtype and len(avals) > 1:
      utils.same_dtypes(name, avals)
    shape = utils.broadcasting_shape(name, *avals)
    dt = out_dtype(*avals) if out_dtype else avals[0].dtype
    wt = weak(*avals) if weak else utils.weak_of(avals)
    return ShapedArray(shape, dt, wt)

  def lowering(ctx, *args, **params):
    out = ctx.avals_out[0]
    args = [utils.broadcast_operand(out, v, a) for v, a in zip(args, ctx.avals_in)]
    return [emit(ctx, *args, **params)]

  prim.abstract_eval = abstract_eval
  prim.lowering = lowering
  return prim


def _unop(name, classes, emit, **kw):
  return _naryop(name, [classes], emit, **kw)


def _binop(name, classes, emit, **kw):
  return _naryop(name, [classes, classes], emit, **kw)


def _simple(op):
  return lambda ctx, *args, **params: op(*args)


def _is_unsigned(aval):
  return aval.dtype.kind == "u"


# ---- arithmetic ----------------------------------------------------------------------------
add_p = _binop("add", NUM, _simple(hlo.add))
sub_p = _binop("sub", NUM, _simple(hlo.subtract))
mul_p = _binop("mul", NUM, _simple(hlo.multiply))
div_p = _binop("div", NUM, _simple(hlo.divide))
rem_p = _binop("rem", (INT, FLOAT), _simple(hlo.remainder))


def lexicographic_select(x, y, direction, part_dtype):
  """x where (re x, im x) beats (re y, im y) in `direction` ("GT"/"LT"), else y."""
  xr, yr = hlo.real(x), hlo.real(y)
  same_real = mlir.compare(xr, yr, "EQ", part_dtype)
  by_real = mlir.compare(xr, yr, direction, part_dtype)
  by_imag = mlir.compare(hlo.imag(x), hlo.imag(y), direction, part_dtype)
  return hlo.select(hlo.select(same_real, by_imag, by_real), x, y)


def _minmax(op, direction):
  """max/min; complex operands are ordered lexicographically (real part, then imaginary)."""
  def emit(ctx, x, y):
    aval = ctx.avals_in[0]
    if aval.dtype.kind != "c":
      return op(x, y)
    return lexicographic_select(x, y, direction, _real_dtype(aval))
  return emit


max_p = _binop("max", ANY, _minmax(hlo.maximum, "GT"))
min_p = _binop("min", ANY, _minmax(hlo.minimum, "LT"))
pow_p = _naryop("pow", [INEXACT, (INT, FLOAT, COMPLEX)], None, same_dtype=False)
atan2_p = _binop("atan2", INEXACT, _simple(hlo.atan2))
nextafter_p = _binop("nextafter", FLOAT, _simple(chlo.next_after))
neg_p = _unop("neg", NUM, _simple(hlo.negate))


def _pow_abstract_eval(x, y):
  utils.check_dtype("pow", x, INEXACT, 0)
  utils.check_dtype("pow", y, (INT, FLOAT, COMPLEX), 1)
  if utils.dtype_class(y.dtype) != INT and x.dtype != y.dtype:
    raise TypeError(f"the first argument to pow must have an inexact dtype (float or complex), "
                    f"and the second argument must have an inexact or integer dtype, and two "
                    f"inexact dtypes must match, but got {x.dtype} and {y.dtype}.")
  return ShapedArray(utils.broadcasting_shape("pow", x, y), x.dtype, utils.weak_of([x, y]))


def _pow_lower(ctx, x, y):
  xa, ya = ctx.avals_in
  out = ctx.avals_out[0]
  x = utils.broadcast_operand(out, x, xa)
  y = utils.broadcast_operand(out, y, ya)
  if utils.dtype_class(ya.dtype) == INT:
    y = hlo.convert(mlir.aval_to_ir_type(out), y)
  return [hlo.power(x, y)]


pow_p.abstract_eval = _pow_abstract_eval
pow_p.lowering = _pow_lower


abs_p = _unop("abs", (SIGNED, FLOAT, COMPLEX), _simple(hlo.abs),
              out_dtype=lambda x: _real_dtype(x) if x.dtype.kind == "c" else x.dtype)


def _sign_emit(ctx, x):
  aval = ctx.avals_in[0]
  if _is_unsigned(aval):
    zero = mlir.full_like_aval(0, aval)
    one = mlir.full_like_aval(1, aval)
    is_zero = _compare(x, zero, "EQ", aval)
    return hlo.select(is_zero, zero, one)
  return hlo.sign(x)


sign_p = _unop("sign", NUM, _sign_emit)
floor_p = _unop("floor", FLOAT, _simple(hlo.floor))
ceil_p = _unop("ceil", FLOAT, _simple(hlo.ceil))
is_finite_p = _unop("is_finite", FLOAT, _simple(hlo.is_finite),
                    out_dtype=lambda x: dtypes.bool_)


class RoundingMethod(enum.IntEnum):
  """How `round` breaks ties: away from zero (0) or to the nearest even (1)."""
  AWAY_FROM_ZERO = 0
  TO_NEAREST_EVEN = 1


def _round_emit(ctx, x, *, rounding_method):
  if rounding_method == RoundingMethod.AWAY_FROM_ZERO:
    return hlo.round_nearest_afz(x)
  return hlo.round_nearest_even(x)


round_p = _unop("round", FLOAT, _round_emit)


# ---- comparisons ---------------------------------------------------------------------------
def _compare(x, y, direction, aval):
  return mlir.compare(x, y, direction, aval.dtype)


def _cmp(name, direction, classes):
  def emit(ctx, x, y):
    return _compare(x, y, direction, ctx.avals_in[0])
  # The result is weakly typed when every operand is (JAX's default weak-type rule).
  return _binop(name, classes, emit, out_dtype=lambda *a: dtypes.bool_)


eq_p = _cmp("eq", "EQ", ANY)
ne_p = _cmp("ne", "NE", ANY)
lt_p = _cmp("lt", "LT", ORDERED)
le_p = _cmp("le", "LE", ORDERED)
gt_p = _cmp("gt", "GT", ORDERED)
ge_p = _cmp("ge", "GE", ORDERED)


# ---- bitwise and logical -------------------------------------------------------------------
and_p = _binop("and", BOOL_OR_INT, _simple(hlo.and_))
or_p = _binop("or", BOOL_OR_INT, _simple(hlo.or_))
xor_p = _binop("xor", BOOL_OR_INT, _simple(hlo.xor))
not_p = _unop("not", BOOL_OR_INT, _simple(hlo.not_))
shift_left_p = _binop("shift_left", INT, _simple(hlo.shift_left))
shift_right_arithmetic_p = _binop("shift_right_arithmetic", INT,
                                  _simple(hlo.shift_right_arithmetic))
shift_right_logical_p = _binop("shift_right_logical", INT, _simple(hlo.shift_right_logical))
population_count_p = _unop("population_count", INT, _simple(hlo.popcnt))
clz_p = _unop("clz", INT, _simple(hlo.count_leading_zeros))


# ---- transcendental ------------------------------------------------------------------------
exp_p = _unop("exp", INEXACT, _simple(hlo.exponential))
log_p = _unop("log", INEXACT, _simple(hlo.log))
log1p_p = _unop("log1p", INEXACT, _simple(hlo.log_plus_one))
expm1_p = _unop("expm1", INEXACT, _simple(hlo.exponential_minus_one))
sqrt_p = _unop("sqrt", INEXACT, _simple(hlo.sqrt))
rsqrt_p = _unop("rsqrt", INEXACT, _simple(hlo.rsqrt))
cbrt_p = _unop("cbrt", FLOAT, _simple(hlo.cbrt))
tanh_p = _unop("tanh", INEXACT, _simple(hlo.tanh))
logistic_p = _unop("logistic", INEXACT, _simple(hlo.logistic))


def _complex_sin_cos(ctx, x, is_cos):
  """sin/cos of a complex operand from real-valued ops.

  With z = a + ib: sin z = sin a cosh b + i cos a sinh b, cos z = cos a cosh b - i sin a sinh b.
  sinh and cosh come from expm1(b) and expm1(-b) (accurate for small |b|). Where a == 0 the
  component that is then exactly zero is set to zero (avoiding 0 * inf = nan for huge |b|).
  """
  part = ShapedArray(ctx.avals_out[0].shape, _real_dtype(ctx.avals_in[0]))
  a, b = hlo.real(x), hlo.imag(x)
  zero = mlir.full_like_aval(0, part)
  two = mlir.full_like_aval(2, part)
  a_is_zero = _compare(a, zero, "EQ", part)
  sin_a, cos_a = hlo.sine(a), hlo.cosine(a)
  em_pos, em_neg = hlo.exponential_minus_one(b), hlo.exponential_minus_one(hlo.negate(b))
  sinh_b = hlo.divide(hlo.subtract(em_pos, em_neg), two)
  cosh_b = hlo.divide(hlo.add(hlo.add(em_pos, em_neg), two), two)
  if is_cos:
    re, im = hlo.multiply(cos_a, cosh_b), hlo.multiply(hlo.negate(sin_a), sinh_b)
    at_zero = hlo.complex(re, zero)
  else:
    re, im = hlo.multiply(sin_a, cosh_b), hlo.multiply(cos_a, sinh_b)
    at_zero = hlo.complex(zero, im)
  return hlo.select(a_is_zero, at_zero, hlo.complex(re, im))


def _sin_emit(ctx, x):
  if ctx.avals_in[0].dtype.kind == "c":
    return _complex_sin_cos(ctx, x, is_cos=False)
  return hlo.sine(x)


def _cos_emit(ctx, x):
  if ctx.avals_in[0].dtype.kind == "c":
    return _complex_sin_cos(ctx, x, is_cos=True)
  return hlo.cosine(x)


sin_p = _unop("sin", INEXACT, _sin_emit)
cos_p = _unop("cos", INEXACT, _cos_emit)
tan_p = _unop("tan", INEXACT, _simple(hlo.tan))
asin_p = _unop("asin", INEXACT, _simple(chlo.asin))
acos_p = _unop("acos", INEXACT, _simple(chlo.acos))
atan_p = _unop("atan", INEXACT, _simple(chlo.atan))
sinh_p = _unop("sinh", INEXACT, _simple(chlo.sinh))
cosh_p = _unop("cosh", INEXACT, _simple(chlo.cosh))
asinh_p = _unop("asinh", INEXACT, _simple(chlo.asinh))
acosh_p = _unop("acosh", INEXACT, _simple(chlo.acosh))
atanh_p = _unop("atanh", INEXACT, _simple(chlo.atanh))
erf_p = _unop("erf", FLOAT, _simple(chlo.erf))
erfc_p = _unop("erfc", FLOAT, _simple(chlo.erfc))
erf_inv_p = _unop("erf_inv", FLOAT, _simple(chlo.erf_inv))
lgamma_p = _unop("lgamma", FLOAT, _simple(chlo.lgamma))
digamma_p = _unop("digamma", FLOAT, _simple(chlo.digamma))


def _exp2_emit(ctx, x):
  log2 = mlir.full_like_aval(np.log(2), ctx.avals_in[0])
  return hlo.exponential(hlo.multiply(log2, x))


exp2_p = _unop("exp2", INEXACT, _exp2_emit)


def _integer_pow_emit(ctx, x, *, y):
  aval = ctx.avals_in[0]
  if y == 0:
    return mlir.full_like_aval(1, aval)
  acc, base, n = None, x, abs(y)
  while n:
    if n & 1:
      acc = base if acc is None else hlo.multiply(acc, base)
    n >>= 1
    if n:
      base = hlo.multiply(base, base)
  if y < 0:
    acc = hlo.divide(mlir.full_like_aval(1, aval), acc)
  return acc


def _square_emit(ctx, x):
  if ctx.avals_in[0].dtype.kind in "iu":
    return hlo.multiply(x, x)
  return chlo.square(x)


square_p = _unop("square", NUM, _square_emit)
integer_pow_p = _unop("integer_pow", NUM, _integer_pow_emit)
_integer_pow_checked_eval = integer_pow_p.abstract_eval


def _integer_pow_abstract_eval(x, *, y):
  out = _integer_pow_checked_eval(x, y=y)
  if y < 0 and x.dtype.kind in "iu":
    raise TypeError(f"integer_pow of an integer operand needs a non-negative exponent; got "
                    f"{x.str_short()} to the power {y}.")
  return out


integer_pow_p.abstract_eval = _integer_pow_abstract_eval


# ---- complex -------------------------------------------------------------------------------
def _real_dtype(x):
  return np.dtype(np.float32) if x.dtype == dtypes.complex64 else np.dtype(np.float64)


def _complex_dtype(x, *rest):
  return np.dtype(np.complex128) if x.dtype == dtypes.float64 else np.dtype(np.complex64)


real_p = _unop("real", COMPLEX, _simple(hlo.real), out_dtype=_real_dtype)
imag_p = _unop("imag", COMPLEX, _simple(hlo.imag), out_dtype=_real_dtype)
complex_p = _binop("complex", FLOAT, _simple(hlo.complex), out_dtype=_complex_dtype)


def _conj_emit(ctx, x, *, input_dtype):
  aval = ctx.avals_in[0]
  if aval.dtype.kind == "c":
    return hlo.complex(hlo.real(x), hlo.negate(hlo.imag(x)))
  out_t = mlir.aval_to_ir_type(ctx.avals_out[0])
  return hlo.convert(out_t, x)


conj_p = _unop("conj", INEXACT, _conj_emit,
               out_dtype=lambda x, **_: x.dtype if x.dtype.kind == "c" else _complex_dtype(x))


# ---- selection -----------------------------------------------------------------------------
select_n_p = core.Primitive("select_n")


def _select_n_abstract_eval(which, *cases):
  if not cases:
    raise ValueError("select_n must have at least one case")
  if any(c.shape != cases[0].shape for c in cases):
    raise TypeError(f"select_n cases must have the same shapes, got "
                    f"[{', '.join(str(c.shape) for c in cases)}].")
  if any(c.dtype != cases[0].dtype for c in cases):
    raise TypeError(f"select_n cases must have the same dtypes, got "
                    f"[{', '.join(c.dtype.name for c in cases)}].")
  if which.shape and which.shape != cases[0].shape:
    raise TypeError("select_n `which` must be scalar or have the same shape as cases, got "
                    f"`which` shape {which.shape} but case shape {cases[0].shape}.")
  if which.dtype != np.bool_ and which.dtype != np.int32:
    raise TypeError(f"select_n `which` must be boolean or int32 type, got {which.dtype}.")
  if which.dtype == np.bool_ and len(cases) > 2:
    raise TypeError("select_n with boolean `which` cannot have > 2 cases.")
  return ShapedArray(cases[0].shape, cases[0].dtype, utils.weak_of(cases))


def _select_n_lower(ctx, which, *cases):
  which_aval = ctx.avals_in[0]
  out = ctx.avals_out[0]
  if which_aval.shape != out.shape:
    which = utils.broadcast_operand(out, which, which_aval)
    which_aval = which_aval.update(shape=out.shape)
  return [_select_tree(which, which_aval, list(cases), 0)]


def _select_tree(which, which_aval, cases, offset):
  if len(cases) == 1:
    return cases[0]
  if which_aval.dtype == np.bool_:
    return hlo.select(which, cases[1], cases[0])
  mid = len(cases) // 2
  pivot = mlir.full_like_aval(offset + mid, which_aval)
  pred = _compare(which, pivot, "LT", which_aval)
  return hlo.select(pred, _select_tree(which, which_aval, cases[:mid], offset),
                    _select_tree(which, which_aval, cases[mid:], offset + mid))


select_n_p.abstract_eval = _select_n_abstract_eval
select_n_p.lowering = _select_n_lower

clamp_p = core.Primitive("clamp")


def _clamp_abstract_eval(lo, x, hi):
  for name, a in (("min", lo), ("max", hi)):
    if a.shape and a.shape != x.shape:
      raise TypeError(f"clamp requires {name}.shape == operand.shape or {name}.shape == (), "
                      f"got {a.shape} and {x.shape}.")
    if a.dtype != x.dtype:
      raise TypeError(f"clamp requires {name}.dtype == operand.dtype, got {a.dtype} and "
                      f"{x.dtype}.")
  utils.check_dtype("clamp", x, ORDERED)
  return ShapedArray(x.shape, x.dtype, utils.weak_of([lo, x, hi]))


clamp_p.abstract_eval = _clamp_abstract_eval
clamp_p.lowering = lambda ctx, lo, x, hi: [hlo.clamp(lo, x, hi)]


# ---- conversions ---------------------------------------------------------------------------
convert_element_type_p = core.Primitive("convert_element_type")


def _convert_abstract_eval(x, *, new_dtype, weak_type, sharding):
  return ShapedArray(x.shape, new_dtype, weak_type)


def _convert_lower(ctx, x, *, new_dtype, weak_type, sharding):
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  if aval_in.dtype.kind == "c" and aval_out.dtype.kind != "c":
    x = hlo.real(x)
    aval_in = aval_in.update(dtype=_real_dtype(aval_in))
  if aval_out.dtype == np.bool_ and aval_in.dtype != np.bool_:
    return [_compare(x, mlir.full_like_aval(0, aval_in), "NE", aval_in)]
  if aval_in.dtype == aval_out.dtype:
    return [x]
  return [hlo.convert(mlir.aval_to_ir_type(aval_out), x)]


convert_element_type_p.abstract_eval = _convert_abstract_eval
convert_element_type_p.lowering = _convert_lower
convert_element_type_p.pp_params = lambda p: {k: v for k, v in p.items() if k != "sharding"}

bitcast_convert_type_p = core.Primitive("bitcast_convert_type")


def _bitcast_abstract_eval(x, *, new_dtype):
  old, new = x.dtype.itemsize, np.dtype(new_dtype).itemsize
  shape = x.shape
  if old > new:
    shape = shape + (old // new,)
  elif old < new:
    if not shape or shape[-1] != new // old:
      raise TypeError(f"Attempting to convert array of shape {x.shape} from {x.dtype} to "
                      f"{np.dtype(new_dtype)}: the last dimension must be {new // old}.")
    shape = shape[:-1]
  return ShapedArray(shape, new_dtype, False)


bitcast_convert_type_p.abstract_eval = _bitcast_abstract_eval
bitcast_convert_type_p.lowering = lambda ctx, x, *, new_dtype: [
    hlo.bitcast_convert(mlir.aval_to_ir_type(ctx.avals_out[0]), x)]

reduce_precision_p = core.Primitive("reduce_precision")
reduce_precision_p.abstract_eval = lambda x, *, exponent_bits, mantissa_bits: (
    utils.check_dtype("reduce_precision", x, FLOAT) or x)
reduce_precision_p.lowering = lambda ctx, x, *, exponent_bits, mantissa_bits: [
    hlo.reduce_precision(x, mlir.i32_attr(exponent_bits), mlir.i32_attr(mantissa_bits))]

del ir


# ---- differentiation rules -------------------------------------------------------------------
# JVPs follow JAX's formulas (so that grad jaxprs print like JAX's); transposes of linear
# primitives sum a cotangent back to a rank-0 operand that was broadcast.
from arrax._src import ad  # noqa: E402


def _unbroadcast(aval, ct):
  """Sum `ct` down to `aval`'s shape (elementwise operands broadcast only from rank 0)."""
  if type(ct) is ad.Zero or core.get_aval(ct).shape == aval.shape:
    return ct
  from arrax._src.lax import reductions
  ct_aval = core.get_aval(ct)
  return reductions.reduce_sum_p.bind(ct, axes=tuple(range(ct_aval.ndim)), out_sharding=None)


def _bcast_tangent(t, out_aval):
  """A tangent of a rank-0 operand broadcast to the output's shape."""
  if type(t) is ad.Zero or core.get_aval(t).shape == out_aval.shape:
    return t
  from arrax._src.lax import shape_ops
  return shape_ops.broadcast_in_dim_p.bind(t, shape=out_aval.shape, broadcast_dimensions=(),
                                           sharding=None)


def _linear_binop_jvp(prim, sign_y):
  # JAX's formulas: add(tx, ty) / sub(tx, ty); a lone tangent is broadcast (negated for sub's y).
  def jvp(primals, tangents):
    x, y = primals
    tx, ty = tangents
    out = prim.bind(x, y)
    aval = core.get_aval(out)
    if type(tx) is ad.Zero and type(ty) is ad.Zero:
      return out, ad.Zero(ad.tangent_aval(aval))
    if type(tx) is ad.Zero:
      return out, _bcast_tangent(ty if sign_y > 0 else neg_p.bind(ty), aval)
    if type(ty) is ad.Zero:
      return out, _bcast_tangent(tx, aval)
    return out, prim.bind(tx, ty)
  return jvp


def _add_transpose(ct, x, y):
  return [_unbroadcast(x.aval, ct) if ad.is_undefined(x) else None,
          _unbroadcast(y.aval, ct) if ad.is_undefined(y) else None]


def _sub_transpose(ct, x, y):
  if type(ct) is ad.Zero:
    return [None, None]
  return [_unbroadcast(x.aval, ct) if ad.is_undefined(x) else None,
          _unbroadcast(y.aval, neg_p.bind(ct)) if ad.is_undefined(y) else None]


add_p.jvp = _linear_binop_jvp(add_p, 1)
add_p.transpose = _add_transpose
sub_p.jvp = _linear_binop_jvp(sub_p, -1)
sub_p.transpose = _sub_transpose


def _mul_transpose(ct, x, y):
  if ad.is_undefined(x):
    return [_unbroadcast(x.aval, mul_p.bind(ct, y)), None]
  return [None, _unbroadcast(y.aval, mul_p.bind(x, ct))]


ad.defjvp(mul_p, lambda tx, x, y: mul_p.bind(_bcast_tangent(tx, _mul_aval(x, y)), y),
          lambda ty, x, y: mul_p.bind(x, _bcast_tangent(ty, _mul_aval(x, y))))
mul_p.transpose = _mul_transpose


def _mul_aval(x, y):
  return mul_p.abstract_eval(core.get_aval(x), core.get_aval(y))


ad.deflinear(neg_p, lambda ct, x: [neg_p.bind(ct)])
ad.defjvp(sin_p, lambda t, x: mul_p.bind(t, cos_p.bind(x)))
ad.defjvp(cos_p, lambda t, x: neg_p.bind(mul_p.bind(t, sin_p.bind(x))))


def _convert_jvp(primals, tangents, *, new_dtype, weak_type, sharding):
  (x,), (t,) = primals, tangents
  out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type,
                                    sharding=sharding)
  out_t_aval = ad.tangent_aval(core.get_aval(out))
  if type(t) is ad.Zero or ad.is_float0(out_t_aval):
    return out, ad.Zero(out_t_aval)
  return out, convert_element_type_p.bind(t, new_dtype=new_dtype, weak_type=weak_type,
                                          sharding=sharding)


def _convert_transpose(ct, x, *, new_dtype, weak_type, sharding):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  return [convert_element_type_p.bind(ct, new_dtype=x.aval.dtype, weak_type=x.aval.weak_type,
                                      sharding=sharding)]


convert_element_type_p.jvp = _convert_jvp
convert_element_type_p.transpose = _convert_transpose
