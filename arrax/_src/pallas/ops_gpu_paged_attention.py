"""Paged grouped-query decode attention as a Triton-style Pallas kernel
(jax.experimental.pallas.ops.gpu.paged_attention): k and v live in pages
[kv_heads, pages, page_size, head_dim] gathered through per-sequence block tables; a kernel
instance handles (kv head, block of its q heads, partition of the pages) with an online
softmax, and the partitions are merged outside. Off-GPU it runs with `interpret=True`."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from arrax._src import batching, dtypes, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.indexing import ds
from arrax._src.lax.control_flow import conditionals, loops
from arrax._src.nn import functions as nn
from arrax._src.numpy import creation, einsum as einsum_lib, lax_numpy, padding, ufuncs
from arrax._src.pallas import core as pallas_core, helpers, pallas_call, primitives, triton

DEFAULT_MASK_VALUE = -0.7 * float(np.finfo(np.dtype("float32")).max)
_F32 = np.dtype(np.float32)
_LOG2_E = math.log2(math.e)


def paged_attention_kernel(q_ref, k_pages_ref, k_scales_pages_ref, v_pages_ref,
                           v_scales_pages_ref, block_tables_ref, lengths_ref, o_ref,
                           *residual_refs: Any, num_heads: int, pages_per_compute_block: int,
                           mask_value: float, attn_logits_soft_cap: float | None):
  """One (kv head, q-head block, page partition): loops over groups of
  `pages_per_compute_block` pages, writing the unnormalized output and the softmax row sums
  and maxima of the partition."""
  part = primitives.program_id(2)
  block_h, head_dim = q_ref.shape
  page_size = k_pages_ref.shape[-2]
  pages_per_partition = block_tables_ref.shape[0]
  block_k = pages_per_compute_block * page_size

  def compute(first_page, stop_page, o, m, l):
    q = q_ref[ds(0, block_h), :]

    def body(ki, carry):
      acc, m_prev, l_prev = carry
      pages = block_tables_ref[ds(ki * pages_per_compute_block, pages_per_compute_block)]
      k = k_pages_ref[pages].reshape(block_k, head_dim)
      v = v_pages_ref[pages].reshape(block_k, head_dim)
      if k_scales_pages_ref is not None:
        k = k.astype(q.dtype)
      s = primitives.dot(q, k.T)
      if k_scales_pages_ref is not None:
        s = s * k_scales_pages_ref[pages].reshape((1, block_k)).astype(s.dtype)
      if attn_logits_soft_cap is not None:
        s = ufuncs.tanh(s / attn_logits_soft_cap) * attn_logits_soft_cap
      if lengths_ref is not None:
        first_token = (part * pages_per_partition + ki * pages_per_compute_block) * page_size
        inside = creation.arange(block_k) + first_token < lengths_ref[0]
        s = lax_numpy.where(lax_numpy.broadcast_to(inside[None, :], (block_h, block_k)), s,
                            mask_value)
      m_next = ufuncs.maximum(m_prev, s.max(axis=-1))
      rescale = ufuncs.exp2((m_prev - m_next) * _LOG2_E)
      p = ufuncs.exp2((s - m_next[:, None]) * _LOG2_E)
      l_next = rescale * l_prev + p.sum(axis=-1)
      if v_scales_pages_ref is not None:
        p = p * v_scales_pages_ref[pages].reshape((1, block_k)).astype(p.dtype)
        v = v.astype(p.dtype)
      acc = rescale[:, None] * acc + primitives.dot(p.astype(v.dtype), v)
      return acc, m_next, l_next

    steps = helpers.cdiv(stop_page - first_page, pages_per_compute_block)
    return loops.fori_loop(0, steps, body, (o, m, l))

  m = creation.zeros(block_h, _F32) + dtypes.finfo(_F32).min
  l = creation.zeros(block_h, _F32)
  o = creation.zeros((block_h, head_dim), _F32)
  first_page = part * pages_per_partition
  stop_page = first_page + pages_per_partition
  if lengths_ref is None:
    o, m, l = compute(first_page, stop_page, o, m, l)
  else:
    stop_page = ufuncs.minimum(helpers.cdiv(lengths_ref[0], page_size), stop_page)
    o, m, l = conditionals.cond(first_page >= stop_page, lambda: (o, m, l),
                                lambda: compute(first_page, stop_page, o, m, l))
  o_ref[...] = o.astype(o_ref.dtype)
  l_ref, m_ref = residual_refs
  l_ref[...] = l
  m_ref[...] = m


def paged_attention_unbatched(q, k_pages, v_pages, block_tables, lengths, k_scales_pages=None,
                              v_scales_pages=None, *, block_h: int,
                              pages_per_compute_block: int, k_splits: int, num_warps: int,
                              num_stages: int, interpret: bool, debug: bool,
                              mask_value: float, attn_logits_soft_cap: float | None):
  """Paged attention of one sequence: q [q_heads, head_dim], block_tables
  [pages_per_sequence], lengths [1] or None."""
  q_heads, head_dim = q.shape
  kv_heads, total_pages, page_size, _ = k_pages.shape
  pages_per_sequence = block_tables.shape[0]
  assert pages_per_sequence % k_splits == 0, (
      f"pages_per_sequence={pages_per_sequence} must be divisible by k_splits={k_splits}.")
  pages_per_partition = pages_per_sequence // k_splits
  pages_per_compute_block = min(pages_per_partition, pages_per_compute_block)
  assert pages_per_partition % pages_per_compute_block == 0, (
      f"pages_per_partition={pages_per_partition} must de divisible by "
      f"pages_per_compute_block={pages_per_compute_block}.")
  block_tables = block_tables.reshape(k_splits, pages_per_partition)
  group = q_heads // kv_heads
  qg = q.reshape(kv_heads, group, head_dim)
  if group % block_h:
    qg = padding.pad(qg, ((0, 0), (0, -group % block_h), (0, 0)))
  spec = pallas_core.BlockSpec
  scale_spec = lambda s: None if s is None else spec((None, total_pages, page_size),
                                                     lambda h, i, k: (h, 0, 0))
  for s in (k_scales_pages, v_scales_pages):
    if s is not None:
      assert s.shape == (kv_heads, total_pages, page_size)
  pages_spec = spec((None, total_pages, page_size, head_dim), lambda h, i, k: (h, 0, 0, 0))
  kernel = functools.partial(paged_attention_kernel, num_heads=group,
                             pages_per_compute_block=pages_per_compute_block,
                             mask_value=mask_value, attn_logits_soft_cap=attn_logits_soft_cap)
  o, l, m = pallas_call.pallas_call(
      kernel, grid=(kv_heads, helpers.cdiv(group, block_h), k_splits),
      in_specs=[spec((None, block_h, head_dim), lambda h, i, k: (h, i, 0)), pages_spec,
                scale_spec(k_scales_pages), pages_spec, scale_spec(v_scales_pages),
                spec((None, pages_per_partition), lambda h, i, k: (k, 0)),
                None if lengths is None else spec((1,), lambda h, i, k: (0,))],
      out_specs=[spec((None, None, block_h, head_dim), lambda h, i, k: (k, h, i, 0)),
                 spec((None, None, block_h), lambda h, i, k: (k, h, i)),
                 spec((None, None, block_h), lambda h, i, k: (k, h, i))],
      out_shape=[ShapeDtypeStruct((k_splits, *qg.shape), q.dtype),
                 ShapeDtypeStruct((k_splits, *qg.shape[:-1]), _F32),
                 ShapeDtypeStruct((k_splits, *qg.shape[:-1]), _F32)],
      debug=debug, interpret=interpret,
      compiler_params=triton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
      name=f"paged_attention_block_h={block_h}_pages_per_compute_block="
           f"{pages_per_compute_block}",
  )(qg, k_pages, k_scales_pages, v_pages, v_scales_pages, block_tables, lengths)
  if group % block_h:
    o, l, m = o[..., :group, :], l[..., :group], m[..., :group]
  m_all = m.max(axis=0)
  rescale = ufuncs.exp(m - m_all[None])
  o = o * rescale[..., None].astype(o.dtype)
  l_all = (l * rescale).sum(axis=0)
  o = o.sum(axis=0) / (l_all[..., None] + dtypes.finfo(l_all.dtype).eps).astype(o.dtype)
  return o.reshape(q.shape).astype(q.dtype)


@functools.partial(jit.jit, static_argnames=[
    "block_h", "pages_per_compute_block", "k_splits", "num_warps", "num_stages", "interpret",
    "debug", "mask_value", "attn_logits_soft_cap"])
def paged_attention(q, k_pages, v_pages, block_tables, lengths, k_scales_pages=None,
                    v_scales_pages=None, *, block_h: int = 16, pages_per_compute_block: int = 8,
                    k_splits: int = 16, num_warps: int = 8, num_stages: int = 2,
                    interpret: bool = False, debug: bool = False,
                    mask_value: float = DEFAULT_MASK_VALUE,
                    attn_logits_soft_cap: float | None = None):
  """Paged grouped-query attention: q [batch, heads, head_dim] over pages
  [kv_heads, total_pages, page_size, head_dim] located by block_tables
  [batch, pages_per_sequence], the first `lengths` [batch] (int32) tokens of each sequence
  (optionally with per-token k/v scales and a soft cap on the logits)."""
  batch, heads, head_dim = q.shape
  helpers._check_paged_kv(heads, head_dim, k_pages, v_pages)
  if block_tables.shape[0] != batch:
    raise ValueError("`block_tables` and `q` must have the same batch size")
  if lengths is not None:
    if lengths.shape != (batch,):
      raise ValueError("`lengths` and `q` must have the same batch size")
    if lengths.dtype != np.int32:
      raise ValueError("The dtype of `lengths` must be int32. Got {lengths.dtype}")
  if block_h % 16:
    raise ValueError(f"block_h must divisible by 16, but is {block_h}.")
  impl = functools.partial(
      paged_attention_unbatched, block_h=block_h,
      pages_per_compute_block=pages_per_compute_block, k_splits=k_splits,
      num_warps=num_warps, num_stages=num_stages, interpret=interpret, debug=debug,
      mask_value=mask_value, attn_logits_soft_cap=attn_logits_soft_cap)
  return batching.vmap(impl, (0, None, None, 0, 0, None, None), 0)(
      q, k_pages, v_pages, block_tables, None if lengths is None else lengths[..., None],
      k_scales_pages, v_scales_pages)


@functools.partial(jit.jit, static_argnames=["mask_value", "attn_logits_soft_cap"])
def paged_attention_reference(q, k, v, lengths, *, mask_value: float = DEFAULT_MASK_VALUE,
                              attn_logits_soft_cap: float | None = None):
  """Grouped-query attention in plain arrax operations: q [batch, heads, head_dim] over k, v
  [batch, kv_len, kv_heads, head_dim], the first `lengths` [batch] tokens of each."""
  batch, heads, head_dim = q.shape
  kv_len, kv_heads = k.shape[1], k.shape[2]
  qg = q.reshape(batch, kv_heads, heads // kv_heads, head_dim)
  logits = einsum_lib.einsum("bkgd,bksd->bkgs", qg, lax_numpy.swapaxes(k, 1, 2),
                             preferred_element_type=_F32).astype(_F32)
  if attn_logits_soft_cap is not None:
    logits = ufuncs.tanh(logits / attn_logits_soft_cap) * attn_logits_soft_cap
  if lengths is not None:
    inside = creation.arange(kv_len)[None, :] < lengths[:, None]
    logits = lax_numpy.where(lax_numpy.broadcast_to(inside[:, None, None, :], logits.shape),
                             logits, mask_value)
  weights = nn.softmax(logits, axis=-1)
  o = einsum_lib.einsum("bkgs,bksd->bkgd", weights, lax_numpy.swapaxes(v, 1, 2).astype(_F32),
                        preferred_element_type=_F32).astype(q.dtype)
  return o.reshape(q.shape)
