"""arrax's Array: an immutable, asynchronously computed array in device memory.

It wraps one of jaxlib's device arrays (`_jax.ArrayImpl`), which arrax never modifies, so that
arrax and jax can live in one process. Operators and methods are attached by arrax.numpy.
"""
from __future__ import annotations

import enum
import weakref

import numpy as np
from jaxlib import _jax, xla_client as xc

from arrax._src import backend, core, dtypes, sharding_impls
from arrax._src.config import x64_enabled
from arrax._src.core import ShapedArray, Tracer, get_aval
from arrax._src.errors import ConcretizationTypeError

# Dtypes that NumPy's buffer protocol cannot express; they are read back by bitcasting on device.
_BITCAST_FOR_HOST = {dt: np.dtype(f"uint{dt.itemsize * 8}") for dt in dtypes._custom_float_dtypes}

host_transfers = {"to_device": 0, "to_host": 0}   # counted, as ARCHITECTURE.md 9 asks


class DLDeviceType(enum.IntEnum):
  """DLPack's device type codes (those arrax can exchange)."""
  kDLCPU = 1
  kDLCUDA = 2
  kDLCUDAHost = 3
  kDLROCM = 10


_DL_DEVICE_PLATFORMS = {DLDeviceType.kDLCPU: "cpu", DLDeviceType.kDLCUDA: "cuda",
                        DLDeviceType.kDLCUDAHost: "cuda", DLDeviceType.kDLROCM: "rocm"}
_MIN_DLPACK_VERSION = (0, 5)


def _device_from_hardware_id(platform, hardware_id):
  for dev in backend.get_client(platform).local_devices():
    if dev.local_hardware_id == hardware_id:
      return dev
  raise BufferError(f"no {platform} device with local hardware id {hardware_id}")


def dlpack_platform(dl_type):
  """The platform of a DLPack device type, or None if arrax cannot exchange it."""
  return _DL_DEVICE_PLATFORMS.get(dl_type)


def device_from_dlpack(dl_type, hardware_id):
  """The device of a `__dlpack_device__()` pair."""
  return _device_from_hardware_id(dlpack_platform(dl_type), hardware_id)


class Array:
  """An n-dimensional array living on a device. Immutable; operations return new arrays."""
  __slots__ = ("_buf", "aval", "_npy", "_committed", "__weakref__")
  __array_priority__ = 100

  def __init__(self, buf, aval: ShapedArray, committed: bool = False):
    self._buf = buf
    self.aval = aval
    self._npy = None
    self._committed = committed

  shape = property(lambda self: self.aval.shape)
  dtype = property(lambda self: self.aval.dtype)
  ndim = property(lambda self: len(self.aval.shape))
  size = property(lambda self: self.aval.size)
  weak_type = property(lambda self: self.aval.weak_type)
  nbytes = property(lambda self: self.aval.size * self.aval.dtype.itemsize)
  itemsize = property(lambda self: self.aval.dtype.itemsize)

  # ---- device and readiness -------------------------------------------------------------------
  def block_until_ready(self):
    """Wait until the value is computed; returns self."""
    self._buf.block_until_ready()
    return self

  def is_ready(self) -> bool:
    return self._buf.is_ready()

  def devices(self):
    return set(self._buf._sharding._devices)

  @property
  def device(self):
    devs = self._buf._sharding._devices
    return devs[0] if len(devs) == 1 else self._buf._sharding

  @property
  def is_fully_replicated(self) -> bool:
    return self.sharding.is_fully_replicated

  @property
  def is_fully_addressable(self) -> bool:
    return True

  @property
  def sharding(self):
    devs = self._buf._sharding._devices
    if len(devs) == 1:
      return sharding_impls.SingleDeviceSharding(devs[0])
    return self._buf._sharding

  @property
  def committed(self):
    return self._committed

  def delete(self):
    self._npy = None
    self._buf.delete()

  def is_deleted(self):
    return self._buf.is_deleted()

  def unsafe_buffer_pointer(self):
    return self._buf.unsafe_buffer_pointer()

  def copy_to_host_async(self):
    pass

  def on_device_size_in_bytes(self) -> int:
    """The bytes the array takes in device memory (all its shards)."""
    return self._buf.on_device_size_in_bytes()

  def platform(self) -> str:
    return self._buf.platform()

  def clone(self):
    """A copy of the array in new device memory (same sharding and committedness)."""
    return type(self)(self._buf.clone(), self.aval, self._committed)

  @property
  def traceback(self):
    """The Python traceback (jaxlib's) of the call that made the array."""
    return self._buf.traceback

  @property
  def addressable_shards(self):
    return [sharding_impls.Shard._known(self.device, self.sharding, self.shape, self,
                                        (slice(None),) * self.ndim, 0)]

  global_shards = addressable_shards

  def addressable_data(self, index: int):
    """The data of this process's `index`-th shard (the array itself: it has one)."""
    return self.addressable_shards[index].data

  # ---- host values ---------------------------------------------------------------------------
  @property
  def _value(self) -> np.ndarray:
    if self._npy is None:
      if self._buf.is_deleted():
        raise RuntimeError(f"Array has been deleted with shape={self.aval.str_short()}.")
      host_transfers["to_host"] += 1
      self._npy = _to_host(self)
    return self._npy

  def __array__(self, dtype=None, copy=None):
    value = self._value
    if copy is False and dtype is not None and np.dtype(dtype) != value.dtype:
      raise ValueError("Unable to avoid copy while creating an array as requested.")
    if dtype is not None and np.dtype(dtype) != value.dtype:
      return value.astype(dtype)
    return np.array(value) if copy else value

  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    """A DLPack capsule of the device buffer (DLPack 0.5 to 0.8; `copy` and `dl_device` as the
    array API specifies)."""
    devs = self._buf._sharding._devices
    if len(devs) > 1:
      raise _multi_device_dlpack_error(len(devs))
    src = devs[0]
    target = None
    if dl_device:
      dl_type, hardware_id = dl_device
      platform = _DL_DEVICE_PLATFORMS.get(dl_type)
      if platform is None:
        raise BufferError("The device specification passed to to_dlpack contains an "
                          f"unsupported device type (DLDeviceType: {dl_type})")
      target = _device_from_hardware_id(platform, hardware_id)
    if max_version is not None and tuple(max_version) < _MIN_DLPACK_VERSION:
      raise BufferError(f"arrax does not support any DLPack version below "
                        f"{_MIN_DLPACK_VERSION} but version ({max_version}) was requested.")
    arr = self
    if target is not None and target != src:
      if copy is not None and not copy:
        raise ValueError(f"Specified device={target!r} which requires a copy since the source "
                         f"device is {src!r}, however copy=False. Set copy=True or copy=None "
                         "to perform the requested operation.")
      arr = device_put_value(self._value, target, dtype=self.dtype, committed=True)
    elif copy:
      arr = device_put_value(self._value, src, dtype=self.dtype, committed=self._committed)
    return _jax.buffer_to_dlpack_managed_tensor(arr._buf, stream=stream)

  def __dlpack_device__(self):
    dev = self.device
    if dev.platform == "cpu":
      return DLDeviceType.kDLCPU, 0
    if dev.platform in ("gpu", "cuda"):
      return DLDeviceType.kDLCUDA, dev.local_hardware_id
    raise BufferError(f"__dlpack__ device only supported for CPU and GPU, got platform: "
                      f"{dev.platform}")

  def item(self, *args):
    return self._value.item(*args)

  def tolist(self):
    return self._value.tolist()

  def tobytes(self, order="C"):
    return self._value.tobytes(order)

  def _scalar_check(self, what):
    if self.ndim != 0:
      raise TypeError("Only scalar arrays can be converted to Python scalars; got "
                      f"arr.ndim={self.ndim}")

  def __bool__(self):
    if self.size != 1:
      raise ValueError("The truth value of an array with more than one element is ambiguous. "
                       "Use a.any() or a.all()")
    return bool(self._value)

  def __float__(self):
    self._scalar_check("float()")
    return float(self._value.reshape(()))

  def __int__(self):
    self._scalar_check("int()")
    return int(self._value.reshape(()))

  def __complex__(self):
    self._scalar_check("complex()")
    return complex(self._value.reshape(()))

  def __index__(self):
    if self.ndim != 0 or not np.issubdtype(self.dtype, np.integer):
      raise TypeError(f"Only integer scalar arrays can be converted to a scalar index; got "
                      f"{self.aval.str_short()}.")
    return int(self._value)

  def __hash__(self):
    raise TypeError("unhashable type: 'Array'. Arrays are mutable-looking values; use "
                    "a tuple or a Python scalar as a static argument instead.")

  def __len__(self):
    if not self.shape:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.shape:
      raise TypeError("iteration over a 0-d array")
    return (self[i] for i in range(self.shape[0]))

  def __reduce__(self):
    return (_reconstruct, (self._value, self.aval.weak_type))

  def __setitem__(self, idx, value):
    raise TypeError(
        "'Array' object does not support item assignment. JAX arrays are immutable. Instead "
        "of ``x[idx] = y``, use ``x = x.at[idx].set(y)`` or another .at[] method: "
        "https://docs.jax.dev/en/latest/_autosummary/jax.numpy.ndarray.at.html")

  # ---- printing ------------------------------------------------------------------------------
  def __repr__(self):
    prefix = "Array("
    dtype_str = f"dtype={self.dtype.name}" + (", weak_type=True" if self.aval.weak_type else "")
    line_width = np.get_printoptions()["linewidth"]
    if self.size == 0:
      s = f"[], shape={self.shape}"
    else:
      s = np.array2string(self._value, prefix=prefix, suffix=",", separator=", ",
                          max_line_width=line_width)
    last_line_len = len(s) - s.rfind("\n") + 1
    sep = " " * len(prefix) if last_line_len + len(dtype_str) + 2 > line_width else " "
    return f"{prefix}{s},{sep}{dtype_str})"

  def __str__(self):
    return str(self._value)

  def __format__(self, spec):
    return format(self._value if self.ndim else self._value[()], spec)


class ShardedArray(Array):
  """An Array whose data lives as shards on several devices (pmap's results).

  It holds one jaxlib array spanning all its devices (what multi-device executables take and
  return) and its `NamedSharding`. Single-device computations see it through `_buf`: a copy
  gathered on the default device, made once when first needed. Code that tests
  `type(x) is Array` (the fast paths) therefore never meets one.
  """
  __slots__ = ("_gbuf", "_named", "_gathered", "_shard_bufs")

  def __init__(self, gbuf, aval: ShapedArray, sharding):
    self.aval = aval
    self._npy = None
    self._committed = False   # (the fast paths' per-device logic never sees it; see above)
    self._gbuf = gbuf
    self._named = sharding
    self._gathered = None
    self._shard_bufs = None

  @property
  def _buf(self):
    if self._gathered is None:
      if not self._local_value_complete():
        raise NotImplementedError(
            "arrax runs eager operations on one device, and this array has shards in other "
            "processes: compute with it inside `jit(..., out_shardings=...)` instead.")
      self._gathered = device_put_value(self._value, backend.default_device(),
                                        dtype=self.aval.dtype)._buf
    return self._gathered

  def block_until_ready(self):
    self._gbuf.block_until_ready()
    return self

  def is_ready(self) -> bool:
    return self._gbuf.is_ready()

  def devices(self):
    return self._named.device_set

  @property
  def device(self):
    return self._named

  @property
  def sharding(self):
    return self._named

  @property
  def committed(self):
    return True

  def delete(self):
    self._gbuf.delete()

  def is_deleted(self):
    return self._gbuf.is_deleted()

  def unsafe_buffer_pointer(self):
    raise ValueError("unsafe_buffer_pointer() is supported only for unsharded arrays.")

  def on_device_size_in_bytes(self) -> int:
    return self._gbuf.on_device_size_in_bytes()

  def platform(self) -> str:
    return self._gbuf.platform()

  def clone(self):
    return ShardedArray(self._gbuf.clone(), self.aval, self._named)

  @property
  def traceback(self):
    return self._gbuf.traceback

  def _host_shard(self, k):
    """The NumPy value of the shard on device k (in the sharding's device order)."""
    devs = self._named._device_assignment
    shape = self._named.shard_shape(self.shape)
    if self.aval.dtype == dtypes.float0:
      return np.zeros(shape, dtypes.float0)
    try:
      return _shard_to_host(self._gbuf, devs, k).reshape(shape)
    except (TypeError, ValueError, BufferError, RuntimeError):
      # dtypes DLPack cannot carry (bfloat16, float8): a per-device view made by jaxlib
      # (which looks up jax's SingleDeviceSharding class, importing jax if installed).
      aval = ShapedArray(shape, self.aval.dtype, self.aval.weak_type)
      local = self._local_positions().index(k)
      buf = _jax.ArrayImpl(aval, backend.device_sharding(devs[k]), [self._gbuf._arrays[local]],
                           committed=True, _skip_checks=True)
      return _to_host(Array(buf, aval, True))

  @property
  def is_fully_addressable(self) -> bool:
    return self._named.is_fully_addressable

  def _local_positions(self):
    """The positions (in the sharding's device order) of this process's devices."""
    return [k for k, d in enumerate(self._named._device_assignment)
            if sharding_impls._is_local(d)]

  def _device_shards(self):
    """One single-device Array per local device (copies of the shards), in device order."""
    if self._shard_bufs is None:
      devs = self._named._device_assignment
      if self.is_fully_addressable:
        value = self._value
        idx = self._named.devices_indices_map(self.shape)
        pieces = [(value[idx[dev]], dev) for dev in devs]
      else:
        pieces = [(self._host_shard(k), devs[k]) for k in self._local_positions()]
      self._shard_bufs = [device_put_value(v, dev, dtype=self.aval.dtype,
                                           weak_type=self.aval.weak_type, committed=True)
                          for v, dev in pieces]
    return self._shard_bufs

  def _local_value_complete(self):
    """Whether this process's shards cover the whole array (always when fully addressable)."""
    if self.is_fully_addressable or self._named.is_fully_replicated:
      return True
    covered = np.zeros(self.shape, bool)
    for d, index in self._named.addressable_devices_indices_map(self.shape).items():
      covered[index] = True
    return bool(covered.all())

  @property
  def _value(self) -> np.ndarray:
    if self._npy is None:
      if self._gbuf.is_deleted():
        raise RuntimeError(f"Array has been deleted with shape={self.aval.str_short()}.")
      if not self._local_value_complete():
        raise RuntimeError(
            "Fetching value for `jax.Array` that spans non-addressable (non process local) "
            "devices is not possible. You can use "
            "`jax.experimental.multihost_utils.process_allgather` to print the global array or "
            "use `.addressable_shards` method of jax.Array to inspect the addressable (process "
            "local) shards.")
      host_transfers["to_host"] += 1
      if self._named.is_fully_replicated:   # every device holds the whole value
        value = self._host_shard(self._local_positions()[0])
      else:
        devs = self._named._device_assignment
        idx = self._named.devices_indices_map(self.shape)
        shards = {k: self._host_shard(k) for k in self._local_positions()}
        value = np.empty(self.shape, next(iter(shards.values())).dtype)
        for k, shard in shards.items():
          value[idx[devs[k]]] = shard
      value.flags.writeable = False
      self._npy = value
    return self._npy

  def _shards(self, everywhere):
    idx = self._named.devices_indices_map(self.shape)
    local = iter(self._device_shards())
    seen: dict = {}
    out = []
    for d in self._named._device_assignment:
      key = tuple((i.start, i.stop) for i in idx[d])
      if sharding_impls._is_local(d):
        out.append(sharding_impls.Shard._known(d, self._named, self.shape, next(local), idx[d],
                                               seen.get(key, 0)))
      elif everywhere:
        out.append(sharding_impls.Shard._known(d, self._named, self.shape, None, idx[d],
                                               seen.get(key, 0)))
      seen[key] = seen.get(key, 0) + 1
    return out

  @property
  def addressable_shards(self):
    """This process's shards (device, index, replica id, data as a single-device Array)."""
    return self._shards(False)

  @property
  def global_shards(self):
    """Every device's shard; those of other processes have `data=None`."""
    return self._shards(True)

  def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
    raise _multi_device_dlpack_error(self._named.num_devices)

  def __reduce__(self):
    return (_reconstruct, (self._value, self.aval.weak_type))


def _multi_device_dlpack_error(num_devices):
  return BufferError("to_dlpack can only pack a dlpack tensor from an array on a singular "
                     f"device, but an array with a Sharding over {num_devices} devices was "
                     "provided.")


class _HostBitcast:
  """How bfloat16-like buffers reach the host: the elementwise family registers its
  `bitcast_convert_type` here (array sits below lax and never imports it)."""
  fn = None


_host_bitcast = _HostBitcast()


def register_host_bitcast(fn):
  _host_bitcast.fn = fn


class _Capsule:
  """A DLPack capsule as NumPy's `from_dlpack` takes it (a CPU buffer)."""
  __slots__ = ("capsule",)

  def __init__(self, capsule):
    self.capsule = capsule

  def __dlpack__(self, stream=None, **kwargs):
    return self.capsule

  def __dlpack_device__(self):
    return (DLDeviceType.kDLCPU, 0)


def _shard_to_host(gbuf, devices, k):
  """A copy of device k's shard of the multi-device jaxlib array `gbuf`, read without making
  per-device jaxlib arrays (whose construction looks up jax's sharding class): the shards are
  re-listed with device k first (no copy), and the first shard is exported through DLPack."""
  if devices[0].platform != "cpu":
    raise BufferError("DLPack host views are CPU-only")
  if k:
    order = tuple(devices[k:] + devices[:k])
    gbuf = _jax.reorder_shards(gbuf, _jax.GSPMDSharding(xc.DeviceList(order),
                                                        gbuf._sharding._hlo_sharding),
                               _jax.ArrayCopySemantics.REUSE_INPUT)
  return np.array(np.from_dlpack(_Capsule(_jax.buffer_to_dlpack_managed_tensor(gbuf))))


def _reconstruct(value, weak_type):
  arr = device_put_value(value)
  return Array(arr._buf, arr.aval.update(weak_type=weak_type))


def _to_host(arr: Array) -> np.ndarray:
  dt = arr.dtype
  if dt in _BITCAST_FOR_HOST:
    # Run the bitcast eagerly even when called while tracing (e.g. reading a concrete bfloat16
    # scalar to make a jaxpr literal); otherwise it would be staged and recurse.
    with core.set_current_trace(core.eval_trace):
      raw = _host_bitcast.fn(arr, _BITCAST_FOR_HOST[dt])
    return np.asarray(raw._buf).view(dt)
  if dt == dtypes.float0:
    return np.zeros(arr.shape, dtype=dtypes.float0)
  try:
    return np.asarray(arr._buf)
  except (TypeError, ValueError, BufferError):
    return arr._buf._single_device_array_to_np_array_did_copy()[0]


def device_put_value(x, device=None, *, dtype=None, weak_type=None, copy=True,
                     committed=False) -> Array:
  """Copy a host value (NumPy array or Python scalar) to a device as an Array."""
  if device is None:
    device = backend.default_device()
  if dtype is None:
    aval = get_aval(x)
    dtype, wt = aval.dtype, aval.weak_type
  else:
    wt = False
  if weak_type is not None:
    wt = weak_type
  host = np.asarray(x)
  if host.dtype != dtype:
    host = host.astype(dtype)
  aval = core.intern_aval(ShapedArray(host.shape, dtype, wt))
  host_transfers["to_device"] += 1
  if dtype == dtypes.float0:
    host = np.zeros(host.shape, np.bool_)
    aval_dev = ShapedArray(host.shape, np.bool_)
    buf = _jax.batched_device_put(aval_dev, backend.device_sharding(device), [host], [device],
                                  committed, True, enable_x64=x64_enabled())
    return Array(buf, aval, committed)
  buf = _jax.batched_device_put(aval, backend.device_sharding(device), [host], [device],
                                committed, copy, enable_x64=x64_enabled())
  arr = Array(buf, aval, committed)
  if not aval.shape and core.trace_ctx.trace is not core.eval_trace:
    arr._npy = np.array(host)
    made_while_tracing[id(arr)] = arr
  return arr


# Scalars made from host values while a transformation runs (`jnp.array(3)` inside a jitted
# function). JAX stages those as literals, so tracing does too; scalar arrays made before
# (closed over) stay constvars, as in JAX.
made_while_tracing: "weakref.WeakValueDictionary[int, Array]" = weakref.WeakValueDictionary()


def is_array(x) -> bool:
  return type(x) is Array


def concretize(x, context=""):
  """A host NumPy value for an Array or host value; ConcretizationTypeError for tracers."""
  if isinstance(x, Tracer):
    raise ConcretizationTypeError(x, context)
  if isinstance(x, Array):
    return x._value
  return np.asarray(x)


# The classes `isinstance(x, arrax.Array)` accepts: arrays, tracers, and those registered by the
# modules above (typed PRNG keys are arrays too, as in JAX).
_array_classes = [Array, core.Tracer]


def register_array_class(cls):
  _array_classes.append(cls)


class _ArrayTypeMeta(type):
  def __instancecheck__(cls, x):
    return isinstance(x, tuple(_array_classes))

  def __subclasscheck__(cls, sub):
    return issubclass(sub, tuple(_array_classes))


class ArrayType(metaclass=_ArrayTypeMeta):
  """The public `arrax.Array` / `jnp.ndarray` type: `isinstance(x, arrax.Array)` holds for arrays
  and for the tracers that stand for them inside transformations, as in JAX."""

  def __new__(cls, *args, **kwargs):
    raise TypeError("arrax.Array cannot be instantiated directly; use arrax.numpy.array.")
