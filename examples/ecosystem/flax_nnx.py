"""flax.nnx: a model with Linear, BatchNorm and Dropout, trained with nnx.Optimizer and nnx.jit."""
import jax
import jax.numpy as jnp
import optax
from flax import nnx


class Model(nnx.Module):
  def __init__(self, din, dhidden, dout, *, rngs: nnx.Rngs):
    self.linear1 = nnx.Linear(din, dhidden, rngs=rngs)
    self.bn = nnx.BatchNorm(dhidden, rngs=rngs)
    self.dropout = nnx.Dropout(0.1, rngs=rngs)
    self.linear2 = nnx.Linear(dhidden, dout, rngs=rngs)

  def __call__(self, x):
    x = nnx.relu(self.dropout(self.bn(self.linear1(x))))
    return self.linear2(x)


model = Model(4, 16, 1, rngs=nnx.Rngs(0))
optimizer = nnx.Optimizer(model, optax.adam(1e-2), wrt=nnx.Param)
x = jax.random.normal(jax.random.key(1), (32, 4))
y = jnp.sum(x ** 2, axis=1, keepdims=True)


@nnx.jit
def train_step(model, optimizer, x, y):
  def loss_fn(model):
    return jnp.mean((model(x) - y) ** 2)
  loss, grads = nnx.value_and_grad(loss_fn)(model)
  optimizer.update(model, grads)
  return loss


for i in range(40):
  loss = train_step(model, optimizer, x, y)
  if i % 10 == 0:
    print(f"step {i:2d} loss {float(loss):.5f}")
model.eval()
print("eval loss", f"{float(jnp.mean((model(x) - y) ** 2)):.5f}")
params = nnx.state(model, nnx.Param)
print("params", sum(p.size for p in jax.tree_util.tree_leaves(params)))
