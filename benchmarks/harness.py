"""Shared pieces of the benchmarks: the library namespace, the registry and the timing loop.

A benchmark is a function of a `Lib` namespace that sets up its data and returns a callable with
no arguments; one call of the callable is the thing timed (it blocks until the result is ready).
The same definition serves arrax and JAX (and NumPy where `numpy=True`: there `jit` is the
identity and `block` does nothing), so both sides run the same program.

    @benchmark(numpy=True)
    def quadratic_1e6(L):
      f = L.jit(lambda a, b: (-b + L.numpy.sqrt(b ** 2 - 4 * a)) / (2 * a))
      a, b = L.asarray(...), L.asarray(...)
      return lambda: L.block(f(a, b))

First-call benchmarks return a callable that builds a fresh function each time it is called
(so nothing is cached between calls) and set `fresh=True`.
"""
from __future__ import annotations

import importlib
import statistics
import time

import numpy as np

BENCHMARKS = {}   # name -> Benchmark, in definition order
MODULES = ("core", "numpy_ops", "cnn", "parallel", "bench_shard_map", "scipy_ops")   # the modules that define benchmarks


class Benchmark:
  def __init__(self, fn, name, module, target, numpy, fresh, baseline, min_time, doc,
               devices=None):
    self.fn, self.name, self.module = fn, name, module
    self.devices = devices
    self.target, self.numpy, self.fresh = target, numpy, fresh
    self.baseline, self.min_time = baseline, min_time
    self.doc = doc

  def libs(self):
    return ("arrax", "jax") + (("numpy",) if self.numpy else ())


def benchmark(*, target=1.05, numpy=False, fresh=False, baseline=None, min_time=0.25,
              name=None, devices=None):
  """Register a benchmark.

  target: the arrax/JAX ratio to meet. numpy: the definition also runs with NumPy. fresh: one
  call is a first call (trace + compile + run); timed one call per sample. baseline: the name of
  another benchmark whose arrax time this one is compared with (e.g. the same computation
  batched by hand). min_time: seconds per timing sample (the number of calls per sample is
  chosen from the warm-up call). devices: run the worker with this many simulated CPU devices
  (XLA_FLAGS is set before the library is imported).
  """
  def register(fn):
    bname = name or fn.__name__
    doc = " ".join((fn.__doc__ or "").split())
    BENCHMARKS[bname] = Benchmark(fn, bname, fn.__module__, target, numpy, fresh, baseline,
                                  min_time, doc, devices)
    return fn
  return register


def load_all():
  for m in MODULES:
    importlib.import_module(m)
  return BENCHMARKS


class Lib:
  """The library namespace handed to a benchmark: `top` (arrax / jax / None), `lax`, `numpy`,
  `random`, `stax`, `optimizers`, and helpers that read the same on every side."""

  def __init__(self, name):
    self.name = name
    if name == "numpy":
      self.top = self.lax = self.random = self.stax = self.optimizers = None
      self.numpy = np
    elif name in ("arrax", "jax"):
      top = importlib.import_module(name)
      importlib.import_module(name + ".numpy")
      importlib.import_module(name + ".lax")
      importlib.import_module(name + ".random")
      libs = importlib.import_module(name + ".example_libraries")
      importlib.import_module(name + ".example_libraries.stax")
      importlib.import_module(name + ".example_libraries.optimizers")
      self.top, self.lax, self.numpy, self.random = top, top.lax, top.numpy, top.random
      self.stax, self.optimizers = libs.stax, libs.optimizers
    else:
      raise ValueError(f"unknown library {name!r}")

  @property
  def is_numpy(self):
    return self.name == "numpy"

  def jit(self, f, **kw):
    return f if self.top is None else self.top.jit(f, **kw)

  def block(self, x):
    return x if self.top is None else self.top.block_until_ready(x)

  def asarray(self, x):
    """A host NumPy array as this library's array (same dtype)."""
    return np.asarray(x) if self.top is None else self.numpy.asarray(x)


def rng(seed=0):
  return np.random.default_rng(seed)


def time_callable(call, *, repeat=7, min_time=0.25, fresh=False, max_number=100_000):
  """Warm up, then `repeat` samples; returns per-call seconds of each sample (wall clock, and
  the CPU time of the process, all threads) and the number of calls per sample. A fresh
  (first-call) benchmark is timed one call per sample."""
  start = time.perf_counter()
  call()   # warm-up: compiles, fills caches (and for fresh benchmarks loads the compiler)
  first = time.perf_counter() - start
  if fresh:
    number = 1
  else:
    start = time.perf_counter()
    call()   # a second warm-up call gives a steady-state estimate of one call
    one = max(time.perf_counter() - start, 1e-7)
    number = max(1, min(max_number, int(min_time / one)))
  samples, cpu = [], []
  for _ in range(repeat):
    start, start_cpu = time.perf_counter(), time.process_time()
    for _ in range(number):
      call()
    cpu.append((time.process_time() - start_cpu) / number)
    samples.append((time.perf_counter() - start) / number)
  return {"samples": samples, "number": number, "median": statistics.median(samples),
          "min": min(samples), "first": first, "cpu_samples": cpu,
          "cpu_median": statistics.median(cpu)}
