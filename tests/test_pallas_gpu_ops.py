"""jax.experimental.pallas.ops.gpu's Triton-style kernels (softmax, layer_norm, rms_norm,
attention, decode_attention, paged_attention) against JAX 0.10.2, both with `interpret=True`:
values, the custom VJPs' backward kernels, the references and the error cases; plus the
masked load/store past a ref's end they rely on."""
import functools
import importlib

import jax
import jax.experimental.pallas.triton  # noqa: F401
import numpy as np
from oracle import call_with, check_all, check_raises, check_value, rand

import arrax
import arrax.experimental.pallas.triton  # noqa: F401

TOP = call_with("top")
ok = functools.partial(check_value, build=TOP)
raises = functools.partial(check_raises, build=TOP)
TOL = 2e-5


def _ops(top, name):
  return importlib.import_module(f"{top.__name__}.experimental.pallas.ops.gpu.{name}")


# ---- triton load/store past the end of a ref ------------------------------------------------
def _overrun(top, x):
  pl = top.experimental.pallas
  plgpu = top.experimental.pallas.triton
  jnp = top.numpy

  def kernel(x_ref, o_ref, p_ref):
    valid = jnp.arange(8) < 5
    row = plgpu.load(x_ref.at[pl.ds(0, 8)], mask=valid, other=-1.0)
    plgpu.store(o_ref.at[pl.ds(0, 8)], row * 2, mask=valid)
    p_ref[...] = jnp.zeros_like(p_ref)

    @pl.loop(0, 2)
    def _(i):   # traced starts: the second block runs past the end (no shift back)
      block = plgpu.load(x_ref.at[pl.ds(i * 4, 4)], mask=jnp.arange(4) + i * 4 < 5, other=0.)
      plgpu.store(p_ref.at[pl.ds(i * 4, 4)], block + 10.)
  return pl.pallas_call(kernel, out_shape=[top.ShapeDtypeStruct((5,), x.dtype)] * 2,
                        grid=(), interpret=True)(x)


def test_triton_load_store_overrun():
  x = rand((5,), np.float32, seed=1)
  check_all([("overrun", lambda: ok(_overrun, x, exact=True))])


# ---- softmax --------------------------------------------------------------------------------
def _softmax(top, x, **kw):
  return _ops(top, "softmax").softmax(x, interpret=True, **kw)


def test_softmax():
  x = rand((2, 3, 5), np.float32, seed=2)
  check_all([
      ("f32", lambda: ok(_softmax, x, tol=TOL)),
      ("bf16_axis", lambda: ok(_softmax, x[0].astype(jax.numpy.bfloat16), axis=1, tol=1e-2)),
      ("non_trailing", lambda: raises(_softmax, x, axis=0, match=["non-trailing"])),
  ])


# ---- layer_norm / rms_norm ------------------------------------------------------------------
def _norm(top, kind, x, w, b, **kw):
  return getattr(_ops(top, kind), kind)(x, w, b, interpret=True, **kw)


def _norm_grad(top, kind, x, w, b, impl):
  def loss(x, w, b):
    y = _norm(top, kind, x, w, b, backward_pass_impl=impl)
    return (y * top.numpy.cos(x)).sum()
  return top.grad(loss, argnums=(0, 1, 2))(x, w, b)


def _norm_forward(top, kind, x, w, b):
  return getattr(_ops(top, kind), f"{kind}_forward")(x, w, b, eps=1e-3, interpret=True)


def _norm_reference(top, kind, x, w, b, **kw):
  return getattr(_ops(top, kind), f"{kind}_reference")(x, w, b, **kw)


def _norm_cases(kind):
  x = rand((2, 3, 20), np.float32, seed=3)
  w, b = rand((20,), np.float32, seed=4), rand((20,), np.float32, seed=5)
  xl, wl = rand((1, 1, 4100), np.float32, seed=9), rand((4100,), np.float32, seed=19)
  return [
      (f"{kind}", lambda: ok(_norm, kind, x, w, b, tol=TOL)),
      (f"{kind}_eps", lambda: ok(_norm, kind, x, w, b, eps=0.5, tol=TOL)),
      (f"{kind}_forward", lambda: ok(_norm_forward, kind, x, w, b, tol=TOL)),
      (f"{kind}_reference", lambda: ok(_norm_reference, kind, x, w, b, tol=TOL)),
      (f"{kind}_reference_eps", lambda: raises(_norm_reference, kind, x, w, b, eps=1e-3,
                                               match=["rank should be at least 1"])),
      (f"{kind}_grad", lambda: ok(_norm_grad, kind, x, w, b, "triton", tol=1e-4)),
      (f"{kind}_grad_xla", lambda: ok(_norm_grad, kind, x, w, b, "xla", tol=1e-4)),
      (f"{kind}_rank2", lambda: raises(_norm, kind, x[0], w, b)),
      (f"{kind}_bf16_grad", lambda: ok(_norm_grad, kind, *(a.astype(jax.numpy.bfloat16)
                                                           for a in (x, w, b)), "triton",
                                       tol=2e-2)),
      (f"{kind}_two_blocks", lambda: ok(_norm, kind, xl, wl, wl[::-1].copy(), tol=TOL)),
  ]


def test_layer_norm():
  check_all(_norm_cases("layer_norm"))


def test_rms_norm():
  check_all(_norm_cases("rms_norm"))


def test_norm_kernels_match_references():
  x = rand((2, 3, 20), np.float32, seed=6)
  w, b = rand((20,), np.float32, seed=7), rand((20,), np.float32, seed=8)
  for kind in ("layer_norm", "rms_norm"):
    mod = _ops(arrax, kind)
    got = getattr(mod, kind)(x, w, b, interpret=True)
    np.testing.assert_allclose(got, getattr(mod, f"{kind}_reference")(x, w, b), atol=1e-5)


# ---- attention ------------------------------------------------------------------------------
B, T, H, D = 1, 32, 2, 12
SEG = np.array([[0] * 20 + [1] * 12], np.int32)


def _blocks(top, **kw):
  sizes = dict(block_q=16, block_k=16, block_q_dkv=16, block_kv_dkv=16, block_q_dq=16,
               block_kv_dq=16)
  return _ops(top, "attention").BlockSizes(**dict(sizes, **kw))


def _mha(top, q, k, v, seg, blocks=None, **kw):
  return _ops(top, "attention").mha(q, k, v, seg, block_sizes=_blocks(top, **(blocks or {})),
                                    interpret=True, **kw)


def _mha_grad(top, q, k, v, seg, blocks=None, **kw):
  def loss(q, k, v):
    return (_mha(top, q, k, v, seg, blocks, **kw) * top.numpy.sin(q)).sum()
  return top.grad(loss, argnums=(0, 1, 2))(q, k, v)


def _mha_reference(top, q, k, v, seg, **kw):
  return _ops(top, "attention").mha_reference(q, k, v, seg, **kw)


def _segment_mask(top, q_ids, kv_ids):
  return _ops(top, "attention").segment_mask(q_ids, kv_ids)


def _block_sizes_api(top):
  bs = _ops(top, "attention").BlockSizes
  d = bs.get_default()
  return (d.block_q, d.block_k, d.block_q_dkv, d.block_kv_dq, d.has_backward_blocks,
          bs(block_q=8, block_k=8).has_backward_blocks)


def test_attention_forward():
  q, k, v = (rand((B, T, H, D), np.float32, seed=s) for s in (10, 11, 12))
  check_all([
      ("plain", lambda: ok(_mha, q, k, v, None, sm_scale=0.5, tol=TOL)),
      ("causal_segments", lambda: ok(_mha, q, k, v, SEG, causal=True, tol=TOL)),
      ("residuals", lambda: ok(_mha, q, k, v, SEG, return_residuals=True, tol=TOL)),
      ("bf16", lambda: ok(_mha, *(a.astype(jax.numpy.bfloat16) for a in (q, k, v)), None,
                          causal=True, tol=2e-2)),
      ("reference", lambda: ok(_mha_reference, q, k, v, SEG, causal=True, sm_scale=0.5,
                               tol=TOL)),
      ("segment_mask", lambda: ok(_segment_mask, SEG, SEG, exact=True)),
      ("segment_mask_1d", lambda: ok(_segment_mask, SEG[0, :6], SEG[0, 10:30], exact=True)),
      ("block_sizes", lambda: ok(_block_sizes_api, exact=True)),
  ])


def test_attention_backward():
  q, k, v = (rand((B, T, H, D), np.float32, seed=s) for s in (13, 14, 15))
  check_all([
      ("triton", lambda: ok(_mha_grad, q, k, v, None, sm_scale=0.5, tol=1e-4)),
      ("triton_causal_segments", lambda: ok(_mha_grad, q, k, v, SEG, causal=True, tol=1e-4)),
      ("xla", lambda: ok(_mha_grad, q, k, v, SEG, backward_pass_impl="xla", tol=1e-4)),
  ])
  # The kernels against differentiating the reference.
  mod = _ops(arrax, "attention")
  got = _mha_grad(arrax, q, k, v, SEG, causal=True)
  want = arrax.grad(lambda *a: (mod.mha_reference(*a, SEG, causal=True)
                                * arrax.numpy.sin(a[0])).sum(), argnums=(0, 1, 2))(q, k, v)
  for g, w in zip(got, want):
    np.testing.assert_allclose(g, w, atol=1e-4)


def test_attention_errors():
  q, k, v = (rand((B, T, H, D), np.float32, seed=s) for s in (16, 17, 18))
  check_all([
      ("head_dims", lambda: raises(_mha, q, k, v[..., :8], None,
                                   match=["same head dimension"])),
      ("q_blocks", lambda: raises(_mha, q, k, v, None, blocks=dict(block_q=12),
                                  match=["must be a multiple of"])),
      ("k_blocks", lambda: raises(_mha, q, k, v, None, blocks=dict(block_k=12),
                                  match=["must be a multiple of"])),
      ("grad_residuals", lambda: raises(
          lambda top, *a: top.grad(lambda q: _mha(top, q, *a, return_residuals=True)[0].sum())(q),
          k, v, None, match=["return_residuals"])),
      ("no_backward_blocks", lambda: raises(
          lambda top, *a: top.grad(lambda q: _ops(top, "attention").mha(
              q, *a, block_sizes=_ops(top, "attention").BlockSizes(16, 16),
              interpret=True).sum())(q), k, v, None, match=["Backward block sizes"])),
      ("block_counts", lambda: raises(_mha_grad, q, k, v, None, blocks=dict(block_q_dq=8),
                                      match=["same number of blocks"])),
      ("bad_impl", lambda: raises(_mha_grad, q, k, v, None, backward_pass_impl="cuda",
                                  match=["Invalid backward pass implementation"])),
  ])


# ---- decode_attention -----------------------------------------------------------------------
DEC = dict(k_splits=2, block_k=16, interpret=True)


def _decode(top, fn, *args, **kw):
  return getattr(_ops(top, "decode_attention"), fn)(*args, **kw)


def test_decode_attention():
  q = rand((2, 4, 8), np.float32, seed=20)
  k, v = rand((2, 64, 8), np.float32, seed=21), rand((2, 64, 8), np.float32, seed=22)
  k4, v4 = rand((2, 64, 2, 8), np.float32, seed=23), rand((2, 64, 2, 8), np.float32, seed=24)
  kh = rand((2, 64, 4, 8), np.float32, seed=25)
  start, length = np.array([3, 20], np.int32), np.array([40, 64], np.int32)
  check_all([
      ("mqa", lambda: ok(_decode, "mqa", q, k, v, start, length, **DEC, tol=TOL)),
      ("mqa_residuals", lambda: ok(_decode, "mqa", q, k, v, return_residuals=True,
                                   sm_scale=0.3, **DEC, tol=TOL)),
      ("gqa", lambda: ok(_decode, "gqa", q, k4, v4, None, length, **DEC, tol=TOL)),
      ("gqa_unnormalized", lambda: ok(_decode, "gqa", q, k4, v4, start, np.int32(30),
                                      normalize_output=False, return_residuals=True, **DEC,
                                      tol=TOL)),
      ("mqa_reference", lambda: ok(_decode, "mqa_reference", q, k, v, start, length,
                                   return_residuals=True, tol=TOL)),
      ("gqa_reference", lambda: ok(_decode, "gqa_reference", q, k4, v4, start, None,
                                   normalize_output=False, tol=TOL)),
      ("mha_reference", lambda: ok(_decode, "mha_reference", q, kh, kh, None, length,
                                   tol=TOL)),
      ("gqa_needs_residuals", lambda: raises(_decode, "gqa", q, k4, v4,
                                             normalize_output=False, **DEC,
                                             match=["residuals must be returned"])),
      ("split_too_short", lambda: raises(_decode, "mqa", q, k, v, k_splits=8,
                                         interpret=True, match=["must be >= 16"])),
  ])
  mod = _ops(arrax, "decode_attention")
  np.testing.assert_allclose(mod.gqa(q, k4, v4, start, length, **DEC),
                             mod.gqa_reference(q, k4, v4, start, length), atol=1e-5)


# ---- paged_attention ------------------------------------------------------------------------
KVH, PAGES, PAGE, PPS = 2, 8, 4, 4
PAGED = dict(k_splits=2, pages_per_compute_block=2, interpret=True)


def _paged(top, *args, **kw):
  return _ops(top, "paged_attention").paged_attention(*args, **dict(PAGED, **kw))


def _paged_reference(top, *args, **kw):
  return _ops(top, "paged_attention").paged_attention_reference(*args, **kw)


def test_paged_attention():
  q = rand((2, 4, 8), np.float32, seed=30)
  kp, vp = (rand((KVH, PAGES, PAGE, 8), np.float32, seed=s) for s in (31, 32))
  tables = np.random.RandomState(0).permutation(PAGES).reshape(2, PPS).astype(np.int32)
  lengths = np.array([5, 16], np.int32)
  ks, vs = (np.abs(rand((KVH, PAGES, PAGE), np.float32, seed=s)) for s in (33, 34))
  k = kp[:, tables].reshape(KVH, 2, PPS * PAGE, 8).transpose(1, 2, 0, 3)
  v = vp[:, tables].reshape(KVH, 2, PPS * PAGE, 8).transpose(1, 2, 0, 3)
  check_all([
      ("lengths", lambda: ok(_paged, q, kp, vp, tables, lengths, tol=TOL)),
      ("soft_cap", lambda: ok(_paged, q, kp, vp, tables, None, attn_logits_soft_cap=2.0,
                              tol=TOL)),
      ("scales", lambda: ok(_paged, q, kp, vp, tables, lengths, ks, vs, tol=TOL)),
      ("reference", lambda: ok(_paged_reference, q, k, v, lengths, attn_logits_soft_cap=3.0,
                               tol=TOL)),
      ("block_h", lambda: raises(_paged, q, kp, vp, tables, lengths, block_h=8,
                                 match=["block_h must divisible by 16"])),
      ("lengths_dtype", lambda: raises(_paged, q, kp, vp, tables, lengths.astype(np.uint32),
                                       match=["must be int32"])),
      ("lengths_shape", lambda: raises(_paged, q, kp, vp, tables, lengths[:1],
                                       match=["same batch size"])),
      ("tables_batch", lambda: raises(_paged, q, kp, vp, tables[:1], lengths,
                                      match=["same batch size"])),
      ("kv_shapes", lambda: raises(_paged, q, kp, vp[:1], tables, lengths,
                                   match=["same shape"])),
      ("heads", lambda: raises(_paged, q[:, :3], kp, vp, tables, lengths,
                               match=["divisible by number of KV heads"])),
      ("head_dim", lambda: raises(_paged, q[..., :4], kp, vp, tables, lengths,
                                  match=["head_dim of Q"])),
  ])
  np.testing.assert_allclose(_paged(arrax, q, kp, vp, tables, lengths),
                             _paged_reference(arrax, q, k, v, lengths), atol=1e-5)
