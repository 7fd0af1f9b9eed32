"""`jax.extend.source_info_util` compatibility: JAX's interface only. arrax records no source
locations; its name stack (named_scope, jvp/vmap/transpose, giving op names) lives in
`core.trace_ctx.name_stack` and is not reachable through these functions."""
import contextlib
from typing import NamedTuple

from arrax._src.traceback_util import register_exclusion  # noqa: F401


class NameStack(NamedTuple):
  stack: tuple = ()

  def extend(self, name):
    return NameStack(self.stack + (tuple(name) if isinstance(name, tuple) else (name,)))

  def __str__(self):
    return "/".join(str(s) for s in self.stack)


class SourceInfo(NamedTuple):
  traceback: object = None
  name_stack: NameStack = NameStack()


def new_source_info():
  return SourceInfo()


def current():
  return SourceInfo()


def current_name_stack():
  return NameStack()


@contextlib.contextmanager
def extend_name_stack(name):
  yield NameStack((name,))


@contextlib.contextmanager
def new_name_stack(name=""):
  yield NameStack((name,) if name else ())


@contextlib.contextmanager
def set_name_stack(name_stack):
  yield


@contextlib.contextmanager
def reset_name_stack():
  yield


@contextlib.contextmanager
def transform_name_stack(name):
  yield NameStack()


@contextlib.contextmanager
def user_context(c, *, name_stack=None):
  yield


def summarize(source_info, num_frames=1):
  return "unknown"
