"""Shardings of arrays over several devices: `Mesh`, `PartitionSpec` and `NamedSharding`.

Only what pmap's outputs need: a one-dimensional mesh of devices, and an array either split
along one of its axes over that mesh (one slice per device) or replicated on every device.
Each NamedSharding knows the jaxlib `GSPMDSharding` that places such an array's shards.
"""
from __future__ import annotations

import functools

import numpy as np
from jaxlib import _jax, xla_client as xc


class PartitionSpec(tuple):
  """How each axis of an array is split over mesh axes (None: not split)."""

  def __new__(cls, *partitions):
    return tuple.__new__(cls, partitions)

  def __repr__(self):
    inner = ", ".join(repr(p) for p in self)
    return f"P({inner}{',' if len(self) == 1 else ''})"

  __str__ = __repr__

  def __reduce__(self):
    return (PartitionSpec, tuple(self))


class Mesh:
  """An array of devices with named axes."""

  def __init__(self, devices, axis_names):
    self.devices = np.asarray(devices, dtype=object)
    if isinstance(axis_names, str):
      axis_names = (axis_names,)
    self.axis_names = tuple(axis_names)
    if self.devices.ndim != len(self.axis_names):
      raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal the "
                       f"length of its second argument (`axis_names`), but got devices.ndim == "
                       f"{self.devices.ndim} and len(axis_names) == {len(self.axis_names)}.")

  @property
  def shape(self):
    return dict(zip(self.axis_names, self.devices.shape))

  @property
  def size(self):
    return self.devices.size

  @property
  def device_ids(self):
    return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

  def _key(self):
    return (tuple(d.id for d in self.devices.flat), self.devices.shape, self.axis_names)

  def __eq__(self, other):
    return isinstance(other, Mesh) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    axes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.devices.shape))
    types = ", ".join("Auto" for _ in self.axis_names)
    return f"Mesh({axes}, axis_types=({types}{',' if len(self.axis_names) == 1 else ''}))"


class NamedSharding:
  """An array laid out over `mesh` as `spec` says (axis i split over mesh axis spec[i])."""

  def __init__(self, mesh: Mesh, spec: PartitionSpec, *, memory_kind=None):
    self.mesh = mesh
    self.spec = spec if isinstance(spec, PartitionSpec) else PartitionSpec(*spec)
    self._memory_kind = memory_kind

  @property
  def memory_kind(self):
    return self._memory_kind or "device"

  @property
  def device_set(self):
    return set(self.mesh.devices.flat)

  @property
  def addressable_devices(self):
    return self.device_set

  @property
  def _device_assignment(self):
    return tuple(self.mesh.devices.flat)

  @property
  def num_devices(self):
    return self.mesh.size

  @property
  def is_fully_replicated(self):
    return all(p is None for p in self.spec)

  @property
  def is_fully_addressable(self):
    return True

  def _split_dim(self):
    """The array axis split over the (one-dimensional) mesh, or None when replicated."""
    for i, p in enumerate(self.spec):
      if p is not None:
        return i
    return None

  def shard_shape(self, global_shape):
    d = self._split_dim()
    if d is None:
      return tuple(global_shape)
    shape = list(global_shape)
    shape[d] //= self.mesh.size
    return tuple(shape)

  def devices_indices_map(self, global_shape):
    """Each device's index (a tuple of slices) into an array of `global_shape`."""
    d = self._split_dim()
    out = {}
    per = global_shape[d] // self.mesh.size if d is not None else None
    for i, dev in enumerate(self.mesh.devices.flat):
      idx = [slice(None)] * len(global_shape)
      if d is not None:
        idx[d] = slice(i * per, (i + 1) * per)
      out[dev] = tuple(idx)
    return out

  def _key(self):
    return (self.mesh, tuple(self.spec), self.memory_kind)

  def __eq__(self, other):
    return isinstance(other, NamedSharding) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    return f"NamedSharding(mesh={self.mesh!r}, spec={self.spec!r}, memory_kind={self.memory_kind})"


def split_sharding(devices: tuple, axis_name, ndim: int, dim):
  """The NamedSharding of a rank-`ndim` array split along `dim` (None: replicated) over a
  one-dimensional mesh of `devices` named `axis_name`."""
  return _split_sharding(tuple(devices), axis_name, ndim, dim)


@functools.lru_cache(maxsize=1024)
def _split_sharding(devices, axis_name, ndim, dim):
  spec = PartitionSpec() if dim is None else PartitionSpec(*([None] * dim), axis_name)
  return NamedSharding(Mesh(np.array(devices, dtype=object), (axis_name,)), spec)


@functools.lru_cache(maxsize=1024)
def xla_sharding(devices: tuple, ndim: int, dim):
  """jaxlib's GSPMDSharding placing slices along `dim` (or replicas when None) on `devices`."""
  if dim is None:
    hlo = xc.HloSharding.replicate()
  else:
    tiles = [1] * ndim
    tiles[dim] = len(devices)
    hlo = xc.HloSharding.iota_tile(tiles)
  return _jax.GSPMDSharding(xc.DeviceList(tuple(devices)), hlo)


class Shard:
  """One device's piece of an array: its device, index into the array, and data."""
  __slots__ = ("device", "index", "replica_id", "data")

  def __init__(self, device, index, replica_id, data):
    self.device = device
    self.index = index
    self.replica_id = replica_id
    self.data = data

  def __repr__(self):
    return (f"Shard(device={self.device!r}, index={self.index}, replica_id={self.replica_id}, "
            f"data={self.data})")
