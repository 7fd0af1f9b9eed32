"""Data-parallel training of an MLP with `pmap` over all local devices.

    python examples/data_parallel.py           # on 4 simulated CPU devices unless XLA_FLAGS says

Each device gets one slice of every batch, computes the loss and gradient on it, and
`lax.pmean` averages both across devices (an XLA all-reduce), so every device applies the same
update to its copy of the parameters (`in_axes=None` / `out_axes=None`). Since the per-device
batches are equally large, the averaged gradient is the gradient of the mean loss over the whole
batch: the example trains the same model on one device with the concatenated batches and checks
that both runs end with the same parameters (to float tolerance).
"""
import os

# Simulate several CPU devices (must happen before the XLA client is created).
os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=4")

import numpy as np  # noqa: E402

import arrax as jax  # noqa: E402
import arrax.numpy as jnp  # noqa: E402
from arrax import lax  # noqa: E402

LAYERS = (8, 32, 32, 1)
LEARNING_RATE = 0.05
STEPS = 20
PER_DEVICE_BATCH = 16


def init_params(key):
  params = []
  for n_in, n_out in zip(LAYERS[:-1], LAYERS[1:]):
    key, wk = jax.random.split(key)
    params.append((jax.random.normal(wk, (n_in, n_out)) / np.sqrt(n_in), jnp.zeros(n_out)))
  return params


def predict(params, x):
  for w, b in params[:-1]:
    x = jnp.tanh(x @ w + b)
  w, b = params[-1]
  return (x @ w + b)[..., 0]


def loss_fn(params, x, y):
  return jnp.mean((predict(params, x) - y) ** 2)


def sgd(params, grads):
  return jax.tree_util.tree_map(lambda p, g: p - LEARNING_RATE * g, params, grads)


def parallel_step(params, x, y):
  """One device's step: local loss and gradient, averaged over the 'batch' axis."""
  loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
  loss, grads = lax.pmean((loss, grads), "batch")
  return sgd(params, grads), loss


p_step = jax.pmap(parallel_step, "batch", in_axes=(None, 0, 0), out_axes=(None, None))


@jax.jit
def single_step(params, x, y):
  loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
  return sgd(params, grads), loss


def make_data(n_devices):
  rng = np.random.RandomState(0)
  true_w = rng.randn(LAYERS[0]).astype(np.float32)
  xs = rng.randn(STEPS, n_devices, PER_DEVICE_BATCH, LAYERS[0]).astype(np.float32)
  ys = np.sin(xs @ true_w).astype(np.float32)
  return xs, ys


def main():
  n = jax.local_device_count()
  print(f"devices: {n}")
  xs, ys = make_data(n)
  params_dp = params_single = init_params(jax.random.key(0))
  for step in range(STEPS):
    params_dp, loss_dp = p_step(params_dp, xs[step], ys[step])
    # The same batch, concatenated, on one device.
    params_single, loss_single = single_step(params_single, xs[step].reshape(-1, LAYERS[0]),
                                             ys[step].reshape(-1))
    if step % 5 == 0:
      print(f"step {step:2d}: loss data-parallel {float(loss_dp):.6f}, "
            f"single-device {float(loss_single):.6f}")
  leaf = jax.tree_util.tree_leaves(params_dp)[0]
  print(f"parameters replicated on {len(leaf.sharding.device_set)} devices "
        f"({type(leaf.sharding).__name__} {leaf.sharding.spec})")
  diff = max(float(np.max(np.abs(np.asarray(a) - np.asarray(b))))
             for a, b in zip(jax.tree_util.tree_leaves(params_dp),
                             jax.tree_util.tree_leaves(params_single)))
  print(f"max |data-parallel - single-device| parameter difference: {diff:.2e}")
  assert diff < 1e-4, diff
  print("OK")


if __name__ == "__main__":
  main()
