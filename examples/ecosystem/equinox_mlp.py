"""equinox: an MLP and a Conv2d model trained with filter_jit / filter_value_and_grad."""
import equinox as eqx
import jax
import jax.numpy as jnp
import optax

key = jax.random.PRNGKey(0)
mkey, xkey, ckey, ikey = jax.random.split(key, 4)

x = jax.random.normal(xkey, (64, 3))
y = jnp.tanh(x @ jnp.array([[1.0], [-2.0], [0.5]]))
model = eqx.nn.MLP(3, 1, width_size=16, depth=2, key=mkey)
opt = optax.adam(1e-2)
opt_state = opt.init(eqx.filter(model, eqx.is_array))


@eqx.filter_value_and_grad
def loss_fn(model, x, y):
  return jnp.mean((jax.vmap(model)(x) - y) ** 2)


@eqx.filter_jit
def step(model, opt_state, x, y):
  loss, grads = loss_fn(model, x, y)
  updates, opt_state = opt.update(grads, opt_state, eqx.filter(model, eqx.is_array))
  return eqx.apply_updates(model, updates), opt_state, loss


for i in range(60):
  model, opt_state, loss = step(model, opt_state, x, y)
  if i % 15 == 0:
    print(f"mlp step {i:2d} loss {float(loss):.5f}")
leaves = jax.tree_util.tree_leaves(eqx.filter(model, eqx.is_array))
print("mlp params", sum(l.size for l in leaves))


@eqx.filter_grad
def grad_only(model, x):
  return jnp.sum(jax.vmap(model)(x))


g = grad_only(model, x)
print("grad norm", f"{float(optax.global_norm(eqx.filter(g, eqx.is_array))):.5f}")


class ConvNet(eqx.Module):
  conv: eqx.nn.Conv2d
  linear: eqx.nn.Linear

  def __init__(self, key):
    k1, k2 = jax.random.split(key)
    self.conv = eqx.nn.Conv2d(1, 4, kernel_size=3, padding=1, key=k1)
    self.linear = eqx.nn.Linear(4 * 6 * 6, 2, key=k2)

  def __call__(self, img):
    h = jax.nn.relu(self.conv(img))
    return self.linear(h.reshape(-1))


net = ConvNet(ckey)
imgs = jax.random.normal(ikey, (8, 1, 6, 6))
targets = jnp.arange(8) % 2
copt = optax.sgd(0.05)
cstate = copt.init(eqx.filter(net, eqx.is_array))


@eqx.filter_jit
def conv_step(net, cstate):
  def loss(net):
    logits = jax.vmap(net)(imgs)
    return optax.softmax_cross_entropy_with_integer_labels(logits, targets).mean()
  l, grads = eqx.filter_value_and_grad(loss)(net)
  updates, cstate = copt.update(grads, cstate)
  return eqx.apply_updates(net, updates), cstate, l


for i in range(20):
  net, cstate, l = conv_step(net, cstate)
  if i % 5 == 0:
    print(f"conv step {i:2d} loss {float(l):.5f}")
