"""Traceback filtering (`jax_traceback_filtering`): an exception leaving arrax's API (a jitted
function's call, `api_boundary`-wrapped functions) loses arrax's own frames, as in JAX.

Modes: "off" keeps tracebacks whole; "quiet_remove_frames" drops the hidden frames and adds a
note saying so; "remove_frames" drops them and chains the whole traceback as the `__cause__`
(an `UnfilteredStackTrace`); "tracebackhide" marks them `__tracebackhide__` (for IPython and
pytest); "auto" is "tracebackhide" under IPython >= 7.17, else "quiet_remove_frames". Only the
outermost boundary filters; the work is done on the exception path only."""
import functools
import os
import sys
import traceback
import types

from arrax._src import config_flags

_exclude_paths: list[str] = [os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep]
_boundary_codes: set = set()   # code objects of the functions that filter at their exit

_SIMPLIFIED = ("For simplicity, JAX has removed its internal frames from the traceback of the "
               "following exception. Set JAX_TRACEBACK_FILTERING=off to include these.")
_APPENDED = ("The stack trace below excludes JAX-internal frames.\nThe preceding is the original "
             "exception that occurred, unmodified.\n\n--------------------")


def register_exclusion(path: str):
  """Hide the frames of files under `path` from filtered tracebacks."""
  _exclude_paths.append(os.path.abspath(path))   # (a file, or a directory: all under it)


def include_filename(filename: str) -> bool:
  return not any(filename.startswith(p) for p in _exclude_paths)


def include_frame(f) -> bool:
  return include_filename(f.f_code.co_filename)


class UnfilteredStackTrace(Exception):
  """The whole traceback of an exception whose traceback was filtered ('remove_frames')."""


class SimplifiedTraceback(Exception):
  def __str__(self):
    return _SIMPLIFIED


SimplifiedTraceback.__module__ = "jax.errors"


def filtering_mode() -> str:
  """The mode in effect in this thread, with 'auto' resolved."""
  mode = config_flags.traceback_filtering.value
  if mode in (None, "auto"):
    ipython = sys.modules.get("IPython")
    shell = getattr(ipython, "get_ipython", lambda: None)() if ipython else None
    new = ipython is not None and getattr(ipython, "version_info", (0,))[:2] >= (7, 17)
    mode = "tracebackhide" if shell is not None and new else "quiet_remove_frames"
  return mode


def _filtered(tb):
  out = None
  for f, lineno in reversed(list(traceback.walk_tb(tb))):
    if include_frame(f):
      out = types.TracebackType(out, f, f.f_lasti, lineno)
  return out


def _with_callers(tb):
  # The traceback and, above it, the user frames that called into arrax up to the module level.
  out = tb
  at_module = False
  for f, lineno in traceback.walk_stack(tb.tb_frame):
    if "importlib._bootstrap" in f.f_code.co_filename:
      continue
    if at_module and f.f_code.co_name != "<module>":
      break
    if include_frame(f):
      out = types.TracebackType(out, f, f.f_lasti, lineno)
    at_module = at_module or f.f_code.co_name == "<module>"
  return out


def _inside_another_boundary(frame) -> bool:
  f = frame.f_back
  while f is not None:
    if f.f_code in _boundary_codes:
      return True
    f = f.f_back
  return False


def filter_exception(e: BaseException, frame) -> None:
  """Filter the traceback of `e`, leaving arrax through the boundary running in `frame`
  (called in its `except` clause, which then re-raises)."""
  mode = filtering_mode()
  if mode == "off" or e.__traceback__ is None or _inside_another_boundary(frame):
    return
  if mode == "tracebackhide":
    for f, _ in traceback.walk_tb(e.__traceback__):
      if not include_frame(f):
        f.f_locals["__tracebackhide__"] = True
    return
  tb = e.__traceback__
  e.with_traceback(_filtered(tb))
  if mode == "quiet_remove_frames":
    e.add_note("--------------------\n" + _SIMPLIFIED)
    return
  whole = UnfilteredStackTrace(
      "".join(traceback.format_exception_only(type(e), e)).strip() + "\n\n" + _APPENDED)
  whole.with_traceback(_with_callers(tb))
  whole.__cause__, whole.__context__ = e.__cause__, e.__context__
  whole.__suppress_context__ = e.__suppress_context__
  e.__cause__, e.__context__ = whole, None


def register_boundary(fun):
  """Make `fun` (a function that calls `filter_exception` on its way out) count as a
  boundary, so that boundaries below it leave the filtering to it."""
  _boundary_codes.add(fun.__code__)
  return fun


def api_boundary(fun=None, *, repro_api_name=None, repro_user_func=False):
  """Wrap `fun` so that exceptions leaving it have arrax's frames filtered out of their
  tracebacks (per jax_traceback_filtering)."""
  del repro_api_name, repro_user_func
  if fun is None:
    return api_boundary

  @functools.wraps(fun)
  def reraise_with_filtered_traceback(*args, **kwargs):
    __tracebackhide__ = True  # noqa: F841  (read by IPython and pytest)
    try:
      return fun(*args, **kwargs)
    except Exception as e:
      filter_exception(e, sys._getframe())
      raise
  return reraise_with_filtered_traceback


_boundary_codes.add(api_boundary(lambda: None).__code__)
