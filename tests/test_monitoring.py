"""jax.monitoring (listeners for compile-pipeline and cache events) and
jax.experimental.compilation_cache, against JAX."""
import inspect

import jax
import numpy as np
import pytest

import arrax
import arrax.monitoring
from arrax.experimental.compilation_cache import compilation_cache as acc
from jax.experimental.compilation_cache import compilation_cache as jcc

LIBS = [("jax", jax), ("arrax", arrax)]


def test_names_and_signatures_match_jax():
  import jax.monitoring as jm
  names = [n for n in dir(jm) if not n.startswith("_") and callable(getattr(jm, n))]
  names = [n for n in names if n not in ("Protocol",)]
  for n in names:
    assert inspect.signature(getattr(arrax.monitoring, n)).parameters.keys() == \
        inspect.signature(getattr(jm, n)).parameters.keys(), n
  for n in ("set_cache_dir", "reset_cache"):
    assert list(inspect.signature(getattr(acc, n)).parameters) == \
        list(inspect.signature(getattr(jcc, n)).parameters)


class _Recorder:
  def __init__(self, mon):
    self.mon, self.log = mon, []
    self.fns = [lambda e, **kw: self.log.append(("event", e, tuple(sorted(kw)))),
                lambda e, d, **kw: self.log.append(("duration", e, kw.get("fun_name"),
                                                    d >= 0)),
                lambda e, s, t, **kw: self.log.append(("span", e, kw.get("fun_name"), t >= s)),
                lambda e, v, **kw: self.log.append(("scalar", e, kw.get("fun_name")))]
    regs = (mon.register_event_listener, mon.register_event_duration_secs_listener,
            mon.register_event_time_span_listener, mon.register_scalar_listener)
    for reg, f in zip(regs, self.fns):
      reg(f)

  def remove(self):
    unregs = (self.mon.unregister_event_listener, self.mon.unregister_event_duration_listener,
              self.mon.unregister_event_time_span_listener, self.mon.unregister_scalar_listener)
    for unreg, f in zip(unregs, self.fns):
      unreg(f)


_EVENTS = ("/jax/core/compile/jaxpr_trace_duration",
           "/jax/core/compile/jaxpr_to_mlir_module_duration",
           "/jax/core/compile/backend_compile_duration")


def _compile_events(lib):
  rec = _Recorder(lib.monitoring)
  try:
    def my_step(x):
      return lib.numpy.sin(x) * 2.0 + x
    lib.jit(my_step)(np.arange(3.0, dtype=np.float32)).block_until_ready()
  finally:
    rec.remove()
  return [r for r in rec.log if r[1] in _EVENTS]


def test_jit_records_the_compile_pipeline_events_as_jax():
  # Each stage (trace, lowering, XLA compile): a start-time scalar, a duration and a time
  # span, in JAX's order, with JAX's fun_name.
  expected, actual = (_compile_events(lib) for _, lib in LIBS)
  assert len(actual) == 9 and actual == expected


def test_record_and_unregister_like_jax():
  for _, lib in LIBS:
    mon, seen = lib.monitoring, []
    f = lambda e, **kw: seen.append((e, kw))  # noqa: E731
    mon.register_event_listener(f)
    mon.record_event("/my/event", where="here", n=3)
    mon.unregister_event_listener(f)
    mon.record_event("/my/event")
    assert seen == [("/my/event", {"where": "here", "n": 3})]
    with pytest.raises(AssertionError):
      mon.unregister_event_listener(f)
    vals = []
    g = lambda e, v, **kw: vals.append((e, v))  # noqa: E731
    mon.register_scalar_listener(g)
    mon.record_scalar("/my/scalar", 2.5)
    mon.unregister_scalar_listener(g)
    assert vals == [("/my/scalar", 2.5)]


def test_persistent_cache_events(tmp_path):
  old = (arrax.config.jax_compilation_cache_dir,
         arrax.config.jax_persistent_cache_min_compile_time_secs)
  rec = _Recorder(arrax.monitoring)
  try:
    acc.set_cache_dir(str(tmp_path))
    assert arrax.config.jax_compilation_cache_dir == str(tmp_path)
    arrax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    f = lambda x: x * 3.0 - 1.0  # noqa: E731
    out1 = arrax.jit(f)(np.ones(4, np.float32))
    arrax.clear_caches()
    out2 = arrax.jit(f)(np.ones(4, np.float32))
    acc.reset_cache()
  finally:
    rec.remove()
    arrax.config.update("jax_compilation_cache_dir", old[0])
    arrax.config.update("jax_persistent_cache_min_compile_time_secs", old[1])
  np.testing.assert_array_equal(np.asarray(out1), np.asarray(out2))
  events = [r[1] for r in rec.log if r[0] == "event"]
  assert events == ["/jax/compilation_cache/compile_requests_use_cache",
                    "/jax/compilation_cache/cache_misses",
                    "/jax/compilation_cache/compile_requests_use_cache",
                    "/jax/compilation_cache/cache_hits"], events


def test_clear_event_listeners():
  seen = []
  arrax.monitoring.register_event_duration_secs_listener(lambda e, d, **kw: seen.append(e))
  arrax.monitoring.clear_event_listeners()
  arrax.monitoring.record_event_duration_secs("/x", 1.0)
  assert seen == []
