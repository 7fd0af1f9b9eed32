"""pmap in a job of several processes (after `arrax.distributed.initialize`), as JAX's: each
process passes arrays whose mapped axis has one entry per *local* device, the program runs
over the devices of every process (the axis, its size and the collectives are global), and
each process gets back arrays over its own devices.

`ProcessLocalPmap` wraps pmap's executable for the global axis: it lays each process-local
argument out as its share of the global argument (only the local shards exist in this
process) and turns each global result into the process-local array of its local shards.
"""
from __future__ import annotations

import numpy as np
from jaxlib import _jax

from arrax._src import backend
from arrax._src.array import ShardedArray, device_put_value
from arrax._src.config import x64_enabled
from arrax._src.core import Literal, Tracer, _raise_escaped
from arrax._src.sharding_impls import _is_local, split_sharding, xla_sharding


def global_axis_size(local_size, devices, backend_name):
  """The size of pmap's axis over every process (the same as `local_size` in a one-process
  job, or when the devices are given explicitly)."""
  if devices is not None:
    return local_size
  n = backend.process_count(backend_name)
  return local_size * n


class ProcessLocalPmap:
  """pmap's executable `inner` (over the devices of all processes) called with, and returning,
  process-local arrays."""
  __slots__ = ("inner", "axis_name", "local", "local_devices")

  def __init__(self, inner, axis_name):
    self.inner = inner
    self.axis_name = axis_name
    self.local = [k for k, d in enumerate(inner.devices) if _is_local(d)]
    self.local_devices = tuple(inner.devices[k] for k in self.local)

  def _to_global(self, x, aval, axis):
    if isinstance(x, Tracer):
      _raise_escaped(x)
    if isinstance(x, Literal):
      x = x.val
    host = np.asarray(x)
    if host.dtype != aval.dtype:
      host = host.astype(aval.dtype)
    if axis is None:
      pieces = [host] * len(self.local)
    else:
      if host.shape[axis] != len(self.local):
        raise ValueError(f"pmap got an argument whose mapped axis has size {host.shape[axis]}; "
                         f"in a job of several processes it must equal the number of local "
                         f"devices ({len(self.local)}).")
      pieces = [np.ascontiguousarray(host[(slice(None),) * axis + (slice(i, i + 1),)])
                for i in range(len(self.local))]
    devices = self.inner.devices
    buf = _jax.batched_device_put(aval, xla_sharding(devices, aval.ndim, axis), pieces,
                                  list(self.local_devices), True, True,
                                  enable_x64=x64_enabled())
    return ShardedArray(buf, aval, split_sharding(devices, self.axis_name, aval.ndim, axis))

  def _to_local(self, out, axis):
    aval = out.aval
    if axis is not None:
      shape = list(aval.shape)
      shape[axis] = len(self.local)
      aval = aval.update(shape=tuple(shape))
    pieces = [out._host_shard(k) for k in self.local]
    bufs = [device_put_value(p, d, dtype=aval.dtype, weak_type=aval.weak_type,
                             committed=True)._buf for p, d in zip(pieces, self.local_devices)]
    gbuf = _jax.ArrayImpl(aval, xla_sharding(self.local_devices, aval.ndim, axis), bufs,
                          committed=True, _skip_checks=True)
    return ShardedArray(gbuf, aval,
                        split_sharding(self.local_devices, self.axis_name, aval.ndim, axis))

  def run(self, args):
    inner = self.inner
    glob = [self._to_global(x, a, ax) for x, a, ax in zip(args, inner.in_avals, inner.in_axes)]
    outs = inner.run(glob)
    return [self._to_local(o, s._split_dim()) for o, s in zip(outs, inner.out_shardings)]
