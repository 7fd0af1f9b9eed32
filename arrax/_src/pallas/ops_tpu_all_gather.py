"""A ring all-gather as a TPU Pallas kernel (jax.experimental.pallas.ops.tpu.all_gather): in
`shard_map` over one mesh axis, each device copies its shard into its slot of the output, then
passes half-shards around the ring in both directions with remote DMAs (one step per other
device), after a barrier with both neighbours.

Remote DMAs and the barrier semaphore need a TPU: arrax's TPU interpret mode runs one device's
kernel at a time with local copies only, so the kernel raises NotImplementedError there (JAX's
interpret mode simulates the devices' DMAs), and without interpret mode on CPU the
pallas_call raises ValueError, as JAX's does. A mesh axis of size 1 returns the input."""
from __future__ import annotations

import functools
from collections.abc import Sequence

from arrax._src import jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.environment import named_scope
from arrax._src.indexing import ds
from arrax._src.lax import elementwise as lax, parallel
from arrax._src.numpy import lax_numpy
from arrax._src.pallas import core as pallas_core, pallas_call, primitives, tpu
from arrax._src.shard_map import shard_map
from arrax._src.sharding_impls import Mesh, PartitionSpec

P = PartitionSpec


def get_neighbor(idx, mesh: Mesh, axis_name: str, *, direction: str):
  """The mesh index (one entry per mesh axis; the others this device's) of the neighbour of
  position `idx` along `axis_name` on the ring: "right" is the next position, any other
  direction the previous one."""
  which = mesh.axis_names.index(axis_name)
  index = [idx if i == which else parallel.axis_index(a)
           for i, a in enumerate(mesh.axis_names)]
  size = parallel.axis_size(axis_name)
  if direction == "right":
    index[which] = lax.rem(idx + 1, size)
  else:
    prev = idx - 1
    index[which] = lax_numpy.where(prev < 0, prev + size, prev)
  return tuple(index)


def ag_kernel(x_ref, o_ref, send_sem, recv_sem, *, axis_name: str, mesh: Mesh):
  """The all-gather on one device: `x_ref` its shard, `o_ref` (devices, *shard) the result;
  `send_sem`, `recv_sem` pairs of DMA semaphores (left, right)."""
  me = parallel.axis_index(axis_name)
  with named_scope("initial_copy"):
    tpu.async_copy(x_ref, o_ref.at[me], recv_sem[0]).wait()
  with named_scope("neighbour_lookup"):
    size = parallel.axis_size(axis_name)
    left = get_neighbor(me, mesh, axis_name, direction="left")
    right = get_neighbor(me, mesh, axis_name, direction="right")
  with named_scope("main_barrier"):
    barrier = tpu.get_barrier_semaphore()
    primitives.semaphore_signal(barrier, 1, device_id=left)
    primitives.semaphore_signal(barrier, 1, device_id=right)
    primitives.semaphore_wait(barrier, 2)
  half = x_ref.shape[0] // 2
  to_right = to_left = None
  for step in range(size - 1):
    # The upper halves travel right (the slot `step` places behind this device's) ...
    back = me - step
    slot = lax_numpy.where(back < 0, back + size, back)
    if to_right is not None:
      to_right.wait()
    view = o_ref.at[slot, ds(half, half)]
    to_right = tpu.async_remote_copy(view, view, send_sem[1], recv_sem[1], device_id=right)
    # ... and the lower halves left (the slot `step` places ahead).
    slot = lax.rem(me + step, size)
    if to_left is not None:
      to_left.wait()
    view = o_ref.at[slot, ds(0, half)]
    to_left = tpu.async_remote_copy(view, view, send_sem[0], recv_sem[0], device_id=left)
  with named_scope("wait_all_dma"):
    assert to_right is not None and to_left is not None
    to_right.wait()
    to_left.wait()


@functools.partial(jit.jit, static_argnames=["mesh", "axis_name", "memory_space"])
def all_gather(x, *, mesh: Mesh, axis_name: str | Sequence[str],
               memory_space: tpu.MemorySpace = tpu.MemorySpace.VMEM):
  """`x` (sharded over `axis_name`, one axis only) gathered on every device with
  `ag_kernel`: the result is replicated."""
  names = (axis_name,) if isinstance(axis_name, str) else tuple(axis_name)
  if len(names) > 1:
    raise NotImplementedError("Only one axis supported.")
  name, = names
  if mesh.shape[name] == 1:
    return x

  def local(shard):
    size = parallel.axis_size(name)
    semaphores = (tpu.SemaphoreType.DMA, tpu.SemaphoreType.DMA)
    out = pallas_call.pallas_call(
        functools.partial(ag_kernel, axis_name=name, mesh=mesh),
        out_shape=ShapeDtypeStruct((size, *shard.shape), shard.dtype),
        compiler_params=tpu.CompilerParams(collective_id=0),
        grid_spec=tpu.PrefetchScalarGridSpec(
            num_scalar_prefetch=0, scratch_shapes=(semaphores, semaphores),
            in_specs=[pallas_core.BlockSpec(memory_space=memory_space)],
            out_specs=pallas_core.BlockSpec(memory_space=memory_space)))(shard)
    return out.reshape((size * shard.shape[0], *shard.shape[1:]))

  return shard_map(local, mesh=mesh, in_specs=P(name), out_specs=P(None), check_vma=False)(x)
