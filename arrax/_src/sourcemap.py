"""Source maps (TC39, version 3): which parts of a generated text come from which source lines.

`mappings` hold one list of segments per generated line; a segment is (generated column,) or
(generated column, source index, source line, source column[, name index]), each field
relative to the previous segment's (columns: within the line), and is stored as base-64 VLQs.
`MappingsGenerator` takes absolute values and makes them relative.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Union

Segment = Union[tuple[int], tuple[int, int, int, int], tuple[int, int, int, int, int]]
Mappings = Sequence[Sequence[Segment]]


@dataclass(frozen=True, slots=True)
class SourceMap:
  """A version-3 source map."""
  version: int
  sources: Sequence[str]
  sources_content: Sequence[str]
  names: Sequence[str]
  mappings: Mappings

  @classmethod
  def from_json(cls, json_data: str) -> SourceMap:
    """The source map of its JSON text."""
    d = json.loads(json_data)
    return cls(version=d["version"], sources=d["sources"], sources_content=d["sourcesContent"],
               names=d["names"], mappings=deserialize_mappings(d["mappings"]))

  def to_json(self) -> str:
    """The JSON text of the source map."""
    return json.dumps({"version": self.version, "sources": self.sources,
                       "sourcesContent": self.sources_content, "names": self.names,
                       "mappings": serialize_mappings(self.mappings)})


VLQ_SIGN_MASK = 0x01
VLQ_MORE_MASK = 0x20
VLQ_VALUE_MASK = 0x1F
VLQ_VALUE_BITWIDTH = 5
VLQ_ALPHABET = [ord(c) for c in
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"]


def make_vlq_decode_table():
  """byte -> 6-bit digit (None for bytes outside the alphabet)."""
  table: list = [None] * 256
  for digit, byte in enumerate(VLQ_ALPHABET):
    table[byte] = digit
  return table


VLQ_DECODE_TABLE = make_vlq_decode_table()


def decode_vlq(enc: Iterable[int]) -> int:
  """The integer of the base-64 VLQ at the start of `enc` (consumed from an iterator)."""
  it = iter(enc)
  digit = VLQ_DECODE_TABLE[next(it)]
  negative = bool(digit & VLQ_SIGN_MASK)
  value = (digit & VLQ_VALUE_MASK) >> 1    # (the first digit's lowest bit is the sign)
  shift = VLQ_VALUE_BITWIDTH - 1
  while digit & VLQ_MORE_MASK:
    digit = VLQ_DECODE_TABLE[next(it)]
    value |= (digit & VLQ_VALUE_MASK) << shift
    shift += VLQ_VALUE_BITWIDTH
  return -value if negative else value


def encode_vlq(value: int) -> bytes:
  """The base-64 VLQ of an integer."""
  v = (-value << 1) | 1 if value < 0 else value << 1
  out = []
  while True:
    digit, v = v & VLQ_VALUE_MASK, v >> VLQ_VALUE_BITWIDTH
    out.append(VLQ_ALPHABET[digit | (VLQ_MORE_MASK if v else 0)])
    if not v:
      return bytes(out)


def decode_segment(enc: Iterable[int]) -> Segment:
  """A segment of 1, 4 or 5 fields from its VLQs."""
  it = iter(enc)
  fields = [decode_vlq(it)]
  try:
    fields.append(decode_vlq(it))
  except StopIteration:
    return tuple(fields)
  fields.append(decode_vlq(it))
  fields.append(decode_vlq(it))
  try:
    fields.append(decode_vlq(it))
  except StopIteration:
    pass
  return tuple(fields)


def encode_segment(seg: Segment) -> bytes:
  """The VLQs of a segment."""
  return b"".join(encode_vlq(v) for v in seg)


def deserialize_mappings(mappings_str: str) -> Mappings:
  """Segments per line from TC39 mapping text ("," between segments, ";" between lines)."""
  return [[decode_segment(s) for s in line.split(b",")] if line else []
          for line in mappings_str.encode("ascii").split(b";")]


def serialize_mappings(mappings: Mappings) -> str:
  """TC39 mapping text of segments per line."""
  return b";".join(b",".join(encode_segment(s) for s in line)
                   for line in mappings).decode("ascii")


class MappingsGenerator:
  """Builds mappings from absolute positions: `new_group()` starts a generated line,
  `new_segment(col[, source, line, column[, name]])` adds a segment to it."""

  def __init__(self):
    self._last_col = None
    self._last = [0, 0, 0, 0]    # source, source line, source column, name
    self._mappings = []
    self._cur_group = None

  def new_group(self):
    """Start a new group (generated line)."""
    self._last_col = 0
    self._cur_group = []
    self._mappings.append(self._cur_group)

  def new_segment(self, *seg):
    """Add a segment with absolute fields to the current group."""
    assert len(seg) >= 1
    if self._cur_group is None:
      raise RuntimeError("No current group. Forgot to call new_group()?")
    rel = [seg[0] - self._last_col]
    self._last_col = seg[0]
    if len(seg) not in (1, 4, 5):
      raise AssertionError("invalid segment")
    for i, v in enumerate(seg[1:]):
      rel.append(v - self._last[i])
      self._last[i] = v
    self._cur_group.append(tuple(rel))

  def mappings(self) -> Mappings:
    """The segments per line so far."""
    return self._mappings
