"""pmap dispatch benchmarks (issue 14) on 4 simulated CPU devices: small steps, where the time
is the per-call overhead (placing arguments, launching one replicated XLA program, wrapping the
multi-device results) plus the devices' rendezvous in collectives."""
from __future__ import annotations

import numpy as np

from harness import benchmark, rng

_N = 4


@benchmark(devices=_N)
def pmap_add_4dev(L):
  """pmap(x + 1) over 4 devices on an f32[4, 3] that already lives on them (no collective)."""
  f = L.top.pmap(lambda x: x + 1)
  x = f(L.asarray(rng(30).standard_normal((_N, 3), np.float32)))
  return lambda: L.block(f(x))


@benchmark(devices=_N)
def pmap_psum_4dev(L):
  """pmap(psum(x)) over 4 devices on an f32[4, 3] that already lives on them."""
  f = L.top.pmap(lambda x: L.lax.psum(x, "i"), "i")
  x = f(L.asarray(rng(31).standard_normal((_N, 3), np.float32)))
  return lambda: L.block(f(x))


@benchmark(devices=_N)
def pmap_train_step_4dev(L):
  """A data-parallel SGD step of a 16-32-1 MLP: parameters in_axes/out_axes None, a per-device
  batch of 8 (host NumPy data each call), value_and_grad, pmean of loss and gradients."""
  jnp, top, lax = L.numpy, L.top, L.lax
  r = rng(32)
  params = [(L.asarray((r.standard_normal((16, 32)) / 4).astype(np.float32)),
             L.asarray(np.zeros(32, np.float32))),
            (L.asarray((r.standard_normal((32, 1)) / 6).astype(np.float32)),
             L.asarray(np.zeros(1, np.float32)))]
  xs = r.standard_normal((_N, 8, 16)).astype(np.float32)
  ys = r.standard_normal((_N, 8)).astype(np.float32)

  def loss(params, x, y):
    (w1, b1), (w2, b2) = params
    return jnp.mean(((jnp.tanh(x @ w1 + b1) @ w2 + b2)[:, 0] - y) ** 2)

  def step(params, x, y):
    value, grads = top.value_and_grad(loss)(params, x, y)
    value, grads = lax.pmean((value, grads), "b")
    return top.tree_util.tree_map(lambda p, g: p - 0.01 * g, params, grads), value

  f = top.pmap(step, "b", in_axes=(None, 0, 0), out_axes=(None, None))
  state = [params]

  def call():
    state[0], value = f(state[0], xs, ys)
    return L.block(value)
  return call
