"""Splash ("sparse flash") attention as TPU Pallas kernels
(jax.experimental.pallas.ops.tpu.splash_attention.splash_attention_kernel).

Multi-head (or multi-query) attention whose mask is given block-sparsely (`MaskInfo`): the
grids walk (head, q block, kv block) and the scalar-prefetched `data_next` / `block_mask` /
`mask_next` arrays say which kv block to fetch at each step, whether it is to be skipped
(all masked) and which partial mask block applies (or, for computable masks, the mask
function is evaluated in the kernel). The forward kernel keeps an online softmax in its
first three outputs (used as scratch); the VJP runs a dkv kernel (kv block, head, q block)
and a dq kernel, or the fused dkv kernel that also produces dq. Off-TPU it runs with
`interpret=True`."""
from __future__ import annotations

import dataclasses
import enum
import functools
import json
from typing import Any, NamedTuple

import numpy as np

from arrax._src import (batching, checkpoint, custom_derivatives, environment, jit,
                        sharding_impls, tree_util)
from arrax._src.api import ShapeDtypeStruct
from arrax._src.array import Array
from arrax._src.indexing import Slice, ds
from arrax._src.lax import broadcasting, dot as lax_dot, elementwise as lax
from arrax._src.lax.control_flow import loops
from arrax._src.numpy import (assembly, creation, einsum as einsum_lib, lax_numpy, reductions,
                              ufuncs)
from arrax._src.pallas import (core as pallas_core, helpers, ops_tpu_splash_mask as mask_lib,
                               ops_tpu_splash_mask_info as mask_info_lib, pallas_call,
                               primitives, tpu)

partial = functools.partial
DEFAULT_MASK_VALUE = -0.7 * float(np.finfo(np.dtype("float32")).max)
NUM_LANES = 128
NUM_SUBLANES = 8
NN_DIM_NUMBERS = (((1,), (0,)), ((), ()))  # a @ b
NT_DIM_NUMBERS = (((1,), (1,)), ((), ()))  # a @ b.T
_F32 = np.dtype(np.float32)
_I32 = np.dtype(np.int32)


class SegmentIds(NamedTuple):
  """Segment ids of the q ([q_seq_len]) and kv ([kv_seq_len]) positions: positions attend only
  within their segment (and-ed with the mask; no row may end up all masked)."""
  q: Any
  kv: Any


SplashCustomReturnType = Any
SplashResidualsType = tuple
MaskFunctionType = Any


def get_kernel_name(is_mqa: bool, save_residuals: bool, is_segmented: bool, phase: str) -> str:
  """The name of a splash kernel variant (phase "fwd", "dq" or "dkv")."""
  assert phase in ("dq", "dkv", "fwd")
  assert not save_residuals or phase == "fwd"
  return (f"splash_{'mqa' if is_mqa else 'mha'}_{phase}"
          f"{'_segmented' if is_segmented else ''}"
          f"{'_residuals' if save_residuals else '_no_residuals'}")


# ---- references ----------------------------------------------------------------------------------
def _segment_and(mask, segment_ids):
  if segment_ids is None:
    return mask
  return ufuncs.logical_and(mask, segment_ids.q[:, None] == segment_ids.kv[None, :])


def _soft_cap(x, cap):
  return x if cap is None else ufuncs.tanh(x / cap) * cap


def _attention_reference(mask, q, k, v, segment_ids, sinks, mask_value, save_residuals,
                         custom_type, attn_logits_soft_cap):
  """Single-head attention of q [q_len, d] over k, v [kv_len, d] under `mask` [q_len, kv_len]
  (float32), with optional per-head attention sinks (an extra logit with no value)."""
  del custom_type
  logits = einsum_lib.einsum("sd,td->st", q.astype(_F32), k.astype(_F32))
  mask = _segment_and(mask, segment_ids)
  logits = lax_numpy.where(mask, _soft_cap(logits, attn_logits_soft_cap), mask_value)
  m = reductions.max(logits, axis=-1)
  if sinks is not None:
    sinks = sinks.astype(logits.dtype)
    m = ufuncs.maximum(m, sinks)
  s = ufuncs.exp(logits - m[..., None])
  total = reductions.sum(s, axis=-1) + (0 if sinks is None else ufuncs.exp(sinks - m))
  out = einsum_lib.einsum("st,td->sd", s / total[..., None], v.astype(_F32))
  if save_residuals:
    return out, (m + ufuncs.log(total),)
  return out


def attention_reference(mask, q, k, v, segment_ids, sinks=None, *,
                        mask_value: float = DEFAULT_MASK_VALUE, save_residuals: bool = False,
                        custom_type: str = "flash", attn_logits_soft_cap: float | None = None):
  """Attention of one head computed directly (differentiated by autodiff); with
  `save_residuals` also (logsumexp,)."""
  return _attention_reference(mask, q, k, v, segment_ids, sinks, mask_value=mask_value,
                              save_residuals=save_residuals, custom_type=custom_type,
                              attn_logits_soft_cap=attn_logits_soft_cap)


def _attention_reference_custom_fwd(mask, q, k, v, segment_ids, sinks, mask_value,
                                    save_residuals, custom_type, attn_logits_soft_cap):
  if save_residuals:
    raise NotImplementedError("Higher-order AD not supported.")
  out, (lse,) = _attention_reference(mask, q, k, v, segment_ids, sinks, mask_value=mask_value,
                                     save_residuals=True, custom_type=custom_type,
                                     attn_logits_soft_cap=attn_logits_soft_cap)
  return out, (mask, q, k, v, segment_ids, sinks, out, lse)


def _cap_grad(ds_, uncapped, cap):
  """ds through the soft cap: ds * (1 - tanh(x / cap)^2)."""
  if cap is None:
    return ds_
  t = ufuncs.tanh(uncapped / cap)
  g = ds_ * (1 - t)
  return g + g * t


def _attention_reference_custom_bwd(mask_value, save_residuals, custom_type,
                                    attn_logits_soft_cap, res, do):
  del save_residuals
  mask, q, k, v, segment_ids, sinks, o, lse = res
  uncapped = einsum_lib.einsum("qc,kc->qk", q, k, preferred_element_type=_F32)
  logits = _soft_cap(uncapped, attn_logits_soft_cap)
  logits = lax_numpy.where(_segment_and(mask, segment_ids), logits, mask_value)
  p = ufuncs.exp(logits - lse[..., None])
  do = do.astype(_F32)
  dv = einsum_lib.einsum("pt,pd->td", p, do).astype(v.dtype)
  dp = einsum_lib.einsum("pd,td->pt", do, v.astype(_F32))
  if custom_type == "flash":
    di = reductions.sum(o.astype(_F32) * do, axis=-1)[..., None]
  else:
    di = einsum_lib.einsum("st,st->s", dp, p)[:, None]
  ds_ = _cap_grad((dp - di) * p, uncapped, attn_logits_soft_cap)
  dk = einsum_lib.einsum("sd,st->td", q.astype(_F32), ds_).astype(k.dtype)
  dq = einsum_lib.einsum("st,td->sd", ds_, k.astype(_F32)).astype(q.dtype)
  dsinks = None
  if sinks is not None:
    e = -ufuncs.exp(sinks[..., None, None].astype(_F32) - lse[..., None].astype(_F32))
    dsinks = reductions.sum(e.astype(o.dtype) * do * o)
  return None, dq, dk, dv, None, dsinks


_attention_reference_custom = custom_derivatives.custom_vjp(
    _attention_reference,
    nondiff_argnames=("mask_value", "save_residuals", "custom_type", "attn_logits_soft_cap"))
_attention_reference_custom.defvjp(_attention_reference_custom_fwd,
                                   _attention_reference_custom_bwd)


def attention_reference_custom(mask, q, k, v, segment_ids, sinks=None, *,
                               mask_value: float = DEFAULT_MASK_VALUE,
                               save_residuals: bool = False, custom_type: str = "flash",
                               attn_logits_soft_cap: float | None = None):
  """`attention_reference` with a hand-written VJP (custom_type "flash": di from o * do;
  "vanilla": from dp * p)."""
  return _attention_reference_custom(mask, q, k, v, segment_ids, sinks, mask_value,
                                     save_residuals, custom_type=custom_type,
                                     attn_logits_soft_cap=attn_logits_soft_cap)


def make_attention_reference(mask, is_mqa: bool, backward_impl: str = "vanilla",
                             **params: Any):
  """A jitted multi-head reference over the dense [heads, q, kv] `mask`: called as
  f(q, k, v, segment_ids=None, sinks=None, *, mask_value, save_residuals,
  attn_logits_soft_cap). backward_impl: "vanilla" (autodiff), "custom", "custom_vanilla"."""

  @partial(jit.jit, static_argnames=["mask_value", "save_residuals", "attn_logits_soft_cap"])
  def _wrapped(mask, q, k, v, segment_ids=None, sinks=None, *,
               mask_value: float = DEFAULT_MASK_VALUE, save_residuals: bool = False,
               attn_logits_soft_cap: float | None = None):
    if backward_impl == "custom":
      impl = partial(attention_reference_custom, custom_type="flash")
    elif backward_impl == "custom_vanilla":
      impl = partial(attention_reference_custom, custom_type="vanilla")
    else:
      impl = attention_reference
    fn = partial(impl, mask_value=mask_value, save_residuals=save_residuals,
                 attn_logits_soft_cap=attn_logits_soft_cap, **params)
    per_q_head = (0, 0, None, None, None, 0)
    grouped = False
    if is_mqa:
      fn = batching.vmap(fn, in_axes=per_q_head)
    else:
      kv_heads = k.shape[0]
      assert kv_heads == v.shape[0]
      q_heads, q_len, d = q.shape
      grouped = kv_heads < q_heads
      if grouped:
        assert q_heads % kv_heads == 0
        assert mask.shape[0] == q_heads
        g = q_heads // kv_heads
        q = q.reshape((kv_heads, g, q_len, d))
        mask = mask.reshape((kv_heads, g, *mask.shape[1:]))
        if sinks is not None:
          sinks = sinks.reshape((kv_heads, g))
        fn = batching.vmap(fn, in_axes=per_q_head)
      fn = batching.vmap(fn, in_axes=(0, 0, 0, 0, None, 0))
    out = fn(mask, q, k, v, segment_ids, sinks)
    if not grouped:
      return out

    def merge(x, rank):
      return x.reshape((x.shape[0] * x.shape[1], *x.shape[2:])) if x.ndim == rank else x

    if save_residuals:
      return merge(out[0], 4), (merge(out[1][0], 3),)
    return merge(out, 4)

  return functools.partial(_wrapped, creation.array(mask[:, :, :]))


make_masked_mha_reference = partial(make_attention_reference, is_mqa=False)
make_masked_mqa_reference = partial(make_attention_reference, is_mqa=True)


# ---- block sizes and layouts ---------------------------------------------------------------------
class QKVLayout(enum.IntEnum):
  HEAD_DIM_MINOR = enum.auto()  # [..., seq_len, head_dim]
  SEQ_MINOR = enum.auto()  # [..., head_dim, seq_len]


def from_head_minor(vals: tuple[Any, ...], layout: QKVLayout):
  """`vals` (ending in (seq, head_dim)) with the last two swapped for SEQ_MINOR."""
  if layout == QKVLayout.HEAD_DIM_MINOR:
    return vals
  return (*vals[:-2], vals[-1], vals[-2])


@dataclasses.dataclass(frozen=True, slots=True)
class BlockSizes:
  """Block sizes of the splash kernels (forward; dkv and dq for the VJP; a fused backward
  kernel needs no dq blocks) and the physical layouts of q, k and v."""
  block_q: int
  block_kv: int
  block_kv_compute: int | None = None
  block_q_dkv: int | None = None
  block_kv_dkv: int | None = None
  block_kv_dkv_compute: int | None = None
  block_q_dq: int | None = None
  block_kv_dq: int | None = None
  use_fused_bwd_kernel: bool = False
  q_layout: QKVLayout = QKVLayout.HEAD_DIM_MINOR
  k_layout: QKVLayout = QKVLayout.HEAD_DIM_MINOR
  v_layout: QKVLayout = QKVLayout.HEAD_DIM_MINOR

  def __post_init__(self):
    if self.block_kv_compute is None:
      object.__setattr__(self, "block_kv_compute", self.block_kv)
    if self.block_kv_dkv_compute is None:
      object.__setattr__(self, "block_kv_dkv_compute", self.block_kv_dkv)
    if self.use_fused_bwd_kernel and (self.block_q_dq is not None
                                      or self.block_kv_dq is not None):
      raise ValueError("Block sizes for dq kernel are not needed with a fused kernel.")

  @property
  def has_backward_blocks(self) -> bool:
    needed = [self.block_q_dkv, self.block_kv_dkv, self.block_kv_dkv_compute]
    if not self.use_fused_bwd_kernel:
      needed += [self.block_q_dq, self.block_kv_dq]
    return all(b is not None for b in needed)

  @classmethod
  def get_default(cls):
    return BlockSizes(block_q=128, block_kv=128, block_kv_compute=128, block_q_dkv=128,
                      block_kv_dkv=128, block_kv_dkv_compute=128, block_q_dq=128,
                      block_kv_dq=128)


# ---- kernel pieces -------------------------------------------------------------------------------
def _next_nonzero(h, i, j, data_next_ref, block_mask_ref, m_next_ref, next_i=False):
  """(block to fetch, partial mask block, whether the block runs, whether it needs no mask)
  at grid point (h, i, j); without MaskInfo every block runs unmasked."""
  assert (data_next_ref is None) == (block_mask_ref is None)
  if data_next_ref is None:
    assert m_next_ref is None
    return (i if next_i else j), None, True, False
  assert data_next_ref.shape == block_mask_ref.shape
  assert m_next_ref is None or data_next_ref.shape[0] == m_next_ref.shape[0]
  if data_next_ref.shape[0] == 1:   # one mask shared by all heads
    h = 0
  kind = block_mask_ref[h, i, j].astype(_I32)
  if m_next_ref is None:
    should_not_mask, next_m = True, None
  else:
    should_not_mask = kind != 1
    next_m = m_next_ref[h, i, j].astype(_I32)
  return data_next_ref[h, i, j].astype(_I32), next_m, kind > 0, should_not_mask


def _apply_mask_and_soft_cap(qk, mask_value, should_not_mask, mask_ref, q_sequence_ref,
                             q_segment_ids_ref, kv_segment_ids_ref, *, attn_logits_soft_cap,
                             k_slice: Slice, k_offset, bq: int, k_in_lanes=True,
                             mask_function=None):
  """The capped logits `qk` with masked positions set to `mask_value` (the mask: a partial
  mask block, the mask function, and segment ids, and-ed). k_in_lanes: qk is [q, k] (else
  [k, q], in the dkv kernel)."""
  assert mask_ref is None or q_sequence_ref is None
  assert (q_sequence_ref is None) == (mask_function is None)
  masks = []
  if mask_ref is not None:
    block = mask_ref[:, k_slice] if k_in_lanes else mask_ref[k_slice, :]
    masks.append(ufuncs.bitwise_or(block, lax_numpy.broadcast_to(should_not_mask, block.shape)))
  if mask_function is not None:
    if k_in_lanes:
      assert q_sequence_ref.shape == (bq, NUM_LANES)
      k_seq = k_offset + broadcasting.broadcasted_iota(_I32, (bq, k_slice.size), 1)
      reps, rem = divmod(k_slice.size, NUM_LANES)
      assert rem == 0
      q_seq = assembly.tile(q_sequence_ref[...], (1, reps))
    else:
      assert q_sequence_ref.shape == (NUM_SUBLANES, bq)
      k_seq = k_offset + broadcasting.broadcasted_iota(_I32, (k_slice.size, bq), 0)
      q_seq = lax_numpy.broadcast_to(q_sequence_ref[:1, :], (k_slice.size, bq))
    assert q_seq.shape == k_seq.shape
    computed = mask_function(q_seq, k_seq)
    if computed.dtype != np.bool_:
      raise ValueError("Mask function must return a boolean-valued array, but got:"
                       f" {computed.dtype}")
    masks.append(computed)
  if q_segment_ids_ref is not None:
    if k_in_lanes:
      kv_ids = kv_segment_ids_ref[:1, k_slice]
      reps, rem = divmod(kv_ids.shape[1], NUM_LANES)
      if rem:
        raise NotImplementedError(f"block_kv must be a multiple of {NUM_LANES}")
      q_ids = assembly.tile(q_segment_ids_ref[:], (1, reps))
    else:
      assert bq == q_segment_ids_ref.shape[-1]
      reps, rem = divmod(bq, NUM_LANES)
      if rem:
        raise NotImplementedError(f"block_q must be a multiple of {NUM_LANES}")
      kv_ids = assembly.tile(kv_segment_ids_ref[k_slice, :], (1, reps))
      q_ids = q_segment_ids_ref[:1, :]
    masks.append(q_ids == kv_ids)
  qk = _soft_cap(qk, attn_logits_soft_cap)
  if masks:
    qk = lax_numpy.where(functools.reduce(ufuncs.logical_and, masks), qk, mask_value)
  return qk


def _dot(a, b, dims, out=_F32):
  return lax_dot.dot_general(a, b, dims, preferred_element_type=out)


def _load_layout(ref, sl, layout):
  """ref's rows `sl` (HEAD_DIM_MINOR) or columns `sl` (SEQ_MINOR)."""
  return ref[sl, :] if layout == QKVLayout.HEAD_DIM_MINOR else ref[:, sl]


def flash_attention_kernel(data_next_ref, block_mask_ref, mask_next_ref, q_ref, k_ref, v_ref,
                           q_segment_ids_ref, kv_segment_ids_ref, sinks_ref, mask_ref,
                           q_sequence_ref, m_scratch_ref, l_scratch_ref, o_scratch_ref, o_ref,
                           logsumexp_ref=None, *, mask_value: float, grid_width: int, bq: int,
                           bkv: int, bkv_compute: int, head_dim_v: int, q_layout: QKVLayout,
                           k_layout: QKVLayout, v_layout: QKVLayout,
                           attn_logits_soft_cap: float | None, mask_function):
  """The forward kernel at grid point (head, q block, kv step)."""
  minor = QKVLayout.HEAD_DIM_MINOR
  v_reps = helpers.cdiv(head_dim_v, NUM_LANES)
  h, i, j = primitives.program_id(0), primitives.program_id(1), primitives.program_id(2)

  @helpers.when(j == 0)
  def _():
    o_scratch_ref[...] = creation.zeros_like(o_scratch_ref)
    if sinks_ref is not None:
      sink = sinks_ref[0, h].astype(m_scratch_ref.dtype)
      m_scratch_ref[...] = sink * creation.ones_like(m_scratch_ref)
      l_scratch_ref[...] = creation.ones_like(l_scratch_ref)
    else:
      m_scratch_ref[...] = creation.full_like(m_scratch_ref, mask_value)
      l_scratch_ref[...] = creation.zeros_like(l_scratch_ref)

  kv_block, _, should_run, should_not_mask = _next_nonzero(
      h, i, j, data_next_ref, block_mask_ref, mask_next_ref)

  def body(c, _):
    sl = ds(c * bkv_compute, bkv_compute)
    m_prev, l_prev = m_scratch_ref[...], l_scratch_ref[...]
    q = q_ref[...] if q_layout == minor else q_ref[...].T
    qk = _dot(q, _load_layout(k_ref, sl, k_layout),
              NT_DIM_NUMBERS if k_layout == minor else NN_DIM_NUMBERS)
    assert qk.shape == (bq, bkv_compute)
    qk = _apply_mask_and_soft_cap(
        qk, mask_value, should_not_mask, mask_ref, q_sequence_ref, q_segment_ids_ref,
        kv_segment_ids_ref, attn_logits_soft_cap=attn_logits_soft_cap, k_slice=sl,
        k_offset=kv_block * bkv + c * bkv_compute, bq=bq, mask_function=mask_function)
    m_next = ufuncs.maximum(m_prev, reductions.max(qk, axis=-1)[:, None])
    reps, rem = divmod(bkv_compute, NUM_LANES)
    if rem != 0:
      raise NotImplementedError(f"bkv_compute={bkv_compute} should be a multiple of "
                                f"{NUM_LANES}")
    s = ufuncs.exp(qk - assembly.tile(m_next, (1, reps)))
    l_curr = broadcasting.broadcast_in_dim(reductions.sum(s, axis=-1), l_prev.shape, (0,))
    alpha = ufuncs.exp(m_prev - m_next)
    m_scratch_ref[...] = m_next
    l_scratch_ref[...] = l_curr + alpha * l_prev
    v = _load_layout(v_ref, sl, v_layout).astype(_F32)
    o_curr = lax_dot.dot_general(s, v, NN_DIM_NUMBERS if v_layout == minor else NT_DIM_NUMBERS)
    alpha_o = assembly.tile(alpha, (1, v_reps))[..., :o_scratch_ref.shape[-1]]
    o_scratch_ref[:] = alpha_o * o_scratch_ref[:] + o_curr

  @helpers.when(should_run)
  def _():
    assert bkv % bkv_compute == 0
    steps = k_ref.shape[0 if k_layout == minor else 1] // bkv_compute
    loops.fori_loop(0, steps, body, None, unroll=True)

  @helpers.when(j == grid_width - 1)
  def _():
    total = l_scratch_ref[...]
    inv = assembly.tile(1.0 / total, (1, v_reps))[..., :o_scratch_ref.shape[-1]]
    o_ref[...] = (o_scratch_ref[...] * inv).astype(o_ref.dtype)
    if logsumexp_ref is not None:
      assert logsumexp_ref.shape == (bq, NUM_LANES)
      logsumexp_ref[...] = (ufuncs.log(total) + m_scratch_ref[...]).astype(logsumexp_ref.dtype)
    m_scratch_ref[...] = creation.zeros_like(m_scratch_ref)
    l_scratch_ref[...] = creation.zeros_like(l_scratch_ref)
    o_scratch_ref[...] = creation.zeros_like(o_scratch_ref)


def _div(dividend, divisor: int):
  return dividend if divisor == 1 else lax.div(dividend, np.int32(divisor))


def _check_kv(k, v, is_mqa, num_q_heads, num_kv_heads):
  if not is_mqa and num_q_heads % num_kv_heads != 0:
    raise ValueError(f"In MHA, expected number of 'key' heads ({num_kv_heads}) to be a"
                     f" multiple of the number of 'query' heads ({num_q_heads})")
  if k.shape[:-1] != v.shape[:-1]:
    raise ValueError(f"Expected 'key' {k.shape} and 'value' {v.shape} to have the same "
                     "leading dimensions.")


def _smem_sinks(sinks, num_q_heads):
  """sinks [heads] as the [8, heads] float32 operand held in SMEM, and its block spec."""
  if sinks is None:
    return None, None
  assert sinks.shape == (num_q_heads,)
  spec = pallas_core.BlockSpec((NUM_SUBLANES, num_q_heads), lambda *_: (0, 0),
                               memory_space=tpu.MemorySpace.SMEM)
  return lax_numpy.broadcast_to(sinks.astype(_F32)[None, :], (NUM_SUBLANES, num_q_heads)), spec


def _oriented(x, layout):
  return x if layout == QKVLayout.HEAD_DIM_MINOR else lax_numpy.swapaxes(x, -1, -2)


def _q_major_inputs(q, k, v, segment_ids, mask_info, *, bq, bkv, kv_len, is_mqa, per_kv,
                    q_layout, k_layout, v_layout):
  """The inputs of a kernel on the grid (head, q block, kv step) whose kv blocks come from
  `mask_info`: the block specs and operands of (q, k, v, q and kv segment ids), then those
  of (partial mask blocks, q sequence)."""
  q_len, head_dim_qk = q.shape[1:]
  head_dim_v = v.shape[-1]
  spec = pallas_core.BlockSpec

  def nxt(h, i, j, data_next_ref, block_mask_ref, mask_next_ref=None, *_):
    return _next_nonzero(h, i, j, data_next_ref, block_mask_ref, mask_next_ref)

  def kv_spec(d, layout):
    def index_map(h, i, j, *scalars):
      prefix = () if is_mqa else (_div(h, per_kv),)
      return from_head_minor((*prefix, nxt(h, i, j, *scalars)[0], 0), layout)
    return spec(from_head_minor((bkv, d) if is_mqa else (None, bkv, d), layout), index_map)

  q_rows = lambda h, i, j, *_: (i, 0)  # noqa: E731
  specs = [spec(from_head_minor((None, bq, head_dim_qk), q_layout),
                lambda h, i, *_: from_head_minor((h, i, 0), q_layout)),
           kv_spec(head_dim_qk, k_layout), kv_spec(head_dim_v, v_layout)]
  operands = [_oriented(q, q_layout), _oriented(k, k_layout), _oriented(v, v_layout)]
  if segment_ids is not None:
    specs += [spec((bq, NUM_LANES), q_rows),
              spec((NUM_SUBLANES, bkv), lambda h, i, j, *s: (0, nxt(h, i, j, *s)[0]))]
    operands += [broadcasting.broadcast_in_dim(segment_ids.q, (q_len, NUM_LANES), (0,)),
                 broadcasting.broadcast_in_dim(segment_ids.kv, (NUM_SUBLANES, kv_len), (1,))]
  else:
    specs += [None, None]
    operands += [None, None]
  pmb, q_sequence = mask_info.partial_mask_blocks, mask_info.q_sequence
  assert pmb is None or q_sequence is None
  mask_specs = [None if pmb is None else
                spec((None, bq, bkv), lambda h, i, j, *s: (nxt(h, i, j, *s)[1], 0, 0)),
                None if q_sequence is None else spec((bq, NUM_LANES), q_rows)]
  if q_sequence is not None:
    q_sequence = broadcasting.broadcast_in_dim(q_sequence, (q_len, NUM_LANES), (0,))
  return specs, operands, mask_specs, [pmb, q_sequence]


def _run(kernel, name, grid, in_specs, out_specs, out_shapes, semantics, interpret, metadata,
         mask_info, operands):
  with environment.named_scope(name):
    return pallas_call.pallas_call(
        kernel,
        grid_spec=tpu.PrefetchScalarGridSpec(num_scalar_prefetch=3, in_specs=in_specs,
                                             out_specs=out_specs, grid=grid),
        compiler_params=tpu.CompilerParams(dimension_semantics=semantics),
        out_shape=out_shapes, name=name, interpret=interpret, metadata=metadata,
    )(mask_info.data_next, mask_info.block_mask, mask_info.mask_next, *operands)


def _splash_attention_forward(fwd_mask_info, q, k, v, segment_ids, sinks, mask_value: float,
                              is_mqa: bool, block_sizes: BlockSizes, residual_checkpoint_name,
                              save_residuals: bool, mask_function,
                              attn_logits_soft_cap: float | None = None,
                              interpret: bool = False):
  num_q_heads, q_len, head_dim_qk = q.shape
  head_dim_v = v.shape[-1]
  bq, bkv, bkv_compute = block_sizes.block_q, block_sizes.block_kv, block_sizes.block_kv_compute
  if is_mqa:
    kv_rank, kv_head_dim_axis, kv_seq_axis, num_kv_heads = 2, 1, 0, 1
  else:
    kv_rank, kv_head_dim_axis, kv_seq_axis, num_kv_heads = 3, 2, 1, k.shape[0]
  pmb = fwd_mask_info.partial_mask_blocks
  if pmb is not None and np.dtype(pmb.dtype) != np.bool_:
    raise ValueError(f"partial_mask_blocks must be of type np.bool_ but got {pmb.dtype}")
  if len(k.shape) != kv_rank:
    raise ValueError(f"Expected {kv_rank}-dim 'key' tensor for MQA. Instead got a"
                     f" {len(k.shape)}-dim one.")
  if k.shape[kv_head_dim_axis] != head_dim_qk:
    raise ValueError(f"Expected 'key' head dimension to be: {head_dim_qk}. Instead got:"
                     f" {k.shape[kv_head_dim_axis]}.")
  _check_kv(k, v, is_mqa, num_q_heads, num_kv_heads)
  assert bkv_compute is not None
  if bkv % bkv_compute:
    raise ValueError(f"bkv={bkv} must be a multiple of bkv_compute={bkv_compute}.")
  if bkv_compute % NUM_LANES:
    raise ValueError(f"bkv_compute={bkv_compute} must be a multiple of {NUM_LANES}.")
  kv_len = k.shape[kv_seq_axis]
  per_kv = num_q_heads // num_kv_heads
  if segment_ids is not None:
    if segment_ids.q.shape != (q_len,):
      raise ValueError(f"Invalid shape for q segment_ids: {segment_ids.q.shape}. Expected: "
                       f"{(q_len,)}")
    if segment_ids.kv.shape != (kv_len,):
      raise ValueError(f"Invalid shape for kv segment_ids: {segment_ids.kv.shape}. Expected: "
                       f"{(kv_len,)}")
  q_layout, k_layout, v_layout = block_sizes.q_layout, block_sizes.k_layout, block_sizes.v_layout
  spec = pallas_core.BlockSpec
  in_specs, operands, mask_specs, mask_operands = _q_major_inputs(
      q, k, v, segment_ids, fwd_mask_info, bq=bq, bkv=bkv, kv_len=kv_len, is_mqa=is_mqa,
      per_kv=per_kv, q_layout=q_layout, k_layout=k_layout, v_layout=v_layout)
  sinks, sinks_spec = _smem_sinks(sinks, num_q_heads)
  const = lambda *_: (0, 0)  # noqa: E731
  out_shapes = [ShapeDtypeStruct((bq, NUM_LANES), _F32), ShapeDtypeStruct((bq, NUM_LANES), _F32),
                ShapeDtypeStruct((bq, head_dim_v), _F32),
                ShapeDtypeStruct((num_q_heads, q_len, head_dim_v), q.dtype)]
  out_specs = [spec((bq, NUM_LANES), const), spec((bq, NUM_LANES), const),
               spec((bq, head_dim_v), const),
               spec((None, bq, head_dim_v), lambda h, i, j, *_: (h, i, 0))]
  if save_residuals:
    out_shapes.append(ShapeDtypeStruct((num_q_heads, q_len, NUM_LANES), _F32))
    out_specs.append(spec((None, bq, NUM_LANES), lambda h, i, *_: (h, i, 0)))
  else:
    out_shapes.append(None)
    out_specs.append(None)
  name = get_kernel_name(is_mqa=is_mqa, save_residuals=save_residuals,
                         is_segmented=segment_ids is not None, phase="fwd")
  metadata = {"xprof_metadata": json.dumps(dataclasses.asdict(block_sizes))}
  if fwd_mask_info.data_next is not None:
    grid_width = fwd_mask_info.data_next.shape[-1]
  else:
    grid_width = kv_len // bkv
  kernel = partial(flash_attention_kernel, mask_value=mask_value, grid_width=grid_width, bq=bq,
                   bkv=bkv, bkv_compute=bkv_compute, head_dim_v=head_dim_v, q_layout=q_layout,
                   k_layout=k_layout, v_layout=v_layout,
                   attn_logits_soft_cap=attn_logits_soft_cap, mask_function=mask_function)
  _, _, _, out, lse = _run(
      kernel, name, (num_q_heads, q_len // bq, grid_width), [*in_specs, sinks_spec, *mask_specs],
      out_specs, out_shapes, ("parallel", "arbitrary", "arbitrary"), interpret, metadata,
      fwd_mask_info, [*operands, sinks, *mask_operands])
  if save_residuals:
    assert lse is not None
    lse = lse[..., 0]
  if residual_checkpoint_name is not None:
    out = checkpoint.checkpoint_name(out, name=residual_checkpoint_name)
    if lse is not None:
      lse = checkpoint.checkpoint_name(lse, name=residual_checkpoint_name)
  if save_residuals:
    return out, (lse,)
  return out


@partial(custom_derivatives.custom_vjp, nondiff_argnames=(
    "save_residuals", "mask_value", "is_mqa", "block_sizes", "residual_checkpoint_name",
    "mask_function", "attn_logits_soft_cap", "interpret"))
def _splash_attention_custom(fwd_mask_info, dq_mask_info, dkv_mask_info, q, k, v, segment_ids,
                             sinks, save_residuals, mask_value, is_mqa, block_sizes,
                             residual_checkpoint_name, mask_function, attn_logits_soft_cap=None,
                             interpret=False):
  del dq_mask_info, dkv_mask_info
  return _splash_attention_forward(
      fwd_mask_info, q, k, v, segment_ids, sinks=sinks, mask_value=mask_value, is_mqa=is_mqa,
      block_sizes=block_sizes, residual_checkpoint_name=residual_checkpoint_name,
      save_residuals=save_residuals, mask_function=mask_function,
      attn_logits_soft_cap=attn_logits_soft_cap, interpret=interpret)


def _splash_attention_fwd(fwd_mask_info, dq_mask_info, dkv_mask_info, q, k, v, segment_ids,
                          sinks, save_residuals, mask_value, is_mqa, block_sizes,
                          residual_checkpoint_name, mask_function, attn_logits_soft_cap=None,
                          interpret=False):
  if save_residuals:
    raise NotImplementedError("Higher-order AD not supported")
  out, (lse,) = _splash_attention_forward(
      fwd_mask_info, q, k, v, segment_ids, sinks, mask_value=mask_value, is_mqa=is_mqa,
      block_sizes=block_sizes, residual_checkpoint_name=residual_checkpoint_name,
      save_residuals=True, mask_function=mask_function,
      attn_logits_soft_cap=attn_logits_soft_cap, interpret=interpret)
  return out, (q, k, v, segment_ids, sinks, out, lse, dq_mask_info, dkv_mask_info)


def _flash_attention_dq_kernel(data_next_ref, block_mask_ref, mask_next_ref, q_ref, k_ref,
                               v_ref, q_segment_ids_ref, kv_segment_ids_ref, sinks_ref,
                               logsumexp_ref, do_ref, di_ref, mask_ref, q_sequence_ref,
                               dq_scratch_ref, dq_ref, *, mask_value: float, grid_width: int,
                               bq: int, bkv: int, attn_logits_soft_cap: float | None = None,
                               q_layout: QKVLayout, k_layout: QKVLayout, v_layout: QKVLayout,
                               mask_function):
  """The dq kernel at grid point (head, q block, kv step)."""
  del sinks_ref
  minor = QKVLayout.HEAD_DIM_MINOR
  h, i, j = primitives.program_id(0), primitives.program_id(1), primitives.program_id(2)

  @helpers.when(j == 0)
  def _():
    dq_scratch_ref[...] = creation.zeros_like(dq_scratch_ref)

  kv_block, _, should_run, should_not_mask = _next_nonzero(
      h, i, j, data_next_ref, block_mask_ref, mask_next_ref)

  @helpers.when(should_run)
  def _():
    q = q_ref[...] if q_layout == minor else q_ref[...].T
    k, v = k_ref[...], v_ref[...]
    lse = lax_numpy.expand_dims(logsumexp_ref[0], -1)
    do = do_ref[...]
    di = lax_numpy.expand_dims(di_ref[0], -1)
    uncapped = _dot(q, k, NT_DIM_NUMBERS if k_layout == minor else NN_DIM_NUMBERS)
    qk = _apply_mask_and_soft_cap(
        uncapped, mask_value, should_not_mask, mask_ref, q_sequence_ref, q_segment_ids_ref,
        kv_segment_ids_ref, attn_logits_soft_cap=attn_logits_soft_cap, k_slice=ds(0, bkv),
        k_offset=kv_block * bkv, bq=bq, mask_function=mask_function)
    p = ufuncs.exp(qk - lse)
    dp = _dot(do.astype(v.dtype), v, NT_DIM_NUMBERS if v_layout == minor else NN_DIM_NUMBERS)
    ds_ = _cap_grad((dp - di) * p, uncapped, attn_logits_soft_cap)
    dq_scratch_ref[...] += _dot(ds_.astype(k.dtype), k,
                                NN_DIM_NUMBERS if k_layout == minor else NT_DIM_NUMBERS)

  @helpers.when(j == grid_width - 1)
  def _():
    dq_ref[...] = dq_scratch_ref[...].astype(dq_ref.dtype)
    dq_scratch_ref[...] = creation.zeros_like(dq_scratch_ref)


def _splash_attention_bwd_dq(q, k, v, segment_ids, sinks, logsumexp, do, di, *, bq: int,
                             bkv: int, is_mqa: bool, mask_info, mask_value: float,
                             attn_logits_soft_cap, q_layout: QKVLayout, k_layout: QKVLayout,
                             v_layout: QKVLayout, mask_function, interpret: bool):
  num_q_heads, q_len, head_dim_qk = q.shape
  head_dim_v = v.shape[-1]
  kv_len, num_kv_heads = (k.shape[0], 1) if is_mqa else (k.shape[1], k.shape[0])
  if bq > q_len:
    raise ValueError(f"bq={bq} should not be greater than q_seq_len={q_len}")
  if bkv > kv_len:
    raise ValueError(f"bkv={bkv} should not be greater than kv_seq_len={kv_len}")
  _check_kv(k, v, is_mqa, num_q_heads, num_kv_heads)
  if bkv % NUM_LANES:
    raise ValueError(f"bkv={bkv} must be a multiple of {NUM_LANES}.")
  per_kv = num_q_heads // num_kv_heads
  if mask_info.data_next is not None:
    grid_width = mask_info.data_next.shape[-1]
  else:
    grid_width = kv_len // bkv
  spec = pallas_core.BlockSpec
  in_specs, operands, mask_specs, mask_operands = _q_major_inputs(
      q, k, v, segment_ids, mask_info, bq=bq, bkv=bkv, kv_len=kv_len, is_mqa=is_mqa,
      per_kv=per_kv, q_layout=q_layout, k_layout=k_layout, v_layout=v_layout)
  sinks, sinks_spec = _smem_sinks(sinks, num_q_heads)
  row_spec = spec((None, 1, bq), lambda h, i, *_: (h, 0, i))
  o_spec = spec((None, bq, head_dim_v), lambda h, i, *_: (h, i, 0))
  in_specs += [sinks_spec, row_spec, o_spec, row_spec, *mask_specs]
  operands += [sinks, lax_numpy.expand_dims(logsumexp, axis=-2), do,
               lax_numpy.expand_dims(di, axis=-2), *mask_operands]
  out_shapes = [ShapeDtypeStruct((bq, head_dim_qk), _F32), ShapeDtypeStruct(q.shape, q.dtype)]
  out_specs = [spec((bq, head_dim_qk), lambda *_: (0, 0)),
               spec((None, bq, head_dim_qk), lambda h, i, *_: (h, i, 0))]
  kernel = partial(_flash_attention_dq_kernel, grid_width=grid_width, mask_value=mask_value,
                   bq=bq, bkv=bkv, attn_logits_soft_cap=attn_logits_soft_cap,
                   q_layout=q_layout, k_layout=k_layout, v_layout=v_layout,
                   mask_function=mask_function)
  name = get_kernel_name(is_mqa=is_mqa, save_residuals=False,
                         is_segmented=segment_ids is not None, phase="dq")
  metadata = {"xprof_metadata": json.dumps(dict(
      block_q_dq=bq, block_kv_dq=bkv, q_layout=q_layout, k_layout=k_layout,
      v_layout=v_layout))}
  _, dq = _run(kernel, name, (num_q_heads, q_len // bq, grid_width), in_specs, out_specs,
               out_shapes, ("arbitrary", "arbitrary", "arbitrary"), interpret, metadata,
               mask_info, operands)
  return dq


def _flash_attention_dkv_kernel(data_next_ref, block_mask_ref, mask_next_ref, q_ref, k_ref,
                                v_ref, q_segment_ids_ref, kv_segment_ids_ref, sinks_ref,
                                logsumexp_ref, do_ref, di_ref, mask_ref, q_sequence_ref,
                                dq_scratch_ref, dk_scratch_ref, dv_scratch_ref, dq_ref, dk_ref,
                                dv_ref, *, num_q_heads: int, num_kv_heads: int,
                                mask_value: float, grid_width: int, bq: int, bkv_compute: int,
                                is_mqa: bool, attn_logits_soft_cap: float | None,
                                q_layout: QKVLayout, k_layout: QKVLayout, v_layout: QKVLayout,
                                bkv: int, mask_function):
  """The dkv kernel at grid point (kv block, head, q step): dk and dv accumulate over the q
  blocks (and over the q heads sharing the kv head); the fused variant also writes this
  step's dq contribution."""
  del sinks_ref
  minor = QKVLayout.HEAD_DIM_MINOR
  kv_index, head, q_index = (primitives.program_id(0), primitives.program_id(1),
                             primitives.program_id(2))
  first = q_index == 0
  last = q_index == grid_width - 1
  if is_mqa:
    first = ufuncs.logical_and(first, head == 0)
    last = ufuncs.logical_and(last, head == num_q_heads - 1)
  elif num_kv_heads < num_q_heads:
    group = num_q_heads // num_kv_heads
    in_group = lax.rem(head, np.int32(group))
    first = ufuncs.logical_and(first, in_group == 0)
    last = ufuncs.logical_and(last, in_group == group - 1)

  @helpers.when(first)
  def _():
    dk_scratch_ref[...] = creation.zeros_like(dk_scratch_ref)
    dv_scratch_ref[...] = creation.zeros_like(dv_scratch_ref)

  _, _, should_run, should_not_mask = _next_nonzero(
      head, q_index, kv_index, data_next_ref, block_mask_ref, mask_next_ref, next_i=True)

  def body(c, _):
    sl = ds(c * bkv_compute, bkv_compute)
    q = q_ref[...]

    def kv_rows(ref, layout):
      return ref[sl, :] if layout == minor else ref[:, sl].T

    k, v = kv_rows(k_ref, k_layout), kv_rows(v_ref, v_layout)
    lse = logsumexp_ref[:1, :]
    do = do_ref[...]
    di = di_ref[:1, :]
    uncapped = _dot(k, q, NT_DIM_NUMBERS if q_layout == minor else NN_DIM_NUMBERS)
    qk = _apply_mask_and_soft_cap(
        uncapped, mask_value, should_not_mask, mask_ref, q_sequence_ref, q_segment_ids_ref,
        kv_segment_ids_ref, attn_logits_soft_cap=attn_logits_soft_cap, k_slice=sl,
        k_offset=kv_index * bkv + c * bkv_compute, bq=bq, k_in_lanes=False,
        mask_function=mask_function)
    p = ufuncs.exp(qk - lse)
    dv = lax_dot.dot(p.astype(do.dtype), do, preferred_element_type=_F32)
    dv_scratch_ref[sl, :] = dv.astype(dv_scratch_ref.dtype) + dv_scratch_ref[sl, :]
    dp = _dot(v, do, NT_DIM_NUMBERS)
    ds_ = _cap_grad((dp - di) * p, uncapped, attn_logits_soft_cap)
    dk = _dot(ds_.astype(do.dtype), q, NN_DIM_NUMBERS if q_layout == minor else NT_DIM_NUMBERS)
    dk_scratch_ref[sl, :] = dk.astype(dk_scratch_ref.dtype) + dk_scratch_ref[sl, :]
    if dq_scratch_ref is not None or dq_ref is not None:
      dq = _dot(ds_.T.astype(k.dtype), k, NN_DIM_NUMBERS)
      if dq_scratch_ref is not None:
        dq_scratch_ref[...] += dq
      else:
        dq_ref[...] = dq.astype(dq_ref.dtype)

  if dq_scratch_ref is not None:
    dq_scratch_ref[...] = creation.zeros_like(dq_scratch_ref)
  elif dq_ref is not None:
    dq_ref[...] = creation.zeros_like(dq_ref)

  @helpers.when(should_run)
  def _():
    steps = k_ref.shape[0 if k_layout is minor else 1] // bkv_compute
    loops.fori_loop(0, steps, body, None, unroll=True)

  if dq_scratch_ref is not None:
    dq_ref[...] = dq_scratch_ref[...].astype(dq_ref.dtype)

  @helpers.when(last)
  def _():
    dk_ref[...] = dk_scratch_ref[...].astype(dk_ref.dtype)
    dv_ref[...] = dv_scratch_ref[...].astype(dv_ref.dtype)
    if dq_scratch_ref is not None:
      dq_scratch_ref[...] = creation.zeros_like(dq_scratch_ref)
    dk_scratch_ref[...] = creation.zeros_like(dk_scratch_ref)
    dv_scratch_ref[...] = creation.zeros_like(dv_scratch_ref)


def _splash_attention_bwd_dkv(q, k, v, segment_ids, sinks, logsumexp, do, di, *, bq: int,
                              bkv: int, bkv_compute: int, is_mqa: bool, mask_info,
                              mask_value: float, attn_logits_soft_cap,
                              use_fused_bwd_kernel: bool, q_layout: QKVLayout,
                              k_layout: QKVLayout, v_layout: QKVLayout, mask_function,
                              interpret: bool):
  num_q_heads, q_len, head_dim_qk = q.shape
  head_dim_v = v.shape[-1]
  num_kv_heads, kv_len = (1, k.shape[0]) if is_mqa else k.shape[:2]
  if bq > q_len:
    raise ValueError(f"bq={bq} should not be greater than q_seq_len={q_len}")
  if bkv > kv_len:
    raise ValueError(f"bkv={bkv} should not be greater than kv_seq_len={kv_len}")
  if bkv_compute > bkv:
    raise ValueError(f"bkv_compute={bkv_compute} should not be greater than bkv={bkv}")
  if bkv % bkv_compute:
    raise ValueError(f"bkv={bkv} should be a multiple of bkv_compute={bkv_compute}")
  _check_kv(k, v, is_mqa, num_q_heads, num_kv_heads)
  per_kv = num_q_heads // num_kv_heads
  if mask_info.data_next is not None:
    grid_width = mask_info.data_next.shape[-2]
  else:
    grid_width = q_len // bq
  spec = pallas_core.BlockSpec

  def next_q(kv_index, head, q_index, data_next_ref, block_mask_ref, mask_next_ref=None):
    return _next_nonzero(head, q_index, kv_index, data_next_ref, block_mask_ref, mask_next_ref,
                         next_i=True)

  def kv_prefix(head):
    return () if is_mqa else (_div(head, per_kv),)

  def kv_block(d):
    return (bkv, d) if is_mqa else (None, bkv, d)

  o_spec = spec((None, bq, head_dim_v), lambda kv, h, qi, *s: (h, next_q(kv, h, qi, *s)[0], 0))
  q_spec = spec(from_head_minor((None, bq, head_dim_qk), q_layout),
                lambda kv, h, qi, *s: from_head_minor((h, next_q(kv, h, qi, *s)[0], 0),
                                                      q_layout))
  k_spec = spec(from_head_minor(kv_block(head_dim_qk), k_layout),
                lambda kv, h, *_: from_head_minor((*kv_prefix(h), kv, 0), k_layout))
  v_spec = spec(from_head_minor(kv_block(head_dim_v), v_layout),
                lambda kv, h, *_: from_head_minor((*kv_prefix(h), kv, 0), v_layout))
  if use_fused_bwd_kernel:
    dq_spec = spec((None, None, bq, head_dim_qk), lambda kv, h, qi, *_: (kv, h, qi, 0))
    dq_shape = ShapeDtypeStruct((kv_len // bkv, *q.shape), q.dtype)
    if bkv == bkv_compute:
      dq_scratch_spec = dq_scratch_shape = None
    else:
      dq_scratch_spec = spec((bq, head_dim_qk), lambda *_: (0, 0))
      dq_scratch_shape = ShapeDtypeStruct((bq, head_dim_qk), _F32)
  else:
    dq_spec = dq_shape = dq_scratch_spec = dq_scratch_shape = None
  dkv_map = lambda kv, h, *_: (*kv_prefix(h), kv, 0)  # noqa: E731
  q_cols = lambda kv, h, qi, *s: (0, next_q(kv, h, qi, *s)[0])  # noqa: E731
  if segment_ids is not None:
    seg_specs = [spec((NUM_SUBLANES, bq), q_cols),
                 spec((bkv, NUM_LANES), lambda kv, *_: (kv, 0))]
    q_seg = broadcasting.broadcast_in_dim(segment_ids.q, (NUM_SUBLANES, q_len), (1,))
    kv_seg = broadcasting.broadcast_in_dim(segment_ids.kv, (kv_len, NUM_LANES), (0,))
  else:
    seg_specs, q_seg, kv_seg = [None, None], None, None
  sinks, sinks_spec = _smem_sinks(sinks, num_q_heads)
  assert logsumexp.shape == di.shape == (num_q_heads, q_len)
  rows_shape = (num_q_heads, NUM_SUBLANES, q_len)
  logsumexp = lax_numpy.broadcast_to(lax_numpy.expand_dims(logsumexp, -2), rows_shape)
  di = lax_numpy.broadcast_to(lax_numpy.expand_dims(di, -2), rows_shape)
  row_spec = spec((None, NUM_SUBLANES, bq),
                  lambda kv, h, qi, *s: (h, 0, next_q(kv, h, qi, *s)[0]))
  in_specs = [q_spec, k_spec, v_spec, *seg_specs, sinks_spec, row_spec, o_spec, row_spec]
  pmb = mask_info.partial_mask_blocks
  in_specs.append(None if pmb is None else
                  spec((None, bkv, bq), lambda kv, h, qi, *s: (next_q(kv, h, qi, *s)[1], 0, 0)))
  if mask_info.q_sequence is not None:
    in_specs.append(spec((NUM_SUBLANES, bq), q_cols))
    q_sequence = broadcasting.broadcast_in_dim(mask_info.q_sequence, (NUM_SUBLANES, q_len),
                                               (1,))
  else:
    q_sequence = None
    in_specs.append(None)
  out_shapes = [dq_scratch_shape, ShapeDtypeStruct((bkv, head_dim_qk), _F32),
                ShapeDtypeStruct((bkv, head_dim_v), _F32), dq_shape,
                ShapeDtypeStruct(k.shape, k.dtype), ShapeDtypeStruct(v.shape, v.dtype)]
  out_specs = [dq_scratch_spec, spec((bkv, head_dim_qk), lambda *_: (0, 0)),
               spec((bkv, head_dim_v), lambda *_: (0, 0)), dq_spec,
               spec(kv_block(head_dim_qk), dkv_map), spec(kv_block(head_dim_v), dkv_map)]
  kernel = partial(_flash_attention_dkv_kernel, mask_value=mask_value, num_q_heads=num_q_heads,
                   num_kv_heads=num_kv_heads, is_mqa=is_mqa, grid_width=grid_width, bq=bq,
                   bkv_compute=bkv_compute, attn_logits_soft_cap=attn_logits_soft_cap,
                   q_layout=q_layout, k_layout=k_layout, v_layout=v_layout, bkv=bkv,
                   mask_function=mask_function)
  name = get_kernel_name(is_mqa=is_mqa, save_residuals=False,
                         is_segmented=segment_ids is not None, phase="dkv")
  metadata = {"xprof_metadata": json.dumps(dict(
      block_q_dkv=bq, block_kv_dkv=bkv, block_kv_dkv_compute=bkv_compute, q_layout=q_layout,
      k_layout=k_layout, v_layout=v_layout))}
  _, _, _, dq_parts, dk, dv = _run(
      kernel, name, (kv_len // bkv, num_q_heads, grid_width), in_specs, out_specs, out_shapes,
      ("arbitrary", "arbitrary", "arbitrary"), interpret, metadata, mask_info,
      [_oriented(q, q_layout), _oriented(k, k_layout), _oriented(v, v_layout), q_seg, kv_seg,
       sinks, logsumexp, do, di, pmb, q_sequence])
  if use_fused_bwd_kernel:
    assert dq_parts is not None
    return reductions.sum(dq_parts, axis=0), dk, dv
  assert dq_parts is None
  return None, dk, dv


def _splash_attention_bwd(save_residuals, mask_value, is_mqa, block_sizes,
                          residual_checkpoint_name, mask_function, attn_logits_soft_cap,
                          interpret, res, do):
  del save_residuals, residual_checkpoint_name
  if not block_sizes.has_backward_blocks:
    raise ValueError("Need to specify backward blocks.")
  q, k, v, segment_ids, sinks, o, lse, dq_mask_info, dkv_mask_info = res
  layouts = dict(q_layout=block_sizes.q_layout, k_layout=block_sizes.k_layout,
                 v_layout=block_sizes.v_layout)
  di = einsum_lib.einsum("hsd,hsd->hs", o.astype(_F32), do.astype(_F32))
  assert dkv_mask_info is not None
  dq, dk, dv = _splash_attention_bwd_dkv(
      q, k, v, segment_ids, sinks, lse, do, di, bq=block_sizes.block_q_dkv,
      bkv=block_sizes.block_kv_dkv, bkv_compute=block_sizes.block_kv_dkv_compute,
      is_mqa=is_mqa, mask_info=dkv_mask_info, mask_value=mask_value,
      attn_logits_soft_cap=attn_logits_soft_cap,
      use_fused_bwd_kernel=block_sizes.use_fused_bwd_kernel, mask_function=mask_function,
      interpret=interpret, **layouts)
  if not block_sizes.use_fused_bwd_kernel:
    assert dq is None and dq_mask_info is not None
    dq = _splash_attention_bwd_dq(
        q, k, v, segment_ids, sinks, lse, do, di, bq=block_sizes.block_q_dq,
        bkv=block_sizes.block_kv_dq, is_mqa=is_mqa, mask_info=dq_mask_info,
        mask_value=mask_value, attn_logits_soft_cap=attn_logits_soft_cap,
        mask_function=mask_function, interpret=interpret, **layouts)
  dsinks = None
  if sinks is not None:
    e = -ufuncs.exp(sinks[..., None, None].astype(_F32) - lse[..., None].astype(_F32))
    dsinks = reductions.sum(e.astype(o.dtype) * o * do, axis=(-1, -2))
  return None, None, None, dq, dk, dv, None, dsinks


_splash_attention_custom.defvjp(_splash_attention_fwd, _splash_attention_bwd)


@partial(jit.jit, static_argnames=["is_mqa", "block_sizes", "save_residuals", "mask_value",
                                   "attn_logits_soft_cap", "residual_checkpoint_name",
                                   "mask_function", "interpret"])
def _splash_attention(fwd_mask_info, dq_mask_info, dkv_mask_info, q, k, v, segment_ids=None,
                      sinks=None, *, is_mqa: bool, block_sizes, save_residuals: bool,
                      mask_value: float, attn_logits_soft_cap, residual_checkpoint_name,
                      mask_function, interpret: bool):
  """The splash attention of q [heads, q_len, d] (dynamic masks' partial blocks, [heads, q
  blocks, kv blocks, bq, bkv], are collapsed to one leading axis first)."""
  def collapse(info):
    if info is None or info.partial_mask_blocks is None:
      return info
    pmb = info.partial_mask_blocks
    return info._replace(partial_mask_blocks=pmb.reshape(-1, *pmb.shape[-2:]))

  return _splash_attention_custom(
      collapse(fwd_mask_info), collapse(dq_mask_info), collapse(dkv_mask_info), q, k, v,
      segment_ids, sinks, mask_value=mask_value, is_mqa=is_mqa, block_sizes=block_sizes,
      save_residuals=save_residuals, attn_logits_soft_cap=attn_logits_soft_cap,
      residual_checkpoint_name=residual_checkpoint_name, mask_function=mask_function,
      interpret=interpret)


@tree_util.register_pytree_node_class
class SplashAttentionKernel:
  """A splash attention function bound to its processed masks (a pytree: the MaskInfos are
  its children): kernel(q, k, v, segment_ids=None, sinks=None)."""

  def __init__(self, fwd_mask_info, dq_mask_info, dkv_mask_info, **kwargs):
    self.kwargs = kwargs
    self.fwd_mask_info = fwd_mask_info
    self.dq_mask_info = dq_mask_info
    self.dkv_mask_info = dkv_mask_info

  def __call__(self, *args, **kwargs):
    scope = ("dynamic_sparsity_splash" if self.fwd_mask_info.is_dynamic_mask
             else "static_sparsity_splash")
    with environment.named_scope(scope):
      return _splash_attention(self.fwd_mask_info, self.dq_mask_info, self.dkv_mask_info,
                               *args, **kwargs, **self.kwargs)

  def manual_sharding_spec(self, sharding):
    """The kernel's shard_map partition spec under `sharding` (a 2-d NamedSharding over
    (heads, q blocks))."""
    info = self.fwd_mask_info
    if info.data_next is not None:
      shape = info.data_next.shape
      try:
        shard = sharding.shard_shape(shape)
      except ValueError as exc:
        raise ValueError("The sharding must divide the mask blocks evenly between devices"
                         ) from exc
      if shape[-1] != shard[-1]:
        raise ValueError("Sharding the kv sequence dimension is not supported")
    spec = sharding.spec
    assert len(spec) == 2
    P = sharding_impls.PartitionSpec
    specs = mask_info_lib.MaskInfo(
        data_next=spec if info.data_next is not None else None,
        mask_next=spec if info.mask_next is not None else None,
        block_mask=spec if info.block_mask is not None else None,
        partial_mask_blocks=(None if info.partial_mask_blocks is None
                             else spec if info.is_dynamic_mask else P()),
        q_sequence=P(spec[1]) if info.q_sequence is not None else None)
    return SplashAttentionKernel(specs, specs if self.dq_mask_info is not None else None,
                                 specs if self.dkv_mask_info is not None else None,
                                 **self.kwargs)

  def tree_flatten(self):
    return (self.fwd_mask_info, self.dq_mask_info, self.dkv_mask_info), self.kwargs

  @classmethod
  def tree_unflatten(cls, kwargs, values):
    fwd, dq, dkv = values
    wrap = lambda x: None if x is None else mask_info_lib.MaskInfo(*x)  # noqa: E731
    return SplashAttentionKernel(mask_info_lib.MaskInfo(*fwd), wrap(dq), wrap(dkv), **kwargs)


def _make_splash_attention(mask, *, block_sizes: BlockSizes | None = None, is_mqa: bool,
                           save_residuals: bool = False, mask_value: float = DEFAULT_MASK_VALUE,
                           attn_logits_soft_cap: float | None = None,
                           downcast_smem_data: bool = True, head_shards: int,
                           q_seq_shards: int, residual_checkpoint_name: str | None = None,
                           interpret: bool = False):
  """A `SplashAttentionKernel` for `mask` ([heads, q, kv]: a NumPy array, a MultiHeadMask, or
  an arrax array for a dynamic mask), with its forward, dq and dkv MaskInfos."""
  if len(mask.shape) != 3:
    raise ValueError(f"Unexpected mask shape: {mask.shape}")
  if isinstance(mask, np.ndarray):
    mask = mask_lib.MultiHeadMask([mask_lib.NumpyMask(m) for m in mask])
  if block_sizes is None:
    block_sizes = BlockSizes.get_default()
  dynamic = isinstance(mask, Array)
  process = (mask_info_lib.process_dynamic_mask if dynamic else mask_info_lib.process_mask)
  process_dkv = (mask_info_lib.process_dynamic_mask_dkv if dynamic
                 else mask_info_lib.process_mask_dkv)
  shards = dict(downcast_smem_data=downcast_smem_data, head_shards=head_shards,
                q_seq_shards=q_seq_shards)
  to_arrays = partial(tree_util.tree_map, creation.array)
  fwd_info, fn_fwd = process(mask, (block_sizes.block_q, block_sizes.block_kv), **shards)
  fwd_info = to_arrays(fwd_info)
  dq_info = dkv_info = None
  if block_sizes.has_backward_blocks:
    if not block_sizes.use_fused_bwd_kernel:
      dq_info, fn_dq = process(mask, (block_sizes.block_q_dq, block_sizes.block_kv_dq),
                               **shards)
      assert (fn_fwd is None) == (fn_dq is None)
      dq_info = to_arrays(dq_info)
    dkv_info, fn_dkv = process_dkv(mask, (block_sizes.block_q_dkv, block_sizes.block_kv_dkv),
                                   shrink_grid=not block_sizes.use_fused_bwd_kernel, **shards)
    assert (fn_fwd is None) == (fn_dkv is None)
    dkv_info = to_arrays(dkv_info)
  return SplashAttentionKernel(
      fwd_info, dq_info, dkv_info, block_sizes=block_sizes, is_mqa=is_mqa,
      save_residuals=save_residuals, mask_value=mask_value,
      attn_logits_soft_cap=attn_logits_soft_cap,
      residual_checkpoint_name=residual_checkpoint_name, mask_function=fn_fwd,
      interpret=interpret)


make_splash_mha = partial(_make_splash_attention, is_mqa=False)
make_splash_mqa = partial(_make_splash_attention, is_mqa=True)
make_splash_mha_single_device = partial(make_splash_mha, is_mqa=False, head_shards=1,
                                        q_seq_shards=1)
make_splash_mqa_single_device = partial(make_splash_mha, is_mqa=True, head_shards=1,
                                        q_seq_shards=1)
