"""Gather and scatter: XLA's general indexed read and indexed update, with JAX's API.

The index vector is always the last dimension of the indices array. Out-of-bounds handling
follows `GatherScatterMode`: a gather in FILL_OR_DROP mode is a plain gather whose
out-of-bounds slices are replaced with `fill_value` by a mask; a scatter in CLIP mode clamps
its indices first. Otherwise XLA's own behaviour applies (gather clamps, scatter drops).
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

from arrax._src import core, dtypes, mlir
from arrax._src.core import ShapedArray
from arrax._src.lax import elementwise as ew
from arrax._src.lax import shape_ops
from arrax._src.lax.lax import asarray_operand, scalar_literal

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
  prim.abstract_eval = _scatter_abstract_eval
  prim.lowering = _scatter_lowering
  return prim


scatter_p = _scatter_primitive("scatter")
scatter_add_p = _scatter_primitive("scatter-add")
scatter_sub_p = _scatter_primitive("scatter-sub")
scatter_mul_p = _scatter_primitive("scatter-mul")
scatter_min_p = _scatter_primitive("scatter-min")
scatter_max_p = _scatter_primitive("scatter-max")


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

_apply_cache: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def _apply_jaxpr(func, dtype):
  from arrax._src import tracing
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
    unused = shape_ops.broadcast_in_dim(unused, update_shape, ())
  jaxpr, consts = _apply_jaxpr(func, dtype)
  return _scatter_bind(scatter_p, None, operand, scatter_indices, unused, dimension_numbers,
                       indices_are_sorted, unique_indices, mode, jaxpr, consts)
