"""Elementwise primitives: arithmetic, comparisons, bitwise, transcendental, complex, conversions.

Operands have equal shapes, except that rank-0 operands broadcast (as JAX's lax allows for
scalar literals). Each primitive is defined with its shape/dtype rule and its lowering.
"""
from __future__ import annotations

import builtins
import enum
import operator

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo as hlo

from arrax._src import ad, array, batching, core, dtypes, mlir, tree_util
from arrax._src.array import Array, device_put_value
from arrax._src.core import Literal, ShapedArray, Tracer
from arrax._src.lax import broadcasting, utils
from arrax._src.lax.accuracy import accuracy_attr, check_accuracy
from arrax._src.lax.utils import _host_cast, asarray_operand, scalar_literal
from arrax._src.tracing import stage_literal
from arrax._src.lax.utils import (ANY, BOOL_OR_INT, COMPLEX, FLOAT, INEXACT, INT, NUM,
                                  ORDERED, SIGNED)


# Names of the primitives `_naryop` made -> their operand count (how shard_map's types treat
# unreduced/reduced operands: JAX's unop/naryop rules).
NARY_ARITY: dict = {}


def _naryop(name, arg_classes, emit, *, out_dtype=None, same_dtype=True, weak=None):
  """An elementwise primitive. `emit(ctx, *ir_values, **params)` builds the op."""
  prim = core.Primitive(name)
  NARY_ARITY[name] = len(arg_classes)

  def abstract_eval(*avals, **params):
    if len(avals) != len(arg_classes):
      raise TypeError(f"{name} takes {len(arg_classes)} operands, got {len(avals)}")
    for i, (aval, classes) in enumerate(zip(avals, arg_classes)):
      utils.check_dtype(name, aval, classes, i if len(avals) > 1 else None)
    requested = params.get("out_dtype")   # lax.mul(..., out_dtype=): inputs may differ
    if same_dtype and len(avals) > 1 and requested is None:
      utils.same_dtypes(name, avals)
    shape = utils.broadcasting_shape(name, *avals)
    dt = (np.dtype(requested) if requested is not None else
          out_dtype(*avals) if out_dtype else avals[0].dtype)
    wt = weak(*avals) if weak else utils.weak_of(avals)
    return ShapedArray(shape, dt, wt)

  def lowering(ctx, *args, **params):
    out = ctx.avals_out[0]
    args = [utils.broadcast_operand(out, v, a) for v, a in zip(args, ctx.avals_in)]
    return [emit(ctx, *args, **params)]

  prim.def_abstract_eval(abstract_eval)
  prim.def_lowering(lowering)
  # Unary primitives keep the operand's batch axis; n-ary ones broadcast their operands.
  if len(arg_classes) == 1:
    batching.defvectorized(prim)
  else:
    batching.defbroadcasting(prim)
  return prim


def _unop(name, classes, emit, **kw):
  return _naryop(name, [classes], emit, **kw)


def _binop(name, classes, emit, **kw):
  return _naryop(name, [classes, classes], emit, **kw)


def _simple(op):
  return lambda ctx, *args, **params: op(*args)


def _accurate(op):
  """The lowering of a transcendental function taking an optional `accuracy` request."""
  return lambda ctx, x, accuracy=None: op(x, result_accuracy=accuracy_attr(accuracy))


def _is_unsigned(aval):
  return aval.dtype.kind == "u"


# ---- shared by the rules below ----------------------------------------------------------
# JVPs follow JAX's formulas (same primitives, same operand order), so that grad jaxprs print
# like JAX's; they call the wrappers at the end of the module. Transposes of linear primitives
# sum a cotangent back to an operand that was broadcast (rank 0, or size-1 axes).
def _integer_pow(x, y):
  return integer_pow_p.bind(x, y=y)


def _conj(x):
  return conj_p.bind(x, input_dtype=core.get_aval(x).dtype)


def _convert(x, dtype):
  return _convert_element_type(x, dtype, weak_type=False)


def _select(pred, on_true, on_false):
  return select_n(pred, on_false, on_true)


def _const(x, value):
  """A rank-0 constant of `x`'s dtype.

  As in JAX, it is weakly typed when `x` is a weakly typed scalar of the default dtype of its
  kind (the type a Python scalar would get), and strongly typed otherwise.
  """
  aval = core.get_aval(x)
  if aval.weak_type and not aval.shape:
    kind = (bool if aval.dtype == np.bool_ else
            builtins.complex if aval.dtype.kind == "c" else
            float if dtypes.issubdtype(aval.dtype, np.floating) else int)
    if core.get_aval(kind(0)).dtype == aval.dtype:
      return core.Literal(kind(value), aval)   # the Python value, unrounded (printed as such)
  return scalar_literal(value, aval.dtype)


def _full_like(x, value, shape=None):
  """`value` in the dtype (and weak type) of `x`, with `x`'s shape unless `shape` is given."""
  aval = core.get_aval(x)
  shape = aval.shape if shape is None else shape
  fill = scalar_literal(value, aval.dtype, aval.weak_type)
  if not shape:
    return stage_literal(fill)   # a made value, as JAX's full_like (a residual when linearized)
  return broadcasting.broadcast_in_dim_p.bind(fill, shape=shape, broadcast_dimensions=(),
                                              sharding=None)


def _zeros(x):
  return _full_like(x, 0)


def _ones(x):
  return _full_like(x, 1)


def _one(x):
  return _full_like(x, 1, ())


def _replace_zero(x):
  return _select(eq(x, _const(x, 0)), _ones(x), x)


def _out_shape(*xs):
  return utils.broadcasting_shape("broadcast", *map(core.get_aval, xs))


def _maybe_broadcast(shape, t):
  """Broadcast `t` (rank 0, or with size-1 axes) to `shape`."""
  t_shape = core.get_aval(t).shape
  if type(t) is ad.Zero or t_shape == tuple(shape):
    return t
  so = broadcasting
  dims = ()
  if t_shape:
    dims = tuple(i for i, (a, b) in enumerate(zip(t_shape, shape)) if a == b)
    t = so.reshape(t, [t_shape[i] for i in dims])
  return so.broadcast_in_dim_p.bind(t, shape=tuple(shape), broadcast_dimensions=dims,
                                    sharding=None)


def _unbroadcast(aval, ct):
  """Sum `ct` down to `aval`'s shape (elementwise operands broadcast from rank 0 or size 1)."""
  if type(ct) is ad.Zero:
    return ct
  ct_shape = core.get_aval(ct).shape
  if ct_shape == aval.shape:
    return ct
  if not aval.shape:
    return broadcasting.reduce_sum(ct, tuple(range(len(ct_shape))))
  dims = tuple(i for i, (a, b) in enumerate(zip(ct_shape, aval.shape)) if a != b)
  if dims:
    ct = broadcasting.reduce_sum(ct, dims)
  return broadcasting.reshape(ct, aval.shape)


def _zero_tangent(out):
  return ad.Zero(ad.tangent_aval(core.get_aval(out)))


def _batch_size(args, dims):
  return next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)


def _broadcast_to(x, shape, dims):
  return broadcasting.broadcast_in_dim(x, shape, dims)


# ---- arithmetic ----------------------------------------------------------------------------
add_p = _binop("add", NUM, _simple(hlo.add))
sub_p = _binop("sub", NUM, _simple(hlo.subtract))


def _linear_binop_jvp(prim, negate_y):
  # add(tx, ty) / sub(tx, ty); a lone tangent is broadcast to the output (negated for sub's y).
  def jvp(primals, tangents):
    tx, ty = tangents
    out = prim.bind(*primals)
    if type(tx) is ad.Zero and type(ty) is ad.Zero:
      return out, _zero_tangent(out)
    shape = core.get_aval(out).shape
    if type(tx) is ad.Zero:
      return out, _maybe_broadcast(shape, neg(ty) if negate_y else ty)
    if type(ty) is ad.Zero:
      return out, _maybe_broadcast(shape, tx)
    return out, prim.bind(tx, ty)
  return jvp


def _add_transpose(ct, x, y):
  return [_unbroadcast(x.aval, ct) if ad.is_undefined(x) else None,
          _unbroadcast(y.aval, ct) if ad.is_undefined(y) else None]


def _sub_transpose(ct, x, y):
  return [_unbroadcast(x.aval, ct) if ad.is_undefined(x) else None,
          _unbroadcast(y.aval, neg(ct)) if ad.is_undefined(y) else None]


add_p.def_jvp(_linear_binop_jvp(add_p, False))
add_p.def_transpose(_add_transpose)
sub_p.def_jvp(_linear_binop_jvp(sub_p, True))
sub_p.def_transpose(_sub_transpose)


def _mul_emit(ctx, x, y, out_dtype=None):
  if out_dtype is not None:   # multiply in the requested type
    ty = mlir.aval_to_ir_type(ctx.avals_out[0])
    x, y = hlo.convert(ty, x), hlo.convert(ty, y)
  return hlo.multiply(x, y)


mul_p = _binop("mul", NUM, _mul_emit)


def _mul_transpose(ct, x, y, *, out_dtype=None):
  if ad.is_undefined(x) and ad.is_undefined(y):
    raise NotImplementedError("mul is bilinear: it can be transposed in one operand only")
  # With out_dtype, the cotangent is computed in the operand's type (as JAX).
  undefined = x if ad.is_undefined(x) else y
  to = None if out_dtype is None else undefined.aval.dtype
  if undefined is x:
    return [_unbroadcast(x.aval, mul(ct, y, out_dtype=to)), None]
  return [None, _unbroadcast(y.aval, mul(x, ct, out_dtype=to))]


ad.defjvp(mul_p, lambda tx, x, y, **p: mul(tx, y, **p), lambda ty, x, y, **p: mul(x, ty, **p))
mul_p.def_transpose(_mul_transpose)


div_p = _binop("div", NUM, _simple(hlo.divide))


def _div_transpose(ct, x, y):
  if ad.is_undefined(y):
    raise NotImplementedError("div is not linear in its divisor: it cannot be transposed in y")
  return [_unbroadcast(x.aval, div(ct, y)), None]


ad.defjvp(div_p, lambda g, x, y: div(g, y),
          lambda g, x, y: mul(mul(neg(g), x), _integer_pow(y, -2)))
div_p.def_transpose(_div_transpose)


rem_p = _binop("rem", (INT, FLOAT), _simple(hlo.remainder))
ad.defjvp(rem_p, lambda g, x, y: _maybe_broadcast(_out_shape(x, y), g),
          lambda g, x, y: mul(neg(g), mul(sign(div(x, y)), floor(abs(div(x, y))))))


neg_p = _unop("neg", NUM, _simple(hlo.negate))
ad.deflinear(neg_p, lambda ct, x: [neg(ct)])


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


def _balanced_eq(x, ans, y):
  # At ties the tangent is split evenly between the operands.
  return div(_select(eq(x, ans), _ones(ans), _zeros(ans)),
             _select(eq(y, ans), _full_like(ans, 2), _ones(ans)))


for _p in (max_p, min_p):
  ad.defjvp2(_p, lambda g, ans, x, y: mul(g, _balanced_eq(x, ans, y)),
             lambda g, ans, x, y: mul(g, _balanced_eq(y, ans, x)))


pow_p = _naryop("pow", [INEXACT, (INT, FLOAT, COMPLEX)], None, same_dtype=False)


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


pow_p.def_abstract_eval(_pow_abstract_eval)
pow_p.def_lowering(_pow_lower)


def _pow_jvp_x(g, ans, x, y):
  y_is_int = core.get_aval(y).dtype.kind in "iu"
  dtype = core.get_aval(x).dtype
  x, y = _convert(x, dtype), _convert(y, dtype)
  if y_is_int:
    shape = _out_shape(x, y)
    x, y = _maybe_broadcast(shape, x), _maybe_broadcast(shape, y)
    # d/dx x**0 is 0, also at x = 0 (where y * x**(y-1) would be 0 * inf).
    jac = _select(eq(y, _const(y, 0)), _zeros(y),
                  mul(_replace_zero(y), pow(x, sub(y, _ones(y)))))
  else:
    jac = mul(y, pow(x, sub(y, _ones(y))))
  return mul(g, jac)


def _pow_jvp_y(g, ans, x, y):
  return _convert(mul(g, mul(log(_replace_zero(x)), ans)), core.get_aval(y).dtype)


ad.defjvp2(pow_p, _pow_jvp_x, _pow_jvp_y)


atan2_p = _binop("atan2", INEXACT, _simple(hlo.atan2))
ad.defjvp(atan2_p, lambda g, x, y: mul(g, div(y, add(square(x), square(y)))),
          lambda g, x, y: mul(g, div(neg(x), add(square(x), square(y)))))


# nextafter has no derivative rule in JAX either (differentiating it raises NotImplementedError).
nextafter_p = _binop("nextafter", FLOAT, _simple(chlo.next_after))


abs_p = _unop("abs", (SIGNED, FLOAT, COMPLEX), _simple(hlo.abs),
              out_dtype=lambda x: _real_dtype(x) if x.dtype.kind == "c" else x.dtype)


def _abs_jvp(g, ans, x):
  # The derivative at 0 is taken as +1 (real) and 0 (complex).
  x_dtype = core.get_aval(x).dtype
  if x_dtype.kind == "c":
    return real(mul(g, div(_conj(x), _replace_zero(_convert(ans, x_dtype)))))
  return _select(ge(x, _full_like(x, 0, ())), g, neg(g))


ad.defjvp2(abs_p, _abs_jvp)


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


for _p in (sign_p, floor_p, ceil_p, round_p, is_finite_p):   # piecewise constant
  ad.defjvp_zero(_p)


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
for _p in (eq_p, ne_p, lt_p, le_p, gt_p, ge_p):
  ad.defjvp_zero(_p)


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
for _p in (and_p, or_p, xor_p, not_p, shift_left_p, shift_right_arithmetic_p,
           shift_right_logical_p, population_count_p, clz_p):
  ad.defjvp_zero(_p)


# ---- transcendental ------------------------------------------------------------------------
exp_p = _unop("exp", INEXACT, _accurate(hlo.exponential))
ad.defjvp2(exp_p, lambda g, ans, x, **_: mul(g, ans))
log_p = _unop("log", INEXACT, _accurate(hlo.log))
ad.defjvp(log_p, lambda g, x, **_: div(g, x))
log1p_p = _unop("log1p", INEXACT, _accurate(hlo.log_plus_one))
ad.defjvp(log1p_p, lambda g, x, **_: div(g, add(x, _one(x))))
expm1_p = _unop("expm1", INEXACT, _accurate(hlo.exponential_minus_one))
ad.defjvp2(expm1_p, lambda g, ans, x, **_: mul(g, add(ans, _one(ans))))
sqrt_p = _unop("sqrt", INEXACT, _accurate(hlo.sqrt))
ad.defjvp2(sqrt_p, lambda g, ans, x, **_: mul(g, div(_const(x, 0.5), ans)))
rsqrt_p = _unop("rsqrt", INEXACT, _accurate(hlo.rsqrt))
ad.defjvp2(rsqrt_p, lambda g, ans, x, **_: mul(g, mul(_const(x, -0.5), div(ans, x))))
cbrt_p = _unop("cbrt", FLOAT, _accurate(hlo.cbrt))
ad.defjvp2(cbrt_p, lambda g, ans, x, **_: mul(g, mul(_const(x, 1 / 3), _integer_pow(ans, -2))))
tanh_p = _unop("tanh", INEXACT, _accurate(hlo.tanh))
ad.defjvp2(tanh_p, lambda g, ans, x, **_: mul(add(g, mul(g, ans)), sub(_one(x), ans)))
logistic_p = _unop("logistic", INEXACT, _accurate(hlo.logistic))
ad.defjvp2(logistic_p, lambda g, ans, x, **_: mul(g, mul(ans, sub(_one(ans), ans))))


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


def _sin_emit(ctx, x, accuracy=None):
  if ctx.avals_in[0].dtype.kind == "c":
    return _complex_sin_cos(ctx, x, is_cos=False)
  return hlo.sine(x, result_accuracy=accuracy_attr(accuracy))


def _cos_emit(ctx, x, accuracy=None):
  if ctx.avals_in[0].dtype.kind == "c":
    return _complex_sin_cos(ctx, x, is_cos=True)
  return hlo.cosine(x, result_accuracy=accuracy_attr(accuracy))


sin_p = _unop("sin", INEXACT, _sin_emit)
ad.defjvp(sin_p, lambda g, x, **_: mul(g, cos(x)))
cos_p = _unop("cos", INEXACT, _cos_emit)
ad.defjvp(cos_p, lambda g, x, **_: neg(mul(g, sin(x))))
tan_p = _unop("tan", INEXACT, _accurate(hlo.tan))
ad.defjvp2(tan_p, lambda g, ans, x, **_: mul(g, add(_const(x, 1), square(ans))))
asin_p = _unop("asin", INEXACT, _simple(chlo.asin))
ad.defjvp(asin_p, lambda g, x: mul(g, rsqrt(sub(_const(x, 1), square(x)))))
acos_p = _unop("acos", INEXACT, _simple(chlo.acos))
ad.defjvp(acos_p, lambda g, x: mul(g, neg(rsqrt(sub(_const(x, 1), square(x))))))
atan_p = _unop("atan", INEXACT, _simple(chlo.atan))
ad.defjvp(atan_p, lambda g, x: div(g, add(_const(x, 1), square(x))))
sinh_p = _unop("sinh", INEXACT, _simple(chlo.sinh))
ad.defjvp(sinh_p, lambda g, x: mul(g, cosh(x)))
cosh_p = _unop("cosh", INEXACT, _simple(chlo.cosh))
ad.defjvp(cosh_p, lambda g, x: mul(g, sinh(x)))
asinh_p = _unop("asinh", INEXACT, _simple(chlo.asinh))
ad.defjvp(asinh_p, lambda g, x: mul(g, rsqrt(add(square(x), _one(x)))))
acosh_p = _unop("acosh", INEXACT, _simple(chlo.acosh))
ad.defjvp(acosh_p, lambda g, x: mul(g, rsqrt(sub(square(x), _one(x)))))
atanh_p = _unop("atanh", INEXACT, _simple(chlo.atanh))
ad.defjvp(atanh_p, lambda g, x: mul(_integer_pow(add(_one(x), x), -1),
                                    div(g, sub(_one(x), x))))
erf_p = _unop("erf", FLOAT, _simple(chlo.erf))
ad.defjvp(erf_p, lambda g, x: mul(_const(x, 2 / np.sqrt(np.pi)),
                                  mul(g, exp(neg(square(x))))))
erfc_p = _unop("erfc", FLOAT, _simple(chlo.erfc))
ad.defjvp(erfc_p, lambda g, x: mul(_const(x, -2 / np.sqrt(np.pi)),
                                   mul(g, exp(neg(square(x))))))
erf_inv_p = _unop("erf_inv", FLOAT, _simple(chlo.erf_inv))
ad.defjvp2(erf_inv_p, lambda g, ans, x: mul(_const(x, np.sqrt(np.pi) / 2),
                                            mul(g, exp(square(ans)))))
lgamma_p = _unop("lgamma", FLOAT, _simple(chlo.lgamma))
ad.defjvp(lgamma_p, lambda g, x: mul(g, digamma(x)))
digamma_p = _unop("digamma", FLOAT, _simple(chlo.digamma))
ad.defjvp(digamma_p, lambda g, x: mul(g, polygamma(_const(x, 1), x)))
polygamma_p = _binop("polygamma", FLOAT, _simple(chlo.polygamma))   # digamma's derivative


def _polygamma_jvp_m(g, m, x):
  raise ValueError("polygamma gradient with respect to m is not supported; differentiate "
                   "with respect to x only (wrap m in lax.stop_gradient).")
ad.defjvp(polygamma_p, _polygamma_jvp_m,
          lambda g, m, x: mul(g, polygamma(add(m, _const(m, 1)), x)))


def _exp2_emit(ctx, x, accuracy=None):
  log2 = mlir.full_like_aval(np.log(2), ctx.avals_in[0])
  return hlo.exponential(hlo.multiply(log2, x), result_accuracy=accuracy_attr(accuracy))


exp2_p = _unop("exp2", INEXACT, _exp2_emit)
ad.defjvp2(exp2_p, lambda g, ans, x, **_: mul(log(_const(x, 2)), mul(g, ans)))


def _integer_pow_emit(ctx, x, *, y):
  aval = ctx.avals_in[0]
  if y == 0:
    return mlir.full_like_aval(1, aval)
  acc, base, n = None, x, builtins.abs(y)
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
ad.defjvp2(square_p, lambda g, ans, x: mul(g, mul(_const(x, 2), x)))
integer_pow_p = _unop("integer_pow", NUM, _integer_pow_emit)
_integer_pow_checked_eval = integer_pow_p.abstract_eval


def _integer_pow_abstract_eval(x, *, y):
  out = _integer_pow_checked_eval(x, y=y)
  if y < 0 and x.dtype.kind in "iu":
    raise TypeError(f"integer_pow of an integer operand needs a non-negative exponent; got "
                    f"{x.str_short()} to the power {y}.")
  return out


integer_pow_p.def_abstract_eval(_integer_pow_abstract_eval)


def _integer_pow_jvp(g, x, *, y):
  if y == 0:
    return _zeros(g)
  if y == 1:
    return g
  if y == 2:
    return mul(g, mul(_const(x, 2), x))
  return mul(g, mul(_const(x, y), _integer_pow(x, y - 1)))


ad.defjvp(integer_pow_p, _integer_pow_jvp)


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


# Transposes (JAX's conventions: no implicit conjugation).
def _complex_transpose(ct, x, y):
  return [_unbroadcast(x.aval, real(ct)) if ad.is_undefined(x) else None,
          _unbroadcast(y.aval, imag(neg(ct))) if ad.is_undefined(y) else None]


def _conj_transpose(ct, x, *, input_dtype):
  if np.dtype(input_dtype).kind == "c":
    return [_conj(ct)]
  return [real(ct)]


def _part_zero(ct):
  return scalar_literal(0, core.get_aval(ct).dtype)


ad.deflinear(real_p, lambda ct, x: [complex(ct, _part_zero(ct))])
ad.deflinear(imag_p, lambda ct, x: [complex(_part_zero(ct), neg(ct))])
ad.deflinear(complex_p, _complex_transpose)
ad.deflinear(conj_p, _conj_transpose)


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
  if which.dtype != np.bool_ and which.dtype.kind not in "iu":
    raise TypeError(f"select_n `which` must be boolean or integer type, got {which.dtype}.")
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


select_n_p.def_abstract_eval(_select_n_abstract_eval)
select_n_p.def_lowering(_select_n_lower)


def _select_n_batch(args, dims):
  which, *cases = args
  w_dim, *c_dims = dims
  w_shape = core.get_aval(which).shape
  c_shape = core.get_aval(cases[0]).shape
  if all(d == w_dim for d in c_dims):   # everything batched at the same axis
    if len(w_shape) != len(c_shape):   # a scalar predicate per example
      which = _broadcast_to(which, c_shape, (w_dim,))
    return select_n_p.bind(which, *cases), w_dim
  if not w_shape and all(d is not None for d in c_dims):   # one predicate for all examples
    d0 = c_dims[0]
    if all(d == d0 for d in c_dims) or all(core.get_aval(c).shape == c_shape for c in cases):
      cases = [batching.moveaxis(c, d, d0) for c, d in zip(cases, c_dims)]
      return select_n_p.bind(which, *cases), d0
  size = _batch_size(args, dims)
  if w_shape:
    which = batching.bdim_at_front(which, w_dim, size)
  if any(core.get_aval(c).shape for c in cases) or any(d is not None for d in c_dims):
    cases = [batching.bdim_at_front(c, d, size) for c, d in zip(cases, c_dims)]
  w_nd, c_shape = core.get_aval(which).ndim, core.get_aval(cases[0]).shape
  if 0 < w_nd < len(c_shape):   # a batched scalar predicate with array cases
    which = _broadcast_to(which, c_shape, (0,))
  elif w_nd > len(c_shape):   # a batched predicate with scalar cases
    w_shape = core.get_aval(which).shape
    cases = [_broadcast_to(c, w_shape, ()) for c in cases]
  return select_n_p.bind(which, *cases), 0


select_n_p.def_batch(_select_n_batch)


def _select_n_jvp(primals, tangents):
  which, *cases = primals
  case_tangents = tangents[1:]
  out = select_n_p.bind(which, *cases)
  nonzero = [t for t in case_tangents if type(t) is not ad.Zero]
  if not nonzero:
    return out, ad.Zero(case_tangents[0].aval)
  zero = _zeros(nonzero[0])
  case_tangents = [zero if type(t) is ad.Zero else t for t in case_tangents]
  return out, select_n_p.bind(which, *case_tangents)


def _select_n_transpose(ct, which, *cases):
  if ad.is_undefined(which):
    raise NotImplementedError("select_n cannot be transposed in its predicate `which`")
  if len(cases) == 1:
    return [None, ct]
  zeros = _zeros(ct)
  if core.get_aval(which).dtype == np.bool_:
    return [None,
            _select(which, zeros, ct) if ad.is_undefined(cases[0]) else None,
            _select(which, ct, zeros) if ad.is_undefined(cases[1]) else None]
  return [None] + [_select(eq(which, _const(which, i)), ct, zeros)
                   if ad.is_undefined(c) else None for i, c in enumerate(cases)]


select_n_p.def_jvp(_select_n_jvp)
select_n_p.def_transpose(_select_n_transpose)

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


clamp_p.def_abstract_eval(_clamp_abstract_eval)
clamp_p.def_lowering(lambda ctx, lo, x, hi: [hlo.clamp(lo, x, hi)])


def _clamp_batch(args, dims):
  lo, x, hi = args
  lo_d, x_d, hi_d = dims
  lo_nd, x_nd, hi_nd = (core.get_aval(a).ndim for a in args)
  if lo_d == x_d == hi_d:
    if lo_nd == x_nd == hi_nd or lo_nd == hi_nd == 0:
      return clamp_p.bind(lo, x, hi), x_d
  elif lo_nd == hi_nd == 0 and x_d is not None:   # unbatched scalar bounds
    return clamp_p.bind(lo, x, hi), x_d
  size = _batch_size(args, dims)
  x = batching.bdim_at_front(x, x_d, size)
  x_shape = core.get_aval(x).shape
  bounds = []
  for b, d in ((lo, lo_d), (hi, hi_d)):
    if d is None and not core.get_aval(b).shape:
      bounds.append(b)   # an unbatched scalar bound broadcasts by itself
      continue
    b = batching.bdim_at_front(b, d, size)
    b_nd = core.get_aval(b).ndim
    if b_nd < len(x_shape):   # a batched scalar bound
      b = _broadcast_to(b, x_shape, tuple(range(b_nd)))
    bounds.append(b)
  return clamp_p.bind(bounds[0], x, bounds[1]), 0


clamp_p.def_batch(_clamp_batch)


ad.defjvp(clamp_p,
          lambda g, lo, x, hi: _select(bitwise_and(gt(lo, x), lt(lo, hi)), g, _zeros(x)),
          lambda g, lo, x, hi: _select(bitwise_and(gt(x, lo), lt(x, hi)), g, _zeros(x)),
          lambda g, lo, x, hi: _select(lt(hi, x), g, _zeros(x)))


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
  # (also between equal dtypes, a weak type made strong: an identity XLA removes, as in JAX)
  return [hlo.convert(mlir.aval_to_ir_type(aval_out), x)]


convert_element_type_p.def_abstract_eval(_convert_abstract_eval)
convert_element_type_p.def_lowering(_convert_lower)
convert_element_type_p.def_pp_params(lambda p: {k: v for k, v in p.items() if k != "sharding"})
convert_element_type_p.def_const_fold(
    lambda x, *, new_dtype, weak_type, sharding:
    scalar_literal(_host_cast(x.val, new_dtype), new_dtype, weak_type))
batching.defvectorized(convert_element_type_p)


def _convert_bind(x, new_dtype, weak_type, sharding):
  """convert_element_type, folded into a new literal when `x` is a rank-0 host constant (as
  JAX folds it while tracing: the seed cotangent of grad stays a literal). A conversion to
  the same type returns `x` (JAX forwards such equations while staging)."""
  aval = core.get_aval(x)
  if aval.dtype == new_dtype and aval.weak_type == weak_type and isinstance(x, (Array, Tracer)):
    return x
  if isinstance(x, core.Literal) or type(x) in dtypes.python_scalar_dtypes or (
      isinstance(x, (np.ndarray, np.generic)) and np.ndim(x) == 0):
    return scalar_literal(_host_cast(getattr(x, "val", x), new_dtype), new_dtype,
                                 weak_type)
  return convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type,
                                     sharding=sharding)


def _convert_jvp(primals, tangents, *, new_dtype, weak_type, sharding):
  (x,), (t,) = primals, tangents
  out = convert_element_type_p.bind(x, new_dtype=new_dtype, weak_type=weak_type,
                                    sharding=sharding)
  out_t_aval = ad.tangent_aval(core.get_aval(out))
  if type(t) is ad.Zero or ad.is_float0(out_t_aval):
    return out, ad.Zero(out_t_aval)
  return out, _convert_bind(t, new_dtype, weak_type, sharding)


def _convert_transpose(ct, x, *, new_dtype, weak_type, sharding):
  if ad.is_float0(ad.tangent_aval(x.aval)):
    return [ad.Zero(ad.tangent_aval(x.aval))]
  return [_convert_bind(ct, x.aval.dtype, x.aval.weak_type, sharding)]


convert_element_type_p.def_jvp(_convert_jvp)
convert_element_type_p.def_transpose(_convert_transpose)

bitcast_convert_type_p = core.Primitive("bitcast_convert_type")


def _bitcast_abstract_eval(x, *, new_dtype):
  old_dt, new_dt = x.dtype, np.dtype(new_dtype)
  old_bits, new_bits = 8 * old_dt.itemsize, 8 * new_dt.itemsize
  shape = x.shape
  if old_bits > new_bits:   # each element becomes a trailing axis of narrower elements
    shape = shape + (old_bits // new_bits,)
  elif old_bits < new_bits:  # the trailing axis is consumed, so it must hold exactly one element
    last = shape[-1] if shape else 1
    if last * old_bits != new_bits:
      raise ValueError(f"Attempting to convert array of shape {x.shape} from {old_dt} of size "
                       f"{old_bits} bits to {new_dt} of size {new_bits}, bits but {last} * "
                       f"{old_bits} != {new_bits}: the last axis must have size "
                       f"{new_bits // old_bits} (reshape the operand first).")
    shape = shape[:-1]
  if old_dt != new_dt and any(d == np.bool_ or d.kind == "c" for d in (old_dt, new_dt)):
    raise TypeError(f"lax.bitcast_convert_type does not support bool or complex values unless "
                    f"the operand and destination types match. Got operand dtype={old_dt}, "
                    f"new_dtype={new_dt!r}. Consider using the arr.view() method instead.")
  return ShapedArray(shape, new_dt, False)


bitcast_convert_type_p.def_abstract_eval(_bitcast_abstract_eval)
bitcast_convert_type_p.def_lowering(lambda ctx, x, *, new_dtype: [
    hlo.bitcast_convert(mlir.aval_to_ir_type(ctx.avals_out[0]), x)])


def _bitcast_batch(args, dims, *, new_dtype):
  (x,), (d,) = args, dims
  aval = core.get_aval(x)
  if aval.dtype.itemsize < np.dtype(new_dtype).itemsize and d == aval.ndim - 1:
    x, d = batching.moveaxis(x, d, 0), 0   # the last axis is consumed: keep the batch axis
  return bitcast_convert_type_p.bind(x, new_dtype=new_dtype), d


bitcast_convert_type_p.def_batch(_bitcast_batch)


ad.defjvp_zero(bitcast_convert_type_p)

reduce_precision_p = core.Primitive("reduce_precision")
reduce_precision_p.def_abstract_eval(lambda x, *, exponent_bits, mantissa_bits: (
    utils.check_dtype("reduce_precision", x, FLOAT) or x))
reduce_precision_p.def_lowering(lambda ctx, x, *, exponent_bits, mantissa_bits: [
    hlo.reduce_precision(x, mlir.i32_attr(exponent_bits), mlir.i32_attr(mantissa_bits))])
batching.defvectorized(reduce_precision_p)
ad.deflinear(reduce_precision_p, lambda ct, x, **params: [reduce_precision_p.bind(ct, **params)])

del ir


# ---- lax's wrappers (JAX's signatures; Python scalars become weakly typed literals) ------
def _unary(prim):
  def fn(x):
    return prim.bind(asarray_operand(x))
  fn.__name__ = prim.name
  fn.__doc__ = f"Elementwise {prim.name}."
  return fn


def _unary_with_accuracy(prim):
  def fn(x, *, accuracy=None):
    if check_accuracy(prim.name, accuracy) is None:
      return prim.bind(asarray_operand(x))
    return prim.bind(asarray_operand(x), accuracy=accuracy)
  fn.__name__ = prim.name
  fn.__doc__ = (f"Elementwise {prim.name}; `accuracy` (a lax.Tolerance or lax.AccuracyMode) "
                "asks XLA for an implementation of that accuracy.")
  return fn


def _binary(prim):
  def fn(x, y):
    return prim.bind(asarray_operand(x), asarray_operand(y))
  fn.__name__ = prim.name
  fn.__doc__ = f"Elementwise {prim.name}."
  return fn


add = _binary(add_p)
sub = _binary(sub_p)


def mul(x, y, *, out_dtype=None):
  """Elementwise product; `out_dtype` computes it in that type (the operands may then differ
  in type)."""
  if out_dtype is None:
    return mul_p.bind(asarray_operand(x), asarray_operand(y))
  return mul_p.bind(asarray_operand(x), asarray_operand(y), out_dtype=out_dtype)


div = _binary(div_p)
rem = _binary(rem_p)
max = _binary(max_p)  # noqa: A001
min = _binary(min_p)  # noqa: A001
pow = _binary(pow_p)  # noqa: A001
atan2 = _binary(atan2_p)


def nextafter(x1, x2):
  """The next representable value after `x1` in the direction of `x2` (elementwise)."""
  return nextafter_p.bind(asarray_operand(x1), asarray_operand(x2))


complex = _binary(complex_p)  # noqa: A001
eq = _binary(eq_p)
ne = _binary(ne_p)
lt = _binary(lt_p)
le = _binary(le_p)
gt = _binary(gt_p)
ge = _binary(ge_p)
bitwise_and = _binary(and_p)
bitwise_or = _binary(or_p)
bitwise_xor = _binary(xor_p)
shift_left = _binary(shift_left_p)
shift_right_arithmetic = _binary(shift_right_arithmetic_p)
shift_right_logical = _binary(shift_right_logical_p)

neg = _unary(neg_p)
sign = _unary(sign_p)
floor = _unary(floor_p)
ceil = _unary(ceil_p)
is_finite = _unary(is_finite_p)
abs = _unary(abs_p)  # noqa: A001
bitwise_not = _unary(not_p)
population_count = _unary(population_count_p)
clz = _unary(clz_p)
exp = _unary_with_accuracy(exp_p)
exp2 = _unary_with_accuracy(exp2_p)
log = _unary_with_accuracy(log_p)
log1p = _unary_with_accuracy(log1p_p)
expm1 = _unary_with_accuracy(expm1_p)
sqrt = _unary_with_accuracy(sqrt_p)
rsqrt = _unary_with_accuracy(rsqrt_p)
cbrt = _unary_with_accuracy(cbrt_p)
tanh = _unary_with_accuracy(tanh_p)
logistic = _unary_with_accuracy(logistic_p)
sin = _unary_with_accuracy(sin_p)
cos = _unary_with_accuracy(cos_p)
tan = _unary_with_accuracy(tan_p)
asin = _unary(asin_p)
acos = _unary(acos_p)
atan = _unary(atan_p)
sinh = _unary(sinh_p)
cosh = _unary(cosh_p)
asinh = _unary(asinh_p)
acosh = _unary(acosh_p)
atanh = _unary(atanh_p)
erf = _unary(erf_p)
erfc = _unary(erfc_p)
erf_inv = _unary(erf_inv_p)
lgamma = _unary(lgamma_p)
digamma = _unary(digamma_p)

def polygamma(m, x):
  """The `m`-th derivative of the digamma function at `x` (elementwise)."""
  return polygamma_p.bind(asarray_operand(m), asarray_operand(x))


real = _unary(real_p)
imag = _unary(imag_p)


def conj(x):
  """Elementwise complex conjugate (real inputs become complex, as in JAX)."""
  x = asarray_operand(x)
  return conj_p.bind(x, input_dtype=core.get_aval(x).dtype)


def round(x, rounding_method=RoundingMethod.AWAY_FROM_ZERO):  # noqa: A001
  """Round to the nearest integer; ties away from zero unless `rounding_method` says otherwise."""
  return round_p.bind(asarray_operand(x), rounding_method=RoundingMethod(rounding_method))


def integer_pow(x, y: int):
  """x ** y for a static Python integer y, computed by repeated multiplication."""
  return integer_pow_p.bind(asarray_operand(x), y=operator.index(y))


def square(x):
  """x * x elementwise."""
  return square_p.bind(asarray_operand(x))


def reciprocal(x):
  return integer_pow(x, -1)


def _is_key_array(x):
  return isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType) and hasattr(x, "_wrap")


def select_n(which, *cases):
  """cases[which] elementwise; `which` is bool (2 cases) or int32. The cases may be typed PRNG
  key arrays (all of one key dtype), selected key by key."""
  if cases and any(_is_key_array(c) for c in cases):
    return _select_n_keys(asarray_operand(which), cases)
  return select_n_p.bind(asarray_operand(which), *map(asarray_operand, cases))


def _select_n_keys(which, cases):
  if not all(_is_key_array(c) and c.dtype == cases[0].dtype for c in cases):
    raise TypeError("select_n cases must have the same types, got "
                    f"[{', '.join(str(getattr(c, 'dtype', type(c).__name__)) for c in cases)}].")
  datas = [c._base_array for c in cases]
  if which.ndim:   # (the key data has one more, trailing axis)
    which = broadcasting.broadcast_in_dim(which, core.get_aval(datas[0]).shape,
                                          tuple(range(which.ndim)))
  return cases[0]._wrap(select_n_p.bind(which, *datas))


def select(pred, on_true, on_false):
  """on_true where pred, else on_false."""
  return select_n(pred, on_false, on_true)


def clamp(min, x, max):  # noqa: A002
  """min(max(x, min), max) elementwise."""
  x = asarray_operand(x)
  dt, weak = dtypes.dtype_and_weak_type(x)
  lo, hi = (scalar_literal(v, dt, weak) if type(v) in dtypes.python_scalar_dtypes else v
            for v in (min, max))
  return clamp_p.bind(lo, x, hi)


def convert_element_type(operand, new_dtype):
  """Cast `operand` to `new_dtype` (canonicalized under jax_enable_x64)."""
  if new_dtype is None:
    raise ValueError("dtype must be specified.")
  out = _convert_element_type(operand, new_dtype, weak_type=False)
  if core.trace_ctx.trace is core.eval_trace and not isinstance(out, Array):
    # A host scalar (or the Literal made of it) becomes an Array, as JAX returns.
    aval = core.get_aval(out)
    return device_put_value(out.val if type(out) is Literal else out, None, dtype=aval.dtype,
                            weak_type=False)
  return out


def _holds_concrete(x):
  """A JVP tracer of a concrete value (JAX converts those even to their own type, so that an
  eager jvp returns Arrays); staged tracers and Arrays are returned as they are."""
  if not isinstance(x, ad.JVPTracer):
    return False
  while isinstance(x, ad.JVPTracer):
    x = x.primal
  return not isinstance(x, Tracer)


def _not_an_array_dtype(dtype):
  """Reject an array given as a dtype (its values would be ignored), as JAX does."""
  if isinstance(dtype, (Array, Tracer)):
    raise ValueError("Passing an array as a dtype argument is no longer supported; instead of "
                     "dtype=arr use dtype=arr.dtype.")


def _convert_element_type(operand, new_dtype=None, weak_type=False):
  _not_an_array_dtype(new_dtype)
  operand = asarray_operand(operand)
  aval = core.get_aval(operand)
  new_dtype = aval.dtype if new_dtype is None else dtypes.canonicalize_dtype(new_dtype)
  if aval.dtype == new_dtype and aval.weak_type == weak_type and not _holds_concrete(operand):
    return operand
  if not isinstance(operand, core.Tracer) and aval.shape == () and not hasattr(operand, "_buf"):
    value = operand.val if isinstance(operand, Literal) else operand
    return scalar_literal(_host_cast(value, new_dtype), new_dtype, weak_type)
  return convert_element_type_p.bind(operand, new_dtype=new_dtype, weak_type=bool(weak_type),
                                        sharding=None)


def bitcast_convert_type(operand, new_dtype):
  """Reinterpret the bits of `operand` as `new_dtype`."""
  if new_dtype is None:
    raise ValueError("dtype must be specified.")
  _not_an_array_dtype(new_dtype)
  return bitcast_convert_type_p.bind(asarray_operand(operand),
                                        new_dtype=dtypes.canonicalize_dtype(new_dtype))


def reduce_precision(operand, exponent_bits: int, mantissa_bits: int):
  """Round `operand` to a float format with the given exponent and mantissa widths."""
  return reduce_precision_p.bind(asarray_operand(operand),
                                    exponent_bits=operator.index(exponent_bits),
                                    mantissa_bits=operator.index(mantissa_bits))


array.register_host_bitcast(bitcast_convert_type)


def stop_gradient(x):
  """The identity, whose derivative is zero: gradients do not flow through `x` (a pytree)."""
  def stop(v):
    v = asarray_operand(v)
    if dtypes.issubdtype(core.get_aval(v).dtype, np.inexact):
      return ad.stop_gradient_p.bind(v)
    return v
  return tree_util.tree_map(stop, x)
