"""A small convolutional network trained on synthetic images with stax and optimizers.

    python examples/cnn.py            # runs on arrax
    python examples/cnn.py --jax      # the same program on JAX (or set CNN_BACKEND=jax)

The network is Conv-Relu-MaxPool twice, then Flatten, Dense and LogSoftmax, trained with Adam
on 28x28x1 images of 10 classes. Each class is a fixed random template; an image is its class's
template plus noise, all drawn with `random`, so the data is learnable and the loss falls fast.
The code only uses the JAX API: importing `arrax` as `jax` (see `load_backend`) is all that
picks arrax, and arrax gives the same losses as JAX step for step.
"""
import argparse
import importlib
import os
import sys


def load_backend(name):
  """The (jax, jnp, stax, optimizers) modules of "arrax" or "jax"."""
  if name not in ("arrax", "jax"):
    raise ValueError(f"backend must be 'arrax' or 'jax', got {name!r}")
  jax = importlib.import_module(name)
  jnp = importlib.import_module(f"{name}.numpy")
  stax = importlib.import_module(f"{name}.example_libraries.stax")
  optimizers = importlib.import_module(f"{name}.example_libraries.optimizers")
  return jax, jnp, stax, optimizers


NUM_CLASSES = 10
IMAGE_SHAPE = (28, 28, 1)


def make_model(stax):
  """(init_fun, apply_fun) of the CNN, in NHWC layout (biases start at zero)."""
  zeros = stax.zeros
  return stax.serial(
      stax.Conv(8, (3, 3), padding="SAME", b_init=zeros), stax.Relu,
      stax.MaxPool((2, 2), strides=(2, 2)),
      stax.Conv(16, (3, 3), padding="SAME", b_init=zeros), stax.Relu,
      stax.MaxPool((2, 2), strides=(2, 2)),
      stax.Flatten, stax.Dense(NUM_CLASSES, b_init=zeros), stax.LogSoftmax)


def make_data(jax, jnp, key, num_examples, noise=0.5):
  """Synthetic labelled images: class templates plus Gaussian noise.

  Labels cycle through the classes, so every batch holds all of them; one normal draw gives
  the templates (its first NUM_CLASSES images) and the noise (the rest)."""
  draws = jax.random.normal(key, (NUM_CLASSES + num_examples,) + IMAGE_SHAPE)
  templates, noise_images = draws[:NUM_CLASSES], draws[NUM_CLASSES:]
  labels = jnp.arange(num_examples) % NUM_CLASSES
  images = templates[labels] + noise * noise_images
  return images, jax.nn.one_hot(labels, NUM_CLASSES)


def train(backend="arrax", num_steps=50, batch_size=32, num_examples=256, learning_rate=1e-3,
          seed=0, print_every=10, log=print):
  """Train the CNN; returns the list of losses of every step (as Python floats)."""
  jax, jnp, stax, optimizers = load_backend(backend)
  init_fun, apply_fun = make_model(stax)

  @jax.jit
  def setup(key):
    # Data and initial parameters in one compiled call (rather than many small eager ones).
    k_data, k_init = jax.random.split(key)
    images, targets = make_data(jax, jnp, k_data, num_examples)
    _, params = init_fun(k_init, (-1,) + IMAGE_SHAPE)
    return images, targets, params

  images, targets, params = setup(jax.random.key(seed))
  opt_init, opt_update, get_params = optimizers.adam(learning_rate)

  def loss(params, batch):
    inputs, targets = batch
    return -jnp.mean(jnp.sum(apply_fun(params, inputs) * targets, axis=-1))

  num_batches = num_examples // batch_size

  @jax.jit
  def update(step, opt_state, images, targets):
    # The step picks its batch inside the compiled function: one executable for every step.
    start = (step % num_batches) * batch_size
    batch = (jax.lax.dynamic_slice_in_dim(images, start, batch_size),
             jax.lax.dynamic_slice_in_dim(targets, start, batch_size))
    value, grads = jax.value_and_grad(loss)(get_params(opt_state), batch)
    return value, opt_update(step, grads, opt_state)

  @jax.jit
  def accuracy(params, images, targets):
    predicted = jnp.argmax(apply_fun(params, images), axis=-1)
    return jnp.mean(predicted == jnp.argmax(targets, axis=-1))

  opt_state = opt_init(params)
  losses = []
  for step in range(num_steps):
    value, opt_state = update(step, opt_state, images, targets)
    losses.append(float(value))
    if print_every and (step % print_every == 0 or step == num_steps - 1):
      log(f"step {step:4d}  loss {losses[-1]:.4f}")
  if print_every:
    acc = float(accuracy(get_params(opt_state), images, targets))
    log(f"training accuracy {acc:.3f}")
  return losses


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument("--jax", action="store_true", help="run on JAX instead of arrax")
  parser.add_argument("--steps", type=int, default=60)
  parser.add_argument("--print-every", type=int, default=10)
  args = parser.parse_args(argv)
  backend = "jax" if args.jax or os.environ.get("CNN_BACKEND") == "jax" else "arrax"
  print(f"training a CNN on synthetic images with {backend}")
  losses = train(backend, num_steps=args.steps, print_every=args.print_every)
  return 0 if losses[-1] < losses[0] else 1


if __name__ == "__main__":
  sys.exit(main())
