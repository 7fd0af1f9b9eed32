"""optax: a small MLP regression trained with adam and a warmup-cosine schedule."""
import jax
import jax.numpy as jnp
import optax


def init_mlp(key, sizes):
  params = []
  for k, (m, n) in zip(jax.random.split(key, len(sizes) - 1), zip(sizes[:-1], sizes[1:])):
    wk, bk = jax.random.split(k)
    params.append({"w": jax.random.normal(wk, (m, n)) / jnp.sqrt(m),
                   "b": 0.1 * jax.random.normal(bk, (n,))})
  return params


def mlp(params, x):
  for layer in params[:-1]:
    x = jax.nn.gelu(x @ layer["w"] + layer["b"])
  return x @ params[-1]["w"] + params[-1]["b"]


def loss_fn(params, x, y):
  return jnp.mean((mlp(params, x) - y) ** 2)


key = jax.random.key(0)
xkey, pkey = jax.random.split(key)
x = jax.random.uniform(xkey, (128, 2), minval=-2.0, maxval=2.0)
y = jnp.sin(x[:, :1]) * jnp.cos(x[:, 1:])
params = init_mlp(pkey, [2, 32, 32, 1])

schedule = optax.warmup_cosine_decay_schedule(init_value=0.0, peak_value=1e-2, warmup_steps=10,
                                              decay_steps=100, end_value=1e-4)
opt = optax.chain(optax.clip_by_global_norm(1.0), optax.adam(learning_rate=schedule))
opt_state = opt.init(params)


@jax.jit
def step(params, opt_state, x, y):
  loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
  updates, opt_state = opt.update(grads, opt_state, params)
  return optax.apply_updates(params, updates), opt_state, loss


for i in range(101):
  params, opt_state, loss = step(params, opt_state, x, y)
  if i % 20 == 0:
    print(f"step {i:3d} lr {float(schedule(i)):.6f} loss {float(loss):.5f}")
print("final loss", f"{float(loss_fn(params, x, y)):.5f}")
print("param count", sum(p.size for p in jax.tree_util.tree_leaves(params)))
