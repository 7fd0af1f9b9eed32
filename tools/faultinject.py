"""Fault injection: a KeyboardInterrupt raised at sampled lines of arrax's own code during a first
call (trace, transform, lower, compile, run) must leave arrax usable.

A sys.settrace tracer counts the line events inside arrax/ during one first call of a fresh
program, then for each sampled point runs a fresh copy of the program raising KeyboardInterrupt
at that line event, and checks: the trace state is back at the top level, the interrupted
function called again (traced anew) and another fresh copy give the uninterrupted result, an
eager op works. Exits with status 1 if any point leaves arrax broken.

  python tools/faultinject.py --points 300            # a jitted program
  python tools/faultinject.py --points 150 --eager    # eager grad/vmap/scan/cond/jvp

tests/test_faults.py runs a few points of the jitted program.
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)

import arrax  # noqa: E402
import arrax.numpy as jnp  # noqa: E402
from arrax import lax  # noqa: E402
from arrax._src import core  # noqa: E402

ARRAX_DIR = os.path.dirname(arrax.__file__)


def jitted_program():
  def f(x):
    y = lax.scan(lambda c, r: (c + r, c * r), 0.0, x)[1]
    z = arrax.vmap(lambda r: lax.cond(r > 1, jnp.sin, jnp.cos, r))(x)
    return arrax.grad(lambda v: jnp.sum(jnp.tanh(v) ** 2))(x) + y + z
  return arrax.jit(f)


def eager_program():
  def g(x):
    y = lax.scan(lambda c, r: (c + r, c * r), 0.0, x)[1]
    z = arrax.vmap(lambda r: lax.cond(r > 1, jnp.sin, jnp.cos, r))(x)
    w = arrax.grad(lambda v: jnp.sum(lax.fori_loop(0, 2, lambda i, c: jnp.tanh(c) * v, v) ** 2))(x)
    h = arrax.vmap(arrax.grad(lambda v: lax.cond(v > 1., jnp.sin, jnp.cos, v)))(x)
    return w + y + z + h + arrax.jvp(lambda v: jnp.cumsum(v * v), (x,), (x,))[1]
  return g


class InterruptAtLine:
  """Raise KeyboardInterrupt at the `at`-th line event in arrax's code (at < 0: count only)."""

  def __init__(self, at):
    self.at, self.count, self.where = at, 0, None

  def __call__(self, frame, event, arg):
    return self.local if frame.f_code.co_filename.startswith(ARRAX_DIR) else None

  def local(self, frame, event, arg):
    if event == "line":
      self.count += 1
      if self.count == self.at:
        self.where = f"{os.path.relpath(frame.f_code.co_filename, ARRAX_DIR)}:{frame.f_lineno}"
        raise KeyboardInterrupt(self.where)
    return self.local


def run_traced(tracer, fn):
  sys.settrace(tracer)
  try:
    fn()
    return None
  except KeyboardInterrupt as e:
    return str(e)
  finally:
    sys.settrace(None)


def main(argv=None):
  p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  p.add_argument("--points", type=int, default=100)
  p.add_argument("--eager", action="store_true", help="the eager (not jitted) program")
  args = p.parse_args(argv)
  make = eager_program if args.eager else jitted_program
  x = jnp.arange(4.0)
  want = np.asarray(make()(x))
  counter = InterruptAtLine(-1)
  run_traced(counter, lambda: make()(x))
  print(f"{counter.count} line events in arrax during a first call")
  broken, start = 0, time.perf_counter()
  for at in np.unique(np.linspace(1, counter.count * 0.97, args.points).astype(int)):
    f = make()
    where = run_traced(InterruptAtLine(int(at)), lambda: f(x))
    try:
      assert core.trace_ctx.trace is core.eval_trace, "left inside a trace"
      assert core.trace_ctx.name_stack == (), "name stack not restored"
      np.testing.assert_allclose(np.asarray(f(x)), want, rtol=1e-6)
      np.testing.assert_allclose(np.asarray(make()(x)), want, rtol=1e-6)
      np.testing.assert_allclose(float(jnp.sin(x)[1]), np.sin(1.0), rtol=1e-6)
    except BaseException as e:  # noqa: BLE001
      broken += 1
      print(f"BROKEN by an interrupt at line event {at} ({where}): {type(e).__name__}: {e}")
      core.trace_ctx.trace, core.trace_ctx.name_stack = core.eval_trace, ()
  print(f"{args.points} points, {broken} broken, {time.perf_counter() - start:.1f} s")
  return 1 if broken else 0


if __name__ == "__main__":
  sys.exit(main())
