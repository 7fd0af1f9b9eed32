"""`generate_sourcemaps` (`jax.experimental.source_mapper.generate_map`)."""
import os
import tempfile
from collections.abc import Sequence
from typing import Protocol

from arrax._src.source_mapper import common


class SourceMapGeneratorFn(Protocol):
  def __call__(self, *args, **kwargs) -> Sequence[common.SourceMapDump]:
    ...


def generate_sourcemaps(f, passes: Sequence[common.Pass], **pass_kwargs) -> SourceMapGeneratorFn:
  """A function of `f`'s arguments returning one SourceMapDump per pass of `passes`;
  `pass_kwargs` go to every pass. Passes sharing a compile function compile once."""
  def wrapper(*args, **kwargs) -> Sequence[common.SourceMapDump]:
    dumps: list[common.SourceMapDump] = []
    compiled: dict = {}
    with tempfile.TemporaryDirectory() as work_dir:
      for p in passes:
        if p.compile_fn not in compiled:
          pass_dir = os.path.join(work_dir, p.name.replace(":", "__"))
          os.makedirs(pass_dir, exist_ok=False)
          compiled[p.compile_fn] = p.compile_fn(pass_dir, f, args, kwargs, **pass_kwargs)
        dumps.append(p.generate_dump(compiled[p.compile_fn], **pass_kwargs))
    return dumps
  return wrapper
