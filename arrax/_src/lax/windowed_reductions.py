"""Reductions over sliding windows: lax.reduce_window and the primitives behind it.

`reduce_window` with a monoid (add with 0, max with its identity, min with its identity)
becomes `reduce_window_sum` / `reduce_window_max` / `reduce_window_min`; any other reducer
(over pytrees of operands) is traced to a jaxpr held by the generic `reduce_window` primitive.
All of them lower to one stablehlo.reduce_window.

Differentiation follows JAX: the window sum is linear (its transpose pads the cotangent and
sums windows again); the JVP of a window max/min is `select_and_gather_add`, which picks the
tangent at each window's extremum, and its transpose `select_and_scatter_add` sends each
cotangent back to that position (max pooling's gradient). The generic primitive is
differentiated by reducing (primal, tangent) pairs with the JVP of the reducer.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, core, dtypes, mlir, tracing, tree_util
from arrax._src.core import ShapedArray
from arrax._src.lax import broadcasting, shape_ops, utils
from arrax._src.lax.reductions import _max_identity, _min_identity
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax.convolution import (_dilate_shape, _stride_dim,
                                        conv_general_vjp_lhs_padding, padtype_to_pads)
from arrax._src.lax.utils import asarray_operand

__all__ = [
    "reduce_window", "reduce_window_max_p", "reduce_window_min_p", "reduce_window_p",
    "reduce_window_shape_tuple", "reduce_window_sum_p", "select_and_gather_add_p",
    "select_and_scatter_add_p", "select_and_scatter_p",
]


# ---- identities and scalar bodies -------------------------------------------------------------
def _part_dtype(dtype):
  return np.dtype(np.float32 if np.dtype(dtype) == dtypes.complex64 else np.float64)


def _max_body(dtype):
  if np.dtype(dtype).kind == "c":   # lexicographic order, as lax.max
    return lambda x, y: lax_ew.lexicographic_select(x, y, "GT", _part_dtype(dtype))
  return hlo.maximum


def _min_body(dtype):
  if np.dtype(dtype).kind == "c":
    return lambda x, y: lax_ew.lexicographic_select(x, y, "LT", _part_dtype(dtype))
  return hlo.minimum


def _scalar_type(dtype):
  return ir.RankedTensorType.get([], mlir.dtype_to_ir_type(dtype))


def _padding_attr(padding):
  return ir.DenseIntElementsAttr.get(np.asarray(padding, np.int64).reshape(len(padding), 2))


def _emit_reduce_window(operands, inits, out_avals, scalar_dtypes, body, *, window_dimensions,
                        window_strides, padding, base_dilation, window_dilation):
  """A stablehlo.reduce_window; `body(accs, xs)` builds the reducer on block arguments."""
  op = hlo.ReduceWindowOp(
      [mlir.aval_to_ir_type(a) for a in out_avals], list(operands), list(inits),
      mlir.dense_i64(window_dimensions), window_strides=mlir.dense_i64(window_strides),
      base_dilations=mlir.dense_i64(base_dilation),
      window_dilations=mlir.dense_i64(window_dilation), padding=_padding_attr(padding))
  types = [_scalar_type(d) for d in scalar_dtypes]
  block = op.regions[0].blocks.append(*(types + types))
  n = len(types)
  with ir.InsertionPoint(block):
    args = list(block.arguments)
    hlo.return_(list(body(args[:n], args[n:])))
  return list(op.results)


# ---- shapes -----------------------------------------------------------------------------------
def _check_shapelike(fun, arg, obj, non_zero_shape=False):
  if not isinstance(obj, (tuple, list, np.ndarray)):
    raise TypeError(f"{fun} {arg} must be of type tuple/list/ndarray, got {type(obj)}.")
  if not len(obj):
    return
  if np.ndim(obj) != 1:
    raise TypeError(f"{fun} {arg} must be 1-dimensional, got {np.ndim(obj)}.")
  try:
    [int(np.asarray(d).__index__()) for d in obj]
  except (TypeError, AttributeError):
    raise TypeError(f"{fun} {arg} must have every element be an integer type, got "
                    f"{tuple(map(type, obj))}.") from None
  lower, what = (1, "strictly positive") if non_zero_shape else (0, "nonnegative")
  if not all(d >= lower for d in obj):
    raise TypeError(f"{fun} {arg} must have every element be {what}, got {obj}.")


def reduce_window_shape_tuple(operand_shape, window_dimensions, window_strides, padding,
                              base_dilation=None, window_dilation=None):
  """The result shape of a windowed reduction."""
  if base_dilation is not None:
    operand_shape = _dilate_shape(operand_shape, base_dilation)
  if window_dilation is not None:
    window_dimensions = _dilate_shape(window_dimensions, window_dilation)
  padded = tuple(d + lo + hi for d, (lo, hi) in zip(operand_shape, padding))
  return tuple(map(_stride_dim, padded, window_dimensions, window_strides))


def _common_shape(operand, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation):
  _check_shapelike("reduce_window", "window_dimensions", window_dimensions, True)
  _check_shapelike("reduce_window", "window_strides", window_strides, True)
  _check_shapelike("reduce_window", "base_dilation", base_dilation)
  _check_shapelike("reduce_window", "window_dilation", window_dilation)
  if operand.ndim != len(window_dimensions):
    raise TypeError("reduce_window got the wrong number of window_dimensions for operand: got "
                    f"operand shape {operand.shape} with window_dimensions "
                    f"{window_dimensions}.")
  for name, value in (("window_strides", window_strides), ("base_dilation", base_dilation),
                      ("window_dilation", window_dilation)):
    if len(value) != len(window_dimensions):
      raise TypeError(f"reduce_window got inconsistent {name} and window_dimensions: got "
                      f"{name} {value} and window_dimensions {window_dimensions}.")
  shape = reduce_window_shape_tuple(operand.shape, window_dimensions, window_strides, padding,
                                    base_dilation, window_dilation)
  return tuple(int(d) for d in shape)


_WINDOW_PARAMS = ("window_dimensions", "window_strides", "padding", "base_dilation",
                  "window_dilation")


# ---- reduce_window_sum / max / min -------------------------------------------------------------
def _monoid_prim(name, body_for, identity, check_number):
  prim = core.Primitive(name)

  @prim.def_abstract_eval
  def abstract_eval(operand, **window):
    if check_number and (operand.dtype == np.bool_
                         or not dtypes.issubdtype(operand.dtype, np.number)):
      raise TypeError(f"operand to reduce_window_sum must have a number dtype, got "
                      f"{operand.dtype.name}")
    return ShapedArray(_common_shape(operand, **window), operand.dtype, operand.weak_type)

  @prim.def_lowering
  def lowering(ctx, x, **window):
    dtype = ctx.avals_in[0].dtype
    body = body_for(dtype)
    init = mlir.ir_constant(np.asarray(identity(dtype), dtype))
    return _emit_reduce_window([x], [init], ctx.avals_out, [dtype],
                               lambda accs, xs: [body(accs[0], xs[0])], **window)

  @prim.def_batch
  def batch(args, dims, *, window_dimensions, window_strides, padding, base_dilation,
            window_dilation):
    (x,), (bd,) = args, dims

    def ins(t, v):
      return tuple(t[:bd]) + (v,) + tuple(t[bd:])
    out = prim.bind(x, window_dimensions=ins(window_dimensions, 1),
                    window_strides=ins(window_strides, 1), padding=ins(padding, (0, 0)),
                    base_dilation=ins(base_dilation, 1), window_dilation=ins(window_dilation, 1))
    return out, bd

  return prim


reduce_window_sum_p = _monoid_prim("reduce_window_sum", lambda dt: hlo.add,
                                   lambda dt: np.zeros((), dt), True)
reduce_window_max_p = _monoid_prim("reduce_window_max", _max_body, _max_identity, False)
reduce_window_min_p = _monoid_prim("reduce_window_min", _min_body, _min_identity, False)


def _window_bind(prim, operand, window_dimensions, window_strides, padding, base_dilation=None,
                 window_dilation=None):
  if base_dilation is None:
    base_dilation = (1,) * len(window_dimensions)
  if window_dilation is None:
    window_dilation = (1,) * len(window_dimensions)
  return prim.bind(asarray_operand(operand), window_dimensions=tuple(window_dimensions),
                   window_strides=tuple(window_strides), padding=tuple(padding),
                   base_dilation=tuple(base_dilation), window_dilation=tuple(window_dilation))


def _reduce_window_sum(operand, window_dimensions, window_strides, padding, base_dilation=None,
                       window_dilation=None):
  return _window_bind(reduce_window_sum_p, operand, window_dimensions, window_strides, padding,
                      base_dilation, window_dilation)


def _reduce_window_max(operand, window_dimensions, window_strides, padding, base_dilation=None,
                       window_dilation=None):
  return _window_bind(reduce_window_max_p, operand, window_dimensions, window_strides, padding,
                      base_dilation, window_dilation)


def _reduce_window_min(operand, window_dimensions, window_strides, padding, base_dilation=None,
                       window_dilation=None):
  return _window_bind(reduce_window_min_p, operand, window_dimensions, window_strides, padding,
                      base_dilation, window_dilation)


def _reduce_window_sum_transpose(ct, operand, *, window_dimensions, window_strides, padding,
                                 base_dilation, window_dilation):
  assert ad.is_undefined(operand)
  in_shape = operand.aval.shape
  pads = conv_general_vjp_lhs_padding(in_shape, window_dimensions, window_strides,
                                      core.get_aval(ct).shape, padding, base_dilation,
                                      window_dilation)
  config = [(lo, hi, stride - 1) for (lo, hi), stride in zip(pads, window_strides)]
  padded = shape_ops.pad(ct, broadcasting._zero_scalar(ct), config)
  ones = [1] * len(in_shape)
  out = _reduce_window_sum(padded, window_dimensions, base_dilation, [(0, 0)] * len(in_shape),
                           base_dilation=ones, window_dilation=window_dilation)
  assert core.get_aval(out).shape == in_shape, (core.get_aval(out).shape, in_shape)
  return [out]


ad.deflinear2(reduce_window_sum_p, _reduce_window_sum_transpose)


def _chooser_jvp(select_prim):
  def jvp(g, operand, **window):
    return _select_and_gather_add(g, operand, select_prim, **window)
  return jvp


ad.defjvp(reduce_window_max_p, _chooser_jvp(lax_ew.ge_p))
ad.defjvp(reduce_window_min_p, _chooser_jvp(lax_ew.le_p))


# ---- select_and_gather_add: the tangent at each window's extremum ------------------------------
def _select_and_gather_add(tangents, operand, select_prim, window_dimensions, window_strides,
                           padding, base_dilation, window_dilation):
  return select_and_gather_add_p.bind(
      tangents, operand, select_prim=select_prim, window_dimensions=tuple(window_dimensions),
      window_strides=tuple(window_strides), padding=tuple(padding),
      base_dilation=tuple(base_dilation), window_dilation=tuple(window_dilation))


select_and_gather_add_p = core.Primitive("select_and_gather_add")


@select_and_gather_add_p.def_abstract_eval
def _sga_abstract_eval(tangents, operand, *, select_prim, **window):
  if tangents.shape != operand.shape:
    raise TypeError("select_and_gather_add tangents and operand shapes must match, got "
                    f"{tangents.shape} and {operand.shape}.")
  shape = _common_shape(operand, **window)
  return ShapedArray(shape, tangents.dtype, tangents.weak_type and operand.weak_type)


@select_and_gather_add_p.def_lowering
def _sga_lower(ctx, tangents, operand, *, select_prim, **window):
  # A two-operand reduce_window over (operand, tangent) pairs keeping the pair whose operand
  # wins the comparison (the first one on ties), as JAX lowers it on CPU.
  t_aval, x_aval = ctx.avals_in
  out = ctx.avals_out[0]
  direction = "GE" if select_prim is lax_ew.ge_p else "LE"
  init = np.asarray(-np.inf if direction == "GE" else np.inf).astype(x_aval.dtype)
  inits = [mlir.ir_constant(init), mlir.ir_constant(np.zeros((), t_aval.dtype))]

  def body(accs, xs):
    (kx, vx), (ky, vy) = accs, xs
    which = mlir.compare(kx, ky, direction, x_aval.dtype)
    return [hlo.select(which, kx, ky), hlo.select(which, vx, vy)]
  outs = _emit_reduce_window([operand, tangents], inits, [out.update(dtype=x_aval.dtype), out],
                             [x_aval.dtype, t_aval.dtype], body, **window)
  return [outs[1]]


def _linear_in_first_jvp(fn):
  """The JVP of `fn(x, operand, select_prim, **window)`, linear in x (the operand only picks
  positions): the tangent is `fn` of x's tangent."""
  def jvp(primals, tangents, *, select_prim, **window):
    (x, operand), (x_dot, _) = primals, tangents
    out = fn(x, operand, select_prim, **window)
    if type(x_dot) is ad.Zero:
      return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
    return out, fn(x_dot, operand, select_prim, **window)
  return jvp


select_and_gather_add_p.def_jvp(_linear_in_first_jvp(_select_and_gather_add))


@select_and_gather_add_p.def_transpose
def _sga_transpose(ct, tangents, operand, *, select_prim, window_dimensions, window_strides,
                   padding, base_dilation, window_dilation):
  assert ad.is_undefined(tangents) and not ad.is_undefined(operand)
  if any(d != 1 for d in window_dilation):
    raise NotImplementedError("VJP not implemented for select_and_gather (MaxPool) with window "
                              f"dilation, got window_dilation={window_dilation}.")
  if type(ct) is ad.Zero:
    return [ad.Zero(tangents.aval), None]
  dilated = any(d != 1 for d in base_dilation)
  if dilated:
    identity = _max_identity if select_prim is lax_ew.ge_p else _min_identity
    dtype = core.get_aval(operand).dtype
    operand = shape_ops.pad(operand, identity(dtype)[()],
                            tuple((0, 0, d - 1) for d in base_dilation))
  out = _select_and_scatter_add(ct, operand, select_prim, window_dimensions, window_strides,
                                padding)
  if dilated:
    shape = core.get_aval(out).shape
    out = shape_ops.slice(out, (0,) * len(shape), shape, base_dilation)
  return [out, None]


def _front_batched(args, dims):
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  return [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]


@select_and_gather_add_p.def_batch
def _sga_batch(args, dims, *, select_prim, window_dimensions, window_strides, padding,
               base_dilation, window_dilation):
  t, x = _front_batched(args, dims)
  out = _select_and_gather_add(t, x, select_prim, (1,) + window_dimensions,
                               (1,) + window_strides, ((0, 0),) + padding,
                               (1,) + base_dilation, (1,) + window_dilation)
  return out, 0


# ---- select_and_scatter_add: cotangents back to each window's extremum -------------------------
def _select_and_scatter_add(source, operand, select_prim, window_dimensions, window_strides,
                            padding):
  return select_and_scatter_add_p.bind(
      source, operand, select_prim=select_prim, window_dimensions=tuple(window_dimensions),
      window_strides=tuple(window_strides), padding=tuple(padding))


select_and_scatter_add_p = core.Primitive("select_and_scatter_add")


@select_and_scatter_add_p.def_abstract_eval
def _ssa_abstract_eval(source, operand, *, select_prim, window_dimensions, window_strides,
                       padding):
  return ShapedArray(operand.shape, source.dtype, source.weak_type and operand.weak_type)


def _emit_select_and_scatter(out_aval, operand, source, init, scalar_dtype, select_body,
                             scatter_body, window_dimensions, window_strides, padding):
  op = hlo.SelectAndScatterOp(
      mlir.aval_to_ir_type(out_aval), operand, source, init,
      window_dimensions=mlir.dense_i64(window_dimensions),
      window_strides=mlir.dense_i64(window_strides), padding=_padding_attr(padding))
  t = _scalar_type(scalar_dtype)
  for region, body in ((op.select, select_body), (op.scatter, scatter_body)):
    block = region.blocks.append(t, t)
    with ir.InsertionPoint(block):
      hlo.return_(list(body(*block.arguments)))
  return op.result


@select_and_scatter_add_p.def_lowering
def _ssa_lower(ctx, source, operand, *, select_prim, window_dimensions, window_strides,
               padding):
  # As JAX on CPU: pad the operand with the select identity, select and scatter without
  # padding, then cut the padding off again.
  s_aval, x_aval = ctx.avals_in
  ge = select_prim is lax_ew.ge_p
  identity = (_max_identity if ge else _min_identity)(x_aval.dtype)
  lows = [lo for lo, _ in padding]
  highs = [hi for _, hi in padding]
  padded_shape = tuple(d + lo + hi for d, lo, hi in zip(x_aval.shape, lows, highs))
  if any(lows) or any(highs):
    operand = hlo.pad(operand, mlir.ir_constant(identity), mlir.dense_i64(lows),
                      mlir.dense_i64(highs), mlir.dense_i64([0] * len(lows)))
  out_aval = ShapedArray(padded_shape, s_aval.dtype)
  direction = "GE" if ge else "LE"
  scatter = hlo.or_ if s_aval.dtype == np.bool_ else hlo.add
  out = _emit_select_and_scatter(
      out_aval, operand, source, mlir.ir_constant(np.zeros((), s_aval.dtype)), x_aval.dtype,
      lambda a, b: [mlir.compare(a, b, direction, x_aval.dtype)],
      lambda a, b: [scatter(a, b)], window_dimensions, window_strides,
      [(0, 0)] * len(padding))
  if any(lows) or any(highs):
    out = hlo.slice(out, mlir.dense_i64(lows),
                    mlir.dense_i64([lo + d for lo, d in zip(lows, x_aval.shape)]),
                    mlir.dense_i64([1] * len(lows)))
  return [out]


select_and_scatter_add_p.def_jvp(_linear_in_first_jvp(_select_and_scatter_add))


@select_and_scatter_add_p.def_transpose
def _ssa_transpose(ct, source, operand, *, select_prim, window_dimensions, window_strides,
                   padding):
  assert ad.is_undefined(source) and not ad.is_undefined(operand)
  if type(ct) is ad.Zero:
    return [ad.Zero(source.aval), None]
  ones = (1,) * len(window_dimensions)
  return [_select_and_gather_add(ct, operand, select_prim, window_dimensions, window_strides,
                                 padding, ones, ones), None]


@select_and_scatter_add_p.def_batch
def _ssa_batch(args, dims, *, select_prim, window_dimensions, window_strides, padding):
  source, operand = _front_batched(args, dims)
  out = _select_and_scatter_add(source, operand, select_prim, (1,) + window_dimensions,
                                (1,) + window_strides, ((0, 0),) + padding)
  return out, 0


# ---- the generic select_and_scatter (reducer jaxprs) --------------------------------------------
select_and_scatter_p = core.Primitive("select_and_scatter")


@select_and_scatter_p.def_abstract_eval
def _sas_abstract_eval(operand, source, init_value, *, select_jaxpr, select_consts,
                       scatter_jaxpr, scatter_consts, window_dimensions, window_strides,
                       padding):
  _check_shapelike("select_and_scatter", "window_dimensions", window_dimensions)
  _check_shapelike("select_and_scatter", "window_strides", window_strides)
  if len(window_dimensions) != len(window_strides):
    raise TypeError("select_and_scatter got inconsistent window_strides and window_dimensions: "
                    f"got window_strides {window_strides} and window_dimensions "
                    f"{window_dimensions}.")
  return ShapedArray(operand.shape, operand.dtype, utils.weak_of([operand, source, init_value]))


def _jaxpr_body(ctx, jaxpr, consts):
  def body(*args):
    const_irs = [mlir.ir_constant(np.asarray(c)) for c in consts]
    return mlir.jaxpr_subcomp(ctx.module_context, jaxpr, const_irs, list(args))
  return body


@select_and_scatter_p.def_lowering
def _sas_lower(ctx, operand, source, init_value, *, select_jaxpr, select_consts, scatter_jaxpr,
               scatter_consts, window_dimensions, window_strides, padding):
  return [_emit_select_and_scatter(
      ctx.avals_out[0], operand, source, init_value, ctx.avals_in[0].dtype,
      _jaxpr_body(ctx, select_jaxpr, select_consts),
      _jaxpr_body(ctx, scatter_jaxpr, scatter_consts), window_dimensions, window_strides,
      padding)]


@select_and_scatter_p.def_batch
def _sas_batch(args, dims, *, window_dimensions, window_strides, padding, **params):
  # Beyond JAX (which has no batching rule here): a leading window axis of size 1.
  if dims[2] is not None:
    raise NotImplementedError("select_and_scatter batching is not implemented for initial "
                              "values")
  operand, source = _front_batched(args[:2], dims[:2])
  out = select_and_scatter_p.bind(
      operand, source, args[2], window_dimensions=(1,) + tuple(window_dimensions),
      window_strides=(1,) + tuple(window_strides), padding=((0, 0),) + tuple(padding), **params)
  return out, 0


# ---- the generic reduce_window ------------------------------------------------------------------
reduce_window_p = core.Primitive("reduce_window")
reduce_window_p.multiple_results = True


@reduce_window_p.def_abstract_eval
def _rw_abstract_eval(*avals, jaxpr, consts, **window):
  n = len(avals) // 2
  operands, inits = avals[:n], avals[n:]
  if any(o.dtype != i.dtype for o, i in zip(operands, inits)):
    raise TypeError("reduce_window got inconsistent dtypes for operands and init_values: got "
                    f"operand dtypes {[o.dtype for o in operands]} and init_value dtypes "
                    f"{[i.dtype for i in inits]}.")
  if any(i.shape != () for i in inits):
    raise TypeError("reduce_window expected init_values to be scalars but init_values have "
                    f"shapes {[i.shape for i in inits]}.")
  shape = _common_shape(operands[0], **window)
  return [ShapedArray(shape, o.dtype) for o in operands]


@reduce_window_p.def_lowering
def _rw_lower(ctx, *args, jaxpr, consts, **window):
  n = len(args) // 2
  body = _jaxpr_body(ctx, jaxpr, consts)
  return _emit_reduce_window(args[:n], args[n:], ctx.avals_out,
                             [a.dtype for a in ctx.avals_in[n:]],
                             lambda accs, xs: body(*accs, *xs), **window)


@reduce_window_p.def_batch
def _rw_batch(args, dims, *, jaxpr, consts, window_dimensions, window_strides, padding,
              base_dilation, window_dilation):
  n = len(args) // 2
  if any(d is not None for d in dims[n:]):
    raise NotImplementedError("reduce_window batching is not implemented for initial values")
  size = next(core.get_aval(x).shape[d] for x, d in zip(args[:n], dims[:n]) if d is not None)
  operands = [batching.bdim_at_front(x, d, size) for x, d in zip(args[:n], dims[:n])]
  outs = reduce_window_p.bind(
      *operands, *args[n:], jaxpr=jaxpr, consts=consts,
      window_dimensions=(1,) + window_dimensions, window_strides=(1,) + window_strides,
      padding=((0, 0),) + padding, base_dilation=(1,) + base_dilation,
      window_dilation=(1,) + window_dilation)
  return outs, [0] * n


def _jvp_reducer(jaxpr, consts, n):
  """The reducer of (primals..., tangents...) windows: the JVP of the reducer `jaxpr`."""
  def build():
    def reducer(left, right):
      (pl, tl), (pr, tr) = (left[:n], left[n:]), (right[:n], right[n:])
      outs, touts = ad.jvp_flat(lambda *xs: core.eval_jaxpr(jaxpr, consts, *xs),
                                [*pl, *pr], [*tl, *tr])
      return [*outs, *map(ad.instantiate, touts)]
    return reducer
  return core.memo((jaxpr,), ("reduce_window_jvp", n), build)


@reduce_window_p.def_jvp
def _rw_jvp(primals, tangents, *, jaxpr, consts, **window):
  n = len(primals) // 2
  operands, inits = primals[:n], primals[n:]
  op_tangents, init_tangents = tangents[:n], tangents[n:]
  if not all(type(t) is ad.Zero for t in init_tangents):
    raise TypeError("reduce_window jvp does not support non-zero init_value_tangent.")
  init_tangents = [ad.instantiate(t) for t in init_tangents]
  op_tangents = [ad.instantiate(t) for t in op_tangents]
  outs = _reduce_window(list(operands) + op_tangents, list(inits) + init_tangents,
                        _jvp_reducer(jaxpr, consts, n), **window)
  return outs[:n], outs[n:]


# ---- the wrapper ------------------------------------------------------------------------------
def _monoid_window_reducer(computation, inits):
  if len(inits) != 1:
    return None
  val = utils.concrete_scalar(inits[0])
  if val is None:
    return None
  dtype = core.get_aval(inits[0]).dtype
  if computation is lax_ew.add:
    return _reduce_window_sum if val == 0 else None
  if computation is lax_ew.max:
    return _reduce_window_max if val == _max_identity(dtype) else None
  if computation is lax_ew.min:
    return _reduce_window_min if val == _min_identity(dtype) else None
  return None


def _reducer_jaxpr(computation, init_avals, tree):
  """(jaxpr, consts, out_tree) of `computation(xs, ys)` over pytrees of scalars."""
  def build():
    box = []

    def flat(*args):
      n = len(init_avals)
      xs = tree_util.tree_unflatten(tree, args[:n])
      ys = tree_util.tree_unflatten(tree, args[n:])
      outs, out_tree = tree_util.tree_flatten(computation(xs, ys))
      box.append(out_tree)
      return [asarray_operand(o) for o in outs]

    jaxpr, consts = tracing.trace_to_jaxpr(flat, list(init_avals) * 2)
    if any(isinstance(c, core.Tracer) for c in consts):
      raise NotImplementedError("Reduction computations can't close over Tracers. Please open "
                                "an issue at https://github.com/jax-ml/jax.")
    return jaxpr, tuple(consts), box[0]
  return core.memo((computation,), ("reduce_window", tuple(init_avals), tree), build)


def _reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                   padding="VALID", base_dilation=None, window_dilation=None):
  flat_ops, op_tree = tree_util.tree_flatten(operand)
  flat_inits, init_tree = tree_util.tree_flatten(init_value)
  if op_tree != init_tree:
    raise ValueError("Operands must have the same tree structure as init_values: "
                     f"{op_tree} vs. {init_tree}")
  if len(flat_ops) != len(flat_inits):
    raise ValueError("Must have same total number of operands as init_values:  "
                     f"{len(flat_ops)} vs. {len(flat_inits)}")
  if not flat_ops:
    raise ValueError("reduce_window must have at least one operand.")
  if isinstance(padding, str):
    window = (window_dimensions if window_dilation is None
              else _dilate_shape(window_dimensions, window_dilation))
    padding = tuple(padtype_to_pads(flat_ops[0].shape, window, window_strides or [], padding))
  else:
    padding = tuple((lo, hi) for lo, hi in padding)
  if window_strides is None:
    window_strides = (1,) * len(window_dimensions)
  if base_dilation is None:
    base_dilation = (1,) * len(window_dimensions)
  if window_dilation is None:
    window_dilation = (1,) * len(window_dimensions)
  monoid = _monoid_window_reducer(computation, flat_inits)
  if monoid is not None:
    return monoid(operand, window_dimensions, window_strides, padding, base_dilation,
                  window_dilation)
  flat_inits = [asarray_operand(x) for x in flat_inits]
  init_avals = tuple(core.get_aval(x) for x in flat_inits)
  jaxpr, consts, out_tree = _reducer_jaxpr(computation, init_avals, init_tree)
  if op_tree != out_tree:
    raise ValueError("reduce_window output must have the same tree structure as the operands "
                     f"{op_tree} vs. {out_tree}")
  outs = reduce_window_p.bind(
      *[asarray_operand(x) for x in flat_ops], *flat_inits, jaxpr=jaxpr, consts=consts,
      window_dimensions=tuple(window_dimensions), window_strides=tuple(window_strides),
      padding=padding, base_dilation=tuple(base_dilation),
      window_dilation=tuple(window_dilation))
  return tree_util.tree_unflatten(out_tree, outs)


def reduce_window(operand, init_value, computation, window_dimensions, window_strides=None,
                  padding="VALID", base_dilation=None, window_dilation=None):
  """Reduce each (padded, dilated) window of `operand` with `computation`.

  `operand` and `init_value` are arrays or matching pytrees of arrays and scalars;
  `computation(xs, ys)` combines two such trees. `padding` is 'VALID', 'SAME', 'SAME_LOWER'
  or (low, high) pairs per axis. lax.add with 0 and lax.max / lax.min with their identities
  become the dedicated window sum / max / min primitives.
  """
  return _reduce_window(operand, init_value, computation, window_dimensions, window_strides,
                        padding, base_dilation, window_dilation)
