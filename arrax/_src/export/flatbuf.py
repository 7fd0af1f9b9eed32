"""A small FlatBuffers writer and reader: just what the `Exported` schema needs.

The wire format (little endian): the buffer starts with a uint32 offset to the root table. A
table starts with an int32 `soffset`; its vtable is at `table - soffset` and holds uint16s:
the vtable's size, the table's size, then per field slot the field's offset inside the table
(0: absent, the reader uses the default). Fields that refer to other objects (tables, strings,
vectors) hold a uint32 offset relative to the field's own position, pointing forward. Vectors
and strings start with a uint32 length; strings end with a NUL byte.

The writer lays objects out front to back: an object is written after the one referring to
it (so every offset is positive), aligned to 4 bytes, with its vtable right before it.
"""
from __future__ import annotations

import collections
import struct

_SIZES = {"b": 1, "B": 1, "?": 1, "h": 2, "H": 2, "i": 4, "I": 4}


# ---- objects to write -------------------------------------------------------------------------
class Table:
  """A table to write: `fields` maps a slot number to a scalar (fmt, value) or to an object
  (Table, String, Bytes, Vector, TableVector)."""
  __slots__ = ("fields",)

  def __init__(self):
    self.fields = {}

  def scalar(self, slot, fmt, value):
    self.fields[slot] = (fmt, value)
    return self

  def ref(self, slot, obj):
    if obj is not None:
      self.fields[slot] = obj
    return self


class String:
  __slots__ = ("data",)

  def __init__(self, s):
    self.data = s.encode("utf-8") if isinstance(s, str) else bytes(s)


class Bytes:
  """A vector of ubyte."""
  __slots__ = ("data",)

  def __init__(self, data):
    self.data = bytes(data)


class Vector:
  """A vector of scalars of one struct format."""
  __slots__ = ("fmt", "values")

  def __init__(self, fmt, values):
    self.fmt, self.values = fmt, list(values)


class RefVector:
  """A vector of tables or strings."""
  __slots__ = ("items",)

  def __init__(self, items):
    self.items = list(items)


def encode(root: Table) -> bytearray:
  """The buffer holding `root` and everything it refers to."""
  buf = bytearray(4)
  pending = collections.deque([(root, 0)])   # (object, position of the offset pointing to it)

  def align(n):
    buf.extend(b"\0" * (-len(buf) % n))

  def patch(at, target):
    struct.pack_into("<I", buf, at, target - at)

  while pending:
    obj, at = pending.popleft()
    if isinstance(obj, Table):
      slots = sorted(obj.fields)
      n_slots = slots[-1] + 1 if slots else 0
      # Lay out the fields: 4-byte ones first, then 2, then 1, so each is aligned.
      order = sorted(slots, key=lambda s: -_field_size(obj.fields[s]))
      field_off, size = {}, 4
      for s in order:
        fsize = _field_size(obj.fields[s])
        size += -size % fsize
        field_off[s] = size
        size += fsize
      size += -size % 4
      vtable = [4 + 2 * n_slots, size] + [field_off.get(s, 0) for s in range(n_slots)]
      align(4)
      vt_pos = len(buf)
      buf.extend(struct.pack(f"<{len(vtable)}H", *vtable))
      align(4)
      pos = len(buf)
      buf.extend(b"\0" * size)
      struct.pack_into("<i", buf, pos, pos - vt_pos)
      for s in slots:
        f = obj.fields[s]
        if isinstance(f, tuple):
          struct.pack_into("<" + f[0], buf, pos + field_off[s], f[1])
        else:
          pending.append((f, pos + field_off[s]))
    elif isinstance(obj, (String, Bytes)):
      align(4)
      pos = len(buf)
      buf.extend(struct.pack("<I", len(obj.data)))
      buf.extend(obj.data)
      if isinstance(obj, String):
        buf.append(0)
    elif isinstance(obj, Vector):
      align(4)
      pos = len(buf)
      buf.extend(struct.pack(f"<I{len(obj.values)}{obj.fmt}", len(obj.values), *obj.values))
    elif isinstance(obj, RefVector):
      align(4)
      pos = len(buf)
      buf.extend(struct.pack("<I", len(obj.items)))
      for item in obj.items:
        pending.append((item, len(buf)))
        buf.extend(b"\0\0\0\0")
    else:
      raise TypeError(f"cannot encode {obj!r}")
    patch(at, pos)
  align(4)
  return buf


def _field_size(f):
  return _SIZES[f[0]] if isinstance(f, tuple) else 4


# ---- reading ----------------------------------------------------------------------------------
class TableReader:
  """A table inside a buffer. Out-of-range reads raise struct.error, as flatbuffers' reader."""
  __slots__ = ("buf", "pos", "_vt", "_vt_size")

  def __init__(self, buf, pos):
    self.buf, self.pos = buf, pos
    self._vt = pos - struct.unpack_from("<i", buf, pos)[0]
    self._vt_size = struct.unpack_from("<H", buf, self._vt)[0]

  @classmethod
  def root(cls, buf):
    buf = memoryview(buf)   # a str is a TypeError here, as in flatbuffers
    return cls(buf, struct.unpack_from("<I", buf, 0)[0])

  def _field(self, slot):
    entry = 4 + 2 * slot
    if entry >= self._vt_size:
      return None
    off = struct.unpack_from("<H", self.buf, self._vt + entry)[0]
    return self.pos + off if off else None

  def _deref(self, at):
    return at + struct.unpack_from("<I", self.buf, at)[0]

  def scalar(self, slot, fmt, default=0):
    at = self._field(slot)
    return default if at is None else struct.unpack_from("<" + fmt, self.buf, at)[0]

  def table(self, slot):
    at = self._field(slot)
    return None if at is None else TableReader(self.buf, self._deref(at))

  def string(self, slot):
    """The bytes of a string field, or None when absent."""
    at = self._field(slot)
    return None if at is None else self._string_at(self._deref(at))

  def _string_at(self, pos):
    n = struct.unpack_from("<I", self.buf, pos)[0]
    if pos + 4 + n > len(self.buf):
      struct.unpack_from(f"<{n}s", self.buf, pos + 4)   # raises struct.error
    return bytes(self.buf[pos + 4:pos + 4 + n])

  def _vector(self, slot):
    at = self._field(slot)
    if at is None:
      return None, 0
    pos = self._deref(at)
    return pos + 4, struct.unpack_from("<I", self.buf, pos)[0]

  def scalars(self, slot, fmt):
    start, n = self._vector(slot)
    return [] if start is None else list(struct.unpack_from(f"<{n}{fmt}", self.buf, start))

  def bytes(self, slot):
    start, n = self._vector(slot)
    return b"" if start is None else struct.unpack_from(f"<{n}s", self.buf, start)[0]

  def tables(self, slot):
    start, n = self._vector(slot)
    return [] if start is None else [TableReader(self.buf, self._deref(start + 4 * i))
                                     for i in range(n)]

  def strings(self, slot):
    start, n = self._vector(slot)
    return [] if start is None else [self._string_at(self._deref(start + 4 * i))
                                     for i in range(n)]
