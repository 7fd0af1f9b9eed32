"""Flash attention as TPU Pallas kernels (jax.experimental.pallas.ops.tpu.flash_attention):
softmax((q k^T + ab) * sm_scale, masked by segment ids and causality) v, computed per
(batch block, head, q block) over kv blocks with an online softmax (running row maximum and
sum in scratch buffers), so that no full attention matrix is formed. Its VJP is a second
kernel per (batch, head) recomputing the probabilities from the saved log-sum-exp.
Off-TPU it runs in TPU interpret mode (`pltpu.force_tpu_interpret_mode()`)."""
from __future__ import annotations

import dataclasses
import functools
from typing import Any, NamedTuple

import numpy as np

from arrax._src import custom_derivatives, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.indexing import ds
from arrax._src.lax import broadcasting, dot as lax_dot, elementwise as lax
from arrax._src.numpy import creation, einsum, lax_numpy, reductions
from arrax._src.pallas import core as pallas_core, helpers, pallas_call, primitives, tpu

DEFAULT_MASK_VALUE = -0.7 * float(np.finfo(np.float32).max)
NUM_LANES = 128
NUM_SUBLANES = 8
MIN_BLOCK_SIZE = 128


class SegmentIds(NamedTuple):
  """Segment ids of the q ([batch, q_seq_len]) and kv ([batch, kv_seq_len]) positions: a
  position attends only to positions of the same segment."""
  q: Any
  kv: Any


@dataclasses.dataclass(frozen=True)
class BlockSizes:
  """Block sizes of the forward kernel (and of the backward ones, all needed to
  differentiate)."""
  block_q: int
  block_k_major: int
  block_k: int
  block_b: int
  block_q_major_dkv: int | None = None
  block_k_major_dkv: int | None = None
  block_k_dkv: int | None = None
  block_q_dkv: int | None = None
  block_k_major_dq: int | None = None
  block_k_dq: int | None = None
  block_q_dq: int | None = None

  def __post_init__(self):
    def check(prefix, suffix, major, minor):
      if minor > major:
        raise ValueError(f"{prefix}{suffix}={minor} should be smaller than "
                         f"{prefix}_major{suffix}={major}")
      if major % minor:
        raise ValueError(f"{prefix}{suffix}={minor} should divide {prefix}_major{suffix}={major}")

    check("block_k", "", self.block_k_major, self.block_k)
    for prefix, suffix, major, minor in [
        ("block_q", "_dkv", self.block_q_major_dkv, self.block_q_dkv),
        ("block_k", "_dkv", self.block_k_major_dkv, self.block_k_dkv),
        ("block_k", "_dq", self.block_k_major_dq, self.block_k_dq)]:
      if major is not None and minor is not None:
        check(prefix, suffix, major, minor)

  @property
  def has_backward_blocks(self) -> bool:
    return all(b is not None for b in (
        self.block_q_major_dkv, self.block_k_major_dkv, self.block_q_dkv, self.block_k_dkv,
        self.block_k_major_dq, self.block_k_dq, self.block_q_dq))

  @classmethod
  def get_default(cls, batch_size, num_heads, q_seq_len, kv_len, d_model):
    """Blocks of 128 (one batch element at a time)."""
    return BlockSizes(block_q=128, block_k_major=128, block_k=128, block_b=1,
                      block_q_major_dkv=128, block_k_major_dkv=128, block_k_dkv=128,
                      block_q_dkv=128, block_k_major_dq=128, block_k_dq=128, block_q_dq=128)


def below_or_on_diag(r, r_blk_size, c, c_blk_size):
  """Whether block (r, c) of a causal mask has an unmasked element."""
  return ((r + 1) * r_blk_size - 1) > (c * c_blk_size)


def _verify_block(block_name, dim_name, block, dim, should_divide=True):
  if block > dim:
    raise ValueError(f"{block_name}={block} should be smaller or equal to {dim_name}={dim}")
  if should_divide and dim % block:
    raise ValueError(f"{dim_name}={dim} should be divisible by {block_name}={block}")


def _check_inputs(q, k, v, ab, segment_ids):
  b, h, sq, d = q.shape
  bk, hk, skv, dk = k.shape
  bv, hv, skv_v, dv = v.shape
  if b != bk or b != bv:
    raise ValueError(f"Batch size mismatch: got {b}, {bk} and {bv} (for q, k, v respectively)")
  if h != hk or h != hv:
    raise ValueError(f"Head count mismatch: got {h}, {hk}, {hv} (for q, k, v respectively)")
  if d != dk:
    raise ValueError(f"Model dimension mismatch: got {d} and {dk} (for q and k respectively)")
  if d != dv:
    raise NotImplementedError("V model dimension unequal to KV model dimension unsupported")
  if skv != skv_v:
    raise ValueError(f"KV sequence length mismatch: got {skv} and {skv_v}")
  if ab is not None and tuple(ab.shape) != (b, h, sq, skv):
    raise ValueError(f"Attention bias shape mismatch: expected (batch_size={b}, "
                     f"num_heads={h}, q_seq_len={sq}, kv_seq_len={skv}), got {ab.shape}")
  if segment_ids is not None:
    if tuple(segment_ids.q.shape) != (b, sq):
      raise ValueError(f"Q segment ids shape mismatch: expected (batch_size={b}, "
                       f"q_seq_len={sq},), got {segment_ids.q.shape}")
    if tuple(segment_ids.kv.shape) != (b, skv):
      raise ValueError(f"KV segment ids shape mismatch: expected (batch_size={b}, "
                       f"kv_seq_len={skv},), got {segment_ids.kv.shape}")


def _einsum_qk(q, k):
  """[bb, q, d] x [bb, k, d] -> [bb, q, k] in float32."""
  return lax_dot.dot_general(q, k, (((2,), (2,)), ((0,), (0,))),
                             preferred_element_type=np.float32)


def _logits(q, k, ab, sm_scale):
  s = _einsum_qk(q, k)
  if ab is not None:
    s = s + ab.astype(np.float32)
  if sm_scale != 1.0:
    s = s * sm_scale
  return s


def _mask(shape, q_first, k_first, causal, q_seg, kv_seg):
  """The attention mask of a [bb, q, k] block (None: nothing masked)."""
  mask = None
  if q_seg is not None:
    mask = q_seg[:, :, None] == kv_seg[:, None, :]
  if causal:
    rows = broadcasting.broadcasted_iota(np.int32, shape, 1) + q_first
    cols = broadcasting.broadcasted_iota(np.int32, shape, 2) + k_first
    below = cols <= rows
    mask = below if mask is None else lax.bitwise_and(mask, below)
  return mask


def _masked(s, mask, mask_value=DEFAULT_MASK_VALUE):
  """Logits `s` with `mask_value` added where `mask` is False."""
  return s if mask is None else s + lax_numpy.where(mask, 0.0, mask_value)


def _reference_mask(q, k, segment_ids, causal):
  """The attention mask of the [batch, heads, q, k] logits of the references (None: nothing
  masked)."""
  q_seg, kv_seg = (None, None) if segment_ids is None else segment_ids
  mask = _mask((q.shape[0], q.shape[2], k.shape[2]), 0, 0, causal, q_seg, kv_seg)
  return None if mask is None else mask[:, None]


# ---- forward -------------------------------------------------------------------------------------
def _forward(q, k, v, ab, segment_ids, causal, sm_scale, block_b, block_q, block_k_major,
             block_k, debug, save_lse):
  b, h, sq, d = q.shape
  skv = k.shape[2]
  _verify_block("block_q", "q_seq_len", block_q, sq, should_divide=False)
  _verify_block("block_k_major", "kv_seq_len", block_k_major, skv)
  _verify_block("block_k", "kv_seq_len", block_k, skv)
  _verify_block("block_b", "batch", block_b, b, should_divide=False)
  minors = block_k_major // block_k
  last_major = skv // block_k_major - 1
  has_ab, has_seg = ab is not None, segment_ids is not None

  def kernel(*refs):
    it = iter(refs)
    q_ref, k_ref, v_ref = next(it), next(it), next(it)
    ab_ref = next(it) if has_ab else None
    qs_ref, kvs_ref = (next(it), next(it)) if has_seg else (None, None)
    o_ref = next(it)
    lse_ref = next(it) if save_lse else None
    m_ref, l_ref, acc_ref = next(it), next(it), next(it)
    qi, kj = primitives.program_id(2), primitives.program_id(3)

    @helpers.when(kj == 0)
    def _():
      m_ref[...] = creation.full(m_ref.shape, -np.inf, np.float32)
      l_ref[...] = creation.zeros(l_ref.shape, np.float32)
      acc_ref[...] = creation.zeros(acc_ref.shape, np.float32)

    qv = q_ref[...]
    for i in range(minors):
      ks = ds(i * block_k, block_k) if minors > 1 else slice(None)
      s = _logits(qv, k_ref[:, ks, :], None if ab_ref is None else ab_ref[:, :, ks], sm_scale)
      mask = _mask(s.shape, qi * block_q, kj * block_k_major + i * block_k, causal,
                   None if qs_ref is None else qs_ref[...],
                   None if kvs_ref is None else kvs_ref[:, ks])
      s = _masked(s, mask)
      m_prev, l_prev = m_ref[...], l_ref[...]
      m_next = lax.max(m_prev, reductions.max(s, axis=2))
      p = lax.exp(s - m_next[:, :, None])
      alpha = lax.exp(m_prev - m_next)
      l_ref[...] = l_prev * alpha + reductions.sum(p, axis=2)
      m_ref[...] = m_next
      pv = lax_dot.dot_general(p.astype(v_ref.dtype), v_ref[:, ks, :],
                               (((2,), (1,)), ((0,), (0,))), preferred_element_type=np.float32)
      acc_ref[...] = acc_ref[...] * alpha[:, :, None] + pv

    @helpers.when(kj == last_major)
    def _():
      lsum = l_ref[...]
      o_ref[...] = (acc_ref[...] / lsum[:, :, None]).astype(o_ref.dtype)
      if lse_ref is not None:
        lse_ref[...] = m_ref[...] + lax.log(lsum)

  spec = pallas_core.BlockSpec
  in_specs = [spec((block_b, None, block_q, d), lambda bi, hi, qi, kj: (bi, hi, qi, 0)),
              spec((block_b, None, block_k_major, d), lambda bi, hi, qi, kj: (bi, hi, kj, 0)),
              spec((block_b, None, block_k_major, d), lambda bi, hi, qi, kj: (bi, hi, kj, 0))]
  operands = [q, k, v]
  if has_ab:
    in_specs.append(spec((block_b, None, block_q, block_k_major),
                         lambda bi, hi, qi, kj: (bi, hi, qi, kj)))
    operands.append(ab)
  if has_seg:
    in_specs += [spec((block_b, block_q), lambda bi, hi, qi, kj: (bi, qi)),
                 spec((block_b, block_k_major), lambda bi, hi, qi, kj: (bi, kj))]
    operands += [segment_ids.q, segment_ids.kv]
  out_specs = [spec((block_b, None, block_q, d), lambda bi, hi, qi, kj: (bi, hi, qi, 0))]
  out_shape = [ShapeDtypeStruct(q.shape, q.dtype)]
  if save_lse:
    out_specs.append(spec((block_b, None, block_q), lambda bi, hi, qi, kj: (bi, hi, qi)))
    out_shape.append(ShapeDtypeStruct((b, h, sq), np.float32))
  vmem = tpu.MemorySpace.VMEM
  outs = pallas_call.pallas_call(
      kernel, out_shape=out_shape,
      grid=(helpers.cdiv(b, block_b), h, helpers.cdiv(sq, block_q), skv // block_k_major),
      in_specs=in_specs, out_specs=out_specs,
      scratch_shapes=[vmem((block_b, block_q), np.float32), vmem((block_b, block_q), np.float32),
                      vmem((block_b, block_q, d), np.float32)],
      compiler_params=tpu.CompilerParams(
          dimension_semantics=("parallel", "parallel", "parallel", "arbitrary")),
      debug=debug)(*operands)
  return outs if save_lse else outs[0]


# ---- backward --------------------------------------------------------------------------------------
def _backward(q, k, v, ab, segment_ids, o, lse, do, causal, sm_scale, debug):
  """(dq, dk, dv, dab) from one kernel per (batch, head) over the whole sequences."""
  b, h, sq, d = q.shape
  skv = k.shape[2]
  has_ab, has_seg = ab is not None, segment_ids is not None

  def kernel(*refs):
    it = iter(refs)
    q_ref, k_ref, v_ref = next(it), next(it), next(it)
    ab_ref = next(it) if has_ab else None
    qs_ref, kvs_ref = (next(it), next(it)) if has_seg else (None, None)
    o_ref, lse_ref, do_ref = next(it), next(it), next(it)
    dq_ref, dk_ref, dv_ref = next(it), next(it), next(it)
    dab_ref = next(it) if has_ab else None
    qv, kv, vv = q_ref[...], k_ref[...], v_ref[...]
    s = _logits(qv, kv, None if ab_ref is None else ab_ref[...], sm_scale)
    mask = _mask(s.shape, 0, 0, causal, None if qs_ref is None else qs_ref[...],
                 None if kvs_ref is None else kvs_ref[...])
    s = _masked(s, mask)
    p = lax.exp(s - lse_ref[...][:, :, None])
    dov = do_ref[...].astype(np.float32)
    dv_ref[...] = lax_dot.dot_general(p, dov, (((1,), (1,)), ((0,), (0,))),
                                      preferred_element_type=np.float32).astype(dv_ref.dtype)
    dp = lax_dot.dot_general(dov, vv.astype(np.float32), (((2,), (2,)), ((0,), (0,))),
                             preferred_element_type=np.float32)
    di = reductions.sum(o_ref[...].astype(np.float32) * dov, axis=2)
    ds = (dp - di[:, :, None]) * p
    if sm_scale != 1.0:
      ds = ds * sm_scale
    dq_ref[...] = lax_dot.dot_general(ds, kv.astype(np.float32), (((2,), (1,)), ((0,), (0,))),
                                      preferred_element_type=np.float32).astype(dq_ref.dtype)
    dk_ref[...] = lax_dot.dot_general(ds, qv.astype(np.float32), (((1,), (1,)), ((0,), (0,))),
                                      preferred_element_type=np.float32).astype(dk_ref.dtype)
    if dab_ref is not None:
      dab_ref[...] = ds.astype(dab_ref.dtype)

  spec = pallas_core.BlockSpec
  full = lambda n: spec((1, None, n, d), lambda bi, hi: (bi, hi, 0, 0))  # noqa: E731
  in_specs, operands = [full(sq), full(skv), full(skv)], [q, k, v]
  ab_spec = spec((1, None, sq, skv), lambda bi, hi: (bi, hi, 0, 0))
  if has_ab:
    in_specs.append(ab_spec)
    operands.append(ab)
  if has_seg:
    in_specs += [spec((1, sq), lambda bi, hi: (bi, 0)), spec((1, skv), lambda bi, hi: (bi, 0))]
    operands += [segment_ids.q, segment_ids.kv]
  in_specs += [full(sq), spec((1, None, sq), lambda bi, hi: (bi, hi, 0)), full(sq)]
  operands += [o, lse, do]
  out_specs = [full(sq), full(skv), full(skv)]
  out_shape = [ShapeDtypeStruct(x.shape, x.dtype) for x in (q, k, v)]
  if has_ab:
    out_specs.append(ab_spec)
    out_shape.append(ShapeDtypeStruct(ab.shape, ab.dtype))
  outs = pallas_call.pallas_call(kernel, out_shape=out_shape, grid=(b, h), in_specs=in_specs,
                                 out_specs=out_specs, debug=debug)(*operands)
  return (*outs[:3], outs[3] if has_ab else None)


@functools.partial(custom_derivatives.custom_vjp, nondiff_argnums=(5, 6, 7, 8, 9))
def _attention(q, k, v, ab, segment_ids, save_residuals, causal, sm_scale, block_sizes, debug):
  bs = block_sizes
  return _forward(q, k, v, ab, segment_ids, causal, sm_scale, bs.block_b, bs.block_q,
                  bs.block_k_major, bs.block_k, debug, save_residuals)


def _attention_fwd(q, k, v, ab, segment_ids, save_residuals, causal, sm_scale, block_sizes,
                   debug):
  if save_residuals:
    raise NotImplementedError("Higher-order AD not supported")
  bs = block_sizes
  o, lse = _forward(q, k, v, ab, segment_ids, causal, sm_scale, bs.block_b, bs.block_q,
                    bs.block_k_major, bs.block_k, debug, True)
  return o, (q, k, v, ab, segment_ids, o, lse)


def _attention_bwd(save_residuals, causal, sm_scale, block_sizes, debug, residuals, do):
  if save_residuals:
    raise NotImplementedError("Higher-order AD not supported")
  q, k, v, ab, segment_ids, o, lse = residuals
  if not block_sizes.has_backward_blocks:
    raise ValueError("Program is being differentiated, but not all backward blocks are "
                     "specified")
  dq, dk, dv, dab = _backward(q, k, v, ab, segment_ids, o, lse, do, causal, sm_scale, debug)
  return dq, dk, dv, dab, None


_attention.defvjp(_attention_fwd, _attention_bwd)


@functools.partial(jit.jit, static_argnames=["causal", "sm_scale", "block_sizes", "debug"])
def flash_attention(q, k, v, ab=None, segment_ids=None, *, causal: bool = False,
                    sm_scale: float = 1.0, block_sizes: BlockSizes | None = None,
                    debug: bool = False):
  """Attention of q [batch, heads, q_seq_len, d] over k, v [batch, heads, kv_seq_len, d]
  with an optional additive bias `ab` and segment ids, computed blockwise."""
  _check_inputs(q, k, v, ab, segment_ids)
  if block_sizes is None:
    block_sizes = BlockSizes.get_default(*q.shape[:3], k.shape[2], q.shape[3])
  return _attention(q, k, v, ab, segment_ids, False, causal, sm_scale, block_sizes, debug)


# ---- references ------------------------------------------------------------------------------------
def mha_reference_no_custom_vjp(q, k, v, ab=None, segment_ids: SegmentIds | None = None, *,
                                causal: bool = False, mask_value: float = DEFAULT_MASK_VALUE,
                                sm_scale: float = 1.0, save_residuals: bool = False):
  """Attention computed directly (the attention matrix formed); with `save_residuals` also
  the softmax's row sums and maxima."""
  logits = lax_dot.dot_general(q, k, (((3,), (3,)), ((0, 1), (0, 1))))
  if ab is not None:
    logits = logits + ab
  if sm_scale != 1.0:
    logits = logits * sm_scale
  logits = _masked(logits, _reference_mask(q, k, segment_ids, causal), mask_value)
  m = reductions.max(logits, axis=-1)
  e = lax.exp(logits - m[..., None])
  lsum = reductions.sum(e, axis=-1)
  out = lax_dot.dot_general(e / lsum[..., None], v, (((3,), (2,)), ((0, 1), (0, 1))))
  return (out, lsum, m) if save_residuals else out


@functools.partial(jit.jit, static_argnames=["causal", "mask_value", "sm_scale"])
def mha_reference(q, k, v, ab, segment_ids: SegmentIds | None = None, causal: bool = False,
                  mask_value: float = DEFAULT_MASK_VALUE, sm_scale=1.0):
  """`mha_reference_no_custom_vjp` (differentiated by autodiff)."""
  return mha_reference_no_custom_vjp(q, k, v, ab, segment_ids, causal=causal,
                                     mask_value=mask_value, sm_scale=sm_scale)


def mha_reference_bwd(q, k, v, ab, segment_ids: SegmentIds | None, o, l, m, do,
                      causal: bool = False, mask_value: float = DEFAULT_MASK_VALUE,
                      sm_scale: float = 1.0):
  """The gradients (dq, dk, dv, dab; dab None without `ab`) of attention with output `o`,
  softmax row sums `l` and maxima `m` (`mha_reference_no_custom_vjp`'s residuals) for the
  output cotangent `do`, computed in float32 with the attention matrix formed (`sm_scale`
  must be 1)."""
  if sm_scale != 1.0:
    raise NotImplementedError
  f32 = np.float32
  qf, kf, vf, dof = (x.astype(f32) for x in (q, k, v, do))
  logits = einsum.einsum("bhqc,bhkc->bhqk", qf, kf)
  if ab is not None:
    logits = logits + ab
  logits = _masked(logits, _reference_mask(q, k, segment_ids, causal), mask_value)
  p = lax.exp(logits - m[..., None]) / l[..., None]
  dv = einsum.einsum("bhpt,bhpd->bhtd", p, dof).astype(v.dtype)
  dp = einsum.einsum("bhpd,bhtd->bhpt", dof, vf)
  di = reductions.sum(o.astype(f32) * dof, axis=-1)[..., None]
  ds = (dp - di) * p
  dk = einsum.einsum("bhsd,bhst->bhtd", qf, ds).astype(k.dtype)
  dq = einsum.einsum("bhst,bhtd->bhsd", ds, kf).astype(q.dtype)
  return dq, dk, dv, (ds if ab is not None else None)
