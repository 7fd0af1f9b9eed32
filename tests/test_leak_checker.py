"""jax.checking_leaks / jax_check_tracer_leaks against JAX: a tracer kept alive past its trace
raises JAX's plain Exception naming the trace; programs that leak nothing run unchanged."""
import functools
import json

import numpy as np
import pytest

from tests.multidevice import run_script, script_results
from tests.oracle import ARRAX, JAX, assert_same, to_arrax, to_jax


def _leaky(lib, leak):
  def f(x):
    y = x * 2
    leak.append(y)
    return y
  return f


LEAKS = {
    "jit": lambda lib, f: lib.top.jit(f)(1.0),
    "make_jaxpr": lambda lib, f: lib.top.make_jaxpr(f)(1.0),
    "grad": lambda lib, f: lib.top.grad(f)(1.0),     # JAX does not check its JVP trace
    "vmap": lambda lib, f: lib.top.vmap(f)(lib.np.ones(2)),
    "jit_of_vmap": lambda lib, f: lib.top.jit(lib.top.vmap(f))(lib.np.ones(2)),
}


def _first_line(lib, run):
  leak = []
  with lib.top.checking_leaks():
    try:
      run(lib, _leaky(lib, leak))
    except Exception as e:  # noqa: BLE001
      return type(e), str(e).splitlines()[0]
    finally:
      leak.clear()
  return None


def _report_all():
  def line(lib, name):
    r = _first_line(lib, LEAKS[name])
    return r and [r[0].__name__, r[1]]
  print("RESULTS" + json.dumps({n: [line(JAX, n), line(ARRAX, n)] for n in LEAKS}))


@functools.cache
def _reports():
  # Checking leaks scans the garbage collector's objects at each trace exit: in a test worker
  # holding thousands of tests' objects that takes many seconds, so the cases run in a fresh
  # interpreter, all in one.
  return script_results("import tests.test_leak_checker as t; t._report_all()", ndev=1)


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_leak_reported_as_jax(name):
  expected, actual = _reports()[name]
  assert actual == expected


def test_flag_off_no_check():
  leak = []
  ARRAX.top.jit(_leaky(ARRAX, leak))(1.0)   # no error without the flag, as in JAX
  assert len(leak) == 1


def _program(lib, x):
  top, jnp = lib.top, lib.np

  def g(v):
    carry = top.lax.scan(lambda c, r: (c + r, c * r), 0.0, v)[1].sum()
    return carry + top.lax.cond(v.sum() > 0, jnp.sin, jnp.cos, v).sum()
  return (top.jit(top.grad(g))(x), top.vmap(top.grad(g))(jnp.stack([x, x])),
          top.jit(lambda m: top.nn.softmax(m) @ m.T)(jnp.outer(x, x)),
          top.jit(top.vmap(jnp.linalg.inv))(jnp.eye(3)[None] * 2),
          top.jit(lambda v: top.lax.fori_loop(0, 3, lambda i, c: c * 2, v))(x))


def _no_false_positives():
  x = np.arange(3, dtype=np.float32)
  with JAX.top.checking_leaks():
    expected = _program(JAX, to_jax(x))
  with ARRAX.top.checking_leaks():
    actual = _program(ARRAX, to_arrax(x))
  assert_same(actual, expected, rtol=1e-6, atol=1e-6)
  print("NO FALSE POSITIVES")


def test_no_false_positives():
  # The leak check collects garbage and scans referrers at every trace exit: cheap in a fresh
  # interpreter, minutes in a test worker holding thousands of tests' objects. So it runs in one.
  res = run_script("import tests.test_leak_checker as t; t._no_false_positives()", ndev=1)
  assert res.returncode == 0 and "NO FALSE POSITIVES" in res.stdout, res.stderr[-3000:]
