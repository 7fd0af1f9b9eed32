"""Source maps of MLIR text with debug locations (`jax.experimental.source_mapper.mlir`).

Each op line ending in `loc(#locN)` maps to the file position `#locN` resolves to, following
named (`"scope"(#locM)`) and call-site (`callsite(#callee at #caller)`: the callee) locations.
"""
import collections
import re

from arrax._src import sourcemap

LOC_REGEX = re.compile(r"loc\(#loc(?P<id>[0-9]+)\)")
SRC_REGEX = re.compile(
    r"#loc(?P<id>[0-9]+) = loc\(\"(?P<file>.*)\":(?P<line>[0-9]+):(?P<col>[0-9]+)"
    r"( to (?P<endlineno>[0-9]+)?:(?P<endcolno>[0-9]+))?\)")
SCOPED_REGEX = re.compile(r"#loc(?P<id>[0-9]+) = loc\(\"(?P<scope>.*)\"\(#loc(?P<tgt_id>[0-9]+)\)\)")
CALLSITE_REGEX = re.compile(
    r"#loc(?P<id>[0-9]+) = loc\(callsite\(#loc(?P<callee>[0-9]+) at #loc(?P<caller>[0-9]+)\)\)")

Location = collections.namedtuple("Location", ["file", "line", "col"])
Redirect = collections.namedtuple("Redirect", ["tgt_id"])


def create_mlir_sourcemap(mlir_dump: str) -> sourcemap.SourceMap:
  """The source map of an MLIR dump (`Lowered.as_text(debug_info=True)`); only the files
  some line maps to are listed."""
  lines = mlir_dump.split("\n")
  segments, files = parse_mlir_locations(lines)
  used: list[int] = []
  gen = sourcemap.MappingsGenerator()
  for line in lines:
    gen.new_group()
    m = LOC_REGEX.search(line)
    if not m or int(m.group("id")) not in segments:
      continue    # (fused locations are not resolved)
    _, src, src_line, src_col = segments[int(m.group("id"))]
    if src not in used:
      used.append(src)
    gen.new_segment(len(line) - len(line.lstrip()), used.index(src), src_line, src_col)
  gen.new_group()
  return sourcemap.SourceMap(version=3, sources=[files[i] for i in used],
                             sources_content=[""] * len(used), mappings=gen.mappings(),
                             names=[])


def parse_mlir_locations(mlir_dump: list[str]):
  """({loc id: (0, file index, line - 1, column)}, files) of the `#locN = ...` lines."""
  locs: dict = {}
  files: list[str] = []
  for line in mlir_dump:
    if not line.startswith("#loc"):
      continue
    if m := SRC_REGEX.match(line):
      locs[int(m.group("id"))] = Location(m.group("file"), int(m.group("line")),
                                          int(m.group("col")))
      if m.group("file") not in files:
        files.append(m.group("file"))
    elif m := SCOPED_REGEX.match(line):
      locs[int(m.group("id"))] = Redirect(int(m.group("tgt_id")))
    elif m := CALLSITE_REGEX.match(line):
      locs[int(m.group("id"))] = Redirect(int(m.group("callee")))
  # Follow redirects, one level per round, until none is left.
  while any(isinstance(v, Redirect) for v in locs.values()):
    locs = {k: locs[v.tgt_id] if isinstance(v, Redirect) else v for k, v in locs.items()}
  segments = {k: (0, files.index(v.file), v.line - 1, v.col) for k, v in locs.items()}
  return segments, files
