"""Decode attention as a Triton-style Pallas kernel
(jax.experimental.pallas.ops.gpu.decode_attention): one query step attends over a kv cache
split into `k_splits` partitions, each kernel instance running an online softmax over its
partition for a block of heads; the partial results are merged outside the kernel (`mqa`,
`gqa`). Off-GPU it runs with `interpret=True`."""
from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from arrax._src import batching, dtypes, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.indexing import ds
from arrax._src.lax import staging
from arrax._src.lax.control_flow import conditionals, loops
from arrax._src.nn import functions as nn
from arrax._src.numpy import creation, einsum as einsum_lib, lax_numpy, ufuncs
from arrax._src.pallas import core as pallas_core, helpers, pallas_call, primitives, triton

_F32 = np.dtype(np.float32)


def attn_forward_kernel(q_ref, k_ref, v_ref, start_idx_ref, kv_seq_len_ref, o_ref,
                        *residual_refs: Any, sm_scale: float, block_k: int, block_h: int,
                        num_heads: int):
  """Heads block `program_id(0)` over kv partition `program_id(1)`: the unnormalized output
  and (as residuals) the softmax row sums l and maxima m, over the positions in
  [start_idx, kv_seq_len)."""
  part_len = k_ref.shape[0]
  hi, pj = primitives.program_id(0), primitives.program_id(1)
  q_slice = ds(0, block_h)
  q_mask = (creation.arange(block_h) < num_heads - block_h * hi)[:, None]
  offsets = creation.arange(block_k)

  def compute(start, stop, o, m, l):
    q = triton.load(q_ref.at[q_slice, :], mask=q_mask)

    def body(ki, carry):
      acc, m_prev, l_prev = carry
      kv_slice = ds(ki * block_k, block_k)
      s = primitives.dot(q, k_ref[kv_slice, :].T)
      if sm_scale != 1.0:
        s = s * sm_scale
      if start_idx_ref is not None or kv_seq_len_ref is not None:
        pos = pj * part_len + ki * block_k + offsets
        inside = ((pos >= start) & (pos < stop))[None, :]
        s = s + (~inside) * (0.7 * dtypes.finfo(s.dtype).min)
      m_next = ufuncs.maximum(m_prev, s.max(axis=-1))
      rescale = ufuncs.exp(m_prev - m_next)
      p = ufuncs.exp(s - m_next[:, None])
      v = v_ref[kv_slice, :]
      acc = rescale[:, None] * acc + primitives.dot(p.astype(v.dtype), v)
      return acc, m_next, rescale * l_prev + p.sum(axis=-1)

    steps = ufuncs.minimum(helpers.cdiv(stop - pj * part_len, block_k), part_len // block_k)
    return loops.fori_loop(0, steps, body, (o, m, l))

  m = creation.zeros(block_h, _F32) + dtypes.finfo(_F32).min
  l = creation.zeros(block_h, _F32)
  o = creation.zeros((block_h, q_ref.shape[1]), _F32)
  start = part_len * pj
  if start_idx_ref is not None:
    start = ufuncs.maximum(start, start_idx_ref[()])
  stop = (pj + 1) * part_len
  if kv_seq_len_ref is not None:
    stop = ufuncs.minimum(stop, kv_seq_len_ref[()])
  o, m, l = conditionals.cond(start >= stop, lambda: (o, m, l),
                              lambda: compute(start, stop, o, m, l))
  if residual_refs:
    l_ref, m_ref = residual_refs
    triton.store(l_ref.at[q_slice], l, mask=q_mask.reshape(-1))
    triton.store(m_ref.at[q_slice], m, mask=q_mask.reshape(-1))
  triton.store(o_ref.at[q_slice, :], o.astype(o_ref.dtype), mask=q_mask)


def decode_attn_unbatched(q, k, v, start_idx, kv_seq_len, sm_scale: float, block_h: int,
                          block_k: int, k_splits: int, num_warps: int | None, num_stages: int,
                          grid: tuple[int, ...] | None, interpret: bool, debug: bool,
                          return_residuals: bool, normalize_output: bool):
  """Decode attention of q [heads, head_dim] over k, v [kv_len, head_dim]: the kernel over
  (head blocks, kv partitions), then the partitions merged."""
  heads, head_dim = q.shape
  kv_len = k.shape[0]
  if grid is None:
    grid = (helpers.cdiv(heads, block_h), k_splits)
  assert kv_len % k_splits == 0, f"k_seq_len={kv_len} must be divisible by k_splits={k_splits}"
  assert kv_len // k_splits >= 16, (
      f"k_seq_len={kv_len} divided by k_splits={k_splits} must be >= 16.")
  assert block_k >= 16, "block_k must be >= 16"
  part_len = kv_len // k_splits
  k = k.reshape(k_splits, part_len, head_dim)
  v = v.reshape(k_splits, part_len, head_dim)
  block_k = min(block_k, part_len)
  assert part_len % block_k == 0, (
      f"Sequence length (k_seq_len={kv_len}) split by k_splits={k_splits} must by divisible "
      f"by block_k={block_k}")
  kernel = functools.partial(attn_forward_kernel, sm_scale=sm_scale, block_k=block_k,
                             block_h=block_h, num_heads=heads)
  spec = pallas_core.BlockSpec
  scalar = lambda x: None if x is None else spec((), lambda i, j: ())
  o, l, m = pallas_call.pallas_call(
      kernel, grid=grid,
      in_specs=[spec((block_h, head_dim), lambda i, j: (i, 0)),
                spec((None, part_len, head_dim), lambda i, j: (j, 0, 0)),
                spec((None, part_len, head_dim), lambda i, j: (j, 0, 0)),
                scalar(start_idx), scalar(kv_seq_len)],
      out_specs=[spec((None, block_h, head_dim), lambda i, j: (j, i, 0)),
                 spec((None, block_h), lambda i, j: (j, i)),
                 spec((None, block_h), lambda i, j: (j, i))],
      compiler_params=triton.CompilerParams(num_warps=4 if num_warps is None else num_warps,
                                            num_stages=num_stages),
      out_shape=[ShapeDtypeStruct((k_splits, *q.shape), q.dtype),
                 ShapeDtypeStruct((k_splits, heads), _F32),
                 ShapeDtypeStruct((k_splits, heads), _F32)],
      debug=debug, interpret=interpret, name="mha_forward")(q, k, v, start_idx, kv_seq_len)
  m_all = staging.optimization_barrier(m.max(axis=0))
  rescale = ufuncs.exp(m - m_all[None])
  o = (o * rescale[:, :, None].astype(o.dtype)).sum(axis=0)
  l_all = (l * rescale).sum(axis=0)
  if normalize_output:
    o = o / (l_all[:, None].astype(o.dtype) + dtypes.finfo(l_all.dtype).eps)
  return (o, (l_all, m_all)) if return_residuals else o


_STATIC = ["sm_scale", "block_h", "block_k", "k_splits", "num_warps", "num_stages", "grid",
           "interpret", "debug", "return_residuals", "normalize_output"]


def _inner(sm_scale, q, **kw):
  return functools.partial(
      decode_attn_unbatched,
      sm_scale=sm_scale if sm_scale is not None else 1 / math.sqrt(q.shape[-1]), **kw)


@functools.partial(jit.jit, static_argnames=_STATIC)
def mqa(q, k, v, start_idx=None, kv_seq_len=None, sm_scale: float | None = None,
        block_h: int = 16, block_k: int = 256, k_splits: int = 16, num_warps: int | None = None,
        num_stages: int = 2, grid: tuple[int, ...] | None = None, interpret: bool = False,
        debug: bool = False, return_residuals: bool = False, normalize_output: bool = True):
  """Multi-query decode attention: q [batch, heads, head_dim] over k, v [batch, kv_len,
  head_dim], attending to positions in [start_idx, kv_seq_len) (each [batch] or scalar)."""
  batch = q.shape[0]
  if start_idx is not None:
    start_idx = lax_numpy.broadcast_to(start_idx, (batch,))
  if kv_seq_len is not None:
    kv_seq_len = lax_numpy.broadcast_to(kv_seq_len, (batch,))
  inner = _inner(sm_scale, q, block_h=block_h, block_k=block_k, k_splits=k_splits,
                 num_warps=num_warps, num_stages=num_stages, grid=grid, interpret=interpret,
                 debug=debug, return_residuals=return_residuals,
                 normalize_output=normalize_output)
  return batching.vmap(inner)(q, k, v, start_idx, kv_seq_len)


def _per_kv_head(x, batch, kv_heads):
  if x is None:
    return None
  assert x.ndim in (0, 1)
  return lax_numpy.broadcast_to(creation.asarray(x)[..., None], (batch, kv_heads))


@functools.partial(jit.jit, static_argnames=_STATIC)
def gqa(q, k, v, start_idx=None, kv_seq_len=None, sm_scale: float | None = None,
        block_h: int = 16, block_k: int = 128, k_splits: int = 16, num_warps: int | None = None,
        num_stages: int = 2, grid: tuple[int, ...] | None = None, interpret: bool = False,
        debug: bool = False, return_residuals: bool = False, normalize_output: bool = True):
  """Grouped-query decode attention: q [batch, q_heads, head_dim] over k, v [batch, kv_len,
  kv_heads, head_dim] (q_heads a multiple of kv_heads); with `return_residuals` also the
  softmax row sums and maxima [batch, q_heads]."""
  if not normalize_output and not return_residuals:
    raise NotImplementedError(
        "When normalize_output is False, attention residuals must be returned.")
  batch, q_heads, head_dim = q.shape
  kv_heads = k.shape[2]
  assert kv_heads == v.shape[2]
  assert q_heads % kv_heads == 0
  start_idx = _per_kv_head(start_idx, batch, kv_heads)
  kv_seq_len = _per_kv_head(kv_seq_len, batch, kv_heads)
  inner = _inner(sm_scale, q, block_h=block_h, block_k=block_k, k_splits=k_splits,
                 num_warps=num_warps, num_stages=num_stages, grid=grid, interpret=interpret,
                 debug=debug, return_residuals=return_residuals,
                 normalize_output=normalize_output)
  outs = batching.vmap(batching.vmap(inner))(
      q.reshape(batch, kv_heads, q_heads // kv_heads, head_dim),
      lax_numpy.swapaxes(k, 1, 2), lax_numpy.swapaxes(v, 1, 2), start_idx, kv_seq_len)
  if return_residuals:
    o, (l, m) = outs
    return (o.reshape(batch, q_heads, head_dim),
            (l.reshape(batch, q_heads), m.reshape(batch, q_heads)))
  return outs.reshape(batch, q_heads, head_dim)


def _range_penalty(logits, k_len, start_idx, kv_seq_len, batch, expand):
  """`logits` plus 0.7 * finfo.min outside [start_idx, kv_seq_len) (if either is given)."""
  if start_idx is None and kv_seq_len is None:
    return logits
  start_idx = lax_numpy.broadcast_to(0 if start_idx is None else start_idx, (batch,))
  kv_seq_len = lax_numpy.broadcast_to(k_len if kv_seq_len is None else kv_seq_len, (batch,))
  pos = creation.arange(k_len)[None, :]
  inside = (pos >= start_idx[:, None]) & (pos < kv_seq_len[:, None])
  inside = inside[(slice(None),) + (None,) * expand + (slice(None),)]
  return logits + (~inside) * (0.7 * dtypes.finfo(logits.dtype).min)


def _scaled_softmax_parts(logits, sm_scale, k_len, start_idx, kv_seq_len, batch, expand,
                          normalize_output):
  """The shared middle of `mqa_reference` and `gqa_reference`: float32 logits scaled, masked to
  [start_idx, kv_seq_len) and softmaxed into (probabilities or exponentials, sums, maxima)."""
  if sm_scale != 1.0:
    logits = logits * sm_scale
  logits = _range_penalty(logits, k_len, start_idx, kv_seq_len, batch, expand)
  return _softmax_parts(logits, normalize_output)


def _softmax_parts(logits, normalize_output):
  m = logits.max(axis=-1)
  s = ufuncs.exp(logits - m[..., None])
  l = s.sum(axis=-1)
  return (s / l[..., None] if normalize_output else s), l, m


@functools.partial(jit.jit, static_argnames=["sm_scale", "return_residuals",
                                             "normalize_output"])
def mqa_reference(q, k, v, start_idx=None, kv_seq_len=None, sm_scale=None,
                  return_residuals=False, normalize_output=True):
  """Multi-query decode attention in plain arrax operations (float32 logits)."""
  out_dtype = q.dtype
  q, k = q.astype(_F32), k.astype(_F32)
  sm_scale = sm_scale if sm_scale is not None else 1 / math.sqrt(q.shape[-1])
  logits = einsum_lib.einsum("bnd,bsd->bns", q, k).astype(_F32)
  s, l, m = _scaled_softmax_parts(logits, sm_scale, k.shape[1], start_idx, kv_seq_len,
                                  q.shape[0], 1, normalize_output)
  o = einsum_lib.einsum("bns,bsd->bnd", s, v).astype(out_dtype)
  return (o, (l, m)) if return_residuals else o


@functools.partial(jit.jit, static_argnames=["sm_scale"])
def mha_reference(q, k, v, start_idx=None, kv_seq_len=None, sm_scale=None):
  """Multi-head decode attention in plain arrax operations: q [batch, heads, head_dim] over
  k, v [batch, kv_len, heads, head_dim]."""
  sm_scale = sm_scale if sm_scale is not None else 1 / math.sqrt(q.shape[-1])
  assert q.shape[1] == k.shape[2]
  logits = einsum_lib.einsum("bnd,bsnd->bns", q, k).astype(_F32)
  logits = _range_penalty(logits, k.shape[1], start_idx, kv_seq_len, q.shape[0], 1)
  weights = nn.softmax(logits * sm_scale).astype(q.dtype)
  return einsum_lib.einsum("bns,bsnd->bnd", weights, v)


@functools.partial(jit.jit, static_argnames=["sm_scale", "return_residuals",
                                             "normalize_output"])
def gqa_reference(q, k, v, start_idx=None, kv_seq_len=None, sm_scale=None,
                  return_residuals=False, normalize_output=True):
  """Grouped-query decode attention in plain arrax operations (float32 logits)."""
  out_dtype = q.dtype
  q, k = q.astype(_F32), k.astype(_F32)
  sm_scale = sm_scale if sm_scale is not None else 1 / math.sqrt(q.shape[-1])
  batch, q_heads, head_dim = q.shape
  kv_heads = k.shape[2]
  assert q_heads % kv_heads == 0
  qg = q.reshape(batch, kv_heads, q_heads // kv_heads, head_dim)
  logits = einsum_lib.einsum("bkgd,bksd->bkgs", qg, lax_numpy.swapaxes(k, 1, 2)).astype(_F32)
  s, l, m = _scaled_softmax_parts(logits, sm_scale, k.shape[1], start_idx, kv_seq_len, batch, 2,
                                  normalize_output)
  o = einsum_lib.einsum("bkgs,bksd->bkgd", s, lax_numpy.swapaxes(v, 1, 2)).astype(out_dtype)
  o = o.reshape(batch, q_heads, head_dim)
  if return_residuals:
    return o, (l.reshape(batch, q_heads), m.reshape(batch, q_heads))
  return o
