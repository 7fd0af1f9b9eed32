"""Structural primitives: broadcasting, reshaping, transposing, reversing, slicing (static and
dynamic), concatenation, padding, iota and split, with lax's wrappers over them.

None of them computes on values; each lowers to one StableHLO op (split to several slices).
Shape params are tuples of Python ints, as JAX records them, so jaxprs print the same.
"""
from __future__ import annotations

import builtins
import math
import operator
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import core, dtypes, mlir
from arrax._src.array import Array, device_put_value
from arrax._src.core import Literal, ShapedArray, Tracer
from arrax._src.jit import jit
from arrax._src.lax import lax as lax_api
from arrax._src.lax import utils
from arrax._src.lax.lax import asarray_operand, scalar_literal
from arrax._src.tracing import JaxprTrace

__all__ = [
    "broadcast", "broadcast_in_dim", "broadcast_to_rank", "broadcasted_iota", "collapse",
    "concatenate", "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
    "expand_dims", "index_in_dim", "iota", "pad", "reshape", "rev", "slice", "slice_in_dim",
    "split", "squeeze", "transpose",
]


# ---- helpers --------------------------------------------------------------------------------
def _is_array(x) -> bool:
  """Whether `x` is an arrax array or tracer (what JAX's `isinstance(x, Array)` accepts)."""
  return isinstance(x, (Array, Tracer))


def _aval(x) -> ShapedArray:
  return core.get_aval(x)


def _asarray(x):
  """`x` as an arrax array (host values and literals are copied to the device)."""
  if _is_array(x):
    return x
  if isinstance(x, Literal):
    return device_put_value(x.val, dtype=x.aval.dtype, weak_type=x.aval.weak_type)
  return device_put_value(x)


def _staging() -> bool:
  return isinstance(core.current_trace(), JaxprTrace)


def _canonicalize_shape(shape):
  """A tuple of Python ints from a shape-like value (an int counts as a 1-d shape)."""
  if isinstance(shape, int):
    shape = (shape,)
  try:
    return tuple(operator.index(d) for d in shape)
  except TypeError:
    raise TypeError(f"Shapes must be 1-d sequences of concrete integers, got {shape}.") from None


def _index_tuple(xs):
  return (operator.index(xs),) if isinstance(xs, int) else tuple(operator.index(x) for x in xs)


def _check_shapelike(fun, arg, obj):
  """`obj` must be a tuple/list/ndarray of nonnegative integers."""
  if not isinstance(obj, (tuple, list, np.ndarray)):
    raise TypeError(f"{fun} {arg} must be a tuple, list or ndarray, got {type(obj)}.")
  if np.ndim(obj) != 1 and len(obj):
    raise TypeError(f"{fun} {arg} must be one-dimensional, got {obj}.")
  for d in obj:
    try:
      operator.index(d)
    except TypeError:
      raise TypeError(f"{fun} {arg} must contain only integers, got {tuple(obj)} with "
                      f"element types {tuple(type(e).__name__ for e in obj)}.") from None
  if any(d < 0 for d in obj):
    raise TypeError(f"{fun} {arg} must contain only nonnegative integers, got {tuple(obj)}.")


def _no_sharding(name, sharding):
  if sharding is not None:
    raise NotImplementedError(f"{name}: explicit output shardings are not supported by arrax.")


def _prim(name, abstract_eval, lowering, pp_params=None, multiple_results=False):
  prim = core.Primitive(name)
  prim.abstract_eval = abstract_eval
  prim.lowering = lowering
  prim.pp_params = pp_params
  prim.multiple_results = multiple_results
  return prim


def _out_type(ctx, i=0):
  return mlir.aval_to_ir_type(ctx.avals_out[i])


# ---- broadcast_in_dim -----------------------------------------------------------------------
def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions, sharding):
  _check_shapelike("broadcast_in_dim", "shape", shape)
  _check_shapelike("broadcast_in_dim", "broadcast_dimensions", broadcast_dimensions)
  dims = tuple(broadcast_dimensions)
  if len(dims) != x.ndim:
    raise TypeError(f"broadcast_in_dim needs one broadcast dimension per operand axis; got "
                    f"broadcast_dimensions {dims} for an operand of shape {x.shape}.")
  if len(shape) < x.ndim:
    raise TypeError(f"broadcast_in_dim cannot lower the rank: operand shape {x.shape}, target "
                    f"shape {tuple(shape)}.")
  if not all(d < len(shape) for d in dims):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions {dims} name axes outside the "
                    f"target shape {tuple(shape)} (operand shape {x.shape}).")
  if not all(x.shape[i] in (1, shape[d]) for i, d in enumerate(dims)):
    raise TypeError(f"broadcast_in_dim: every operand axis must have size 1 or the size of its "
                    f"target axis; got operand shape {x.shape}, target shape {tuple(shape)}, "
                    f"broadcast_dimensions {dims}.")
  if len(set(dims)) != len(dims):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must be distinct, got {dims}.")
  return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_lower(ctx, x, *, shape, broadcast_dimensions, sharding):
  return [hlo.broadcast_in_dim(_out_type(ctx), x, mlir.dense_i64(broadcast_dimensions))]


def _broadcast_in_dim_pp(params):
  # The shape and sharding are implied by the result type; empty dimensions are not shown.
  return {"broadcast_dimensions": params["broadcast_dimensions"]} \
      if params["broadcast_dimensions"] else {}


broadcast_in_dim_p = _prim("broadcast_in_dim", _broadcast_in_dim_abstract_eval,
                           _broadcast_in_dim_lower, _broadcast_in_dim_pp)


def _broadcast_in_dim_batch(args, dims, *, shape, broadcast_dimensions, sharding):
  from arrax._src import batching
  (x,), (bd,) = args, dims
  x = batching.moveaxis(x, bd, 0)
  aval = _aval(x)
  shape = aval.shape[:1] + tuple(shape)
  # NumPy integers in the shifted dimensions, as JAX's rule makes them (jaxprs print alike).
  bdims = (0,) + tuple(np.add(1, broadcast_dimensions))
  if _staging() and aval.shape == shape and list(bdims) == list(range(len(shape))):
    return x, 0
  return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=bdims, sharding=None), 0


broadcast_in_dim_p.batch = _broadcast_in_dim_batch


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
  """Broadcast `operand` to `shape`; operand axis i becomes result axis broadcast_dimensions[i]."""
  _no_sharding("broadcast_in_dim", out_sharding)
  shape = _canonicalize_shape(shape)
  dims = _index_tuple(broadcast_dimensions)
  if not isinstance(broadcast_dimensions, int):
    dims = tuple(broadcast_dimensions)   # NumPy integers are kept (and print) as in JAX
  operand = asarray_operand(operand)
  aval = _aval(operand)
  if aval.ndim == len(shape) and not dims and _is_array(operand):
    return operand
  if (_staging() and _is_array(operand) and aval.shape == shape
      and dims == tuple(range(len(shape)))):
    return operand   # an identity broadcast is forwarded while staging, as JAX does
  return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims, sharding=None)


def broadcast(operand, sizes, *, out_sharding=None):
  """Add leading axes of the given `sizes` to `operand`."""
  _no_sharding("broadcast", out_sharding)
  sizes = _canonicalize_shape(sizes)
  if not sizes:
    return _asarray(operand)
  shape = _aval(operand).shape
  dims = tuple(range(len(sizes), len(sizes) + len(shape)))
  return broadcast_in_dim(operand, sizes + shape, dims)


def broadcast_to_rank(x, rank):
  """Add leading axes of size 1 until `x` has `rank` axes."""
  ndim = _aval(x).ndim
  if ndim == rank:
    return _asarray(x)
  return broadcast(x, (1,) * (rank - ndim))


def expand_dims(array, dimensions):
  """Insert axes of size 1 at `dimensions` (positions in the result)."""
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"lax.expand_dims got a repeated axis: {dimensions}")
  shape = list(_aval(array).shape)
  ndim_out = len(shape) + len(dimensions)
  dims = [utils.canonicalize_axis(d, ndim_out) for d in dimensions]
  if len(set(dims)) != len(dims):
    raise ValueError(f"lax.expand_dims got a repeated axis: {dims}")
  for d in sorted(dims):
    shape.insert(d, 1)
  kept = [i for i in range(ndim_out) if i not in set(dims)]
  return broadcast_in_dim(array, shape, kept)


# ---- reshape ----------------------------------------------------------------------------------
def _reshape_abstract_eval(x, *, new_sizes, dimensions, sharding):
  if not all(d >= 0 for d in new_sizes):
    raise TypeError(f"reshape new_sizes must be nonnegative, got {new_sizes}.")
  if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
    raise TypeError(f"reshape dimensions {dimensions} are not a permutation of the axes of "
                    f"an operand of shape {x.shape}.")
  if math.prod(new_sizes) != x.size:
    raise ValueError(f"reshape cannot change the number of elements: operand shape {x.shape} "
                     f"({x.size} elements), new_sizes {new_sizes} "
                     f"({math.prod(new_sizes)} elements).")
  return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_lower(ctx, x, *, new_sizes, dimensions, sharding):
  if dimensions is not None:
    x = hlo.transpose(x, mlir.dense_i64(dimensions))
  return [hlo.reshape(_out_type(ctx), x)]


reshape_p = _prim("reshape", _reshape_abstract_eval, _reshape_lower)


def _reshape_batch(args, dims, *, new_sizes, dimensions, sharding):
  from arrax._src import batching
  (x,), (bd,) = args, dims
  x = batching.moveaxis(x, bd, 0)
  if dimensions is not None:
    dimensions = (0,) + tuple(d + 1 for d in dimensions)
  return reshape(x, _aval(x).shape[:1] + tuple(new_sizes), dimensions), 0


reshape_p.batch = _reshape_batch


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
  """Reshape `operand` to `new_sizes`, first transposing its axes by `dimensions` if given."""
  _no_sharding("reshape", out_sharding)
  new_sizes = _canonicalize_shape(new_sizes)
  operand = asarray_operand(operand)
  shape = _aval(operand).shape
  if dimensions is None:
    dims, same_dims = None, True
  else:
    dims = _index_tuple(dimensions)
    same_dims = dims == tuple(range(len(shape)))
  if shape and shape == new_sizes and same_dims and _is_array(operand):
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=None if same_dims else dims,
                        sharding=None)


def collapse(operand, start_dimension, stop_dimension=None):
  """Merge axes [start_dimension, stop_dimension) of `operand` into one axis."""
  shape = _aval(operand).shape
  lo, hi, _ = builtins.slice(start_dimension, stop_dimension).indices(len(shape))
  if hi < lo:
    raise ValueError(f"collapse got an empty or reversed axis range "
                     f"[{start_dimension}:{stop_dimension}] for shape {shape}")
  return reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


# ---- squeeze ----------------------------------------------------------------------------------
def _squeeze_abstract_eval(x, *, dimensions):
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"squeeze dimensions must be distinct, got {dimensions}")
  if not all(0 <= d < x.ndim for d in dimensions):
    raise ValueError(f"squeeze dimensions {dimensions} are out of range for shape {x.shape}")
  if any(x.shape[d] != 1 for d in dimensions):
    raise ValueError(f"squeeze can only remove axes of size 1; got shape {x.shape} and "
                     f"dimensions {dimensions}")
  shape = tuple(s for i, s in enumerate(x.shape) if i not in set(dimensions))
  return ShapedArray(shape, x.dtype, x.weak_type)


squeeze_p = _prim("squeeze", _squeeze_abstract_eval,
                  lambda ctx, x, *, dimensions: [hlo.reshape(_out_type(ctx), x)])


def _squeeze_batch(args, dims, *, dimensions):
  from arrax._src import batching
  (x,), (bd,) = args, dims
  x = batching.moveaxis(x, bd, 0)
  return squeeze(x, tuple(d + 1 for d in dimensions)), 0


squeeze_p.batch = _squeeze_batch


def squeeze(array, dimensions):
  """Remove the axes `dimensions` (each of size 1) from `array`."""
  array = asarray_operand(array)
  ndim = _aval(array).ndim
  dims = tuple(sorted(utils.canonicalize_axis(d, ndim) for d in dimensions))
  if not dims and _is_array(array):
    return array
  return squeeze_p.bind(array, dimensions=dims)


# ---- transpose and rev ------------------------------------------------------------------------
def _transpose_abstract_eval(x, *, permutation):
  if not isinstance(permutation, (tuple, list, np.ndarray)):
    raise TypeError(f"transpose permutation must be a tuple, list or ndarray, got "
                    f"{type(permutation)}.")
  if tuple(sorted(permutation)) != tuple(range(x.ndim)):
    raise TypeError(f"transpose permutation {permutation} is not a permutation of the axes of "
                    f"an operand of shape {x.shape}.")
  return ShapedArray(tuple(x.shape[i] for i in permutation), x.dtype, x.weak_type)


transpose_p = _prim("transpose", _transpose_abstract_eval,
                    lambda ctx, x, *, permutation: [hlo.transpose(x, mlir.dense_i64(permutation))])


def _transpose_batch(args, dims, *, permutation):
  (x,), (bd,) = args, dims
  perm = (bd,) + tuple(p if p < bd else p + 1 for p in permutation)
  return transpose(x, perm), 0


transpose_p.batch = _transpose_batch


def transpose(operand, permutation):
  """Permute the axes of `operand`: result axis i is operand axis permutation[i]."""
  permutation = tuple(operator.index(d) for d in permutation)
  operand = asarray_operand(operand)
  if permutation == tuple(range(_aval(operand).ndim)) and _is_array(operand):
    return operand
  return transpose_p.bind(operand, permutation=permutation)


def _rev_abstract_eval(x, *, dimensions):
  _check_shapelike("rev", "dimensions", dimensions)
  if len(set(dimensions)) != len(dimensions):
    raise TypeError(f"rev dimensions must be distinct, got {dimensions}.")
  if dimensions and max(dimensions) >= x.ndim:
    raise TypeError(f"rev dimensions {dimensions} are out of range for an operand of rank "
                    f"{x.ndim}.")
  return x


rev_p = _prim("rev", _rev_abstract_eval,
              lambda ctx, x, *, dimensions: [hlo.reverse(x, mlir.dense_i64(dimensions))])


def _rev_batch(args, dims, *, dimensions):
  (x,), (bd,) = args, dims
  return rev(x, tuple(d if d < bd else d + 1 for d in dimensions)), bd


rev_p.batch = _rev_batch


def rev(operand, dimensions):
  """Reverse `operand` along each axis in `dimensions`."""
  return rev_p.bind(asarray_operand(operand), dimensions=_index_tuple(dimensions))


# ---- slice ------------------------------------------------------------------------------------
def _slice_abstract_eval(x, *, start_indices, limit_indices, strides):
  _check_shapelike("slice", "start_indices", start_indices)
  _check_shapelike("slice", "limit_indices", limit_indices)
  if len(start_indices) != x.ndim:
    raise TypeError(f"slice needs one start index per operand axis; got start_indices "
                    f"{start_indices} for operand shape {x.shape}.")
  if len(limit_indices) != len(start_indices):
    raise TypeError(f"slice start_indices {start_indices} and limit_indices {limit_indices} "
                    "differ in length.")
  if not all(l <= d for l, d in zip(limit_indices, x.shape)):
    raise TypeError(f"slice limit_indices {limit_indices} exceed the operand shape {x.shape}.")
  if not all(l >= s for s, l in zip(start_indices, limit_indices)):
    raise TypeError(f"slice limit_indices {limit_indices} must not be smaller than "
                    f"start_indices {start_indices}.")
  sizes = tuple(int(l - s) for s, l in zip(start_indices, limit_indices))
  if strides is not None:
    _check_shapelike("slice", "strides", strides)
    if len(strides) != x.ndim:
      raise TypeError(f"slice needs one stride per operand axis; got strides {strides} for "
                      f"operand shape {x.shape}.")
    if not all(s > 0 for s in strides):
      raise TypeError(f"slice strides must be positive, got {strides}.")
    sizes = tuple(0 if n == 0 else int((n - 1) // s + 1) for n, s in zip(sizes, strides))
  return ShapedArray(sizes, x.dtype, x.weak_type)


def _slice_lower(ctx, x, *, start_indices, limit_indices, strides):
  strides = strides or (1,) * len(start_indices)
  return [hlo.slice(x, mlir.dense_i64(start_indices), mlir.dense_i64(limit_indices),
                    mlir.dense_i64(strides))]


slice_p = _prim("slice", _slice_abstract_eval, _slice_lower)


def _slice_batch(args, dims, *, start_indices, limit_indices, strides):
  (x,), (bd,) = args, dims
  ins = lambda seq, v: tuple(seq[:bd]) + (v,) + tuple(seq[bd:])  # noqa: E731
  return slice(x, ins(start_indices, 0), ins(limit_indices, _aval(x).shape[bd]),
               None if strides is None else ins(strides, 1)), bd


slice_p.batch = _slice_batch


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001
  """The static slice operand[start:limit:stride] along every axis."""
  return slice_p.bind(asarray_operand(operand), start_indices=_index_tuple(start_indices),
                      limit_indices=_index_tuple(limit_indices),
                      strides=None if strides is None else _index_tuple(strides))


def slice_in_dim(operand, start_index, limit_index, stride=1, axis=0):
  """operand[..., start:limit:stride] along the single axis `axis`; negative bounds wrap."""
  shape = _aval(operand).shape
  starts, limits, strides = [0] * len(shape), list(shape), [1] * len(shape)
  n = shape[axis]
  start = 0 if start_index is None else operator.index(start_index)
  limit = n if limit_index is None else operator.index(limit_index)
  start = start + n if start < 0 else start
  limit = limit + n if limit < 0 else limit
  axis = int(axis)
  starts[axis], limits[axis], strides[axis] = start, limit, operator.index(stride)
  return slice(operand, starts, limits, strides)


def index_in_dim(operand, index, axis=0, keepdims=True):
  """operand[..., index] along `axis` (static index; negative wraps), keeping the axis if asked."""
  index, axis = operator.index(index), int(axis)
  n = _aval(operand).shape[axis]
  wrapped = index + n if index < 0 else index
  if not 0 <= wrapped < n:
    raise IndexError(f"index {index} is out of bounds for axis {axis} with size {n}")
  out = slice_in_dim(operand, wrapped, wrapped + 1, 1, axis)
  return out if keepdims else squeeze(out, (axis,))


# ---- dynamic_slice and dynamic_update_slice ---------------------------------------------------
def _check_indices(name, operand, indices):
  if len(indices) != operand.ndim:
    raise TypeError(f"{name} needs one start index per operand axis; got {len(indices)} for "
                    f"operand shape {operand.shape}.")
  if any(i.ndim != 0 for i in indices):
    raise TypeError(f"{name} start indices must be scalars, got indices of shapes "
                    f"{[i.shape for i in indices]}.")
  if indices and (any(i.dtype != indices[0].dtype for i in indices)
                  or utils.dtype_class(indices[0].dtype) != utils.INT):
    raise TypeError(f"{name} start indices must be integers of one dtype, got "
                    f"{', '.join(i.dtype.name for i in indices)}.")


def _dynamic_slice_abstract_eval(x, *indices, slice_sizes):
  if len(slice_sizes) != x.ndim:
    raise TypeError(f"dynamic_slice needs one slice size per operand axis; got slice_sizes "
                    f"{slice_sizes} for operand shape {x.shape}.")
  if not all(s <= d for s, d in zip(slice_sizes, x.shape)):
    raise TypeError(f"dynamic_slice slice_sizes {slice_sizes} exceed the operand shape "
                    f"{x.shape}.")
  if not all(s >= 0 for s in slice_sizes):
    raise TypeError(f"dynamic_slice slice_sizes must be nonnegative, got {slice_sizes}.")
  _check_indices("dynamic_slice", x, indices)
  return ShapedArray(slice_sizes, x.dtype, x.weak_type)


def _dynamic_slice_lower(ctx, x, *indices, slice_sizes):
  # XLA clamps the start indices so that the whole slice lies inside the operand.
  return [hlo.dynamic_slice(x, list(indices), mlir.dense_i64(slice_sizes))]


dynamic_slice_p = _prim("dynamic_slice", _dynamic_slice_abstract_eval, _dynamic_slice_lower)


def _dynamic_update_slice_abstract_eval(x, update, *indices):
  if update.ndim != x.ndim:
    raise TypeError(f"dynamic_update_slice update must have the operand's rank; got update "
                    f"shape {update.shape} for operand shape {x.shape}.")
  if not all(u <= d for u, d in zip(update.shape, x.shape)):
    raise TypeError(f"dynamic_update_slice update shape {update.shape} does not fit in the "
                    f"operand shape {x.shape}.")
  if update.dtype != x.dtype:
    raise TypeError(f"lax.dynamic_update_slice requires operand and update of one dtype, got "
                    f"{x.dtype.name}, {update.dtype.name}.")
  _check_indices("dynamic_update_slice", x, indices)
  return ShapedArray(x.shape, x.dtype, utils.weak_of([x, update, *indices]))


dynamic_update_slice_p = _prim(
    "dynamic_update_slice", _dynamic_update_slice_abstract_eval,
    lambda ctx, x, update, *indices: [hlo.dynamic_update_slice(x, update, list(indices))])


def _batch_dynamic_slice_indices(indices, dims):
  """The scalar start indices stacked into one index vector (with a leading batch axis if any
  index is batched), and that batch axis (0 or None)."""
  if not indices:
    return np.zeros((0,), np.int32), None
  size = next((_aval(i).shape[d] for i, d in zip(indices, dims) if d is not None), None)
  if size is None:
    return concatenate([broadcast(i, (1,)) for i in indices], 0), None
  return concatenate([broadcast_in_dim(i, (size, 1), () if d is None else (0,))
                      for i, d in zip(indices, dims)], 1), 0


def _dynamic_slice_batch(args, dims, *, slice_sizes):
  # A dynamic slice is a clamped gather of one window; batch it as that gather.
  from arrax._src.lax import slicing
  (x, *indices), (x_bd, *index_bds) = args, dims
  axes = tuple(range(len(indices)))
  dnums = slicing.GatherDimensionNumbers(offset_dims=axes, collapsed_slice_dims=(),
                                         start_index_map=axes)
  index, index_bd = _batch_dynamic_slice_indices(indices, index_bds)
  return slicing._gather_batch(
      [x, index], [x_bd, index_bd], dimension_numbers=dnums, slice_sizes=slice_sizes,
      unique_indices=True, indices_are_sorted=True, mode=slicing.GatherScatterMode.CLIP,
      fill_value=None)


dynamic_slice_p.batch = _dynamic_slice_batch


def _dynamic_update_slice_batch(args, dims):
  # A dynamic update slice is a clamped scatter of one window; batch it as that scatter.
  from arrax._src.lax import slicing
  (x, update, *indices), (x_bd, update_bd, *index_bds) = args, dims
  axes = tuple(range(len(indices)))
  dnums = slicing.ScatterDimensionNumbers(update_window_dims=axes, inserted_window_dims=(),
                                          scatter_dims_to_operand_dims=axes)
  index, index_bd = _batch_dynamic_slice_indices(indices, index_bds)
  return slicing._scatter_batch(
      slicing.scatter_p, [x, index, update], [x_bd, index_bd, update_bd],
      dimension_numbers=dnums, indices_are_sorted=True, unique_indices=True,
      mode=slicing.GatherScatterMode.CLIP, update_jaxpr=None, update_consts=())


dynamic_update_slice_p.batch = _dynamic_update_slice_batch


def _index_dtype(i):
  return dtypes.dtype_and_weak_type(i)[0]


def _unstack_indices(indices):
  """The scalar elements of a 1-d array of indices."""
  if _aval(indices).ndim != 1:
    raise ValueError(f"dynamic slice indices must be a 1-d sequence, got an array of shape "
                     f"{_aval(indices).shape}")
  return [index_in_dim(indices, k, keepdims=False) for k in range(_aval(indices).shape[0])]


def _dynamic_slice_indices(shape, start_indices, allow_negative_indices):
  """Start indices as scalar operands; negative ones count from the end of their axis."""
  if len(start_indices) != len(shape):
    raise ValueError(f"dynamic slicing needs one start index per operand axis: got "
                     f"{len(start_indices)} indices for operand shape {shape}")
  if isinstance(start_indices, np.ndarray):
    if start_indices.ndim != 1:
      raise ValueError(f"dynamic slice indices must be a 1-d sequence, got an array of shape "
                       f"{start_indices.shape}")
    start_indices = list(start_indices)
  elif not isinstance(start_indices, Sequence):
    start_indices = _unstack_indices(start_indices)
  if isinstance(allow_negative_indices, bool):
    allow_negative_indices = [allow_negative_indices] * len(shape)
  out = []
  for i, d, allow_negative in zip(start_indices, shape, allow_negative_indices):
    if isinstance(i, Literal):
      i = i.val   # a constant: handle it statically like a NumPy scalar
    dt = _index_dtype(i)
    if dt.kind == "u":
      out.append(asarray_operand(i))
    elif isinstance(i, (int, np.integer)):
      i = int(i)
      if i < 0 and not allow_negative:
        raise ValueError(f"Index {i} is out of bounds for an axis of size {d} when "
                         "allow_negative_indices=False")
      out.append(scalar_literal(i + d if i < 0 else i, dt))
    elif isinstance(i, np.ndarray) and i.ndim == 0 and i.dtype.kind == "i":
      out.append(scalar_literal(int(i) + d if (allow_negative and i < 0) else int(i), dt))
    elif allow_negative:
      i = asarray_operand(i)
      is_neg = lax_api.lt(i, scalar_literal(0, dt, weak_type=True))
      wrapped = lax_api.add(lax_api._convert_element_type(i, dt), scalar_literal(d, dt))
      out.append(lax_api.select(is_neg, wrapped, i))
    else:
      out.append(asarray_operand(i))
  return out


def dynamic_slice(operand, start_indices, slice_sizes, *, allow_negative_indices=True):
  """The slice of static size `slice_sizes` at traced `start_indices`, clamped into bounds."""
  operand = asarray_operand(operand)
  indices = _dynamic_slice_indices(_aval(operand).shape, start_indices, allow_negative_indices)
  return dynamic_slice_p.bind(operand, *indices, slice_sizes=_canonicalize_shape(slice_sizes))


def dynamic_update_slice(operand, update, start_indices, *, allow_negative_indices=True):
  """`operand` with `update` written at traced `start_indices` (clamped into bounds)."""
  operand = asarray_operand(operand)
  indices = _dynamic_slice_indices(_aval(operand).shape, start_indices, allow_negative_indices)
  return dynamic_update_slice_p.bind(operand, asarray_operand(update), *indices)


def _zero_index_like(index):
  """A 0 of the index's dtype: a Python 0 for Python ints, else a typed scalar literal."""
  if type(index) is int:
    return 0
  return np.zeros((), _index_dtype(index))


def dynamic_slice_in_dim(operand, start_index, slice_size, axis=0, *,
                         allow_negative_indices=True):
  """dynamic_slice along the single axis `axis`, taking `slice_size` elements."""
  shape = _aval(operand).shape
  axis = int(axis)
  starts = [_zero_index_like(start_index)] * len(shape)
  starts[axis] = start_index
  sizes = list(shape)
  sizes[axis] = operator.index(slice_size)
  allow = [False] * len(shape)
  allow[axis] = allow_negative_indices
  return dynamic_slice(operand, starts, sizes, allow_negative_indices=allow)


def _dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *,
                          allow_negative_indices=True):
  out = dynamic_slice_in_dim(operand, index, 1, axis,
                             allow_negative_indices=allow_negative_indices)
  return out if keepdims else squeeze(out, (axis,))


_dynamic_index_in_dim.__name__ = "dynamic_index_in_dim"
_dynamic_index_in_dim_jit = jit(_dynamic_index_in_dim,
                                static_argnames=("axis", "keepdims", "allow_negative_indices"))


def dynamic_index_in_dim(operand, index, axis=0, keepdims=True, *, allow_negative_indices=True):
  """operand[..., index] along `axis` for a traced `index`, keeping the axis if asked."""
  return _dynamic_index_in_dim_jit(operand, index, axis, keepdims,
                                   allow_negative_indices=allow_negative_indices)


def dynamic_update_slice_in_dim(operand, update, start_index, axis, *,
                                allow_negative_indices=True):
  """dynamic_update_slice along the single axis `axis`."""
  ndim = _aval(operand).ndim
  axis = int(axis)
  starts = [_zero_index_like(start_index)] * ndim
  starts[axis] = start_index
  allow = [False] * ndim
  allow[axis] = allow_negative_indices
  return dynamic_update_slice(operand, update, starts, allow_negative_indices=allow)


def _dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
  axis = int(axis)
  if _aval(update).ndim != _aval(operand).ndim:
    update = expand_dims(update, (axis,))
  return dynamic_update_slice_in_dim(operand, update, index, axis,
                                     allow_negative_indices=allow_negative_indices)


_dynamic_update_index_in_dim.__name__ = "dynamic_update_index_in_dim"
_dynamic_update_index_in_dim_jit = jit(_dynamic_update_index_in_dim,
                                       static_argnames=("axis", "allow_negative_indices"))


def dynamic_update_index_in_dim(operand, update, index, axis, *, allow_negative_indices=True):
  """Write `update` (with or without the size-1 axis) at traced `index` along `axis`."""
  return _dynamic_update_index_in_dim_jit(operand, update, index, axis,
                                          allow_negative_indices=allow_negative_indices)


# ---- concatenate and split ----------------------------------------------------------------------
def _concatenate_abstract_eval(*xs, dimension):
  if not xs:
    raise TypeError("concatenate needs at least one operand.")
  shapes = ", ".join(str(x.shape) for x in xs)
  if len({x.ndim for x in xs}) != 1:
    raise TypeError(f"concatenate operands must have one rank, got shapes {shapes}.")
  if not 0 <= dimension < xs[0].ndim:
    raise TypeError(f"concatenate dimension {dimension} is out of range for shapes {shapes}.")
  rest = {x.shape[:dimension] + x.shape[dimension + 1:] for x in xs}
  if len(rest) != 1:
    raise TypeError(f"concatenate operands may differ only along dimension {dimension}; got "
                    f"shapes {shapes}.")
  utils.same_dtypes("concatenate", xs)
  shape = list(xs[0].shape)
  shape[dimension] = sum(x.shape[dimension] for x in xs)
  return ShapedArray(shape, xs[0].dtype, utils.weak_of(xs))


concatenate_p = _prim(
    "concatenate", _concatenate_abstract_eval,
    lambda ctx, *xs, dimension: [hlo.concatenate(list(xs), mlir.i64_attr(dimension))])


def _concatenate_batch(args, dims, *, dimension):
  from arrax._src import batching
  size = next(_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  xs = [broadcast(x, (size,)) if d is None else batching.moveaxis(x, d, 0)
        for x, d in zip(args, dims)]
  return concatenate(xs, dimension + 1), 0


concatenate_p.batch = _concatenate_batch


def concatenate(operands, dimension):
  """Join `operands` along the existing axis `dimension`."""
  if len(operands) == 0:
    raise ValueError("concatenate needs a non-empty sequence of arrays")
  if len(operands) == 1 and _is_array(operands[0]):
    return operands[0]
  return concatenate_p.bind(*map(asarray_operand, operands), dimension=operator.index(dimension))


def _split_abstract_eval(x, *, sizes, axis):
  if any(s < 0 for s in sizes):
    raise ValueError(f"split sizes must be nonnegative, got {list(sizes)}")
  if not 0 <= axis < x.ndim:
    raise ValueError(f"split axis {axis} is out of range for shape {x.shape}")
  if sum(sizes) != x.shape[axis]:
    raise ValueError(f"split sizes {list(sizes)} add up to {sum(sizes)}, but axis {axis} of "
                     f"shape {list(x.shape)} has size {x.shape[axis]}")
  return [ShapedArray(x.shape[:axis] + (s,) + x.shape[axis + 1:], x.dtype, x.weak_type)
          for s in sizes]


def _split_lower(ctx, x, *, sizes, axis):
  shape = ctx.avals_in[0].shape
  starts, limits, outs = [0] * len(shape), list(shape), []
  for s in sizes:
    limits[axis] = starts[axis] + s
    outs.append(hlo.slice(x, mlir.dense_i64(starts), mlir.dense_i64(limits),
                          mlir.dense_i64([1] * len(shape))))
    starts[axis] = limits[axis]
  return outs


split_p = _prim("split", _split_abstract_eval, _split_lower, multiple_results=True)


def _split_batch(args, dims, *, sizes, axis):
  (x,), (bd,) = args, dims
  return split(x, sizes, axis + 1 if axis >= bd else axis), [bd] * len(sizes)


split_p.batch = _split_batch


def split(operand, sizes, axis=0):
  """Cut `operand` along `axis` into consecutive pieces of the given `sizes`."""
  operand = asarray_operand(operand)
  axis = utils.canonicalize_axis(axis, _aval(operand).ndim)
  return split_p.bind(operand, sizes=_index_tuple(sizes), axis=axis)


# ---- pad --------------------------------------------------------------------------------------
def _pad_abstract_eval(x, padding_value, *, padding_config):
  if x.dtype != padding_value.dtype:
    raise TypeError(f"pad needs operand and padding_value of one dtype, got "
                    f"{x.dtype.name} and {padding_value.dtype.name}.")
  if padding_value.ndim != 0:
    raise ValueError(f"pad padding_value must be a scalar, got shape {padding_value.shape}")
  if len(padding_config) != x.ndim:
    raise ValueError(f"pad needs one (low, high, interior) triple per operand axis; got "
                     f"padding_config {padding_config} for operand shape {x.shape}")
  if any(i < 0 for _, _, i in padding_config):
    raise ValueError(f"pad interior padding must be nonnegative, got padding_config "
                     f"{padding_config}")
  shape = tuple(int(lo + hi + (0 if d == 0 else d + (d - 1) * i))
                for (lo, hi, i), d in zip(padding_config, x.shape))
  if any(d < 0 for d in shape):
    raise ValueError(f"pad would give a negative result shape {shape} for padding_config "
                     f"{padding_config} and operand shape {x.shape}")
  return ShapedArray(shape, x.dtype, utils.weak_of([x, padding_value]))


def _pad_lower(ctx, x, padding_value, *, padding_config):
  lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
  return [hlo.pad(x, padding_value, mlir.dense_i64(lo), mlir.dense_i64(hi),
                  mlir.dense_i64(interior))]


pad_p = _prim("pad", _pad_abstract_eval, _pad_lower)


def _pad_batch(args, dims, *, padding_config):
  (x, padding_value), (x_bd, pv_bd) = args, dims
  if x_bd is None:
    x, x_bd = broadcast(x, _aval(padding_value).shape[:1]), 0
  config = list(padding_config)
  config.insert(x_bd, (0, 0, 0))
  if pv_bd is None:
    return pad(x, padding_value, config), x_bd
  # A per-example padding value: pad with zeros, then select the value where the mask of
  # original elements (padded with False) is off.
  aval = _aval(x)
  padded = pad(x, scalar_literal(0, aval.dtype, aval.weak_type), config)
  mask = pad(broadcast(scalar_literal(True, np.bool_), aval.shape), False, config)
  fill = broadcast_in_dim(padding_value, _aval(padded).shape, (x_bd,))
  return lax_api.select(mask, padded, fill), x_bd


pad_p.batch = _pad_batch


def pad(operand, padding_value, padding_config):
  """Pad each axis by (low, high, interior) copies of `padding_value`; negative edges crop."""
  config = tuple(tuple(triple) for triple in padding_config)
  for p in (p for triple in config for p in triple):
    operator.index(p)   # integers only; kept as given (np.int64 prints as such, as in JAX)
  return pad_p.bind(asarray_operand(operand), asarray_operand(padding_value),
                    padding_config=config)


# ---- iota -------------------------------------------------------------------------------------
def _iota_abstract_eval(*, dtype, shape, dimension, sharding):
  _check_shapelike("iota", "shape", shape)
  if utils.dtype_class(dtype) not in utils.NUM:
    raise TypeError(f"iota does not accept dtype {np.dtype(dtype).name}; it needs an integer, "
                    "floating or complex dtype.")
  if not 0 <= dimension < len(shape):
    raise ValueError(f"iota dimension {dimension} is out of range for shape {shape}")
  return ShapedArray(shape, dtype, False)


iota_p = _prim("iota", _iota_abstract_eval,
               lambda ctx, *, dtype, shape, dimension, sharding:
               [hlo.iota(_out_type(ctx), mlir.i64_attr(dimension))])


def _iota_batch(args, dims, **params):
  # iota has no operands, so it is never batched; vmap binds it unchanged.
  return iota_p.bind(**params), None


iota_p.batch = _iota_batch


def broadcasted_iota(dtype, shape, dimension, *, out_sharding=None):
  """An array of `shape` whose values count 0, 1, ... along axis `dimension`."""
  _no_sharding("broadcasted_iota", out_sharding)
  dtype = dtypes.check_user_dtype(dtype, "broadcasted_iota")
  return iota_p.bind(dtype=dtype, shape=_canonicalize_shape(shape),
                     dimension=operator.index(dimension), sharding=None)


def iota(dtype, size):
  """The vector [0, 1, ..., size - 1] of `dtype`."""
  return broadcasted_iota(dtype, (size,), 0)


# ---- differentiation rules -------------------------------------------------------------------
# Every primitive here is linear. JVPs apply the primitive to the tangents; transposes follow
# JAX's (a reduce_sum for a broadcast, a pad for a slice, a slice for a pad, a split for a
# concatenate...) with the same parameters, so that grad jaxprs print like JAX's.
from arrax._src import ad  # noqa: E402


def _full(shape, value, dtype, weak_type=False):
  """`value` broadcast to `shape` (a literal when rank 0), like JAX's lax.full."""
  fill = scalar_literal(value, dtype, weak_type)
  if not shape:
    return fill
  return broadcast_in_dim_p.bind(fill, shape=tuple(shape), broadcast_dimensions=(),
                                 sharding=None)


def _full_like(x, value, shape=None, dtype=None):
  """`value` with the dtype (and weak type, unless `dtype` is given) and shape of `x`."""
  aval = _aval(x)
  weak = dtype is None and aval.weak_type
  return _full(aval.shape if shape is None else shape, value,
               aval.dtype if dtype is None else dtype, weak)


def _zero_scalar(x):
  """A strongly typed rank-0 zero of `x`'s dtype (JAX's `_const(x, 0)`)."""
  return scalar_literal(0, _aval(x).dtype)


def _reduce_sum(x, axes):
  from arrax._src.lax import reductions
  return reductions.reduce_sum(x, axes)


def _broadcast_in_dim_jvp(primals, tangents, *, shape, broadcast_dimensions, sharding):
  (x,), (t,) = primals, tangents
  params = dict(shape=shape, broadcast_dimensions=broadcast_dimensions, sharding=sharding)
  out = broadcast_in_dim_p.bind(x, **params)
  if type(t) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(_aval(out)))
  return out, broadcast_in_dim_p.bind(t, **params)


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions, sharding):
  if not ad.is_undefined(x):
    return [None]
  # Sum over the new axes and the axes broadcast from size 1 (which are put back).
  unit_dims = [i for i, d in enumerate(x.aval.shape) if d == 1]
  kept = tuple(d for i, d in enumerate(broadcast_dimensions) if i not in unit_dims)
  axes = tuple(i for i in range(len(shape)) if i not in kept)
  return [expand_dims(_reduce_sum(ct, axes), unit_dims)]


broadcast_in_dim_p.jvp = _broadcast_in_dim_jvp
broadcast_in_dim_p.transpose = _broadcast_in_dim_transpose


def _reshape_transpose(ct, x, *, new_sizes, dimensions, sharding):
  if dimensions is None:
    return [reshape(ct, x.aval.shape)]
  out = reshape(ct, tuple(x.aval.shape[d] for d in dimensions))
  return [transpose(out, np.argsort(dimensions))]


ad.deflinear(reshape_p, _reshape_transpose)
ad.deflinear(squeeze_p, lambda ct, x, *, dimensions: [expand_dims(ct, dimensions)])
ad.deflinear(transpose_p,
             lambda ct, x, *, permutation: [transpose(ct, np.argsort(permutation))])
ad.deflinear(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])


def _slice_transpose(ct, x, *, start_indices, limit_indices, strides):
  # Pad the cotangent back to the operand's shape (interior padding undoes the strides).
  shape = x.aval.shape
  if strides is None or all(s == 1 for s in strides):
    config = zip(start_indices, np.subtract(shape, limit_indices), (0,) * len(start_indices))
  else:
    ct_shape = _aval(ct).shape
    real_limits = np.add(start_indices, np.where(
        np.array(ct_shape) == 0, 0, np.add(1, np.multiply(np.subtract(ct_shape, 1), strides))))
    config = zip(start_indices, np.subtract(shape, real_limits), np.subtract(strides, 1))
  return [pad_p.bind(ct, _zero_scalar(ct), padding_config=tuple(config))]


ad.deflinear(slice_p, _slice_transpose)


def _dynamic_slice_jvp(primals, tangents, *, slice_sizes):
  x, *indices = primals
  out = dynamic_slice_p.bind(x, *indices, slice_sizes=slice_sizes)
  t = tangents[0]
  if type(t) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(_aval(out)))
  return out, dynamic_slice_p.bind(t, *indices, slice_sizes=slice_sizes)


def _dynamic_slice_transpose(ct, x, *indices, slice_sizes):
  if any(ad.is_undefined(i) for i in indices):
    raise NotImplementedError("dynamic_slice cannot be transposed in its start indices")
  zeros = _full(x.aval.shape, 0, x.aval.dtype)
  return [dynamic_update_slice_p.bind(zeros, ct, *indices)] + [None] * len(indices)


dynamic_slice_p.jvp = _dynamic_slice_jvp
dynamic_slice_p.transpose = _dynamic_slice_transpose


def _dynamic_update_slice_jvp(primals, tangents):
  x, update, *indices = primals
  tx, tu = tangents[:2]
  out = dynamic_update_slice_p.bind(x, update, *indices)
  if type(tx) is ad.Zero and type(tu) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(_aval(out)))
  return out, dynamic_update_slice_p.bind(ad.instantiate(tx), ad.instantiate(tu), *indices)


def _dynamic_update_slice_transpose(ct, x, update, *indices):
  if any(ad.is_undefined(i) for i in indices):
    raise NotImplementedError("dynamic_update_slice cannot be transposed in its start indices")
  update_shape = update.aval.shape if ad.is_undefined(update) else _aval(update).shape
  ct_x = ct_update = None
  if ad.is_undefined(x):
    zeros = _full_like(ct, 0, shape=update_shape)
    ct_x = dynamic_update_slice_p.bind(ct, zeros, *indices)
  if ad.is_undefined(update):
    ct_update = dynamic_slice_p.bind(ct, *indices, slice_sizes=tuple(update_shape))
  return [ct_x, ct_update] + [None] * len(indices)


dynamic_update_slice_p.jvp = _dynamic_update_slice_jvp
dynamic_update_slice_p.transpose = _dynamic_update_slice_transpose


def _concatenate_transpose(ct, *xs, dimension):
  sizes = tuple((x.aval if ad.is_undefined(x) else _aval(x)).shape[dimension] for x in xs)
  return split(ct, sizes, axis=dimension)


ad.deflinear(concatenate_p, _concatenate_transpose)


def _split_transpose(cts, x, *, sizes, axis):
  if all(type(c) is ad.Zero for c in cts):
    return [ad.Zero(x.aval)]
  return [concatenate([ad.instantiate(c) for c in cts], axis)]


ad.deflinear(split_p, _split_transpose)


def _pad_transpose(ct, x, padding_value, *, padding_config):
  lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
  ndim = len(padding_config)

  def operand_ct():
    # Negative edge padding crops the edges away; a strided slice drops the interior.
    unpad = tuple(zip(np.negative(lo), np.negative(hi), np.zeros_like(interior)))
    unpadded = pad_p.bind(ct, _zero_scalar(ct), padding_config=unpad)
    return slice_p.bind(unpadded, start_indices=tuple(np.zeros_like(lo)),
                        limit_indices=tuple(int(d) for d in _aval(unpadded).shape),
                        strides=tuple(np.add(interior, 1)))

  ct_x = operand_ct() if ad.is_undefined(x) else None
  ct_pv = None
  if ad.is_undefined(padding_value):
    # Everything that is not the operand came from the padding value.
    inner = operand_ct() if ct_x is None else ct_x
    ct_pv = lax_api.sub(_reduce_sum(ct, tuple(range(ndim))),
                        _reduce_sum(inner, tuple(range(ndim))))
  return [ct_x, ct_pv]


ad.deflinear(pad_p, _pad_transpose)


def _broadcast_in_dim_keep(x, shape, dims):
  """broadcast_in_dim as lax's wrapper does it, keeping `dims` as given (JAX's transposes pass
  NumPy integers, which its jaxprs print as such)."""
  aval = _aval(x)
  if aval.ndim == len(shape) and not len(dims) and _is_array(x):
    return x
  if _staging() and _is_array(x) and aval.shape == tuple(shape) and \
      list(dims) == list(range(len(shape))):
    return x
  return broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=tuple(dims),
                                 sharding=None)
