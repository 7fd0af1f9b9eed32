"""The HLO source-map passes (`jax.experimental.source_mapper.hlo`): the StableHLO module,
the HLO before optimization and the optimized HLO, each line mapped through its location
or metadata to the user's source line."""
import enum
import re
from typing import Any

from arrax._src import sourcemap
from arrax._src.jit import jit
from arrax._src.source_mapper import common, mlir


class HloPass(enum.Enum):
  STABLE_HLO = "hlo:stable-hlo"
  ORIGINAL = "hlo:original"
  OPTIMIZED = "hlo:optimized"


METADATA_REGEX = re.compile(
    r"metadata={.*op_name=\"(?P<scope>.*)\""
    r" source_file=\"(?P<src_file>.*)\""
    r" source_line=(?P<src_line>[0-9]+).*?}")


def _indent(line):
  return len(line) - len(line.lstrip())


def _parse_hlo_old_format(lines: list[str]) -> sourcemap.SourceMap:
  """Metadata naming `source_file`/`source_line` on each instruction."""
  gen = sourcemap.MappingsGenerator()
  files: list[str] = []
  for line in lines:
    gen.new_group()
    m = METADATA_REGEX.search(line)
    if m:
      f = m.group("src_file")
      if f not in files:
        files.append(f)
      gen.new_segment(_indent(line), files.index(f), int(m.group("src_line")) - 1, 0)
  gen.new_group()
  return sourcemap.SourceMap(version=3, sources=files, sources_content=[],
                             mappings=gen.mappings(), names=[])


_SECTIONS = ("FileNames", "FunctionNames", "FileLocations", "StackFrames")
_LOCATION_KEYS = ("file_name_id", "function_name_id", "line", "end_line", "column",
                  "end_column")
_FRAME_KEYS = ("file_location_id", "parent_frame_id")


def _attributes(text, allowed, what):
  out = {}
  for part in text.split():
    if "=" in part:
      k, v = part.split("=")
      if k not in allowed:
        raise ValueError(f"Unknown attribute for {what}: {k}")
      out[k] = int(v)
  return out


def _parse_hlo_new_format(lines: list[str]) -> sourcemap.SourceMap:
  """Instructions naming a `stack_frame_id` of the module's frame tables."""
  names, locations, frames = {}, {}, {}
  section = None
  for raw in lines:
    line = raw.strip()
    if not line:
      continue
    if line in _SECTIONS:
      section = line
      continue
    if section == "FileNames":
      if m := re.match(r"(\d+)\s+\"(.*)\"", line):
        names[int(m.group(1))] = m.group(2)
    elif section == "FileLocations":
      if m := re.match(r"(\d+)\s+{(.*)}", line):
        locations[int(m.group(1))] = _attributes(m.group(2), _LOCATION_KEYS, "FileLocations")
    elif section == "StackFrames":
      if m := re.match(r"(\d+)\s+{(.*)}", line):
        frames[int(m.group(1))] = _attributes(m.group(2), _FRAME_KEYS, "StackFrames")
  gen = sourcemap.MappingsGenerator()
  files: list[str] = []
  for line in lines:
    gen.new_group()
    if "metadata={" not in line:
      continue
    m = re.search(r"stack_frame_id=(\d+)", line)
    if not m:
      continue
    frame_id = int(m.group(1))
    if frame_id not in frames:
      raise ValueError(f"Could not find mapping for {frame_id=}")
    loc = locations.get(frames[frame_id]["file_location_id"])
    if not loc:
      raise ValueError(f"Could not find mapping for file_loc={loc!r}")
    f = names.get(loc["file_name_id"])
    if f:
      if f not in files:
        files.append(f)
      gen.new_segment(_indent(line), files.index(f), loc["line"] - 1, 0)
  gen.new_group()
  return sourcemap.SourceMap(version=3, sources=files, sources_content=[],
                             mappings=gen.mappings(), names=[])


def parse_hlo_dump(text: str) -> sourcemap.SourceMap:
  """The source map of HLO text (with stack frame tables, or older per-instruction metadata)."""
  lines = text.split("\n")
  return _parse_hlo_new_format(lines) if "FileNames" in text else _parse_hlo_old_format(lines)


def trace_and_lower(work_dir, f, f_args, f_kwargs, **_):
  return jit(lambda *args: f(*args, **f_kwargs)).lower(*f_args), work_dir


def stable_hlo_generate_dump(args: tuple[Any, str], **_) -> common.SourceMapDump:
  lowered, _ = args
  text = lowered.as_text(debug_info=True)
  return common.SourceMapDump(source_map=mlir.create_mlir_sourcemap(text), generated_code=text,
                              pass_name=HloPass.STABLE_HLO.value)


def original_hlo_generate_dump(args: tuple[Any, str], **_) -> common.SourceMapDump:
  lowered, _ = args
  text = lowered.as_text(dialect="hlo", debug_info=True)
  return common.SourceMapDump(source_map=parse_hlo_dump(text), generated_code=text,
                              pass_name=HloPass.ORIGINAL.value)


def optimized_generate_dump(args: tuple[Any, str],
                            xla_compiler_flags: dict[str, Any] | None = None,
                            **_) -> common.SourceMapDump:
  lowered, work_dir = args
  text = lowered.compile({"xla_dump_to": work_dir, **(xla_compiler_flags or {})}).as_text()
  return common.SourceMapDump(source_map=parse_hlo_dump(text), generated_code=text,
                              pass_name=HloPass.OPTIMIZED.value)


for _p, _dump in [(HloPass.STABLE_HLO, stable_hlo_generate_dump),
                  (HloPass.ORIGINAL, original_hlo_generate_dump),
                  (HloPass.OPTIMIZED, optimized_generate_dump)]:
  common.register_pass(common.Pass(name=_p.value, compile_fn=trace_and_lower,
                                   generate_dump=_dump))
