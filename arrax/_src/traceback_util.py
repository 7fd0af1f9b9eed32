"""`jax._src.traceback_util` compatibility: JAX hides its own frames from tracebacks of errors
raised inside its API; arrax keeps tracebacks whole, so these record the request only."""
import functools
import os

_exclude_paths: list[str] = [os.path.dirname(os.path.dirname(__file__))]


def register_exclusion(path: str):
  """Ask for frames under `path` to be hidden from filtered tracebacks (recorded only)."""
  _exclude_paths.append(path)


def include_frame(f) -> bool:
  return not any(f.f_code.co_filename.startswith(p) for p in _exclude_paths)


def api_boundary(fun=None, *, repro_api_name=None, repro_user_func=False):
  """Mark `fun` as an API entry point (a no-op decorator in arrax)."""
  del repro_api_name, repro_user_func
  if fun is None:
    return lambda f: api_boundary(f)

  @functools.wraps(fun)
  def wrapped(*args, **kwargs):
    return fun(*args, **kwargs)
  return wrapped


def filtering_mode():
  return "off"
