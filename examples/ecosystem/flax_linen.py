"""flax.linen: an MLP and a small CNN with BatchNorm and Dropout, trained with TrainState."""
import jax
import jax.numpy as jnp
import optax
from flax import linen as nn
from flax.training import train_state


class MLP(nn.Module):
  features: tuple = (32, 32, 1)

  @nn.compact
  def __call__(self, x):
    for f in self.features[:-1]:
      x = nn.relu(nn.Dense(f)(x))
    return nn.Dense(self.features[-1])(x)


class CNN(nn.Module):
  @nn.compact
  def __call__(self, x, train: bool):
    x = nn.Conv(8, (3, 3))(x)
    x = nn.BatchNorm(use_running_average=not train)(x)
    x = nn.relu(x)
    x = nn.avg_pool(x, (2, 2), strides=(2, 2))
    x = x.reshape((x.shape[0], -1))
    x = nn.Dropout(0.2, deterministic=not train)(x)
    return nn.Dense(3)(x)


key = jax.random.PRNGKey(0)
k1, k2, k3, k4 = jax.random.split(key, 4)

# MLP regression.
x = jax.random.normal(k1, (64, 4))
y = jnp.sum(jnp.sin(x), axis=1, keepdims=True)
mlp = MLP()
state = train_state.TrainState.create(apply_fn=mlp.apply, params=mlp.init(k2, x)["params"],
                                      tx=optax.adam(1e-2))


@jax.jit
def mlp_step(state, x, y):
  def loss_fn(params):
    return jnp.mean((state.apply_fn({"params": params}, x) - y) ** 2)
  loss, grads = jax.value_and_grad(loss_fn)(state.params)
  return state.apply_gradients(grads=grads), loss


for i in range(60):
  state, loss = mlp_step(state, x, y)
  if i % 15 == 0:
    print(f"mlp step {i:2d} loss {float(loss):.5f}")
print("mlp params", sum(p.size for p in jax.tree_util.tree_leaves(state.params)))


# CNN classification with batch statistics and dropout.
class CNNState(train_state.TrainState):
  batch_stats: dict


imgs = jax.random.normal(k3, (16, 8, 8, 1))
labels = jnp.arange(16) % 3
cnn = CNN()
variables = cnn.init(k4, imgs, train=False)
cstate = CNNState.create(apply_fn=cnn.apply, params=variables["params"],
                         batch_stats=variables["batch_stats"], tx=optax.sgd(0.1, momentum=0.9))


@jax.jit
def cnn_step(state, imgs, labels, rng):
  def loss_fn(params):
    logits, updates = state.apply_fn({"params": params, "batch_stats": state.batch_stats}, imgs,
                                     train=True, rngs={"dropout": rng},
                                     mutable=["batch_stats"])
    loss = optax.softmax_cross_entropy_with_integer_labels(logits, labels).mean()
    return loss, updates
  (loss, updates), grads = jax.value_and_grad(loss_fn, has_aux=True)(state.params)
  state = state.apply_gradients(grads=grads, batch_stats=updates["batch_stats"])
  return state, loss


rng = jax.random.PRNGKey(1)
for i in range(30):
  rng, sub = jax.random.split(rng)
  cstate, loss = cnn_step(cstate, imgs, labels, sub)
  if i % 10 == 0:
    print(f"cnn step {i:2d} loss {float(loss):.5f}")
logits = cnn.apply({"params": cstate.params, "batch_stats": cstate.batch_stats}, imgs,
                   train=False)
print("cnn accuracy", float(jnp.mean(jnp.argmax(logits, -1) == labels)))
