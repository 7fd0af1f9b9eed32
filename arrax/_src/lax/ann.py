"""Approximate top-k: `approx_max_k` and `approx_min_k` over one axis of a float array.

Both bind `approx_top_k`, lowered (as JAX does off TPU) to XLA's `ApproxTopK` custom call in
its fallback form, which XLA's CPU compiler turns into an exact sort-based top-k. With
`aggregate_to_topk=False` the axis is cut to the size XLA's approximation would keep
(computed by jaxlib), not to k.

The derivative takes the tangent at the chosen indices (JAX's `take_along_axis`, reproduced
here with the same equations, so differentiated jaxprs print alike); indices get float0
tangents.
"""
from __future__ import annotations

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func as func_d
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, core, dtypes, mlir
from arrax._src.core import ShapedArray
from arrax._src.jit import jit
from arrax._src.lax import broadcasting, slicing
from arrax._src.lax import elementwise as lax

__all__ = ["approx_max_k", "approx_min_k"]

approx_top_k_p = core.Primitive("approx_top_k")
approx_top_k_p.multiple_results = True


@approx_top_k_p.def_abstract_eval
def _approx_top_k_abstract_eval(operand, *, k, reduction_dimension, recall_target, is_max_k,
                                reduction_input_size_override, aggregate_to_topk):
  if k <= 0:
    raise ValueError(f"k must be positive, got {k}")
  if operand.ndim == 0:
    raise TypeError(f"approx_top_k operand must have >= 1 dimension, got {operand.shape}")
  dims = list(operand.shape)
  if dims[reduction_dimension] < k:
    raise ValueError(f"k must be smaller than the size of reduction_dim "
                     f"{dims[reduction_dimension]}, got {k}")
  if not dtypes.issubdtype(operand.dtype, np.floating):
    raise ValueError("operand must be a floating type")
  size = dims[reduction_dimension]
  if aggregate_to_topk:
    dims[reduction_dimension] = k
  else:
    dims[reduction_dimension] = _jax.approx_top_k_reduction_output_size(
        size, len(dims), k, recall_target, aggregate_to_topk, reduction_input_size_override)[0]
  return [ShapedArray(tuple(dims), operand.dtype, operand.weak_type),
          ShapedArray(tuple(dims), np.dtype(np.int32))]


def _comparator(ctx, elt_type, is_max_k):
  """func(x0, x1, i0, i1) -> x0 > x1 (x0 < x1 for min-k), the order ApproxTopK sorts by."""
  scalar = ir.RankedTensorType.get([], elt_type)
  index = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))
  fn_type = ir.FunctionType.get([scalar, scalar, index, index],
                                [ir.RankedTensorType.get([], ir.IntegerType.get_signless(1))])
  mctx = ctx.module_context
  with ir.InsertionPoint.at_block_begin(mctx.module.body):
    fn = func_d.FuncOp(f"top_k_{'gt' if is_max_k else 'lt'}_{elt_type}_comparator", fn_type)
  mctx.symbol_table.insert(fn)   # (renamed if a comparator of that name exists)
  fn.attributes["sym_visibility"] = ir.StringAttr.get("private")
  block = fn.add_entry_block()
  with ir.InsertionPoint(block):
    x0, x1, _, _ = block.arguments
    hlo.return_([hlo.compare(x0, x1, hlo.ComparisonDirectionAttr.get(
        "GT" if is_max_k else "LT"))])
  return fn


@approx_top_k_p.def_lowering
def _approx_top_k_lower(ctx, operand, *, k, reduction_dimension, recall_target, is_max_k,
                        reduction_input_size_override, aggregate_to_topk):
  aval = ctx.avals_in[0]
  axis = reduction_dimension % aval.ndim
  comparator = _comparator(ctx, mlir.dtype_to_ir_type(aval.dtype), is_max_k)
  iota = hlo.iota(mlir.aval_to_ir_type(ShapedArray(aval.shape, np.int32)), mlir.i64_attr(axis))
  init_value = mlir.ir_constant(np.array(-np.inf if is_max_k else np.inf, aval.dtype))
  init_index = mlir.ir_constant(np.int32(-1))
  config = {
      "reduction_dim": mlir.i64_attr(axis),
      "recall_target": ir.FloatAttr.get(ir.F32Type.get(), recall_target),
      "aggregate_to_topk": ir.BoolAttr.get(aggregate_to_topk),
      "reduction_input_size_override": mlir.i64_attr(reduction_input_size_override),
      "is_fallback": ir.BoolAttr.get(True),
      "top_k": mlir.i64_attr(k),
  }
  op = hlo.CustomCallOp.build_generic(
      results=[mlir.aval_to_ir_type(a) for a in ctx.avals_out],
      operands=[operand, iota, init_value, init_index],
      attributes={
          "call_target_name": ir.StringAttr.get("ApproxTopK"),
          "has_side_effect": ir.BoolAttr.get(False),
          "backend_config": ir.StringAttr.get(""),
          "api_version": mlir.i32_attr(1),
          "called_computations": ir.ArrayAttr.get(
              [ir.FlatSymbolRefAttr.get(comparator.name.value)]),
      })
  op.operation.attributes["mhlo.backend_config"] = ir.DictAttr.get(config)
  return list(op.results)


@approx_top_k_p.def_batch
def _approx_top_k_batch(args, dims, *, reduction_dimension, **params):
  (operand,), (bd,) = args, dims
  # The operand's own axes, in the batched array's numbering.
  own_axes = [d for d in range(core.get_aval(operand).ndim) if d != bd]
  outs = approx_top_k_p.bind(operand, reduction_dimension=own_axes[reduction_dimension],
                             **params)
  return outs, [bd, bd]


def _take_along_axis(arr, indices, axis):
  """arr[..., indices, ...] along `axis`, for indices shaped like `arr` except along `axis`
  (JAX's take_along_axis on such operands: negative indices wrap, out-of-range ones give NaN)."""
  size = core.get_aval(arr).shape[axis]
  idx_shape = core.get_aval(indices).shape
  wrapped = lax.select(lax.lt(indices, np.int32(0)), lax.add(indices, np.int32(size)), indices)
  wrapped = broadcasting.reshape(wrapped, (*idx_shape, 1))
  others = tuple(d for d in range(len(idx_shape)) if d != axis)
  dnums = slicing.GatherDimensionNumbers(
      offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
      operand_batching_dims=others, start_indices_batching_dims=others)
  return slicing.gather(arr, wrapped, dnums, (1,) * len(idx_shape),
                        mode=slicing.GatherScatterMode.FILL_OR_DROP, fill_value=np.nan)


_take_along_axis.__name__ = "take_along_axis"
_take_along_axis_jit = jit(_take_along_axis, static_argnames=("axis",))


@approx_top_k_p.def_jvp
def _approx_top_k_jvp(primals, tangents, **params):
  (operand,), (tangent,) = primals, tangents
  values, indices = approx_top_k_p.bind(operand, **params)
  index_tangent = ad.Zero(ad.tangent_aval(core.get_aval(indices)))
  if type(tangent) is ad.Zero:
    return [values, indices], [ad.Zero(ad.tangent_aval(core.get_aval(values))), index_tangent]
  axis = params["reduction_dimension"] % core.get_aval(indices).ndim
  return [values, indices], [_take_along_axis_jit(tangent, indices, axis=axis), index_tangent]


def _bind(operand, k, reduction_dimension, recall_target, is_max_k,
          reduction_input_size_override, aggregate_to_topk):
  # (a list, as JAX returns it)
  return approx_top_k_p.bind(
      operand, k=k, reduction_dimension=reduction_dimension, recall_target=recall_target,
      is_max_k=is_max_k, reduction_input_size_override=reduction_input_size_override,
      aggregate_to_topk=aggregate_to_topk)


def approx_max_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """(values, int32 indices) of the k largest entries of `operand` along
  `reduction_dimension`, found approximately on TPU (exactly elsewhere), largest first."""
  return _bind(operand, k, reduction_dimension, recall_target, True,
               reduction_input_size_override, aggregate_to_topk)


def approx_min_k(operand, k, reduction_dimension=-1, recall_target=0.95,
                 reduction_input_size_override=-1, aggregate_to_topk=True):
  """(values, int32 indices) of the k smallest entries of `operand` along
  `reduction_dimension`, found approximately on TPU (exactly elsewhere), smallest first."""
  return _bind(operand, k, reduction_dimension, recall_target, False,
               reduction_input_size_override, aggregate_to_topk)
