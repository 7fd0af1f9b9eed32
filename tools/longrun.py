"""Long-run memory check: does memory stay flat over many jit calls and eager ops? arrax and
JAX 0.10.2 side by side.

Each library runs in a fresh process (`--worker`) the same workloads, written once against the
(top, numpy, lax) namespaces:

  jit         jitted calls, round robin over four functions (array + Python scalar, a pytree
              argument, a static keyword, a tuple result);
  eager       eager ops, round robin over arithmetic with scalars, unary ops, reductions,
              indexing, reshape, where, host-to-device and device-to-host transfers;
  transforms  eager (not jitted) grad, vmap, scan, cond and value_and_grad calls;
  errors      jitted functions whose tracing raises, and failing host callbacks.

Each workload first runs a warm-up (a twentieth of its count, so every cache it uses is
filled), then twice its count: once measuring the process RSS (from /proc/self/statm), once
under tracemalloc (Python-heap growth and the lines that grew most). `live_arrays()` is counted
before and after (after a gc.collect).

  python tools/longrun.py                      # 1e6 jit calls, 1e5 eager ops, ...
  python tools/longrun.py --scale 0.1 --top 5  # a tenth of it, the 5 lines that grew most
  make longrun LONGRUN_ARGS="--libs arrax"

Numbers only, no assertion: tests/test_faults.py keeps a cheap version in the test suite.
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import subprocess
import sys
import time
import tracemalloc

import numpy as np

COUNTS = {"jit": 1_000_000, "eager": 100_000, "transforms": 10_000, "errors": 2_000}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _import(lib):
  if lib == "jax":
    import jax
    import jax.numpy as jnp
    from jax import lax
    from jax.experimental import io_callback
  else:
    import arrax as jax
    import arrax.numpy as jnp
    from arrax import lax
    from arrax.experimental import io_callback
  return jax, jnp, lax, io_callback


# ---- workloads: make(lib namespaces) -> step(i), one call / op per step ------------------------
def jit_workload(top, jnp, lax, io_callback):
  f1 = top.jit(lambda a, b: a * b + 1.0)
  f2 = top.jit(lambda t: t["a"] + t["b"][0] * t["b"][1])
  f3 = top.jit(lambda a, n: a ** n, static_argnames="n")
  f4 = top.jit(lambda a: (a.sum(), a - 1))
  x = jnp.arange(4.0)
  state = {"y": x}

  def step(i):
    k = i % 4
    if k == 0:
      state["y"] = f1(state["y"], 0.5)
    elif k == 1:
      f2({"a": x, "b": (state["y"], 2)})
    elif k == 2:
      f3(x, n=3)
    else:
      f4(state["y"])
  return step


def eager_workload(top, jnp, lax, io_callback):
  x = jnp.arange(4.0)
  host = np.arange(4, dtype=np.float32)
  ops = [
      lambda: x + 1.0,
      lambda: x * x,
      lambda: jnp.sin(x),
      lambda: jnp.sum(x),
      lambda: x[1],
      lambda: x.reshape(2, 2),
      lambda: jnp.where(x > 1, x, 0.0),
      lambda: jnp.asarray(host),
      lambda: np.asarray(x + 2.0),
      lambda: lax.add(x, x),
  ]

  def step(i):
    ops[i % len(ops)]()
  return step


def transforms_workload(top, jnp, lax, io_callback):
  # (every function is made once: a new lambda per call is traced and compiled anew, in JAX
  # too, and only the caches' bounds limit that)
  x = jnp.arange(4.0)
  loss = lambda w: jnp.sum(jnp.tanh(w * x) ** 2)
  grad, value_and_grad = top.grad(loss), top.value_and_grad(loss)
  affine = top.vmap(lambda r: r * 2 + 1)
  body = lambda c, r: (c + r, c * r)
  ops = [
      lambda: grad(0.5),
      lambda: affine(x),
      lambda: lax.scan(body, 0.0, x),
      lambda: lax.cond(True, jnp.sin, jnp.cos, x),
      lambda: value_and_grad(1.5),
      lambda: top.jit(grad)(0.25),
  ]

  def step(i):
    ops[i % len(ops)]()
  return step


def errors_workload(top, jnp, lax, io_callback):
  def bad_trace(a):
    a * 2                      # (some work traced before the error)
    raise ValueError("bad trace")

  def bad_shape(a):
    return a + jnp.ones(3)     # shapes (4,) and (3,) do not broadcast

  def boom(a):
    raise KeyError("boom")

  f1, f2 = top.jit(bad_trace), top.jit(bad_shape)
  f3 = top.jit(lambda a: top.pure_callback(boom, top.ShapeDtypeStruct(a.shape, a.dtype), a))
  x = jnp.arange(4.0)
  fns = [f1, f2, f3]

  def step(i):
    try:
      fns[i % 3](x)
    except Exception:  # noqa: BLE001
      pass
  return step


WORKLOADS = {"jit": jit_workload, "eager": eager_workload, "transforms": transforms_workload,
             "errors": errors_workload}


# ---- measuring ---------------------------------------------------------------------------------
def rss_bytes():
  with open("/proc/self/statm") as f:
    return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _run(step, start, n):
  for i in range(start, start + n):
    step(i)


def measure(lib, name, n, top_k):
  top, jnp, lax, io_callback = _import(lib)
  step = WORKLOADS[name](top, jnp, lax, io_callback)
  _run(step, 0, max(n // 20, 10))          # warm-up: fills every cache the loop uses
  gc.collect()
  live0, rss0 = len(top.live_arrays()), rss_bytes()
  t0 = time.perf_counter()
  _run(step, 0, n)
  seconds = time.perf_counter() - t0
  gc.collect()
  rss1 = rss_bytes()
  tracemalloc.start(5)
  gc.collect()
  snap0 = tracemalloc.take_snapshot()
  _run(step, 0, n)
  gc.collect()
  snap1 = tracemalloc.take_snapshot()
  tracemalloc.stop()
  live1 = len(top.live_arrays())
  stats = snap1.compare_to(snap0, "traceback")
  growth = sum(s.size_diff for s in stats)
  top_lines = []
  for s in sorted(stats, key=lambda s: -s.size_diff)[:top_k]:
    frames = [f"{os.path.relpath(fr.filename, REPO) if fr.filename.startswith(REPO) else os.path.basename(fr.filename)}:{fr.lineno}"
              for fr in s.traceback]
    top_lines.append({"size_diff": s.size_diff, "count_diff": s.count_diff, "where": frames})
  return {"lib": lib, "workload": name, "n": n, "seconds": seconds, "rss_growth": rss1 - rss0,
          "rss_end": rss1, "tracemalloc_growth": growth, "live_start": live0, "live_end": live1,
          "top": top_lines}


def worker(args):
  os.environ.setdefault("JAX_PLATFORMS", "cpu")
  out = []
  for name in args.workloads:
    out.append(measure(args.worker, name, int(COUNTS[name] * args.scale), args.top))
  json.dump(out, sys.stdout)


def _mb(b):
  return f"{b / 2**20:+.2f} MB"


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--libs", default="arrax,jax", help="comma-separated: arrax, jax")
  p.add_argument("--workloads", default=",".join(WORKLOADS), type=lambda s: s.split(","))
  p.add_argument("--scale", type=float, default=1.0, help="multiplies every count")
  p.add_argument("--top", type=int, default=3, help="lines that grew most, per run")
  p.add_argument("--worker", help=argparse.SUPPRESS)
  args = p.parse_args(argv)
  if args.worker:
    return worker(args)
  results = {}
  for lib in args.libs.split(","):
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""),
               JAX_PLATFORMS="cpu", TF_CPP_MIN_LOG_LEVEL="3")
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", lib, "--scale",
           str(args.scale), "--top", str(args.top), "--workloads", ",".join(args.workloads)]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode:
      sys.stderr.write(proc.stderr[-4000:])
      raise SystemExit(f"{lib} worker failed ({proc.returncode})")
    results[lib] = {r["workload"]: r for r in json.loads(proc.stdout)}
  for name in args.workloads:
    cells = []
    for lib, res in results.items():
      r = res[name]
      cells.append(f"{lib}: RSS {_mb(r['rss_growth'])}, tracemalloc "
                   f"{r['tracemalloc_growth'] / 1024:+.1f} KB, live_arrays "
                   f"{r['live_start']}->{r['live_end']}, {r['seconds']:.1f} s")
    print(f"{name:<11} n={res[name]['n']:<8} " + " | ".join(cells))
  for lib, res in results.items():
    for name in args.workloads:
      for t in res[name]["top"]:
        if t["size_diff"] > 0:
          print(f"  {lib} {name}: {t['size_diff'] / 1024:+.1f} KB in {t['count_diff']:+d} blocks"
                f" at {' > '.join(t['where'][-3:])}")

if __name__ == "__main__":
  main()
