"""Gather and scatter: XLA's general indexed read and indexed update, with JAX's API.

The index vector is always the last dimension of the indices array. Out-of-bounds handling
follows `GatherScatterMode`: a gather in FILL_OR_DROP mode is a plain gather whose
out-of-bounds slices are replaced with `fill_value` by a mask; a scatter in CLIP mode clamps
its indices first. Otherwise XLA's own behaviour applies (gather clamps, scatter drops).

Differentiation follows JAX: gather is linear in its operand (transpose: scatter-add into
zeros); scatter-add and scatter-sub are linear (transpose in the updates: the inverse gather);
scatter-mul needs unique indices for the updates' derivative; scatter-min/max split the tangent
between tied contenders; scatter (replacing) masks out the losing updates with scattered ids and
scatter-adds the survivors (a simpler rule when indices are unique).
"""
from __future__ import annotations

import enum
import functools
import operator
import weakref
from typing import Any, Callable, NamedTuple, Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

import math

from arrax._src import ad, batching, core, dtypes, mlir, tracing
from arrax._src.core import ShapedArray
from arrax._src.lax import broadcasting
from arrax._src.lax import elementwise as ew
from arrax._src.lax import elementwise as lax_api
from arrax._src.lax.utils import asarray_operand, scalar_literal

__all__ = [
    "GatherDimensionNumbers", "ScatterDimensionNumbers", "GatherScatterMode",
    "gather", "scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
    "scatter_max", "scatter_apply",
    "gather_p", "scatter_p", "scatter_add_p", "scatter_sub_p", "scatter_mul_p",
    "scatter_min_p", "scatter_max_p",
]


class GatherDimensionNumbers(NamedTuple):
  """How the dimensions of a gather's operand, indices and output correspond (see XLA)."""
  offset_dims: tuple[int, ...]
  collapsed_slice_dims: tuple[int, ...]
  start_index_map: tuple[int, ...]
  operand_batching_dims: tuple[int, ...] = ()
  start_indices_batching_dims: tuple[int, ...] = ()


class ScatterDimensionNumbers(NamedTuple):
  """How the dimensions of a scatter's operand, indices and updates correspond (see XLA)."""
  update_window_dims: Sequence[int]
  inserted_window_dims: Sequence[int]
  scatter_dims_to_operand_dims: Sequence[int]
  operand_batching_dims: Sequence[int] = ()
  scatter_indices_batching_dims: Sequence[int] = ()


class GatherScatterMode(enum.Enum):
  """What a gather or scatter does with out-of-bounds indices.

  CLIP clamps indices so whole windows are in bounds; FILL_OR_DROP fills out-of-bounds gathered
  windows with a fill value and drops out-of-bounds scattered windows; PROMISE_IN_BOUNDS leaves
  it to XLA (gathers clamp, scatters drop).
  """
  CLIP = enum.auto()
  FILL_OR_DROP = enum.auto()
  PROMISE_IN_BOUNDS = enum.auto()
  ONE_HOT = enum.auto()

  @staticmethod
  def from_any(s: str | GatherScatterMode | None) -> GatherScatterMode:
    if isinstance(s, GatherScatterMode):
      return s
    if s is None or s in ("fill", "drop"):
      return GatherScatterMode.FILL_OR_DROP
    named = {"clip": GatherScatterMode.CLIP, "promise_in_bounds":
             GatherScatterMode.PROMISE_IN_BOUNDS, "one_hot": GatherScatterMode.ONE_HOT}
    if isinstance(s, str) and s in named:
      return named[s]
    raise ValueError(f'Unknown gather mode "{s}"')


# ---- dimension-number checks (TypeError, as in JAX) -------------------------------------------
def _check_sorted(dims, op, name):
  if any(b < a for a, b in zip(dims, dims[1:])):
    raise TypeError(f"{name} in {op} op must be sorted; got {dims}")


def _check_unique(dims, op, name):
  if len(set(dims)) != len(dims):
    raise TypeError(f"{name} in {op} op must not repeat; got: {dims}.")


def _check_in_range(dims, rank, op, name):
  for d in dims:
    if not 0 <= d < rank:
      raise TypeError(f"Invalid {name} set in {op} op; valid range is [0, {rank}); got: {d}.")


def _check_disjoint(dims1, dims2, op, name1, name2):
  if set(dims1) & set(dims2):
    raise TypeError(f"{name1} and {name2} in {op} op must be disjoint; got: {dims1} and "
                    f"{dims2}.")


def _check_ordered_dims(dims, rank, op, name):
  _check_sorted(dims, op, name)
  _check_unique(dims, op, name)
  _check_in_range(dims, rank, op, name)


def _check_index_dtype(indices):
  if not dtypes.issubdtype(indices.dtype, np.integer):
    raise ValueError("indices must have an integer type")


def _index_vector_dim(indices, op):
  if indices.ndim < 1:
    raise TypeError(f"{op} indices must have rank at least 1 (the last dimension holds the "
                    f"index vectors); got indices of shape {indices.shape}.")
  return indices.ndim - 1


def _batching_dims_check(operand, indices, obd, ibd, op, ibd_name):
  ivd = indices.ndim - 1
  _check_unique(ibd, op, ibd_name)
  _check_in_range(ibd, indices.ndim, op, ibd_name)
  if ivd in ibd:
    raise TypeError(f"{op.capitalize()} op cannot use the index vector dimension as a batching "
                    f"dimension; got {ibd}.")
  if len(obd) != len(ibd):
    raise TypeError(f"{op.capitalize()} op needs as many operand_batching_dims as {ibd_name}; "
                    f"got {obd} and {ibd}.")
  op_batch = tuple(operand.shape[d] for d in obd)
  idx_batch = tuple(indices.shape[d] for d in ibd)
  if op_batch != idx_batch:
    raise TypeError(f"{op.capitalize()} op needs operand batching dimensions and indices "
                    f"batching dimensions of equal sizes; got {op_batch} and {idx_batch}.")
  return op_batch


# ---- gather ---------------------------------------------------------------------------------
gather_p = core.Primitive("gather")


def _gather_shape(operand, indices, dnums, slice_sizes):
  offset_dims = tuple(dnums.offset_dims)
  collapsed = tuple(dnums.collapsed_slice_dims)
  start_index_map = tuple(dnums.start_index_map)
  obd = tuple(dnums.operand_batching_dims)
  ibd = tuple(dnums.start_indices_batching_dims)
  ivd = _index_vector_dim(indices, "Gather")
  out_rank = len(offset_dims) + indices.ndim - 1

  _check_sorted(offset_dims, "gather", "offset_dims")
  _check_unique(offset_dims, "gather", "offset_dims")
  for i, d in enumerate(offset_dims):
    if not 0 <= d < out_rank:
      raise TypeError(f"Offset dimension {i} in gather op is out of bounds; got {d}, but the "
                      f"output rank is {out_rank}")
  if len(start_index_map) != indices.shape[ivd]:
    raise TypeError(f"Gather op has {len(start_index_map)} elements in start_index_map but the "
                    f"index vector dimension {ivd} of indices has size {indices.shape[ivd]}; "
                    "they must be equal.")
  for i, d in enumerate(start_index_map):
    if not 0 <= d < operand.ndim:
      raise TypeError(f"Invalid start_index_map; domain is [0, {operand.ndim}), got: {i}->{d}.")
  _check_unique(start_index_map, "gather", "start_index_map")
  _check_ordered_dims(collapsed, operand.ndim, "gather", "collapsed_slice_dims")
  _check_ordered_dims(obd, operand.ndim, "gather", "operand_batching_dims")
  _check_disjoint(collapsed, obd, "gather", "collapsed_slice_dims", "operand_batching_dims")
  _check_disjoint(start_index_map, obd, "gather", "start_index_map", "operand_batching_dims")
  _batching_dims_check(operand, indices, obd, ibd, "gather", "start_indices_batching_dims")

  if len(slice_sizes) != operand.ndim:
    raise TypeError(f"Gather op needs one slice size per operand dimension; got "
                    f"len(slice_sizes)={len(slice_sizes)} for an operand of rank {operand.ndim}")
  if len(slice_sizes) != len(offset_dims) + len(collapsed) + len(obd):
    raise TypeError(f"Each operand dimension of a gather must be an offset, collapsed or "
                    f"batching dimension; got len(slice_sizes)={len(slice_sizes)}, "
                    f"offset_dims={offset_dims}, collapsed_slice_dims={collapsed}, "
                    f"operand_batching_dims={obd}.")
  if indices.size:
    for i, (s, d) in enumerate(zip(slice_sizes, operand.shape)):
      if not 0 <= s <= d:
        raise TypeError(f"Slice size at index {i} in gather op is out of range, must be within "
                        f"[0, {d} + 1), got {s}.")
  for i, d in enumerate(collapsed):
    if slice_sizes[d] != 1:
      raise TypeError(f"Gather op can only collapse slice dims of size 1, but slice size is "
                      f"{slice_sizes[d]} for dimension {d} at position {i}.")
  for i, d in enumerate(obd):
    if slice_sizes[d] > 1:
      raise TypeError(f"Gather op can only have operand batching dims of slice size 0 or 1, but "
                      f"slice size is {slice_sizes[d]} for dimension {d} at position {i}.")

  window = iter(s for i, s in enumerate(slice_sizes) if i not in collapsed and i not in obd)
  batch = iter(indices.shape[:-1])
  return tuple(next(window) if i in offset_dims else next(batch) for i in range(out_rank))


@gather_p.def_abstract_eval
def _gather_abstract_eval(operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                          indices_are_sorted, mode, fill_value):
  shape = _gather_shape(operand, indices, dimension_numbers, slice_sizes)
  _check_index_dtype(indices)
  return ShapedArray(shape, operand.dtype, operand.weak_type)


def _per_component(values, idx_aval):
  """A constant of the indices' type holding `values[k]` at every [..., k]."""
  v = np.asarray(values, idx_aval.dtype)
  if v.size and np.all(v == v[0]):
    return mlir.full_like_aval(v[0], idx_aval)
  return hlo.broadcast_in_dim(mlir.aval_to_ir_type(idx_aval), mlir.ir_constant(v),
                              mlir.dense_i64([idx_aval.ndim - 1]))


def _in_bounds_mask(indices, idx_aval, upper):
  """bool[batch shape]: whether 0 <= indices[..., k] <= upper[k] for every k."""
  ivd = idx_aval.ndim - 1
  lo = mlir.full_like_aval(0, idx_aval)
  hi = _per_component(upper, idx_aval)
  ok = hlo.and_(mlir.compare(indices, lo, "GE", idx_aval.dtype),
                mlir.compare(indices, hi, "LE", idx_aval.dtype))
  out_aval = ShapedArray(idx_aval.shape[:-1], np.bool_)
  reduce = hlo.ReduceOp([mlir.aval_to_ir_type(out_aval)], [ok], [mlir.ir_constant(True)],
                        mlir.dense_i64([ivd]))
  mlir.make_reducer_region(reduce, np.bool_, lambda a, b: [hlo.and_(a[0], b[0])])
  return reduce.result


def _gather_fill_index_dtype(operand_shape):
  return np.dtype(np.int64 if any(d > np.iinfo(np.int32).max for d in operand_shape)
                  else np.int32)


def _filled(value, aval):
  """A constant array of `aval` filled with `value`."""
  if aval.dtype.kind == "c":  # built from parts: complex splat constants are not accepted
    value = np.asarray(value, aval.dtype)
    part = aval.update(dtype=value.real.dtype)
    return hlo.complex(mlir.full_like_aval(value.real, part),
                       mlir.full_like_aval(value.imag, part))
  return mlir.full_like_aval(value, aval)


@gather_p.def_lowering
def _gather_lowering(ctx, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                     indices_are_sorted, mode, fill_value):
  op_aval, idx_aval = ctx.avals_in
  out_aval = ctx.avals_out[0]
  if mode == GatherScatterMode.ONE_HOT:
    raise NotImplementedError("gather does not support mode ONE_HOT")
  if out_aval.size == 0:
    return [_filled(0, out_aval)]
  dn = dimension_numbers
  fill = mode == GatherScatterMode.FILL_OR_DROP
  if fill:
    # Indices are compared as signed integers wide enough for the operand's dimensions.
    idx_dtype = _gather_fill_index_dtype(op_aval.shape)
    if idx_aval.dtype != idx_dtype:
      idx_aval = idx_aval.update(dtype=idx_dtype)
      indices = hlo.convert(mlir.aval_to_ir_type(idx_aval), indices)
    upper = [op_aval.shape[d] - slice_sizes[d] for d in dn.start_index_map]
    mask = _in_bounds_mask(indices, idx_aval, upper)
  attr = hlo.GatherDimensionNumbers.get(
      offset_dims=list(dn.offset_dims), collapsed_slice_dims=list(dn.collapsed_slice_dims),
      operand_batching_dims=list(dn.operand_batching_dims),
      start_indices_batching_dims=list(dn.start_indices_batching_dims),
      start_index_map=list(dn.start_index_map), index_vector_dim=idx_aval.ndim - 1)
  out = hlo.gather(operand, indices, attr, mlir.dense_i64(slice_sizes),
                   indices_are_sorted=ir.BoolAttr.get(bool(indices_are_sorted)))
  if fill:
    batch_dims = [i for i in range(out_aval.ndim) if i not in dn.offset_dims]
    mask = hlo.broadcast_in_dim(mlir.aval_to_ir_type(out_aval.update(dtype=np.bool_)), mask,
                                mlir.dense_i64(batch_dims))
    out = hlo.select(mask, out, _filled(fill_value, out_aval))
  return [out]


def _plus1(dims):
  # NumPy integers, as JAX's rules make them (jaxprs print alike).
  return tuple(np.add(1, np.asarray(dims, np.int64)))


def _gather_batch(args, dims, *, dimension_numbers, slice_sizes, unique_indices,
                  indices_are_sorted, mode, fill_value):
  (operand, indices), (op_bd, idx_bd) = args, dims
  dn = dimension_numbers
  if idx_bd is None:
    # Only the operand is mapped: its batch axis becomes a leading full-size window axis.
    operand = batching.moveaxis(operand, op_bd, 0)
    dnums = GatherDimensionNumbers(
        offset_dims=(0,) + _plus1(dn.offset_dims),
        collapsed_slice_dims=_plus1(dn.collapsed_slice_dims),
        start_index_map=_plus1(dn.start_index_map),
        operand_batching_dims=_plus1(dn.operand_batching_dims),
        start_indices_batching_dims=tuple(dn.start_indices_batching_dims))
    slice_sizes = (core.get_aval(operand).shape[0],) + tuple(slice_sizes)
  elif op_bd is None:
    # Only the indices are mapped: the batch axis is one more (leading) index batch axis.
    indices = batching.moveaxis(indices, idx_bd, 0)
    dnums = GatherDimensionNumbers(
        offset_dims=tuple(d + 1 for d in dn.offset_dims),
        collapsed_slice_dims=tuple(dn.collapsed_slice_dims),
        start_index_map=tuple(dn.start_index_map),
        operand_batching_dims=tuple(dn.operand_batching_dims),
        start_indices_batching_dims=_plus1(dn.start_indices_batching_dims))
    # Examples may now gather the same place, and in no particular order.
    unique_indices = indices_are_sorted = False
  else:
    # Both mapped: pair operand and indices examples with a leading gather batching dimension.
    operand = batching.moveaxis(operand, op_bd, 0)
    indices = batching.moveaxis(indices, idx_bd, 0)
    dnums = GatherDimensionNumbers(
        offset_dims=_plus1(dn.offset_dims),
        collapsed_slice_dims=_plus1(dn.collapsed_slice_dims),
        start_index_map=_plus1(dn.start_index_map),
        operand_batching_dims=(0,) + _plus1(dn.operand_batching_dims),
        start_indices_batching_dims=(0,) + _plus1(dn.start_indices_batching_dims))
    slice_sizes = (0 if core.get_aval(operand).shape[0] == 0 else 1,) + tuple(slice_sizes)
  out = gather_p.bind(operand, indices, dimension_numbers=dnums, slice_sizes=slice_sizes,
                      unique_indices=unique_indices, indices_are_sorted=indices_are_sorted,
                      mode=mode, fill_value=fill_value)
  return out, 0


gather_p.def_batch(_gather_batch)


def _zeros_like(x, dtype=None):
  return broadcasting._full_like(x, 0, dtype=dtype)


def _ones_like(x, dtype=None):
  return broadcasting._full_like(x, 1, dtype=dtype)


def _inverse_gather(dnums, operand_ndim, updates_shape):
  """The gather dimension numbers and slice sizes reading back what a scatter wrote."""
  gather_dnums = GatherDimensionNumbers(
      offset_dims=dnums.update_window_dims,
      collapsed_slice_dims=dnums.inserted_window_dims,
      start_index_map=dnums.scatter_dims_to_operand_dims,
      operand_batching_dims=dnums.operand_batching_dims,
      start_indices_batching_dims=dnums.scatter_indices_batching_dims)
  slice_sizes, pos = [], 0
  for i in range(operand_ndim):
    if i in dnums.inserted_window_dims or i in dnums.operand_batching_dims:
      slice_sizes.append(1)
    else:
      slice_sizes.append(updates_shape[dnums.update_window_dims[pos]])
      pos += 1
  return gather_dnums, slice_sizes


def _shape_of(x):
  return x.aval.shape if ad.is_undefined(x) else core.get_aval(x).shape


# -- gather
def _gather_jvp(t, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                indices_are_sorted, mode, fill_value):
  return gather(t, indices, dimension_numbers, slice_sizes, unique_indices=unique_indices,
                indices_are_sorted=indices_are_sorted, mode=mode, fill_value=0)


def _gather_transpose(ct, operand, indices, *, dimension_numbers, slice_sizes, unique_indices,
                      indices_are_sorted, mode, fill_value):
  if ad.is_undefined(indices):
    raise NotImplementedError("gather cannot be transposed in its indices")
  dn = dimension_numbers
  zeros = broadcasting._full(operand.aval.shape, 0, core.get_aval(ct).dtype)
  scatter_dnums = ScatterDimensionNumbers(
      update_window_dims=dn.offset_dims, inserted_window_dims=dn.collapsed_slice_dims,
      scatter_dims_to_operand_dims=dn.start_index_map,
      operand_batching_dims=dn.operand_batching_dims,
      scatter_indices_batching_dims=dn.start_indices_batching_dims)
  return [scatter_add(zeros, indices, ct, scatter_dnums, unique_indices=unique_indices,
                      indices_are_sorted=indices_are_sorted, mode=mode), None]


ad.defjvp(gather_p, _gather_jvp, None)
gather_p.def_transpose(_gather_transpose)


def _default_fill_value(dtype):
  dtype = np.dtype(dtype)
  if dtypes.is_inexact(dtype):
    return np.nan
  if dtypes.issubdtype(dtype, np.signedinteger):
    return int(dtypes.iinfo(dtype).min)
  if dtypes.issubdtype(dtype, np.unsignedinteger):
    return int(dtypes.iinfo(dtype).max)
  if dtype == np.bool_:
    return True
  raise ValueError(f"Unsupported dtype for gather fill_value {dtype}")


def _canonical_dnums(dnums):
  try:
    return type(dnums)(*(tuple(operator.index(d) for d in f) for f in dnums))
  except TypeError:
    return dnums


def _canonical_shape(shape, name):
  try:
    return tuple(operator.index(d) for d in shape)
  except TypeError:
    raise TypeError(f"{name} must be a sequence of integers, got {shape}") from None


def gather(operand, start_indices, dimension_numbers: GatherDimensionNumbers, slice_sizes, *,
           unique_indices: bool = False, indices_are_sorted: bool = False,
           mode: str | GatherScatterMode | None = None, fill_value=None):
  """XLA's Gather: slices of `operand` of size `slice_sizes`, starting at `start_indices`.

  `mode` defaults to PROMISE_IN_BOUNDS. Under FILL_OR_DROP, windows that are not entirely in
  bounds read as `fill_value` (default: NaN for inexact dtypes, the minimum of signed and the
  maximum of unsigned integer dtypes, True for bool).
  """
  operand, start_indices = asarray_operand(operand), asarray_operand(start_indices)
  parsed = GatherScatterMode.from_any(
      GatherScatterMode.PROMISE_IN_BOUNDS if mode is None else mode)
  if parsed == GatherScatterMode.FILL_OR_DROP:
    if fill_value is None:
      fill_value = _default_fill_value(core.get_aval(operand).dtype)
  else:
    fill_value = None
  return gather_p.bind(operand, start_indices, dimension_numbers=_canonical_dnums(
      dimension_numbers), slice_sizes=_canonical_shape(slice_sizes, "slice_sizes"),
      unique_indices=bool(unique_indices), indices_are_sorted=bool(indices_are_sorted),
      mode=parsed, fill_value=fill_value)


# ---- scatter --------------------------------------------------------------------------------
def _scatter_shape(operand, indices, updates, dnums):
  uwd = tuple(dnums.update_window_dims)
  iwd = tuple(dnums.inserted_window_dims)
  sdod = tuple(dnums.scatter_dims_to_operand_dims)
  obd = tuple(dnums.operand_batching_dims)
  ibd = tuple(dnums.scatter_indices_batching_dims)
  ivd = _index_vector_dim(indices, "Scatter")

  expected_rank = indices.ndim - 1 + len(uwd)
  if updates.ndim != expected_rank:
    raise TypeError(f"Updates tensor must be of rank {expected_rank}; got {updates.ndim}.")
  _check_ordered_dims(uwd, updates.ndim, "scatter", "update_window_dims")
  _check_ordered_dims(iwd, operand.ndim, "scatter", "inserted_window_dims")
  _check_ordered_dims(obd, operand.ndim, "scatter", "operand_batching_dims")
  _check_disjoint(iwd, obd, "scatter", "inserted_window_dims", "operand_batching_dims")
  _check_disjoint(sdod, obd, "scatter", "scatter_dims_to_operand_dims", "operand_batching_dims")
  op_batch = _batching_dims_check(operand, indices, obd, ibd, "scatter",
                                  "scatter_indices_batching_dims")
  # The k-th non-window dimension of updates corresponds to dimension k of indices.
  update_scatter_dims = [d for d in range(updates.ndim) if d not in uwd]
  upd_batch = tuple(updates.shape[update_scatter_dims[d]] for d in ibd)
  if op_batch != upd_batch:
    raise TypeError("Scatter op needs operand batching dimensions and updates batching "
                    f"dimensions of equal sizes; got {op_batch} and {upd_batch}.")
  window_rank = len(uwd) + len(iwd) + len(obd)
  if window_rank != operand.ndim:
    raise TypeError(f"Scatter op has window of size {window_rank}; doesn't match operand of "
                    f"rank {operand.ndim}.")
  if len(sdod) != indices.shape[ivd]:
    raise TypeError(f"Scatter op has {len(sdod)} elements in scatter_dims_to_operand_dims but "
                    f"the index vector dimension {ivd} of indices has size "
                    f"{indices.shape[ivd]}; they must be equal")
  for i, d in enumerate(sdod):
    if not 0 <= d < operand.ndim:
      raise TypeError(f"Invalid scatter_dims_to_operand_dims mapping; domain is "
                      f"[0, {operand.ndim}), got: {i}->{d}.")
  _check_unique(sdod, "scatter", "scatter_dims_to_operand_dims")
  window_bounds = [n for i, n in enumerate(operand.shape) if i not in iwd and i not in obd]
  for bound, d in zip(window_bounds, uwd):
    if updates.shape[d] > bound:
      raise TypeError(f"Window dimensions of updates must not exceed the corresponding operand "
                      f"dimensions; for updates dimension {d} the size is {updates.shape[d]} "
                      f"but the operand's is {bound}.")
  for k, d in enumerate(update_scatter_dims):
    if updates.shape[d] != indices.shape[k]:
      raise TypeError(f"Scatter dimensions of updates must match the batch dimensions of "
                      f"indices; for updates dimension {d} the size is {updates.shape[d]} but "
                      f"the indices' is {indices.shape[k]}.")
  return operand.shape


def _scatter_abstract_eval(operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                           unique_indices, mode, update_jaxpr, update_consts):
  shape = _scatter_shape(operand, indices, updates, dimension_numbers)
  _check_index_dtype(indices)
  if operand.dtype != updates.dtype:
    raise TypeError(f"lax.scatter requires arguments to have the same dtypes, got "
                    f"{operand.dtype.name}, {updates.dtype.name}.")
  return ShapedArray(shape, operand.dtype, operand.weak_type)


def _clamp_indices(indices, idx_aval, op_aval, upd_aval, dn):
  """Clamp scatter indices so that every update window lies inside the operand."""
  window = iter(upd_aval.shape[d] for d in dn.update_window_dims)
  sizes = [1 if i in dn.inserted_window_dims or i in dn.operand_batching_dims else next(window)
           for i in range(op_aval.ndim)]
  cap = int(dtypes.iinfo(idx_aval.dtype).max)
  hi = _per_component([min(op_aval.shape[d] - sizes[d], cap)
                       for d in dn.scatter_dims_to_operand_dims], idx_aval)
  return hlo.clamp(mlir.ir_constant(0, idx_aval.dtype), indices, hi)


def _scatter_lowering(ctx, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                      unique_indices, mode, update_jaxpr, update_consts):
  op_aval, idx_aval, upd_aval = ctx.avals_in
  out_aval = ctx.avals_out[0]
  dn = dimension_numbers
  if mode == GatherScatterMode.CLIP:
    indices = _clamp_indices(indices, idx_aval, op_aval, upd_aval, dn)
  attr = hlo.ScatterDimensionNumbers.get(
      update_window_dims=list(dn.update_window_dims),
      inserted_window_dims=list(dn.inserted_window_dims),
      input_batching_dims=list(dn.operand_batching_dims),
      scatter_indices_batching_dims=list(dn.scatter_indices_batching_dims),
      scattered_dims_to_operand_dims=list(dn.scatter_dims_to_operand_dims),
      index_vector_dim=idx_aval.ndim - 1)
  op = hlo.ScatterOp([mlir.aval_to_ir_type(out_aval)], [operand], indices, [updates], attr,
                     indices_are_sorted=ir.BoolAttr.get(bool(indices_are_sorted)),
                     unique_indices=ir.BoolAttr.get(bool(unique_indices)))
  scalar_t = mlir.aval_to_ir_type(ShapedArray((), out_aval.dtype))
  block = op.update_computation.blocks.append(scalar_t, scalar_t)
  with ir.InsertionPoint(block):
    old, new = block.arguments
    if update_jaxpr is None:
      outs = [new]
    else:
      consts = [mlir.ir_constant(np.asarray(c)) for c in update_consts]
      outs = mlir.jaxpr_subcomp(ctx.module_context, update_jaxpr, consts, [old, new])
    hlo.return_(list(outs))
  return [op.result]


def _scatter_primitive(name):
  prim = core.Primitive(name)
  prim.def_abstract_eval(_scatter_abstract_eval)
  prim.def_lowering(_scatter_lowering)
  return prim


scatter_p = _scatter_primitive("scatter")
scatter_add_p = _scatter_primitive("scatter-add")
scatter_sub_p = _scatter_primitive("scatter-sub")
scatter_mul_p = _scatter_primitive("scatter-mul")
scatter_min_p = _scatter_primitive("scatter-min")
scatter_max_p = _scatter_primitive("scatter-max")


def _scatter_batch(prim, args, dims, *, dimension_numbers, indices_are_sorted, unique_indices,
                   mode, update_jaxpr, update_consts):
  (operand, indices, updates), (op_bd, idx_bd, upd_bd) = args, dims
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  # The operand always gets a leading batch axis (an unbatched one is broadcast), so that
  # every example scatters into its own copy.
  operand = batching.bdim_at_front(operand, op_bd, size)
  updates = batching.bdim_at_front(updates, upd_bd, size)
  dn = dimension_numbers
  if idx_bd is None:
    # Shared indices: the batch axis is a leading window axis of the updates.
    dnums = ScatterDimensionNumbers(
        update_window_dims=(0,) + _plus1(dn.update_window_dims),
        inserted_window_dims=_plus1(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=_plus1(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=_plus1(dn.operand_batching_dims),
        scatter_indices_batching_dims=tuple(dn.scatter_indices_batching_dims))
  else:
    # Per-example indices: a leading scatter batching dimension pairs operand and indices.
    indices = batching.bdim_at_front(indices, idx_bd, size)
    dnums = ScatterDimensionNumbers(
        update_window_dims=_plus1(dn.update_window_dims),
        inserted_window_dims=_plus1(dn.inserted_window_dims),
        scatter_dims_to_operand_dims=_plus1(dn.scatter_dims_to_operand_dims),
        operand_batching_dims=(0,) + _plus1(dn.operand_batching_dims),
        scatter_indices_batching_dims=(0,) + _plus1(dn.scatter_indices_batching_dims))
  out = prim.bind(operand, indices, updates, dimension_numbers=dnums,
                  indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                  mode=mode, update_jaxpr=update_jaxpr, update_consts=update_consts)
  return out, 0


for _p in (scatter_p, scatter_add_p, scatter_sub_p, scatter_mul_p, scatter_min_p,
           scatter_max_p):
  _p.def_batch(functools.partial(_scatter_batch, _p))


def _scatter_params(params):
  return {k: params[k] for k in ("dimension_numbers", "indices_are_sorted", "unique_indices",
                                 "mode", "update_jaxpr", "update_consts")}


# -- scatter-add, scatter-sub: linear in (operand, updates)
def _scatter_addsub_jvp(prim, primals, tangents, **params):
  operand, indices, updates = primals
  t_operand, _, t_updates = tangents
  out = prim.bind(operand, indices, updates, **params)
  if type(t_operand) is ad.Zero and type(t_updates) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
  return out, prim.bind(ad.instantiate(t_operand), indices, ad.instantiate(t_updates),
                        **params)


def _scatter_addsub_transpose(prim, ct, operand, indices, updates, *, dimension_numbers,
                              indices_are_sorted, unique_indices, mode, update_jaxpr,
                              update_consts):
  if ad.is_undefined(indices):
    raise NotImplementedError(f"{prim.name} cannot be transposed in its indices")
  ct_operand = ct if ad.is_undefined(operand) else None
  ct_updates = None
  if ad.is_undefined(updates):
    gather_dnums, slice_sizes = _inverse_gather(dimension_numbers, core.get_aval(ct).ndim,
                                                _shape_of(updates))
    ct_updates = gather(ct, indices, gather_dnums, slice_sizes, mode=mode, fill_value=0)
    if prim is scatter_sub_p:
      ct_updates = lax_api.neg(ct_updates)
  return [ct_operand, None, ct_updates]


for _p in (scatter_add_p, scatter_sub_p):
  _p.def_jvp(functools.partial(_scatter_addsub_jvp, _p))
  _p.def_transpose(functools.partial(_scatter_addsub_transpose, _p))


# -- scatter-mul: linear in the operand
def _scatter_mul_jvp_operand(t, operand, indices, updates, **params):
  return scatter_mul_p.bind(t, indices, updates, **params)


def _scatter_mul_jvp_updates(t, operand, indices, updates, *, dimension_numbers,
                             indices_are_sorted, unique_indices, mode, **_):
  if not unique_indices:
    raise NotImplementedError(
        "scatter_mul gradients are only implemented if `unique_indices=True`")
  return lax_api.mul(operand, scatter_add(
      _zeros_like(operand), indices, t, dimension_numbers,
      indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode))


def _scatter_mul_transpose(ct, operand, indices, updates, *, dimension_numbers,
                           indices_are_sorted, unique_indices, mode, update_jaxpr,
                           update_consts):
  if ad.is_undefined(indices):
    raise NotImplementedError("scatter-mul cannot be transposed in its indices")
  ct_operand = ct_updates = None
  if ad.is_undefined(operand):
    ct_operand = scatter_mul(ct, indices, updates, dimension_numbers,
                             indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=mode)
  if ad.is_undefined(updates):
    if not unique_indices:
      raise NotImplementedError(
          "scatter_mul gradients are only implemented if `unique_indices=True`")
    gather_dnums, slice_sizes = _inverse_gather(dimension_numbers, core.get_aval(ct).ndim,
                                                _shape_of(updates))
    ct_updates = gather(lax_api.mul(ct, operand), indices, gather_dnums, slice_sizes,
                        mode=mode, fill_value=0)
  return [ct_operand, None, ct_updates]


ad.defjvp(scatter_mul_p, _scatter_mul_jvp_operand, None, _scatter_mul_jvp_updates)
scatter_mul_p.def_transpose(_scatter_mul_transpose)


# -- scatter-min, scatter-max
def _scatter_extremal_jvp(prim, primals, tangents, **params):
  operand, indices, updates = primals
  t_operand, _, t_updates = tangents
  dn = params["dimension_numbers"]
  out = prim.bind(operand, indices, updates, **params)
  if type(t_operand) is ad.Zero and type(t_updates) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
  t_operand, t_updates = ad.instantiate(t_operand), ad.instantiate(t_updates)
  gather_dnums, slice_sizes = _inverse_gather(dn, core.get_aval(operand).ndim,
                                              core.get_aval(updates).shape)

  def read(x):
    return gather(x, indices, gather_dnums, slice_sizes)

  # Updates that won, and operand values that survived; the tangent at a location is the
  # average of the tangents of all the values tied for it.
  initial, target = read(operand), read(out)
  won = lax_api.eq(updates, target)
  kept = lax_api.eq(initial, target)
  num_won = read(scatter_add(_zeros_like(operand), indices,
                             lax_api.select(won, _ones_like(updates), _zeros_like(updates)),
                             dn))
  num_refs = read(scatter_add(_zeros_like(operand), indices, _ones_like(updates), dn))
  one = lax_api.scalar_literal(1, core.get_aval(num_won).dtype, True)
  plus_one = lax_api.div(one, lax_api.add(num_won, one))
  updates_coef = lax_api.select(won, lax_api.select(kept, plus_one, lax_api.div(one, num_won)),
                                _zeros_like(updates))
  minus_one = lax_api.scalar_literal(-1, core.get_aval(num_won).dtype, True)
  operand_coef = lax_api.div(
      lax_api.add(minus_one, lax_api.select(kept, plus_one, _zeros_like(num_won))), num_refs)
  t_target = read(t_operand)
  t_new = lax_api.add(lax_api.mul(t_target, operand_coef),
                      lax_api.mul(t_updates, updates_coef))
  return out, scatter_add(t_operand, indices, t_new, dn,
                          indices_are_sorted=params["indices_are_sorted"],
                          unique_indices=params["unique_indices"], mode=params["mode"])


for _p in (scatter_min_p, scatter_max_p):
  _p.def_jvp(functools.partial(_scatter_extremal_jvp, _p))


# -- scatter (replacing)
def _scatter_jvp(primals, tangents, *, dimension_numbers, indices_are_sorted, unique_indices,
                 mode, update_jaxpr, update_consts):
  if update_jaxpr is not None:
    raise NotImplementedError("scatter_apply JVP not implemented")
  operand, indices, updates = primals
  t_operand, _, t_updates = tangents
  dn = dimension_numbers
  params = dict(dimension_numbers=dn, indices_are_sorted=indices_are_sorted,
                unique_indices=unique_indices, mode=mode, update_jaxpr=None, update_consts=())
  if type(t_operand) is ad.Zero and type(t_updates) is ad.Zero:
    out = scatter_p.bind(operand, indices, updates, **params)
    return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
  t_operand, t_updates = ad.instantiate(t_operand), ad.instantiate(t_updates)
  if unique_indices:
    # No two updates write the same place: the tangents scatter like the values.
    return (scatter_p.bind(operand, indices, updates, **params),
            scatter_p.bind(t_operand, indices, t_updates, **params))

  # Which update wins at a location is unspecified, so: scatter a distinct positive id per
  # update, read the ids back, keep only the updates whose id survived (and the operand values
  # nothing was written to), and scatter-add the survivors.
  upd_shape = core.get_aval(updates).shape
  ids_shape = list(upd_shape)
  for d in dn.update_window_dims:
    ids_shape[d] = 1
  num_ids = math.prod(ids_shape)
  id_dtype = np.dtype(np.uint64 if num_ids > np.iinfo(np.uint32).max else np.uint32)
  update_ids = lax_api.add(broadcasting.reshape(broadcasting.iota(id_dtype, num_ids), ids_shape),
                           _ones_like(updates, dtype=id_dtype))
  scattered_ids = scatter(broadcasting._full(core.get_aval(operand).shape, 0, id_dtype), indices,
                          update_ids, dn, indices_are_sorted=indices_are_sorted,
                          unique_indices=unique_indices, mode=mode)
  gather_dnums, slice_sizes = _inverse_gather(dn, core.get_aval(operand).ndim, upd_shape)
  gathered_ids = gather(scattered_ids, indices, gather_dnums, slice_sizes)

  untouched = lax_api.eq(scattered_ids, _zeros_like(scattered_ids))
  masked_operand = lax_api.select(untouched, operand, _zeros_like(operand))
  won = lax_api.eq(update_ids, gathered_ids)
  masked_updates = lax_api.select(won, updates, _zeros_like(updates))
  masked_t_operand = lax_api.select(lax_api.eq(scattered_ids, _zeros_like(scattered_ids)),
                                    t_operand, _zeros_like(t_operand))
  masked_t_updates = lax_api.select(lax_api.eq(update_ids, gathered_ids), t_updates,
                                    _zeros_like(t_updates))
  kw = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode)
  return (scatter_add(masked_operand, indices, masked_updates, dn, **kw),
          scatter_add(masked_t_operand, indices, masked_t_updates, dn, **kw))


def _scatter_transpose(ct, operand, indices, updates, *, dimension_numbers, indices_are_sorted,
                       unique_indices, mode, update_jaxpr, update_consts):
  if not unique_indices:
    raise NotImplementedError("scatter transpose is only implemented where "
                              "unique_indices=True")
  if ad.is_undefined(indices):
    raise NotImplementedError("scatter cannot be transposed in its indices")
  upd_shape = _shape_of(updates)
  ct_operand = ct_updates = None
  if ad.is_undefined(operand):
    # The written locations get no cotangent.
    ct_operand = scatter(ct, indices, broadcasting._full(upd_shape, 0, core.get_aval(ct).dtype),
                         dimension_numbers, indices_are_sorted=indices_are_sorted,
                         unique_indices=True, mode=mode)
  if ad.is_undefined(updates):
    gather_dnums, slice_sizes = _inverse_gather(dimension_numbers, core.get_aval(ct).ndim,
                                                upd_shape)
    ct_updates = gather(ct, indices, gather_dnums, slice_sizes, mode=mode, fill_value=0)
  return [ct_operand, None, ct_updates]


scatter_p.def_jvp(_scatter_jvp)
scatter_p.def_transpose(_scatter_transpose)


@functools.lru_cache(maxsize=None)
def _combiner_jaxpr(prim, dtype) -> core.Jaxpr:
  """`{ lambda ; a b. let c = prim a b in (c,) }` on scalars of `dtype` (cached, so that
  equal scatters have equal params)."""
  aval = ShapedArray((), dtype)
  out_aval = prim.abstract_eval(aval, aval)  # rejects dtypes `prim` does not accept
  a, b, c = core.Var(aval), core.Var(aval), core.Var(out_aval)
  return core.Jaxpr([], [a, b], [c], [core.JaxprEqn([a, b], [c], prim, {})])


def _scatter_bind(prim, combiner, operand, scatter_indices, updates, dimension_numbers,
                  indices_are_sorted, unique_indices, mode, update_jaxpr=None,
                  update_consts=()):
  if not hasattr(dimension_numbers, "update_window_dims"):
    raise TypeError("scatter dimension_numbers must be a lax.ScatterDimensionNumbers, got "
                    f"{type(dimension_numbers).__name__}.")
  operand, scatter_indices, updates = map(asarray_operand, (operand, scatter_indices, updates))
  if combiner is not None:
    update_jaxpr = _combiner_jaxpr(combiner, core.get_aval(operand).dtype)
  return prim.bind(operand, scatter_indices, updates,
                   dimension_numbers=_canonical_dnums(dimension_numbers),
                   indices_are_sorted=bool(indices_are_sorted),
                   unique_indices=bool(unique_indices), mode=GatherScatterMode.from_any(mode),
                   update_jaxpr=update_jaxpr, update_consts=tuple(update_consts))


def _scatter_fn(name, prim, combiner, doc):
  def fn(operand, scatter_indices, updates, dimension_numbers: ScatterDimensionNumbers, *,
         indices_are_sorted: bool = False, unique_indices: bool = False,
         mode: str | GatherScatterMode | None = None):
    return _scatter_bind(prim, combiner, operand, scatter_indices, updates, dimension_numbers,
                         indices_are_sorted, unique_indices, mode)
  fn.__name__ = fn.__qualname__ = name
  fn.__doc__ = (f"XLA's Scatter, {doc}. `mode` defaults to FILL_OR_DROP (out-of-bounds "
                "update windows are dropped); 'clip' clamps the indices instead.")
  return fn


scatter = _scatter_fn("scatter", scatter_p, None, "where updates replace operand values")
scatter_add = _scatter_fn("scatter_add", scatter_add_p, ew.add_p, "combining by addition")
scatter_sub = _scatter_fn("scatter_sub", scatter_sub_p, ew.sub_p, "combining by subtraction")
scatter_mul = _scatter_fn("scatter_mul", scatter_mul_p, ew.mul_p,
                          "combining by multiplication")
scatter_min = _scatter_fn("scatter_min", scatter_min_p, ew.min_p, "combining by minimum")
scatter_max = _scatter_fn("scatter_max", scatter_max_p, ew.max_p, "combining by maximum")

_apply_cache: weakref.WeakKeyDictionary = core.register_cache(weakref.WeakKeyDictionary())


def _apply_jaxpr(func, dtype):
  try:
    per_func = _apply_cache.setdefault(func, {})
  except TypeError:  # not weakly referenceable
    per_func = {}
  if dtype not in per_func:
    aval = ShapedArray((), dtype)
    jaxpr, consts = tracing.trace_to_jaxpr(lambda x, _: [func(x)], [aval, aval])
    if any(isinstance(c, core.Tracer) for c in consts):
      raise TypeError("scatter_apply: `func` must not close over traced values")
    per_func[dtype] = (jaxpr, tuple(consts))
  return per_func[dtype]


def scatter_apply(operand, scatter_indices, func: Callable[[Any], Any],
                  dimension_numbers: ScatterDimensionNumbers, *, update_shape=(),
                  indices_are_sorted: bool = False, unique_indices: bool = False,
                  mode: str | GatherScatterMode | None = None):
  """XLA's Scatter, replacing the indexed operand values `v` with `func(v)` (applied once per
  occurrence of an index). `update_shape` is the shape the updates would have."""
  dtype = core.get_aval(asarray_operand(operand)).dtype
  update_shape = _canonical_shape(update_shape, "update_shape")
  unused = scalar_literal(0, dtype)
  if update_shape:
    unused = broadcasting.broadcast_in_dim(unused, update_shape, ())
  jaxpr, consts = _apply_jaxpr(func, dtype)
  return _scatter_bind(scatter_p, None, operand, scatter_indices, unused, dimension_numbers,
                       indices_are_sorted, unique_indices, mode, jaxpr, consts)
