"""Fused (flash) attention as Triton-style Pallas kernels
(jax.experimental.pallas.ops.gpu.attention): the forward kernel runs per (q block, batch,
head) with an online softmax in base 2 over kv blocks; the custom VJP is a preprocessing
kernel (delta = rowsum(o * do)) and one fused kernel per (batch, head, block) computing dk,
dv over q blocks and dq over kv blocks. Off-GPU they run with `interpret=True`."""
from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any

import numpy as np

from arrax._src import ad_api, custom_derivatives, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.environment import named_scope
from arrax._src.indexing import ds
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import loops
from arrax._src.nn import functions as nn
from arrax._src.numpy import creation, einsum as einsum_lib, index_tricks, lax_numpy, ufuncs
from arrax._src.pallas import core as pallas_core, helpers, pallas_call, primitives, triton

DEFAULT_MASK_VALUE = -0.7 * float(np.finfo(np.dtype("float32")).max)
_F32 = np.dtype(np.float32)
_LOG2_E = math.log2(math.e)


@dataclasses.dataclass(frozen=True, slots=True)
class BlockSizes:
  """Tile sizes of the attention kernels: `block_q`/`block_k` for the forward kernel, the
  `*_dkv` and `*_dq` ones for the two halves of the fused backward kernel."""
  block_q: int
  block_k: int
  block_q_dkv: int | None = None
  block_kv_dkv: int | None = None
  block_q_dq: int | None = None
  block_kv_dq: int | None = None

  @classmethod
  def get_default(cls):
    return BlockSizes(block_q=128, block_k=128, block_q_dkv=32, block_kv_dkv=32,
                      block_q_dq=32, block_kv_dq=32)

  @property
  def has_backward_blocks(self) -> bool:
    """Whether every backward block size is set."""
    return None not in (self.block_q_dkv, self.block_kv_dkv, self.block_q_dq,
                        self.block_kv_dq)


def segment_mask(q_segment_ids, kv_segment_ids):
  """Where q and kv positions share a segment: [T, S] from [T] and [S] ids, or [B, T, S]
  from [B, T] and [B, S]."""
  q = lax_numpy.expand_dims(q_segment_ids, -1)
  kv = lax_numpy.expand_dims(kv_segment_ids, 0 if kv_segment_ids.ndim == 1 else 1)
  return ufuncs.equal(q, kv).astype(np.bool_)


def _log2_logits(q, k, sm_scale):
  """q k^T scaled by `sm_scale` and by log2(e) (the kernels exponentiate in base 2)."""
  scale = _LOG2_E * sm_scale if sm_scale != 1. else _LOG2_E
  return primitives.dot(q, k.T) * scale


def _masked(logits, seg_ref, q_slice, kv_slice, span_q, span_k, causal):
  """`logits` with DEFAULT_MASK_VALUE where segments differ or (causal) k is after q."""
  if not causal and seg_ref is None:
    return logits
  mask = None
  if seg_ref is not None:
    mask = segment_mask(seg_ref[q_slice], seg_ref[kv_slice])
  if causal:
    after = span_q()[:, None] >= span_k()[None, :]
    mask = after if mask is None else ufuncs.logical_and(mask, after)
  return lax_numpy.where(mask, logits, DEFAULT_MASK_VALUE)


def _span(start, block):
  return lambda: start * block + creation.arange(block)


def mha_forward_kernel(q_ref, k_ref, v_ref, segment_ids_ref, o_ref, *residual_refs,
                       sm_scale: float, causal: bool, block_q: int, block_k: int,
                       head_dim: int):
  """One q block of one (batch, head): loops over kv blocks keeping the running row maximum
  and sum (base 2), writes o and (if given a residual ref) the log2-sum-exp."""
  kv_len = k_ref.shape[0]
  qi = primitives.program_id(0)
  padded = q_ref.shape[-1]
  head_mask = (creation.arange(padded) < head_dim)[None, :]
  q = triton.load(q_ref, mask=head_mask, other=0.0)
  q_slice = ds(qi * block_q, block_q)

  def body(ki, carry):
    acc, m_prev, l_prev = carry
    kv_slice = ds(ki * block_k, block_k)
    k = triton.load(k_ref.at[kv_slice, :], mask=head_mask, other=0.0)
    s = _masked(_log2_logits(q, k, sm_scale), segment_ids_ref, q_slice, kv_slice,
                _span(qi, block_q), _span(ki, block_k), causal)
    m_next = ufuncs.maximum(m_prev, s.max(axis=-1))
    rescale = ufuncs.exp2(m_prev - m_next)
    p = ufuncs.exp2(s - m_next[:, None])
    v = triton.load(v_ref.at[kv_slice, :], mask=head_mask)
    acc = rescale[:, None] * acc + primitives.dot(p.astype(v.dtype), v)
    return acc, m_next, rescale * l_prev + p.sum(axis=-1)

  if causal:
    stop = lax.div(block_q * (qi + 1) + block_k - 1, block_k)
  else:
    stop = helpers.cdiv(kv_len, block_k)
  init = (creation.zeros((block_q, padded), _F32),
          creation.zeros(block_q, _F32) - float("inf"), creation.zeros(block_q, _F32))
  acc, m, l = loops.fori_loop(0, stop, body, init)
  acc = acc / l[:, None]
  if residual_refs:
    residual_refs[0][...] = m + ufuncs.log2(l)
  triton.store(o_ref.at[:, :acc.shape[-1]], acc.astype(o_ref.dtype), mask=head_mask)


def _qkv_spec(block, index_map):
  return pallas_core.BlockSpec((None, block[0], None, block[1]), index_map)


@functools.partial(custom_derivatives.custom_vjp,
                   nondiff_argnums=(4, 5, 6, 7, 8, 9, 10, 11, 12, 13))
@functools.partial(jit.jit, static_argnames=[
    "sm_scale", "causal", "block_sizes", "backward_pass_impl", "num_warps", "num_stages",
    "grid", "interpret", "debug", "return_residuals"])
def mha(q, k, v, segment_ids, sm_scale: float = 1.0, causal: bool = False,
        block_sizes: BlockSizes = BlockSizes.get_default(), backward_pass_impl: str = "triton",
        num_warps: int | None = None, num_stages: int = 2, grid: tuple[int, ...] | None = None,
        interpret: bool = False, debug: bool = False, return_residuals: bool = False):
  """Multi-head attention of q [batch, q_len, heads, head_dim] over k, v [batch, kv_len,
  heads, head_dim] (optional segment ids [batch, len], causal masking), blockwise; with
  `return_residuals` also the log2-sum-exp [batch, heads, q_len]."""
  del backward_pass_impl
  batch, q_len, heads, head_dim = q.shape
  kv_len = k.shape[1]
  block_q = min(block_sizes.block_q, q_len)
  block_k = min(block_sizes.block_k, kv_len)
  padded = helpers.next_power_of_2(head_dim)
  if q.shape[-1] != k.shape[-1] or q.shape[-1] != v.shape[-1]:
    raise ValueError("This kernel expects q, k, and v to have the same head dimension, but "
                     f"found {q.shape=}, {k.shape=}, {v.shape=}.")
  if q_len % block_q:
    raise ValueError(f"q_seq_len={q_len} must be a multiple of block_q={block_q}")
  if kv_len % block_k:
    raise ValueError(f"kv_seq_len={kv_len} must be a multiple of block_k={block_k}")
  if grid is None:
    grid = (helpers.cdiv(q_len, block_q), batch, heads)
  if num_warps is None:
    num_warps = 4 if head_dim <= 64 else 8
  kernel = functools.partial(mha_forward_kernel, sm_scale=sm_scale, block_q=block_q,
                             block_k=block_k, head_dim=head_dim, causal=causal)
  q_map = lambda i, j, h: (j, i, h, 0)
  kv_map = lambda _, j, h: (j, 0, h, 0)
  in_specs = [_qkv_spec((block_q, padded), q_map), _qkv_spec((kv_len, padded), kv_map),
              _qkv_spec((kv_len, padded), kv_map),
              None if segment_ids is None
              else pallas_core.BlockSpec((None, kv_len), lambda _, j, h: (j, 0))]
  out_shape = [ShapeDtypeStruct(q.shape, q.dtype)]
  out_specs = [_qkv_spec((block_q, padded), q_map)]
  if return_residuals:
    out_shape.append(ShapeDtypeStruct((batch, heads, q_len), _F32))
    out_specs.append(pallas_core.BlockSpec((None, None, block_q), lambda i, j, h: (j, h, i)))
  out = pallas_call.pallas_call(
      kernel, grid=grid, in_specs=in_specs, out_specs=out_specs, out_shape=out_shape,
      compiler_params=triton.CompilerParams(num_warps=num_warps, num_stages=num_stages),
      debug=debug, interpret=interpret, name="mha_forward")(q, k, v, segment_ids)
  return out if return_residuals else out[0]


def _mha_forward(q, k, v, segment_ids, sm_scale, causal, block_sizes, backward_pass_impl,
                 num_warps, num_stages, grid, interpret, debug, return_residuals):
  out, lse = mha(q, k, v, segment_ids=segment_ids, sm_scale=sm_scale, causal=causal,
                 block_sizes=block_sizes, backward_pass_impl=backward_pass_impl,
                 num_warps=num_warps, num_stages=num_stages, grid=grid, interpret=interpret,
                 debug=debug, return_residuals=True)
  return ((out, lse) if return_residuals else out), (q, k, v, segment_ids, out, lse)


def _preprocess_backward_kernel(out_ref, dout_ref, delta_ref, head_dim: int):
  head_mask = (creation.arange(out_ref.shape[-1]) < head_dim)[None, :]
  o = triton.load(out_ref, mask=head_mask, other=0.0)
  do = triton.load(dout_ref, mask=head_mask, other=0.0)
  delta_ref[...] = (o * do).sum(axis=1).astype(delta_ref.dtype)


def _preprocess_backward(out, do, lse, block_q: int, debug: bool, interpret: bool):
  """delta = rowsum(o * do) [batch, heads, q_len], one kernel per (q block, batch, head)."""
  with named_scope("preprocess_backward"):
    batch, q_len, heads, head_dim = out.shape
    padded = helpers.next_power_of_2(head_dim)
    spec = _qkv_spec((block_q, padded), lambda i, j, h: (j, i, h, 0))
    return pallas_call.pallas_call(
        functools.partial(_preprocess_backward_kernel, head_dim=head_dim),
        grid=(helpers.cdiv(q_len, block_q), batch, heads), in_specs=[spec, spec],
        out_specs=pallas_core.BlockSpec((None, None, block_q), lambda i, j, h: (j, h, i)),
        compiler_params=triton.CompilerParams(num_warps=4, num_stages=3),
        out_shape=ShapeDtypeStruct(lse.shape, lse.dtype), debug=debug, interpret=interpret,
        name="mha_preprocess_backward")(out, do)


def mha_backward_kernel(q_ref, k_ref, v_ref, segment_ids_ref, out_ref, do_scaled_ref, lse_ref,
                        delta_ref, dq_ref, dk_ref, dv_ref, *, sm_scale: float, causal: bool,
                        block_q_dkv: int, block_kv_dkv: int, block_q_dq: int,
                        block_kv_dq: int, head_dim: int):
  """Block `program_id(2)` of one (batch, head): dk and dv of that kv block (looping over q
  blocks), then dq of that q block (looping over kv blocks), from the saved log2-sum-exp."""
  del out_ref
  q_len, kv_len = q_ref.shape[0], k_ref.shape[0]
  blk = primitives.program_id(2)
  padded = q_ref.shape[-1]
  head_mask = (creation.arange(padded) < head_dim)[None, :]

  def ds_of(p, lse, di, do, v, bq, bk):
    """(p, ds) of a [bq, bk] tile."""
    p = ufuncs.exp2(p - lse[:, None])
    dp = creation.zeros((bq, bk), _F32) - di[:, None] + primitives.dot(do, v.T)
    d = p * dp
    return p, (d * sm_scale if sm_scale != 1.0 else d)

  # dk, dv of kv block `blk`.
  kv_slice = ds(blk * block_kv_dkv, block_kv_dkv)
  v = triton.load(v_ref.at[kv_slice, :], mask=head_mask, other=0.0)
  k = triton.load(k_ref.at[kv_slice, :], mask=head_mask, other=0.0)

  def over_q(qi, carry):
    dv, dk = carry
    q_slice = ds(qi * block_q_dkv, block_q_dkv)
    q = triton.load(q_ref.at[q_slice, :], mask=head_mask, other=0.0)
    s = _masked(_log2_logits(q, k, sm_scale), segment_ids_ref, q_slice, kv_slice,
                _span(qi, block_q_dkv), _span(blk, block_kv_dkv), causal)
    do = triton.load(do_scaled_ref.at[q_slice, :], mask=head_mask, other=0.0)
    p, d = ds_of(s, lse_ref[q_slice], delta_ref[q_slice], do, v, block_q_dkv, block_kv_dkv)
    dv = dv + primitives.dot(p.astype(do.dtype).T, do)
    return dv, dk + primitives.dot(d.astype(q_ref.dtype).T, q)

  start = lax.div(blk * block_kv_dkv, block_q_dkv) if causal else 0
  zeros = creation.zeros((block_kv_dkv, padded), _F32)
  dv, dk = loops.fori_loop(start, helpers.cdiv(q_len, block_q_dkv), over_q, (zeros, zeros))
  triton.store(dv_ref.at[:, :dv.shape[-1]], dv.astype(dv_ref.dtype), mask=head_mask)
  triton.store(dk_ref.at[:, :dk.shape[-1]], dk.astype(dk_ref.dtype), mask=head_mask)

  # dq of q block `blk`.
  q_slice = ds(blk * block_q_dq, block_q_dq)
  q = triton.load(q_ref.at[q_slice, :], mask=head_mask, other=0.0)
  lse, di = lse_ref[q_slice], delta_ref[q_slice]
  do = triton.load(do_scaled_ref.at[q_slice, :], mask=head_mask, other=0.0)

  def over_kv(ki, dq):
    kv_slice = ds(ki * block_kv_dq, block_kv_dq)
    k = triton.load(k_ref.at[kv_slice, :], mask=head_mask, other=0.0)
    v = triton.load(v_ref.at[kv_slice, :], mask=head_mask, other=0.0)
    s = _masked(_log2_logits(q, k, sm_scale), segment_ids_ref, q_slice, kv_slice,
                _span(blk, block_q_dq), _span(ki, block_kv_dq), causal)
    _, d = ds_of(s, lse, di, do, v, block_q_dq, block_kv_dq)
    return dq + primitives.dot(d.astype(k.dtype), k).astype(dq.dtype)

  stop = (helpers.cdiv((blk + 1) * block_q_dq, block_kv_dq) if causal
          else helpers.cdiv(kv_len, block_kv_dq))
  dq = loops.fori_loop(0, stop, over_kv, creation.zeros((block_q_dq, padded), _F32))
  triton.store(dq_ref.at[:, :dq.shape[-1]], dq.astype(dq_ref.dtype), mask=head_mask)


def _mha_backward(sm_scale: float, causal: bool, block_sizes: BlockSizes,
                  backward_pass_impl: str, num_warps: int | None, num_stages: int, grid: Any,
                  interpret: bool, debug: bool, return_residuals: bool, res, do):
  if return_residuals:
    raise ValueError("Kernel differentiation is not supported if return_residuals is True.")
  q, k, v, segment_ids, out, lse = res
  if backward_pass_impl == "xla":
    ref = functools.partial(mha_reference, sm_scale=sm_scale, causal=causal)
    return ad_api.vjp(ref, q, k, v, segment_ids)[1](do)
  if backward_pass_impl != "triton":
    raise ValueError(f"Invalid backward pass implementation: {backward_pass_impl}")
  if not block_sizes.has_backward_blocks:
    raise ValueError("Backward block sizes must all be set.")
  batch, q_len, heads, head_dim = q.shape
  kv_len = k.shape[1]
  bs = block_sizes
  block_q = min(bs.block_q, q_len)
  block_q_dkv, block_kv_dkv = min(bs.block_q_dkv, q_len), min(bs.block_kv_dkv, kv_len)
  block_q_dq, block_kv_dq = min(bs.block_q_dq, q_len), min(bs.block_kv_dq, kv_len)
  padded = helpers.next_power_of_2(head_dim)
  if q_len // block_q_dq != kv_len // block_kv_dkv:
    raise ValueError("q_seq_len and kv_seq_len must be divided into the same number of "
                     "blocks for the fused backward pass.")
  delta = _preprocess_backward(out, do, lse, block_q, debug, interpret)
  whole = lambda n: _qkv_spec((n, padded), lambda b, h, _: (b, 0, h, 0))
  rows = pallas_core.BlockSpec((None, None, q_len), lambda b, h, _: (b, h, 0))
  seg = (None if segment_ids is None
         else pallas_core.BlockSpec((None, kv_len), lambda b, h, _: (b, 0)))
  in_specs = [whole(q_len), whole(kv_len), whole(kv_len), seg, whole(q_len), whole(q_len),
              rows, rows]
  if num_warps is None:
    small = block_q_dkv * block_kv_dkv < 128 * 128 or block_q_dq * block_kv_dq < 128 * 128
    num_warps = 4 if small else 8
  blocked = lambda n: _qkv_spec((n, padded), lambda b, h, i: (b, i, h, 0))
  dq, dk, dv = pallas_call.pallas_call(
      functools.partial(mha_backward_kernel, sm_scale=sm_scale, causal=causal,
                        block_q_dkv=block_q_dkv, block_kv_dkv=block_kv_dkv,
                        block_q_dq=block_q_dq, block_kv_dq=block_kv_dq, head_dim=head_dim),
      out_shape=[ShapeDtypeStruct(x.shape, x.dtype) for x in (q, k, v)], in_specs=in_specs,
      grid=(batch, heads, helpers.cdiv(kv_len, block_kv_dkv)),
      out_specs=[blocked(block_q_dq), blocked(block_kv_dkv), blocked(block_kv_dkv)],
      name="mha_backward", debug=debug, interpret=interpret,
      compiler_params=triton.CompilerParams(num_warps=num_warps, num_stages=2),
  )(q, k, v, segment_ids, out, do, lse, delta)
  return dq.astype(q.dtype), dk, dv, None


mha.defvjp(_mha_forward, _mha_backward)


@functools.partial(jit.jit, static_argnames=["sm_scale", "causal"])
def mha_reference(q, k, v, segment_ids, sm_scale=1.0, causal: bool = False):
  """Attention in plain arrax operations (float32 logits and output)."""
  q_len, kv_len = q.shape[1], k.shape[1]
  logits = einsum_lib.einsum("bqhc,bkhc->bhqk", q, k, preferred_element_type=_F32)
  mask = None
  if segment_ids is not None:
    mask = lax_numpy.broadcast_to(
        lax_numpy.expand_dims(segment_mask(segment_ids, segment_ids), 1), logits.shape)
  if causal:
    lower = lax_numpy.broadcast_to(
        index_tricks.tril(creation.ones((1, 1, q_len, kv_len), dtype=np.bool_)), logits.shape)
    mask = lower if mask is None else ufuncs.logical_and(mask, lower)
  if mask is not None:
    logits = lax_numpy.where(mask, logits, float("-inf"))
  weights = nn.softmax(logits * sm_scale)
  return einsum_lib.einsum("bhqk,bkhc->bqhc", weights, v, preferred_element_type=_F32)
