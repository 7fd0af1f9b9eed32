"""Structural primitives: reversing, slicing (static and dynamic), concatenation, split and
padding, with lax's wrappers over them (broadcasting, reshaping, transposing and iota are in
lax/broadcasting.py, re-exported here).

None of them computes on values; each lowers to one StableHLO op (split to several slices).
Shape params are tuples of Python ints, as JAX records them, so jaxprs print the same. Every
primitive here is linear: JVPs apply the primitive to the tangents; transposes follow JAX's (a
pad for a slice, a slice for a pad, a split for a concatenate...) with the same parameters, so
that grad jaxprs print like JAX's. Each primitive's rules follow its definition.
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, dtypes, mlir
from arrax._src.core import Literal, ShapedArray
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax_api
from arrax._src.lax import slicing, utils
# The shape primitives below these ones (the modules above use them through this one too).
from arrax._src.lax.broadcasting import (_full, _full_like, _zero_scalar, broadcast,  # noqa: F401
                                         broadcast_in_dim, broadcast_in_dim_p, broadcast_to_rank,
                                         broadcasted_iota, collapse, expand_dims, iota, iota_p,
                                         reduce_sum, reshape, reshape_p, squeeze, squeeze_p,
                                         transpose, transpose_p)
from arrax._src.lax.utils import (_aval, _canonicalize_shape, _check_shapelike, _index_tuple,
                                  _is_array, _prim, asarray_operand, scalar_literal)

__all__ = [
    "concatenate", "dynamic_index_in_dim", "dynamic_slice", "dynamic_slice_in_dim",
    "dynamic_update_index_in_dim", "dynamic_update_slice", "dynamic_update_slice_in_dim",
    "index_in_dim", "pad", "rev", "slice", "slice_in_dim", "split",
]


# ---- rev ----------------------------------------------------------------------------------------


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


rev_p.def_batch(_rev_batch)


ad.deflinear(rev_p, lambda ct, x, *, dimensions: [rev(ct, dimensions)])


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
  sizes = tuple(l - s if mlir.is_symbolic(l - s) else int(l - s)
                for s, l in zip(start_indices, limit_indices))
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
  if any(mlir.is_symbolic(d) for d in (*start_indices, *limit_indices)):   # jax.export
    return [hlo.real_dynamic_slice(mlir.aval_to_ir_type(ctx.avals_out[0]), x,
                                   mlir.shape_tensor(start_indices),
                                   mlir.shape_tensor(limit_indices), mlir.shape_tensor(strides))]
  return [hlo.slice(x, mlir.dense_i64(start_indices), mlir.dense_i64(limit_indices),
                    mlir.dense_i64(strides))]


slice_p = _prim("slice", _slice_abstract_eval, _slice_lower)


def _slice_batch(args, dims, *, start_indices, limit_indices, strides):
  (x,), (bd,) = args, dims
  ins = lambda seq, v: tuple(seq[:bd]) + (v,) + tuple(seq[bd:])  # noqa: E731
  return slice(x, ins(start_indices, 0), ins(limit_indices, _aval(x).shape[bd]),
               None if strides is None else ins(strides, 1)), bd


slice_p.def_batch(_slice_batch)


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


def _dim(d):
  """An int, or a symbolic dimension (jax.export) as it is."""
  return d if mlir.is_symbolic(d) else int(d)


def _dims_tuple(xs):
  """Static indices (ints, or symbolic dimensions of jax.export)."""
  return tuple(x if mlir.is_symbolic(x) else operator.index(x) for x in xs)


def slice(operand, start_indices, limit_indices, strides=None):  # noqa: A001
  """The static slice operand[start:limit:stride] along every axis."""
  return slice_p.bind(asarray_operand(operand), start_indices=_dims_tuple(start_indices),
                      limit_indices=_dims_tuple(limit_indices),
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
  (x, *indices), (x_bd, *index_bds) = args, dims
  axes = tuple(range(len(indices)))
  dnums = slicing.GatherDimensionNumbers(offset_dims=axes, collapsed_slice_dims=(),
                                         start_index_map=axes)
  index, index_bd = _batch_dynamic_slice_indices(indices, index_bds)
  return slicing._gather_batch(
      [x, index], [x_bd, index_bd], dimension_numbers=dnums, slice_sizes=slice_sizes,
      unique_indices=True, indices_are_sorted=True, mode=slicing.GatherScatterMode.CLIP,
      fill_value=None)


dynamic_slice_p.def_batch(_dynamic_slice_batch)


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


dynamic_slice_p.def_jvp(_dynamic_slice_jvp)
dynamic_slice_p.def_transpose(_dynamic_slice_transpose)


def _dynamic_update_slice_batch(args, dims):
  # A dynamic update slice is a clamped scatter of one window; batch it as that scatter.
  (x, update, *indices), (x_bd, update_bd, *index_bds) = args, dims
  axes = tuple(range(len(indices)))
  dnums = slicing.ScatterDimensionNumbers(update_window_dims=axes, inserted_window_dims=(),
                                          scatter_dims_to_operand_dims=axes)
  index, index_bd = _batch_dynamic_slice_indices(indices, index_bds)
  return slicing._scatter_batch(
      slicing.scatter_p, [x, index, update], [x_bd, index_bd, update_bd],
      dimension_numbers=dnums, indices_are_sorted=True, unique_indices=True,
      mode=slicing.GatherScatterMode.CLIP, update_jaxpr=None, update_consts=())


dynamic_update_slice_p.def_batch(_dynamic_update_slice_batch)


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


dynamic_update_slice_p.def_jvp(_dynamic_update_slice_jvp)
dynamic_update_slice_p.def_transpose(_dynamic_update_slice_transpose)


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
  size = next(_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  xs = [broadcast(x, (size,)) if d is None else batching.moveaxis(x, d, 0)
        for x, d in zip(args, dims)]
  return concatenate(xs, dimension + 1), 0


concatenate_p.def_batch(_concatenate_batch)


def _concatenate_transpose(ct, *xs, dimension):
  sizes = tuple((x.aval if ad.is_undefined(x) else _aval(x)).shape[dimension] for x in xs)
  return split(ct, sizes, axis=dimension)


ad.deflinear(concatenate_p, _concatenate_transpose)


def concatenate(operands, dimension):
  """Join `operands` along the existing axis `dimension`."""
  if not isinstance(operands, (list, tuple)):
    operands = tuple(operands)   # (a dict gives its keys, which are then rejected, as in JAX)
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
  symbolic = any(mlir.is_symbolic(d) for d in (*shape, *sizes))   # jax.export
  for s, aval in zip(sizes, ctx.avals_out):
    limits[axis] = starts[axis] + s
    if symbolic:
      outs.append(hlo.real_dynamic_slice(
          mlir.aval_to_ir_type(aval), x, mlir.shape_tensor(starts), mlir.shape_tensor(limits),
          mlir.shape_tensor([1] * len(shape))))
    else:
      outs.append(hlo.slice(x, mlir.dense_i64(starts), mlir.dense_i64(limits),
                            mlir.dense_i64([1] * len(shape))))
    starts[axis] = limits[axis]
  return outs


split_p = _prim("split", _split_abstract_eval, _split_lower, multiple_results=True)


def _split_batch(args, dims, *, sizes, axis):
  (x,), (bd,) = args, dims
  return split(x, sizes, axis + 1 if axis >= bd else axis), [bd] * len(sizes)


split_p.def_batch(_split_batch)


def _split_transpose(cts, x, *, sizes, axis):
  if all(type(c) is ad.Zero for c in cts):
    return [ad.Zero(x.aval)]
  return [concatenate([ad.instantiate(c) for c in cts], axis)]


ad.deflinear(split_p, _split_transpose)


def split(operand, sizes, axis=0):
  """Cut `operand` along `axis` into consecutive pieces of the given `sizes`."""
  operand = asarray_operand(operand)
  axis = utils.canonicalize_axis(axis, _aval(operand).ndim)
  _dims_tuple(sizes)   # integers (the parameter keeps the caller's integer types, as JAX)
  return split_p.bind(operand, sizes=tuple(sizes), axis=axis)


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
  shape = tuple(_dim(lo + hi + (0 if d == 0 else d + (d - 1) * i))
                for (lo, hi, i), d in zip(padding_config, x.shape))
  if any(d < 0 for d in shape):
    raise ValueError(f"pad would give a negative result shape {shape} for padding_config "
                     f"{padding_config} and operand shape {x.shape}")
  return ShapedArray(shape, x.dtype, utils.weak_of([x, padding_value]))


def _pad_lower(ctx, x, padding_value, *, padding_config):
  lo, hi, interior = zip(*padding_config) if padding_config else ((), (), ())
  if any(mlir.is_symbolic(d) for d in (*lo, *hi)):   # jax.export with symbolic shapes
    return [hlo.dynamic_pad(mlir.aval_to_ir_type(ctx.avals_out[0]), x, padding_value,
                            mlir.shape_tensor(lo), mlir.shape_tensor(hi),
                            mlir.shape_tensor(interior))]
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


pad_p.def_batch(_pad_batch)


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
    ct_pv = lax_api.sub(reduce_sum(ct, tuple(range(ndim))),
                        reduce_sum(inner, tuple(range(ndim))))
  return [ct_x, ct_pv]


ad.deflinear(pad_p, _pad_transpose)


def pad(operand, padding_value, padding_config):
  """Pad each axis by (low, high, interior) copies of `padding_value`; negative edges crop."""
  config = tuple(tuple(triple) for triple in padding_config)
  for p in (p for triple in config for p in triple):
    operator.index(p)   # integers only; kept as given (np.int64 prints as such, as in JAX)
  return pad_p.bind(asarray_operand(operand), asarray_operand(padding_value),
                    padding_config=config)
