"""A small Wadler/Lindig-style document pretty printer (used to print jaxprs).

A document is built from `text`, `brk` (a break: its text when laid out flat, a newline plus
the current indentation otherwise), `concat`, `nest` (more indentation for the breaks inside)
and `group` (lay out the group's breaks flat if the group, measured flat, fits in what is left
of the current line; otherwise lay them out as newlines, letting inner groups decide again).

Only the group itself is measured when deciding whether it fits, not the text that follows it
on the same line; this is what JAX's printer does, so lines break at the same places.
"""
from __future__ import annotations

from typing import Sequence

__all__ = ["Doc", "nil", "text", "concat", "brk", "group", "nest", "join", "color",
           "keyword", "type_annotation", "source_map"]

_FLAT = 0
_BREAK = 1


class Doc:
  """A pretty-printer document. `str(doc)` formats it at width 80."""
  __slots__ = ()

  def format(self, width: int = 80, *, source_map: list | None = None, **kwargs) -> str:
    """Lay the document out as a string, breaking lines to keep within `width` if possible.

    With a list `source_map`, one list per output line is appended to it: the
    (start column, end column, source) spans of the text inside `source_map` documents (the
    innermost one's source). Extra keyword arguments (`use_color`, ...) are accepted and
    ignored: output is plain text.
    """
    del kwargs
    return _format(self, width, source_map)

  def __str__(self) -> str:
    return self.format()

  def __add__(self, other: Doc) -> Doc:
    return concat([self, other])


class _Nil(Doc):
  __slots__ = ()

  def __repr__(self):
    return "nil"


class _Text(Doc):
  __slots__ = ("text",)

  def __init__(self, s: str):
    if not isinstance(s, str):
      raise TypeError(f"text() expects a str, got {type(s).__name__}")
    self.text = s

  def __repr__(self):
    return f"text({self.text!r})"


class _Concat(Doc):
  __slots__ = ("children",)

  def __init__(self, children):
    self.children = tuple(children)
    for c in self.children:
      if not isinstance(c, Doc):
        raise TypeError(f"concat() expects Docs, got {type(c).__name__}")

  def __repr__(self):
    return f"concat({list(self.children)!r})"


class _Break(Doc):
  __slots__ = ("text",)

  def __init__(self, s: str):
    if not isinstance(s, str):
      raise TypeError(f"brk() expects a str, got {type(s).__name__}")
    self.text = s

  def __repr__(self):
    return f"brk({self.text!r})"


class _Group(Doc):
  __slots__ = ("child",)

  def __init__(self, child: Doc):
    if not isinstance(child, Doc):
      raise TypeError(f"group() expects a Doc, got {type(child).__name__}")
    self.child = child

  def __repr__(self):
    return f"group({self.child!r})"


class _Nest(Doc):
  __slots__ = ("n", "child")

  def __init__(self, n: int, child: Doc):
    if not isinstance(child, Doc):
      raise TypeError(f"nest() expects a Doc, got {type(child).__name__}")
    self.n = int(n)
    self.child = child

  def __repr__(self):
    return f"nest({self.n}, {self.child!r})"


class _SourceMap(Doc):
  __slots__ = ("child", "source")

  def __init__(self, child: Doc, source):
    if not isinstance(child, Doc):
      raise TypeError(f"source_map() expects a Doc, got {type(child).__name__}")
    self.child = child
    self.source = source

  def __repr__(self):
    return f"source_map({self.child!r}, {self.source!r})"


_nil = _Nil()


# ---- public constructors ------------------------------------------------------------------
def nil() -> Doc:
  """The empty document."""
  return _nil


def text(s: str) -> Doc:
  """Literal text (should not contain newlines)."""
  return _Text(s)


def concat(docs: Sequence[Doc]) -> Doc:
  """The documents one after the other."""
  docs = list(docs)
  if len(docs) == 1:
    return docs[0]
  return _Concat(docs)


def brk(s: str = " ") -> Doc:
  """A break: printed as `s` when its enclosing group is flat, else as a newline + indent."""
  return _Break(s)


def group(doc: Doc) -> Doc:
  """Lay out `doc`'s breaks flat if all of `doc` fits on the rest of the line."""
  return _Group(doc)


def nest(n: int, doc: Doc) -> Doc:
  """Indent lines started by breaks inside `doc` by `n` more columns."""
  return _Nest(n, doc)


def join(sep: Doc, docs: Sequence[Doc]) -> Doc:
  """`docs` with `sep` between consecutive ones."""
  docs = list(docs)
  if not docs:
    return _nil
  if len(docs) == 1:
    return docs[0]
  parts = [docs[0]]
  for d in docs[1:]:
    parts.append(sep)
    parts.append(d)
  return _Concat(parts)


def color(doc: Doc, *args, **kwargs) -> Doc:
  """Colour markup; the output is plain text, so this is the identity."""
  del args, kwargs
  return doc


def source_map(doc: Doc, source) -> Doc:
  """`doc`, its text attributed to `source` in `Doc.format(source_map=...)`'s spans."""
  return _SourceMap(doc, source)


keyword = color
type_annotation = color


# ---- layout ---------------------------------------------------------------------------------
def _fits(doc: Doc, indent: int, remaining: int) -> bool:
  """Whether `doc` laid out flat takes at most `remaining` columns."""
  stack = [doc]
  while stack:
    if remaining < 0:
      return False
    d = stack.pop()
    t = type(d)
    if t is _Text or t is _Break:     # every break is flat here
      remaining -= len(d.text)
    elif t is _Concat:
      stack.extend(reversed(d.children))
    elif t is _Nest or t is _Group or t is _SourceMap:
      stack.append(d.child)
    elif t is _Nil:
      pass
    else:
      raise TypeError(f"Invalid document {d!r}")
  return remaining >= 0


_END_SOURCE = object()   # (a stack entry: leave a source_map document)


def _format(doc: Doc, width: int, source_map: list | None = None) -> str:
  out: list[str] = []
  col = 0
  stack = [(0, _BREAK, doc)]
  sources = [None]     # the innermost source_map document's source last
  spans: list = []     # this line's spans
  extend = False       # whether text continues the last span

  def emit(s):
    nonlocal col, extend
    if source_map is not None and s and sources[-1] is not None:
      if extend and spans and spans[-1][1] == col:
        spans[-1][1] = col + len(s)
      else:
        spans.append([col, col + len(s), sources[-1]])
        extend = True
    out.append(s)
    col += len(s)

  while stack:
    indent, mode, d = stack.pop()
    t = type(d)
    if t is _Text:
      emit(d.text)
    elif t is _Concat:
      stack.extend((indent, mode, c) for c in reversed(d.children))
    elif t is _Break:
      if mode == _BREAK:
        out.append("\n")
        if source_map is not None:
          source_map.append([tuple(sp) for sp in spans])
          spans, extend = [], False
        out.append(" " * indent)
        col = indent
      else:
        emit(d.text)
    elif t is _Nest:
      stack.append((indent + d.n, mode, d.child))
    elif t is _Group:
      flat = _fits(d.child, indent, width - col)
      stack.append((indent, _FLAT if flat else _BREAK, d.child))
    elif t is _SourceMap:
      sources.append(d.source)
      extend = False
      stack.append((indent, mode, _END_SOURCE))
      stack.append((indent, mode, d.child))
    elif d is _END_SOURCE:
      sources.pop()
      extend = False
    elif t is _Nil:
      pass
    else:
      raise TypeError(f"Invalid document {d!r}")
  if source_map is not None:
    source_map.append([tuple(sp) for sp in spans])
  return "".join(out)
