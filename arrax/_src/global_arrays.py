"""Arrays assembled from per-device pieces, as multi-process programs build them:
`make_array_from_callback`, `make_array_from_single_device_arrays` and
`make_array_from_process_local_data` (each process supplies the shards of its own devices;
the result is one global array whose other shards live in the other processes).
"""
from __future__ import annotations

import collections
from collections.abc import Sequence

import numpy as np
from jaxlib import _jax

from arrax._src import backend, core, dtypes, sharding_impls
from arrax._src.array import Array, ShardedArray, device_put_value
from arrax._src.errors import UnexpectedTracerError
from arrax._src.layout import AutoLayoutSingleton, Format
from arrax._src.sharding_impls import NamedSharding, PartitionSpec, Sharding, get_mesh
from arrax._src.tree_util import _broadcast_prefix, tree_flatten, tree_unflatten


def _dtype_of(pieces, dtype, fname):
  if dtype is None:
    if not pieces:
      raise ValueError("If the Array has no addressable shards, `dtype` must be provided via "
                       f"the `dtype` argument to `jax.{fname}`.")
    return np.dtype(pieces[0].dtype)
  dtype = dtypes.canonicalize_dtype(np.dtype(dtype))
  if pieces and np.dtype(pieces[0].dtype) != dtype:
    raise ValueError(f"If `dtype` is provided to `jax.{fname}`, it must match the dtype of the "
                     f"addressable shards. Got dtype={dtype} and shard "
                     f"dtype={pieces[0].dtype}`.")
  return dtype


def _check_pieces(pieces, sharding, aval):
  expected = sharding.shard_shape(aval.shape)
  for p in pieces:
    if np.dtype(p.dtype) != aval.dtype:
      raise ValueError(f"Input buffers to `Array` must have matching dtypes. Got {p.dtype}, "
                       f"expected {aval.dtype} for buffer: {p}")
    if tuple(p.shape) != tuple(expected):
      raise ValueError(f"Expected shard shape {tuple(expected)} doesn't match the single device "
                       f"array shape {tuple(p.shape)}. Shape of Array is {aval.str_short()} "
                       f"with sharding {sharding}")


def _from_device_buffers(aval, sharding, bufs):
  """One array over the sharding's devices from this process's single-device jaxlib arrays
  (in the order of its addressable devices)."""
  if isinstance(sharding, sharding_impls.SingleDeviceSharding):
    return Array(bufs[0], aval, True) if bufs else None
  xla = sharding._xla_sharding(len(aval.shape))
  gbuf = _jax.ArrayImpl(aval, xla, list(bufs), committed=True, _skip_checks=True)
  return ShardedArray(gbuf, aval, sharding)


def assemble(aval, sharding, pieces, devices):
  """The global array of `aval` laid out as `sharding` from this process's shards: `pieces`
  (host arrays or single-device Arrays) on `devices` (the sharding's addressable devices)."""
  where = {d: k for k, d in enumerate(sharding._addressable_device_assignment)}
  ranked = sorted(zip(pieces, devices), key=lambda pd: where[pd[1]])
  bufs = []
  for p, d in ranked:
    if type(p) is Array and p.device == d and p.dtype == aval.dtype:
      bufs.append(p._buf)
    else:
      host = p._value if isinstance(p, Array) else np.asarray(p)
      bufs.append(device_put_value(np.ascontiguousarray(host), d, dtype=aval.dtype,
                                   weak_type=False, committed=True)._buf)
  return _from_device_buffers(core.ShapedArray(aval.shape, aval.dtype), sharding, bufs)


def _check_sharding(sharding, fname):
  if not isinstance(sharding, Sharding):
    raise TypeError(f"sharding should be an instance of `jax.sharding`. Got {sharding} of type "
                    f"{type(sharding)}")
  if not isinstance(sharding, (NamedSharding, sharding_impls.SingleDeviceSharding)):
    raise NotImplementedError(f"jax.{fname} with a {type(sharding).__name__}")


def make_array_from_callback(shape, sharding, data_callback, dtype=None):
  """A global array of `shape` laid out as `sharding`; `data_callback(index)` gives the data
  of each of this process's shards (index: a tuple of slices into the global array)."""
  if isinstance(sharding, Format):
    if isinstance(sharding.layout, AutoLayoutSingleton):
      raise TypeError("`Layout.AUTO` cannot be used in place of a device-local layout when "
                      f"calling `jax.make_array_from_callback`. Got {sharding}")
    sharding = sharding.sharding
  _check_sharding(sharding, "make_array_from_callback")
  shape = tuple(shape)
  if isinstance(sharding, NamedSharding):
    sharding.check_compatible(shape, "make_array_from_callback args")
  idx = sharding.addressable_devices_indices_map(shape)
  devices = list(sharding._addressable_device_assignment)
  cache: dict = {}
  pieces = []
  for d in devices:
    # As JAX: one call for a fully replicated sharding, else one per device.
    key = () if sharding.is_fully_replicated else d
    if key not in cache:
      r = data_callback(idx[d])
      if isinstance(r, core.Tracer):
        raise UnexpectedTracerError(
            "jax.make_array_from_callback cannot be called within a traced context.")
      if isinstance(r, Array) and type(r) is not Array:
        r = r._value
      if not isinstance(r, Array):
        r = np.asarray(r)
        if r.dtype != dtypes.canonicalize_dtype(r.dtype):
          r = r.astype(dtypes.canonicalize_dtype(r.dtype))
      cache[key] = r
    pieces.append(cache[key])
  dtype = _dtype_of(pieces, dtype, "make_array_from_callback")
  aval = core.ShapedArray(shape, dtype)
  _check_pieces(pieces, sharding, aval)
  bufs = [device_put_value(p._value if isinstance(p, Array) else p, d, dtype=dtype,
                           weak_type=False, committed=True)._buf
          for p, d in zip(pieces, devices)]
  return _from_device_buffers(aval, sharding, bufs)


def make_array_from_single_device_arrays(shape, sharding, arrays, *, dtype=None):
  """A global array of `shape` laid out as `sharding` from this process's shards: one
  single-device Array per addressable device of the sharding (in any order)."""
  if not isinstance(arrays, Sequence):
    raise TypeError("jax.make_array_from_single_device_arrays `arrays` argument must be a list "
                    f"or tuple, but got {type(arrays)}.")
  if any(isinstance(a, core.Tracer) for a in arrays):
    raise ValueError("jax.make_array_from_single_device_arrays requires a list of concrete "
                     f"arrays as input, but got types {set(map(type, arrays))}")
  _check_sharding(sharding, "make_array_from_single_device_arrays")
  dtype = _dtype_of(arrays, dtype, "make_array_from_single_device_arrays")
  aval = core.ShapedArray(tuple(shape), dtype)
  addressable = sharding._addressable_device_assignment
  if len(arrays) != len(addressable):
    raise ValueError(f"Expected {len(addressable)} per-device arrays (this is how many devices "
                     f"are addressable by the sharding), but got {len(arrays)}")
  by_id = {}
  for a in arrays:
    if not isinstance(a, Array) or type(a) is not Array:
      raise TypeError("jax.make_array_from_single_device_arrays takes single-device arrays, "
                      f"got {type(a)}")
    by_id[a.device.id] = a
  if len(by_id) != len(arrays):
    raise ValueError("When making an array from single-device arrays, the input arrays must be "
                     f"from distinct devices, but got device IDs {[a.device.id for a in arrays]}")
  wanted = {d.id for d in addressable}
  if set(by_id) != wanted:
    msg = "Addressable devices and per-device arrays devices do not match."
    if wanted - set(by_id):
      msg += (f" Sharding contains devices {wanted - set(by_id)} that are not present in "
              "per-device arrays.")
    if set(by_id) - wanted:
      msg += (f" Per-device arrays contain devices {set(by_id) - wanted} that are not present "
              "in the sharding.")
    raise ValueError(msg)
  _check_pieces(arrays, sharding, aval)
  bufs = [by_id[d.id]._buf for d in addressable]
  return _from_device_buffers(aval, sharding, bufs)


# ---- make_array_from_process_local_data --------------------------------------------------------
class NonUniformShardingError(ValueError):
  """Processes hold differently shaped parts of an array along some dimension."""


def _process_index_and_count(sharding, dim, ndim):
  """Which of the distinct per-process blocks along `dim` this process holds, and how many
  distinct blocks there are."""
  if sharding.is_fully_addressable or sharding.is_fully_replicated:
    return 0, 1
  index_map = sharding.devices_indices_map((sharding.num_devices,) * ndim)
  per_process = collections.defaultdict(set)
  every = set()
  for d, index in index_map.items():
    key = (index[dim].start, index[dim].stop)
    per_process[d.process_index].add(key)
    every.add(key)
  mine = frozenset(per_process[backend.process_index()])
  if any(len(v) != len(mine) for v in per_process.values()):
    raise NonUniformShardingError(f"sharding={sharding} is non-uniform on dim={dim} as some "
                                  "processes have different number of slices.")
  distinct = list(dict.fromkeys(frozenset(v) for v in per_process.values()))
  if sum(len(v) for v in distinct) != len(every):
    raise NonUniformShardingError(f"sharding={sharding} is non-uniform on dim={dim}")
  return distinct.index(mine), len(distinct)


def _local_to_global_shape(sharding, local_shape):
  out = []
  for i, n in enumerate(local_shape):
    try:
      out.append(n * _process_index_and_count(sharding, i, len(local_shape))[1])
    except NonUniformShardingError:
      out.append(None)
  return tuple(out)


def _addressable_count(sharding, dim, global_shape):
  idx = sharding.addressable_devices_indices_map(global_shape)
  starts = {(i[dim].start, i[dim].stop) for i in idx.values()}
  return sharding.shard_shape(global_shape)[dim] * len(starts)


def _from_process_local(local, sharding, global_shape):
  local = np.asarray(local) if not isinstance(local, Array) else local
  local_shape = tuple(local.shape)
  if global_shape is None:
    global_shape = _local_to_global_shape(sharding, local_shape)
    if None in global_shape:
      raise ValueError("Unable to compute global_shape due to non-uniform sharding. Specify "
                       f"global shape directly. Partially computed global_shape={global_shape}.")
  elif None in global_shape:
    raise ValueError(f"global_shape={global_shape} has Nones. This is not supported.")
  global_shape = tuple(global_shape)
  whole = []
  for i, (n, g) in enumerate(zip(local_shape, global_shape)):
    whole.append(n == g)
    if n != g:
      mine = _addressable_count(sharding, i, global_shape)
      if mine != n:
        raise ValueError("Invalid host data, each dimension should match either global or "
                         f"process shape. In dimension {i}, the process data has {n} elements. "
                         f"Process addresses {mine} elements and global_shape={global_shape}.")
  idx = sharding.addressable_devices_indices_map(global_shape)
  shard_shape = sharding.shard_shape(global_shape)
  starts = [sorted({(index[i].start or 0) for index in idx.values()})
            for i in range(len(global_shape))]
  host = local._value if isinstance(local, Array) else local

  def callback(index):
    sl = tuple(s if whole[i] else
               slice(starts[i].index(s.start or 0) * shard_shape[i],
                     (starts[i].index(s.start or 0) + 1) * shard_shape[i])
               for i, s in enumerate(index))
    return host[sl]

  return make_array_from_callback(global_shape, sharding, callback)


def make_array_from_process_local_data(sharding, local_data, global_shape=None):
  """A global array from the part of it this process holds (`local_data`, the same layout in
  every process): each dimension of `local_data` is either the global size or the size of
  the slice this process's devices address. `sharding` (and `global_shape`) may be tree
  prefixes of `local_data`."""
  leaves, treedef = tree_flatten(local_data)
  shardings = _broadcast_prefix(sharding, local_data,
                                is_leaf=lambda s: isinstance(s, (Sharding, PartitionSpec)))
  shardings = [_resolve(s) for s in shardings]
  shapes = _broadcast_prefix(global_shape, local_data,
                             is_leaf=lambda s: s is None or isinstance(s, tuple))
  if backend.process_count() == 1:
    for s, d in zip(shapes, leaves):
      if s is not None and tuple(s) != tuple(np.shape(d)):
        raise ValueError("When calling `make_array_from_process_local_data` on a single "
                         "process, global_shape should be None or equal to local_data.shape."
                         f"Got global_shape={s} and local_data.shape={np.shape(d)}.")
  out = [_from_process_local(d, s, g) for d, s, g in zip(leaves, shardings, shapes)]
  return tree_unflatten(treedef, out)


def _resolve(s):
  if isinstance(s, PartitionSpec):
    mesh = get_mesh()
    if mesh.empty:
      raise RuntimeError(
          "make_array_from_process_local_data requires a non-empty mesh in context if you are "
          "passing `PartitionSpec`s. You can define a context mesh via `jax.set_mesh(mesh)`.")
    return NamedSharding(mesh, s)
  return s

