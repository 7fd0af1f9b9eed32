"""Run one benchmark with one library in this (fresh) process and print the timing as JSON.

    python benchmarks/worker.py --lib arrax --bench quadratic_1e6
    python benchmarks/worker.py --list

Only the named library is imported (arrax and JAX never share a process: two XLA clients in one
process share threads and skew each other). `benchmarks/run.py` starts these processes.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import warnings

_HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, _HERE)
sys.path.insert(1, os.path.dirname(_HERE))   # the checkout's arrax before an installed one

import harness  # noqa: E402


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--lib", choices=("arrax", "jax", "numpy"))
  p.add_argument("--bench")
  p.add_argument("--repeat", type=int, default=7)
  p.add_argument("--min-time", type=float, default=None,
                 help="seconds per timing sample (default: the benchmark's)")
  p.add_argument("--list", action="store_true", help="print the benchmarks as JSON and exit")
  args = p.parse_args(argv)
  benches = harness.load_all()
  if args.list:
    print(json.dumps([{"name": b.name, "module": b.module, "libs": b.libs(), "target": b.target,
                       "baseline": b.baseline, "fresh": b.fresh, "doc": b.doc}
                      for b in benches.values()]))
    return
  b = benches[args.bench]
  if args.lib not in b.libs():
    raise SystemExit(f"{b.name} has no {args.lib} version")
  if b.devices:   # simulated CPU devices, before the library (and jaxlib's client) starts
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") +
                               f" --xla_force_host_platform_device_count={b.devices}").strip()
  lib = harness.Lib(args.lib)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")   # e.g. arrax's unrolled-loop warning
    call = b.fn(lib)
    res = harness.time_callable(call, repeat=args.repeat, fresh=b.fresh,
                                min_time=args.min_time or b.min_time)
  res.update(lib=args.lib, bench=b.name)
  print("RESULT " + json.dumps(res), flush=True)


if __name__ == "__main__":
  main()
