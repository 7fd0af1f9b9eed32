"""Ragged paged attention as a TPU Pallas kernel
(jax.experimental.pallas.ops.tpu.ragged_paged_attention): a batch of sequences of different
query lengths (prefill and decode mixed), their queries concatenated, attend causally to keys
and values interleaved per head (k0, v0, k1, v1, ...) in a paged cache. The kernel runs per
(heads block, queries block), walking the sequences that overlap its queries and, for each, the
blocks of kv pages (double-buffered copies from HBM) through an online softmax. Off-TPU it runs
in TPU interpret mode; the tuned block-size table (`tuned_block_sizes`) only serves TPUs."""
from __future__ import annotations

import functools

import numpy as np

from arrax._src import backend, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.lax import broadcasting, elementwise as lax
from arrax._src.lax.control_flow.while_loop import while_loop
from arrax._src.nn import functions as nn
from arrax._src.numpy import (assembly, creation, einsum as np_einsum, lax_numpy, reductions,
                              ufuncs)
from arrax._src.pallas import core as pallas_core, helpers, pallas_call, primitives, tpu
from arrax._src.indexing import ds

_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)


# ---- tuned_block_sizes ---------------------------------------------------------------------------
MAX_PAGES_PER_SEQ = 16   # more pages per sequence than this spill the TPU's scalar registers

# Tuned (num_kv_pages_per_block, num_queries_per_block) per TPU name and `simplify_key` key.
# arrax carries no TPU-tuned numbers: every key gets the default block sizes.
TUNED_BLOCK_SIZES: dict = {}


def next_power_of_2(x: int):
  """The smallest power of two >= x (x > 0)."""
  assert x > 0
  return 1 if x == 1 else 1 << (x - 1).bit_length()


def simplify_key(key):
  """A block-size lookup key with sizes rounded up (powers of two, head_dim to 128s)."""
  q_dtype, kv_dtype, q_heads, kv_heads, head_dim, page_size, tokens, pages_per_seq = key
  return (np.dtype(q_dtype).name, np.dtype(kv_dtype).name, next_power_of_2(q_heads),
          next_power_of_2(kv_heads), -(-head_dim // 128) * 128, next_power_of_2(page_size),
          next_power_of_2(tokens), next_power_of_2(page_size * pages_per_seq))


def get_tpu_version() -> int:
  """The TPU generation of the default device; -1 off-TPU."""
  kind = backend.devices()[0].device_kind
  if "TPU" not in kind:
    return -1
  if kind == "TPU7x":
    return 7
  kind = kind.removesuffix(" lite")
  assert kind[:-1] == "TPU v", kind
  return int(kind[-1])


def get_device_name(num_devices: int | None = None):
  """The first two words of the default device's kind (with `-num_devices` when given)."""
  name = " ".join(backend.devices()[0].device_kind.split()[:2])
  return name if num_devices is None else f"{name}-{num_devices}"


def get_tuned_block_sizes(q_dtype, kv_dtype, num_q_heads_per_blk, num_kv_heads_per_blk,
                          head_dim, page_size, max_num_batched_tokens,
                          pages_per_seq) -> tuple[int, int]:
  """(num_kv_pages_per_block, num_queries_per_block) for these sizes (TPU v4 or newer)."""
  version = get_tpu_version()
  if version < 4:
    raise NotImplementedError("TPU version must be 4 or higher.")
  key = simplify_key((q_dtype, kv_dtype, num_q_heads_per_blk, num_kv_heads_per_blk, head_dim,
                      page_size, max_num_batched_tokens, pages_per_seq))
  if version == 4:
    bkv, bq = 32, 32   # (small enough for v4's VMEM)
  else:
    bkv, bq = TUNED_BLOCK_SIZES.get(get_device_name(), {}).get(key, (128, 32))
  return min(pages_per_seq, bkv), min(max_num_batched_tokens, bq)


def get_min_page_size(max_model_len, min_page_size=16):
  """The smallest page size keeping a sequence of `max_model_len` within MAX_PAGES_PER_SEQ
  pages (at least `min_page_size`)."""
  return max(next_power_of_2(max_model_len) // MAX_PAGES_PER_SEQ, min_page_size)


# ---- kernel --------------------------------------------------------------------------------------
DEFAULT_MASK_VALUE = -0.7 * float(np.finfo(np.float32).max)


class MultiPageAsyncCopyDescriptor:
  """The copies of one sequence's pages [start_page_idx, start_page_idx + buffer pages) from
  HBM into `vmem_buf` (pages at or past `end_page_idx` copy page slot 0 instead)."""

  def __init__(self, pages_hbm_ref, vmem_buf, sem, page_indices_ref, metadata):
    self._vmem_buf = vmem_buf
    seq, first, end = metadata
    self._async_copies = []
    for i in range(vmem_buf.shape[0]):
      slot = lax_numpy.where(first + i < end, first + i, 0)
      self._async_copies.append(tpu.make_async_copy(
          pages_hbm_ref.at[page_indices_ref[seq, slot]], vmem_buf.at[i], sem))

  def start(self):
    """Start every copy."""
    for c in self._async_copies:
      c.start()

  def wait(self):
    """Wait for every copy; the buffer ref."""
    for c in self._async_copies:
      c.wait()
    return self._vmem_buf


def _kv_of_seq(kv_pages, indices, which, num_kv_heads, head_dim, kv_len):
  kv = kv_pages[indices][:, :, which::2, :]
  return kv.reshape(-1, num_kv_heads, head_dim)[:kv_len]


def _scaled(x, scale, dtype):
  """`x * scale` (in float32) as `dtype`; `x` itself without a scale."""
  return x if scale is None else (x.astype(_F32) * scale).astype(dtype)


def _cap_and_mask(s, row, col, sliding_window, soft_cap, mask_value):
  """Logits `s` soft-capped, plus `mask_value` where key position `col` is past query position
  `row` or (with a sliding window) too far behind it."""
  masked = row < col
  if sliding_window is not None:
    masked = ufuncs.logical_or(masked, row - sliding_window >= col)
  if soft_cap is not None:
    s = soft_cap * ufuncs.tanh(s / soft_cap)
  return s + lax_numpy.where(masked, mask_value, 0.0)


def ref_ragged_paged_attention(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs,
                               *, sm_scale: float = 1.0, sliding_window: int | None = None,
                               soft_cap: float | None = None,
                               mask_value: float | None = DEFAULT_MASK_VALUE,
                               k_scale: float | None = None, v_scale: float | None = None):
  """Ragged paged attention computed densely, one sequence at a time (concrete inputs)."""
  static_validate_inputs(queries, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs,
                         sm_scale=sm_scale, k_scale=k_scale, v_scale=v_scale,
                         sliding_window=sliding_window, soft_cap=soft_cap,
                         mask_value=mask_value)
  if mask_value is None:
    mask_value = DEFAULT_MASK_VALUE
  _, _, combined, head_dim = kv_pages.shape
  assert combined % 2 == 0
  num_kv_heads = combined // 2
  num_q_heads = queries.shape[1]
  assert num_q_heads % num_kv_heads == 0
  group = num_q_heads // num_kv_heads
  outs = []
  for i in range(num_seqs[0]):
    q_start, q_end = cu_q_lens[i], cu_q_lens[i + 1]
    q_len = q_end - q_start
    kv_len = kv_lens[i]
    q = queries[q_start:q_end]
    k = _kv_of_seq(kv_pages, page_indices[i], 0, num_kv_heads, head_dim, kv_len)
    v = _kv_of_seq(kv_pages, page_indices[i], 1, num_kv_heads, head_dim, kv_len)
    k = assembly.repeat(_scaled(k, k_scale, q.dtype), group, axis=1)
    v = assembly.repeat(_scaled(v, v_scale, q.dtype), group, axis=1)
    s = np_einsum.einsum("qhd,khd->hqk", q, k, preferred_element_type=_F32)
    s = s * sm_scale
    row = (kv_len - q_len) + broadcasting.broadcasted_iota(np.int32, s.shape, 1)
    col = broadcasting.broadcasted_iota(np.int32, s.shape, 2)
    s = _cap_and_mask(s, row, col, sliding_window, soft_cap, mask_value)
    p = nn.softmax(s, axis=-1).astype(v.dtype)
    outs.append(np_einsum.einsum("hqk,khd->qhd", p, v).astype(queries.dtype))
  return lax_numpy.concatenate(outs, axis=0)


def dynamic_validate_inputs(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs, *,
                            sm_scale: float | None = None, sliding_window: int | None = None,
                            soft_cap: float | None = None, mask_value: float | None = None,
                            k_scale: float | None = None, v_scale: float | None = None,
                            num_kv_pages_per_block: int | None = None,
                            num_queries_per_block: int | None = None,
                            vmem_limit_bytes: int | None = None):
  """`static_validate_inputs`, then the checks that need the values (concrete inputs)."""
  static_validate_inputs(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs,
                         sm_scale=sm_scale, sliding_window=sliding_window, soft_cap=soft_cap,
                         mask_value=mask_value, k_scale=k_scale, v_scale=v_scale,
                         num_kv_pages_per_block=num_kv_pages_per_block,
                         num_queries_per_block=num_queries_per_block,
                         vmem_limit_bytes=vmem_limit_bytes)
  max_num_batched_tokens = q.shape[0]
  page_size = kv_pages.shape[1]
  max_num_seqs, pages_per_seq = page_indices.shape
  if num_seqs[0] > max_num_seqs:
    raise ValueError(f"{num_seqs[0]=} must be less or equal to {max_num_seqs=}")
  max_kv_len = reductions.max(kv_lens)
  min_pages_per_seq = helpers.cdiv(max_kv_len, page_size)
  if pages_per_seq < min_pages_per_seq:
    raise ValueError(f"{pages_per_seq=} must be greater or equal to {min_pages_per_seq=} "
                     f"given {max_kv_len=} and {page_size=}.")
  if cu_q_lens[num_seqs[0]] > max_num_batched_tokens:
    raise ValueError(f"Total q tokens {cu_q_lens[num_seqs[0]]} must be less or equal to "
                     f"{max_num_batched_tokens=}.")
  for i in range(num_seqs[0]):
    q_len = cu_q_lens[i + 1] - cu_q_lens[i]
    kv_len = kv_lens[i]
    if q_len > kv_len:
      raise ValueError(f"{q_len=} must be less or equal to {kv_len=} at sequence {i}.")


def static_validate_inputs(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs, *,
                           sm_scale: float | None = None, sliding_window: int | None = None,
                           soft_cap: float | None = None, mask_value: float | None = None,
                           k_scale: float | None = None, v_scale: float | None = None,
                           num_kv_pages_per_block: int | None = None,
                           num_queries_per_block: int | None = None,
                           vmem_limit_bytes: int | None = None):
  """The checks of shapes, dtypes and options that need no values (ValueError)."""
  _, num_q_heads, head_dim = q.shape
  _, _, combined, head_dim_k = kv_pages.shape
  assert combined % 2 == 0
  assert k_scale is None or isinstance(k_scale, float)
  assert v_scale is None or isinstance(v_scale, float)
  num_kv_heads = combined // 2
  max_num_seqs, pages_per_seq = page_indices.shape
  if num_seqs.shape != (1,):
    raise ValueError(f"{num_seqs.shape=} must be (1,)")
  if head_dim_k != head_dim:
    raise ValueError(f"Q head_dim {head_dim} must be the same as that of K/V {head_dim_k}.")
  if kv_lens.shape != (max_num_seqs,):
    raise ValueError(f"Expected {kv_lens.shape=} to be ({max_num_seqs},) where "
                     "`max_num_seqs` is `page_indices.shape[0]`.")
  if cu_q_lens.shape != (max_num_seqs + 1,):
    raise ValueError(f"Expected {cu_q_lens.shape=} to be ({max_num_seqs + 1},)  where "
                     "`max_num_seqs` is `page_indices.shape[0]`.")
  if kv_lens.dtype != _I32 or page_indices.dtype != _I32 or cu_q_lens.dtype != _I32:
    raise ValueError("The dtype of `kv_lens`, `page_indices`, and `cu_q_lens` must be int32. "
                     f"Got {kv_lens.dtype=}, {page_indices.dtype=}, {cu_q_lens.dtype=}.")
  if num_q_heads % num_kv_heads:
    raise ValueError(f"{num_q_heads=} must be divisible by {num_kv_heads=}")
  if sliding_window is not None and sliding_window <= 0:
    raise ValueError(f"{sliding_window=} must be positive.")
  if soft_cap is not None and soft_cap == 0.0:
    raise ValueError(f"{soft_cap=} must not be 0.0.")
  if num_kv_pages_per_block is not None and not 0 < num_kv_pages_per_block <= pages_per_seq:
    raise ValueError(f"{num_kv_pages_per_block=} must be in range (0, {pages_per_seq}].")
  if num_queries_per_block is not None and num_queries_per_block <= 0:
    raise ValueError(f"{num_queries_per_block=} must be positive.")
  if vmem_limit_bytes is not None and vmem_limit_bytes <= 0:
    raise ValueError(f"{vmem_limit_bytes=} must be positive.")


def _tile_lanes(x, shape):
  """x [n, 128] repeated along the last axis to `shape` [n, k * 128]."""
  if x.shape == shape:
    return x
  assert len(x.shape) == len(shape) and x.shape[0] == shape[0]
  assert shape[1] % x.shape[1] == 0
  return lax_numpy.concatenate([x] * (shape[1] // x.shape[1]), axis=1)


def _masked_store(ref, val, start, end, group=1):
  """ref[r] = val[r] for the rows r with start <= r // group < end."""
  rows = broadcasting.broadcasted_iota(np.int32, ref.shape, 0) // group
  tpu.store(ref, val, mask=ufuncs.logical_and(rows >= start, rows < end))


def ragged_paged_attention_kernel(
    kv_lens_ref, page_indices_ref, cu_q_lens_ref, seq_buf_idx_ref, num_seqs_ref, q_ref,
    kv_pages_hbm_ref, o_ref, kv_bufs, sems, l_ref, m_ref, acc_ref, *, sm_scale: float,
    sliding_window: int | None = None, soft_cap: float | None = None,
    mask_value: float | None = DEFAULT_MASK_VALUE, k_scale: float | None = None,
    v_scale: float | None = None):
  """One (heads block, queries block): every sequence with queries in the block, every kv
  block of it, every kv head of the heads block, folded into the online softmax (l_ref, m_ref,
  acc_ref). `seq_buf_idx_ref` carries (first sequence, buffer) to the next grid step."""
  if mask_value is None:
    mask_value = DEFAULT_MASK_VALUE
  bq, q_heads_blk, head_dim = q_ref.shape
  pages_per_seq = page_indices_ref.shape[-1]
  num_seqs = num_seqs_ref[0]
  _, pages_blk, page_size, combined_blk, _ = kv_bufs.shape
  kv_heads_blk = combined_blk // 2
  bkv = pages_blk * page_size
  group = q_heads_blk // kv_heads_blk
  heads_idx, q_blk_idx = primitives.program_id(0), primitives.program_id(1)
  num_heads_blks = primitives.num_programs(0)
  first_seq, first_buf = seq_buf_idx_ref[0], seq_buf_idx_ref[1]
  blk_q_start = q_blk_idx * bq
  blk_q_end = blk_q_start + bq
  rows = bq * group

  def kv_copy(heads_idx, seq, kv_blk, buf):
    end = ufuncs.minimum(pages_per_seq, helpers.cdiv(kv_lens_ref[seq], page_size))
    heads = kv_pages_hbm_ref.at[:, :, ds(heads_idx * combined_blk, combined_blk), :]
    return MultiPageAsyncCopyDescriptor(heads, kv_bufs.at[buf], sems.at[buf],
                                        page_indices_ref, (seq, kv_blk * pages_blk, end))

  @helpers.when(heads_idx + q_blk_idx == 0)
  def _():
    kv_copy(heads_idx, first_seq, 0, first_buf).start()

  def q_blk_needed(state):
    done, seq, _ = state
    more = ufuncs.logical_and(blk_q_start < cu_q_lens_ref[num_seqs], seq < num_seqs)
    return ufuncs.logical_and(done == 0, more)

  def q_blk_body(state):
    done, seq, buf = state
    q_start, q_end = cu_q_lens_ref[seq], cu_q_lens_ref[seq + 1]
    q_len = q_end - q_start
    kv_len = kv_lens_ref[seq]

    def next_ids(kv_blk, buf):
      """(heads block, sequence, kv block, buffer) of the copy after this one."""
      nkv = kv_blk + 1
      last_kv = nkv * bkv >= kv_len
      nkv = lax_numpy.where(last_kv, 0, nkv)
      nseq = lax_numpy.where(ufuncs.logical_and(last_kv, q_end <= blk_q_end), seq + 1, seq)
      last_seq = nseq == num_seqs
      nseq = lax_numpy.where(last_seq, 0, nseq)
      nheads = lax_numpy.where(last_seq, heads_idx + 1, heads_idx)
      return nheads, nseq, nkv, lax_numpy.where(buf == 0, 1, 0)

    def attend(q, k, v, l_head, m_head, acc_head, kv_blk):
      kv_start = kv_blk * bkv
      valid = broadcasting.broadcasted_iota(np.int32, k.shape, 0) < kv_len - kv_start
      k = lax_numpy.where(valid, k.astype(_F32), 0).astype(k.dtype)
      v = lax_numpy.where(valid, v.astype(_F32), 0).astype(v.dtype)
      s = np_einsum.einsum("nd,md->nm", q, k, preferred_element_type=_F32) * sm_scale
      lo = ufuncs.maximum(q_start - blk_q_start, 0)
      hi = ufuncs.minimum(q_end - blk_q_start, bq)
      row = ((kv_len - q_len) + blk_q_start - q_start
             + broadcasting.broadcasted_iota(np.int32, (rows, bkv), 0) // group)
      col = kv_start + broadcasting.broadcasted_iota(np.int32, (rows, bkv), 1)
      s = _cap_and_mask(s, row, col, sliding_window, soft_cap, mask_value)
      m_blk = reductions.max(s, axis=1, keepdims=True)
      p = ufuncs.exp(s - m_blk)
      pv = lax_numpy.dot(p, v, preferred_element_type=_F32)
      first = kv_blk == 0
      m_prev = lax_numpy.where(first, creation.full(m_head.shape, -np.inf, _F32), m_head[...])
      l_prev = lax_numpy.where(first, creation.zeros(l_head.shape, _F32), l_head[...])
      m_blk = lax_numpy.broadcast_to(m_blk, m_head.shape)
      l_blk = lax_numpy.broadcast_to(reductions.sum(p, axis=1, keepdims=True), l_head.shape)
      m_new = ufuncs.maximum(m_prev, m_blk)
      _masked_store(m_head, m_new, lo, hi, group)
      alpha = ufuncs.exp(m_prev - m_new)
      beta = ufuncs.exp(m_blk - m_new)
      l_alpha = alpha * l_prev
      l_new = l_alpha + beta * l_blk
      l_safe = lax_numpy.where(l_new == 0.0, 1.0, l_new)
      _masked_store(l_head, l_safe, lo, hi, group)
      o_prev = lax_numpy.where(first, creation.zeros(acc_head.shape, _F32), acc_head[...])
      o_prev = o_prev.reshape(-1, head_dim)
      out = lax.div(_tile_lanes(l_alpha, pv.shape) * o_prev + _tile_lanes(beta, pv.shape) * pv,
                    _tile_lanes(l_safe, pv.shape))
      _masked_store(acc_head, out.reshape(acc_head.shape), lo, hi)

    def kv_blk_valid(state):
      return state[0] * bkv < kv_len

    def kv_blk_body(state):
      kv_blk, buf = state
      nheads, nseq, nkv, nbuf = next_ids(kv_blk, buf)

      @helpers.when(nheads < num_heads_blks)
      def _():
        kv_copy(nheads, nseq, nkv, nbuf).start()

      kv = kv_copy(heads_idx, seq, kv_blk, buf).wait()[...].reshape(-1, head_dim)
      for h in range(kv_heads_blk):   # k of head h is row 2h of each combined group, v 2h + 1
        k = _scaled(kv[2 * h::combined_blk], k_scale, q_ref.dtype)
        v = _scaled(kv[2 * h + 1::combined_blk], v_scale, q_ref.dtype)
        qh = q_ref[:, h * group:(h + 1) * group, :]
        if qh.shape[-2] % get_dtype_packing(qh.dtype):
          qh = qh.astype(_F32)
        attend(qh.reshape(-1, head_dim), k, v, l_ref.at[h], m_ref.at[h],
               acc_ref.at[:, h * group:(h + 1) * group, :], kv_blk)
      return kv_blk + 1, nbuf

    _, buf = while_loop(kv_blk_valid, kv_blk_body, (np.int32(0), buf))
    seq = lax_numpy.where(q_end <= blk_q_end, seq + 1, seq)
    done = lax_numpy.where(q_end < blk_q_end, done, 1)
    return done, seq, buf

  _, seq, buf = while_loop(q_blk_needed, q_blk_body,
                                     (np.int32(0), first_seq, first_buf))
  seq_buf_idx_ref[0] = lax_numpy.where(seq < num_seqs, seq, 0)
  seq_buf_idx_ref[1] = buf
  o_ref[...] = acc_ref[...].astype(q_ref.dtype)


def get_dtype_packing(dtype):
  """How many values of `dtype` one 32-bit word holds."""
  return 32 // helpers.dtype_bits(dtype)


def get_min_heads_per_blk(num_q_heads, num_combined_kv_heads, q_dtype, kv_dtype):
  """The fewest (q heads, combined kv heads) per block that TPU tiling allows."""
  q_packing, kv_packing = get_dtype_packing(q_dtype), get_dtype_packing(kv_dtype)

  def fully_tiled(x, packing):
    if x % packing:
      return False
    x //= packing
    return x in (1, 2, 4, 8) or x % 8 == 0

  if not fully_tiled(num_combined_kv_heads, kv_packing):
    raise ValueError(
        f"Not implemented: {num_combined_kv_heads=} can not be XLA fully tiled.")
  assert num_combined_kv_heads % 2 == 0
  num_kv_heads = num_combined_kv_heads // 2
  assert num_q_heads % num_kv_heads == 0
  ratio = num_q_heads // num_kv_heads
  tile = 8 * kv_packing
  min_combined = tile if num_combined_kv_heads % tile == 0 else num_combined_kv_heads
  min_q = min_combined // 2 * ratio
  if fully_tiled(min_q, q_packing):
    return min_q, min_combined
  return num_q_heads, num_combined_kv_heads


@functools.partial(jit.jit, static_argnames=[
    "sm_scale", "mask_value", "num_kv_pages_per_block", "num_queries_per_block",
    "vmem_limit_bytes", "sliding_window", "soft_cap", "k_scale", "v_scale"])
def ragged_paged_attention(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs, *,
                           sm_scale: float = 1.0, sliding_window: int | None = None,
                           soft_cap: float | None = None,
                           mask_value: float | None = DEFAULT_MASK_VALUE,
                           k_scale: float | None = None, v_scale: float | None = None,
                           num_kv_pages_per_block: int | None = None,
                           num_queries_per_block: int | None = None,
                           vmem_limit_bytes: int | None = None):
  """Causal attention of the concatenated queries q [tokens, num_q_heads, head_dim] of
  `num_seqs[0]` sequences (sequence i: queries cu_q_lens[i]:cu_q_lens[i + 1], kv_lens[i]
  positions on pages page_indices[i] of kv_pages [pages, page_size, 2 * num_kv_heads,
  head_dim], k and v interleaved); queries are the last positions of their sequence. Without
  both block sizes they come from `get_tuned_block_sizes` (TPU only)."""
  static_validate_inputs(q, kv_pages, kv_lens, page_indices, cu_q_lens, num_seqs,
                         sm_scale=sm_scale, sliding_window=sliding_window, soft_cap=soft_cap,
                         mask_value=mask_value, k_scale=k_scale, v_scale=v_scale,
                         num_kv_pages_per_block=num_kv_pages_per_block,
                         num_queries_per_block=num_queries_per_block,
                         vmem_limit_bytes=vmem_limit_bytes)
  if mask_value is None:
    mask_value = DEFAULT_MASK_VALUE
  num_tokens, num_q_heads, head_dim = q.shape
  _, page_size, combined, _ = kv_pages.shape
  assert combined % 2 == 0
  num_kv_heads = combined // 2
  pages_per_seq = page_indices.shape[1]
  q_heads_blk, combined_blk = get_min_heads_per_blk(num_q_heads, combined, q.dtype,
                                                    kv_pages.dtype)
  bq, pages_blk = num_queries_per_block, num_kv_pages_per_block
  if bq is None or pages_blk is None:
    pages_blk, bq = get_tuned_block_sizes(q.dtype, kv_pages.dtype, q_heads_blk,
                                          combined_blk // 2, head_dim, page_size, num_tokens,
                                          pages_per_seq)
  group = num_q_heads // num_kv_heads
  assert combined_blk % 2 == 0
  kv_heads_blk = combined_blk // 2
  assert q_heads_blk % group == 0
  grid = (num_q_heads // q_heads_blk, helpers.cdiv(num_tokens, bq))
  q_spec = pallas_core.BlockSpec((bq, q_heads_blk, head_dim),
                                 lambda heads_idx, q_blk_idx, *_: (q_blk_idx, heads_idx, 0))
  vmem = tpu.MemorySpace.VMEM
  lm = vmem((kv_heads_blk, bq * group, 128), _F32)   # (128 lanes: TPU tiling)
  scratch = [vmem((2, pages_blk, page_size, combined_blk, head_dim), kv_pages.dtype),
             tpu.SemaphoreType.DMA((2,)), lm, lm, vmem((bq, q_heads_blk, head_dim), _F32)]
  prefetch = (kv_lens, page_indices, cu_q_lens, creation.array((0, 0), np.int32), num_seqs)
  call = pallas_call.pallas_call(
      functools.partial(ragged_paged_attention_kernel, sm_scale=sm_scale,
                        sliding_window=sliding_window, soft_cap=soft_cap,
                        mask_value=mask_value, k_scale=k_scale, v_scale=v_scale),
      grid_spec=tpu.PrefetchScalarGridSpec(
          num_scalar_prefetch=len(prefetch),
          in_specs=[q_spec, pallas_core.BlockSpec(memory_space=pallas_core.MemorySpace.ANY)],
          out_specs=q_spec, grid=grid, scratch_shapes=scratch),
      compiler_params=tpu.CompilerParams(dimension_semantics=("arbitrary", "arbitrary"),
                                         vmem_limit_bytes=vmem_limit_bytes),
      out_shape=ShapeDtypeStruct(q.shape, q.dtype), name="ragged_paged_attention_kernel")
  return call(*prefetch, q, kv_pages)
