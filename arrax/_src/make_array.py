"""jax.make_array_from_callback: an array assembled from per-device pieces a callback supplies."""
from __future__ import annotations

import numpy as np

from arrax._src import api, core, dtypes, sharding_impls
from arrax._src.array import Array, device_put_value
from arrax._src.errors import UnexpectedTracerError
from arrax._src.layout import AutoLayoutSingleton, Format


def _host_piece(value):
  """A callback's result as a NumPy array with a canonical dtype (Python scalars take the
  default types, as JAX's canonicalization gives them)."""
  if isinstance(value, core.Tracer):
    raise UnexpectedTracerError("jax.make_array_from_callback cannot be called within a traced "
                                "context.")
  if isinstance(value, Array):
    return np.asarray(value._value)
  if type(value) in dtypes.python_scalar_dtypes:
    return np.asarray(value, dtypes.canonicalize_dtype(dtypes.python_scalar_dtypes[type(value)]))
  arr = np.asarray(value)
  return arr.astype(dtypes.canonicalize_dtype(arr.dtype), copy=False)


def _check_dtype(pieces, dtype):
  if dtype is None:
    if not pieces:
      raise ValueError("If the Array has no addressable shards, `dtype` must be provided via "
                       "the `dtype` argument to `jax.make_array_from_callback`.")
    return pieces[0].dtype
  dtype = dtypes.canonicalize_dtype(dtypes.check_user_dtype(dtype, "make_array_from_callback"))
  if pieces and pieces[0].dtype != dtype:
    raise ValueError("If `dtype` is provided to `jax.make_array_from_callback`, it must match "
                     f"the dtype of the addressable shards. Got dtype={dtype} and shard "
                     f"dtype={pieces[0].dtype}`.")
  return dtype


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """An array of `shape` laid out as `sharding`, whose piece on each device is
  `data_callback(index)` (`index`: a tuple of slices into the global array). A fully
  replicated sharding calls the callback once."""
  if isinstance(sharding, Format):
    if isinstance(sharding.layout, AutoLayoutSingleton):
      raise TypeError("`Layout.AUTO` cannot be used in place of a device-local layout when "
                      f"calling `jax.make_array_from_callback`. Got {sharding}")
    sharding = sharding.sharding
  if not isinstance(sharding, sharding_impls.Sharding):
    raise TypeError(f"sharding should be an instance of `jax.sharding`. Got {sharding} of type "
                    f"{type(sharding)}")
  shape = tuple(int(d) for d in shape)
  devices = list(sharding._device_assignment)
  if isinstance(sharding, sharding_impls.NamedSharding):
    sharding.check_compatible(shape, "make_array_from_callback args")
  if sharding.is_fully_replicated:
    pieces = [_host_piece(data_callback((slice(None),) * len(shape)))] * len(devices)
  else:
    index_map = sharding.devices_indices_map(shape)
    pieces = [_host_piece(data_callback(index_map[d])) for d in devices]
  dtype = _check_dtype(pieces, dtype)
  aval = core.ShapedArray(shape, dtype)
  expected = sharding.shard_shape(shape)
  for piece in pieces:
    if piece.dtype != dtype:
      raise ValueError("Input buffers to `Array` must have matching dtypes. Got "
                       f"{piece.dtype}, expected {dtype} for buffer: {piece}")
    if piece.shape != tuple(expected):
      raise ValueError(f"Expected shard shape {tuple(expected)} doesn't match the single device "
                       f"array shape {piece.shape}. Shape of Array is {aval.str_short()} with "
                       f"sharding {sharding}")
  if isinstance(sharding, sharding_impls.SingleDeviceSharding):
    return device_put_value(pieces[0], devices[0], dtype=dtype, committed=True)
  return api.put_pieces([np.ascontiguousarray(p) for p in pieces], aval, sharding)
