"""shard_map benchmarks (issue 14) on 4 simulated CPU devices: small steps, where the time is the
per-call overhead (placing arguments, launching one SPMD-partitioned XLA program, wrapping the
multi-device results) plus the devices' rendezvous in collectives. NumPy has no equivalent of a
program split over devices, so only arrax and JAX run."""
from __future__ import annotations

import numpy as np

from harness import benchmark, rng

_N = 4


def _mesh(L):
  devs = np.array(L.top.devices()[:_N], dtype=object)
  return L.top.sharding.Mesh(devs, ("i",))


@benchmark(devices=_N)
def shard_map_psum_jit_4dev(L):
  """jit(shard_map(psum(x))) over a 4-device mesh on an f32[8, 3] that already lives there."""
  P = L.top.sharding.PartitionSpec
  f = L.top.jit(L.top.shard_map(lambda x: L.lax.psum(x, "i"), mesh=_mesh(L), in_specs=P("i"),
                                out_specs=P()))
  x = L.top.device_put(rng(40).standard_normal((2 * _N, 3)).astype(np.float32),
                       L.top.NamedSharding(_mesh(L), P("i")))
  return lambda: L.block(f(x))


@benchmark(devices=_N)
def shard_map_train_step_jit_4dev(L):
  """A data-parallel SGD step of a 16-32-1 MLP as jit(shard_map(step)): parameters replicated
  (P()), a per-device batch of 8 split over the mesh (host NumPy data each call),
  value_and_grad of the per-device loss, pmean of loss and gradients."""
  jnp, top, lax = L.numpy, L.top, L.lax
  P = top.sharding.PartitionSpec
  r = rng(41)
  params = [(L.asarray((r.standard_normal((16, 32)) / 4).astype(np.float32)),
             L.asarray(np.zeros(32, np.float32))),
            (L.asarray((r.standard_normal((32, 1)) / 6).astype(np.float32)),
             L.asarray(np.zeros(1, np.float32)))]
  xs = r.standard_normal((_N * 8, 16)).astype(np.float32)
  ys = r.standard_normal((_N * 8,)).astype(np.float32)

  def loss(params, x, y):
    (w1, b1), (w2, b2) = params
    return jnp.mean(((jnp.tanh(x @ w1 + b1) @ w2 + b2)[:, 0] - y) ** 2)

  def step(params, x, y):
    value, grads = top.value_and_grad(loss)(params, x, y)
    value, grads = lax.pmean((value, grads), "i")
    return top.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), value

  f = top.jit(top.shard_map(step, mesh=_mesh(L), in_specs=(P(), P("i"), P("i")),
                            out_specs=(P(), P()), check_vma=False))
  state = [params]

  def call():
    state[0], value = f(state[0], xs, ys)
    return L.block(value)
  return call
