"""Threads and long runs: arrax called from several Python threads at once gives the results it
gives single-threaded; trace state and config contexts are thread-local (as in JAX); repeated
eager ops and jit calls keep caches and live arrays bounded.

Cheap by design: a few hundred calls per test, counts of cache entries and live arrays (never
timings).
"""
import gc
import threading
import time

import numpy as np
import pytest

import arrax
import arrax.numpy as jnp
from arrax._src import core, dispatch, jit as jit_mod

N_THREADS = 8


def _run_threads(work, n=N_THREADS):
  """Run work(i) in n threads started together; returns their results, re-raising the first
  exception a thread raised."""
  barrier = threading.Barrier(n)
  results, errors = [None] * n, []

  def body(i):
    try:
      barrier.wait()
      results[i] = work(i)
    except BaseException as e:  # noqa: BLE001
      errors.append(e)

  threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
  for t in threads:
    t.start()
  for t in threads:
    t.join(60)
  assert not any(t.is_alive() for t in threads), "a thread did not finish"
  if errors:
    raise errors[0]
  return results


def _loss(w, x):
  return jnp.sum(jnp.tanh(x @ w) ** 2)


_loss_jit = arrax.jit(_loss)
_grad_jit = arrax.jit(arrax.grad(_loss))


def _mixed_work(i):
  """Eager ops, a shared jitted function, grad and vmap on inputs private to `i`."""
  x = jnp.asarray(np.arange(12, dtype=np.float32).reshape(3, 4) / (i + 1))
  w = jnp.asarray(np.linspace(-1, 1, 8, dtype=np.float32).reshape(4, 2) * (i + 1))
  out = []
  for _ in range(2):
    out.append([
        np.asarray(jnp.sin(x) * 2 + i),                         # eager
        np.asarray(_loss_jit(w, x)),                            # shared jit
        np.asarray(_grad_jit(w, x)),                            # shared jit of grad
        np.asarray(arrax.grad(_loss)(w, x)),                    # eager grad
        np.asarray(arrax.vmap(lambda r: jnp.dot(r, w))(x)),     # vmap
        np.asarray(arrax.jit(lambda v: v.T @ v + i)(x)),        # private jit
    ])
  return out


def test_threads_match_single_threaded():
  expected = [_mixed_work(i) for i in range(N_THREADS)]
  got = _run_threads(_mixed_work)
  for e, g in zip(expected, got):
    for e_round, g_round in zip(e, g):
      for a, b in zip(g_round, e_round):
        np.testing.assert_array_equal(a, b)


def test_compile_race_traces_once():
  traces = []

  @arrax.jit
  def f(x):
    traces.append(threading.get_ident())
    time.sleep(0.05)   # lets the other threads reach the cache while this one traces
    return jnp.cumsum(x) * 3

  x = np.arange(5, dtype=np.float32)
  outs = _run_threads(lambda i: np.asarray(f(jnp.asarray(x + i))))
  for i, o in enumerate(outs):
    np.testing.assert_array_equal(o, np.cumsum(x + i) * 3)
  assert len(traces) == 1, f"traced {len(traces)} times under a compile race"


def test_eager_cache_eviction_under_threads(monkeypatch):
  # A tiny eager cache evicts constantly while threads read it: no KeyError, right values.
  monkeypatch.setattr(dispatch, "PRIM_CACHE_SIZE", 3)
  arrax.clear_caches()   # (eviction happens on insertion: start from an empty cache)

  def work(i):
    vals = []
    for k in range(1, 6):
      x = jnp.ones((k,), np.float32) * i
      vals.append(float(jnp.sum(x + k)))
    return vals

  for i, vals in enumerate(_run_threads(work)):
    assert vals == [float(k * (i + k)) for k in range(1, 6)]
  assert len(dispatch._prim_cache) <= 3


def test_trace_state_is_thread_local():
  """A trace open in one thread is invisible to another: eager ops there stay concrete."""
  inside, release = threading.Event(), threading.Event()
  seen = {}

  def traced(x):
    seen["tracing"] = core.trace_ctx.trace
    inside.set()
    assert release.wait(30)
    return x * 2

  t = threading.Thread(target=lambda: seen.setdefault("jaxpr", arrax.make_jaxpr(traced)(1.0)))
  t.start()
  assert inside.wait(30)
  try:
    y = jnp.arange(3.0) + 1             # runs eagerly while the other thread is tracing
    assert isinstance(y, arrax.Array) and not isinstance(y, core.Tracer)
    np.testing.assert_array_equal(np.asarray(y), [1., 2., 3.])
    assert core.trace_ctx.trace is not seen["tracing"]
    assert float(arrax.jit(lambda v: v.sum())(y)) == 6.0
  finally:
    release.set()
    t.join(30)
  assert "mul" in str(seen["jaxpr"])


def _jit_disabled():
  seen = []
  arrax.jit(lambda v: seen.append(type(v).__name__) or v)(1.0)
  return seen[-1] == "float"


@pytest.mark.parametrize("context,probe", [
    (lambda: arrax.enable_x64(True), lambda: jnp.asarray(1.0).dtype == np.float64),
    (lambda: arrax.disable_jit(), _jit_disabled),
    (lambda: arrax.default_matmul_precision("highest"),
     lambda: arrax.config.jax_default_matmul_precision == "highest"),
    (lambda: arrax.numpy_rank_promotion("raise"),
     lambda: arrax.config.jax_numpy_rank_promotion == "raise"),
    (lambda: arrax.debug_nans(True), lambda: arrax.config.jax_debug_nans),
    (lambda: arrax.default_device(arrax.devices()[0]),
     lambda: arrax.config.jax_default_device is not None),
], ids=["enable_x64", "disable_jit", "matmul_precision", "rank_promotion", "debug_nans",
        "default_device"])
def test_config_contexts_are_thread_local(context, probe):
  """As in JAX: a context opened in one thread does not change what another thread sees."""
  inside, release = threading.Event(), threading.Event()
  seen = {}

  def other():
    with context():
      seen["inside"] = probe()
      inside.set()
      assert release.wait(30)

  t = threading.Thread(target=other)
  t.start()
  assert inside.wait(30)
  try:
    assert seen["inside"] is True
    assert probe() is False, "a config context leaked into another thread"
  finally:
    release.set()
    t.join(30)


def _live():
  gc.collect()
  return len(arrax.live_arrays())


def test_long_run_eager_and_jit_stay_bounded():
  f = arrax.jit(lambda a, b: a * b + 1.0)
  x = jnp.arange(4.0)

  def run(n):
    acc = x
    for _ in range(n):
      acc = f(acc, 0.5) - jnp.sin(x)
    for _ in range(n):
      acc = (acc * 0.5 + x) / 2
    return float(acc[0])

  first = run(2)                # warm every cache the loop uses
  start_live = _live()
  prim, jitted = len(dispatch._prim_cache), len(jit_mod._compiled_order)
  assert np.isfinite(run(1500)) and np.isfinite(first)
  assert len(dispatch._prim_cache) == prim, "the eager cache grew over repeated identical ops"
  assert len(jit_mod._compiled_order) == jitted, "jit compiled again for the same signature"
  assert _live() <= start_live, "arrays stayed alive after the loop"


@pytest.mark.filterwarnings("ignore::arrax._src.jit.RecompileWarning")
def test_caches_bounded_over_many_shapes(monkeypatch):
  # (the bounds are lowered so that a few shapes exceed them)
  monkeypatch.setattr(dispatch, "PRIM_CACHE_SIZE", 3)
  monkeypatch.setattr(jit_mod, "JIT_CACHE_SIZE", 2)
  arrax.clear_caches()   # (eviction happens on insertion: start from empty caches)
  f = arrax.jit(lambda v: v * 2)
  for n in range(1, 7):
    assert float(f(np.ones((n,), np.float32))[0]) == 2
    assert float((jnp.zeros((n,)) + n)[-1]) == n   # new eager shapes
    assert len(dispatch._prim_cache) <= 3
    assert len(jit_mod._compiled_order) <= 2
    assert len(f._cache) <= 2
  arrax.clear_caches()
  assert len(dispatch._prim_cache) == 0 and len(jit_mod._compiled_order) == 0
  assert float(f(jnp.ones(3)).sum()) == 6.0   # still works after clearing


def test_arrays_freed_when_dropped():
  start = _live()
  xs = [jnp.full((8,), float(i)) for i in range(50)]
  assert _live() >= start + 50
  del xs
  assert _live() <= start
