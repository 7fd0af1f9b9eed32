"""Sorting: the variadic `sort` primitive and `top_k`.

The sort comparator orders keys lexicographically. Floating-point keys are first made canonical
(-0.0 becomes 0.0 and every NaN the same positive NaN) and then compared with the IEEE total
order, so -0.0 and 0.0 tie and NaNs go last. Complex keys compare as (real, imag) pairs.

Differentiation: the sorted tangents are the tangents gathered with the sorting permutation
(found by sorting an iota along with the operands); top_k gathers the tangents at its indices.
Index outputs have zero (float0) tangents.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import chlo, stablehlo as hlo

from arrax._src import ad, batching, core, dtypes, mlir
from arrax._src.core import ShapedArray
from arrax._src.lax import shape_ops, slicing, utils
from arrax._src.lax.utils import asarray_operand

__all__ = ["sort", "sort_key_val", "top_k"]


_compare = mlir.compare


def _scalar_const(value, dtype):
  return mlir.ir_constant(np.asarray(value).astype(dtype))


def _canonical_float(x, dtype):
  """x with -0.0 replaced by 0.0 and any NaN by the canonical NaN."""
  zero = _scalar_const(0, dtype)
  x_or_zero = hlo.select(_compare(x, zero, "EQ", dtype), zero, x)
  return hlo.select(_compare(x, x, "NE", dtype), _scalar_const(np.nan, dtype), x_or_zero)


def _sort_keys(x, dtype):
  """The (value, dtype) keys by which a scalar compares, most significant first."""
  dtype = np.dtype(dtype)
  if dtype.kind == "c":
    part = np.dtype(np.float32 if dtype == dtypes.complex64 else np.float64)
    return [(_canonical_float(hlo.real(x), part), part),
            (_canonical_float(hlo.imag(x), part), part)]
  if dtypes.is_float(dtype):
    return [(_canonical_float(x, dtype), dtype)]
  return [(x, dtype)]


def _less_than(xs, ys, key_dtypes):
  """Lexicographic x < y over the key lists."""
  x_keys, y_keys = [], []
  for x, y, dt in zip(xs, ys, key_dtypes):
    x_keys += _sort_keys(x, dt)
    y_keys += _sort_keys(y, dt)
  result = None
  for (xk, dt), (yk, _) in zip(reversed(x_keys), reversed(y_keys)):
    lt = _compare(xk, yk, "LT", dt, total_order=True)
    if result is None:
      result = lt
    else:
      tie = _compare(xk, yk, "EQ", dt, total_order=True)
      result = hlo.or_(lt, hlo.and_(tie, result))
  return result


# ---- sort -------------------------------------------------------------------------------------
sort_p = core.Primitive("sort")
sort_p.multiple_results = True


@sort_p.def_abstract_eval
def _sort_abstract_eval(*avals, dimension, is_stable, num_keys):
  if any(a.shape != avals[0].shape for a in avals[1:]):
    raise TypeError("Arguments to sort must have equal shapes, got: "
                    + " ".join(str(a.shape) for a in avals))
  if not 0 <= dimension < len(avals[0].shape):
    raise ValueError(f"sort dimension {dimension} is out of bounds for operands of shape "
                     f"{avals[0].shape}")
  if not 1 <= num_keys <= len(avals):
    raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(avals)}")
  return list(avals)


@sort_p.def_lowering
def _sort_lower(ctx, *operands, dimension, is_stable, num_keys):
  op = hlo.SortOp([mlir.aval_to_ir_type(a) for a in ctx.avals_out], list(operands),
                  dimension=mlir.i64_attr(dimension), is_stable=ir.BoolAttr.get(bool(is_stable)))
  key_dtypes = [a.dtype for a in ctx.avals_in[:num_keys]]
  scalar_types = []
  for a in ctx.avals_in:
    t = ir.RankedTensorType.get([], mlir.dtype_to_ir_type(a.dtype))
    scalar_types += [t, t]
  block = op.comparator.blocks.append(*scalar_types)
  with ir.InsertionPoint(block):
    args = list(block.arguments)
    hlo.return_([_less_than(args[0:2 * num_keys:2], args[1:2 * num_keys:2], key_dtypes)])
  return list(op.results)


def _sort_batch(args, dims, *, dimension, is_stable, num_keys):
  # Every operand gets the batch axis of the first batched one (unbatched ones are broadcast).
  proto, bd = next((x, d) for x, d in zip(args, dims) if d is not None)
  shape = core.get_aval(proto).shape
  rest = tuple(i for i in range(len(shape)) if i != bd)
  operands = [shape_ops.broadcast_in_dim(x, shape, rest) if d is None
              else batching.moveaxis(x, d, bd) for x, d in zip(args, dims)]
  outs = sort_p.bind(*operands, dimension=dimension + (bd <= dimension), is_stable=is_stable,
                     num_keys=num_keys)
  return outs, [bd] * len(outs)


sort_p.def_batch(_sort_batch)


def _index_dtype_for(shape):
  return np.dtype(np.uint64 if any(d > np.iinfo(np.uint32).max for d in shape) else np.uint32)


def _gather_along(t, idx, axis):
  """t[..., idx[...], ...] along `axis`, pairing every other axis of `t` and `idx`."""
  ndim = core.get_aval(t).ndim
  batch = tuple(i for i in range(ndim) if i != axis)
  dnums = slicing.GatherDimensionNumbers(
      offset_dims=(), collapsed_slice_dims=(axis,), start_index_map=(axis,),
      operand_batching_dims=batch, start_indices_batching_dims=batch)
  return slicing.gather(t, idx, dnums, (1,) * ndim,
                        mode=slicing.GatherScatterMode.PROMISE_IN_BOUNDS)


def _sort_jvp(primals, tangents, *, dimension, is_stable, num_keys):
  shape = core.get_aval(primals[0]).shape
  iota = shape_ops.broadcasted_iota(_index_dtype_for(shape), shape, dimension)
  *outs, perm = sort_p.bind(*primals, iota, dimension=dimension, is_stable=is_stable,
                            num_keys=num_keys)
  idx = shape_ops.expand_dims(perm, (len(shape),))
  return outs, [t if type(t) is ad.Zero else _gather_along(t, idx, dimension)
                for t in tangents]


sort_p.def_jvp(_sort_jvp)


def _ndim(x):
  return core.get_aval(x).ndim


def sort(operand, dimension=-1, is_stable=True, num_keys=1):
  """Sort along `dimension`; a sequence of operands is sorted by its first `num_keys` arrays.

  Floats sort with -0.0 equal to 0.0 and NaNs last; complex numbers sort by (real, imag).
  """
  if isinstance(operand, Sequence):
    if len(operand) == 0:
      raise TypeError("Sort requires at least one operand")
    if not 1 <= num_keys <= len(operand):
      raise ValueError(f"num_keys={num_keys} must be between 1 and len(operand)={len(operand)}")
    operands = [asarray_operand(x) for x in operand]
    dimension = utils.canonicalize_axis(dimension, _ndim(operands[0]))
    return tuple(sort_p.bind(*operands, dimension=dimension, is_stable=is_stable,
                             num_keys=num_keys))
  if num_keys != 1:
    raise ValueError(f"num_keys={num_keys} must equal 1 for a single operand.")
  operand = asarray_operand(operand)
  dimension = utils.canonicalize_axis(dimension, _ndim(operand))
  return sort_p.bind(operand, dimension=dimension, is_stable=is_stable, num_keys=1)[0]


def sort_key_val(keys, values, dimension=-1, is_stable=True):
  """Sort `keys` along `dimension` and permute `values` the same way."""
  keys, values = asarray_operand(keys), asarray_operand(values)
  dimension = utils.canonicalize_axis(dimension, _ndim(keys))
  k, v = sort_p.bind(keys, values, dimension=dimension, is_stable=is_stable, num_keys=1)
  return k, v


# ---- top_k ------------------------------------------------------------------------------------
top_k_p = core.Primitive("top_k")
top_k_p.multiple_results = True


@top_k_p.def_abstract_eval
def _top_k_abstract_eval(aval, *, k, axis):
  if aval.dtype.kind == "c":
    raise ValueError("top_k is not compatible with complex inputs.")
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  if aval.ndim == 0:
    raise TypeError(f"top_k operand must have >= 1 dimension, got {aval.shape}")
  if not 0 <= axis < aval.ndim:
    raise ValueError(f"axis argument out of range: axis={axis} for operand.shape={aval.shape}")
  shape = list(aval.shape)
  if shape[axis] < k:
    raise ValueError("k argument to top_k must be no larger than size along axis; got "
                     f"k={k} with shape={shape} and axis={axis}")
  if shape[axis] > np.iinfo(np.int32).max + 1:
    raise ValueError("top_k returns int32 indices, which will overflow for array dimensions "
                     f"larger than the maximum int32. Got operand.shape={aval.shape}")
  shape[axis] = k
  return [ShapedArray(shape, aval.dtype, aval.weak_type),
          ShapedArray(shape, np.int32, aval.weak_type)]


@top_k_p.def_lowering
def _top_k_lower(ctx, x, *, k, axis):
  ndim = ctx.avals_in[0].ndim
  perm = None
  if axis != ndim - 1:   # chlo.top_k works on the last axis
    perm = list(range(ndim))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    x = hlo.transpose(x, mlir.dense_i64(perm))
  values, indices = chlo.top_k(x, mlir.i64_attr(k))
  if perm is not None:
    values = hlo.transpose(values, mlir.dense_i64(perm))
    indices = hlo.transpose(indices, mlir.dense_i64(perm))
  return [values, indices]


def _top_k_batch(args, dims, *, k, axis):
  (x,), (bd,) = args, dims
  return top_k_p.bind(x, k=k, axis=axis + (bd <= axis)), [bd, bd]


top_k_p.def_batch(_top_k_batch)


def _top_k_jvp(primals, tangents, *, k, axis):
  (x,), (t,) = primals, tangents
  values, indices = top_k_p.bind(x, k=k, axis=axis)
  idx_zero = ad.Zero(ad.tangent_aval(core.get_aval(indices)))
  if type(t) is ad.Zero:
    return [values, indices], [ad.Zero(ad.tangent_aval(core.get_aval(values))), idx_zero]
  shape = core.get_aval(indices).shape
  idx = shape_ops.reshape(indices, shape + (1,))
  return [values, indices], [_gather_along(t, idx, axis), idx_zero]


top_k_p.def_jvp(_top_k_jvp)


def top_k(operand, k, *, axis=-1):
  """The `k` largest entries along `axis` and their int32 indices, largest first.

  Equal entries keep their order (lowest index first).
  """
  k = operator.index(k)
  if k < 0:
    raise ValueError(f"k argument to top_k must be nonnegative, got {k}")
  operand = asarray_operand(operand)
  axis = utils.canonicalize_axis(axis, _ndim(operand))
  return top_k_p.bind(operand, k=k, axis=axis)
