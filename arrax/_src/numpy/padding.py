"""`jnp.pad`: NumPy's padding modes, built from lax's pad, slice and concatenate and from jnp
reductions, with JAX's semantics (including its errors).

Widths and the statistics' lengths must be static; `constant_values` may be traced. Every mode
pads one axis at a time, so corners take the values of the later axes' padding.
"""
from __future__ import annotations

import builtins

import numpy as np

from arrax._src import batching, core, dtypes
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax.sort import sort as lax_sort
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs, util
from arrax._src.tree_util import tree_map
from arrax._src.numpy.util import _shape

__all__ = ["pad"]

# The keyword arguments each mode accepts (a callable mode takes any).
_MODE_KWARGS = {
    "constant": ("constant_values",), "edge": (), "empty": (), "wrap": (),
    "linear_ramp": ("end_values",), "maximum": ("stat_length",), "mean": ("stat_length",),
    "median": ("stat_length",), "minimum": ("stat_length",), "reflect": ("reflect_type",),
    "symmetric": ("reflect_type",),
}


def pad(array, pad_width, mode="constant", **kwargs):
  """Pad `array` as numpy.pad does.

  pad_width: an int, a (before, after) pair or one pair per axis (static values).
  mode: 'constant' (constant_values: a scalar, a pair or one pair per axis), 'edge', 'wrap',
  'reflect' / 'symmetric' (reflect_type 'even' or 'odd'), 'linear_ramp' (end_values),
  'maximum' / 'minimum' / 'mean' / 'median' (stat_length), 'empty' (zeros), or a function
  `f(row, (before, after), axis, kwargs) -> row` applied to each 1-d row of the zero-padded
  array along each axis in turn.
  """
  util.check_arraylike("pad", array)
  array = creation.asarray(array)
  nd = util.ndim_of(array)
  pad_width = _broadcast_to_pairs(pad_width, nd, "pad_width")
  if not all(_is_int(p) for pair in pad_width for p in pair):
    raise TypeError("`pad_width` must be of integral type.")
  pad_width = tuple((np.int64(lo), np.int64(hi)) for lo, hi in pad_width)   # as JAX: np.int64
  if callable(mode):
    return _pad_func(array, pad_width, mode, **kwargs)
  try:
    unsupported = set(kwargs) - set(_MODE_KWARGS[mode])
  except KeyError:
    raise NotImplementedError(f"Unimplemented padding mode '{mode}' for np.pad.") from None
  if unsupported:
    raise ValueError(f"unsupported keyword arguments for mode '{mode}': {unsupported}")
  reflect_type = kwargs.get("reflect_type", "even")
  if mode in ("reflect", "symmetric") and reflect_type not in ("even", "odd"):
    raise ValueError(f"jnp.pad: reflect_type must be 'even' or 'odd', got {reflect_type!r}")
  return _pad_jit(array, pad_width, mode, kwargs.get("constant_values", 0),
                  kwargs.get("stat_length"), kwargs.get("end_values", 0), reflect_type)


def _is_int(x) -> bool:
  return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def _broadcast_to_pairs(values, nd, name):
  """One static (before, after) pair per axis from a scalar, a pair or per-axis pairs."""
  def concrete(x):
    if isinstance(x, core.Tracer):
      raise ConcretizationTypeError(x, f"{name} argument of jnp.pad\n")
    return x
  try:
    arr = np.asarray(tree_map(concrete, values))
  except ValueError as e:
    if "inhomogeneous" in str(e):
      raise TypeError(f"`{name}` entries must be the same shape: {values}") from None
    raise
  if arr.shape == (nd, 2):
    return tuple((row[0], row[1]) for row in arr)
  if arr.shape in ((1, 2), (2,)):
    pair = tuple(arr.reshape(2))
    return (pair,) * nd
  if arr.shape in ((1,), ()):
    v = arr.reshape(())[()]
    return ((v, v),) * nd
  raise ValueError(f"jnp.pad: {name} with nd={nd} has unsupported shape {arr.shape}. Valid "
                   f"shapes are ({nd}, 2), (1, 2), (2,), (1,), or ().")


def _pad(array, pad_width, mode, constant_values, stat_length, end_values, reflect_type):
  if util.ndim_of(array) == 0:
    return array
  if builtins.any(p < 0 for pair in pad_width for p in pair):
    raise ValueError("index can't contain negative values")
  if mode == "constant":
    return _pad_constant(array, pad_width, creation.asarray(constant_values))
  if mode == "wrap":
    return _pad_wrap(array, pad_width)
  if mode in ("reflect", "symmetric"):
    return _pad_reflect(array, pad_width, mode, reflect_type)
  if mode == "edge":
    return _pad_edge(array, pad_width)
  if mode == "linear_ramp":
    ends = _broadcast_to_pairs(end_values, util.ndim_of(array), "end_values")
    return _pad_linear_ramp(array, pad_width, ends)
  if mode == "empty":
    return _pad_empty(array, pad_width)
  if stat_length is not None:
    stat_length = _broadcast_to_pairs(stat_length, util.ndim_of(array), "stat_length")
  return _pad_stats(array, pad_width, stat_length, _STAT_FUNCS[mode])


# Widths, mode and the statistics' and ramp's parameters are static, as in JAX (so that an
# unhashable stat_length or end_values, such as a list, is an error there too).
_pad_jit = jit(_pad, static_argnames=("pad_width", "mode", "stat_length", "end_values",
                                      "reflect_type"))


# ---- helpers ----------------------------------------------------------------------------------
def _slice(x, start, stop, axis):
  """x[start:stop] along `axis` (negative bounds count from the end)."""
  return shape_ops.slice_in_dim(x, start, stop, axis=axis)


def _repeat(x, n, axis):
  """A size-1 axis of `x` repeated n times (n may be 0)."""
  shape = list(_shape(x))
  shape[axis] = n
  return shape_ops.broadcast_in_dim(x, tuple(shape), tuple(range(len(shape))))


def _concat(parts, axis):
  """Concatenate, leaving out empty padding (the middle part is never left out)."""
  parts = [p for i, p in enumerate(parts) if i == 1 or _shape(p)[axis]]
  return shape_ops.concatenate(parts, axis) if len(parts) > 1 else parts[0]


def _like_array(x, array):
  """`x` converted to the dtype and weak type of `array`."""
  aval = core.get_aval(array)
  return lax._convert_element_type(x, aval.dtype, aval.weak_type)


def _check_no_padding(pair, mode):
  if pair[0] > 0 or pair[1] > 0:
    raise ValueError(f"Cannot apply '{mode}' padding to empty axis")


# ---- modes ------------------------------------------------------------------------------------
def _pad_constant(array, pad_width, constant_values):
  nd = util.ndim_of(array)
  values = _like_array(constant_values, array)
  vshape = _shape(values)
  if len(vshape) == 0 or vshape == (1,):
    value = shape_ops.reshape(values, ()) if vshape else values
    return shape_ops.pad(array, value, [(lo, hi, 0) for lo, hi in pad_width])
  if len(vshape) == 1 and vshape[-1] != 2:
    raise ValueError(f"jnp.pad: constant_values has unsupported shape {vshape}. If the shape "
                     "is 1D or 2D, the last dimension must be of size 1 or 2.")
  values = lax_numpy.broadcast_to(values, (nd, 2))
  for i in range(nd):   # one axis at a time, so that corners take the later axes' values
    for side in (0, 1):
      if pad_width[i][side]:
        config = [(0, 0, 0)] * nd
        config[i] = (pad_width[i][0], 0, 0) if side == 0 else (0, pad_width[i][1], 0)
        value = shape_ops.reshape(shape_ops.slice(values, (i, side), (i + 1, side + 1)), ())
        array = shape_ops.pad(array, value, config)
  return array


def _pad_wrap(array, pad_width):
  for i, (lo, hi) in enumerate(pad_width):
    n = _shape(array)[i]
    if n == 0:
      _check_no_padding((lo, hi), "wrap")
      continue
    lo_reps, lo_rest = divmod(lo, n)
    hi_reps, hi_rest = divmod(hi, n)
    parts = [_slice(array, n - lo_rest, n, i)] if lo_rest else []
    parts += [array] * (lo_reps + hi_reps + 1)
    if hi_rest:
      parts.append(_slice(array, 0, hi_rest, i))
    if len(parts) > 1:
      array = shape_ops.concatenate(parts, i)
  return array


def _pad_edge(array, pad_width):
  for i, (lo, hi) in enumerate(pad_width):
    n = _shape(array)[i]
    if n == 0:
      _check_no_padding((lo, hi), "edge")
      continue
    before = _repeat(_slice(array, 0, 1, i), lo, i)
    after = _repeat(_slice(array, n - 1, n, i), hi, i)
    array = _concat([before, array, after], i)
  return array


def _reflect_side(array, n, count, axis, before, mode, odd):
  """Pad one side of `axis` (of original size n) with `count` mirrored elements.

  Padding longer than the axis is built in rounds, each mirroring what the previous one added.
  'reflect' mirrors about the edge element (left out), 'symmetric' about the edge itself; an
  'odd' reflection is additionally point-mirrored through the current edge value.
  """
  skip = 1 if (mode == "reflect" and n > 1) else 0
  edge = _slice(array, 0, 1, axis) if before else _slice(array, -1, None, axis)
  while count > 0:
    step = builtins.min(count, n - skip)
    count -= step
    if before:
      x = _slice(array, skip, skip + step, axis)
    else:
      x = _slice(array, -(step + skip), None if (mode == "symmetric" or n == 1) else -1, axis)
    x = shape_ops.rev(x, (axis,))
    if odd:
      x = ufuncs.subtract(ufuncs.multiply(2, edge), x)
      if n > 1:
        edge = _slice(x, 0, 1, axis) if before else _slice(x, -1, None, axis)
    array = shape_ops.concatenate([x, array] if before else [array, x], axis)
  return array


def _pad_reflect(array, pad_width, mode, reflect_type):
  odd = reflect_type == "odd"
  for i, (lo, hi) in enumerate(pad_width):
    n = _shape(array)[i]
    if n == 0:
      _check_no_padding((lo, hi), mode)
      continue
    array = _reflect_side(array, n, lo, i, True, mode, odd)
    array = _reflect_side(array, n, hi, i, False, mode, odd)
  return array


def _pad_linear_ramp(array, pad_width, end_values):
  dtype = core.get_aval(array).dtype
  for i, (lo, hi) in enumerate(pad_width):
    # Ramps from each end value towards (not reaching) the edge value of every row.
    first = shape_ops.squeeze(_slice(array, 0, 1, i), (i,))
    last = shape_ops.squeeze(_slice(array, -1, None, i), (i,))
    ramp_lo = creation.linspace(end_values[i][0], first, num=lo, endpoint=False, dtype=dtype,
                                axis=i)
    ramp_hi = creation.linspace(end_values[i][1], last, num=hi, endpoint=False, dtype=dtype,
                                axis=i)
    ramp_lo = _like_array(ramp_lo, array)
    ramp_hi = shape_ops.rev(_like_array(ramp_hi, array), (i,))
    array = _concat([ramp_lo, array, ramp_hi], i)
  return array


def _median(a, axis):
  """The median along `axis` (keeping it as size 1): NaN if any element is NaN, else the mean
  of the two middle elements of the sorted axis."""
  a, = util.promote_dtypes_inexact(a)
  if core.get_aval(a).dtype.kind == "c":
    raise ValueError("quantile does not support complex input, as the operation is poorly "
                     "defined.")
  n = _shape(a)[axis]
  if n == 0:
    raise TypeError(f"jnp.pad: mode='median' needs a non-empty axis {axis} to take a median "
                    f"over (array shape {_shape(a)}).")
  has_nan = reductions.any(ufuncs.isnan(a), axis=axis, keepdims=True)
  nan = lax.scalar_literal(np.nan, core.get_aval(a).dtype)
  a = lax_sort(lax_numpy.where(has_nan, nan, a), dimension=axis)
  lo, hi = (n - 1) // 2, n // 2
  total = ufuncs.add(_slice(a, lo, lo + 1, axis), _slice(a, hi, hi + 1, axis))
  return lax.mul(total, lax.scalar_literal(0.5, core.get_aval(total).dtype))


def _max(a, axis):
  return reductions.max(a, axis=axis, keepdims=True)


def _min(a, axis):
  return reductions.min(a, axis=axis, keepdims=True)


def _mean(a, axis):
  return reductions.mean(a, axis=axis, keepdims=True)


_STAT_FUNCS = {"maximum": _max, "minimum": _min, "mean": _mean, "median": _median}


def _pad_stats(array, pad_width, stat_length, stat):
  integer = dtypes.issubdtype(core.get_aval(array).dtype, np.integer)
  for i, (lo, hi) in enumerate(pad_width):
    if stat_length is None:
      before = after = stat(array, i)
    else:
      n = _shape(array)[i]
      len_lo, len_hi = stat_length[i]
      if len_lo == 0 or len_hi == 0:
        raise ValueError("stat_length of 0 yields no value for padding")
      len_lo, len_hi = builtins.min(len_lo, n), builtins.min(len_hi, n)
      before = stat(_slice(array, 0, len_lo, i), i)
      after = stat(_slice(array, -len_hi, None, i), i)
    if integer:   # a mean or median of integers is rounded (half to even), not truncated
      before, after = ufuncs.round(before), ufuncs.round(after)
    before, after = _like_array(before, array), _like_array(after, array)
    array = _concat([_repeat(before, lo, i), array, _repeat(after, hi, i)], i)
  return array


def _pad_empty(array, pad_width):
  # As in JAX, the padding is zeros (XLA has no uninitialized memory).
  for i, (lo, hi) in enumerate(pad_width):
    shape = _shape(array)
    before = creation.zeros_like(array, shape=shape[:i] + (lo,) + shape[i + 1:])
    after = creation.zeros_like(array, shape=shape[:i] + (hi,) + shape[i + 1:])
    array = _concat([before, array, after], i)
  return array


def _pad_func(array, pad_width, func, **kwargs):
  if util.ndim_of(array) == 0:
    raise ValueError("jnp.pad: a callable mode needs an array of at least one dimension, got "
                     "a 0-d array.")
  padded = _pad_constant(array, pad_width, creation.asarray(0))
  for axis in range(util.ndim_of(padded)):
    padded = _apply_along_axis(func, axis, padded, pad_width[axis], axis, kwargs)
  return padded


def _apply_along_axis(func1d, axis, arr, *args):
  """func1d(row, *args) on every 1-d row of `arr` along `axis`, by vmapping over the others."""
  nd = util.ndim_of(arr)
  f = lambda row: func1d(row, *args)  # noqa: E731
  for i in range(1, nd - axis):   # the axes after `axis`, each mapped to the result's end
    f = batching.vmap(f, in_axes=i, out_axes=-1)
  for _ in range(axis):           # the axes before it, mapped in place
    f = batching.vmap(f, in_axes=0, out_axes=0)
  return f(arr)
