"""clear_caches and the bounded eager executable cache."""
import gc

import jax
import numpy as np

import arrax
import arrax.numpy as jnp
from arrax._src import dispatch
from arrax._src import jit as jit_module


def test_clear_caches_retraces_like_jax():
  counts = {}

  def run(lib):
    calls = []

    def f(x):
      calls.append(1)
      return x * 2

    g = lib.jit(f)
    g(np.ones(3, np.float32))
    g(np.ones(3, np.float32))
    lib.clear_caches()
    out = g(np.ones(3, np.float32))
    counts[lib.__name__] = len(calls)
    return np.asarray(out)

  np.testing.assert_array_equal(run(arrax), run(jax))
  assert counts["arrax"] == counts["jax"] == 2


def _maps():
  with open("/proc/self/maps") as f:
    return sum(1 for _ in f)


def test_executable_caches_are_bounded(monkeypatch):
  monkeypatch.setattr(dispatch, "PRIM_CACHE_SIZE", 16)
  monkeypatch.setattr(jit_module, "JIT_CACHE_SIZE", 16)
  arrax.clear_caches()
  gc.collect()
  before = _maps()
  for n in range(1, 121):
    x = jnp.ones((n,), jnp.float32) * 3.0 + 1.0
    assert float(x[0]) == 4.0
    assert len(dispatch._prim_cache) <= 16
    assert len(jit_module._compiled_order) <= 16
  gc.collect()
  # 120 shapes x 3 executables kept would add ~1,500 mappings; a bounded cache keeps ~16.
  assert _maps() - before < 400


def test_clear_caches_empties_eager_cache():
  jnp.ones(5) + 1
  assert len(dispatch._prim_cache) > 0
  arrax.clear_caches()
  assert len(dispatch._prim_cache) == 0


def test_evicted_jit_entry_recompiles_correctly(monkeypatch):
  monkeypatch.setattr(jit_module, "JIT_CACHE_SIZE", 2)
  f = arrax.jit(lambda x: x + 1)
  for n in (1, 2, 3, 1, 2, 3):
    np.testing.assert_array_equal(f(np.zeros(n, np.float32)), np.ones(n, np.float32))
  assert f._cache_size() <= 2
