"""Shardings of arrays over several devices: `Mesh`, `PartitionSpec`, `NamedSharding`,
`SingleDeviceSharding` (the classes `arrax.sharding` exports, as JAX 0.10.2 defines them).

A NamedSharding splits array axis i over the mesh axes its spec names at position i (several
names: their sizes multiply, the first varying slowest); mesh axes it does not name hold
replicas. Each sharding knows which slice of an array every device holds
(`devices_indices_map`) and the jaxlib `GSPMDSharding` that places such shards.
"""
from __future__ import annotations

import collections
import dataclasses
import enum
import functools
import math

import numpy as np
from jaxlib import _jax, xla_client as xc

from arrax._src import backend, core
from arrax._src.config import config
from arrax._src.core import ManualAxisType  # noqa: F401  (exported by jax.sharding)


class AxisType(enum.Enum):
  """How a mesh axis is used by sharding propagation (arrax records it; only Auto's meaning,
  propagation left to the compiler, applies)."""
  Auto = enum.auto()
  Explicit = enum.auto()
  Manual = enum.auto()

  def __repr__(self):
    return self.name


class IndivisibleError(ValueError):
  """An array axis whose size the number of its shards does not divide."""


class DuplicateSpecError(Exception):
  """A PartitionSpec naming one mesh axis twice."""


class UnconstrainedSingleton:
  """`P.UNCONSTRAINED`: an array axis whose sharding the compiler may choose (arrax's
  lowerings treat it as not split)."""

  def __repr__(self):
    return "UNCONSTRAINED"

  def __reduce__(self):
    return (_unconstrained, ())


UNCONSTRAINED = UnconstrainedSingleton()


def _unconstrained():
  return UNCONSTRAINED


def _names(p):
  """The mesh axis names of one PartitionSpec entry (None, a name or a tuple of names)."""
  if p is None or p is UNCONSTRAINED:
    return ()
  return p if isinstance(p, tuple) else (p,)


def _canonical_partition(p):
  if isinstance(p, (tuple, list)):
    p = tuple(p)
    return p[0] if len(p) == 1 else p
  return p


class PartitionSpec:
  """How each axis of an array is split over mesh axes: per array axis None (not split), a mesh
  axis name, or a tuple of names. Trailing axes not listed are not split."""
  __slots__ = ("_partitions", "unreduced", "reduced")

  def __init__(self, *partitions, unreduced=frozenset(), reduced=frozenset()):
    object.__setattr__(self, "_partitions", tuple(_canonical_partition(p) for p in partitions))
    object.__setattr__(self, "unreduced", frozenset(unreduced))
    object.__setattr__(self, "reduced", frozenset(reduced))
    used = {a for p in self._partitions for a in _names(p)}
    if used & self.unreduced:
      raise ValueError(f"partitions cannot overlap with unreduced axes passed to "
                       f"PartitionSpec. Got partitions: {self._partitions} and unreduced axes: "
                       f"{self.unreduced}")

  def __setattr__(self, name, value):
    raise AttributeError("PartitionSpec is immutable")

  def __repr__(self):
    inner = repr(self._partitions)[1:-1]
    extra = [f"{n}={{{', '.join(repr(a) for a in sorted(v))}}}"
             for n, v in (("unreduced", self.unreduced), ("reduced", self.reduced)) if v]
    if extra:
      inner = ", ".join(([inner.rstrip(",")] if inner else []) + extra)
    return f"P({inner})"

  __str__ = __repr__

  def __iter__(self):
    if self.unreduced or self.reduced:
      raise ValueError("Using *pspec is dangerous when PartitionSpec has non-empty "
                       "unreduced/reduced set. Please use *spec.partitions")
    return iter(self._partitions)

  @property
  def partitions(self):
    return self._partitions

  def __len__(self):
    return len(self._partitions)

  def __getitem__(self, i):
    return self._partitions[i]

  def __eq__(self, other):
    if not isinstance(other, PartitionSpec):
      return False
    return (self._partitions, self.unreduced, self.reduced) == (
        other._partitions, other.unreduced, other.reduced)

  def __hash__(self):
    return hash((self._partitions, self.unreduced, self.reduced))

  def __reduce__(self):
    return (PartitionSpec, self._partitions)

  UNCONSTRAINED = UNCONSTRAINED

  def count(self, value):
    return self._partitions.count(_canonical_partition(value))

  def index(self, value):
    return self._partitions.index(_canonical_partition(value))

  def update(self, partitions=None, unreduced=None, reduced=None):
    """A spec with `partitions`, `unreduced` or `reduced` replaced."""
    return PartitionSpec(*(self._partitions if partitions is None else partitions),
                         unreduced=self.unreduced if unreduced is None else unreduced,
                         reduced=self.reduced if reduced is None else reduced)

  def to_tangent_spec(self):
    return self

  def to_ct_spec(self):
    """The spec of a cotangent: unreduced and reduced axes swap roles."""
    return self.update(unreduced=self.reduced, reduced=self.unreduced)

  def to_lo(self):
    return [self]


P = PartitionSpec


def _all_axes(ty):
  """A property: whether every axis (of a non-empty mesh) has type `ty`."""
  return property(lambda self: bool(self.axis_types) and all(t == ty for t in self.axis_types))


def _axes_of_type(ty):
  """A property: the names of the axes of type `ty`."""
  return property(lambda self: tuple(n for n, t in zip(self.axis_names, self.axis_types)
                                     if t == ty))


class Mesh:
  """An n-dimensional array of devices with one name per axis."""

  def __init__(self, devices, axis_names, axis_types=None):
    if isinstance(axis_names, str):
      axis_names = (axis_names,)
    self.axis_names = tuple(axis_names)
    if not self.axis_names and (devices is None or np.size(devices) == 0):   # Mesh()
      self.devices = None
      self.axis_types = ()
      return
    self.devices = np.asarray(devices, dtype=object)
    if self.devices.ndim != len(self.axis_names):
      raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal the "
                       f"length of its second argument (`axis_names`), but got devices.ndim == "
                       f"{self.devices.ndim} and len(axis_names) == {len(self.axis_names)}.")
    if axis_types is None:
      axis_types = (AxisType.Auto,) * len(self.axis_names)
    elif isinstance(axis_types, AxisType):
      axis_types = (axis_types,)
    axis_types = tuple(axis_types)
    if not all(isinstance(a, AxisType) for a in axis_types):
      raise TypeError(f"axis_types passed to Mesh must be of type `jax.sharding.AxisType`. "
                      f"Got {axis_types} of type {tuple(type(a) for a in axis_types)}")
    if len(axis_types) != len(self.axis_names):
      raise ValueError(f"Number of axis names should match the number of axis_types. Got "
                       f"axis_names={self.axis_names} and axis_types={axis_types}")
    self.axis_types = axis_types

  @property
  def shape(self):
    return collections.OrderedDict(zip(self.axis_names, self.axis_sizes))

  @property
  def shape_tuple(self):
    return tuple(zip(self.axis_names, self.axis_sizes))

  @property
  def axis_sizes(self):
    return () if self.devices is None else self.devices.shape

  @property
  def size(self):
    return 0 if self.devices is None else self.devices.size

  @property
  def empty(self):
    return self.devices is None

  @property
  def device_ids(self):
    if self.empty:
      raise AssertionError("an empty Mesh has no device ids")
    return np.vectorize(lambda d: d.id, otypes=[int])(self.devices)

  @property
  def local_devices(self):
    """The mesh's devices attached to this process."""
    return [] if self.devices is None else [d for d in self.devices.flat
                                            if d.process_index == d.client.process_index()]

  @property
  def is_multi_process(self):
    return self.devices.size != len(self.local_devices)

  @property
  def local_mesh(self):
    """The sub-mesh of this process's devices (which must form a contiguous block)."""
    return self._local_mesh(backend.process_index())

  def _local_mesh(self, process_index):
    if self.empty:
      return self
    mine = np.vectorize(lambda d: d.process_index == process_index, otypes=[bool])(self.devices)
    block = []
    for axis in range(mine.ndim):
      hit = np.flatnonzero(mine.any(axis=tuple(a for a in range(mine.ndim) if a != axis)))
      block.append(slice(int(hit.min()), int(hit.max()) + 1))
    if not mine[tuple(block)].all():
      raise ValueError("When passing host local inputs to pjit, devices connected to a single "
                       "host must form a contiguous subcube of the global device mesh")
    return Mesh(self.devices[tuple(block)], self.axis_names, self.axis_types)

  @property
  def _flat_devices_tuple(self):
    return () if self.devices is None else tuple(self.devices.flat)

  def _key(self):
    return (tuple(d.id for d in self._flat_devices_tuple), self.axis_sizes, self.axis_names,
            self.axis_types)

  @property
  def _name_to_type(self):
    return dict(zip(self.axis_names, self.axis_types))

  @property
  def abstract_mesh(self):
    """The mesh's shape, names and axis types without its devices."""
    if self.empty:
      return AbstractMesh((), ())
    d = self.devices.flat[0]
    num_cores = getattr(d, "core_count", None) if d.platform == "gpu" else None
    return AbstractMesh(self.axis_sizes, self.axis_names, self.axis_types,
                        abstract_device=AbstractDevice(device_kind=d.device_kind,
                                                       num_cores=num_cores,
                                                       platform=d.platform))

  are_all_axes_auto = _all_axes(AxisType.Auto)
  are_all_axes_explicit = _all_axes(AxisType.Explicit)
  are_all_axes_manual = _all_axes(AxisType.Manual)
  auto_axes = _axes_of_type(AxisType.Auto)
  explicit_axes = _axes_of_type(AxisType.Explicit)
  manual_axes = _axes_of_type(AxisType.Manual)

  @property
  def is_scalar(self):
    """Whether the mesh is one device with no axes."""
    return self.size == 1 and not self.axis_names

  def update(self, devices=None, axis_names=None, axis_types=None):
    """A mesh with `devices`, `axis_names` or `axis_types` replaced."""
    return Mesh(self.devices if devices is None else devices,
                self.axis_names if axis_names is None else axis_names,
                self.axis_types if axis_types is None else axis_types)

  def __eq__(self, other):
    return isinstance(other, Mesh) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __enter__(self):   # (`with mesh:` only scopes code visually: nothing reads it)
    if config.jax_disallow_mesh_context_manager:
      raise RuntimeError("Mesh context manager is disabled.")
    return self

  def __exit__(self, *exc):
    return False

  def __str__(self):
    if self.empty:
      return "Mesh()"
    axes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.devices.shape))
    return f"Mesh({axes}, axis_types={self.axis_types})"

  def __repr__(self):
    if self.empty:
      return "Mesh(axis_sizes=(), axis_names=())"
    return (f"Mesh(axis_sizes={self.devices.shape}, axis_names={self.axis_names!r}, "
            f"axis_types={self.axis_types})")


@dataclasses.dataclass(frozen=True, slots=True)
class AbstractDevice:
  """The kind of device a mesh is made of (what compiling for it without devices needs)."""
  device_kind: str
  num_cores: int | None
  platform: str

  def __repr__(self):
    return f"AbstractDevice({self._repr()})"

  def _repr(self):
    return (f"device_kind={self.device_kind}, num_cores={self.num_cores}, "
            f"platform={self.platform}")


class AbstractMesh:
  """A mesh's axis sizes, names and types without devices (what tracing needs to know)."""

  def __init__(self, axis_sizes, axis_names, axis_types=None, *, abstract_device=None):
    self.axis_sizes = tuple(axis_sizes)
    self.axis_names = tuple(axis_names)
    if len(self.axis_sizes) != len(self.axis_names):
      raise ValueError(f"Number of axis names should match the number of axis sizes. Got "
                       f"axis_names={self.axis_names} and axis_sizes={self.axis_sizes}")
    if axis_types is None:
      axis_types = (AxisType.Auto,) * len(self.axis_names)
    elif isinstance(axis_types, AxisType):
      axis_types = (axis_types,)
    self.axis_types = tuple(axis_types)
    if len(self.axis_types) != len(self.axis_names):
      raise ValueError(f"Number of axis names should match the number of axis_types. Got "
                       f"axis_names={self.axis_names} and axis_types={self.axis_types}")
    self.abstract_device = abstract_device

  shape = property(lambda self: collections.OrderedDict(zip(self.axis_names, self.axis_sizes)))
  shape_tuple = property(lambda self: tuple(zip(self.axis_names, self.axis_sizes)))
  size = property(lambda self: math.prod(self.axis_sizes))
  empty = property(lambda self: not self.axis_names)
  abstract_mesh = property(lambda self: self)
  _name_to_type = property(lambda self: dict(zip(self.axis_names, self.axis_types)))

  are_all_axes_auto = _all_axes(AxisType.Auto)
  are_all_axes_explicit = _all_axes(AxisType.Explicit)
  are_all_axes_manual = _all_axes(AxisType.Manual)
  auto_axes = _axes_of_type(AxisType.Auto)
  explicit_axes = _axes_of_type(AxisType.Explicit)
  manual_axes = _axes_of_type(AxisType.Manual)

  def update(self, axis_sizes=None, axis_names=None, axis_types=None, **kwargs):
    """A mesh with `axis_sizes`, `axis_names`, `axis_types` (or `abstract_device`) replaced."""
    kwargs.setdefault("abstract_device", self.abstract_device)
    return AbstractMesh(self.axis_sizes if axis_sizes is None else axis_sizes,
                        self.axis_names if axis_names is None else axis_names,
                        self.axis_types if axis_types is None else axis_types, **kwargs)

  def update_axis_types(self, name_to_type):
    """The mesh with the types of the axes named in `name_to_type` (a dict) replaced."""
    return self.update(axis_types=tuple(name_to_type.get(n, t)
                                        for n, t in zip(self.axis_names, self.axis_types)))

  def _key(self):
    return (self.axis_sizes, self.axis_names, self.axis_types)

  def __eq__(self, other):
    return isinstance(other, AbstractMesh) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    if self.empty:
      return "AbstractMesh((), axis_types=())"
    axes = ", ".join(f"{n!r}: {s}" for n, s in zip(self.axis_names, self.axis_sizes))
    extra = "" if self.abstract_device is None else f", {self.abstract_device._repr()}"
    return f"AbstractMesh({axes}, axis_types={self.axis_types}{extra})"

  __str__ = __repr__


class _MeshContext:
  mesh = None
  abstract = None   # set by use_abstract_mesh


_mesh_context = _MeshContext()


class set_mesh:
  """Make `mesh` the mesh that PartitionSpecs given to jit and device_put refer to: at once
  (and for good) when called, or until the end of a `with set_mesh(mesh):` block."""

  def __init__(self, mesh):
    if mesh is not None and not isinstance(mesh, Mesh):
      raise ValueError(f"Expected mesh of type `jax.sharding.Mesh`. Got {type(mesh)}")
    self._previous = _mesh_context.mesh
    _mesh_context.mesh = mesh

  def __enter__(self):
    return None

  def __exit__(self, *exc):
    _mesh_context.mesh = self._previous
    return False


def get_mesh():
  """The mesh set by set_mesh (an empty Mesh when none is)."""
  mesh = _mesh_context.mesh
  return mesh if mesh is not None else Mesh(None, ())


def get_abstract_mesh():
  """The abstract mesh of the context: the one use_abstract_mesh set, else that of the mesh
  set by set_mesh (empty when neither is)."""
  if _mesh_context.abstract is not None:
    return _mesh_context.abstract
  return get_mesh().abstract_mesh


core.register_abstract_mesh_getter(get_abstract_mesh)


class use_abstract_mesh:
  """Make `mesh` the context's abstract mesh until the end of the `with` block."""

  def __init__(self, mesh):
    if not isinstance(mesh, AbstractMesh):
      raise ValueError(f"Expected mesh of type `jax.sharding.AbstractMesh`. Got {type(mesh)}")
    self._mesh = mesh
    self._previous = None

  def __enter__(self):
    self._previous = _mesh_context.abstract
    _mesh_context.abstract = self._mesh
    return self._mesh

  def __exit__(self, *exc):
    _mesh_context.abstract = self._previous
    return False


def make_mesh(axis_shapes, axis_names, axis_types=None, *, devices=None):
  """A Mesh of the first prod(axis_shapes) devices (default: all devices of the default
  backend) in device order; axis types default to Explicit."""
  axis_shapes = tuple(axis_shapes)
  axis_names = tuple(axis_names)
  if len(axis_shapes) != len(axis_names):
    raise ValueError(f"Mesh requires the ndim of its first argument (`devices`) to equal the "
                     f"length of its second argument (`axis_names`), but got devices.ndim == "
                     f"{len(axis_shapes)} and len(axis_names) == {len(axis_names)}.")
  if devices is None:
    devices = backend.devices()
  devices = list(devices)
  n = math.prod(axis_shapes)
  if len(devices) < n:
    raise ValueError(f"Number of devices {len(devices)} must be >= the product of mesh_shape "
                     f"{axis_shapes}")
  if axis_types is None:
    axis_types = (AxisType.Explicit,) * len(axis_names)
  arr = np.empty(n, dtype=object)
  arr[:] = devices[:n]
  return Mesh(arr.reshape(axis_shapes), axis_names, axis_types=axis_types)


def _is_local(device):
  return device.process_index == device.client.process_index()


def _check_memory_kind(device, kind):
  """ValueError (as jaxlib's) unless `device` can address memory of `kind`."""
  kinds = [m.kind for m in device.addressable_memories()]
  if kind not in kinds:
    raise ValueError(f"Could not find memory addressable by device {device.device_kind}. Device "
                     f"{device.device_kind} can address the following memory kinds: "
                     f"{', '.join(kinds)}. Got memory kind: {kind}")


class Sharding:
  """Where the shards of an array live (base class of the sharding kinds)."""

  @property
  def device_set(self):
    raise NotImplementedError

  @property
  def is_fully_addressable(self):
    """Whether this process holds every device of the sharding."""
    return all(_is_local(d) for d in self.device_set)

  @property
  def addressable_devices(self):
    """The sharding's devices attached to this process."""
    return {d for d in self.device_set if _is_local(d)}

  @property
  def num_devices(self):
    return len(self.device_set)

  @property
  def has_addressable_devices(self):
    """Whether this process holds one of the sharding's devices."""
    return any(_is_local(d) for d in self.device_set)

  def is_equivalent_to(self, other, ndim):
    """Whether `other` puts the same shards of an array of rank `ndim` on the same devices (in
    the same order) and in the same kind of memory."""
    shape = (self.num_devices,) * ndim   # (divisible by any number of shards)
    return (self._device_assignment == other._device_assignment
            and self.memory_kind == other.memory_kind
            and self.devices_indices_map(shape) == other.devices_indices_map(shape))

  @property
  def memory_kind(self):
    return self._memory_kind or "device"

  @property
  def _internal_device_list(self):
    return xc.DeviceList(self._device_assignment)

  def addressable_devices_indices_map(self, global_shape):
    return {d: i for d, i in self.devices_indices_map(global_shape).items() if _is_local(d)}

  @property
  def _addressable_device_assignment(self):
    return tuple(d for d in self._device_assignment if _is_local(d))

  def shard_shape(self, global_shape):
    idx = next(iter(self.devices_indices_map(tuple(global_shape)).values()))
    return tuple(len(range(*s.indices(n))) for s, n in zip(idx, global_shape))


class SingleDeviceSharding(Sharding):
  """A whole array on one device."""

  def __init__(self, device, *, memory_kind=None):
    if memory_kind is not None:
      _check_memory_kind(device, memory_kind)
    self._device = device
    self._memory_kind = memory_kind

  def check_compatible_aval(self, aval_shape):
    """Any shape fits one device."""

  def with_memory_kind(self, kind):
    return SingleDeviceSharding(self._device, memory_kind=kind)

  @property
  def device_set(self):
    return {self._device}

  @property
  def _device_assignment(self):
    return (self._device,)

  @property
  def is_fully_replicated(self):
    return True

  def devices_indices_map(self, global_shape):
    return {self._device: (slice(None),) * len(global_shape)}

  def __eq__(self, other):
    return (isinstance(other, SingleDeviceSharding) and self._device == other._device and
            self.memory_kind == other.memory_kind)

  def __hash__(self):
    return hash((self._device, self.memory_kind))

  def __repr__(self):
    return f"SingleDeviceSharding(device={self._device!r}, memory_kind={self.memory_kind})"


class GSPMDSharding(Sharding):
  """A sharding given as XLA's HloSharding (or OpSharding proto) over a list of devices: tile
  (i0, i1, ...) of the tile assignment holds the block of rows i0, i1, ... of each dimension,
  on the device at that position (and its replicas, when the last tile dimension replicates)."""

  def __init__(self, devices, op_sharding, *, memory_kind=None):
    self._devices = tuple(devices)
    if isinstance(op_sharding, xc.OpSharding):
      op_sharding = xc.HloSharding.from_proto(op_sharding)
    self._hlo_sharding = op_sharding
    self._memory_kind = memory_kind

  @classmethod
  def get_replicated(cls, device_assignment, *, memory_kind=None):
    """The replicated sharding over `device_assignment`."""
    return cls(tuple(device_assignment), xc.HloSharding.replicate(), memory_kind=memory_kind)

  @property
  def device_set(self):
    return set(self._devices)

  @property
  def _device_assignment(self):
    return self._devices

  @property
  def is_fully_replicated(self):
    return self._hlo_sharding.is_replicated() or self._hlo_sharding.num_devices() == 1

  def _to_xla_hlo_sharding(self, num_dimensions):
    return self._hlo_sharding

  def devices_indices_map(self, global_shape):
    hlo, nd = self._hlo_sharding, len(global_shape)
    if hlo.is_replicated() or hlo.is_manual():
      return {d: (slice(None),) * nd for d in self._devices}
    if hlo.is_maximal():
      owner = self._devices[hlo.tile_assignment_devices()[0]]
      return {d: (slice(None),) * nd for d in self._devices if d == owner}
    dims = list(hlo.tile_assignment_dimensions())
    tiles = np.asarray(hlo.tile_assignment_devices()).reshape(dims)
    if len(dims) < nd:
      raise ValueError(f"{self!r} does not fit an array of rank {nd}")
    out = {}
    for pos in np.ndindex(*dims):
      index = []
      for axis in range(nd):
        size, n = global_shape[axis], dims[axis]
        chunk = -(-size // n)
        index.append(slice(None) if n == 1 else
                     slice(min(pos[axis] * chunk, size), min((pos[axis] + 1) * chunk, size)))
      out[self._devices[int(tiles[pos])]] = tuple(index)
    return out

  def __eq__(self, other):
    return (isinstance(other, GSPMDSharding) and self._devices == other._devices and
            self._hlo_sharding == other._hlo_sharding and self.memory_kind == other.memory_kind)

  def __hash__(self):
    return hash((self._devices, str(self._hlo_sharding)))

  def __repr__(self):
    return f"GSPMDSharding({self._hlo_sharding}, memory_kind={self.memory_kind})"


def make_single_device_sharding(device, *, memory_kind=None):
  """A `SingleDeviceSharding` on `device`."""
  return SingleDeviceSharding(device, memory_kind=memory_kind)


class NamedSharding(Sharding):
  """An array laid out over `mesh` as `spec` says (axis i split over the mesh axes spec[i])."""

  def __init__(self, mesh: Mesh, spec: PartitionSpec, *, memory_kind=None):
    if not isinstance(spec, PartitionSpec):
      if isinstance(spec, list):
        raise TypeError("unhashable type: 'list'")
      raise TypeError(f"spec passed to NamedSharding must be a PartitionSpec. Got {spec!r} of "
                      f"type {type(spec)}")
    if memory_kind is not None and isinstance(mesh, Mesh) and not mesh.empty:
      _check_memory_kind(mesh.devices.flat[0], memory_kind)
    self.mesh = mesh
    self.spec = spec
    self._memory_kind = memory_kind
    seen = set()
    for p in spec._partitions:
      for name in _names(p):
        if name not in mesh.axis_names:
          raise ValueError(f"Resource axis: {name} of {spec} is not found in mesh: "
                           f"{mesh.axis_names}.")
        if name in seen:
          raise DuplicateSpecError(
              f"A single NamedSharding spec specification can map every mesh axis to at most "
              f"one positional dimension, but {spec} has duplicate entries for `{name}`")
        seen.add(name)

  @property
  def device_set(self):
    return set(self.mesh.devices.flat)

  @property
  def _device_assignment(self):
    return tuple(self.mesh.devices.flat)

  @property
  def num_devices(self):
    return self.mesh.size

  def _axes_of(self, dim):
    return _names(self.spec[dim]) if dim < len(self.spec) else ()

  def _shards_per_dim(self, ndim):
    sizes = self.mesh.shape
    return [math.prod(sizes[a] for a in self._axes_of(i)) for i in range(ndim)]

  @property
  def is_fully_replicated(self):
    return all(k == 1 for k in self._shards_per_dim(len(self.spec)))

  def _split_dim(self):
    """The array axis split over a one-dimensional mesh (pmap's layouts), or None."""
    for i, p in enumerate(self.spec._partitions):
      if p is not None:
        return i
    return None

  def check_compatible(self, shape, what="device_put args"):
    """Raise as JAX does when an array of `shape` cannot be laid out this way."""
    if len(self.spec) > len(shape):
      raise ValueError(
          f"One of {what} is incompatible with its sharding annotation {self!r}: Sharding "
          f"{self!r} is only valid for values of rank at least {len(self.spec)}, but was "
          f"applied to a value of rank {len(shape)}.")
    for i, (n, k) in enumerate(zip(shape, self._shards_per_dim(len(shape)))):
      if n % k:
        raise IndivisibleError(
            f"Sharding spec {self.spec._partitions} implies that array axis {i} is partitioned {k} "
            f"times, but does not evenly divide the dimension size {n}. Got shape: "
            f"{tuple(shape)} and sharding {self!r}")

  def shard_shape(self, global_shape):
    return tuple(n // k for n, k in zip(global_shape, self._shards_per_dim(len(global_shape))))

  def devices_indices_map(self, global_shape):
    """Each device's index (a tuple of slices) into an array of `global_shape`."""
    global_shape = tuple(global_shape)
    split = [i for i, k in enumerate(self._shards_per_dim(len(self.spec))) if k > 1]
    if split and split[-1] >= len(global_shape):
      raise IndexError(f"{self.spec} names {len(self.spec)} array axes, but the shape "
                       f"{global_shape} has {len(global_shape)}")
    sizes = self.mesh.shape
    pos = {n: i for i, n in enumerate(self.mesh.axis_names)}
    counts = self._shards_per_dim(len(global_shape))
    out = {}
    for coords in np.ndindex(*self.mesh.devices.shape):
      idx = []
      for dim, (n, k) in enumerate(zip(global_shape, counts)):
        if k == 1:
          idx.append(slice(None))
          continue
        block = 0
        for a in self._axes_of(dim):
          block = block * sizes[a] + coords[pos[a]]
        per = n // k
        idx.append(slice(block * per, (block + 1) * per))
      out[self.mesh.devices[coords]] = tuple(idx)
    return out

  def _xla_sharding(self, ndim):
    return _named_xla_sharding(self.mesh, self.spec, ndim)

  def _key(self):
    return (self.mesh, self.spec, self.memory_kind)

  def __eq__(self, other):
    return isinstance(other, NamedSharding) and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    if isinstance(self.mesh, AbstractMesh) and self._memory_kind is None:   # (a type's)
      return f"NamedSharding(mesh={self.mesh}, spec={self.spec})"
    return f"NamedSharding(mesh={self.mesh}, spec={self.spec}, memory_kind={self.memory_kind})"

  def check_compatible_aval(self, aval_shape):
    """ValueError if the spec names more axes than a value of shape `aval_shape` has."""
    if len(aval_shape) < len(self.spec):
      hint = " For scalars the PartitionSpec should be P()" if not aval_shape else ""
      raise ValueError(f"Sharding {self} is only valid for values of rank at least "
                       f"{len(self.spec)}, but was applied to a value of rank "
                       f"{len(aval_shape)}.{hint}")

  @property
  def replicated_axes(self):
    """The mesh axes the spec does not use (partitioned, unreduced or reduced)."""
    used = {a for p in self.spec._partitions for a in _names(p)}
    return frozenset(self.mesh.axis_names) - (used | self.spec.unreduced | self.spec.reduced)

  def with_memory_kind(self, kind):
    return self.update(memory_kind=kind)

  def update(self, **kwargs):
    """A copy with `mesh`, `spec` or `memory_kind` replaced."""
    return NamedSharding(kwargs.get("mesh", self.mesh), kwargs.get("spec", self.spec),
                         memory_kind=kwargs.get("memory_kind", self._memory_kind))


@functools.lru_cache(maxsize=1024)
def _named_xla_sharding(mesh, spec, ndim):
  """jaxlib's GSPMDSharding for `spec` over `mesh`: the mesh's device positions, transposed so
  that each array axis's mesh axes come first (in order) and unnamed axes last, form the tile
  assignment; unnamed axes of size > 1 become a replicated last tile dimension."""
  sharding = NamedSharding(mesh, spec)
  names = mesh.axis_names
  sizes = mesh.shape
  perm, tiles = [], []
  for d in range(ndim):
    axes = sharding._axes_of(d)
    perm += [names.index(a) for a in axes]
    tiles.append(math.prod(sizes[a] for a in axes))
  rest = [i for i in range(len(names)) if i not in perm]
  replicas = math.prod(mesh.devices.shape[i] for i in rest)
  devices = xc.DeviceList(tuple(mesh.devices.flat))
  if math.prod(tiles) == 1:
    hlo = xc.HloSharding.replicate()
  elif replicas == 1:
    hlo = xc.HloSharding.iota_tile(tiles, list(mesh.devices.shape), perm + rest)
  else:
    proto = xc.OpSharding()
    proto.type = xc.OpSharding.Type.OTHER
    proto.tile_assignment_dimensions = tiles + [replicas]
    proto.tile_assignment_devices = [int(i) for i in np.arange(mesh.size).reshape(
        mesh.devices.shape).transpose(perm + rest).flat]
    proto.replicate_on_last_tile_dim = True
    hlo = xc.HloSharding.from_proto(proto)
  return _jax.GSPMDSharding(devices, hlo)


@functools.lru_cache(maxsize=1024)
def split_sharding(devices: tuple, axis_name, ndim: int, dim):
  """The NamedSharding of a rank-`ndim` array split along `dim` (None: replicated) over a
  one-dimensional mesh of `devices` named `axis_name`."""
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


_UNSET = object()


class Shard:
  """One device's piece of an array (jax.Shard): its `device`, its `index` into the global
  array (from the sharding), its `replica_id` (which copy of that piece it is) and its `data`."""
  __slots__ = ("_device", "_sharding", "_global_shape", "_data", "_index", "_replica_id")

  def __init__(self, device, sharding, global_shape, data=None):
    self._device = device
    self._sharding = sharding
    self._global_shape = global_shape
    self._data = data
    self._index = self._replica_id = _UNSET

  @classmethod
  def _known(cls, device, sharding, global_shape, data, index, replica_id):
    """A Shard whose index and replica id the caller has already computed."""
    shard = cls(device, sharding, global_shape, data)
    shard._index, shard._replica_id = index, replica_id
    return shard

  @property
  def device(self):
    return self._device

  @property
  def data(self):
    return self._data

  @property
  def index(self):
    if self._index is _UNSET:
      try:
        indices_map = self._sharding.devices_indices_map
      except AttributeError:
        raise ValueError(f"Cannot calculate indices from sharding: {self._sharding}. Please "
                         "create a device to index mapping for your sharding.") from None
      self._index = indices_map(tuple(self._global_shape))[self._device]
    return self._index

  @property
  def replica_id(self):
    if self._replica_id is _UNSET:
      # Devices holding the same piece count 0, 1, ... in device order.
      mapping = self._sharding.devices_indices_map(tuple(self._global_shape))
      key = _index_key(mapping[self._device])
      order = [d for d in self._sharding._device_assignment
               if _index_key(mapping[d]) == key]
      self._replica_id = order.index(self._device)
    return self._replica_id

  def __repr__(self):
    try:
      return (f"Shard(device={self.device!r}, index={self.index}, "
              f"replica_id={self.replica_id}, data={self.data})")
    except ValueError:
      return f"Shard(device={self.device!r}, data={self.data})"


def _index_key(index):
  return tuple((i.start, i.stop, i.step) for i in index)


# ---- shardings in types (Explicit mesh axes) ----------------------------------------------------
_concrete_meshes: dict = {}   # abstract mesh -> the last Mesh seen with it


@functools.lru_cache(maxsize=256)
def _abstract_of(mesh):
  abstract = mesh.abstract_mesh
  _concrete_meshes[abstract] = mesh
  return abstract


def concrete_mesh(abstract):
  """The Mesh whose devices a value typed over the abstract mesh `abstract` lives on: the
  context's (set_mesh) if it fits, else the last one seen with that abstract mesh."""
  mesh = _mesh_context.mesh
  if mesh is not None and not mesh.empty and _abstract_of(mesh) == abstract:
    return mesh
  found = _concrete_meshes.get(abstract)
  if found is None:   # (the same devices with other axis types: auto_axes, explicit_axes)
    shape = (abstract.axis_sizes, abstract.axis_names)
    if (mesh is not None and not mesh.empty and
        (mesh.axis_sizes, mesh.axis_names) == shape):
      return mesh
    found = next((m for a, m in reversed(_concrete_meshes.items())
                  if (a.axis_sizes, a.axis_names) == shape), None)
  if found is None:
    raise ValueError(f"No concrete mesh with the devices of {abstract} is known: use "
                     "jax.set_mesh(mesh).")
  return found


@functools.lru_cache(maxsize=4096)
def _type_sharding(mesh, partitions, shape):
  names = mesh._name_to_type
  parts = []
  for p in partitions:
    kept = tuple(n for n in _names(p) if names.get(n) is AxisType.Explicit)
    parts.append(None if not kept else kept[0] if len(kept) == 1 else kept)
  if all(p is None for p in parts):
    return None
  sizes = mesh.shape
  for dim, (p, n) in enumerate(zip(parts, shape)):
    k = math.prod(sizes[a] for a in _names(p))
    if type(n) is int and n % k:
      raise ValueError(f"Sharding spec {_names(p)} implies that array axis {dim} is partitioned "
                       f"{k} times, but does not evenly divide the dimension size {n}. Got "
                       f"shape: {shape} and sharding {NamedSharding(mesh, PartitionSpec(*parts))}")
  core.sharding_typing.on = True
  return NamedSharding(mesh, PartitionSpec(*parts))


def type_sharding(sharding, shape):
  """The sharding a type of `shape` laid out as `sharding` (a NamedSharding over a Mesh or an
  AbstractMesh) carries: over the abstract mesh, one spec entry per axis, only Explicit mesh
  axes kept; None when no axis is split over an Explicit mesh axis (JAX's `get_sharding`)."""
  if not isinstance(sharding, NamedSharding):
    return None
  mesh = sharding.mesh
  if isinstance(mesh, Mesh):
    if mesh.empty or AxisType.Explicit not in mesh.axis_types:
      return None
    mesh = _abstract_of(mesh)
  elif AxisType.Explicit not in mesh.axis_types:
    return None
  parts = sharding.spec.partitions
  if len(parts) > len(shape):
    raise ValueError(f"Length of sharding.spec must be equal to aval's ndim. Got sharding.spec "
                     f"{sharding.spec}, aval.ndim {len(shape)} and sharding {sharding}")
  parts = parts + (None,) * (len(shape) - len(parts))
  return _type_sharding(mesh, parts, tuple(shape))


core._canon_sharding[0] = type_sharding


def canonicalize_sharding(s, api_name):
  """A user's `out_sharding=` as JAX's `canonicalize_sharding` reads it: None (also for a
  NamedSharding over an empty mesh), else a NamedSharding over an abstract mesh (a PartitionSpec
  names the context's mesh; a NamedSharding's mesh must be the context's, if one is set)."""
  if s is None or (isinstance(s, NamedSharding) and s.mesh.empty):
    return None
  if not isinstance(s, (NamedSharding, PartitionSpec)):
    raise TypeError(f"`out_sharding` argument of {api_name} only supports instances of "
                    f"`NamedSharding` or `PartitionSpec`. Got {s} of type: {type(s)}")
  if isinstance(s, NamedSharding):
    cur = get_abstract_mesh()
    mesh = s.mesh if isinstance(s.mesh, AbstractMesh) else _abstract_of(s.mesh)
    if (not cur.empty and mesh != cur
        and not (mesh.are_all_axes_auto and cur.are_all_axes_auto)):
      raise ValueError(f"Context mesh {cur} should match the mesh of sharding {mesh} passed to "
                       f"{api_name}.")
    s = NamedSharding(mesh, s.spec)
  return out_sharding_of(s, api_name)


def out_sharding_of(s, name="out_sharding"):
  """A user's `out_sharding=` (None, a PartitionSpec over the context's abstract mesh or a
  NamedSharding) as the NamedSharding a primitive's `sharding` parameter holds."""
  if s is None:
    return None
  if isinstance(s, PartitionSpec):
    mesh = get_abstract_mesh()
    if mesh.empty:
      raise ValueError(
          "Using PartitionSpec when you are not under a mesh context is not allowed. Please "
          "pass a NamedSharding instance or enter into a mesh context via `jax.set_mesh`. Got "
          f"{s}")
    s = NamedSharding(mesh, s)
  if not isinstance(s, NamedSharding):
    raise TypeError(f"{name} must be a PartitionSpec or NamedSharding, got {s!r}")
  if isinstance(s.mesh, Mesh):
    s = NamedSharding(_abstract_of(s.mesh), s.spec)
  core.sharding_typing.on = True
  return s
