"""The harness shared by the multi-device differential tests (test_pmap.py, test_sharding.py).

The main test process has one CPU device, so their cases run in a fresh interpreter whose
XLA_FLAGS ask for several simulated CPU devices before jaxlib is imported. This module imports
neither library: the case modules (pmap_cases.py, sharding_cases.py) import it in that
interpreter before importing them.
"""
import json
import math
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


def xla_flags(ndev):
  """This process's XLA_FLAGS (conftest's) asking for `ndev` simulated CPU devices."""
  flags = [f for f in os.environ.get("XLA_FLAGS", "").split()
           if not f.startswith("--xla_force_host_platform_device_count=")]
  return " ".join(flags + [f"--xla_force_host_platform_device_count={ndev}"])


def run_script(code, ndev=4, timeout=900):
  """Run the Python source `code` from the repository root with `ndev` simulated CPU devices."""
  env = dict(os.environ, XLA_FLAGS=xla_flags(ndev), PYTHONPATH=str(ROOT))
  return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                        timeout=timeout, cwd=str(ROOT))


def rand(*shape, dtype=np.float32, seed=0):
  """Random test values of `shape` and `dtype` (np.random.RandomState(seed))."""
  rng = np.random.RandomState(seed)
  if np.dtype(dtype) == np.bool_:
    return rng.rand(*shape) > 0.5
  if np.issubdtype(np.dtype(dtype), np.integer):
    return rng.randint(-5, 6, size=shape).astype(dtype)
  if np.issubdtype(np.dtype(dtype), np.complexfloating):
    return (rng.randn(*shape) + 1j * rng.randn(*shape)).astype(dtype)
  return rng.randn(*shape).astype(dtype)


def same(a, j):
  """Whether the plain data `a` (arrax's) and `j` (JAX's) agree: equal, floats to 1e-5
  relative (the two libraries' programs may sum in another order)."""
  if isinstance(a, float) and isinstance(j, float):
    return a == j or (math.isnan(a) and math.isnan(j)) or abs(a - j) <= 1e-5 * max(1, abs(j))
  if isinstance(a, dict) and isinstance(j, dict):
    return a.keys() == j.keys() and all(same(a[k], j[k]) for k in a)
  if isinstance(a, list) and isinstance(j, list):
    return len(a) == len(j) and all(same(u, v) for u, v in zip(a, j))
  return a == j


def first_difference(a, j, path="", limit=3000):
  """Where `a` first differs from `j` (as `same` sees it), and both values there."""
  if isinstance(a, dict) and isinstance(j, dict) and a.keys() == j.keys():
    for k in a:
      if not same(a[k], j[k]):
        return first_difference(a[k], j[k], f"{path}[{k!r}]", limit)
  if isinstance(a, list) and isinstance(j, list) and len(a) == len(j):
    for i, (u, v) in enumerate(zip(a, j)):
      if not same(u, v):
        return first_difference(u, v, f"{path}[{i}]", limit)
  return f"at {path}:\narrax: {json.dumps(a)[:limit]}\njax:   {json.dumps(j)[:limit]}"


def builtin_base(e):
  """The first builtin class among the exception `e`'s bases (how errors are compared)."""
  return next(c for c in type(e).__mro__ if c.__module__ == "builtins")


def script_results(code, ndev=4):
  """Run `code` as `run_script` does; the results (JSON) it prints after "RESULTS"."""
  res = run_script(code, ndev)
  assert res.returncode == 0, res.stderr[-3000:]
  return json.loads(res.stdout.split("RESULTS", 1)[1])


def case_results(module, main_call, ndev=4):
  """Run `tests.<module>.<main_call>` with `ndev` devices; the per-case results (JSON) it prints
  after "RESULTS"."""
  return script_results(f"import tests.{module} as c; c.{main_call}", ndev)


_memo: dict = {}


def cached_case_results(module, ndev=4, main_call=None):
  """`case_results` run once per (module, device count) in this test process."""
  key = (module, ndev, main_call)
  if key not in _memo:
    _memo[key] = case_results(module, main_call or f"main({ndev})", ndev)
  return _memo[key]


def xfail_params(names, xfails):
  """pytest params for `names`, those in `xfails` (name -> reason) marked strict xfail."""
  return [pytest.param(n, marks=pytest.mark.xfail(strict=True, reason=xfails[n]))
          if n in xfails else n for n in names]
