"""Splash attention mask processing
(jax.experimental.pallas.ops.tpu.splash_attention.splash_attention_mask_info): a dense or lazy
mask becomes `MaskInfo`, its block-sparse form. Per grid block (head, q block, kv block) the
kernel is told whether the block is empty (0), partial (1) or full (2), which data block to
fetch next (`data_next`: skipping empty blocks) and which deduplicated partial mask block
(`mask_next`, indexing `partial_mask_blocks`) applies."""
from __future__ import annotations

import functools
import math
from typing import Any, NamedTuple

import numpy as np

from arrax._src.numpy import creation, lax_numpy, reductions, searching
from arrax._src.pallas import ops_tpu_splash_mask as mask_lib


class MaskInfo(NamedTuple):
  """The block-sparse description of a mask the splash kernels take (the first three arrays
  are [heads or head shards, q blocks, kv blocks] integers held in scalar memory, narrowed to
  int8/int16 when they fit).

  Attributes:
    data_next: the next kv (dkv: q) block to fetch at each grid point.
    mask_next: the index in `partial_mask_blocks` of the mask block at each grid point.
    block_mask: 0 (all masked), 1 (partial) or 2 (all visible) per block.
    partial_mask_blocks: bool[num_partial_blocks, block_q, block_kv], the distinct partial
      blocks (dkv: transposed).
    q_sequence: the q indices of a computable mask (its function runs in the kernel).
    is_dynamic_mask: True when made from a traced mask (`process_dynamic_mask`).
  """
  data_next: Any
  mask_next: Any
  block_mask: Any
  partial_mask_blocks: Any
  q_sequence: Any
  is_dynamic_mask: bool | None = None


def _downcast_to_small_type(array: np.ndarray) -> np.ndarray:
  """`array` (non-negative int32) as the narrowest of int8/int16/int32 holding its values."""
  if array.dtype != np.int32:
    raise ValueError("Expected int32 input.")
  if not np.all(array >= 0):
    raise ValueError("Expected non-negative array.")
  if array.size == 0:
    return array
  return array.astype(_narrow_int(int(np.max(array))))


def _narrow_int(max_value):
  for t in (np.int8, np.int16):
    if max_value <= np.iinfo(t).max:
      return t
  return np.int32


def _check_mask(mask: mask_lib.Mask) -> None:
  """Raise ValueError when some row of the 2-d `mask` is all False (its softmax would divide
  by zero)."""
  assert len(mask.shape) == 2
  rows = mask.shape[0]
  seen = np.zeros(rows, dtype=np.bool_)
  for c in range(mask.shape[1]):
    seen |= mask[(slice(0, rows), slice(c, c + 1))][:, 0]
  if not seen.all():
    raise ValueError("Some rows of the mask (along the kv dimension) are all zeros.\nThis is"
                     " would result in a division by zero when computing the attention"
                     " softmax.")


class _HashableNDArray:
  """A NumPy array usable as a dict key (hashed and compared by contents)."""
  array: np.ndarray

  def __init__(self, array: np.ndarray):
    self.array = array

  def __hash__(self):
    return hash(self.array.tobytes())

  def __eq__(self, other: object) -> bool:
    if not isinstance(other, _HashableNDArray):
      return NotImplemented
    return np.array_equal(self.array, other.array, equal_nan=True)


def _validate(shape, block_shape, head_shards, q_seq_shards):
  """The block counts of a [heads, q, kv] mask, checking that blocks and shards divide it."""
  heads, q_len, kv_len = shape
  bq, bkv = block_shape
  q_blocks, q_mod = divmod(q_len, bq)
  kv_blocks, kv_mod = divmod(kv_len, bkv)
  if q_mod != 0:
    raise ValueError(f"q_block_size={bq} should divide q_seq_len={q_len}.")
  if kv_mod != 0:
    raise ValueError(f"kv_block_size={bkv} should divide kv_seq_len={kv_len}.")
  q_per_shard, mod = divmod(q_len, q_seq_shards)
  if mod != 0:
    raise ValueError(f"q_seq_shards={q_seq_shards} should divide q_seq_len={q_len}.")
  q_blocks_per_shard, mod = divmod(q_per_shard, bq)
  if mod != 0:
    raise ValueError(f"q_block_size={bq} should divide q_seq_len_per_shard={q_per_shard}.")
  heads_per_shard, mod = divmod(heads, head_shards)
  if mod != 0:
    raise ValueError(f"head_shards={head_shards} should divide head_count={heads}.")
  return q_blocks, kv_blocks, q_blocks_per_shard, heads_per_shard


def _next_pointers(status, wanted):
  """For each position of `status` (in row-major order), the flat index of the first position
  at or after it whose status is in `wanted`, wrapping around to the first such position
  (None when there is none)."""
  hits = np.flatnonzero(np.isin(status, wanted))
  if hits.size == 0:
    return None
  k = np.searchsorted(hits, np.arange(status.size), side="left")
  k[k == hits.size] = 0
  return hits[k].reshape(status.shape)


def _mask_info_for_shard(output_shape, has_mask_next, mask, block_shape, partial_index,
                         per_head_masks, head_start, num_heads, q_seq_start, q_seq_size,
                         blocked_q_seq_start, is_dkv):
  """data_next and mask_next (or None) of one (head shard, q shard) slice of `mask`."""
  kv_len = mask.shape[2]
  bq, bkv = block_shape
  q_blocks, q_mod = divmod(q_seq_size, bq)
  kv_blocks, kv_mod = divmod(kv_len, bkv)
  assert q_mod == 0 and kv_mod == 0
  # status[h, q, kv]: 0 empty, 1 partial, 2 full
  status = np.zeros((num_heads, q_blocks, kv_blocks), np.int32)
  for h, qi, ki in np.ndindex(status.shape):
    head = head_start + h if per_head_masks else h
    chunk = mask[(head, slice(q_seq_start + qi * bq, q_seq_start + (qi + 1) * bq),
                  slice(ki * bkv, (ki + 1) * bkv))]
    if chunk.any():
      status[h, qi, ki] = 2 if chunk.all() else 1
  # the visiting order: (h, q, kv) forward, (kv, h, q) for dkv
  order = (2, 0, 1) if is_dkv else (0, 1, 2)
  back = np.argsort(order)
  walked = status.transpose(order)
  data_next = np.zeros(output_shape, np.int32)
  mask_next = np.zeros(output_shape, np.int32) if has_mask_next else None
  data_ptr = _next_pointers(walked, (1, 2))
  if data_ptr is None:
    return data_next, mask_next
  # the fetched block along the visiting order's last axis (kv forward, q for dkv)
  data_next[...] = np.unravel_index(data_ptr, walked.shape)[2].transpose(back)
  if mask_next is not None:
    mask_ptr = _next_pointers(walked, (1,))
    if mask_ptr is not None:
      coords = np.stack(np.unravel_index(mask_ptr, walked.shape), -1).transpose(
          tuple(back) + (3,))
      for idx in np.ndindex(output_shape):
        c = [int(x) for x in coords[idx]]
        c = [c[order.index(d)] for d in range(3)]  # back to (h, q, kv)
        key = (c[0] + head_start, c[1] + blocked_q_seq_start, c[2])
        mask_next[idx] = partial_index[key]
  return data_next, mask_next


def _process_dynamic_mask(mask, block_shape, is_dkv, *, downcast_smem_data=True,
                          head_shards=1, q_seq_shards=1, shrink_grid=True):
  """`MaskInfo` of a traced [heads, q, kv] boolean array: every block is kept as a partial
  block (their number is unknown while tracing), but empty blocks are still skipped."""
  del shrink_grid
  if len(mask.shape) != 3:
    raise ValueError(f"Expected a 3-dim mask, instead got: {mask.shape}.")
  if mask.dtype != np.bool_:
    raise ValueError(f"Expected a bool mask, instead got: {mask.dtype}.")
  heads = mask.shape[0]
  bq, bkv = block_shape
  q_blocks, kv_blocks, q_blocks_per_shard, heads_per_shard = _validate(
      mask.shape, block_shape, head_shards, q_seq_shards)
  blocks = lax_numpy.swapaxes(
      lax_numpy.reshape(mask, (heads, q_blocks, bq, kv_blocks, bkv)), -2, -3)
  blocks = lax_numpy.astype(blocks, np.bool_)
  full = reductions.all(blocks, axis=(-1, -2))
  empty = ~reductions.any(blocks, axis=(-1, -2))
  block_mask = searching.where(empty, 0, searching.where(full, 2, 1)).astype(np.int32)
  slice_shape = (heads_per_shard, q_blocks_per_shard, kv_blocks)
  if is_dkv:
    along = creation.arange(q_blocks_per_shard, dtype=np.int32)[None, :, None]
  else:
    along = creation.arange(kv_blocks, dtype=np.int32)[None, None, :]
  along = lax_numpy.broadcast_to(along, slice_shape)
  positions = lax_numpy.reshape(creation.arange(math.prod(slice_shape), dtype=np.int32),
                                slice_shape)
  data_rows, mask_rows = [], []
  for hs in range(head_shards):
    heads_sl = slice(hs * heads_per_shard, (hs + 1) * heads_per_shard)
    data_cols, mask_cols = [], []
    for qs in range(q_seq_shards):
      local = block_mask[heads_sl, qs * q_blocks_per_shard:(qs + 1) * q_blocks_per_shard]
      mask_cols.append(searching.where(local == 1, positions, 0))
      data_cols.append(searching.where(local == 0, 0, along))
    data_rows.append(lax_numpy.concatenate(data_cols, axis=1))
    mask_rows.append(lax_numpy.concatenate(mask_cols, axis=1))
  data_next = lax_numpy.concatenate(data_rows, axis=0)
  mask_next = lax_numpy.concatenate(mask_rows, axis=0)
  if is_dkv:
    blocks = lax_numpy.swapaxes(blocks, -1, -2)

  def narrow(x, max_value):
    if x.size == 0:
      return x
    if x.dtype != np.int32:
      raise ValueError(f"Expected int32 input, but got {x.dtype}.")
    return lax_numpy.astype(x, _narrow_int(max_value))

  if downcast_smem_data:
    block_mask = lax_numpy.astype(block_mask, np.int8)
    data_next = narrow(data_next, q_blocks_per_shard if is_dkv else kv_blocks)
    mask_next = narrow(mask_next, heads_per_shard * q_blocks_per_shard * kv_blocks)
  return MaskInfo(data_next=data_next, mask_next=mask_next, block_mask=block_mask,
                  partial_mask_blocks=blocks, q_sequence=None, is_dynamic_mask=True), None


@functools.lru_cache(maxsize=12)
def _process_mask(mask, block_shape, is_dkv, *, downcast_smem_data=True, head_shards=1,
                  q_seq_shards=1, shrink_grid=True):
  """`MaskInfo` of a static `MultiHeadMask`, sharded along heads and q into `head_shards` x
  `q_seq_shards` pieces, and the mask function when every head has the same computable mask
  (then mask_next and partial_mask_blocks are None: the kernel computes the mask)."""
  if len(mask.shape) != 3:
    raise ValueError(f"Expected a 3-dim mask, instead got: mask.shape={mask.shape}")
  heads = mask.shape[0]
  bq, bkv = block_shape
  q_blocks, kv_blocks, q_blocks_per_shard, heads_per_shard = _validate(
      mask.shape, block_shape, head_shards, q_seq_shards)

  # distinct head masks, numbered by first appearance
  ids: dict[Any, int] = {}
  for m in mask.masks:
    ids.setdefault(m, len(ids))
  unique = list(ids)
  head_mask_id = [ids[mask.masks[h]] for h in range(heads)]
  shard_ids = [set() for _ in range(head_shards)]
  heads_of = [[] for _ in unique]
  shards_of = [set() for _ in unique]
  for h, mid in enumerate(head_mask_id):
    shard_ids[h // heads_per_shard].add(mid)
    heads_of[mid].append(h)
    shards_of[mid].add(h // heads_per_shard)
  one_per_shard = max(len(s) for s in shard_ids) == 1

  block_mask = np.zeros((head_shards if one_per_shard else heads, q_blocks, kv_blocks), np.int32)
  q_sequence = mask_function = None
  if len(unique) == 1:
    only = unique[0]
    assert hasattr(only, "q_sequence") == hasattr(only, "mask_function")
    if hasattr(only, "q_sequence"):
      q_sequence, mask_function = only.q_sequence, only.mask_function

  partial_ids: dict[_HashableNDArray, int] = {}
  partial_index: dict[tuple[int, int, int], int] = {}
  for mid, m in enumerate(unique):
    rows = sorted(shards_of[mid]) if one_per_shard else heads_of[mid]
    for qi, ki in np.ndindex((q_blocks, kv_blocks)):
      chunk = m[(slice(qi * bq, (qi + 1) * bq), slice(ki * bkv, (ki + 1) * bkv))]
      if not chunk.any():
        continue
      if chunk.all():
        block_mask[rows, qi, ki] = 2
        continue
      block_mask[rows, qi, ki] = 1
      pid = partial_ids.setdefault(_HashableNDArray(chunk), len(partial_ids))
      for h in heads_of[mid]:
        partial_index[(h, qi, ki)] = pid

  partial_blocks = None
  if partial_ids:
    partial_blocks = np.stack([k.array for k in partial_ids], axis=0).astype(np.bool_)
    if is_dkv:
      partial_blocks = np.swapaxes(partial_blocks, -1, -2)
  has_mask_next = partial_blocks is not None

  identical = all(s == shard_ids[0] and len(s) == 1 for s in shard_ids)
  data_rows, mask_rows = [], []
  for hs in range(1 if identical else head_shards):
    head_start = hs * heads_per_shard
    if one_per_shard:
      current = mask_lib.MultiHeadMask((unique[head_mask_id[head_start]],))
      n_heads = 1
    else:
      current, n_heads = mask, heads_per_shard
    data_cols, mask_cols = [], []
    for qs in range(q_seq_shards):
      size = q_blocks_per_shard * bq
      d, mn = _mask_info_for_shard(
          (n_heads, q_blocks_per_shard, kv_blocks), has_mask_next, current, block_shape,
          partial_index, not one_per_shard, head_start, n_heads, qs * size, size,
          qs * q_blocks_per_shard, is_dkv)
      data_cols.append(d)
      mask_cols.append(mn)
    data_rows.append(np.concatenate(data_cols, axis=1))
    if has_mask_next:
      mask_rows.append(np.concatenate(mask_cols, axis=1))

  mask_next = None
  if identical:
    full_shape = (head_shards, q_blocks, kv_blocks)
    data_next = np.broadcast_to(data_rows[0], full_shape)
    if has_mask_next:
      mask_next = np.broadcast_to(mask_rows[0], full_shape)
  else:
    data_next = np.concatenate(data_rows, axis=0)
    if has_mask_next:
      mask_next = np.concatenate(mask_rows, axis=0)

  if shrink_grid and block_mask.shape[0] == head_shards and len(unique) == 1:
    block_mask, data_next, mask_next = _shrink_q_shards(
        block_mask, data_next, mask_next, head_shards, q_seq_shards, is_dkv)

  if downcast_smem_data:
    data_next = _downcast_to_small_type(data_next)
    block_mask = _downcast_to_small_type(block_mask)
    if mask_next is not None:
      mask_next = _downcast_to_small_type(mask_next)
  computed = mask_function is not None
  return MaskInfo(data_next=data_next, mask_next=None if computed else mask_next,
                  block_mask=block_mask,
                  partial_mask_blocks=None if computed else partial_blocks,
                  q_sequence=q_sequence), mask_function


def _shrink_q_shards(block_mask, data_next, mask_next, head_shards, q_seq_shards, is_dkv):
  """Drop the empty blocks of each q shard from the grid (kv axis forward, q axis for dkv),
  padding the shards back to one size (block_mask with 0, the others with their edge)."""
  rows = block_mask.shape[1] // q_seq_shards
  shrink = _shrink_mask_info_dkv if is_dkv else _shrink_mask_info
  pieces = []
  for qs in range(q_seq_shards):
    sl = slice(qs * rows, (qs + 1) * rows)
    piece = shrink(block_mask=block_mask[:, sl], data_next=data_next[:, sl],
                   mask_next=None if mask_next is None else mask_next[:, sl],
                   head_shards=head_shards)
    assert piece[0].size > 0 and piece[1].size > 0
    assert piece[2] is None or piece[2].size > 0
    pieces.append(piece)
  if q_seq_shards == 1:
    return pieces[0]
  axis = 1 if is_dkv else 2
  longest = max(p[0].shape[axis] for p in pieces)

  def pad(x, **kw):
    width = [(0, 0)] * 3
    width[axis] = (0, longest - x.shape[axis])
    return np.pad(x, pad_width=width, **kw)

  block_mask = np.concatenate([pad(p[0], constant_values=0) for p in pieces], axis=1)
  data_next = np.concatenate([pad(p[1], mode="edge") for p in pieces], axis=1)
  mask_next = np.concatenate([pad(p[2], mode="edge") for p in pieces if p[2] is not None],
                             axis=1)
  return block_mask, data_next, mask_next


def _gather_padded(array, picks, axis):
  """array[i, picks[i, j]] (axis 1: along rows; axis 0: array[picks[i, j], j]), 0 where the
  pick is -1."""
  if axis == 1:
    taken = np.take_along_axis(array, np.where(picks < 0, array.shape[1] - 1, picks), axis=1)
  else:
    taken = np.take_along_axis(array, np.where(picks < 0, array.shape[0] - 1, picks), axis=0)
  return np.where(picks != -1, taken, 0)


def _shrink_mask_info(*, block_mask, data_next, mask_next, head_shards):
  """Keep, per q block row, only the kv blocks that are not empty in head shard 0 (rows padded
  at the end)."""
  assert block_mask.ndim == 3 and data_next.ndim == 3
  assert mask_next is None or mask_next.ndim == 3
  kept = [np.nonzero(r)[0] for r in block_mask[0]]
  width = max(len(k) for k in kept)
  picks = np.stack([np.pad(k, (0, width - len(k)), constant_values=-1) for k in kept])
  return _slice_mask_info(block_mask=block_mask, data_next=data_next, mask_next=mask_next,
                          head_shards=head_shards,
                          slice_function=lambda a: _gather_padded(a, picks, 1))


def _shrink_mask_info_dkv(*, block_mask, data_next, mask_next, head_shards):
  """Keep, per kv block column, only the q blocks that are not empty in head shard 0 (columns
  padded at the start)."""
  assert block_mask.ndim == 3 and data_next.ndim == 3
  assert mask_next is None or mask_next.ndim == 3
  kept = [np.nonzero(c)[0] for c in block_mask[0].T]
  height = max(len(k) for k in kept)
  picks = np.stack([np.pad(k, (height - len(k), 0), constant_values=-1) for k in kept], axis=1)
  return _slice_mask_info(block_mask=block_mask, data_next=data_next, mask_next=mask_next,
                          head_shards=head_shards,
                          slice_function=lambda a: _gather_padded(a, picks, 0))


def _slice_mask_info(*, block_mask, data_next, mask_next, head_shards, slice_function):
  """`slice_function` applied to each head shard's block_mask, data_next and mask_next."""
  def each(x):
    return np.stack([slice_function(x[s]) for s in range(head_shards)], axis=0)

  return each(block_mask), each(data_next), None if mask_next is None else each(mask_next)


process_mask = functools.partial(_process_mask, is_dkv=False)
process_mask_dkv = functools.partial(_process_mask, is_dkv=True)
process_dynamic_mask = functools.partial(_process_dynamic_mask, is_dkv=False)
process_dynamic_mask_dkv = functools.partial(_process_dynamic_mask, is_dkv=True)
