"""Paged attention as a TPU Pallas kernel (jax.experimental.pallas.ops.tpu.paged_attention):
one query per sequence attends to keys and values stored in fixed-size pages, which a page
table (`page_indices`) maps to each sequence. The kernel runs per (core, sequence, kv head),
copying `pages_per_compute_block` pages at a time from HBM into a double buffer and folding
each block into an online softmax. The int8 quantization helpers and the dense reference
(`grouped_query_attention_reference`) live here too. Off-TPU the kernel runs in TPU interpret
mode (`pltpu.force_tpu_interpret_mode()`)."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from arrax._src import debugging, dtypes, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.lax import broadcasting, dot as lax_dot, elementwise as lax
from arrax._src.lax.control_flow import conditionals, loops
from arrax._src.nn import functions as nn
from arrax._src.numpy import creation, einsum as np_einsum, lax_numpy, reductions, ufuncs
from arrax._src.pallas import core as pallas_core, helpers, pallas_call, primitives, tpu
from arrax._src.sharding_impls import PartitionSpec

_F32 = np.dtype(np.float32)
_BF16 = np.dtype(dtypes.bfloat16)


# ---- quantization_utils --------------------------------------------------------------------------
P = PartitionSpec
MAX_INT8 = 127.5


class QuantizedTensor(NamedTuple):
  """An int8 tensor (`weight`) with the scales it was quantized with (`scales`)."""
  weight: Any
  scales: Any


def to_int8(x, h):
  """`x` scaled so that `h` maps to 127.5, rounded to int8."""
  return ufuncs.rint(x * (MAX_INT8 / h)).astype(np.int8)


def from_int8(x, h, dtype=_BF16):
  """The int8 array `x` back on the scale `h` (`x` converted to `dtype` first)."""
  return x.astype(dtype) * h / MAX_INT8


def get_quantization_scales(x):
  """The absolute maximum over the last axis of `x` (kept as an axis of size 1)."""
  return reductions.max(ufuncs.absolute(x), axis=-1, keepdims=True)


def quantize_to_int8(x) -> QuantizedTensor:
  """`x` quantized to int8 with one scale per last-axis row."""
  scales = get_quantization_scales(x)
  return QuantizedTensor(weight=to_int8(x, scales), scales=scales)


def unquantize_from_int8(x: QuantizedTensor, dtype=_BF16):
  """The float values (of `dtype`) a QuantizedTensor stands for."""
  return from_int8(x.weight, x.scales, dtype)


# ---- util ----------------------------------------------------------------------------------------
MASK_VALUE = -0.7 * float(np.finfo(np.float32).max)


def grouped_query_attention_reference(queries, k_pages, v_pages, seq_lens, soft_cap=None,
                                      debug=False):
  """Dense grouped-query attention of one query per sequence: queries [b, hq, d] against
  keys/values [b, hkv, t, d], positions at or past `seq_lens` masked."""
  assert k_pages.shape == v_pages.shape
  b, hq, d = queries.shape
  b2, hkv, t, d2 = k_pages.shape
  assert b2 == b
  assert d2 == d
  if isinstance(k_pages, QuantizedTensor):
    k_pages = unquantize_from_int8(k_pages, dtype=_F32)
  if isinstance(v_pages, QuantizedTensor):
    v_pages = unquantize_from_int8(v_pages, dtype=_F32)
  assert hq % hkv == 0
  g = hq // hkv
  qg = queries.reshape(b, hkv, g, d).astype(_F32)
  logits = np_einsum.einsum("bhgd,bhtd->bhgt", qg, k_pages.astype(_F32))
  if soft_cap is not None and soft_cap != 0.0:
    logits = ufuncs.tanh(logits / soft_cap) * soft_cap
  assert logits.shape == (b, hkv, g, t)
  if debug:
    debugging.debug_print("qk: {qk}", qk=logits)
  valid = creation.arange(t)[None] < seq_lens[:, None]
  logits = logits + lax_numpy.where(valid, 0.0, MASK_VALUE)[:, None, None, :]
  if debug:
    debugging.debug_print("masked: {qk}", qk=logits)
  probs = nn.softmax(logits, axis=-1).astype(v_pages.dtype)
  if debug:
    debugging.debug_print("softmax: {probs}", probs=probs)
  out = np_einsum.einsum("bhgt,bhtd->bhgd", probs, v_pages)
  assert out.shape == (b, hkv, g, d)
  return out.reshape(b, hq, d)


# ---- paged_attention_kernel ----------------------------------------------------------------------
DEFAULT_MASK_VALUE = -0.7 * float(np.finfo(np.float32).max)


class MultiPageAsyncCopyDescriptor:
  """The copies of `num_pages_to_load` pages (those of `page_indices` from
  `page_indices_start_offset` on, of kv head `head_index` when given) from HBM into a VMEM
  buffer, with their scales when quantized."""

  def __init__(self, pages_hbm_ref, scales_pages_hbm_ref, vmem_buffer, scales_vmem_buffer,
               sem, page_indices, page_indices_start_offset, num_pages_to_load, head_index):
    if head_index is not None:
      pages_hbm_ref = pages_hbm_ref.at[head_index]
      if scales_pages_hbm_ref is not None:
        scales_pages_hbm_ref = scales_pages_hbm_ref.at[head_index]
    self._pages_hbm_ref = pages_hbm_ref
    self._scales_pages_hbm_ref = scales_pages_hbm_ref
    self._vmem_buffer = vmem_buffer
    self._scales_vmem_buffer = scales_vmem_buffer
    self._num_pages_to_load = num_pages_to_load
    self._sem = sem
    self._page_indices = page_indices
    self._page_indices_start_offset = page_indices_start_offset
    self._async_copies = [self._make_async_copy(i) for i in range(num_pages_to_load)]
    if scales_pages_hbm_ref is not None and scales_vmem_buffer is not None:
      self._async_copies += [self._make_scales_async_copy(i) for i in range(num_pages_to_load)]

  def _page(self, i):
    return self._page_indices[self._page_indices_start_offset + i]

  def _make_async_copy(self, i):
    return tpu.make_async_copy(self._pages_hbm_ref.at[self._page(i)], self._vmem_buffer.at[i],
                               self._sem)

  def _make_scales_async_copy(self, i):
    return tpu.make_async_copy(self._scales_pages_hbm_ref.at[self._page(i)],
                               self._scales_vmem_buffer.at[i], self._sem)

  def start(self):
    """Start every copy."""
    for c in self._async_copies:
      c.start()

  def _maybe_dequantize(self, x, x_scale, dtype=_BF16):
    return x.astype(dtype) if x_scale is None else from_int8(x, x_scale, dtype=dtype)

  def wait_and_get_loaded(self):
    """Wait for the copies; the loaded pages as a [pages * page_size, head_dim] array
    (bfloat16, or dequantized)."""
    for c in self._async_copies:
      c.wait()
    head_dim = self._vmem_buffer.shape[-1]
    pages = self._vmem_buffer[...].astype(_F32)
    scales = None
    if self._scales_vmem_buffer is not None:
      scales = self._scales_vmem_buffer[...].astype(_F32)
    return self._maybe_dequantize(pages, scales).reshape(-1, head_dim)


def paged_flash_attention_kernel(
    lengths_ref, page_indices_ref, buffer_index_ref, init_flag_ref, q_ref, k_pages_hbm_ref,
    k_scales_pages_hbm_ref, v_pages_hbm_ref, v_scales_pages_hbm_ref, o_ref, m_ref, l_ref,
    k_vmem_buffer, k_scales_vmem_buffer, v_vmem_buffer, v_scales_vmem_buffer, k_sems, v_sems,
    *, batch_size: int, pages_per_compute_block: int, pages_per_sequence: int,
    mask_value: float, attn_logits_soft_cap: float | None, megacore_mode: str | None,
    program_ids=()):
  """One block of `pages_per_compute_block` pages of one (sequence, kv head): prefetch the next
  non-empty block into the other buffer, then fold this block into the online softmax kept in
  (o_ref, m_ref, l_ref)."""
  if program_ids:
    core, b, h, i = program_ids
  else:
    core, b, h, i = (primitives.program_id(a) for a in range(4))
  num_kv_heads, _, page_size, _ = k_pages_hbm_ref.shape
  block = page_size * pages_per_compute_block
  cores = primitives.num_programs(0)
  b_step, b_first = (cores, core) if megacore_mode == "batch" else (1, 0)
  h_step, h_first = (cores, core) if megacore_mode == "kv_head" else (1, 0)
  b = b * b_step + b_first
  h = h * h_step + h_first
  length = lengths_ref[b]

  def next_nonempty_batch(b):
    nb = b + b_step

    def skip_empty():
      start = nb + b_step
      return loops.fori_loop(
          lax.div(start, b_step), lax.div(batch_size, b_step),
          lambda _, x: lax_numpy.where(lengths_ref[x] == 0, x + b_step, x), start)

    empty = lax.bitwise_and(nb < batch_size,
                            lengths_ref[lax.clamp(0, nb, batch_size - 1)] == 0)
    return conditionals.cond(empty, skip_empty, lambda: nb), h_first, 0

  def block_indices(b, h, i):
    """(b, h, i) if block i of (b, h) holds keys, else the first block of the next head or
    sequence."""
    def next_head():
      nh = h + h_step
      return conditionals.cond(nh < num_kv_heads, lambda: (b, nh, 0),
                               lambda: next_nonempty_batch(b))
    return conditionals.cond(i * block < lengths_ref[b], lambda: (b, h, i), next_head)

  def copies(b, h, i, buf):
    offset = b * pages_per_sequence + i * pages_per_compute_block

    def one(pages, scales, vmem, scales_vmem, sems):
      return MultiPageAsyncCopyDescriptor(
          pages, scales, vmem.at[buf], None if scales_vmem is None else scales_vmem.at[buf],
          sems.at[buf], page_indices_ref, offset, pages_per_compute_block, h)
    return (one(k_pages_hbm_ref, k_scales_pages_hbm_ref, k_vmem_buffer, k_scales_vmem_buffer,
                k_sems),
            one(v_pages_hbm_ref, v_scales_pages_hbm_ref, v_vmem_buffer, v_scales_vmem_buffer,
                v_sems))

  @helpers.when(i * block < length)
  def _():
    first = init_flag_ref[0]
    init_flag_ref[0] = 0
    buf = buffer_index_ref[0]
    nb, nh, ni = block_indices(b, h, i + 1)

    @helpers.when(first)
    def _():
      for c in copies(b, h, i, buf):
        c.start()

    @helpers.when(i == 0)
    def _():
      m_ref[...] = creation.full(m_ref.shape, -np.inf, m_ref.dtype)
      l_ref[...] = creation.zeros(l_ref.shape, l_ref.dtype)
      o_ref[...] = creation.zeros(o_ref.shape, o_ref.dtype)

    @helpers.when(nb < batch_size)
    def _():
      other = lax_numpy.where(buf == 0, 1, 0)
      for c in copies(nb, nh, ni, other):
        c.start()
      buffer_index_ref[0] = other

    k_copy, v_copy = copies(b, h, i, buf)
    q = q_ref[...].astype(_F32)
    k = k_copy.wait_and_get_loaded()
    s = lax_dot.dot_general(q, k, (((1,), (1,)), ((), ())), preferred_element_type=_F32)
    if attn_logits_soft_cap is not None:
      s = ufuncs.tanh(s / attn_logits_soft_cap) * attn_logits_soft_cap
    pos = i * block + broadcasting.broadcasted_iota(np.int32, s.shape, 1)
    s = s + lax_numpy.where(pos < length, 0.0, mask_value)
    m_blk = reductions.max(s, axis=-1)
    p = ufuncs.exp(s - m_blk[..., None])
    m_prev, l_prev = m_ref[...], l_ref[...]
    l_blk = broadcasting.broadcast_in_dim(reductions.sum(p, axis=-1), l_prev.shape, (0,))
    m_blk = broadcasting.broadcast_in_dim(m_blk, m_prev.shape, (0,))
    m_new = ufuncs.maximum(m_prev, m_blk)
    alpha = ufuncs.exp(m_prev - m_new)
    beta = ufuncs.exp(m_blk - m_new)
    l_new = alpha * l_prev + beta * l_blk
    m_ref[...], l_ref[...] = m_new, l_new
    v = v_copy.wait_and_get_loaded()
    pv = np_einsum.einsum("gt,td->gd", p, v)
    o_ref[...] = ((l_prev * alpha * o_ref[...] + beta * pv) / l_new).astype(o_ref.dtype)


def paged_flash_attention_kernel_inline_seq_dim(
    lengths_ref, page_indices_ref, buffer_index_ref, init_flag_ref, q_ref, k_pages_hbm_ref,
    k_scales_pages_hbm_ref, v_pages_hbm_ref, v_scales_pages_hbm_ref, o_ref, m_ref, l_ref,
    k_vmem_buffer, k_scales_vmem_buffer, v_vmem_buffer, v_scales_vmem_buffer, k_sems, v_sems,
    *, batch_size: int, pages_per_compute_block: int, pages_per_sequence: int,
    mask_value: float, attn_logits_soft_cap: float | None, megacore_mode: str | None):
  """`paged_flash_attention_kernel` over every block of one (sequence, kv head) in a loop."""
  core, b, h = (primitives.program_id(a) for a in range(3))
  m_ref[...] = creation.full(m_ref.shape, -np.inf, m_ref.dtype)
  l_ref[...] = creation.zeros(l_ref.shape, l_ref.dtype)
  o_ref[...] = creation.zeros(o_ref.shape, o_ref.dtype)
  refs = (lengths_ref, page_indices_ref, buffer_index_ref, init_flag_ref, q_ref,
          k_pages_hbm_ref, k_scales_pages_hbm_ref, v_pages_hbm_ref, v_scales_pages_hbm_ref,
          o_ref, m_ref, l_ref, k_vmem_buffer, k_scales_vmem_buffer, v_vmem_buffer,
          v_scales_vmem_buffer, k_sems, v_sems)

  def body(i, carry):
    paged_flash_attention_kernel(
        *refs, batch_size=batch_size, pages_per_compute_block=pages_per_compute_block,
        pages_per_sequence=pages_per_sequence, mask_value=mask_value,
        attn_logits_soft_cap=attn_logits_soft_cap, megacore_mode=megacore_mode,
        program_ids=(core, b, h, i))
    return carry

  block = pages_per_compute_block * k_pages_hbm_ref.shape[-2]
  if megacore_mode == "batch":
    length = lengths_ref[b * primitives.num_programs(0) + core]
  else:
    length = lengths_ref[b]
  loops.fori_loop(0, lax.div(length + block - 1, block), body, ())


def _split_quantized(pages):
  if isinstance(pages, QuantizedTensor):
    w, s = pages.weight, pages.scales
    return w, lax_numpy.broadcast_to(s, (*s.shape[:-1], w.shape[-1]))
  return pages, None


@functools.partial(jit.jit, static_argnames=["pages_per_compute_block", "attn_logits_soft_cap",
                                             "mask_value", "megacore_mode", "inline_seq_dim"])
def paged_attention(q, k_pages, v_pages, lengths, page_indices, *,
                    mask_value: float = DEFAULT_MASK_VALUE,
                    attn_logits_soft_cap: float | None = None, pages_per_compute_block: int,
                    megacore_mode: str | None = None, inline_seq_dim: bool = True):
  """Grouped-query attention of q [batch, num_q_heads, head_dim] over paged keys and values
  [num_kv_heads, total_pages, page_size, head_dim] (or QuantizedTensors of them): sequence b
  has `lengths[b]` positions on the pages `page_indices[b]`. `megacore_mode` ('kv_head',
  'batch' or None) splits the work over two cores."""
  k_pages, k_scales = _split_quantized(k_pages)
  v_pages, v_scales = _split_quantized(v_pages)
  batch_size, num_q_heads, head_dim = q.shape
  num_kv_heads, _, page_size, _ = k_pages.shape
  batch_size_pages, pages_per_sequence = page_indices.shape
  helpers._check_paged_kv(num_q_heads, head_dim, k_pages, v_pages)
  if pages_per_sequence % pages_per_compute_block:
    raise ValueError("pages_per_compute_block must be divisible by pages per sequence. Got "
                     f"{pages_per_compute_block} and {pages_per_sequence}.")
  if lengths.shape != (batch_size,):
    raise ValueError("`lengths` and `q` must have the same batch size")
  if batch_size_pages != batch_size:
    raise ValueError("`page_indices` and `q` must have the same batch size")
  if lengths.dtype != np.int32:
    raise ValueError(f"The dtype of `lengths` must be int32. Got {lengths.dtype}")
  if megacore_mode == "kv_head":
    if num_kv_heads % 2:
      raise ValueError("number of KV heads must be even when megacore_mode is 'kv_head'")
    cores = 2
  elif megacore_mode == "batch":
    if batch_size % 2:
      raise ValueError("batch size must be even when megacore_mode is 'batch'")
    cores = 2
  elif megacore_mode is None:
    cores = 1
  else:
    raise ValueError("megacore_mode must be one of ['kv_head', 'batch', None]")

  groups = num_q_heads // num_kv_heads
  # Few groups: q gets a unit axis (and runs in float32), as JAX does for its TPU layouts.
  unit_axis = groups % 8 != 0
  if unit_axis:
    q = q.reshape(batch_size, num_q_heads, 1, head_dim)
  kernel_dtype = _F32 if unit_axis else q.dtype
  tail = (0, 0) if unit_axis else (0,)
  block_shape = (None, groups, None, head_dim) if unit_axis else (None, groups, head_dim)

  def q_map(core, b, h, *_):
    if megacore_mode == "kv_head":
      return (b, h * cores + core, *tail)
    if megacore_mode == "batch":
      return (b * cores + core, h, *tail)
    return (b, h, *tail)

  q_spec = pallas_core.BlockSpec(block_shape, q_map)
  grid = (cores, batch_size // cores if megacore_mode == "batch" else batch_size,
          num_kv_heads // cores if megacore_mode == "kv_head" else num_kv_heads)
  if inline_seq_dim:
    kernel = paged_flash_attention_kernel_inline_seq_dim
    semantics = ("parallel", "arbitrary", "arbitrary")
  else:
    kernel = paged_flash_attention_kernel
    grid = (*grid, pages_per_sequence // pages_per_compute_block)
    semantics = ("parallel", "arbitrary", "arbitrary", "arbitrary")

  def buffer(dtype):   # two buffers of one block each (double buffering)
    return tpu.MemorySpace.VMEM((2, pages_per_compute_block, page_size, head_dim), dtype)

  any_spec = pallas_core.BlockSpec(memory_space=pallas_core.MemorySpace.ANY)
  quantized = k_scales is not None and v_scales is not None
  in_specs = [q_spec, any_spec, any_spec if quantized else None, any_spec,
              any_spec if quantized else None]
  scratch = (buffer(k_pages.dtype), buffer(k_scales.dtype) if quantized else None,
             buffer(v_pages.dtype), buffer(v_scales.dtype) if quantized else None,
             tpu.SemaphoreType.DMA((2,)), tpu.SemaphoreType.DMA((2,)))
  stats = ShapeDtypeStruct((*q.shape[:-1], 1), _F32)
  out, _, _ = pallas_call.pallas_call(
      functools.partial(kernel, pages_per_sequence=pages_per_sequence, batch_size=batch_size,
                        pages_per_compute_block=pages_per_compute_block,
                        mask_value=mask_value, attn_logits_soft_cap=attn_logits_soft_cap,
                        megacore_mode=megacore_mode),
      grid_spec=tpu.PrefetchScalarGridSpec(
          num_scalar_prefetch=4, in_specs=in_specs, out_specs=[q_spec, q_spec, q_spec],
          grid=grid, scratch_shapes=scratch),
      compiler_params=tpu.CompilerParams(dimension_semantics=semantics),
      out_shape=[ShapeDtypeStruct(q.shape, kernel_dtype), stats, stats],
  )(lengths, page_indices.reshape(-1), creation.zeros((1,), np.int32),
    creation.ones((1,), np.int32), q.astype(kernel_dtype), k_pages, k_scales, v_pages,
    v_scales)
  return out.reshape(batch_size, num_q_heads, head_dim).astype(q.dtype)
