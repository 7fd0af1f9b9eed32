"""`jax.profiler`: traces for TensorBoard/Perfetto and device memory profiles, through jaxlib's
profiler (`jaxlib._profiler`: the TSL profiler session, its gRPC server and TraceMe events).

A trace written by `stop_trace` is the directory TensorBoard's profile plugin reads:
`<log_dir>/plugins/profile/<run>/<host>.xplane.pb` (plus `perfetto_trace.json.gz` when asked).
Only one trace may run at a time in a process (the profiler is process-wide, shared with any
other jaxlib user in the process).
"""
from __future__ import annotations

import contextlib
import functools
import gzip
import http.server
import json
import logging
import os
import pathlib
import socketserver
import threading

from jaxlib import _profile_data, _profiler, version as _jaxlib_version

from arrax._src.backend import get_backend as _get_backend
from arrax.version import __version__ as _jax_version

logger = logging.getLogger(__name__)

ProfileData = _profile_data.ProfileData
ProfileEvent = _profile_data.ProfileEvent
ProfilePlane = _profile_data.ProfilePlane


class ProfileOptions(_profiler.ProfileOptions):
  """What the profiler collects (host/Python tracer levels, HLO protos, duration, ...)."""


# ---- the profiler server (for TensorBoard's "capture profile") -------------------------------
_server = None


def start_server(port: int, requires_backend: bool = True) -> _profiler.ProfilerServer:
  """Serve profiles on `port` so TensorBoard (or another client) can capture a trace."""
  global _server
  if _server is not None:
    raise ValueError("Only one profiler server can be active at a time.")
  if requires_backend:
    _get_backend()   # device tracers need the backend up before the server starts
  _server = _profiler.start_server(port)
  return _server


def stop_server():
  """Stop the server `start_server` started (it shuts down when released)."""
  global _server
  if _server is None:
    raise ValueError("No active profiler server.")
  _server = None


def register_subprocess(pid: int, port: int):
  """Profile the subprocess `pid`, whose profiler server listens on `port`, along with this
  process; returns a function that unregisters it."""
  return _profiler.register_subprocess(pid, port)


# ---- programmatic traces --------------------------------------------------------------------
class _TraceState:
  def __init__(self):
    self.lock = threading.Lock()
    self.reset()

  def reset(self):
    self.session = None
    self.log_dir = None
    self.perfetto_trace = False
    self.perfetto_link = False


_state = _TraceState()


def _set_session_metadata():
  _profiler.clear_metadata()
  _profiler.set_metadata("jax_version", _jax_version)
  _profiler.set_metadata("jaxlib_version", _jaxlib_version.__version__)
  client = _get_backend()
  _profiler.set_metadata(f"{client.platform}_version", client.platform_version)


def start_trace(log_dir: os.PathLike | str, create_perfetto_link: bool = False,
                create_perfetto_trace: bool = False,
                profiler_options: ProfileOptions | None = None) -> None:
  """Start collecting a trace, written to `log_dir` by `stop_trace`.

  `create_perfetto_trace` also writes `perfetto_trace.json.gz` (for ui.perfetto.dev);
  `create_perfetto_link` does too, then serves it on 127.0.0.1:9001 and prints a link,
  blocking until Perfetto fetched it. Only one trace at a time (RuntimeError otherwise).
  """
  with _state.lock:
    if _state.session is not None:
      raise RuntimeError("Profile has already been started. Only one profile may be run at a "
                         "time.")
    _get_backend()   # device tracers are made when the session starts
    _set_session_metadata()
    options = ProfileOptions() if profiler_options is None else profiler_options
    _state.session = _profiler.ProfilerSession(options)
    _state.log_dir = str(log_dir)
    _state.perfetto_link = bool(create_perfetto_link)
    _state.perfetto_trace = bool(create_perfetto_trace or create_perfetto_link)


def _latest_run_dir(log_dir):
  runs = (pathlib.Path(log_dir).absolute() / "plugins" / "profile").iterdir()
  return max(runs, key=os.path.getmtime)


def _write_perfetto_trace(log_dir):
  """perfetto_trace.json.gz next to the run's trace.json.gz, without its `metadata` field
  (which Perfetto rejects)."""
  run = _latest_run_dir(log_dir)
  found = list(run.glob("*.trace.json.gz"))
  if len(found) != 1:
    raise ValueError(f"Invalid trace folder: {run}")
  with gzip.open(found[0], "rb") as f:
    trace_json = json.load(f)
  trace_json.pop("metadata", None)
  out = run / "perfetto_trace.json.gz"
  with gzip.open(out, "w") as f:
    f.write(json.dumps(trace_json).encode("utf-8"))
  return out


class _PerfettoHandler(http.server.SimpleHTTPRequestHandler):
  def end_headers(self):
    self.send_header("Access-Control-Allow-Origin", "*")
    super().end_headers()

  def do_GET(self):
    self.server.last_request = self.path
    return super().do_GET()

  def do_POST(self):
    self.send_error(404, "File not found")


def _serve_perfetto_trace(path, port=9001):
  """Serve `path` on 127.0.0.1:`port` until ui.perfetto.dev fetched it."""
  directory, name = os.path.split(path)
  handler = functools.partial(_PerfettoHandler, directory=directory)
  socketserver.TCPServer.allow_reuse_address = True
  with socketserver.TCPServer(("127.0.0.1", port), handler) as httpd:
    print(f"Open URL in browser: https://ui.perfetto.dev/#!/?url=http://127.0.0.1:{port}/{name}")
    while getattr(httpd, "last_request", None) != "/" + name:
      httpd.handle_request()


def stop_trace():
  """Stop the running trace and write it to the `log_dir` given to `start_trace`."""
  with _state.lock:
    session = _state.session
    if session is None:
      raise RuntimeError("No profile started")
    try:
      session.stop_and_export(_state.log_dir)
      if _state.perfetto_trace:
        path = _write_perfetto_trace(_state.log_dir)
        if _state.perfetto_link:
          _serve_perfetto_trace(path)
    finally:
      _state.reset()
      _profiler.clear_metadata()


@contextlib.contextmanager
def trace(log_dir: os.PathLike | str, create_perfetto_link=False, create_perfetto_trace=False,
          profiler_options: ProfileOptions | None = None):
  """Trace the enclosed block into `log_dir` (`start_trace` ... `stop_trace`)."""
  start_trace(log_dir, create_perfetto_link, create_perfetto_trace, profiler_options)
  try:
    yield
  finally:
    stop_trace()


# ---- annotations ----------------------------------------------------------------------------
class TraceAnnotation(_profiler.TraceMe):
  """A named event on the trace timeline spanning the `with` block (keyword arguments become
  the event's metadata). Costs almost nothing while no trace runs.

  Example:
    >>> with jax.profiler.TraceAnnotation("my_label"):
    ...   y = (x * 2).block_until_ready()
  """


class StepTraceAnnotation(TraceAnnotation):
  """A trace event marking one step (e.g. of training); pass `step_num=` to number it, so the
  profiler can analyse steps."""

  def __init__(self, name: str, **kwargs):
    super().__init__(name, _r=1, **kwargs)


def annotate_function(func, name: str | None = None, **decorator_kwargs):
  """Wrap `func` so each call is a TraceAnnotation named `name` (default: its qualified name).

  Example:
    >>> @functools.partial(jax.profiler.annotate_function, name="step")
    ... def f(x): return x + 1
  """
  label = name or getattr(func, "__qualname__", None) or func.__name__

  @functools.wraps(func)
  def wrapper(*args, **kwargs):
    with TraceAnnotation(label, **decorator_kwargs):
      return func(*args, **kwargs)
  return wrapper


# ---- device memory profiles -----------------------------------------------------------------
def device_memory_profile(backend: str | None = None) -> bytes:
  """A snapshot of the live device buffers and executables as a gzipped pprof protocol buffer
  (read it with the `pprof` tool)."""
  return gzip.compress(_get_backend(backend).heap_profile())


def save_device_memory_profile(filename, backend: str | None = None) -> None:
  """Write `device_memory_profile(backend)` to `filename`."""
  data = device_memory_profile(backend)
  with open(filename, "wb") as f:
    f.write(data)

