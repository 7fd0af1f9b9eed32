"""Source information: the Python traceback each traced equation records (lowered into MLIR
locations, so compiled HLO names the user's file and line), which frames count as the user's,
and `jax.extend.source_info_util`'s interface. The name stack (named_scope, jvp/vmap/transpose,
giving op names) lives in `core.trace_ctx.name_stack`; these name-stack functions are JAX's
interface only and do not reach it."""
import contextlib
import functools
import os
import re
import sysconfig
from typing import NamedTuple

from jaxlib import _jax

from arrax._src import core

# Frames in these files are not the user's (arrax itself, the standard library).
_exclude_paths: list[str] = [
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep,
    sysconfig.get_path("stdlib"),
    os.path.dirname(contextlib.__file__),
]


def register_exclusion(path: str):
  """Treat frames in files under `path` as library frames, not the user's."""
  _exclude_paths.append(path)
  is_user_filename.cache_clear()


@functools.cache
def is_user_filename(filename: str) -> bool:
  """Whether a frame in `filename` is the user's code (test files `*_test.py` always are)."""
  return filename.endswith("_test.py") or not any(filename.startswith(p)
                                                  for p in _exclude_paths)


def current_traceback():
  """The traceback a new equation records: the one being replayed, else the live stack."""
  return core.trace_ctx.user_tb or _jax.Traceback.get_traceback()


class Frame(NamedTuple):
  file_name: str
  function_name: str
  start_line: int
  start_column: int
  end_line: int
  end_column: int


def user_frames(traceback):
  """The user's frames of a traceback (jaxlib's), innermost first."""
  if traceback is None:
    return
  for code, lasti in zip(*traceback.raw_frames()):
    if is_user_filename(code.co_filename):
      line, col, end_line, end_col = _jax.Traceback.code_addr2location(code, lasti)
      yield Frame(code.co_filename, code.co_qualname, line, col, end_line, end_col)


def user_frame(traceback):
  """The innermost user frame of a traceback, or None."""
  return next(user_frames(traceback), None)


def canonical_filename(file_name):
  """`file_name` with `jax_hlo_source_file_canonicalization_regex`'s matches removed."""
  pattern = core.config.jax_hlo_source_file_canonicalization_regex
  return re.sub(pattern, "", file_name) if pattern else file_name


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
  """The source info a primitive bound now would record (its traceback)."""
  return SourceInfo(current_traceback())


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
  """Equations made in the block record the traceback `c` (when not None) as their source."""
  del name_stack
  ctx = core.trace_ctx
  prev = ctx.user_tb
  ctx.user_tb = c or prev
  try:
    yield
  finally:
    ctx.user_tb = prev


def summarize(source_info, num_frames=1):
  """"file:line:column (function)" of the innermost user frames of `source_info`."""
  frames = list(user_frames(getattr(source_info, "traceback", None)))[:num_frames]
  if not frames:
    return "unknown"
  return "\n".join(f"{f.file_name}:{f.start_line}:{f.start_column} ({f.function_name})"
                    for f in reversed(frames))
