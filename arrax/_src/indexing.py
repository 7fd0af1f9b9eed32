"""`Slice` and `ds` (jax.ds): a slice given by a start (static or traced), a static size and a
static stride, which arrax.numpy indexing reads with dynamic_slice."""
from __future__ import annotations

import dataclasses
import operator

from arrax._src import tree_util


def _is_static_int(x) -> bool:
  try:
    operator.index(x)
  except TypeError:
    return False
  return True


@tree_util.register_pytree_node_class
@dataclasses.dataclass(slots=True)
class Slice:
  """`size` elements from `start` every `stride`; `start` (and `size`) may be traced."""

  start: object
  size: object
  stride: int = 1

  def __post_init__(self):
    if self.stride < 0:
      raise ValueError("`stride` must be >= 0.")

  @property
  def is_dynamic_start(self):
    return not _is_static_int(self.start)

  @property
  def is_dynamic_size(self):
    return not _is_static_int(self.size)

  def tree_flatten(self):
    # Static start/size go into the treedef; traced ones are the children.
    dyn_start, dyn_size = self.is_dynamic_start, self.is_dynamic_size
    children = (self.start if dyn_start else None, self.size if dyn_size else None)
    aux = (None if dyn_start else self.start, None if dyn_size else self.size, self.stride)
    return children, aux

  @classmethod
  def tree_unflatten(cls, aux, children):
    start = children[0] if children[0] is not None else aux[0]
    size = children[1] if children[1] is not None else aux[1]
    return cls(start, size, aux[2])

  @classmethod
  def from_slice(cls, slc: slice, size: int) -> Slice:
    start, stop, step = slc.indices(size)
    if step < 1:
      raise ValueError(f"slice must have a step >= 1 (found: {step})")
    return cls(start, max(0, -(-(stop - start) // step)), step)


def dslice(start, size=None, stride=None):
  """A `Slice` like Python's slice syntax: `ds(None)` is `:`, `ds(j)` is `:j`, `ds(i, n)` is
  `i:i+n` and `ds(i, n, s)` is `i:i+n*s:s`, with `i` allowed to be traced."""
  if start is None:
    return slice(None)
  if stride is None:
    stride = 1
  if not isinstance(stride, int):
    raise ValueError("Non-static stride in `dslice`")
  if size is None:
    start, size = 0, start
  return Slice(start, size, stride)


ds = dslice
