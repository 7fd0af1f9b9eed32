"""Convolution and pooling benchmarks (issue 12): a 3x3 convolution and a 2x2 max-pool on a
32x32x32x64 NHWC batch (batch 32, 32x32 pixels, 64 channels in and out), forward and backward,
and a stax CNN training step."""
from __future__ import annotations

import numpy as np

from harness import benchmark, rng

_DN = ("NHWC", "HWIO", "NHWC")


def _conv_data(L):
  r = rng(20)
  x = L.asarray(r.standard_normal((32, 32, 32, 64), np.float32))
  w = L.asarray((r.standard_normal((3, 3, 64, 64)) / 24).astype(np.float32))
  ct = L.asarray(r.standard_normal((32, 32, 32, 64), np.float32))
  return x, w, ct


def _conv(L):
  return lambda x, w: L.lax.conv_general_dilated(x, w, (1, 1), "SAME", dimension_numbers=_DN)


@benchmark()
def conv3x3_fwd(L):
  """jit(conv_general_dilated) 3x3, stride 1, SAME, NHWC/HWIO, 32x32x32x64 -> 64 channels."""
  x, w, _ = _conv_data(L)
  f = L.jit(_conv(L))
  return lambda: L.block(f(x, w))


@benchmark()
def conv3x3_fwd_eager(L):
  """conv3x3_fwd called eagerly."""
  x, w, _ = _conv_data(L)
  f = _conv(L)
  return lambda: L.block(f(x, w))


@benchmark()
def conv3x3_grad_input(L):
  """jit of the VJP of the 3x3 convolution w.r.t. its input (a transposed convolution), with a
  random cotangent."""
  x, w, ct = _conv_data(L)
  conv = _conv(L)
  f = L.jit(lambda x, w, ct: L.top.vjp(lambda x: conv(x, w), x)[1](ct)[0])
  return lambda: L.block(f(x, w, ct))


@benchmark()
def conv3x3_grad_kernel(L):
  """jit of the VJP of the 3x3 convolution w.r.t. its kernel (a convolution of the input with
  the cotangent), with a random cotangent."""
  x, w, ct = _conv_data(L)
  conv = _conv(L)
  f = L.jit(lambda x, w, ct: L.top.vjp(lambda w: conv(x, w), w)[1](ct)[0])
  return lambda: L.block(f(x, w, ct))


@benchmark()
def conv3x3_grad_both(L):
  """jit(grad) of sum(conv(x, w) * ct) w.r.t. input and kernel."""
  x, w, ct = _conv_data(L)
  conv = _conv(L)
  f = L.jit(L.top.grad(lambda x, w, ct: (conv(x, w) * ct).sum(), argnums=(0, 1)))
  return lambda: L.block(f(x, w, ct))


def _pool(L):
  if L.is_numpy:
    return lambda x: x.reshape(32, 16, 2, 16, 2, 64).max(axis=(2, 4))
  return lambda x: L.lax.reduce_window(x, -np.inf, L.lax.max, (1, 2, 2, 1), (1, 2, 2, 1),
                                       "VALID")


@benchmark(numpy=True)
def maxpool2x2_fwd(L):
  """jit 2x2 stride-2 max-pool (lax.reduce_window max) of 32x32x32x64 (NumPy: reshape + max)."""
  x, _, _ = _conv_data(L)
  f = L.jit(_pool(L))
  return lambda: L.block(f(x))


@benchmark()
def maxpool2x2_grad(L):
  """jit of the forward max-pool and its VJP w.r.t. the input, with a random cotangent."""
  x, _, _ = _conv_data(L)
  ct = L.asarray(rng(21).standard_normal((32, 16, 16, 64), np.float32))
  pool = _pool(L)

  def f(x, ct):
    y, vjp = L.top.vjp(pool, x)
    return y, vjp(ct)[0]
  f = L.jit(f)
  return lambda: L.block(f(x, ct))


@benchmark()
def stax_cnn_train_step(L):
  """jit(update) of a stax CNN, (Conv 3x3 32 - Relu - MaxPool 2x2) - (Conv 3x3 64 - Relu -
  MaxPool 2x2) - Flatten - Dense 10 - LogSoftmax, cross-entropy loss, Adam, on a batch of
  32 32x32x3 images."""
  stax, optimizers, jnp, top = L.stax, L.optimizers, L.numpy, L.top
  init, apply = stax.serial(
      stax.Conv(32, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)),
      stax.Conv(64, (3, 3), padding="SAME"), stax.Relu, stax.MaxPool((2, 2), strides=(2, 2)),
      stax.Flatten, stax.Dense(10), stax.LogSoftmax)
  _, params = init(L.random.PRNGKey(0), (32, 32, 32, 3))
  r = rng(22)
  images = L.asarray(r.standard_normal((32, 32, 32, 3), np.float32))
  labels = L.asarray(np.eye(10, dtype=np.float32)[r.integers(0, 10, 32)])
  opt_init, opt_update, get_params = optimizers.adam(1e-3)

  def loss(params, batch):
    inputs, targets = batch
    return -jnp.mean(jnp.sum(apply(params, inputs) * targets, axis=1))

  @top.jit
  def update(i, opt_state, batch):
    params = get_params(opt_state)
    return opt_update(i, top.grad(loss)(params, batch), opt_state)

  state = [opt_init(params), 0]

  def step():
    state[0] = update(state[1], state[0], (images, labels))
    state[1] += 1
    return L.block(state[0])
  return step
