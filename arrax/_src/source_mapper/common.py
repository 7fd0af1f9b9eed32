"""Passes that produce source maps (`jax.experimental.source_mapper.common`): a registry of
named passes, each compiling a function (`compile_fn`) and making the dump of one stage
(`generate_dump`)."""
import contextlib
import dataclasses
import re
from collections.abc import Sequence
from typing import Any, Protocol

from arrax._src import sourcemap
from arrax._src.jit import jit


@dataclasses.dataclass(frozen=True, slots=True)
class SourceMapDump:
  """A generated text and the source map of its lines."""
  source_map: sourcemap.SourceMap
  generated_code: str
  pass_name: str


class CompileFn(Protocol):
  def __call__(self, work_dir, fn, f_args, f_kwargs, /, **kwargs) -> Any:
    ...


class GenerateDumpFn(Protocol):
  def __call__(self, compile_result: Any, /, **kwargs) -> SourceMapDump:
    ...


@dataclasses.dataclass(frozen=True, slots=True)
class Pass:
  """A named stage: how to compile the function, and how to dump that stage."""
  name: str
  compile_fn: CompileFn
  generate_dump: GenerateDumpFn


_pass_registry: dict[str, Pass] = {}


def register_pass(pass_: Pass):
  """Add a pass (ValueError if its name is taken)."""
  if pass_.name in _pass_registry:
    raise ValueError(f"Pass {pass_.name} already registered")
  _pass_registry[pass_.name] = pass_


def all_passes() -> Sequence[Pass]:
  """Every registered pass, in registration order."""
  return list(_pass_registry.values())


def filter_passes(regex: str) -> Sequence[Pass]:
  """The registered passes whose name matches `regex` (at its start)."""
  return [p for p in _pass_registry.values() if re.match(regex, p.name)]


@contextlib.contextmanager
def flag_env(**kwargs):
  """Set absl flags for the block, restoring them after."""
  from absl import flags
  saved = {k: getattr(flags.FLAGS, k) for k in kwargs}
  for k, v in kwargs.items():
    setattr(flags.FLAGS, k, v)
  try:
    yield
  finally:
    for k, v in saved.items():
      setattr(flags.FLAGS, k, v)


def compile_with_env(f, f_args, f_kwargs, env_flags, compiler_flags):
  """Compile `f` for the arguments with the absl flags `env_flags` set."""
  with flag_env(**env_flags):
    jit(lambda *args, **kwargs: f(*args, **kwargs)).lower(*f_args, **f_kwargs).compile(
        compiler_flags)
