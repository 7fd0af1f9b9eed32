"""Time arrax, JAX (if installed) and NumPy side by side in one run; print ratios.

    python benchmarks/run.py            # all benchmarks
    python benchmarks/run.py jit_call   # those whose name contains "jit_call"

Machines here are shared and noisy: compare ratios measured in the same run, not absolute times.
Each timing is the median of several repeats of a loop; first-call latency is measured on fresh
functions (a new function object per repeat, so nothing is cached).
"""
from __future__ import annotations

import statistics
import sys
import time

import numpy as np

import arrax
import arrax.numpy as anp

try:
  import jax
  import jax.numpy as jnp
except ImportError:  # the JAX column is optional
  jax = jnp = None


def _median_time(fn, number, repeat=7):
  fn()  # warm up
  times = []
  for _ in range(repeat):
    start = time.perf_counter()
    for _ in range(number):
      fn()
    times.append((time.perf_counter() - start) / number)
  return statistics.median(times)


def _fresh_latency(make, repeat=5):
  times = []
  for _ in range(repeat):
    fn, args = make()
    start = time.perf_counter()
    fn(*args).block_until_ready()
    times.append(time.perf_counter() - start)
  return statistics.median(times)


# ---- the benchmarks --------------------------------------------------------------------------
def my_function(np_mod):
  def f(x, y):
    x = x * y
    x = np_mod.minimum(x, 0)
    x = x + y
    return x
  return f


def bench_jit_call_overhead():
  """The spec's my_function on 1024 int32 elements: jitted call + block, steady state."""
  out = {}
  fa = arrax.jit(my_function(anp))
  xa, ya = anp.arange(1024), anp.arange(1024) - 512
  out["arrax"] = _median_time(lambda: fa(xa, ya).block_until_ready(), 2000)
  if jax:
    fj = jax.jit(my_function(jnp))
    xj, yj = jnp.arange(1024), jnp.arange(1024) - 512
    out["jax"] = _median_time(lambda: fj(xj, yj).block_until_ready(), 2000)
  xn, yn = np.arange(1024, dtype=np.int32), np.arange(1024, dtype=np.int32) - 512
  fn = my_function(np)
  out["numpy"] = _median_time(lambda: fn(xn, yn), 2000)
  return out


def bench_eager_op():
  """One eager elementwise op (x * y on 1024 floats) + block."""
  out = {}
  xa = anp.ones(1024)
  out["arrax"] = _median_time(lambda: (xa * xa).block_until_ready(), 2000)
  if jax:
    xj = jnp.ones(1024)
    out["jax"] = _median_time(lambda: (xj * xj).block_until_ready(), 2000)
  xn = np.ones(1024, np.float32)
  out["numpy"] = _median_time(lambda: xn * xn, 2000)
  return out


def _chain(np_mod, n=200):
  def f(x):
    for i in range(n // 2):
      x = np_mod.sin(x) * 1.0001 if i % 2 else np_mod.cos(x) + 0.5
    return x
  return f


def bench_first_call_latency():
  """Trace + lower + compile + run of a fresh 200-op elementwise function."""
  out = {}
  xa = anp.ones(128)
  out["arrax"] = _fresh_latency(lambda: (arrax.jit(_chain(anp)), (xa,)))
  if jax:
    xj = jnp.ones(128)
    out["jax"] = _fresh_latency(lambda: (jax.jit(_chain(jnp)), (xj,)))
  return out


def quadratic_formula(np_mod):
  def f(a, b):
    return (-b + np_mod.sqrt(b ** 2 - 4 * a)) / (2 * a)
  return f


def bench_quadratic_1e6():
  """The spec's quadratic formula, jitted, on 1e6 float32 elements (compiled throughput)."""
  out = {}
  n = 1_000_000
  an, bn = np.full(n, 1.0, np.float32), np.linspace(3, 5, n, dtype=np.float32)
  fa = arrax.jit(quadratic_formula(anp))
  aa, ba = anp.asarray(an), anp.asarray(bn)
  out["arrax"] = _median_time(lambda: fa(aa, ba).block_until_ready(), 50)
  if jax:
    fj = jax.jit(quadratic_formula(jnp))
    aj, bj = jnp.asarray(an), jnp.asarray(bn)
    out["jax"] = _median_time(lambda: fj(aj, bj).block_until_ready(), 50)
  fn = quadratic_formula(np)
  out["numpy"] = _median_time(lambda: fn(an, bn), 50)
  return out


def _mlp_loss(np_mod):
  def loss(params, x):
    for w, b in params:
      x = np_mod.tanh(x @ w + b)
    return np_mod.sum(x * x)
  return loss


def _mlp_setup(np_mod, seed=0):
  rng = np.random.default_rng(seed)
  params = [(np_mod.asarray(rng.standard_normal((512, 512), np.float32) * 0.04),
             np_mod.asarray(np.zeros(512, np.float32))) for _ in range(3)]
  return params, np_mod.asarray(rng.standard_normal((256, 512), np.float32))


def bench_mlp_grad_jit():
  """jit(grad(loss)) of a 3-layer 512-wide tanh MLP on a 256x512 batch, steady state."""
  out = {}
  pa, xa = _mlp_setup(anp)
  ga = arrax.jit(arrax.grad(_mlp_loss(anp)))
  out["arrax"] = _median_time(lambda: arrax.block_until_ready(ga(pa, xa)), 30)
  if jax:
    pj, xj = _mlp_setup(jnp)
    gj = jax.jit(jax.grad(_mlp_loss(jnp)))
    out["jax"] = _median_time(lambda: jax.block_until_ready(gj(pj, xj)), 30)
  return out


def bench_mlp_grad_first_call():
  """First call of a fresh jit(grad(loss)) of the MLP: trace + transform + compile + run."""
  out = {}
  pa, xa = _mlp_setup(anp)
  out["arrax"] = _fresh_latency(
      lambda: (lambda p, x: arrax.block_until_ready(arrax.jit(arrax.grad(_mlp_loss(anp)))(p, x))[0][0],
               (pa, xa)))
  if jax:
    pj, xj = _mlp_setup(jnp)
    out["jax"] = _fresh_latency(
        lambda: (lambda p, x: jax.block_until_ready(jax.jit(jax.grad(_mlp_loss(jnp)))(p, x))[0][0],
                 (pj, xj)))
  return out


def bench_mlp_grad_eager():
  """Un-jitted grad(loss) of the MLP (each primitive dispatched eagerly)."""
  out = {}
  pa, xa = _mlp_setup(anp)
  ga = arrax.grad(_mlp_loss(anp))
  out["arrax"] = _median_time(lambda: arrax.block_until_ready(ga(pa, xa)), 10)
  if jax:
    pj, xj = _mlp_setup(jnp)
    gj = jax.grad(_mlp_loss(jnp))
    out["jax"] = _median_time(lambda: jax.block_until_ready(gj(pj, xj)), 10)
  return out


def _per_example(np_mod, jax_mod):
  def loss(w, x, y):
    return (np_mod.dot(x, w) - y) ** 2
  per_ex = jax_mod.jit(jax_mod.vmap(jax_mod.grad(loss), in_axes=(None, 0, 0)))

  def hand(w, x, y):   # the same gradients, batched by hand: 2 (x.w - y) x per example
    return 2.0 * (x @ w - y)[:, None] * x
  return per_ex, jax_mod.jit(hand)


def _per_example_data(np_mod):
  rng = np.random.default_rng(1)
  return (np_mod.asarray(rng.standard_normal(64, np.float32)),
          np_mod.asarray(rng.standard_normal((1024, 64), np.float32)),
          np_mod.asarray(rng.standard_normal(1024, np.float32)))


def bench_per_example_grads():
  """jit(vmap(grad)) of a linear model's squared error over 1024 examples (64 features)."""
  out = {}
  fa, ha = _per_example(anp, arrax)
  args_a = _per_example_data(anp)
  out["arrax"] = _median_time(lambda: fa(*args_a).block_until_ready(), 300)
  out["arrax_hand"] = _median_time(lambda: ha(*args_a).block_until_ready(), 300)
  if jax:
    fj, _ = _per_example(jnp, jax)
    args_j = _per_example_data(jnp)
    out["jax"] = _median_time(lambda: fj(*args_j).block_until_ready(), 300)
  return out


def _fori_fresh(lax_mod, jit):
  def make():
    def f(x):
      return lax_mod.fori_loop(0, 1000, lambda i, c: c * 0.999 + 1.0, x)
    return jit(f), (np.ones(256, np.float32),)
  return make


def _unrolled_fresh(jit):
  def make():
    def f(x):
      for _ in range(1000):
        x = x * 0.999 + 1.0
      return x
    return jit(f), (np.ones(256, np.float32),)
  return make


def bench_fori_first_call():
  """First call of a fresh jitted fori_loop of 1000 steps (extra: the same loop unrolled in
  Python under jit, whose trace and compile grow with the trip count)."""
  import warnings
  out = {}
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # arrax's unrolled-loop warning
    out["arrax"] = _fresh_latency(_fori_fresh(arrax.lax, arrax.jit))
    out["arrax_unrolled"] = _fresh_latency(_unrolled_fresh(arrax.jit), repeat=3)
  if jax:
    out["jax"] = _fresh_latency(_fori_fresh(jax.lax, jax.jit))
    out["jax_unrolled"] = _fresh_latency(_unrolled_fresh(jax.jit), repeat=3)
  return out


def _rnn(np_mod, lax_mod, jit, seed=0):
  rng = np.random.default_rng(seed)
  w = np_mod.asarray(rng.standard_normal((128, 128), np.float32) / 16)
  u = np_mod.asarray(rng.standard_normal((64, 128), np.float32) / 8)
  xs = np_mod.asarray(rng.standard_normal((1000, 64), np.float32))
  h0 = np_mod.zeros(128, np.float32)

  def run(w, u, h0, xs):
    def cell(h, x):
      h = np_mod.tanh(h @ w + x @ u)
      return h, h[0]
    return lax_mod.scan(cell, h0, xs)
  return jit(run), (w, u, h0, xs)


def bench_scan_rnn():
  """Steady-state jitted scan of a 128-wide tanh RNN cell over 1000 steps."""
  out = {}
  fa, args_a = _rnn(anp, arrax.lax, arrax.jit)
  out["arrax"] = _median_time(lambda: arrax.block_until_ready(fa(*args_a)), 20)
  if jax:
    fj, args_j = _rnn(jnp, jax.lax, jax.jit)
    out["jax"] = _median_time(lambda: jax.block_until_ready(fj(*args_j)), 20)
  return out


def _rnn_grad(np_mod, lax_mod, top):
  run, args = _rnn(np_mod, lax_mod, lambda f: f)

  def loss(w, u, h0, xs):
    h, ys = run(w, u, h0, xs)
    return (h * h).sum() + ys.sum()
  return top.jit(top.grad(loss, argnums=(0, 1))), args


def bench_scan_rnn_grad():
  """Steady-state jit(grad) of a loss over the scan_rnn RNN (1000 steps), w.r.t. both weight
  matrices: the forward scan saves residuals, the transposed scan runs backwards."""
  out = {}
  fa, args_a = _rnn_grad(anp, arrax.lax, arrax)
  out["arrax"] = _median_time(lambda: arrax.block_until_ready(fa(*args_a)), 10)
  if jax:
    fj, args_j = _rnn_grad(jnp, jax.lax, jax)
    out["jax"] = _median_time(lambda: jax.block_until_ready(fj(*args_j)), 10)
  return out


def _vmap_example(np_mod, jax_mod, seed=2):
  rng = np.random.default_rng(seed)
  w = np_mod.asarray(rng.standard_normal((32, 32), np.float32) / 6)
  b = np_mod.asarray(rng.standard_normal(32, np.float32))
  xs = np_mod.asarray(rng.standard_normal((4096, 32), np.float32))

  def per_example(x):   # one example: a layer, then normalization and a softmax-like weighting
    h = np_mod.tanh(w @ x + b)
    h = (h - np_mod.mean(h)) / np_mod.sqrt(np_mod.var(h) + 1e-5)
    e = np_mod.exp(h - h.max())
    return e / e.sum() * x

  def hand(xs):         # the same, batched by hand
    h = np_mod.tanh(xs @ w.T + b)
    h = (h - np_mod.mean(h, 1, keepdims=True)) / np_mod.sqrt(np_mod.var(h, 1, keepdims=True)
                                                             + 1e-5)
    e = np_mod.exp(h - h.max(1, keepdims=True))
    return e / e.sum(1, keepdims=True) * xs
  return jax_mod.jit(jax_mod.vmap(per_example)), jax_mod.jit(hand), xs


def bench_vmap_jit():
  """jit(vmap(f)) of a small per-example function over 4096 examples (extra: the same batched
  by hand in arrax, which jit(vmap) should match)."""
  out = {}
  fa, ha, xa = _vmap_example(anp, arrax)
  out["arrax"] = _median_time(lambda: fa(xa).block_until_ready(), 300)
  out["arrax_hand"] = _median_time(lambda: ha(xa).block_until_ready(), 300)
  if jax:
    fj, _, xj = _vmap_example(jnp, jax)
    out["jax"] = _median_time(lambda: fj(xj).block_until_ready(), 300)
  return out


def _split_normal(jax_mod):
  def f(key):
    key, subkey = jax_mod.random.split(key)
    return key, jax_mod.random.normal(subkey, (100, 100))
  return jax_mod.jit(f)


def bench_random_normal():
  """jit(split + normal(subkey, (100, 100))) with a static shape (NumPy: default_rng.normal)."""
  out = {}
  fa, ka = _split_normal(arrax), arrax.random.key(0)
  out["arrax"] = _median_time(lambda: fa(ka)[1].block_until_ready(), 1000)
  if jax:
    fj, kj = _split_normal(jax), jax.random.key(0)
    out["jax"] = _median_time(lambda: fj(kj)[1].block_until_ready(), 1000)
  rng = np.random.default_rng(0)
  out["numpy"] = _median_time(lambda: rng.normal(size=(100, 100)).astype(np.float32), 1000)
  return out


def _spectral(np_mod, jax_mod):
  def spectral_radius(mat):   # the spec's example: the largest |eigenvalue|
    return np_mod.max(np_mod.abs(np_mod.linalg.eigvals(mat)))
  mats = np_mod.asarray(np.random.default_rng(3).standard_normal((128, 3, 3), np.float32))
  return jax_mod.jit(jax_mod.vmap(spectral_radius)), mats


def bench_batched_spectral_radius():
  """The spec's batched spectral radius: jit(vmap) of max |eigvals| over 128 3x3 matrices
  (NumPy: np.linalg.eigvals, which batches itself)."""
  out = {}
  fa, ma = _spectral(anp, arrax)
  out["arrax"] = _median_time(lambda: fa(ma).block_until_ready(), 300)
  if jax:
    fj, mj = _spectral(jnp, jax)
    out["jax"] = _median_time(lambda: fj(mj).block_until_ready(), 300)
  mn = np.asarray(ma)
  out["numpy"] = _median_time(lambda: np.max(np.abs(np.linalg.eigvals(mn)), axis=-1), 300)
  return out


BENCHMARKS = {
    "jit_call_overhead": (bench_jit_call_overhead, 1.3),
    "eager_op": (bench_eager_op, 1.0),
    "first_call_latency": (bench_first_call_latency, 1.2),
    "quadratic_1e6": (bench_quadratic_1e6, 1.05),
    "mlp_grad_jit": (bench_mlp_grad_jit, 1.05),
    "mlp_grad_first_call": (bench_mlp_grad_first_call, 1.2),
    "mlp_grad_eager": (bench_mlp_grad_eager, 1.0),
    "per_example_grads": (bench_per_example_grads, 1.05),
    "fori_first_call": (bench_fori_first_call, 1.2),
    "scan_rnn": (bench_scan_rnn, 1.05),
    "scan_rnn_grad": (bench_scan_rnn_grad, 1.05),
    "vmap_jit": (bench_vmap_jit, 1.05),
    "random_normal": (bench_random_normal, 1.05),
    "batched_spectral_radius": (bench_batched_spectral_radius, 1.05),
}


def main(argv):
  pattern = argv[1] if len(argv) > 1 else ""
  print(f"{'benchmark':<22}{'arrax':>12}{'jax':>12}{'numpy':>12}{'arrax/jax':>11}"
        f"{'target':>8}{'arrax/np':>10}")
  for name, (fn, target) in BENCHMARKS.items():
    if pattern not in name:
      continue
    t = fn()
    fmt = lambda v: f"{v * 1e6:10.1f}us" if v is not None else f"{'-':>12}"  # noqa: E731
    ratio_j = t["arrax"] / t["jax"] if "jax" in t else None
    ratio_n = t["arrax"] / t["numpy"] if "numpy" in t else None
    rj = f"{ratio_j:11.2f}" if ratio_j else f"{'-':>11}"
    rn = f"{ratio_n:10.2f}" if ratio_n else f"{'-':>10}"
    print(f"{name:<22}{fmt(t['arrax'])}{fmt(t.get('jax'))}{fmt(t.get('numpy'))}{rj}"
          f"{'<=' + str(target):>8}{rn}", flush=True)
    for extra in sorted(set(t) - {"arrax", "jax", "numpy"}):
      print(f"  arrax/{extra} = {t['arrax'] / t[extra]:.2f}", flush=True)


if __name__ == "__main__":
  main(sys.argv)
