"""jax.experimental.pallas.ops.tpu.paged_attention and .ragged_paged_attention against JAX
0.10.2: the paged attention kernel in TPU interpret mode, the int8 quantization utilities, the
dense references, the input validators and the block-size helpers. JAX's TPU interpreter cannot
run the ragged kernel (it fails on a ref reshape), so arrax's is checked against JAX's
reference function instead."""
import functools
import importlib

import jax
import jax.experimental.pallas.tpu  # noqa: F401
import numpy as np
import pytest
from oracle import BF16, call_with, check_all, check_error, check_value, rand

import arrax
import arrax.experimental.pallas.tpu  # noqa: F401

TOP = call_with("top")
ok = functools.partial(check_value, build=TOP)
err = functools.partial(check_error, build=TOP)


def _mod(top, name):
  return importlib.import_module(f"{top.__name__}.experimental.pallas.ops.tpu.{name}")


# ---- paged_attention -----------------------------------------------------------------------------
B, HQ, HKV, D, PAGES, PS, PPS = 2, 4, 2, 8, 8, 4, 4
Q = rand((B, HQ, D), np.float32, seed=1)
K = rand((HKV, PAGES, PS, D), np.float32, seed=2)
V = rand((HKV, PAGES, PS, D), np.float32, seed=3)
LENS = np.array([5, 16], np.int32)
PIDX = np.random.default_rng(4).permutation(PAGES).reshape(B, PPS).astype(np.int32)


def _paged(top, q, k, v, lens, pidx, quantize=False, interpret=True, **kw):
  pa = _mod(top, "paged_attention")
  if quantize:
    qu = _mod(top, "paged_attention.quantization_utils")
    k, v = qu.quantize_to_int8(k), qu.quantize_to_int8(v)
  kw.setdefault("pages_per_compute_block", 2)
  if not interpret:
    return pa.paged_attention(q, k, v, lens, pidx, **kw)
  with top.experimental.pallas.tpu.force_tpu_interpret_mode():
    return pa.paged_attention(q, k, v, lens, pidx, **kw)


def test_paged_attention_kernel():
  q8 = rand((B, 8, D), BF16, seed=5)   # 8 q heads per kv head: no unit axis, bfloat16 kernel
  k1, v1 = K[:1].astype(BF16), V[:1].astype(BF16)
  args = (Q, K, V, LENS, PIDX)
  check_all([
      ("inline", lambda: ok(_paged, *args, tol=1e-5)),
      ("grid_seq_soft_cap", lambda: ok(_paged, *args, inline_seq_dim=False,
                                       attn_logits_soft_cap=2.0, tol=1e-5)),
      ("quantized", lambda: ok(_paged, *args, quantize=True, tol=1e-5)),
      ("bf16_groups8", lambda: ok(_paged, q8, k1, v1, LENS, PIDX, pages_per_compute_block=4,
                                  tol=1e-2)),
      ("empty_seq", lambda: ok(_paged, *args[:3], np.array([0, 9], np.int32), PIDX,
                               inline_seq_dim=False, tol=1e-5)),
      ("kv_shapes", lambda: err(_paged, Q, K, V[:, :4], LENS, PIDX, match="same shape")),
      ("heads", lambda: err(_paged, Q[:, :3], K, V, LENS, PIDX, match="divisible by number")),
      ("head_dim", lambda: err(_paged, Q[:, :, :4], K, V, LENS, PIDX, match="head_dim of Q")),
      ("block", lambda: err(_paged, *args, pages_per_compute_block=3,
                            match="pages_per_compute_block must be")),
      ("lengths_batch", lambda: err(_paged, Q, K, V, LENS[:1], PIDX, match="same batch size")),
      ("pidx_batch", lambda: err(_paged, Q, K, V, LENS, PIDX[:1], match="same batch size")),
      ("lengths_dtype", lambda: err(_paged, Q, K, V, LENS.astype(np.uint32), PIDX,
                                    match="must be int32")),
      ("megacore_name", lambda: err(_paged, *args, megacore_mode="x", match="megacore_mode")),
      ("megacore_odd", lambda: err(_paged, Q, K[:1], V[:1], LENS, PIDX,
                                   megacore_mode="kv_head", match="must be even")),
      ("no_interpret", lambda: err(_paged, *args, interpret=False,
                                   match="Only interpret mode")),
  ])


@pytest.mark.parametrize("mode", ["batch", "kv_head"])
def test_paged_attention_megacore(mode):
  # JAX's TPU interpreter hangs on the two-core grid; arrax runs the cores in turn and must
  # give JAX's single-core result.
  expected = _paged(jax, Q, K, V, LENS, PIDX)
  got = _paged(arrax, Q, K, V, LENS, PIDX, megacore_mode=mode)
  np.testing.assert_allclose(np.asarray(got), np.asarray(expected), rtol=1e-5, atol=1e-5)


def _qu(top, name, *args, **kw):
  return getattr(_mod(top, "paged_attention.quantization_utils"), name)(*args, **kw)


def _quantize_roundtrip(top, x, dtype):
  qu = _mod(top, "paged_attention.quantization_utils")
  t = qu.quantize_to_int8(x)
  return t.weight, t.scales, qu.unquantize_from_int8(t), qu.unquantize_from_int8(t, dtype)


def _reference(top, q, k, v, lens, quantize=False, **kw):
  util = _mod(top, "paged_attention.util")
  if quantize:
    qu = _mod(top, "paged_attention.quantization_utils")
    k, v = qu.quantize_to_int8(k), qu.quantize_to_int8(v)
  return util.grouped_query_attention_reference(q, k, v, lens, **kw)


def test_quantization_and_reference():
  x = rand((2, 3, 8), np.float32, seed=6)
  h = np.abs(x).max(-1, keepdims=True)
  kd = rand((B, HKV, 8, D), np.float32, seed=7)
  vd = rand((B, HKV, 8, D), np.float32, seed=8)
  lens = np.array([3, 8], np.int32)
  check_all([
      ("to_int8", lambda: ok(_qu, "to_int8", x, h)),
      ("from_int8", lambda: ok(_qu, "from_int8", rand((3, 8), np.int8, seed=9), h[0],
                               tol=1e-6)),
      ("from_int8_f32", lambda: ok(_qu, "from_int8", rand((3, 8), np.int8, seed=9), h[0],
                                   np.float32)),
      ("scales", lambda: ok(_qu, "get_quantization_scales", x)),
      ("roundtrip", lambda: ok(_quantize_roundtrip, x, np.float32, tol=1e-6)),
      ("constants", lambda: ok(lambda top: (
          _mod(top, "paged_attention.quantization_utils").MAX_INT8,
          _mod(top, "paged_attention.util").MASK_VALUE,
          _mod(top, "paged_attention.paged_attention_kernel").DEFAULT_MASK_VALUE)),
       ),
      ("reference", lambda: ok(_reference, Q, kd, vd, lens, tol=1e-5)),
      ("reference_cap", lambda: ok(_reference, Q, kd, vd, lens, soft_cap=1.5, tol=1e-5)),
      ("reference_bf16", lambda: ok(_reference, Q.astype(BF16), kd.astype(BF16),
                                    vd.astype(BF16), lens, tol=1e-2)),
      ("reference_quantized", lambda: err(_reference, Q, kd, vd, lens, quantize=True,
                                          match="shape")),
      ("reference_heads", lambda: err(_reference, Q[:, :3], kd, vd, lens, match="^$")),
  ])
  pt = _mod(arrax, "paged_attention.quantization_utils").P
  assert pt is arrax.sharding.PartitionSpec


# ---- ragged_paged_attention ----------------------------------------------------------------------
RQ = rand((16, 4, 128), np.float32, seed=10)
RKV = rand((12, 4, 4, 128), np.float32, seed=11)   # 12 pages of 4, 2 kv heads (k, v interleaved)
RLENS = np.array([6, 13, 3, 0], np.int32)
RPIDX = (np.random.default_rng(12).permutation(16).reshape(4, 4) % 12).astype(np.int32)
RCU = np.array([0, 1, 8, 11, 11], np.int32)
RNS = np.array([3], np.int32)
RARGS = (RQ, RKV, RLENS, RPIDX, RCU, RNS)


def _rk(top, name, *args, **kw):
  return getattr(_mod(top, "ragged_paged_attention.kernel"), name)(*args, **kw)


def _tb(top, name, *args, **kw):
  return getattr(_mod(top, "ragged_paged_attention.tuned_block_sizes"), name)(*args, **kw)


def _ragged(top, *args, **kw):
  rpa = _mod(top, "ragged_paged_attention")
  with top.experimental.pallas.tpu.force_tpu_interpret_mode():
    return rpa.ragged_paged_attention(*args, **kw)


def test_ragged_reference_and_validation():
  ref = functools.partial(ok, _rk, "ref_ragged_paged_attention", tol=1e-5)
  static = functools.partial(err, _rk, "static_validate_inputs")
  dynamic = functools.partial(err, _rk, "dynamic_validate_inputs")
  q, kv, lens, pidx, cu, ns = RARGS
  check_all([
      ("ref", lambda: ref(*RARGS, sm_scale=0.3)),
      ("ref_window_cap", lambda: ref(*RARGS, sliding_window=3, soft_cap=2.0, mask_value=None)),
      ("ref_scales", lambda: ref(*RARGS, k_scale=0.5, v_scale=2.0)),
      ("ref_bf16", lambda: ok(_rk, "ref_ragged_paged_attention", q.astype(BF16),
                              kv.astype(BF16), *RARGS[2:], tol=2e-2)),
      ("valid", lambda: ok(lambda top: (_rk(top, "dynamic_validate_inputs", *RARGS, sm_scale=0.5,
                                            num_kv_pages_per_block=2,
                                            num_queries_per_block=4), 1))),
      ("num_seqs_shape", lambda: static(q, kv, lens, pidx, cu, np.array([3, 0], np.int32),
                                        match="must be \\(1,\\)")),
      ("head_dim", lambda: static(q[:, :, :64], *RARGS[1:], match="Q head_dim")),
      ("kv_lens_shape", lambda: static(q, kv, lens[:3], pidx, cu, ns, match="kv_lens.shape")),
      ("cu_shape", lambda: static(q, kv, lens, pidx, cu[:4], ns, match="cu_q_lens.shape")),
      ("dtype", lambda: static(q, kv, lens, pidx.astype(np.int16), cu, ns, match="int32")),
      ("heads", lambda: static(q[:, :3], *RARGS[1:], match="must be divisible")),
      ("window", lambda: static(*RARGS, sliding_window=0, match="must be positive")),
      ("cap", lambda: static(*RARGS, soft_cap=0.0, match="must not be 0.0")),
      ("kv_block", lambda: static(*RARGS, num_kv_pages_per_block=5, match="must be in range")),
      ("q_block", lambda: static(*RARGS, num_queries_per_block=0, match="must be positive")),
      ("vmem", lambda: static(*RARGS, vmem_limit_bytes=-1, match="must be positive")),
      ("k_scale_type", lambda: static(*RARGS, k_scale=1, match="^$")),
      ("too_many_seqs", lambda: dynamic(*RARGS[:5], np.array([5], np.int32),
                                        match="must be less or equal to max_num_seqs")),
      ("too_few_pages", lambda: dynamic(q, kv, np.array([6, 17, 3, 0], np.int32), pidx, cu, ns,
                                        match="must be greater or equal")),
      ("too_many_tokens", lambda: dynamic(q, kv, lens, pidx, np.array([0, 1, 8, 17, 17],
                                                                      np.int32), ns,
                                          match="Total q tokens")),
      ("q_longer_than_kv", lambda: dynamic(q, kv, lens, pidx, np.array([0, 7, 8, 11, 11],
                                                                       np.int32), ns,
                                           match="at sequence 0")),
  ])


def test_ragged_helpers():
  dts = [np.float32, BF16, np.int8, np.dtype("int4"), np.dtype("float8_e4m3fn"), np.int16]
  check_all([
      ("packing", lambda: ok(lambda top: [_rk(top, "get_dtype_packing", d) for d in dts])),
      ("min_heads", lambda: ok(lambda top: [
          _rk(top, "get_min_heads_per_blk", hq, hkv, qd, kd)
          for hq, hkv, qd, kd in [(4, 4, np.float32, np.float32), (32, 16, BF16, BF16),
                                  (64, 32, np.float32, np.int8), (6, 4, BF16, np.float32),
                                  (48, 32, np.float32, np.float32)]])),
      ("min_heads_untiled", lambda: err(_rk, "get_min_heads_per_blk", 6, 6, np.float32, BF16,
                                        match="can not be XLA fully tiled")),
      ("pow2", lambda: ok(lambda top: [_tb(top, "next_power_of_2", x) for x in (1, 2, 3, 17)])),
      ("pow2_zero", lambda: err(_tb, "next_power_of_2", 0, match="^$")),
      ("simplify", lambda: ok(_tb, "simplify_key", (np.float32, BF16, 3, 5, 130, 12, 100, 3))),
      ("device", lambda: ok(lambda top: (_tb(top, "get_tpu_version"),
                                         _tb(top, "get_device_name"),
                                         _tb(top, "get_device_name", 4)))),
      ("min_page", lambda: ok(lambda top: [_tb(top, "get_min_page_size", n, *m)
                                           for n, m in [(100, ()), (5000, ()), (5000, (8,))]])),
      ("max_pages", lambda: ok(lambda top: _mod(
          top, "ragged_paged_attention.tuned_block_sizes").MAX_PAGES_PER_SEQ)),
      ("tuned_off_tpu", lambda: err(_tb, "get_tuned_block_sizes", np.float32, np.float32, 4, 2,
                                    128, 4, 16, 4, match="TPU version must be 4")),
      ("kernel_no_blocks", lambda: err(_ragged, *RARGS, match="TPU version must be 4")),
  ])


@pytest.mark.parametrize("kw", [
    dict(num_kv_pages_per_block=2, num_queries_per_block=4, sm_scale=0.3),
    dict(num_kv_pages_per_block=1, num_queries_per_block=8, sliding_window=3, soft_cap=2.0,
         k_scale=0.5, v_scale=2.0)], ids=["plain", "window_cap_scales"])
def test_ragged_kernel(kw):
  # JAX 0.10.2's TPU interpreter fails on the kernel's ref reshape (an INTERNAL callback
  # error), so arrax's kernel is compared with JAX's reference function.
  with pytest.raises(jax.errors.JaxRuntimeError, match="ReshapeTransform"):
    _ragged(jax, *RARGS, **kw)
  ref_kw = {k: v for k, v in kw.items() if not k.startswith("num_")}
  expected = _mod(jax, "ragged_paged_attention").ref_ragged_paged_attention(*RARGS, **ref_kw)
  got = _ragged(arrax, *RARGS, **kw)
  assert got.shape == RQ.shape and got.dtype == np.float32
  # rows past the last sequence's queries (11:) are never written: only 0:11 have values
  np.testing.assert_allclose(np.asarray(got)[:11], np.asarray(expected), rtol=2e-5, atol=2e-5)
