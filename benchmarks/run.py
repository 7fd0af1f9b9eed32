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


BENCHMARKS = {
    "jit_call_overhead": (bench_jit_call_overhead, 1.3),
    "eager_op": (bench_eager_op, 1.0),
    "first_call_latency": (bench_first_call_latency, 1.2),
    "quadratic_1e6": (bench_quadratic_1e6, 1.05),
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


if __name__ == "__main__":
  main(sys.argv)
