"""NumPy-style indexing with JAX's semantics: `x[idx]`, `jnp.take` and the `x.at[idx]` helpers.

An index is first parsed against the array's shape into one entry per index element. Reads
then take the cheapest route that applies, as JAX does: a static `slice` (static ints and
slices), a `dynamic_slice` (traced scalar ints, unit-step slices), else one `gather`. Updates
(`x.at[idx].set(y)` and friends) always use a `scatter` built from the same gather plan.

Out of bounds: reads clamp by default (PROMISE_IN_BOUNDS), updates drop by default
(FILL_OR_DROP); `mode=` selects 'clip', 'fill'/'drop' or 'promise_in_bounds'.
"""
from __future__ import annotations

import enum
import operator
import warnings
from collections.abc import Sequence
from typing import Any, Callable, NamedTuple

import numpy as np

from arrax._src import core, dtypes, mlir
from arrax._src.array import Array
from arrax._src.config_flags import check_static_indices as _static_checks
from arrax._src.errors import ConcretizationTypeError, NonConcreteBooleanIndexError
from arrax._src.indexing import Slice
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import broadcasting
from arrax._src.lax import elementwise as lax, shape_ops, slicing
from arrax._src.lax.utils import _out_sharding, asarray_operand, scalar_literal
from arrax._src.lax.slicing import GatherScatterMode
from arrax._src.numpy import creation, lax_numpy, ufuncs, util

__all__ = ["getitem", "take", "take_along_axis", "put_along_axis", "IndexUpdateHelper",
           "IndexUpdateRef"]

_PROMISE, _CLIP = GatherScatterMode.PROMISE_IN_BOUNDS, GatherScatterMode.CLIP


def _is_array(x) -> bool:
  return isinstance(x, (Array, core.Tracer))


def _shape(x):
  return core.get_aval(x).shape if not isinstance(x, np.ndarray) else x.shape


def _dtype(x):
  return dtypes.dtype_and_weak_type(x)[0]


# ---- parsing ----------------------------------------------------------------------------------
class _Kind(enum.Enum):
  NONE = "none"
  ELLIPSIS = "ellipsis"
  SLICE = "slice"
  INT = "int"          # a static Python or NumPy integer
  BOOL = "bool"        # a boolean scalar or mask
  ARRAY = "array"      # an integer array, tracer or sequence (any rank, 0-d included)


class _Entry(NamedTuple):
  index: Any
  kind: _Kind
  axes: tuple[int, ...]   # the axes of the indexed array this entry consumes


def _is_int(i) -> bool:
  return isinstance(i, (int, np.integer)) and not isinstance(i, (bool, np.bool_))


def _array_kind(dtype) -> _Kind:
  if dtype == np.bool_:
    return _Kind.BOOL
  if dtypes.issubdtype(dtype, np.integer):
    return _Kind.ARRAY
  raise TypeError(f"array indices must be integers or booleans, not {np.dtype(dtype).name}")


def _leaves(seq):
  for s in seq:
    if isinstance(s, (list, tuple)):
      yield from _leaves(s)
    else:
      yield s


def _kind_of(i) -> _Kind:
  if i is None:
    return _Kind.NONE
  if i is Ellipsis:
    return _Kind.ELLIPSIS
  if isinstance(i, slice):
    return _Kind.SLICE
  if _is_int(i):
    return _Kind.INT
  if isinstance(i, (bool, np.bool_)):
    return _Kind.BOOL
  if isinstance(i, (Array, core.Tracer, np.ndarray)):
    return _array_kind(_dtype(i))
  if isinstance(i, str):
    raise TypeError(f"arrays cannot be indexed by strings (got {i!r})")
  if isinstance(i, Sequence):
    if not i:  # an empty list would default to float; it is an empty integer index
      return _Kind.ARRAY
    leaves = list(_leaves(i))
    return _array_kind(dtypes.result_type(*leaves) if leaves else
                       dtypes.default_float_dtype())
  if isinstance(i, (float, complex, np.generic)):
    raise TypeError(f"array indices must be integers or booleans, not "
                    f"{np.dtype(type(i)).name} (got {i!r})")
  raise IndexError(f"unsupported index {i!r}: use integers, slices, `...`, `None` or integer "
                   "or boolean arrays")


def _as_tuple(idx) -> tuple:
  """The index as a tuple; a non-tuple sequence is an error, as in JAX."""
  if isinstance(idx, tuple):
    return idx
  if isinstance(idx, Sequence) and not isinstance(idx, str):
    raise TypeError("a list (or other non-tuple sequence) is not an index: write "
                    "`x[tuple(seq)]` to index several axes, or `x[jnp.array(seq)]` to index "
                    "with an integer array (https://github.com/jax-ml/jax/issues/4564)")
  return (idx,)


def _parse(idx, shape) -> list[_Entry]:
  """One entry per index element, with the axes of `shape` it consumes."""
  idx = _as_tuple(idx)
  kinds = [_kind_of(i) for i in idx]
  counts = [np.ndim(i) if k == _Kind.BOOL else
            0 if k in (_Kind.NONE, _Kind.ELLIPSIS) else 1 for i, k in zip(idx, kinds)]
  ellipses = [n for n, k in enumerate(kinds) if k == _Kind.ELLIPSIS]
  if len(ellipses) > 1:
    raise IndexError("an index may contain at most one Ellipsis (`...`)")
  if sum(counts) > len(shape):
    raise IndexError(f"too many indices: {sum(counts)} axes indexed, but the array has "
                     f"{len(shape)}")
  if ellipses:
    counts[ellipses[0]] = len(shape) - sum(counts)
  entries, axis = [], 0
  for i, k, n in zip(idx, kinds, counts):
    entries.append(_Entry(i, k, tuple(range(axis, axis + n))))
    axis += n
  return entries


def _expand_ellipsis(entries, ndim) -> list[_Entry]:
  """Replace the ellipsis, and the implicit trailing axes, by full slices."""
  out = []
  for e in entries:
    if e.kind == _Kind.ELLIPSIS:
      out.extend(_Entry(slice(None), _Kind.SLICE, (a,)) for a in e.axes)
    else:
      out.append(e)
  used = sum(len(e.axes) for e in entries)
  out.extend(_Entry(slice(None), _Kind.SLICE, (a,)) for a in range(used, ndim))
  return out


def _expand_bool_masks(entries, shape) -> list[_Entry]:
  """Replace boolean masks (which must be concrete) by the integer indices of their Trues."""
  out = []
  for pos, e in enumerate(entries):
    if e.kind != _Kind.BOOL:
      out.append(e)
      continue
    if isinstance(e.index, core.Tracer):
      raise NonConcreteBooleanIndexError(e.index.aval)
    mask = np.asarray(e.index)
    if mask.ndim == 0:
      out.append(_Entry(bool(mask), _Kind.BOOL, ()))
      continue
    expected = [shape[a] for a in e.axes]
    if not all(s in (0, t) for s, t in zip(mask.shape, expected)):
      raise IndexError(f"boolean mask of shape {mask.shape} at index position {pos} does "
                       f"not fit the indexed axes of sizes {expected}")
    out.extend(_Entry(i, _Kind.ARRAY, (a,)) for i, a in zip(np.nonzero(mask), e.axes))
  return out


def _static_slice_bounds(entries):
  """Whether every slice of the index has static (non-traced) bounds."""
  return all(not isinstance(v, core.Tracer) for e in entries if e.kind == _Kind.SLICE
             for v in (e.index.start, e.index.stop, e.index.step))


def _parse_get_mode(mode):
  return None if mode is None else GatherScatterMode.from_any(mode)


def _symbolic_slice_bounds(s: slice, n):
  """(start, stop, 1) of a slice with unit step of an axis of symbolic size `n` (jax.export);
  bounds that cannot be shown to lie within the axis raise InconclusiveDimensionOperation."""
  if s.step not in (None, 1):
    raise NotImplementedError("arrax slices axes of symbolic size with step 1 only")

  def bound(v, default):
    if v is None:
      return default
    v = operator.index(v)
    v = n + v if v < 0 else v
    if not (v >= 0 and n >= v):   # may raise: inconclusive
      raise IndexError(f"slice bound {v} outside an axis of size {n}")
    return v

  start, stop = bound(s.start, 0), bound(s.stop, n)
  if not stop >= start:
    raise IndexError(f"empty slice {s} of an axis of symbolic size {n}")
  return start, stop, 1


def _increasing(s: slice, n: int):
  """(first, count, stride, reversed): slice `s` of an axis of size `n` as `count` elements
  from `first` in steps of `stride` > 0, reversed afterwards if the slice's step is negative."""
  if mlir.is_symbolic(n):
    start, stop, step = _symbolic_slice_bounds(s, n)
    return start, stop - start, step, False
  start, stop, step = s.indices(n)
  count = len(range(start, stop, step))
  if step > 0:
    return start, count, step, False
  return (start + step * (count - 1) if count else 0), count, -step, True


# ---- reads via slice and dynamic_slice ---------------------------------------------------------
def _finish_slice(out, rev_axes, squeeze_axes, newaxis_dims):
  if rev_axes:
    out = shape_ops.rev(out, rev_axes)
  if squeeze_axes:
    out = shape_ops.squeeze(out, squeeze_axes)
  if newaxis_dims:
    out = shape_ops.expand_dims(out, newaxis_dims)
  return out


def _try_static_slice(arr, entries, shape, mode, normalize):
  """arr[idx] by one `slice` (then rev/squeeze/expand_dims), or None if that does not apply:
  only static ints and slices, and (unless mode is 'clip') ints in bounds."""
  if mode not in (None, _PROMISE, _CLIP):
    return None
  if any(e.kind in (_Kind.ARRAY, _Kind.BOOL) for e in entries):
    return None
  if not _static_slice_bounds(entries):
    return None
  for e in entries:
    if e.kind == _Kind.INT:
      i, n = operator.index(e.index), shape[e.axes[0]]
      if n == 0 or (mode != _CLIP and not 0 <= (i + n if normalize and i < 0 else i) < n):
        return None
  starts, limits, strides, rev_axes, squeeze_axes, newaxis_dims = [], [], [], [], [], []
  for e in _expand_ellipsis(entries, len(shape)):
    if e.kind == _Kind.NONE:
      newaxis_dims.append(len(starts) - len(squeeze_axes) + len(newaxis_dims))
      continue
    axis, = e.axes
    n = shape[axis]
    if e.kind == _Kind.INT:
      i = int(e.index)
      i = min(max(i + n if normalize and i < 0 else i, 0), n - 1)  # clamped, for mode='clip'
      first, limit, stride = i, i + 1, 1
      squeeze_axes.append(axis)
    else:
      first, count, stride, rev = _increasing(e.index, n)
      if rev:   # the selected elements in increasing order: first .. the slice's start
        rev_axes.append(axis)
        limit = first + (count - 1) * stride + 1 if count else first
      else:
        limit = first + count if mlir.is_symbolic(n) else max(first, e.index.indices(n)[1])
    starts.append(first)
    limits.append(limit)
    strides.append(stride)
  strides = None if all(s == 1 for s in strides) else strides
  if strides is None and starts == [0] * len(shape) and limits == list(shape):
    out = arr
  else:
    out = shape_ops.slice(arr, starts, limits, strides)
  return _finish_slice(out, rev_axes, squeeze_axes, newaxis_dims)


def _scalar_index(i):
  """A scalar int index as an operand: Python ints become weakly typed literals."""
  if isinstance(i, np.integer):
    return scalar_literal(i, dtypes.canonicalize_dtype(i.dtype))
  if isinstance(i, np.ndarray):
    return scalar_literal(i[()], dtypes.canonicalize_dtype(i.dtype))
  return asarray_operand(i)


def _index_dtype(shape):
  """The signed integer type wide enough to index every axis of `shape`."""
  return np.dtype(np.int64 if any(d > np.iinfo(np.int32).max for d in shape) else np.int32)


def _wrap_start(i, n, normalize):
  """A scalar start index with negative values counted from the end (if `normalize`)."""
  dt = _dtype(i)
  if dtypes.issubdtype(dt, np.unsignedinteger):
    return i
  if not normalize:  # a negative start stays out of bounds; dynamic_slice clamps it to 0
    return scalar_literal(0, dt) if isinstance(i, core.Literal) and i.val < 0 else i
  neg = lax.lt(i, scalar_literal(0, dt, True))
  return lax.select(neg, lax.add(lax._convert_element_type(i, dt), scalar_literal(n, dt)), i)


def _try_dynamic_slice(arr, entries, shape, mode, normalize):
  """arr[idx] by one `dynamic_slice` (then rev/squeeze/expand_dims), or None if that does not
  apply: scalar int indices (static or traced) and slices of step 1 or -1 only."""
  if mode not in (None, _PROMISE, _CLIP):
    return None
  if not _static_slice_bounds(entries):
    return None
  for e in entries:
    if e.kind == _Kind.BOOL or (e.kind == _Kind.ARRAY and (
        isinstance(e.index, Sequence) or _shape(e.index) != ())):
      return None
    if e.kind == _Kind.SLICE and e.index.step not in (None, 1, -1):
      return None
    if e.kind in (_Kind.INT, _Kind.ARRAY) and shape[e.axes[0]] == 0:
      return None
  starts, sizes, rev_axes, squeeze_axes, newaxis_dims = [], [], [], [], []
  trivial = True
  for e in _expand_ellipsis(entries, len(shape)):
    if e.kind == _Kind.NONE:
      newaxis_dims.append(len(starts) - len(squeeze_axes) + len(newaxis_dims))
      continue
    axis, = e.axes
    if e.kind in (_Kind.INT, _Kind.ARRAY):
      trivial = False
      starts.append(_scalar_index(e.index))
      sizes.append(1)
      squeeze_axes.append(axis)
      continue
    trivial = trivial and e.index == slice(None)
    first, count, _, rev = _increasing(e.index, shape[axis])
    starts.append(first)
    sizes.append(count)
    if rev:
      rev_axes.append(axis)
  if trivial:
    out = arr
  else:
    if len(starts) > 1:   # dynamic_slice needs start indices of one dtype
      dt = _index_dtype(shape)
      starts = [lax._convert_element_type(s, dt) for s in starts]
    # Negative starts are wrapped here (Python int starts are slice bounds, never negative),
    # so that constant starts are wrapped in the program too, as JAX does.
    starts = [s if type(s) is int else _wrap_start(s, n, normalize)
              for s, n in zip(starts, shape)]
    out = shape_ops.dynamic_slice(arr, starts, sizes, allow_negative_indices=False)
  return _finish_slice(out, rev_axes, squeeze_axes, newaxis_dims)


# ---- the gather plan (shared by reads and updates) -----------------------------------------------
class _GatherPlan(NamedTuple):
  out_shape: tuple            # the shape of arr[idx]
  slice_sizes: tuple          # the gather's slice sizes
  indices: Any                # the gather's start indices (index vectors in the last dim)
  dnums: slicing.GatherDimensionNumbers
  basic: bool                 # no advanced indices, so the indices are unique and sorted
  reversed_dims: tuple        # dims of the gather's output to reverse (negative steps)
  newaxis_dims: tuple         # dims of the result added by None
  scalar_bool_dims: tuple     # axes inserted into arr for scalar boolean indices
  out_axes: tuple = ()        # per dim of arr[idx]: the axis of arr it slices (else None)


def _to_index_operand(i):
  """An integer index as an arrax operand (NumPy arrays and sequences are put on the device)."""
  if _is_array(i):
    return i
  if isinstance(i, (list, tuple)) or (isinstance(i, np.ndarray) and i.ndim):
    return creation.asarray(i)
  return _scalar_index(i)


def _normalize(i, n):
  """Wrap negative indices into [0, n): static ints on the host, arrays with `select`."""
  if _is_int(i):
    return i if isinstance(i, np.unsignedinteger) or i >= 0 else i + n
  dt = _dtype(i)
  if dtypes.issubdtype(dt, np.unsignedinteger):
    return i
  if isinstance(i, np.ndarray):   # compared on the host (as JAX does), then put on the device
    neg, i = i < 0, creation.asarray(i)
  else:
    neg = lax.lt(i, scalar_literal(0, dt, True))
  return lax.select(neg, lax.add(i, lax._const(i, n)), i)


def _broadcast_to(x, shape, out_sharding=None):
  """Broadcast `x` to `shape` by adding leading axes and stretching size-1 axes."""
  xshape, shape = _shape(x), tuple(shape)
  if xshape == shape and out_sharding is None:
    return x
  lead = len(shape) - len(xshape)
  if lead < 0 or not all(d in (1, s) for d, s in zip(xshape, shape[lead:])):
    raise ValueError(f"values of shape {xshape} cannot be broadcast to the indexed shape "
                     f"{shape}")
  return shape_ops.broadcast_in_dim(x, shape, tuple(range(lead, len(shape))),
                                    out_sharding=out_sharding)


def _slice_sharding(aval, plan):
  """The type sharding of the updates of `x.at[idx]` (its sliced axes split as x's are), as
  JAX's indexer gives them; None when x's type names none."""
  s = getattr(aval, "sharding", None)
  if s is None or plan.scalar_bool_dims:
    return None
  spec = tuple(None if a is None else s.spec[a] for a in plan.out_axes)
  if all(p is None for p in spec):
    return None
  return s.update(spec=type(s.spec)(*spec))


def _broadcast_arrays(xs):
  shapes = [_shape(x) for x in xs]
  if all(s == shapes[0] for s in shapes):
    return list(xs)
  try:
    shape = np.broadcast_shapes(*shapes)
  except ValueError:
    raise ValueError(f"integer index arrays of shapes {shapes} do not broadcast together") \
        from None
  return [_broadcast_to(x, shape) for x in xs]


def _gather_plan(entries, shape, normalize) -> _GatherPlan:
  """Express arr[idx] (boolean masks already expanded) as one XLA gather.

  Every index entry becomes either a window dimension of the gather (a unit-step slice) or
  index vectors (a scalar int, a strided slice, or the broadcast advanced-index arrays, which
  take the place of the first of them, or the front if they are not adjacent, as in NumPy).
  """
  for pos, e in enumerate(entries):
    if e.kind == _Kind.SLICE and not _static_slice_bounds([e]):
      raise IndexError(f"slice bounds must be static, but index position {pos} is {e.index} "
                       "(use lax.dynamic_slice for a traced start)")
  entries = [e._replace(index=_to_index_operand(e.index))
             if e.kind == _Kind.ARRAY and isinstance(e.index, (list, tuple)) else e
             for e in entries]
  adv = [n for n, e in enumerate(entries) if e.kind in (_Kind.ARRAY, _Kind.INT)]
  adjacent = all(b == a + 1 for a, b in zip(adv, adv[1:]))
  entries = _expand_ellipsis(entries, len(shape))

  # A scalar boolean index is the integer index arange(0 or 1) into a new axis of size 1.
  shape, scalar_bool_dims, expanded = list(shape), [], []
  for e in entries:
    axis = len(expanded) - sum(x.kind == _Kind.NONE for x in expanded)
    if e.kind == _Kind.BOOL:
      shape.insert(axis, 1)
      scalar_bool_dims.append(axis)
      e = _Entry(np.arange(int(e.index)), _Kind.ARRAY, ())
    expanded.append(e._replace(axes=() if e.kind == _Kind.NONE else (axis,)))
  entries, shape = expanded, tuple(shape)
  if normalize:
    entries = [e._replace(index=_normalize(e.index, shape[e.axes[0]]))
               if e.kind in (_Kind.INT, _Kind.ARRAY) else e for e in entries]

  # With any index array, all integer indices (scalars too) are advanced indices.
  advanced = [pos for pos, e in enumerate(entries) if e.kind in (_Kind.INT, _Kind.ARRAY)]
  if not any(e.kind == _Kind.ARRAY and np.ndim(e.index) > 0 for e in entries):
    advanced = []
  adv_axes = [entries[pos].axes[0] for pos in advanced]

  dt = _index_dtype(shape)
  window_dims, collapsed, index_map = [], [], []
  pieces, batch_shape = [], []   # index arrays, with the batch dim where each one starts
  out_shape, newaxis_dims, reversed_dims, out_axes = [], [], [], []
  slice_sizes = [1] * len(shape)
  for pos, e in enumerate(entries):
    if advanced and pos == (advanced[0] if adjacent else 0):
      arrays = _broadcast_arrays([_to_index_operand(entries[p].index) for p in advanced])
      bshape = _shape(arrays[0])
      pieces += [(lax._convert_element_type(a, dt), len(batch_shape)) for a in arrays]
      batch_shape += bshape
      index_map += adv_axes
      collapsed += adv_axes
      out_shape += bshape
      out_axes += [None] * len(bshape)
    if e.kind == _Kind.NONE:
      newaxis_dims.append(len(out_shape))
      out_shape.append(1)
      out_axes.append(None)
      continue
    if pos in advanced:
      continue
    axis, = e.axes
    if e.kind in (_Kind.INT, _Kind.ARRAY):   # a scalar index
      if shape[axis] == 0:
        raise IndexError(f"cannot index into axis {axis}, which has size 0")
      pieces.append((lax._convert_element_type(_scalar_index(e.index), dt), len(batch_shape)))
      collapsed.append(axis)
      index_map.append(axis)
      continue
    start, stop, step = e.index.indices(shape[axis])
    count = len(range(start, stop, step))
    out_dim = len(out_shape) - len(newaxis_dims)   # in the gather's output (no None dims)
    out_shape.append(count)
    out_axes.append(axis)
    if step == 1:   # a window of the gather, offset by the start unless it is the whole axis
      if count != shape[axis]:
        pieces.append((scalar_literal(start, dt), len(batch_shape)))
        index_map.append(axis)
      slice_sizes[axis] = count
      window_dims.append(out_dim)
    else:           # the positions start, start + step, ..., gathered in increasing order
      positions = lax.add(scalar_literal(start, dt),
                          lax.mul(scalar_literal(step, dt), shape_ops.iota(dt, count)))
      if step < 0:
        reversed_dims.append(out_dim)
        positions = shape_ops.rev(positions, (0,))
      pieces.append((positions, len(batch_shape)))
      index_map.append(axis)
      collapsed.append(axis)
      batch_shape.append(count)

  if not pieces:
    indices = np.zeros((0,), dt)
  elif len(pieces) == 1:
    indices = shape_ops.expand_dims(pieces[0][0], (len(_shape(pieces[0][0])),))
  else:   # broadcast every piece over the batch shape, then stack them as index vectors
    full = tuple(batch_shape) + (1,)
    indices = shape_ops.concatenate(
        [shape_ops.broadcast_in_dim(g, full, tuple(range(d, d + len(_shape(g)))))
         for g, d in pieces], len(batch_shape))
  dnums = slicing.GatherDimensionNumbers(offset_dims=tuple(window_dims),
                                         collapsed_slice_dims=tuple(sorted(collapsed)),
                                         start_index_map=tuple(index_map))
  return _GatherPlan(tuple(out_shape), tuple(slice_sizes), indices, dnums, not advanced,
                     tuple(reversed_dims), tuple(newaxis_dims), tuple(scalar_bool_dims),
                     tuple(out_axes))


def _zeros(like, shape):
  aval = core.get_aval(like)
  return shape_ops.broadcast_in_dim(scalar_literal(0, aval.dtype, aval.weak_type), shape, ())


def _check_fill_value(fill_value):
  if fill_value is None:
    return None
  if isinstance(fill_value, core.Tracer):
    raise ConcretizationTypeError(fill_value, "The fill_value of .at[].get() must be a "
                                  "static value.\n")
  if np.ndim(fill_value) != 0:
    raise ValueError(f"the fill_value of .at[].get() must be a scalar, got shape "
                     f"{np.shape(fill_value)}")
  return np.asarray(fill_value).item() if isinstance(fill_value, (np.ndarray, Array)) \
      else fill_value


# ---- jax.ds slices ----------------------------------------------------------------------------
# An index holding `Slice`s (jax.ds) is done one Slice at a time, on its axis, then the rest of
# the index (that axis now `:`) on the result, with JAX's semantics: a stride-1 Slice is a
# dynamic_slice (the window clamped into bounds on reads; negative starts count from the end
# when reading; an update whose window is not in bounds is dropped), a strided Slice gathers
# (clamps) or scatters (drops) element by element, without wrapping negative starts.
def _first_dslice(idx, shape):
  """(the first Slice of `idx`, its axis, `idx` with it replaced by `:`), or None."""
  idx = _as_tuple(idx)
  k = next((n for n, i in enumerate(idx) if isinstance(i, Slice)), None)
  if k is None:
    return None
  s = idx[k]
  if s.is_dynamic_size:
    raise ValueError(f"jax.ds with a traced size is not supported (got size={s.size}); the "
                     "size must be static.")
  entries = _parse(tuple(slice(None) if isinstance(i, Slice) else i for i in idx), shape)
  axis, = entries[k].axes
  return s, axis, idx[:k] + (slice(None),) + idx[k + 1:]


def _dslice_start(s, n, normalize):
  """The start of a stride-1 Slice: a Python int (negative ones counted from the end if
  `normalize`) or a scalar operand (wrapped the same way)."""
  start = s.start
  if type(start) is int or isinstance(start, np.integer):
    start = int(start)
    return start + n if normalize and start < 0 else start
  start = _scalar_index(start)
  return _wrap_start(start, n, True) if normalize else start


def _clamped(start, size, n):
  """A static window start moved into bounds, as dynamic_slice moves a traced one."""
  return start if type(start) is not int else min(max(start, 0), max(n - size, 0))


def _dslice_positions(s):
  """The element positions start + stride * arange(size) of a strided Slice."""
  steps = broadcasting.iota(np.int32, operator.index(s.size)) * s.stride
  return _scalar_index(s.start) + steps if type(s.start) is not int else steps + s.start


def _in_window(start, size, n):
  """Whether the window [start, start + size) lies inside [0, n) (a bool array)."""
  start = lax_numpy._asarray(start)
  return (start >= 0) & (start + size <= n)


def _take_dslice(arr, idx, mode, fill_value, normalize, take_rest):
  found = _first_dslice(idx, core.get_aval(arr).shape)
  s, axis, rest = found
  n = core.get_aval(arr).shape[axis]
  size = operator.index(s.size)
  parsed = _parse_get_mode(mode)
  fill = parsed is not None and parsed == GatherScatterMode.FILL_OR_DROP
  if s.stride == 1:
    start = _dslice_start(s, n, normalize)
    out = shape_ops.dynamic_slice_in_dim(arr, _clamped(start, size, n), size, axis,
                                         allow_negative_indices=False)
    if fill:
      # (a gather of positions all out of bounds gives the fill with the dtype's default)
      oob = (slice(None),) * axis + (np.full(size, n, np.int32),)
      filler = _rewriting_take(arr, oob, mode="fill", fill_value=fill_value,
                               normalize_indices=False)
      if type(start) is int:
        out = out if 0 <= start <= n - size else filler
      else:
        out = lax_numpy.where(_in_window(start, size, n), out, filler)
  else:
    where = (slice(None),) * axis + (_dslice_positions(s),)
    out = _rewriting_take(arr, where, mode="fill" if fill else "clip", fill_value=fill_value,
                          normalize_indices=False, indices_are_sorted=True,
                          unique_indices=s.stride > 0)
  return take_rest(out, rest)


def _scatter_dslice(x, idx, y, update):
  """`update(part, rest, y)` on the part of `x` the first Slice of `idx` selects, put back."""
  s, axis, rest = _first_dslice(idx, core.get_aval(x).shape)
  n = core.get_aval(x).shape[axis]
  size = operator.index(s.size)
  if s.stride == 1:
    if size > n:
      raise TypeError("Bounds of the window dimensions of updates must not exceed the bounds "
                      f"of the corresponding dimensions of operand. For dimension {axis}, "
                      f"updates bound is {size}, operand bound is {n}.")
    start = _dslice_start(s, n, False)
    if type(start) is int and not 0 <= start <= n - size:
      return x   # out of bounds: the update is dropped
    part = shape_ops.dynamic_slice_in_dim(x, _clamped(start, size, n), size, axis,
                                          allow_negative_indices=False)
    part = update(part, rest, y)
    put = shape_ops.dynamic_update_slice_in_dim(x, part, _clamped(start, size, n), axis,
                                                allow_negative_indices=False)
    if type(start) is int:
      return put
    return lax_numpy.where(_in_window(start, size, n), put, x)
  where = (slice(None),) * axis + (_dslice_positions(s),)
  part = _rewriting_take(x, where, mode="clip", normalize_indices=False)
  part = update(part, rest, y)
  return _scatter_update(x, where, part, slicing.scatter, indices_are_sorted=True,
                         unique_indices=s.stride > 0, mode="drop", normalize_indices=False)


# ---- reads ------------------------------------------------------------------------------------
def _rewriting_take(arr, idx, *, indices_are_sorted=False, unique_indices=False, mode=None,
                    fill_value=None, normalize_indices=True):
  """arr[idx] via slice, dynamic_slice or gather (the first that applies)."""
  shape = core.get_aval(arr).shape
  if any(isinstance(i, Slice) for i in _as_tuple(idx)):
    return _take_dslice(arr, idx, mode, fill_value, normalize_indices, lambda part, rest: (
        _rewriting_take(part, rest, indices_are_sorted=indices_are_sorted,
                        unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                        normalize_indices=normalize_indices)))
  entries = _parse(idx, shape)
  parsed_mode = _parse_get_mode(mode)
  if _static_checks.value and parsed_mode in (None, _PROMISE):
    _check_static_indices(entries, shape, normalize_indices)
  for attempt in (_try_static_slice, _try_dynamic_slice):
    out = attempt(arr, entries, shape, parsed_mode, normalize_indices)
    if out is not None:
      return out
  entries = _expand_bool_masks(entries, shape)
  plan = _gather_plan(entries, shape, normalize_indices)
  fill_value = _check_fill_value(fill_value)
  y = arr
  if plan.scalar_bool_dims:
    y = shape_ops.expand_dims(y, plan.scalar_bool_dims)
  if 0 in plan.out_shape:
    return _zeros(y, plan.out_shape)
  if 0 not in _shape(plan.indices):
    y = slicing.gather(y, plan.indices, plan.dnums, plan.slice_sizes,
                       unique_indices=unique_indices or plan.basic,
                       indices_are_sorted=indices_are_sorted or plan.basic,
                       mode=mode, fill_value=fill_value)
  if plan.reversed_dims:
    y = shape_ops.rev(y, plan.reversed_dims)
  if plan.newaxis_dims:
    y = shape_ops.expand_dims(y, plan.newaxis_dims)
  return y


def _check_static_indices(entries, shape, normalize_indices):
  # (jax_check_static_indices: a static integer index out of bounds raises instead of clamping)
  for e in entries:
    if e.kind == _Kind.INT:
      i, (axis,) = operator.index(e.index), e.axes
      size = shape[axis]
      if not 0 <= (i + size if normalize_indices and i < 0 else i) < size:
        raise IndexError(f"index {i} out of bounds for axis {axis} with size {size} "
                         f"({normalize_indices=})")


def getitem(arr, idx):
  """`arr[idx]` with NumPy's indexing rules and JAX's out-of-bounds behaviour (clamping)."""
  return _rewriting_take(arr, idx)


# ---- take -------------------------------------------------------------------------------------
def take(a, indices, axis=None, out=None, mode=None, unique_indices=False,
         indices_are_sorted=False, fill_value=None):
  """Elements of `a` at `indices` along `axis` (of the flattened array if None).

  mode: 'fill' (default; out-of-bounds reads give `fill_value`, by default NaN, the minimum
  signed or maximum unsigned integer, or True), 'clip' or 'wrap'.
  """
  if out is not None:
    raise NotImplementedError("jnp.take: out= is not supported (arrays are immutable)")
  return _take_jit(a, indices, None if axis is None else operator.index(axis), mode,
                   unique_indices, indices_are_sorted, fill_value)


def _take(a, indices, axis, mode, unique_indices, indices_are_sorted, fill_value):
  util.check_arraylike("take", a, indices)
  a, indices = lax_numpy._asarray(a), lax_numpy._asarray(indices)
  if axis is None:
    a, axis = lax_numpy.ravel(a), 0
  else:
    axis = util.canonicalize_axis(axis, len(_shape(a)))
  n = _shape(a)[axis]
  if mode is None or mode == "fill":
    gather_mode = GatherScatterMode.FILL_OR_DROP
    indices = lax_numpy._where(indices < 0, indices + n, indices)
  elif mode == "raise":
    raise NotImplementedError("jnp.take: mode='raise' is not supported (out-of-bounds "
                              "indices cannot be reported from compiled code)")
  elif mode == "wrap":
    indices = ufuncs.mod(indices, scalar_literal(n, _dtype(indices)))
    gather_mode = _PROMISE
  elif mode == "clip":
    gather_mode = _CLIP
  else:
    raise ValueError(f"jnp.take: unknown mode {mode!r}; use 'fill', 'clip' or 'wrap'")
  a_shape, idx_shape = _shape(a), _shape(indices)
  if n == 0:
    if 0 not in idx_shape:
      raise IndexError(f"jnp.take: cannot take elements from axis {axis}, which has size 0")
    return a
  if 0 in idx_shape:
    return _zeros(a, a_shape[:axis] + idx_shape + a_shape[axis + 1:])
  k = len(idx_shape)
  dnums = slicing.GatherDimensionNumbers(
      offset_dims=tuple(range(axis)) + tuple(range(axis + k, len(a_shape) + k - 1)),
      collapsed_slice_dims=(axis,), start_index_map=(axis,))
  slice_sizes = a_shape[:axis] + (1,) + a_shape[axis + 1:]
  return slicing.gather(a, shape_ops.expand_dims(indices, (k,)), dnums, slice_sizes,
                        mode=gather_mode, unique_indices=unique_indices,
                        indices_are_sorted=indices_are_sorted, fill_value=fill_value)


_take_jit = jit(_take, static_argnames=("axis", "mode", "unique_indices", "indices_are_sorted",
                                        "fill_value"))


# ---- take_along_axis and put_along_axis ---------------------------------------------------------
@jit(static_argnames=("axis", "mode", "fill_value", "wrap_negative_indices"))
def take_along_axis(arr, indices, axis=-1, mode=None, fill_value=None, *,
                    wrap_negative_indices=None):
  """arr's elements at `indices` along `axis` (of the flattened array if None): one gather.

  `indices` has arr's rank; its other axes broadcast against arr's. Negative indices count
  from the end unless `wrap_negative_indices` is False (by default they do, except under
  mode='promise_in_bounds'). mode: 'fill' (default; out-of-bounds reads give `fill_value`,
  NaN for inexact types), 'clip', 'promise_in_bounds' or 'one_hot' (a one-hot contraction).
  """
  a, indices = util.ensure_arraylike("take_along_axis", arr, indices)
  idx_dtype, idx_shape = _dtype(indices), _shape(indices)
  if not dtypes.issubdtype(idx_dtype, np.integer):
    raise TypeError(f"take_along_axis indices must be of integer type, got {idx_dtype}")
  if axis is None:
    if len(idx_shape) != 1:
      raise ValueError(f"take_along_axis indices must be 1D if axis=None, got shape "
                       f"{idx_shape}")
    a, axis = lax_numpy.ravel(a), 0
  a_shape = _shape(a)
  if len(a_shape) != len(idx_shape):
    raise ValueError(f"indices and arr must have the same number of dimensions; "
                     f"{len(idx_shape)} vs. {len(a_shape)}")
  axis = util.canonicalize_axis(axis, len(a_shape))
  arr_shape = a_shape[:axis] + (1,) + a_shape[axis + 1:]
  out_shape = lax_numpy.broadcast_shapes(idx_shape, arr_shape)
  n = a_shape[axis]
  if n == 0:
    return creation.zeros(out_shape, _dtype(a))
  if wrap_negative_indices is None:   # JAX's legacy default
    wrap_negative_indices = mode != "promise_in_bounds"
  if wrap_negative_indices:   # signed and wide enough to add n to a negative index
    indices = _normalize(lax._convert_element_type(indices, _index_dtype((n,))), n)
  if mode == "one_hot":
    return _one_hot_take(a, indices, axis, out_shape)
  if 0 in out_shape:
    return _zeros(a, out_shape)
  return _gather_along_axis(a, indices, axis, out_shape, mode, fill_value)


def _gather_along_axis(a, indices, axis, out_shape, mode, fill_value):
  """One gather: each axis of `a` other than `axis` is a window (where `indices` has size 1
  there), a batching dimension (where both have its full size) or squeezed out (where `a` has
  size 1 and is broadcast)."""
  a_shape, idx_shape = _shape(a), _shape(indices)
  kept = [i for i, d in enumerate(idx_shape) if i == axis or d != 1]
  indices = shape_ops.reshape(indices, tuple(out_shape[i] for i in kept) + (1,))
  slice_sizes, offset_dims, squeezed = [], [], []
  operand_batch, indices_batch = [], []
  a_dim = idx_dim = 0   # positions in the squeezed operand and in the gather indices
  for i in range(len(a_shape)):
    if i == axis:
      slice_sizes.append(1)
      start_index_map, collapsed = (a_dim,), (a_dim,)
      a_dim, idx_dim = a_dim + 1, idx_dim + 1
    elif idx_shape[i] == 1:
      offset_dims.append(i)
      slice_sizes.append(a_shape[i])
      a_dim += 1
    elif a_shape[i] == 1:
      squeezed.append(i)
      idx_dim += 1
    else:
      slice_sizes.append(1)
      operand_batch.append(a_dim)
      indices_batch.append(idx_dim)
      a_dim, idx_dim = a_dim + 1, idx_dim + 1
  if squeezed:
    a = shape_ops.squeeze(a, tuple(squeezed))
  dnums = slicing.GatherDimensionNumbers(
      offset_dims=tuple(offset_dims), collapsed_slice_dims=collapsed,
      start_index_map=start_index_map, operand_batching_dims=tuple(operand_batch),
      start_indices_batching_dims=tuple(indices_batch))
  return slicing.gather(a, indices, dnums, tuple(slice_sizes),
                        mode="fill" if mode is None else mode, fill_value=fill_value)


def _one_hot_take(a, indices, axis, out_shape):
  """take_along_axis as a contraction with one-hot rows (exact; NaNs and infinities in a row of
  `a` spread to every result taken from that row, as in JAX)."""
  a_dtype, n, rank = _dtype(a), _shape(a)[axis], len(out_shape)
  a = lax_numpy.broadcast_to(a, out_shape[:axis] + (n,) + out_shape[axis + 1:])
  indices = lax_numpy.broadcast_to(indices, out_shape)
  positions = shape_ops.broadcasted_iota(_dtype(indices), out_shape + (n,), rank)
  hot = lax.eq(shape_ops.expand_dims(indices, (rank,)), positions)
  hot = lax._convert_element_type(hot, a_dtype)
  batch = tuple(d for d in range(rank) if d != axis)
  out = lax_dot.dot_general(hot, a, (((rank,), (axis,)), (batch, batch)),
                            precision=lax_dot.Precision.HIGHEST, preferred_element_type=a_dtype)
  return lax_numpy.moveaxis(out, -1, axis)   # dot_general puts the batch axes first


@jit(static_argnames=("axis", "inplace", "mode"))
def put_along_axis(arr, indices, values, axis, inplace=True, *, mode=None):
  """A copy of `arr` with `values` put at `indices` along `axis` (of the flattened array if
  None); the inverse of take_along_axis. `inplace=False` is required: arrays are immutable."""
  if inplace:
    raise ValueError("jax.numpy.put_along_axis cannot modify arrays in-place, because arrays "
                     "are immutable. Pass inplace=False to instead return an updated array.")
  arr, indices, values = util.ensure_arraylike("put_along_axis", arr, indices, values)
  shape = _shape(arr)
  if axis is None:
    arr = lax_numpy.ravel(arr)
  a_shape, idx_shape = _shape(arr), _shape(indices)
  if len(a_shape) != len(idx_shape):
    raise ValueError(f"put_along_axis arguments 'arr' and 'indices' must have same ndim. Got "
                     f"arr.ndim={len(a_shape)} and indices.ndim={len(idx_shape)}.")
  try:
    values = lax_numpy.broadcast_to(values, idx_shape)
  except ValueError:
    raise ValueError(f"put_along_axis argument 'values' must be broadcastable to 'indices'. "
                     f"Got values.shape={_shape(values)} and indices.shape={idx_shape}.") \
        from None
  # (JAX fails an internal assertion for an axis out of range; this is a ValueError.)
  axis = 0 if axis is None else util.canonicalize_axis(axis, len(a_shape))
  # One index array per axis: positions (broadcasting) along the others, `indices` along
  # `axis` (its positions are made too, unused, as JAX's sparse jnp.indices does).
  idx = list(_sparse_indices(a_shape))
  idx[axis] = indices
  out = _IndexUpdateRef(arr, tuple(idx)).set(values, mode=mode)
  return lax_numpy.reshape(out, shape) if len(shape) != len(a_shape) else out


def _sparse_indices(shape):
  """Positions along each axis, shaped to broadcast against the others (1 elsewhere)."""
  dt = dtypes.default_int_dtype()
  return [shape_ops.broadcast_in_dim(shape_ops.iota(dt, n),
                                     tuple(n if k == d else 1 for k in range(len(shape))), (d,))
          for d, n in enumerate(shape)]


# ---- updates ----------------------------------------------------------------------------------
def _safe_to_cast(y, dtype) -> bool:
  return _dtype(y) == dtype or dtypes.result_type(y, dtype) == dtype


def _as_update_values(x_dtype, y):
  """Updates as an operand; an in-range Python int is taken at x's integer dtype."""
  if (type(y) is int and dtypes.issubdtype(x_dtype, np.integer)
      and dtypes.iinfo(x_dtype).min <= y <= dtypes.iinfo(x_dtype).max):
    return scalar_literal(y, x_dtype)
  if type(y) in dtypes.python_scalar_dtypes:
    dt = _dtype(y)
    if type(y) is int and not dtypes.iinfo(dt).min <= y <= dtypes.iinfo(dt).max:
      raise OverflowError(f"Python int {y} does not fit in {dt.name}")
    return asarray_operand(y)
  return y if _is_array(y) or isinstance(y, core.Literal) else creation.asarray(y)


def _scatter_update(x, idx, y, scatter_op, *, indices_are_sorted, unique_indices, mode,
                    normalize_indices, out_sharding=None):
  """`x[idx] op= y` without mutation: one scatter of the broadcast updates."""
  if out_sharding is not None:   # (as JAX: updated with the mesh axes Auto, then resharded)
    def update(u, v):
      return _scatter_update(u, idx, v, scatter_op, indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=mode,
                             normalize_indices=normalize_indices)
    return util.auto_axes_hook[0](update, out_sharding=_out_sharding(out_sharding, "scatter"))(
        x, y)
  x = creation.asarray(x) if not _is_array(x) else x
  aval = core.get_aval(x)
  if any(isinstance(i, Slice) for i in _as_tuple(idx)):
    return _scatter_dslice(x, idx, y, lambda part, rest, vals: _scatter_update(
        part, rest, vals, scatter_op, indices_are_sorted=indices_are_sorted,
        unique_indices=unique_indices, mode=mode, normalize_indices=normalize_indices))
  y = _as_update_values(aval.dtype, y)
  entries = _expand_bool_masks(_parse(idx, aval.shape), aval.shape)
  if not _safe_to_cast(y, aval.dtype):
    warnings.warn(f"updates of dtype {_dtype(y).name} are cast to the array's dtype "
                  f"{aval.dtype.name}, which standard promotion does not allow to be done "
                  "safely; JAX will make this an error in a future release.", FutureWarning,
                  stacklevel=3)
  plan = _gather_plan(entries, aval.shape, normalize_indices)
  if 0 in plan.out_shape:
    return x
  x, y = util.promote_dtypes(x, y)
  y = _broadcast_to(y, plan.out_shape, _slice_sharding(aval, plan))
  if plan.newaxis_dims:
    y = shape_ops.squeeze(y, plan.newaxis_dims)
  if plan.reversed_dims:
    y = shape_ops.rev(y, plan.reversed_dims)
  if plan.scalar_bool_dims:
    x = shape_ops.expand_dims(x, plan.scalar_bool_dims)
  dnums = slicing.ScatterDimensionNumbers(
      update_window_dims=plan.dnums.offset_dims,
      inserted_window_dims=plan.dnums.collapsed_slice_dims,
      scatter_dims_to_operand_dims=plan.dnums.start_index_map)
  out = scatter_op(x, plan.indices, y, dnums,
                   indices_are_sorted=plan.basic or indices_are_sorted,
                   unique_indices=plan.basic or unique_indices, mode=mode)
  if plan.scalar_bool_dims:
    out = shape_ops.squeeze(out, plan.scalar_bool_dims)
  return lax._convert_element_type(out, aval.dtype, aval.weak_type)


class _IndexUpdateHelper:
  """The `.at` property: `x.at[idx].set(y)` is a pure version of `x[idx] = y`.

  Methods of `x.at[idx]`: get, set, add, subtract, multiply (mul), divide, power, min, max,
  apply. Repeated indices all apply (add accumulates). `mode` is 'promise_in_bounds' (default:
  reads clamp, updates drop), 'clip', or 'drop'/'fill' (reads give `fill_value`);
  `wrap_negative_indices=False` makes negative indices out of bounds.
  """
  __slots__ = ("array",)

  def __init__(self, array):
    self.array = array

  def __getitem__(self, index):
    return _IndexUpdateRef(self.array, index)

  def __repr__(self):
    return f"_IndexUpdateHelper({self.array!r})"


class _IndexUpdateRef:
  """An array and an index, with methods returning updated copies of the array."""
  __slots__ = ("array", "index")

  def __init__(self, array, index):
    self.array = array
    self.index = index

  def __repr__(self):
    return f"_IndexUpdateRef({self.array!r}, {self.index!r})"

  def get(self, *, indices_are_sorted=False, unique_indices=False, mode=None, fill_value=None,
          out_sharding=None, wrap_negative_indices=True):
    """`x[idx]`, with out-of-bounds handling chosen by `mode` and `fill_value`."""
    def take(arr):
      return _rewriting_take(arr, self.index, indices_are_sorted=indices_are_sorted,
                             unique_indices=unique_indices, mode=mode, fill_value=fill_value,
                             normalize_indices=wrap_negative_indices)
    if out_sharding is not None:   # (as JAX: indexed with the mesh axes Auto, then resharded)
      out_sharding = _out_sharding(out_sharding, "take")
      return util.auto_axes_hook[0](take, out_sharding=out_sharding)(self.array)
    return take(self.array)

  def _update(self, values, op, indices_are_sorted, unique_indices, mode, out_sharding,
              wrap_negative_indices, x=None):
    return _scatter_update(self.array if x is None else x, self.index, values, op,
                           indices_are_sorted=indices_are_sorted, unique_indices=unique_indices,
                           mode=mode, normalize_indices=wrap_negative_indices,
                           out_sharding=out_sharding)

  def set(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """`x[idx] = values`."""
    return self._update(values, slicing.scatter, indices_are_sorted, unique_indices, mode,
                        out_sharding, wrap_negative_indices)

  def add(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """`x[idx] += values`."""
    return self._update(values, slicing.scatter_add, indices_are_sorted, unique_indices, mode,
                        out_sharding, wrap_negative_indices)

  def subtract(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
    """`x[idx] -= values`."""
    return self._update(values, slicing.scatter_sub, indices_are_sorted, unique_indices, mode,
                        out_sharding, wrap_negative_indices)

  def multiply(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
               out_sharding=None, wrap_negative_indices=True):
    """`x[idx] *= values`."""
    return self._update(values, slicing.scatter_mul, indices_are_sorted, unique_indices, mode,
                        out_sharding, wrap_negative_indices)

  mul = multiply

  def divide(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
             out_sharding=None, wrap_negative_indices=True):
    """`x[idx] /= values` (true division: integer arrays give floats, as in JAX)."""
    factors = self._update(values, slicing.scatter_mul, indices_are_sorted, unique_indices,
                           mode, out_sharding, wrap_negative_indices,
                           x=creation.ones_like(self.array))
    return ufuncs.divide(self.array, factors)

  def power(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
            out_sharding=None, wrap_negative_indices=True):
    """`x[idx] **= values`."""
    exponents = self._update(values, slicing.scatter_mul, indices_are_sorted, unique_indices,
                             mode, out_sharding, wrap_negative_indices,
                             x=creation.ones_like(self.array))
    return ufuncs.power(self.array, exponents)

  def min(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """`x[idx] = minimum(x[idx], values)`."""
    return self._update(values, slicing.scatter_min, indices_are_sorted, unique_indices, mode,
                        out_sharding, wrap_negative_indices)

  def max(self, values, *, indices_are_sorted=False, unique_indices=False, mode=None,
          out_sharding=None, wrap_negative_indices=True):
    """`x[idx] = maximum(x[idx], values)`."""
    return self._update(values, slicing.scatter_max, indices_are_sorted, unique_indices, mode,
                        out_sharding, wrap_negative_indices)

  def apply(self, func: Callable, *, indices_are_sorted=False, unique_indices=False, mode=None,
            wrap_negative_indices=True):
    """`x[idx] = func(x[idx])`, applied once per occurrence of an index (like ufunc.at)."""
    def scatter_apply(x, indices, y, dnums, **kwargs):
      return slicing.scatter_apply(x, indices, func, dnums, update_shape=_shape(y), **kwargs)
    aval = core.get_aval(self.array)
    return self._update(scalar_literal(0, aval.dtype, aval.weak_type), scatter_apply,
                        indices_are_sorted, unique_indices, mode, None, wrap_negative_indices)


IndexUpdateHelper = _IndexUpdateHelper
IndexUpdateRef = _IndexUpdateRef
