"""`arrax.experimental.multihost_utils` (jax.experimental.multihost_utils): moving data between
the processes of a job with arrax's own jit over a global mesh.

Every process builds a global array from its own data (one block per process along a new
leading axis), and a jitted program whose result is replicated over the mesh (a sum for
broadcasts, the identity for gathers) makes XLA's partitioner insert the cross-process
collective; each process then reads its local copy of the result.
"""
from __future__ import annotations

import contextlib
import functools
import zlib

import numpy as np

from arrax._src import ad, backend, batching, core, dtypes
from arrax._src.array import Array, ShardedArray, device_put_value
from arrax._src.distributed import global_state
from arrax._src.global_arrays import assemble, make_array_from_single_device_arrays
from arrax._src.jit import jit
from arrax._src.numpy import reductions
from arrax._src.sharding_impls import Mesh, NamedSharding, PartitionSpec as P
from arrax._src.tree_util import tree_all, tree_flatten, tree_map, tree_unflatten

_AXES = ("processes", "local_devices")


def _process_mesh():
  """A mesh of every device: one row per process."""
  devices = np.array(backend.devices(), dtype=object)
  return Mesh(devices.reshape(backend.process_count(), backend.local_device_count()), _AXES)


def _psum(xs):
  return tree_map(lambda x: reductions.sum(x, axis=0, dtype=x.dtype), xs)


def _identity_fn(x):
  return x


@functools.lru_cache(maxsize=64)
def _replicating(fun, mesh):
  return jit(fun, out_shardings=NamedSharding(mesh, P()))


def _local_result(out):
  """This process's copy of a replicated result, as a NumPy array."""
  return np.asarray(out)


def broadcast_one_to_all(in_tree, is_source=None):
  """The source process's values (process 0's unless `is_source` says otherwise), in every
  process, as NumPy arrays. Leaves must have the same shape in every process."""
  if backend.process_count() == 1:
    return tree_map(np.asarray, in_tree)
  if is_source is None:
    is_source = backend.process_index() == 0
  mesh = _process_mesh()

  def to_global(x):
    x = np.asarray(x)
    mine = x if is_source else np.zeros_like(x)
    return host_local_array_to_global_array(mine[None], mesh, P("processes"))

  summed = _replicating(_psum, mesh)(tree_map(to_global, in_tree))
  return tree_map(_local_result, summed)


def _allgather_leaf(x, tiled):
  if isinstance(x, Array) and not x.is_fully_addressable:
    if not tiled:
      raise ValueError("Gathering global non-fully-addressable arrays only supports tiled=True")
    mesh = x.sharding.mesh
    return _local_result(_replicating(_identity_fn, mesh)(x))
  if backend.process_count() == 1:
    out = np.asarray(x)
    return out if tiled else out[None]
  mesh = _process_mesh()
  host = np.asarray(x)
  if host.ndim == 0 or not tiled:
    host = host[None]
  shape = (host.shape[0] * backend.process_count(),) + host.shape[1:]
  sharding = NamedSharding(mesh, P("processes"))
  pieces = [device_put_value(host, d, committed=True) for d in backend.local_devices()]
  global_arr = make_array_from_single_device_arrays(shape, sharding, pieces)
  return _local_result(_replicating(_identity_fn, mesh)(global_arr))


def process_allgather(in_tree, tiled=False):
  """Every process's values of `in_tree`, gathered in every process (NumPy arrays): stacked
  along a new axis 0 (or concatenated along axis 0 when `tiled`). A global array (one that
  spans processes) is gathered whole (`tiled=True` only)."""
  return tree_map(lambda x: _allgather_leaf(x, tiled), in_tree)


def sync_global_devices(name: str):
  """A barrier across all processes (they must pass the same `name`)."""
  h = np.uint32(zlib.crc32(name.encode()))
  assert_equal(h, f"sync_global_devices name mismatch ('{name}')")


def assert_equal(in_tree, fail_message: str = ""):
  """Raise AssertionError unless every process holds the same values of `in_tree`."""
  def expected(x):
    if isinstance(x, Array) and not x.is_fully_addressable:
      return np.asarray(x.addressable_data(0))
    x = np.asarray(x)
    if x.ndim == 0:
      x = x[None]
    return np.concatenate([x] * backend.process_count())

  out = process_allgather(in_tree, tiled=True)
  want = tree_map(expected, in_tree)
  if not tree_all(tree_map(lambda a, b: bool(np.all(np.equal(a, b))), want, out)):
    raise AssertionError(f"{fail_message}. Expected: {out}; got: {in_tree}.")


def reached_preemption_sync_point(step_id: int) -> bool:
  """Whether every process has reached the step at which to save after a preemption notice
  (always False outside a distributed job)."""
  if global_state.client is None:
    return False
  manager = global_state.preemption_sync_manager
  if manager is None:
    raise RuntimeError("Preemption sync manager has not been initialized. Make sure the "
                       "'jax_enable_preemption_service' config is enabled.")
  return manager.reached_sync_point(step_id)


# ---- host-local <-> global arrays ----------------------------------------------------------
def _mesh_axis_factor(global_mesh, pspec, dim):
  """How many times larger the global array is than the local one along `dim`."""
  if dim >= len(pspec) or pspec[dim] is None:
    return 1
  names = pspec[dim] if isinstance(pspec[dim], tuple) else (pspec[dim],)
  local = global_mesh.local_mesh.shape
  factor = 1
  for n in names:
    factor *= global_mesh.shape[n] // local[n]
  return factor


def _local_to_global_aval(aval, global_mesh, pspec):
  shape = tuple(n * _mesh_axis_factor(global_mesh, pspec, i) for i, n in enumerate(aval.shape))
  return core.ShapedArray(shape, aval.dtype)


def _global_to_local_aval(aval, global_mesh, pspec):
  shape = tuple(n // _mesh_axis_factor(global_mesh, pspec, i)
                for i, n in enumerate(aval.shape))
  return core.ShapedArray(shape, aval.dtype)


def _check_pspec(pspec):
  if pspec is None:
    raise ValueError("`None` is not a valid input to the pspecs argument. Please use "
                     "jax.sharding.PartitionSpec() if you wanted to replicate your input.")


def _host_value(arr):
  if isinstance(arr, Array):
    return arr._value
  arr = np.asarray(arr)
  if arr.dtype == dtypes.float0:
    return np.zeros(arr.shape, np.bool_)
  return arr.astype(dtypes.canonicalize_dtype(arr.dtype), copy=False)


def host_local_array_to_global_array_impl(arr, *, global_mesh, pspec):
  """One process's part (`arr`) of a global array laid out as `pspec` over `global_mesh`."""
  _check_pspec(pspec)
  if isinstance(arr, Array) and not arr.is_fully_addressable:
    return arr
  host = _host_value(arr)
  local = NamedSharding(global_mesh.local_mesh, pspec)
  idx = local.devices_indices_map(host.shape)
  devices = list(global_mesh.local_mesh.devices.flat)
  aval = _local_to_global_aval(core.ShapedArray(host.shape, host.dtype), global_mesh, pspec)
  return assemble(aval, NamedSharding(global_mesh, pspec), [host[idx[d]] for d in devices],
                  devices)


def global_array_to_host_local_array_impl(arr, *, global_mesh, pspec):
  """This process's part of the global array `arr`, as an array over its own devices."""
  _check_pspec(pspec)
  if isinstance(arr, Array) and arr.is_fully_addressable:
    return arr
  glob = NamedSharding(global_mesh, pspec)
  local = NamedSharding(global_mesh.local_mesh, pspec)
  aval = _global_to_local_aval(core.get_aval(arr), global_mesh, pspec)
  devices = list(global_mesh.local_mesh.devices.flat)
  if isinstance(arr, ShardedArray):
    if arr.sharding != glob:
      arr = jit(_identity_fn, out_shardings=glob)(arr)
    by_device = {s.device: s.data for s in arr.addressable_shards}
    return assemble(aval, local, [by_device[d] for d in devices], devices)
  host = _host_value(arr)
  idx = local.devices_indices_map(host.shape)
  return assemble(aval, local, [host[idx[d]] for d in devices], devices)


host_local_array_to_global_array_p = core.Primitive("host_local_array_to_global_array")
host_local_array_to_global_array_p.def_impl(host_local_array_to_global_array_impl)
host_local_array_to_global_array_p.def_abstract_eval(
    lambda x, *, global_mesh, pspec: _local_to_global_aval(x, global_mesh, pspec))
host_local_array_to_global_array_p.def_lowering(lambda ctx, x, **_: [x])
ad.deflinear(host_local_array_to_global_array_p,
             lambda ct, x, **params: [host_local_array_to_global_array_p.bind(ct, **params)])


@host_local_array_to_global_array_p.def_batch
def _ltg_batch(args, dims, *, global_mesh, pspec):
  (x,), (d,) = args, dims
  parts = list(pspec)
  if d is not None:
    parts.insert(d, None)
  return host_local_array_to_global_array_p.bind(x, global_mesh=global_mesh,
                                                 pspec=P(*parts)), d


global_array_to_host_local_array_p = core.Primitive("global_array_to_host_local_array")
global_array_to_host_local_array_p.def_impl(global_array_to_host_local_array_impl)
global_array_to_host_local_array_p.def_abstract_eval(
    lambda x, *, global_mesh, pspec: _global_to_local_aval(x, global_mesh, pspec))
global_array_to_host_local_array_p.def_lowering(lambda ctx, x, **_: [x])
ad.deflinear(global_array_to_host_local_array_p,
             lambda ct, x, **params: [global_array_to_host_local_array_p.bind(ct, **params)])
batching.defvectorized(global_array_to_host_local_array_p)


def _per_leaf_specs(what, tree, pspecs):
  return batching.flatten_axes(what, tree, pspecs)


def host_local_array_to_global_array(local_inputs, global_mesh, pspecs):
  """Each process's host-local values (its own part of every array) -> global arrays laid out
  over `global_mesh` as `pspecs` (a tree prefix of `local_inputs`) say; the devices of each
  process must form a contiguous block of the mesh."""
  leaves, treedef = tree_flatten(local_inputs)
  specs = _per_leaf_specs("input pspecs", treedef, pspecs)
  out = [host_local_array_to_global_array_p.bind(x, global_mesh=global_mesh, pspec=s)
         for x, s in zip(leaves, specs)]
  return tree_unflatten(treedef, out)


def global_array_to_host_local_array(global_inputs, global_mesh, pspecs):
  """Global arrays -> this process's parts of them, as arrays over its own devices (the
  inverse of host_local_array_to_global_array)."""
  leaves, treedef = tree_flatten(global_inputs)
  specs = _per_leaf_specs("output pspecs", treedef, pspecs)
  out = [global_array_to_host_local_array_p.bind(x, global_mesh=global_mesh, pspec=s)
         for x, s in zip(leaves, specs)]
  return tree_unflatten(treedef, out)


# ---- live devices ----------------------------------------------------------------------------
class ProcessFailureError(Exception):
  """Processes of the job failed while `live_devices` was in use (`failed_devices`)."""

  def __init__(self, failed_devices):
    self.failed_devices = failed_devices
    super().__init__(f"Devices failed: {failed_devices}")


def _live_devices(client, devices):
  processes = {d.process_index for d in devices}
  if backend.process_index() not in processes:
    raise ValueError("Provided devices do not have any local devices.")
  live = client.get_live_nodes(list(processes))
  return {d: live[d.process_index] for d in devices if d.process_index in live}


class _LiveDevices:
  """`with live_devices(devices) as alive:` runs the block on the devices whose processes are
  alive (a barrier among them); raises ProcessFailureError if some failed meanwhile.
  Experimental in JAX."""

  def __init__(self):
    self.devices = None

  @contextlib.contextmanager
  def __call__(self, devices):
    client = global_state.client
    if client is None:
      raise RuntimeError("Distributed JAX not initialized.")
    if not devices:
      raise ValueError("No devices provided.")
    if self.devices is None:
      self.devices = _live_devices(client, devices)
    error = None
    try:
      yield sorted(self.devices, key=lambda d: d.id)
    except Exception as e:   # re-raised below, after the liveness check
      error = e
    finally:
      before = self.devices
      self.devices = after = _live_devices(client, devices)
      failed = {d for d in before if d not in after or after[d] != before[d]}
      if failed:
        raise ProcessFailureError(failed) from error
      if error is not None:
        raise error


live_devices = _LiveDevices()
