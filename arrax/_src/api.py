"""Staging-level APIs: make_jaxpr, eval_shape, ShapeDtypeStruct, device_put/get."""
from __future__ import annotations

import functools

import numpy as np
from jaxlib import _jax

# jaxpr_printer registers how jaxprs print with core when imported.
from arrax._src import backend, core, dtypes, jaxpr_printer  # noqa: F401
from arrax._src import api_util, sharding_impls
from arrax._src.array import Array, ShardedArray, device_put_value
from arrax._src.layout import Format
from arrax._src.config import check_transfer, explicit_transfers, x64_enabled
from arrax._src.tracing import trace_to_jaxpr
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten


class ShapeDtypeStruct:
  """A shape, dtype (and weak type, sharding, layout) standing in for an array: eval_shape's
  results, lower()'s inputs. A `Format` passed as `sharding` gives the layout and sharding."""
  __slots__ = ("shape", "dtype", "sharding", "_dll", "weak_type", "manual_axis_type", "is_ref")

  def __init__(self, shape, dtype, *, sharding=None, weak_type=False, manual_axis_type=None,
               is_ref=False):
    if dtype is None:
      raise ValueError("ShapeDtypeStruct: dtype must be specified.")
    if manual_axis_type is not None and not isinstance(manual_axis_type, core.ManualAxisType):
      raise TypeError("`manual_axis_type` argument passed to ShapeDtypeStruct should be of type "
                      f"`jax.sharding.ManualAxisType`. Got type {type(manual_axis_type)}")
    self.shape = tuple(shape)
    self.dtype = dtype if isinstance(dtype, dtypes.ExtendedDType) else np.dtype(dtype)
    is_format = isinstance(sharding, Format)
    self._dll = sharding.layout if is_format else None
    self.sharding = sharding.sharding if is_format else sharding
    self.weak_type = weak_type
    self.manual_axis_type = manual_axis_type
    self.is_ref = is_ref

  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: core.shape_size(self.shape))

  @property
  def format(self):
    """The layout and sharding (a `Format`)."""
    return Format(self._dll, self.sharding)

  @classmethod
  def like(cls, x):
    """The struct of `x` (an array, tracer, NumPy array or scalar): a committed array's format
    (layout and sharding) is kept."""
    aval = _abstractify(x)
    if isinstance(aval, core.AbstractRef):
      raise NotImplementedError("Ref/AbstractRef support is not implemented. Please file an "
                                "issue at https://github.com/jax-ml/jax/issues")
    if getattr(aval, "is_high", False):
      raise NotImplementedError("Passing a HiVal to `ShapeDtypeStruct.like` is not implemented.")
    sharding = None
    if isinstance(x, core.Tracer) or getattr(x, "committed", True):
      sharding = (x.format if isinstance(x, Array)
                  else getattr(x, "sharding", getattr(aval, "sharding", None)))
    return cls(aval.shape, aval.dtype, sharding=sharding, weak_type=aval.weak_type)

  def update(self, **kwargs):
    """A struct with `shape`, `dtype`, `sharding`, `weak_type`, `manual_axis_type` or `is_ref`
    replaced."""
    if "sharding" in kwargs:
      sharding = kwargs.pop("sharding")
      if self._dll is not None and isinstance(sharding, sharding_impls.Sharding):
        raise ValueError(f"You are updating ShapeDtypeStruct with a {type(sharding)} when the "
                         f"original ShapeDtypeStruct had a concrete layout {self.format}. This "
                         "might lead to bugs. If you want to do this, create a new "
                         "ShapeDtypeStruct via the constructor.")
    else:
      sharding = self.format
    return ShapeDtypeStruct(
        kwargs.pop("shape", self.shape), kwargs.pop("dtype", self.dtype), sharding=sharding,
        weak_type=kwargs.pop("weak_type", self.weak_type),
        manual_axis_type=kwargs.pop("manual_axis_type", self.manual_axis_type),
        is_ref=kwargs.pop("is_ref", self.is_ref))

  @property
  def aval(self):
    # (a NamedSharding over Explicit mesh axes is part of the type)
    return core.ShapedArray(self.shape, self.dtype, self.weak_type, sharding=self.sharding)

  def __repr__(self):
    sh = "" if self.sharding is None else f", sharding={self.sharding}"
    dll = "" if self._dll is None else f", format={self._dll}"
    wt = ", weak_type=True" if self.weak_type else ""
    mat = "" if not self.manual_axis_type else f", manual_axis_type={self.manual_axis_type}"
    ref = ", is_ref=True" if self.is_ref else ""
    return f"ShapeDtypeStruct(shape={self.shape}, dtype={self.dtype.name}{sh}{dll}{wt}{mat}{ref})"

  def _key(self):
    return (self.shape, self.dtype, self.sharding, self._dll, self.weak_type,
            self.manual_axis_type, self.is_ref)

  def __eq__(self, other):
    return isinstance(other, ShapeDtypeStruct) and self._key() == other._key()

  def __hash__(self):
    return hash((self.shape, self.dtype, self.weak_type))


def _abstractify(x):
  try:
    return core.get_aval(x)
  except TypeError:
    raise TypeError(f"Argument '{x}' of type {type(x)} is not a valid JAX type") from None


def _trace_flat(fun, args, kwargs, static_argnums=()):
  static_argnums = api_util.ensure_index_tuple(static_argnums)
  n = len(args)
  norm = {i + n if i < 0 else i for i in static_argnums}
  dyn = [a for i, a in enumerate(args) if i not in norm]
  leaves, in_tree = tree_flatten((dyn, kwargs))
  avals = [_abstractify(x) for x in leaves]
  out_tree_box = []

  def flat_fun(*flat):
    d_args, d_kwargs = tree_unflatten(in_tree, flat)
    it = iter(d_args)
    full = [args[i] if i in norm else next(it) for i in range(n)]
    out = fun(*full, **d_kwargs)
    out_leaves, out_tree = tree_flatten(out)
    out_tree_box.append((out_tree, out))
    return out_leaves

  jaxpr, consts = trace_to_jaxpr(flat_fun, avals)
  return jaxpr, consts, out_tree_box[0][0]


def clear_caches():
  """Clear all compilation and staging caches (traces, jaxprs and compiled executables)."""
  core.clear_caches()


def _debug_info(fun, args, kwargs, static_argnums, out_tree):
  """What a jaxpr made by make_jaxpr records of `fun`: its source, argument names and the
  pytree paths of its results (`result['a'][0]`)."""
  info = api_util.debug_info("jit", fun, args, kwargs,
                             static_argnums=api_util.ensure_index_tuple(static_argnums),
                             sourceinfo=api_util.fun_sourceinfo(fun))
  return info._replace(result_paths=api_util.result_paths(out_tree))


def make_jaxpr(fun, static_argnums=(), axis_env=None, return_shape=False):
  """A function that returns the jaxpr of `fun` for given example arguments.

  Example:
    >>> print(make_jaxpr(lambda x: 2 + jnp.sin(x))(jnp.array(1.0)))
    { lambda ; a:f32[]. let b:f32[] = sin a; c:f32[] = add 2.0:f32[] b in (c,) }
  """
  @functools.wraps(fun)
  def make_jaxpr_f(*args, **kwargs):
    jaxpr, consts, out_tree = _trace_flat(fun, args, kwargs, static_argnums)
    closed = core.ClosedJaxpr(jaxpr.replace(debug_info=_debug_info(fun, args, kwargs,
                                                                    static_argnums, out_tree)),
                              consts)
    if return_shape:
      shapes = [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type)
                for a in closed.out_avals]
      return closed, tree_unflatten(out_tree, shapes)
    return closed

  make_jaxpr_f.__name__ = f"make_jaxpr({getattr(fun, '__name__', 'fun')})"
  return make_jaxpr_f


def eval_shape(fun, *args, **kwargs):
  """The shapes and dtypes `fun` would return, as ShapeDtypeStructs, without computing anything."""
  jaxpr, _, out_tree = _trace_flat(fun, args, kwargs)
  out = tree_unflatten(out_tree, [ShapeDtypeStruct(a.shape, a.dtype, weak_type=a.weak_type,
                                                   sharding=getattr(a, "sharding", None))
                                  for a in jaxpr.out_avals])
  # Typed PRNG keys (pytree nodes over their key data) are one struct of their key dtype.
  is_key = lambda x: isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType)
  return tree_map(lambda x: ShapeDtypeStruct(x.shape, x.dtype) if is_key(x) else x, out,
                  is_leaf=is_key)


def device_put(x, device=None, *, src=None, donate=False, may_alias=None):
  """Transfer a pytree of arrays to `device` (a Device or Sharding; committed) or the default
  device. A NamedSharding splits each array over its mesh as its spec says."""
  if isinstance(device, sharding_impls.SingleDeviceSharding):
    device = device._device
  elif isinstance(device, sharding_impls.GSPMDSharding):
    if device.num_devices != 1:
      raise NotImplementedError("device_put to a GSPMDSharding over several devices: arrax "
                                "lays arrays out over meshes; use a NamedSharding")
    device = device._devices[0]
  if isinstance(device, sharding_impls.PartitionSpec):
    mesh = sharding_impls.get_mesh()
    if mesh.empty:
      raise ValueError("Please set a mesh via `jax.set_mesh` if a PartitionSpec is passed to "
                       "device_put")
    device = sharding_impls.NamedSharding(mesh, device)

  def put(v):
    if isinstance(v, core.Tracer):
      return v
    if isinstance(device, sharding_impls.NamedSharding):
      return _put_named(v, device)
    if isinstance(v, Array) and type(v) is not Array:   # multi-device: gather
      if device is None:
        return v
      return device_put_value(v._value, device, dtype=v.dtype, weak_type=v.weak_type,
                              committed=True)
    if type(v) is Array:
      if device is None or v.device == device:
        return v if device is None else Array(v._buf, v.aval, committed=True)
      return device_put_value(v._value, device, dtype=v.dtype, weak_type=v.weak_type,
                              committed=True)
    check_transfer("host_to_device", lambda: f"aval={core.get_aval(v)!r}, dst_device={device}")
    return device_put_value(v, device, committed=device is not None)
  with explicit_transfers():
    return tree_map(put, x)


def _put_named(v, sharding):
  """`v` as a ShardedArray laid out as `sharding` says (one jaxlib array over its devices)."""
  if isinstance(v, Array):
    dtype, weak_type = v.dtype, v.weak_type
    host = v._value
  else:
    check_transfer("host_to_device", lambda: f"aval={core.get_aval(v)!r}, dst_device={sharding}")
    aval = core.get_aval(v)
    dtype, weak_type = aval.dtype, aval.weak_type
    host = np.asarray(v)
  if host.dtype != dtype:
    host = host.astype(dtype)
  sharding.check_compatible(host.shape)
  devices = sharding._addressable_device_assignment   # (other processes put their own shards)
  idx = sharding.devices_indices_map(host.shape)
  aval = core.ShapedArray(host.shape, dtype, weak_type)
  if dtype == dtypes.float0:
    raise NotImplementedError("device_put of float0 arrays over a mesh")
  pieces = [np.ascontiguousarray(host[idx[d]]) for d in devices]
  xla = sharding._xla_sharding(host.ndim)
  try:
    buf = _jax.batched_device_put(aval, xla, pieces, list(devices), True, True,
                                  enable_x64=x64_enabled())
  except RuntimeError:
    # jaxlib's batched put fails on partially replicated layouts (it calls a hook only jax
    # installs); assemble the array from one single-device array per shard instead.
    bufs = [device_put_value(p, d, dtype=dtype, committed=True)._buf
            for p, d in zip(pieces, devices)]
    buf = _jax.ArrayImpl(aval, xla, bufs, committed=True, _skip_checks=True)
  # (over Explicit mesh axes the array's type carries the sharding)
  return ShardedArray(buf, core.ShapedArray(host.shape, dtype, weak_type, sharding=sharding),
                      sharding)


def device_get(x):
  """Fetch a pytree of arrays to host NumPy values."""
  def get(v):
    if isinstance(v, Array):
      return v._value
    return v
  with explicit_transfers():
    return tree_map(get, x)


def block_until_ready(x):
  """Wait for every array in a pytree to be computed; returns the pytree."""
  if type(x) is Array:   # one array: the common case
    x._buf.block_until_ready()
    return x
  leaves = tree_flatten(x)[0]
  bufs = [leaf._buf for leaf in leaves if type(leaf) is Array]
  if len(bufs) < len(leaves):
    for leaf in leaves:
      if type(leaf) is not Array and isinstance(leaf, Array):   # (a sharded array waits for
        leaf.block_until_ready()                                #  its own buffers)
  if len(bufs) == 1:
    bufs[0].block_until_ready()
  elif bufs:
    _jax.batched_block_until_ready(bufs)   # one wait for many arrays
  return x


def typeof(x):
  """The abstract value (type) of `x`: shape, dtype and weak type; typed PRNG keys have their
  extended dtype (`key<fry>[]`)."""
  hi = core.pytype_aval_mappings.get(type(x))
  if hi is not None:
    return hi(x)
  dt = getattr(x, "dtype", None)
  if isinstance(dt, dtypes.ExtendedDType) and not isinstance(x, core.Tracer):
    return core.ShapedArray(x.shape, dt)
  return core.get_aval(x)
