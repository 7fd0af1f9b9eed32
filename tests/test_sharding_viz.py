"""arrax.debug.inspect_array_sharding / visualize_sharding / visualize_array_sharding against
JAX 0.10.2: the printed tables byte for byte and the shardings called back with.

The multi-device cases (tests/sharding_viz_cases.py) run in one fresh interpreter per device
count (1, 2, 4, 8 simulated CPU devices) that runs every case with both libraries.
"""
import contextlib
import importlib.util
import inspect
import io

import numpy as np
import pytest

import arrax
import arrax.numpy as anp
import jax
import jax.numpy as jnp
from tests import sharding_viz_cases
from tests.multidevice import case_results
from tests.oracle import check_jaxpr

pytest.importorskip("rich")   # (a test dependency: the `test` extra installs it)

_results: dict = {}
DEVICE_COUNTS = [1, 2, 4, 8]


def _results_for(ndev):
  if ndev not in _results:
    _results[ndev] = case_results("sharding_viz_cases", f"main({ndev})", ndev)
  return _results[ndev]


@pytest.mark.parametrize("ndev", DEVICE_COUNTS)
@pytest.mark.parametrize("name", list(sharding_viz_cases.CASES))
def test_matches_jax(name, ndev):
  assert _results_for(ndev)[name] == "ok"


def _params(f):
  return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


@pytest.mark.parametrize("name", ["visualize_array_sharding", "visualize_sharding",
                                  "inspect_array_sharding"])
def test_signature_matches_jax(name):
  assert _params(getattr(arrax.debug, name)) == _params(getattr(jax.debug, name))


def _drawn(fn, *args, **kw):
  buf = io.StringIO()
  with contextlib.redirect_stdout(buf):
    fn(*args, **kw)
  return buf.getvalue()


@pytest.mark.parametrize("shape", [(1,), (7,), (3, 5), (40, 2), (2, 40)])
@pytest.mark.parametrize("kw", [{}, dict(use_color=False), dict(scale=3.0, min_width=1),
                                dict(max_width=12)])
def test_one_device_text(shape, kw):
  ours = _drawn(arrax.debug.visualize_array_sharding, anp.ones(shape), **kw)
  theirs = _drawn(jax.debug.visualize_array_sharding, jnp.ones(shape), **kw)
  assert ours == theirs and "CPU 0" in ours


def test_visualize_sharding_of_a_sharding():
  d = arrax.devices()[0]
  s = arrax.sharding.SingleDeviceSharding(d)
  t = jax.sharding.SingleDeviceSharding(jax.devices()[0])
  assert (_drawn(arrax.debug.visualize_sharding, (4, 9), s) ==
          _drawn(jax.debug.visualize_sharding, (4, 9), t))


def test_without_rich_raises_as_jax(monkeypatch):
  real = importlib.util.find_spec
  monkeypatch.setattr(importlib.util, "find_spec",
                      lambda name, *a: None if name == "rich" else real(name, *a))
  errors = []
  for lib, np_ in [(arrax, anp), (jax, jnp)]:
    with pytest.raises(ValueError) as e:
      lib.debug.visualize_array_sharding(np_.ones(3))
    errors.append(str(e.value))
  assert errors[0] == errors[1] == "`visualize_sharding` requires `rich` to be installed."


def _cb(s):
  del s


def test_jaxpr_text():
  def make(lib):
    def f(x):
      y = x * 2
      lib.debug.inspect_array_sharding({"a": y, "b": x}, callback=_cb)
      return y
    return f
  check_jaxpr(make(arrax), make(jax), np.ones((2, 3), np.float32))
  check_jaxpr(lambda x: arrax.jit(make(arrax))(x), lambda x: jax.jit(make(jax))(x),
              np.ones((4,), np.float32))


def _seen(lib, np_, run):
  out = []
  run(lib, np_, lambda s: out.append(repr(s)))
  return out


@pytest.mark.parametrize("run", [
    lambda lib, np_, cb: lib.vmap(lambda x: lib.debug.inspect_array_sharding(x, callback=cb))(
        np_.ones((2, 3))),
    lambda lib, np_, cb: lib.grad(lambda x: (lib.debug.inspect_array_sharding(x, callback=cb),
                                             (x * 2).sum())[1])(np_.ones(3)),
    lambda lib, np_, cb: lib.jit(lib.grad(lambda x: (
        lib.debug.inspect_array_sharding(x, callback=cb), (x * 2).sum())[1]))(np_.ones(3)),
    lambda lib, np_, cb: lib.jit(lib.vmap(
        lambda x: lib.debug.inspect_array_sharding(x, callback=cb)))(np_.ones((2, 3))),
    lambda lib, np_, cb: lib.lax.cond(True, lambda x: lib.debug.inspect_array_sharding(
        x, callback=cb), lambda x: None, np_.ones(2)),
    lambda lib, np_, cb: lib.lax.scan(lambda c, x: (lib.debug.inspect_array_sharding(
        x, callback=cb), None), None, np_.ones((3, 2))),
], ids=["vmap", "grad", "jit_grad", "jit_vmap", "cond", "scan"])
def test_callback_under_transformations(run):
  ours, theirs = _seen(arrax, anp, run), _seen(jax, jnp, run)
  assert ours == theirs and ours
