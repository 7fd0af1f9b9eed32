"""Array constructors and shape/dtype helpers of lax: `full`, `full_like`, `empty` (with its
primitive), `broadcast_shapes`, `broadcast_like`, `dtype` and `shape_as_value`.

`full` converts the fill value to the requested dtype (a host scalar becomes a literal) and
broadcasts it, so `full((), 2.0)` is a literal and `full((2, 3), x)` one `broadcast_in_dim`, as
in JAX. `empty` binds its own primitive (`empty[dtype shape out_sharding]`), whose lowering
gives zeros (XLA buffers are always initialized).
"""
from __future__ import annotations

import warnings

import numpy as np

from arrax._src import core, dtypes, mlir
from arrax._src.array import Array
from arrax._src.core import ShapedArray, Tracer
from arrax._src.lax import broadcasting
from arrax._src.lax import elementwise as lax
from arrax._src.lax.utils import _canonicalize_shape, _out_sharding

__all__ = ["broadcast_like", "broadcast_shapes", "dtype", "empty", "full", "full_like",
           "shape_as_value"]


# ---- dtype ------------------------------------------------------------------------------------
def _explicit_dtype(dt):
  """An explicitly named dtype, canonicalized (with JAX's warning when 64 bits are dropped)."""
  canonical = dtypes.canonicalize_dtype(dt)
  if canonical != dt:
    warnings.warn(
        f"Explicitly requested dtype {dt} requested in dtype is not available, and will be "
        f"truncated to dtype {canonical.name}. To enable more dtypes, set the jax_enable_x64 "
        "configuration option or the JAX_ENABLE_X64 shell environment variable.",
        UserWarning, stacklevel=3)
  return canonical


def _check_valid(x, dt):
  if dt not in dtypes.supported_dtypes:
    raise TypeError(f"Value '{x}' with dtype {dt} is not a valid JAX array type. Only arrays "
                    "of numeric types are supported by JAX.")


def dtype(x):
  """The dtype of a value or type, as arrax computes with it.

  Python scalars and scalar types give the default dtype of their kind; NumPy scalar types,
  dtypes, names and non-arrax arrays are canonicalized (64-bit types become 32-bit unless x64
  is on); arrax arrays and tracers keep their dtype.
  """
  if x is None:
    raise ValueError(f"Invalid argument to dtype: {x}.")
  if isinstance(x, type):
    if x in dtypes.python_scalar_dtypes:
      return dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[x])
    if issubclass(x, np.generic):
      return _explicit_dtype(np.dtype(x))
  elif type(x) in dtypes.python_scalar_dtypes:
    return dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[type(x)])
  elif isinstance(x, (Array, Tracer, core.Literal)):
    return core.get_aval(x).dtype
  if isinstance(x, (str, np.dtype)):
    dt = np.dtype(x)
    _check_valid(x, dt)
    return _explicit_dtype(dt)
  attr = getattr(x, "dtype", None)
  if isinstance(attr, np.dtype):
    dt = attr
  else:
    try:
      dt = np.result_type(x)
    except TypeError as err:
      raise TypeError(f"Cannot determine dtype of {x}") from err
  _check_valid(x, dt)
  return dtypes.canonicalize_dtype(dt)


_dtype = dtype   # (full's `dtype` parameter shadows the function)


def _is_weakly_typed(x):
  if type(x) in (int, float, complex):
    return True
  aval = getattr(x, "aval", None)
  return bool(getattr(aval, "weak_type", False))


# ---- broadcast_shapes / broadcast_like --------------------------------------------------------
def _check_static_shape(shape):
  checked = _canonicalize_shape(shape)
  if not all(d >= 0 for d in checked):
    raise TypeError("Only non-negative indices are allowed when broadcasting static shapes, "
                    f"but got shape {shape!r}.")


def broadcast_shapes(*shapes):
  """The shape NumPy broadcasting gives `shapes` (ValueError if they are incompatible)."""
  if not shapes:
    raise TypeError("broadcast_shapes: At least one shape is required.")
  for s in shapes:
    _check_static_shape(s)
  first, *rest = shapes
  if not rest:
    return first
  longest = max(shapes, key=len)
  ndim = len(longest)
  if ndim == 0 or all(tuple(longest[ndim - len(s):]) == tuple(s) for s in shapes):
    return longest   # only rank promotion is needed
  padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
  out = []
  for sizes in zip(*padded):
    big = [d for d in sizes if d != 1]
    if big and any(d != big[0] for d in big[1:]):
      raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}")
    out.append(big[0] if big else 1)
  return tuple(out)


def broadcast_like(arr, like_arr):
  """`arr` broadcast (NumPy-style, leading axes added) to the shape of `like_arr`."""
  aval = core.get_aval(arr)
  shape = tuple(core.get_aval(like_arr).shape)
  if aval.shape == shape:
    return broadcasting._asarray(arr)
  nlead = len(shape) - aval.ndim
  if nlead < 0 or any(d not in (1, t) for d, t in zip(aval.shape, shape[nlead:])):
    want = ShapedArray(shape, aval.dtype)
    raise ValueError(f"Incompatible types for broadcasting: input type={aval.str_short()} "
                     f"and requested type={want.str_short()}")
  return broadcasting.broadcast_in_dim(arr, shape, tuple(range(nlead, len(shape))))


def shape_as_value(shape):
  """A shape as an integer vector (int32, or int64 if a size needs it): a NumPy array for a
  nonempty shape, an arrax array for ()."""
  dt = np.dtype(np.int64 if any(d > np.iinfo(np.int32).max for d in shape) else np.int32)
  if len(shape) == 0:
    return full((0,), np.array(0, dtype=dt))
  return np.asarray(shape, dtype=dt)


# ---- full / full_like -------------------------------------------------------------------------
def full(shape, fill_value, dtype=None, *, sharding=None):
  """An array of `shape` whose elements are all the scalar `fill_value` (cast to `dtype`)."""
  shape = _canonicalize_shape(shape)
  if np.shape(fill_value):
    raise TypeError(f"full must be called with scalar fill_value, got fill_value.shape "
                    f"{np.shape(fill_value)}.")
  if dtype is None:
    weak_type = _is_weakly_typed(fill_value)
    fill_dtype = _dtype(fill_value)
  else:
    weak_type = False
    fill_dtype = dtypes.check_user_dtype(dtype, "full")
  fill = lax._convert_element_type(fill_value, fill_dtype, weak_type)
  return broadcasting.broadcast(fill, shape, out_sharding=sharding)


def full_like(x, fill_value, dtype=None, shape=None, sharding=None):
  """An array with the shape and dtype of `x` (unless given) filled with `fill_value`."""
  aval = getattr(x, "aval", None)
  x_shape = aval.shape if aval is not None else np.shape(x)
  fill_shape = x_shape if shape is None else _canonicalize_shape(shape)
  weak_type = dtype is None and _is_weakly_typed(x)
  dt = _dtype(x if dtype is None else dtype)
  out = full(fill_shape, lax._convert_element_type(fill_value, dt, weak_type),
             sharding=sharding)
  vma = getattr(aval, "vma", None)
  if vma and core.vma_state.axes is not None:   # (varies where `x` does, as JAX's)
    out = core.vma_hooks["cast"](out, vma)
  return out


# ---- empty ------------------------------------------------------------------------------------
empty_p = core.Primitive("empty")


def _empty_aval(shape, dtype):
  return ShapedArray(_canonicalize_shape(shape), dtypes.canonicalize_dtype(np.dtype(dtype)))


@empty_p.def_abstract_eval
def _empty_abstract_eval(*, shape, dtype, out_sharding):
  return _empty_aval(shape, dtype)


@empty_p.def_lowering
def _empty_lower(ctx, *, shape, dtype, out_sharding):
  return [mlir.full_like_aval(0, ctx.avals_out[0])]


# Nullary: nothing can be batched or carry a tangent.
empty_p.def_batch(lambda args, dims, **params: (empty_p.bind(**params), None))


def empty(shape, dtype, *, out_sharding=None):
  """An array of `shape` and `dtype` whose contents are unspecified (zeros in arrax)."""
  _empty_aval(shape, dtype)   # (checked here: eager calls are cached by their params)
  return empty_p.bind(shape=shape, dtype=dtype, out_sharding=_out_sharding(out_sharding))

