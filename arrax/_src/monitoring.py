"""jax.monitoring: named events and the listeners called when code reaches them.

arrax records JAX's compile-pipeline events: `/jax/core/compile/jaxpr_trace_duration`,
`.../jaxpr_to_mlir_module_duration` and `.../backend_compile_duration` (each as a start-time
scalar, a duration and a time span, with `fun_name`), and the persistent compilation cache's
`/jax/compilation_cache/compile_requests_use_cache`, `cache_hits` and `cache_misses`.
"""
from __future__ import annotations

import time

__all__ = ["clear_event_listeners", "record_event", "record_event_duration_secs",
           "record_event_time_span", "record_scalar", "register_event_duration_secs_listener",
           "register_event_listener", "register_event_time_span_listener",
           "register_scalar_listener", "unregister_event_duration_listener",
           "unregister_event_listener", "unregister_event_time_span_listener",
           "unregister_scalar_listener"]

JAXPR_TRACE_EVENT = "/jax/core/compile/jaxpr_trace_duration"
JAXPR_TO_MLIR_MODULE_EVENT = "/jax/core/compile/jaxpr_to_mlir_module_duration"
BACKEND_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"

# The four kinds of listener, each a list (replaced, not cleared, by clear_event_listeners).
_listeners: dict[str, list] = {"event": [], "duration": [], "span": [], "scalar": []}


def record_event(event: str, **kwargs) -> None:
  """Call every event listener with `event` (and the metadata `kwargs`)."""
  for callback in _listeners["event"]:
    callback(event, **kwargs)


def record_event_duration_secs(event: str, duration: float, **kwargs) -> None:
  """Call every duration listener with `event` and how long it took, in seconds."""
  for callback in _listeners["duration"]:
    callback(event, duration, **kwargs)


def record_event_time_span(event: str, start_time: float, end_time: float, **kwargs) -> None:
  """Call every time-span listener with `event` and its start and end times."""
  for callback in _listeners["span"]:
    callback(event, start_time, end_time, **kwargs)


def record_scalar(event: str, value: float | int, **kwargs) -> None:
  """Call every scalar listener with `event` and a value."""
  for callback in _listeners["scalar"]:
    callback(event, value, **kwargs)


def register_event_listener(callback) -> None:
  """`callback(event, **kwargs)` will be called by record_event."""
  _listeners["event"].append(callback)


def register_event_duration_secs_listener(callback) -> None:
  """`callback(event, duration_secs, **kwargs)` will be called by record_event_duration_secs."""
  _listeners["duration"].append(callback)


def register_event_time_span_listener(callback) -> None:
  """`callback(event, start_time, end_time, **kwargs)` will be called by
  record_event_time_span."""
  _listeners["span"].append(callback)


def register_scalar_listener(callback) -> None:
  """`callback(event, value, **kwargs)` will be called by record_scalar."""
  _listeners["scalar"].append(callback)


def _unregister(kind, callback):
  assert callback in _listeners[kind]   # (JAX asserts too)
  _listeners[kind].remove(callback)


def unregister_event_listener(callback) -> None:
  """Remove an event listener."""
  _unregister("event", callback)


def unregister_event_duration_listener(callback) -> None:
  """Remove a duration listener."""
  _unregister("duration", callback)


def unregister_event_time_span_listener(callback) -> None:
  """Remove a time-span listener."""
  _unregister("span", callback)


def unregister_scalar_listener(callback) -> None:
  """Remove a scalar listener."""
  _unregister("scalar", callback)


def clear_event_listeners() -> None:
  """Remove every listener of every kind."""
  for kind in _listeners:
    _listeners[kind] = []


class timed:
  """`with timed(EVENT, fun_name):` records, as JAX, the start time as a scalar, then the
  duration and the time span of the block (nothing is done while no listener is registered)."""
  __slots__ = ("event", "fun_name", "start")

  def __init__(self, event, fun_name):
    self.event, self.fun_name = event, fun_name

  def __enter__(self):
    self.start = time.time()
    record_scalar(self.event, self.start, fun_name=self.fun_name)

  def __exit__(self, *exc):
    end = time.time()
    record_event_duration_secs(self.event, end - self.start, fun_name=self.fun_name)
    record_event_time_span(self.event, self.start, end, fun_name=self.fun_name)
