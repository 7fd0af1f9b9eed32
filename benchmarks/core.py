"""Core benchmarks: dispatch and jit overhead, first-call latency, autodiff, vmap, loops, random,
and the spec's examples."""
from __future__ import annotations

import itertools
import tempfile

import numpy as np

from harness import benchmark, rng


# ---- jit and eager overhead -------------------------------------------------------------------
def my_function(jnp):
  def f(x, y):
    x = x * y
    x = jnp.minimum(x, 0)
    x = x + y
    return x
  return f


@benchmark(target=1.3, numpy=True)
def jit_call_overhead(L):
  """The spec's my_function on 1024 int32 elements: jitted call + block, steady state."""
  f = L.jit(my_function(L.numpy))
  x = L.asarray(np.arange(1024, dtype=np.int32))
  y = L.asarray(np.arange(1024, dtype=np.int32) - 512)
  return lambda: L.block(f(x, y))


@benchmark(target=1.0, numpy=True)
def eager_op(L):
  """One eager elementwise op (x * x on 1024 float32) + block."""
  x = L.asarray(np.ones(1024, np.float32))
  return lambda: L.block(x * x)


@benchmark(target=0.8, numpy=True)
def eager_3ops(L):
  """Three eager elementwise ops (sin(x) * y + x on 1024 float32) + block."""
  jnp = L.numpy
  x = L.asarray(np.linspace(0, 1, 1024, dtype=np.float32))
  y = L.asarray(np.ones(1024, np.float32))
  return lambda: L.block(jnp.sin(x) * y + x)


def _sync_dispatch(L):
  """Computations run inline, not on XLA's thread pool (before the first array is made)."""
  L.top.config.update("jax_cpu_enable_async_dispatch", False)


@benchmark(target=0.8)
def eager_3ops_sync(L):
  """eager_3ops with jax_cpu_enable_async_dispatch=False on both sides: the per-op dispatch
  cost without the thread-pool hand-off that dominates a tiny op."""
  _sync_dispatch(L)
  return eager_3ops(L)


@benchmark(target=1.0)
def jit_call_poly_sum_sync(L):
  """jit_call_poly_sum with jax_cpu_enable_async_dispatch=False on both sides."""
  _sync_dispatch(L)
  return jit_call_poly_sum(L)


@benchmark(target=1.0, numpy=True)
def jit_call_poly_sum(L):
  """jit of sum(x**2 - x**3 - x) on 100 float32: call + block, steady state."""
  jnp = L.numpy
  f = L.jit(lambda x: jnp.sum(x ** 2 - x ** 3 - x))
  x = L.asarray(np.linspace(0, 1, 100, dtype=np.float32))
  return lambda: L.block(f(x))


@benchmark(target=1.0)
def jit_call_static_int(L):
  """jit with a static Python int argument and a scalar result: call + block."""
  jnp = L.numpy

  def f(x, n):
    return jnp.sum(x * n)
  f = L.jit(f, static_argnums=1)
  x = L.asarray(np.ones(100, np.float32))
  return lambda: L.block(f(x, 3))


@benchmark(target=1.0)
def jit_call_python_scalars(L):
  """jit with two dynamic Python scalar arguments (a float and an int) and an array."""
  f = L.jit(lambda x, a, b: x * a + b)
  x = L.asarray(np.ones(100, np.float32))
  return lambda: L.block(f(x, 0.5, 3))


def _pytree_args(L, n_layers):
  r = rng(4)
  return [{"w": L.asarray(r.standard_normal((8, 8), np.float32)),
           "b": L.asarray(np.zeros(8, np.float32))} for _ in range(n_layers)]


def _sgd(L):
  tree_map = L.top.tree_util.tree_map
  return L.jit(lambda params, lr: tree_map(lambda p: p * (1 - lr), params))


@benchmark(target=1.0)
def jit_call_pytree_12(L):
  """jit call with a pytree of 12 arrays (6 {w, b} layers) in and out, plus a scalar."""
  f, params = _sgd(L), _pytree_args(L, 6)
  return lambda: L.block(f(params, 0.01))


@benchmark(target=1.0)
def jit_call_pytree_100(L):
  """jit call with a pytree of 100 arrays (50 {w, b} layers) in and out, plus a scalar."""
  f, params = _sgd(L), _pytree_args(L, 50)
  return lambda: L.block(f(params, 0.01))


def _chain(jnp, n=200):
  def f(x):
    for i in range(n // 2):
      x = jnp.sin(x) * 1.0001 if i % 2 else jnp.cos(x) + 0.5
    return x
  return f


@benchmark(target=1.2, fresh=True)
def first_call_latency(L):
  """Trace + lower + compile + run of a fresh 200-op elementwise function (128 float32)."""
  x = L.asarray(np.ones(128, np.float32))
  return lambda: L.block(L.jit(_chain(L.numpy))(x))


def _persistent_cache(L):
  """Turn on the library's persistent compilation cache in a fresh directory, storing every
  executable (as a user who wants fast restarts would set it)."""
  for name, value in (("jax_compilation_cache_dir", tempfile.mkdtemp(prefix=L.name)),
                      ("jax_persistent_cache_min_compile_time_secs", 0.0),
                      ("jax_persistent_cache_min_entry_size_bytes", 0)):
    L.top.config.update(name, value)


@benchmark(fresh=True)
def first_call_cold_cache(L):
  """First call of a fresh 200-op function (128 float32) with the persistent compilation cache
  on but holding nothing for it: trace + lower + compile + store + run."""
  _persistent_cache(L)
  x = L.asarray(np.ones(128, np.float32))
  count = itertools.count(1)

  def call():
    k = float(next(count))   # a new constant: a program the cache has never seen
    f = _chain(L.numpy)
    return L.block(L.jit(lambda x: f(x) + k)(x))
  return call


@benchmark(fresh=True)
def first_call_warm_cache(L):
  """The first call of first_call_cold_cache's function in a process whose in-memory caches are
  empty (clear_caches) but whose persistent cache holds the executable: trace + lower + load +
  run, what a restarted program pays."""
  _persistent_cache(L)
  x = L.asarray(np.ones(128, np.float32))
  L.block(L.jit(_chain(L.numpy))(x))   # stored

  def call():
    L.top.clear_caches()
    return L.block(L.jit(_chain(L.numpy))(x))
  return call


def _heavy_compile(jnp, n=20):
  """A function that traces in milliseconds but takes XLA:CPU over a second to compile (one big
  fusion of transcendental functions on 64x64 floats): what the persistent cache is for."""
  def f(x, y):
    for i in range(n):
      x = jnp.sin(x) * jnp.tanh(y) + jnp.exp(-x * x) if i % 2 else jnp.cos(x + y) - jnp.log1p(x * x)
      y = y * 0.9 + x
    return x, y
  return f


@benchmark(fresh=True, min_time=0)
def heavy_compile_cold_cache(L):
  """First call of _heavy_compile's function (>1 s of XLA compile) with the persistent cache on
  but empty for it: trace + lower + compile + store + run."""
  _persistent_cache(L)
  x = L.asarray(np.linspace(0, 1, 4096, dtype=np.float32).reshape(64, 64))
  count = itertools.count(1)

  def call():
    k = float(next(count))   # a new constant: a program the cache has never seen
    f = _heavy_compile(L.numpy)
    return L.block(L.jit(lambda x: f(x, x + k))(x))
  return call


@benchmark(fresh=True, min_time=0, baseline="heavy_compile_cold_cache")
def heavy_compile_warm_cache(L):
  """heavy_compile_cold_cache's first call in a process whose in-memory caches are empty
  (clear_caches) and whose persistent cache holds the executable: trace + lower + load + run.
  Its ratio to the cold call is the restart speed-up the persistent cache buys."""
  _persistent_cache(L)
  x = L.asarray(np.linspace(0, 1, 4096, dtype=np.float32).reshape(64, 64))
  f = _heavy_compile(L.numpy)
  L.block(L.jit(lambda x: f(x, x + 1.0))(x))   # stored

  def call():
    L.top.clear_caches()
    f = _heavy_compile(L.numpy)
    return L.block(L.jit(lambda x: f(x, x + 1.0))(x))
  return call


def quadratic_formula(jnp):
  def f(a, b):
    return (-b + jnp.sqrt(b ** 2 - 4 * a)) / (2 * a)
  return f


@benchmark(numpy=True)
def quadratic_1e6(L):
  """The spec's quadratic formula, jitted, on 1e6 float32 elements (compiled throughput)."""
  n = 1_000_000
  a = L.asarray(np.full(n, 1.0, np.float32))
  b = L.asarray(np.linspace(3, 5, n, dtype=np.float32))
  f = L.jit(quadratic_formula(L.numpy))
  return lambda: L.block(f(a, b))


# ---- an MLP: jit(grad), first call, eager ------------------------------------------------------
def _mlp_loss(jnp):
  def loss(params, x):
    for w, b in params:
      x = jnp.tanh(x @ w + b)
    return jnp.sum(x * x)
  return loss


def _mlp_setup(L, seed=0):
  r = rng(seed)
  params = [(L.asarray(r.standard_normal((512, 512), np.float32) * 0.04),
             L.asarray(np.zeros(512, np.float32))) for _ in range(3)]
  return params, L.asarray(r.standard_normal((256, 512), np.float32))


@benchmark()
def mlp_grad_jit(L):
  """jit(grad(loss)) of a 3-layer 512-wide tanh MLP on a 256x512 batch, steady state."""
  p, x = _mlp_setup(L)
  g = L.jit(L.top.grad(_mlp_loss(L.numpy)))
  return lambda: L.block(g(p, x))


@benchmark(target=1.2, fresh=True)
def mlp_grad_first_call(L):
  """First call of a fresh jit(grad(loss)) of the MLP: trace + transform + compile + run."""
  p, x = _mlp_setup(L)
  return lambda: L.block(L.jit(L.top.grad(_mlp_loss(L.numpy)))(p, x))


@benchmark(target=1.0)
def mlp_grad_eager(L):
  """Un-jitted grad(loss) of the MLP (each primitive dispatched eagerly)."""
  p, x = _mlp_setup(L)
  g = L.top.grad(_mlp_loss(L.numpy))
  return lambda: L.block(g(p, x))


# ---- vmap ---------------------------------------------------------------------------------------
def _per_example_data(L):
  r = rng(1)
  return (L.asarray(r.standard_normal(64, np.float32)),
          L.asarray(r.standard_normal((1024, 64), np.float32)),
          L.asarray(r.standard_normal(1024, np.float32)))


@benchmark(baseline="per_example_grads_hand")
def per_example_grads(L):
  """jit(vmap(grad)) of a linear model's squared error over 1024 examples (64 features)."""
  jnp = L.numpy

  def loss(w, x, y):
    return (jnp.dot(x, w) - y) ** 2
  f = L.jit(L.top.vmap(L.top.grad(loss), in_axes=(None, 0, 0)))
  args = _per_example_data(L)
  return lambda: L.block(f(*args))


@benchmark(numpy=True)
def per_example_grads_hand(L):
  """The per_example_grads gradients batched by hand, 2 (x.w - y) x per example, jitted."""
  def hand(w, x, y):
    return 2.0 * (x @ w - y)[:, None] * x
  f = L.jit(hand)
  args = _per_example_data(L)
  return lambda: L.block(f(*args))


def _vmap_data(L, seed=2):
  r = rng(seed)
  return (L.asarray(r.standard_normal((32, 32), np.float32) / 6),
          L.asarray(r.standard_normal(32, np.float32)),
          L.asarray(r.standard_normal((4096, 32), np.float32)))


@benchmark(baseline="vmap_hand")
def vmap_jit(L):
  """jit(vmap(f)) of a small per-example function (a layer, normalization, softmax weighting)
  over 4096 examples of 32 features."""
  jnp = L.numpy
  w, b, xs = _vmap_data(L)

  def per_example(x):
    h = jnp.tanh(w @ x + b)
    h = (h - jnp.mean(h)) / jnp.sqrt(jnp.var(h) + 1e-5)
    e = jnp.exp(h - h.max())
    return e / e.sum() * x
  f = L.jit(L.top.vmap(per_example))
  return lambda: L.block(f(xs))


@benchmark(numpy=True)
def vmap_hand(L):
  """The vmap_jit function batched by hand, jitted."""
  jnp = L.numpy
  w, b, xs = _vmap_data(L)

  def hand(xs):
    h = jnp.tanh(xs @ w.T + b)
    h = (h - jnp.mean(h, 1, keepdims=True)) / jnp.sqrt(jnp.var(h, 1, keepdims=True) + 1e-5)
    e = jnp.exp(h - h.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True) * xs
  f = L.jit(hand)
  return lambda: L.block(f(xs))


# ---- loops ------------------------------------------------------------------------------------
@benchmark(target=1.2, fresh=True, baseline="fori_unrolled_first_call")
def fori_first_call(L):
  """First call of a fresh jitted fori_loop of 1000 steps on 256 float32."""
  x = np.ones(256, np.float32)

  def call():
    def f(x):
      return L.lax.fori_loop(0, 1000, lambda i, c: c * 0.999 + 1.0, x)
    return L.block(L.jit(f)(x))
  return call


@benchmark(target=1.2, fresh=True)
def fori_unrolled_first_call(L):
  """The fori_first_call loop unrolled in Python under jit: trace and compile grow with the
  trip count."""
  x = np.ones(256, np.float32)

  def call():
    def f(x):
      for _ in range(1000):
        x = x * 0.999 + 1.0
      return x
    return L.block(L.jit(f)(x))
  return call


def _rnn(L, seed=0):
  jnp = L.numpy
  r = rng(seed)
  w = L.asarray(r.standard_normal((128, 128), np.float32) / 16)
  u = L.asarray(r.standard_normal((64, 128), np.float32) / 8)
  xs = L.asarray(r.standard_normal((1000, 64), np.float32))
  h0 = L.asarray(np.zeros(128, np.float32))

  def run(w, u, h0, xs):
    def cell(h, x):
      h = jnp.tanh(h @ w + x @ u)
      return h, h[0]
    return L.lax.scan(cell, h0, xs)
  return run, (w, u, h0, xs)


@benchmark()
def scan_rnn(L):
  """Steady-state jitted scan of a 128-wide tanh RNN cell over 1000 steps."""
  run, args = _rnn(L)
  f = L.jit(run)
  return lambda: L.block(f(*args))


@benchmark()
def scan_rnn_grad(L):
  """Steady-state jit(grad) of a loss over the scan_rnn RNN w.r.t. both weight matrices: the
  forward scan saves residuals, the transposed scan runs backwards."""
  run, args = _rnn(L)

  def loss(w, u, h0, xs):
    h, ys = run(w, u, h0, xs)
    return (h * h).sum() + ys.sum()
  f = L.jit(L.top.grad(loss, argnums=(0, 1)))
  return lambda: L.block(f(*args))


# ---- random, linear algebra -------------------------------------------------------------------
@benchmark(numpy=True)
def random_normal(L):
  """jit(split + normal(subkey, (100, 100))) (NumPy: default_rng().normal, cast to float32)."""
  if L.is_numpy:
    g = rng(0)
    return lambda: g.normal(size=(100, 100)).astype(np.float32)

  def f(key):
    key, subkey = L.random.split(key)
    return key, L.random.normal(subkey, (100, 100))
  f = L.jit(f)
  key = L.random.key(0)
  return lambda: L.block(f(key))


@benchmark(numpy=True)
def batched_spectral_radius(L):
  """The spec's batched spectral radius: jit(vmap) of max |eigvals| over 128 3x3 matrices
  (NumPy: np.linalg.eigvals, which batches itself)."""
  mats = L.asarray(rng(3).standard_normal((128, 3, 3), np.float32))
  if L.is_numpy:
    return lambda: np.max(np.abs(np.linalg.eigvals(mats)), axis=-1)
  jnp = L.numpy

  def spectral_radius(m):
    return jnp.max(jnp.abs(jnp.linalg.eigvals(m)))
  f = L.jit(L.top.vmap(spectral_radius))
  return lambda: L.block(f(mats))
