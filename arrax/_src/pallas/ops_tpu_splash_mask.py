"""Splash attention masks (jax.experimental.pallas.ops.tpu.splash_attention.splash_attention_mask):
host-side NumPy objects describing which (q, kv) positions may attend. Dense masks slice an
array; computable masks (causal, local, chunked) evaluate a function of the row and column
indices, which the kernel can also evaluate in place of loading mask blocks."""
from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np


class Mask:
  """The base of splash attention masks: a `shape` and NumPy slicing (`mask[rows, cols]`)."""

  @property
  def shape(self) -> tuple[int, ...]:
    raise NotImplementedError

  def __getitem__(self, idx) -> np.ndarray:
    raise NotImplementedError

  def __bool__(self) -> bool:
    raise NotImplementedError(
        "Conversion to bool is unsupported. Could be caused by using logical"
        " instead of bitwise operations on masks.")

  def _check_same_shape(self, other):
    if self.shape != other.shape:
      raise ValueError(f"Invalid shape for other: {other.shape}, expected: {self.shape}")

  def __or__(self, other: Mask) -> Mask:
    self._check_same_shape(other)
    return LogicalOr(self, other)

  def __and__(self, other: Mask) -> Mask:
    self._check_same_shape(other)
    return LogicalAnd(self, other)


def _index_grid(shape):
  rows, cols = shape
  return np.arange(rows, dtype=np.int32)[:, None], np.arange(cols, dtype=np.int32)[None, :]


def make_causal_mask(shape: tuple[int, int], offset: int = 0) -> np.ndarray:
  """A dense causal mask of `shape` (q_seq_len, kv_seq_len): row r sees columns <= r + offset."""
  r, c = _index_grid(shape)
  return (r + offset >= c).astype(np.bool_)


def make_local_attention_mask(shape: tuple[int, int], window_size: tuple[int | None, int | None],
                              *, offset: int = 0) -> np.ndarray:
  """A dense local mask: row r sees columns in [r + offset - left, r + offset + right] (a None
  side is unbounded)."""
  r, c = _index_grid(shape)
  out = np.ones(tuple(shape), dtype=np.bool_)
  left, right = window_size
  if left is not None:
    out = out & (r - left + offset <= c)
  if right is not None:
    out = out & (r + right + offset >= c)
  return out.astype(np.bool_)


def make_chunk_attention_mask(shape: tuple[int, int], chunk_size: int) -> np.ndarray:
  """A dense chunked causal mask: causal within consecutive chunks of `chunk_size` positions."""
  if chunk_size <= 0:
    raise ValueError("chunk_size must be positive")
  r, c = _index_grid(shape)
  return ((r // chunk_size) == (c // chunk_size)) & (r >= c)


def make_random_mask(shape: tuple[int, int], sparsity: float, seed: int) -> np.ndarray:
  """A dense random mask (each entry True with probability 1 - sparsity; seeds NumPy's global
  generator with `seed`)."""
  np.random.seed(seed)
  return np.random.binomial(n=1, p=1.0 - sparsity, size=shape).astype(np.bool_)


class _Binary(Mask):
  """A mask combining two masks of one shape elementwise."""
  left: Mask
  right: Mask

  def __init__(self, left: Mask, right: Mask):
    if left.shape != right.shape:
      raise ValueError("Masks must have the same shape")
    self.left = left
    self.right = right

  @property
  def shape(self) -> tuple[int, ...]:
    return self.left.shape

  def __hash__(self):
    return hash((type(self), self.left, self.right))


@dataclasses.dataclass(init=False, eq=True)
class LogicalOr(_Binary):
  """The elementwise OR of two masks."""
  left: Mask
  right: Mask
  __init__ = _Binary.__init__
  __hash__ = _Binary.__hash__

  def __getitem__(self, idx) -> np.ndarray:
    return self.left[idx] | self.right[idx]


@dataclasses.dataclass(init=False, eq=True)
class LogicalAnd(_Binary):
  """The elementwise AND of two masks."""
  left: Mask
  right: Mask
  __init__ = _Binary.__init__
  __hash__ = _Binary.__hash__

  def __getitem__(self, idx) -> np.ndarray:
    return self.left[idx] & self.right[idx]


@dataclasses.dataclass
class MultiHeadMask(Mask):
  """One 2-d mask per head; indexed as [head, rows, cols]."""
  masks: Sequence[Mask]

  def __post_init__(self):
    if not self.masks:
      raise ValueError("Unsupported empty tuple of masks")
    first = self.masks[0].shape
    for m in self.masks[1:]:
      if m.shape != first:
        raise ValueError(f"Unexpected mask shape, got: {m.shape}, expected: {first}")
    if not all(isinstance(m, Mask) for m in self.masks):
      raise ValueError("masks should be of type Mask")
    if any(isinstance(m, MultiHeadMask) for m in self.masks):
      raise ValueError("Nesting MultiHeadMasks is not supported")

  @property
  def shape(self) -> tuple[int, ...]:
    return (len(self.masks),) + tuple(self.masks[0].shape)

  def __getitem__(self, idx) -> np.ndarray:
    if len(idx) != 3:
      raise NotImplementedError(f"Unsupported slice: {idx}")
    head, rest = idx[0], idx[1:]
    if isinstance(head, int):
      assert 0 <= head <= len(self.masks)
      return self.masks[head][rest]
    return np.stack([m[rest] for m in self.masks[head]])

  def __eq__(self, other: object):
    if not isinstance(other, type(self)):
      return NotImplemented
    return self.masks == other.masks

  def __hash__(self):
    return hash((type(self),) + tuple(hash(m) for m in self.masks))


def _fill_slice(s: slice, size: int) -> slice:
  assert s.step is None or s.step == 1
  start = 0 if s.start is None else s.start
  stop = size if s.stop is None else s.stop
  assert start >= 0
  assert stop <= size
  return slice(start, stop, None)


def _two_slices(idx, shape):
  if len(idx) != 2:
    raise NotImplementedError(f"Unsupported slice: {idx}")
  rows, cols = idx
  if not isinstance(rows, slice) or not isinstance(cols, slice):
    raise NotImplementedError(f"Unsupported slice: {idx}")
  return _fill_slice(rows, shape[0]), _fill_slice(cols, shape[1])


class _ComputableMask(Mask):
  """A mask given by `mask_function(q_ids, kv_ids)` on broadcastable index arrays, which the
  splash kernel evaluates instead of loading mask blocks. `q_sequence` holds the q indices."""
  _shape: tuple[int, int]
  q_sequence: np.ndarray
  mask_function: Callable[..., Any]

  def __init__(self, shape: tuple[int, int], mask_function: Callable[..., Any],
               shard_count: int = 1):
    self._shape = shape
    self.mask_function = mask_function
    q_len = self.shape[0]
    if q_len % (shard_count * shard_count) != 0:
      raise ValueError(f"Shard count squared ({shard_count * shard_count}) must"
                       f" divide Q seq_len ({self.shape[0]}) evenly.")
    self.q_sequence = np.arange(q_len, dtype=np.int32)

  @property
  def shape(self) -> tuple[int, ...]:
    return self._shape

  def __getitem__(self, idx) -> np.ndarray:
    rows, cols = _two_slices(idx, self.shape)
    q_ids = self.q_sequence[rows]
    kv_ids = np.arange(cols.start, cols.stop)
    return self.mask_function(q_ids[:, None], kv_ids[None, :])

  def __eq__(self, other: object):
    raise NotImplementedError()

  def __hash__(self):
    raise NotImplementedError()

  def _same(self, other, *fields):
    return (self.shape == other.shape
            and all(getattr(self, f) == getattr(other, f) for f in fields)
            and np.array_equal(self.q_sequence, other.q_sequence))

  def _hash(self, *fields):
    seq = None if self.q_sequence is None else self.q_sequence.tobytes()
    return hash((type(self), self.shape) + tuple(getattr(self, f) for f in fields) + (seq,))


class CausalMask(_ComputableMask):
  """A computable causal mask: q position r sees kv positions <= r + offset."""
  offset: int

  def __init__(self, shape: tuple[int, int], offset: int = 0, shard_count: int = 1):
    self.offset = offset

    def causal(q_ids, kv_ids):
      if self.offset == 0:
        return q_ids >= kv_ids
      return q_ids + self.offset >= kv_ids

    super().__init__(shape=shape, mask_function=causal, shard_count=shard_count)

  def __eq__(self, other: object):
    if not isinstance(other, type(self)):
      return NotImplemented
    return self._same(other, "offset")

  def __hash__(self):
    return self._hash("offset")


class ChunkedCausalMask(_ComputableMask):
  """A computable mask, causal within consecutive chunks of `chunk_size` positions and closed
  across chunks."""
  chunk_size: int

  def __init__(self, shape: tuple[int, int], chunk_size: int, shard_count: int = 1):
    if chunk_size <= 0:
      raise ValueError("chunk_size must be positive")
    self.chunk_size = chunk_size

    def chunked(q_ids, kv_ids):
      return ((q_ids // self.chunk_size) == (kv_ids // self.chunk_size)) & (q_ids >= kv_ids)

    super().__init__(shape=shape, mask_function=chunked, shard_count=shard_count)

  def __eq__(self, other: object):
    if not isinstance(other, type(self)):
      return NotImplemented
    return self._same(other, "chunk_size")

  def __hash__(self):
    return self._hash("chunk_size")


class LocalMask(_ComputableMask):
  """A computable local mask: q position r sees kv positions within `window_size` = (left,
  right) of r + offset (None: unbounded on that side)."""
  window_size: tuple[int | None, int | None]
  offset: int

  def __init__(self, shape: tuple[int, int], window_size: tuple[int | None, int | None],
               offset: int, shard_count: int = 1):
    self.window_size = window_size
    self.offset = offset

    def local(q_ids, kv_ids):
      left, right = self.window_size
      assert q_ids.ndim == 2
      assert kv_ids.ndim == 2
      if left is None and right is None:
        return np.ones((q_ids.shape[0], kv_ids.shape[1]), dtype=np.bool_)
      pos = q_ids + self.offset if offset != 0 else q_ids
      out = None
      if left is not None:
        out = pos - left <= kv_ids
      if right is not None:
        upper = pos + right >= kv_ids
        out = upper if out is None else out & upper
      return out

    super().__init__(shape=shape, mask_function=local, shard_count=shard_count)

  def __eq__(self, other: object):
    if not isinstance(other, type(self)):
      return False
    return self._same(other, "window_size", "offset")

  def __hash__(self):
    return self._hash("window_size", "offset")


@dataclasses.dataclass
class NumpyMask(Mask):
  """A mask held as a dense 2-d boolean NumPy array."""
  array: np.ndarray

  def __post_init__(self):
    if self.array.ndim != 2:
      raise ValueError("Expected a 2-dim array")
    if self.array.dtype != np.bool_:
      raise ValueError("Mask must be a boolean array")

  @property
  def shape(self) -> tuple[int, ...]:
    return self.array.shape

  def __getitem__(self, idx) -> np.ndarray:
    return self.array[idx]

  def __eq__(self, other: object):
    if not isinstance(other, type(self)):
      return NotImplemented
    return np.array_equal(self.array, other.array, equal_nan=True)

  def __hash__(self):
    return hash((type(self), self.array.tobytes()))


@dataclasses.dataclass(frozen=True)
class FullMask(Mask):
  """A mask letting every position attend to every position."""
  _shape: tuple[int, int]

  def __post_init__(self):
    if not isinstance(self.shape, tuple):
      raise ValueError(f"Unsupported shape type: {type(self.shape)}")

  @property
  def shape(self) -> tuple[int, ...]:
    return self._shape

  def __getitem__(self, idx) -> np.ndarray:
    rows, cols = _two_slices(idx, self.shape)
    return np.ones((rows.stop - rows.start, cols.stop - cols.start), dtype=np.bool_)

  def __eq__(self, other: object):
    if not isinstance(other, type(self)):
      return NotImplemented
    return self.shape == other.shape

  def __hash__(self):
    return hash((type(self), self.shape))
