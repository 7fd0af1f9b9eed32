"""Assembling and rearranging arrays: tile, repeat, roll, rot90, insert/delete/append, resize,
the split and stack variants, block, unstack, trim_zeros, copy, and the function-driven
builders (fromfunction, apply_along_axis, apply_over_axes), with JAX's semantics and errors.

Sizes, axes and shifts given as Python values are static (as in JAX); a traced shift makes
`roll` dynamic, and `repeat` takes traced `repeats` when `total_repeat_length` is given.
"""
from __future__ import annotations

import builtins
import functools
import math
import operator

import numpy as np

from arrax._src import batching, core, dtypes
from arrax._src.array import Array
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import shape_ops, stacking
from arrax._src.numpy import creation, indexing, lax_numpy, reductions, ufuncs
from arrax._src.numpy.util import (canonicalize_axis, check_arraylike, ensure_arraylike,
                                   maybe_auto_axes)
from arrax._src.sharding_impls import AxisType, canonicalize_sharding, get_abstract_mesh
from arrax._src.numpy.util import _dtype, _ndim, _shape

__all__ = [
    "append", "apply_along_axis", "apply_over_axes", "array_split", "atleast_3d", "block",
    "column_stack", "copy", "delete", "dsplit", "dstack", "fromfunction", "hsplit", "insert",
    "repeat", "resize", "roll", "rollaxis", "rot90", "tile", "trim_zeros", "unstack", "vsplit",
]


# ---- helpers ----------------------------------------------------------------------------------
def _is_array(x) -> bool:
  return isinstance(x, (Array, core.Tracer))


def _asarray(x):
  return x if _is_array(x) else creation.asarray(x)


def _concrete(x, context):
  """`x` itself, or ConcretizationTypeError if it is traced."""
  if isinstance(x, core.Tracer):
    raise ConcretizationTypeError(x, context)
  return x


def _concrete_index(x, context):
  return operator.index(_concrete(x, context))


def _index_tuple(x):
  """One int, or a sequence of ints, as a tuple of ints (TypeError otherwise: a tracer raises
  ConcretizationTypeError, a TypeError, before anything is staged)."""
  _concrete(x, "expected a static index or sequence of indices.\n")
  try:
    return (operator.index(x),)
  except TypeError:
    return tuple(map(operator.index, x))


def _nonzero_sized(a, size):
  """The indices of the nonzero elements of `a`, as jnp.nonzero(a, size=size) gives them: the
  first `size` of them, padded with zeros (found by a cumulative count, so `a` may be traced)."""
  mask = a if _dtype(a) == np.bool_ else ufuncs.not_equal(a, 0)
  shape = _shape(a)
  if math.prod(shape) == 0 or size == 0:
    return tuple(creation.zeros(size, int) for _ in shape)
  counts = reductions.cumsum(mask)
  # bincount(counts, length=size): how many elements precede each output slot's element.
  ones = np.array(1, dtype=dtypes.canonicalize_dtype(np.int64))
  bins = creation.zeros(size, _dtype(ones)).at[lax_numpy.clip(counts, 0)].add(ones, mode="drop")
  flat = reductions.cumsum(bins)
  strides = (np.cumprod(shape[::-1])[::-1] // shape).astype(_dtype(flat))
  return tuple(ufuncs.remainder(ufuncs.floor_divide(flat, stride), n)
               for stride, n in zip(strides, shape))


# ---- tile, repeat -----------------------------------------------------------------------------
def tile(A, reps):
  """Repeat the whole array `A` reps[i] times along axis i (reps may have more or fewer
  entries than A has axes; the shorter one gets leading ones)."""
  A = ensure_arraylike("tile", A)
  try:
    reps_tup = tuple(iter(reps))
  except TypeError:
    reps_tup = (reps,)
  if builtins.any(isinstance(r, core.Tracer) for r in reps_tup):
    # JAX fails the same way: traced reps cannot be a parameter of the tile primitive.
    raise TypeError(f"jnp.tile: reps must be static integers, got {reps_tup}; mark them "
                    "static under jit.")
  reps_tup = tuple(operator.index(r) for r in reps_tup)
  nd = _ndim(A)
  reps_tup = (1,) * (nd - len(reps_tup)) + reps_tup
  if len(reps_tup) > nd:
    A = shape_ops.expand_dims(A, tuple(range(len(reps_tup) - nd)))
  return stacking.tile(A, reps_tup)


def repeat(a, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
  """Repeat each element of `a` (along `axis`, or of the flattened array) `repeats` times.

  `repeats` is an int or one count per element along the axis. Under jit, counts that are
  traced need a static `total_repeat_length` (the length of the result: it is cut there, or
  padded with copies of the last element).
  """
  if isinstance(repeats, (int, np.integer)) and not isinstance(repeats, (bool, np.bool_)):
    check_arraylike("repeat", a)
  else:
    check_arraylike("repeat", a, repeats)
  a = creation.asarray(a)
  if axis is None:
    a = lax_numpy.ravel(a)
    axis = 0
  if out_sharding is None and core.sharding_typing.on and any(
      t is AxisType.Explicit for t in get_abstract_mesh().axis_types):
    # (as JAX: under Explicit mesh axes the repeated axis must be unsplit; the others keep
    # their splits)
    s = core.get_aval(a).sharding
    if s is not None and s.spec.partitions[axis] is not None:
      raise ValueError(_REPEAT_SHARDING)
    out_sharding = s
  if out_sharding is not None:   # (as JAX: repeated with the mesh axes Auto, then resharded)
    run = functools.partial(_repeat, axis=axis, total_repeat_length=total_repeat_length)
    target = canonicalize_sharding(out_sharding, "repeat")
    if total_repeat_length is None:
      return maybe_auto_axes(lambda v: run(repeats, v), target)(a)
    return maybe_auto_axes(run, target)(repeats, a)
  try:
    return _repeat(repeats, a, axis=axis, total_repeat_length=total_repeat_length)
  except core.ShardingTypeError:
    raise ValueError(_REPEAT_SHARDING) from None


_REPEAT_SHARDING = "Please pass sharding to `jnp.repeat` via `out_sharding` parameter."


def _repeat(repeats, arr, *, axis, total_repeat_length=None):
  axis = _concrete_index(axis, "'axis' argument of jnp.repeat()\n")
  if total_repeat_length is None:
    repeats = _concrete(repeats, (
        "When jit-compiling jnp.repeat, the total number of repeats must be static. To fix "
        "this, either specify a static value for `repeats`, or pass a static value to "
        "`total_repeat_length`.\n"))
    if np.ndim(repeats) == 0 and _ndim(arr) != 0:
      # One count for all: a broadcast along a new axis after `axis`, then a reshape.
      shape = _shape(arr)
      axis = canonicalize_axis(axis, len(shape))
      aux = list(shape)
      aux.insert(axis + 1, operator.index(repeats))
      out = shape_ops.broadcast_in_dim(arr, aux, [i for i in range(len(aux)) if i != axis + 1])
      result = list(shape)
      result[axis] *= operator.index(repeats)
      return lax_numpy.reshape(out, result)
    repeats = np.ravel(np.asarray(repeats))
    if _ndim(arr) != 0:
      repeats = np.broadcast_to(repeats, [_shape(arr)[axis]])
    total_repeat_length = int(np.sum(repeats))
  else:
    repeats = lax_numpy.ravel(_asarray(repeats))
    if _ndim(arr) != 0:
      repeats = lax_numpy.broadcast_to(repeats, [_shape(arr)[axis]])
  if _ndim(arr) == 0:
    if np.shape(repeats) == (1,):
      return creation.full([total_repeat_length], arr)
    raise ValueError("`repeat` with a scalar parameter `a` is only implemented for scalar "
                     "values of the parameter `repeats`.")
  if total_repeat_length == 0:
    result = list(_shape(arr))
    result[axis] = 0
    return lax_numpy.reshape(creation.array([], dtype=_dtype(arr)), result)
  if _shape(arr)[axis] == 0:
    return arr
  # Where each element's run starts, marked in a buffer of the output length; the running
  # count of marks is then the source index of every output position.
  exclusive = roll(repeats, shift=1).at[0].set(0)
  starts = reductions.cumsum(exclusive)
  marks = creation.zeros([total_repeat_length], dtype="int32").at[starts].add(1)
  gather = ufuncs.subtract(reductions.cumsum(marks), 1)
  return indexing.take(arr, gather, axis=axis)


# ---- roll, rollaxis, rot90 --------------------------------------------------------------------
@jit(static_argnums=(2,))
def _roll_dynamic(a, shift, axis):
  b_shape = lax_numpy.broadcast_shapes(_shape(shift), np.shape(axis))
  if len(b_shape) != 1:
    raise ValueError("'shift' and 'axis' arguments to roll must be scalars or 1D arrays")
  shifts = lax_numpy.broadcast_to(shift, b_shape)
  for n, i in enumerate(np.broadcast_to(axis, b_shape)):
    x = shape_ops.index_in_dim(shifts, n, 0, keepdims=False)
    size = creation.array(_shape(a)[i], dtype=np.int32)
    x = ufuncs.remainder(lax_ew.convert_element_type(x, np.int32),
                         lax_ew.max(size, np.int32(1)))
    doubled = shape_ops.concatenate((a, a), i)
    a = shape_ops.dynamic_slice_in_dim(doubled, lax_ew.sub(size, x), _shape(a)[i], axis=i)
  return a


@jit(static_argnums=(1, 2))
def _roll_static(a, shift, axis):
  for ax, s in zip(*np.broadcast_arrays(axis, shift)):
    n = _shape(a)[ax]
    if n == 0:
      continue
    i = (-s) % n
    a = shape_ops.concatenate([shape_ops.slice_in_dim(a, i, n, axis=ax),
                               shape_ops.slice_in_dim(a, 0, i, axis=ax)], ax)
  return a


def roll(a, shift, axis=None):
  """Shift elements cyclically by `shift` along `axis` (of the flattened array if None)."""
  arr = ensure_arraylike("roll", a)
  if axis is None:
    return lax_numpy.reshape(roll(lax_numpy.ravel(arr), shift, 0), _shape(arr))
  axis = _index_tuple(axis)
  axis = tuple(canonicalize_axis(ax, _ndim(arr)) for ax in axis)
  try:
    shift = _index_tuple(shift)
  except TypeError:
    return _roll_dynamic(_asarray(arr), creation.asarray(shift), axis)
  return _roll_static(_asarray(arr), shift, axis)


@jit(static_argnames=("axis", "start"))
def rollaxis(a, axis, start=0):
  """Move `axis` to sit before position `start` (NumPy's older spelling of moveaxis)."""
  a = ensure_arraylike("rollaxis", a)
  start = _concrete_index(start, "'start' argument of jnp.rollaxis()\n")
  nd = _ndim(a)
  axis = canonicalize_axis(axis, nd)
  if not -nd <= start <= nd:
    raise ValueError(f"start={start} must satisfy {-nd}<=start<={nd}")
  if start < 0:
    start += nd
  if start > axis:
    start -= 1
  return lax_numpy.moveaxis(a, axis, start)


@jit(static_argnames=("k", "axes"))
def rot90(m, k=1, axes=(0, 1)):
  """Rotate by 90 degrees k times in the plane of `axes`, from the first axis toward the second."""
  m = ensure_arraylike("rot90", m)
  nd = _ndim(m)
  if nd < 2:
    raise ValueError(f"rot90 requires its first argument to have ndim at least two, but got "
                     f"first argument of shape {_shape(m)}, which has ndim {nd}")
  ax1, ax2 = axes
  ax1, ax2 = canonicalize_axis(ax1, nd), canonicalize_axis(ax2, nd)
  if ax1 == ax2:
    raise ValueError("Axes must be different")
  k = k % 4
  if k == 0:
    return _asarray(m)
  if k == 2:
    return lax_numpy.flip(lax_numpy.flip(m, ax1), ax2)
  perm = list(range(nd))
  perm[ax1], perm[ax2] = perm[ax2], perm[ax1]
  if k == 1:
    return lax_numpy.transpose(lax_numpy.flip(m, ax2), perm)
  return lax_numpy.flip(lax_numpy.transpose(m, perm), ax2)


# ---- append, insert, delete, resize -----------------------------------------------------------
@jit(static_argnames=("axis",))
def append(arr, values, axis=None):
  """`values` joined to the end of `arr` along `axis` (both flattened if axis is None)."""
  if axis is None:
    return lax_numpy.concatenate([lax_numpy.ravel(arr), lax_numpy.ravel(values)], 0)
  return lax_numpy.concatenate([arr, values], axis=axis)


def insert(arr, obj, values, axis=None):
  """Insert `values` before the index or indices `obj` (an int, a 1-d integer array or a
  slice) along `axis` (of the flattened array if None)."""
  a, _, values_arr = ensure_arraylike("insert", arr, 0 if isinstance(obj, slice) else obj,
                                      values)
  if axis is None:
    a = lax_numpy.ravel(a)
    axis = 0
  axis = _concrete(axis, "axis argument of jnp.insert()\n")
  axis = canonicalize_axis(axis, _ndim(a))
  n_input = _shape(a)[axis]
  if isinstance(obj, slice):
    indices = creation.arange(*obj.indices(n_input))
  else:
    indices = creation.asarray(obj)
  if _ndim(indices) > 1:
    raise ValueError(f"jnp.insert(): obj must be a slice, a one-dimensional array, or a "
                     f"scalar; got {obj}")
  if not dtypes.issubdtype(_dtype(indices), np.integer):
    if math.prod(_shape(indices)) == 0 and not _is_array(obj):
      indices = lax_numpy.astype(indices, int)
    else:
      raise ValueError(f"jnp.insert(): index array must be integer typed; got {obj}")
  values_arr = creation.array(values_arr, ndmin=_ndim(a), dtype=_dtype(a), copy=False)
  if math.prod(_shape(indices)) == 1:
    index = lax_numpy.ravel(indices)[0]
    if _ndim(indices) == 0:
      values_arr = lax_numpy.moveaxis(values_arr, 0, axis)
    indices = creation.full(_shape(values_arr)[axis], index)
  n_insert = lax_numpy.broadcast_shapes(_shape(indices), (_shape(values_arr)[axis],))[0]
  out_shape = list(_shape(a))
  out_shape[axis] += n_insert
  out = creation.zeros_like(a, shape=tuple(out_shape))
  indices = lax_numpy.where(ufuncs.less(indices, 0), ufuncs.add(indices, n_input), indices)
  indices = lax_numpy.clip(indices, 0, n_input)
  # Where the values go: each index shifted by the number of values inserted before it.
  values_ind = indices.at[lax_numpy.argsort(indices)].add(
      creation.arange(n_insert, dtype=_dtype(indices)))
  arr_mask = creation.ones(n_input + n_insert, dtype=bool).at[values_ind].set(False)
  arr_ind = _nonzero_sized(arr_mask, n_input)[0]
  lead = (slice(None),) * axis
  out = out.at[lead + (values_ind,)].set(values_arr)
  return out.at[lead + (arr_ind,)].set(a)


def delete(arr, obj, axis=None, *, assume_unique_indices=False):
  """`arr` without the entries `obj` (an int, a slice, integer indices or a boolean mask)
  along `axis` (of the flattened array if None).

  Integer index arrays must be concrete unless `assume_unique_indices=True` (then they may
  be traced, and must not repeat).
  """
  a = ensure_arraylike("delete", arr)
  if axis is None:
    a = lax_numpy.ravel(a)
    axis = 0
  axis = canonicalize_axis(axis, _ndim(a))
  n = _shape(a)[axis]
  lead = (slice(None),) * axis
  try:
    obj = operator.index(obj)
  except TypeError:
    pass
  else:
    obj = canonicalize_axis(obj, n)
    return lax_numpy.concatenate([indexing.getitem(a, lead + (slice(0, obj),)),
                                  indexing.getitem(a, lead + (slice(obj + 1, None),))],
                                 axis=axis)
  if isinstance(obj, slice):
    obj = indexing.getitem(creation.arange(n), obj)
    assume_unique_indices = True
  check_arraylike("delete", a, obj)
  m = getattr(obj, "__jax_array__", None)
  if m is not None:
    obj = m()
  if dtypes.issubdtype(_dtype(obj), np.integer) and assume_unique_indices:
    idx = lax_numpy.ravel(creation.asarray(obj))
    idx = lax_numpy.clip(lax_numpy.where(ufuncs.less(idx, 0), ufuncs.add(idx, n), idx), 0, n)
    idx = lax_numpy.sort(idx)
    k = _shape(idx)[0]
    idx = ufuncs.subtract(idx, creation.arange(k, dtype=_dtype(idx)))
    # Output position i reads input position i + (number of deleted indices at or before it).
    i = creation.arange(n - k, dtype=_dtype(idx))
    before = ufuncs.greater_equal(indexing.getitem(i, (None, slice(None))),
                                  indexing.getitem(idx, (slice(None), None)))
    i = ufuncs.add(i, reductions.sum(before, 0, dtype=_dtype(i)))
    return indexing.getitem(a, lead + (i,))
  obj_np = np.asarray(_concrete(obj, "'obj' array argument of jnp.delete()\n"))
  if dtypes.issubdtype(obj_np.dtype, np.integer):
    mask = np.ones(n, dtype=bool)
    mask[obj_np] = False
  elif obj_np.dtype == bool:
    if obj_np.shape != (n,):
      raise ValueError("np.delete(arr, obj): for boolean indices, obj must be one-dimensional "
                       "with length matching specified axis.")
    mask = ~obj_np
  else:
    raise ValueError(f"np.delete(arr, obj): got obj.dtype={obj_np.dtype}; must be integer or "
                     "bool.")
  return indexing.getitem(a, lead + (mask,))


@jit(static_argnames=("new_shape",))
def resize(a, new_shape):
  """An array of shape `new_shape` filled with the elements of `a` in order, repeated as
  often as needed (zeros if `a` is empty)."""
  check_arraylike("resize", a)
  new_shape = _index_tuple(new_shape)
  if builtins.any(d < 0 for d in new_shape):
    raise ValueError("all elements of `new_shape` must be non-negative")
  arr = lax_numpy.ravel(a)
  size = math.prod(new_shape)
  n = _shape(arr)[0]
  if n == 0 or size == 0:
    return creation.zeros_like(arr, shape=new_shape)
  arr = indexing.getitem(tile(arr, -(-size // n)), slice(None, size))
  return lax_numpy.reshape(arr, new_shape)


# ---- splitting --------------------------------------------------------------------------------
def _split(op, ary, indices_or_sections, axis=0):
  ary = ensure_arraylike(op, ary)
  axis = _concrete_index(axis, f"in jax.numpy.{op} argument `axis`\n")
  size = _shape(ary)[axis]
  ios = indices_or_sections
  if isinstance(ios, (tuple, list)) or (isinstance(ios, (np.ndarray, Array, core.Tracer))
                                        and len(np.shape(ios) if isinstance(ios, np.ndarray)
                                                else _shape(ios)) > 0):
    ios = _concrete(ios, f"in jax.numpy.{op} argument 1\n")
    bounds = [0] + [_concrete_index(i, f"in jax.numpy.{op} argument 1\n") for i in ios] + [size]
    sizes = list(np.diff(np.asarray(bounds)))
  else:
    sections = int(_concrete(ios, f"in jax.numpy.{op} argument 1\n"))
    part, r = divmod(size, sections)
    if r == 0:
      sizes = [np.int64(part)] * sections
    elif op == "array_split":
      sizes = [np.int64(part + 1)] * r + [np.int64(part)] * (sections - r)
    else:
      raise ValueError(f"array split does not result in an equal division: rest is {r}")
  if builtins.any(s < 0 for s in sizes):
    raise ValueError(f"Sizes passed to split must be nonnegative, got {[int(s) for s in sizes]}")
  return list(shape_ops.split(_asarray(ary), sizes, axis=axis))   # np.int64 sizes, as JAX


def split(ary, indices_or_sections, axis=0):
  """Split into sub-arrays along `axis`: at the given indices, or into equal sections."""
  return _split("split", ary, indices_or_sections, axis=axis)


def array_split(ary, indices_or_sections, axis=0):
  """Like split, but a number of sections need not divide the axis (the first pieces get one
  element more)."""
  return _split("array_split", ary, indices_or_sections, axis=axis)


def vsplit(ary, indices_or_sections):
  """split along axis 0."""
  return _split("vsplit", ary, indices_or_sections, axis=0)


def hsplit(ary, indices_or_sections):
  """split along axis 1 (axis 0 for a 1-d array)."""
  a = ensure_arraylike("hsplit", ary)
  return _split("hsplit", a, indices_or_sections, axis=0 if _ndim(a) == 1 else 1)


def dsplit(ary, indices_or_sections):
  """split along axis 2."""
  return _split("dsplit", ary, indices_or_sections, axis=2)


# ---- stacking ---------------------------------------------------------------------------------
@jit
def atleast_3d(*arys):
  """Each input with at least three axes (a 1-d array of length n becomes (1, n, 1), a 2-d
  (m, n) one (m, n, 1)); one array for one input, else a list."""
  check_arraylike("atleast_3d", *arys)
  if len(arys) != 1:
    return [atleast_3d(x) for x in arys]
  arr = creation.asarray(arys[0])
  nd = _ndim(arr)
  if nd == 0:
    return shape_ops.expand_dims(arr, (0, 1, 2))
  if nd == 1:
    return shape_ops.expand_dims(arr, (0, 2))
  if nd == 2:
    return shape_ops.expand_dims(arr, (2,))
  return arr


def dstack(tup, dtype=None):
  """Join arrays along the third axis (after making them at least 3-d)."""
  if isinstance(tup, (np.ndarray, Array, core.Tracer)):
    arrs = batching.vmap(atleast_3d)(_asarray(tup))
  else:
    check_arraylike("dstack", *tup)
    arrs = [atleast_3d(m) for m in tup]
  return lax_numpy.concatenate(arrs, axis=2, dtype=dtype)


def column_stack(tup):
  """Join 1-d arrays as columns (and 2-d arrays as they are) along axis 1."""
  if isinstance(tup, (np.ndarray, Array, core.Tracer)):
    tup = _asarray(tup)
    arrs = (batching.vmap(lambda x: lax_numpy.transpose(lax_numpy.atleast_2d(x)))(tup)
            if _ndim(tup) < 3 else tup)
  else:
    check_arraylike("column_stack", *tup)
    arrs = [lax_numpy.transpose(lax_numpy.atleast_2d(x)) if _ndim(x) < 2 else x
            for x in map(creation.asarray, tup)]
  return lax_numpy.concatenate(arrs, axis=1)


def _atleast_nd(x, n):
  m = _ndim(x)
  return shape_ops.broadcast(x, (1,) * (n - m)) if m < n else creation.asarray(x)


def _block(xs):
  if isinstance(xs, tuple):
    raise ValueError(f"jax.numpy.block does not allow tuples, got {xs}")
  if isinstance(xs, list):
    if len(xs) == 0:
      raise ValueError("jax.numpy.block does not allow empty list arguments")
    parts, depths = zip(*[_block(x) for x in xs])
    if builtins.any(d != depths[0] for d in depths[1:]):
      raise ValueError("Mismatched list depths in jax.numpy.block")
    rank = builtins.max(depths[0], builtins.max(_ndim(x) for x in parts))
    parts = tuple(_atleast_nd(x, rank) for x in parts)
    return lax_numpy.concatenate(parts, axis=-depths[0]), depths[0] + 1
  return creation.asarray(xs), 1


@jit
def block(arrays):
  """Assemble an array from nested lists of blocks: the innermost lists are joined along the
  last axis, the next level along the one before, and so on."""
  out, _ = _block(arrays)
  return out


@jit(static_argnames="axis", inline=True)
def unstack(x, /, *, axis=0):
  """The slices of `x` along `axis`, as a tuple of arrays."""
  x = ensure_arraylike("unstack", x)
  return stacking.unstack(x, axis=axis)


# ---- trim_zeros, copy -------------------------------------------------------------------------
def trim_zeros(filt, trim="fb", axis=None):
  """`filt` without its leading ('f') and/or trailing ('b') all-zero slices along the given
  axes (every axis by default). `filt` must be concrete: the result shape depends on it."""
  filt = ensure_arraylike("trim_zeros", filt)
  _concrete(filt, "Error arose in the `filt` argument of trim_zeros()\n")
  filt = _asarray(filt)
  nd = _ndim(filt)
  if axis is None:
    axes = set(range(nd))
  elif isinstance(axis, (tuple, list)):
    axes = tuple(canonicalize_axis(i, nd) for i in axis)
    if len(set(axes)) != len(axes):
      raise ValueError(f"repeated axis: {axes}")
    axes = set(axes)
  else:
    axes = {canonicalize_axis(axis, nd)}
  trim = trim.lower()
  if not axes or ("f" not in trim and "b" not in trim):
    return filt

  def bounds(ax):
    if ax not in axes:
      return slice(None)
    mask = reductions.any(filt, axis=tuple(i for i in range(nd) if i != ax))
    if not bool(reductions.any(mask)):
      return slice(0, 0)
    start = int(reductions.argmax(mask)) if "f" in trim else None
    stop = (_shape(filt)[ax] - int(reductions.argmax(lax_numpy.flip(mask)))
            if "b" in trim else None)
    return slice(start, stop)
  # `filt` is concrete, so its bounds are computed now, even inside a jit trace (as JAX's
  # compile-time evaluation); only the slicing is staged.
  with core.set_current_trace(core.eval_trace):
    index = tuple(bounds(ax) for ax in range(nd))
  return indexing.getitem(filt, index)


def copy(a, order=None):
  """A copy of `a` as a new array."""
  check_arraylike("copy", a)
  if _is_array(a):
    if order is not None and order != "K":
      raise NotImplementedError("Only implemented for order='K'")
    return stacking.copy(a)
  return creation.array(a, copy=True, order=order)


# ---- function-driven builders -----------------------------------------------------------------
def fromfunction(function, shape, *, dtype=float, **kwargs):
  """`function(*indices)` evaluated on the index grid of `shape` (vmapped over every axis, so
  `function` sees scalar indices of `dtype`)."""
  dims = tuple(shape) if isinstance(shape, (tuple, list)) else (shape,)
  try:
    shape = tuple(operator.index(d) for d in dims)
  except TypeError:
    # Traced sizes included: JAX's shape check raises TypeError for them too.
    raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                    f"{dims}. shape argument of jnp.fromfunction().") from None
  for i in range(len(shape)):
    in_axes = [0 if i == j else None for j in range(len(shape))]
    function = batching.vmap(function, in_axes=tuple(in_axes[::-1]))
  return function(*(creation.arange(s, dtype=dtype) for s in shape), **kwargs)


def apply_along_axis(func1d, axis, arr, *args, **kwargs):
  """`func1d(row, *args, **kwargs)` on every 1-d slice of `arr` along `axis` (by vmap); the
  axes of its result take the place of `axis`."""
  check_arraylike("apply_along_axis", arr)
  nd = np.ndim(arr) if not _is_array(arr) else _ndim(arr)
  axis = canonicalize_axis(axis, nd)

  def func(x):
    return func1d(x, *args, **kwargs)
  for i in range(1, nd - axis):
    func = batching.vmap(func, in_axes=i, out_axes=-1)
  for _ in range(axis):
    func = batching.vmap(func, in_axes=0, out_axes=0)
  return func(arr)


def apply_over_axes(func, a, axes):
  """Apply `func(a, axis)` for each axis in turn; a result with one axis fewer gets that axis
  back (size 1)."""
  a_arr = _asarray(ensure_arraylike("apply_over_axes", a))
  for axis in axes:
    b = func(a_arr, axis)
    if _ndim(b) == _ndim(a_arr):
      a_arr = b
    elif _ndim(b) == _ndim(a_arr) - 1:
      a_arr = lax_numpy.expand_dims(b, axis)
    else:
      raise ValueError("function is not returning an array of the correct shape")
  return a_arr
