"""The `jaxpr` source-map pass: the printed jaxpr, each equation mapped to the user's line
that made it."""
from typing import Any

from arrax._src import sourcemap
from arrax._src.api import make_jaxpr
from arrax._src.source_info_util import canonical_filename, user_frame
from arrax._src.source_mapper import common


def compile_jaxpr(work_dir, f, f_args, f_kwargs, **_):
  del work_dir
  return make_jaxpr(f)(*f_args, **f_kwargs)


def canonicalize_filename(file_name: str):
  """`file_name` without what `jax_hlo_source_file_canonicalization_regex` matches."""
  return canonical_filename(file_name)


def make_jaxpr_dump(jaxpr, **_) -> common.SourceMapDump:
  spans: list[list[tuple[int, int, Any]]] = []
  text = jaxpr.pretty_print(source_map=spans)
  files: list[str] = []
  gen = sourcemap.MappingsGenerator()
  for line in spans:
    gen.new_group()
    for start, _end, tb in line:
      frame = user_frame(tb)
      if frame is None:
        continue
      name = canonicalize_filename(frame.file_name)
      if name not in files:
        files.append(name)
      gen.new_segment(start, files.index(name), frame.start_line - 1, frame.start_column)
  gen.new_group()
  smap = sourcemap.SourceMap(version=3, sources=files, sources_content=[],
                             mappings=gen.mappings(), names=[])
  return common.SourceMapDump(source_map=smap, generated_code=text, pass_name="jaxpr")


common.register_pass(common.Pass(name="jaxpr", compile_fn=compile_jaxpr,
                                 generate_dump=make_jaxpr_dump))
