"""jax.experimental.pallas.ops.tpu.splash_attention against JAX 0.10.2: the mask library
(host-side NumPy objects), mask processing into MaskInfo (every field, for several masks,
block sizes and shardings), and the splash kernels in interpret mode (forward values and the
custom VJP's dq/dkv kernels), also checked against the dense references."""
import importlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from oracle import rand

import arrax
import arrax.numpy as anp

PKG = "experimental.pallas.ops.tpu.splash_attention"


def _mods(top):
  base = top.__name__ + "." + PKG
  return (importlib.import_module(base), importlib.import_module(base + ".splash_attention_mask"),
          importlib.import_module(base + ".splash_attention_mask_info"),
          importlib.import_module(base + ".splash_attention_kernel"))


JAX, ARRAX = _mods(jax), _mods(arrax)


def _same_array(a, b, where=""):
  if a is None or b is None:
    assert a is None and b is None, where
    return
  a, b = np.asarray(a), np.asarray(b)
  assert a.dtype == b.dtype and a.shape == b.shape, (where, a.dtype, b.dtype, a.shape, b.shape)
  np.testing.assert_array_equal(a, b, err_msg=str(where))


def _both(fn):
  """fn(mask_module) for JAX and arrax: equal results or the same exception class."""
  out = []
  for _, mlib, _, _ in (JAX, ARRAX):
    try:
      out.append(("ok", fn(mlib)))
    except Exception as e:  # noqa: BLE001
      out.append(("err", e))
  (jk, jv), (ak, av) = out
  assert jk == ak, (jv, av)
  if jk == "err":
    assert type(jv).__name__ == type(av).__name__, (jv, av)
    assert str(jv) == str(av)
  return jv, av


# ---- masks -----------------------------------------------------------------------------------
def _lazy_masks(L, s, off):
  return [L.CausalMask((s, s), offset=off), L.LocalMask((s, s), (4, 2), off),
          L.LocalMask((s, s), (None, 3), off), L.LocalMask((s, s), (None, None), off),
          L.ChunkedCausalMask((s, s), 4), L.FullMask((s, s)),
          L.NumpyMask(L.make_random_mask((s, s), 0.5, 7))]


@pytest.mark.parametrize("s,off", [(8, 0), (16, 3), (16, -2), (32, 5)])
def test_mask_slices_and_dense_makers(s, off):
  slices = [(slice(None), slice(None)), (slice(0, 4), slice(2, 8)), (slice(3, s), slice(None))]
  for i in range(7):
    for sl in slices:
      j, a = _both(lambda L: _lazy_masks(L, s, off)[i][sl])
      _same_array(j, a, (i, sl))
    j, a = _both(lambda L: _lazy_masks(L, s, off)[i].shape)
    assert j == a
  for fn in [lambda L: L.make_causal_mask((s, s + 4), off),
             lambda L: L.make_local_attention_mask((s, s), (3, None), offset=off),
             lambda L: L.make_local_attention_mask((s, 2 * s), (None, 2)),
             lambda L: L.make_chunk_attention_mask((s, s), 3),
             lambda L: L.make_random_mask((s, s), 0.3, off + 10)]:
    _same_array(*_both(fn))


def test_mask_composition_equality_and_hash():
  s = 16
  pairs = [(0, 1), (1, 4), (2, 5), (0, 6)]
  for i, k in pairs:
    for op in ("or", "and"):
      def f(L, i=i, k=k, op=op):
        a, b = _lazy_masks(L, s, 1)[i], _lazy_masks(L, s, 1)[k]
        m = (a | b) if op == "or" else (a & b)
        return type(m).__name__, m.shape, m[4:12, 0:16], m == ((a | b) if op == "or" else a & b)
      (jn, js, jv, je), (an, as_, av, ae) = _both(f)
      assert (jn, js, je) == (an, as_, ae)
      _same_array(jv, av)

  def eqs(L):
    c = L.CausalMask((s, s), 2)
    return [c == L.CausalMask((s, s), 2), c == L.CausalMask((s, s), 1),
            hash(c) == hash(L.CausalMask((s, s), 2)),
            L.LocalMask((s, s), (1, 2), 0) == L.LocalMask((s, s), (1, 2), 0),
            L.LocalMask((s, s), (1, 2), 0) == 3, c == 3,
            L.FullMask((s, s)) == L.FullMask((s, s)), L.FullMask((s, s)) == L.FullMask((s, 8)),
            L.ChunkedCausalMask((s, s), 4) == L.ChunkedCausalMask((s, s), 4),
            L.NumpyMask(np.eye(s, dtype=bool)) == L.NumpyMask(np.eye(s, dtype=bool)),
            hash(L.NumpyMask(np.eye(s, dtype=bool))) == hash(L.NumpyMask(np.eye(s, dtype=bool))),
            L.MultiHeadMask([c, c]) == L.MultiHeadMask([L.CausalMask((s, s), 2)] * 2),
            hash(L.MultiHeadMask([c, c])) == hash(L.MultiHeadMask([L.CausalMask((s, s), 2)] * 2)),
            hash(L.LogicalOr(c, c)) == hash(L.LogicalOr(c, c)),
            repr(L.LogicalAnd(L.FullMask((2, 2)), L.FullMask((2, 2))))]
  j, a = _both(eqs)
  assert j == a

  def multi(L):
    m = L.MultiHeadMask([L.CausalMask((s, s)), L.LocalMask((s, s), (2, 2), 0),
                         L.NumpyMask(L.make_causal_mask((s, s), -1))])
    return m.shape, m[1, 2:6, 0:8], m[0:2, :, 4:12], m[:, 3:5, :]
  (js, *jv), (as_, *av) = _both(multi)
  assert js == as_
  for x, y in zip(jv, av):
    _same_array(x, y)


@pytest.mark.parametrize("case", range(13))
def test_mask_errors(case):
  s = 16
  fns = [
      lambda L: bool(L.CausalMask((s, s))),
      lambda L: L.CausalMask((s, s)) | L.FullMask((s, 8)),
      lambda L: L.FullMask((s, s)) & L.FullMask((8, s)),
      lambda L: L.LogicalOr(L.FullMask((s, s)), L.FullMask((8, s))),
      lambda L: L.MultiHeadMask([]),
      lambda L: L.MultiHeadMask([L.FullMask((s, s)), L.FullMask((s, 8))]),
      lambda L: L.MultiHeadMask([L.MultiHeadMask([L.FullMask((s, s))])]),
      lambda L: L.NumpyMask(np.ones((s,), bool)),
      lambda L: L.NumpyMask(np.ones((s, s), np.int32)),
      lambda L: L.ChunkedCausalMask((s, s), 0),
      lambda L: L.CausalMask((18, 18), shard_count=2),
      lambda L: L.FullMask([s, s]),
      lambda L: L.CausalMask((s, s))[0:2],
  ]
  j, _ = _both(fns[case])
  assert isinstance(j, Exception)


# ---- mask processing -----------------------------------------------------------------------------
def _heads(L, s):
  rnd = L.NumpyMask(L.make_random_mask((s, s), 0.7, 3) | np.eye(s, dtype=bool))
  return {
      "causal": L.MultiHeadMask([L.CausalMask((s, s))] * 4),
      "causal_offset": L.MultiHeadMask([L.CausalMask((s, s), offset=-8)] * 2),
      "local": L.MultiHeadMask([L.LocalMask((s, s), (8, 4), 0)] * 2),
      "mixed": L.MultiHeadMask([L.CausalMask((s, s)), L.LocalMask((s, s), (8, None), 0),
                                L.CausalMask((s, s)), L.FullMask((s, s))]),
      "numpy": L.MultiHeadMask([L.NumpyMask(L.make_causal_mask((s, s))), rnd,
                                L.NumpyMask(L.make_local_attention_mask((s, s), (4, 4))), rnd]),
      "or": L.MultiHeadMask([L.CausalMask((s, s)) | L.LocalMask((s, s), (None, 8), 0)] * 2),
      "chunk": L.MultiHeadMask([L.ChunkedCausalMask((s, s), 16)] * 4),
      "full": L.MultiHeadMask([L.FullMask((s, s))] * 2),
  }


@pytest.mark.parametrize("name", ["causal", "causal_offset", "local", "mixed", "numpy", "or",
                                  "chunk", "full"])
def test_process_mask(name):
  s = 64
  jm, am = _heads(JAX[1], s)[name], _heads(ARRAX[1], s)[name]
  n_ok = 0
  for bs in [(8, 16), (16, 8), (32, 32), (64, 64)]:
    for fn in ["process_mask", "process_mask_dkv"]:
      for hs, qs in [(1, 1), (2, 1), (1, 2), (2, 2)]:
        for shrink in (True, False):
          kw = dict(head_shards=hs, q_seq_shards=qs, shrink_grid=shrink,
                    downcast_smem_data=(bs[0] != 16))
          try:
            jr, jf = getattr(JAX[2], fn)(jm, bs, **kw)
          except Exception as e:  # noqa: BLE001
            with pytest.raises(type(e)):
              getattr(ARRAX[2], fn)(am, bs, **kw)
            continue
          ar, af = getattr(ARRAX[2], fn)(am, bs, **kw)
          assert type(ar).__name__ == "MaskInfo" and ar._fields == jr._fields
          for f in jr._fields:
            if f == "is_dynamic_mask":
              assert jr.is_dynamic_mask == ar.is_dynamic_mask
            else:
              _same_array(getattr(jr, f), getattr(ar, f), (bs, fn, kw, f))
          assert (jf is None) == (af is None)
          if jf is not None:
            ids = np.arange(s, dtype=np.int32)
            _same_array(jf(ids[:, None], ids[None, :]), af(ids[:, None], ids[None, :]))
          n_ok += 1
  assert n_ok >= 32


def test_process_mask_errors():
  for L, info in ((JAX[1], JAX[2]), (ARRAX[1], ARRAX[2])):
    m = L.MultiHeadMask([L.CausalMask((32, 32))] * 2)
    for bs, kw, msg in [((12, 16), {}, "q_block_size=12 should divide q_seq_len=32"),
                        ((16, 12), {}, "kv_block_size=12 should divide kv_seq_len=32"),
                        ((16, 16), dict(q_seq_shards=3), "q_seq_shards=3 should divide"),
                        ((32, 16), dict(q_seq_shards=2), "should divide q_seq_len_per_shard"),
                        ((16, 16), dict(head_shards=3), "head_shards=3 should divide")]:
      with pytest.raises(ValueError, match=msg):
        info.process_mask(m, bs, **kw)
    with pytest.raises(ValueError, match="Expected a 3-dim mask"):
      info.process_mask(L.CausalMask((32, 32)), (16, 16))


def test_process_dynamic_mask():
  s = 32
  dense = np.stack([JAX[1].make_causal_mask((s, s)), JAX[1].make_random_mask((s, s), 0.5, 1),
                    np.zeros((s, s), bool), np.ones((s, s), bool)])
  for fn in ["process_dynamic_mask", "process_dynamic_mask_dkv"]:
    for bs in [(8, 16), (16, 8)]:
      for hs, qs in [(1, 1), (2, 2)]:
        for down in (True, False):
          kw = dict(head_shards=hs, q_seq_shards=qs, downcast_smem_data=down)
          jr, jf = getattr(JAX[2], fn)(jnp.asarray(dense), bs, **kw)
          ar, af = getattr(ARRAX[2], fn)(anp.asarray(dense), bs, **kw)
          assert jf is None and af is None
          assert jr.q_sequence is None and ar.q_sequence is None
          assert jr.is_dynamic_mask is True and ar.is_dynamic_mask is True
          for f in ("data_next", "mask_next", "block_mask", "partial_mask_blocks"):
            _same_array(getattr(jr, f), getattr(ar, f), (fn, bs, kw, f))
  for bad, msg in [(dense[0], "Expected a 3-dim mask"), (dense.astype(np.int32), "bool mask")]:
    for info, np_ in ((JAX[2], jnp), (ARRAX[2], anp)):
      with pytest.raises(ValueError, match=msg):
        info.process_dynamic_mask(np_.asarray(bad), (8, 8))


# ---- kernels ------------------------------------------------------------------------------------
H, S, D = 2, 256, 128
Q, K, V = (rand((H, S, D), np.float32, seed=s) for s in (1, 2, 3))


def _block_sizes(pkg, fused=False, **kw):
  dq = {} if fused else dict(block_q_dq=128, block_kv_dq=128)
  return pkg.BlockSizes(block_q=128, block_kv=128, block_kv_compute=128, block_q_dkv=128,
                        block_kv_dkv=128, block_kv_dkv_compute=128, use_fused_bwd_kernel=fused,
                        **dq, **kw)


def _mask(L, kind, heads=H):
  if kind == "causal":
    return L.MultiHeadMask([L.CausalMask((S, S))] * heads)
  if kind == "local":
    return L.MultiHeadMask([L.LocalMask((S, S), (64, 0), 0)] * heads)
  if kind == "numpy":
    return L.MultiHeadMask([L.NumpyMask(L.make_local_attention_mask((S, S), (64, 32))),
                            L.NumpyMask(L.make_causal_mask((S, S)))][:heads])
  if kind == "dense":
    return np.stack([L.make_causal_mask((S, S)), L.make_local_attention_mask((S, S), (96, 16))])
  return L.MultiHeadMask([L.FullMask((S, S))] * heads)


def _splash(lib, kind, grad, *, mqa=False, seg=False, sinks=False, fused=False, gqa=False,
            dynamic=False, bs_kw=None, **kw):
  top = jax if lib is JAX else arrax
  np_ = jnp if lib is JAX else anp
  pkg, mlib, _, _ = lib
  qh = 2 * H if gqa else H
  q = np.concatenate([Q, Q[::-1] * 0.5]) if gqa else Q
  k, v = (K[0], V[0]) if mqa else (K, V)
  mask = _mask(mlib, kind, qh) if not gqa else mlib.MultiHeadMask([mlib.CausalMask((S, S))] * qh)
  if dynamic:
    mask = np_.asarray(np.asarray(mask))
  make = pkg.make_splash_mqa_single_device if mqa else pkg.make_splash_mha_single_device
  kern = make(mask, block_sizes=_block_sizes(pkg, fused, **(bs_kw or {})), interpret=True, **kw)
  ids = np.repeat(np.array([0, 1], np.int32), [100, S - 100])
  segs = pkg.SegmentIds(np_.asarray(ids), np_.asarray(ids)) if seg else None
  args = [np_.asarray(q), np_.asarray(k), np_.asarray(v)]
  extra = [np_.asarray(np.linspace(-1, 1, qh).astype(np.float32))] if sinks else []

  def f(*a):
    return kern(*a[:3], segs, *a[3:])

  if grad:
    return top.grad(lambda *a: (f(*a) ** 2).sum(), argnums=tuple(range(len(args + extra))))(
        *args, *extra)
  return f(*args, *extra)


def _check_kernel(*args, tol=2e-5, **kw):
  j = _splash(JAX, *args, **kw)
  a = _splash(ARRAX, *args, **kw)
  jl, al = jax.tree.leaves(j), jax.tree.leaves(a)
  assert len(jl) == len(al)
  for x, y in zip(jl, al):
    y = np.asarray(y)
    assert y.dtype == x.dtype and y.shape == x.shape
    np.testing.assert_allclose(y, np.asarray(x), rtol=tol, atol=tol)
  return a


def test_splash_forward_and_reference():
  out = _check_kernel("numpy", False, seg=True)
  _, mlib, _, kmod = ARRAX
  dense = _mask(mlib, "numpy")[:, :, :]
  ref = kmod.make_masked_mha_reference(dense)(anp.asarray(Q), anp.asarray(K), anp.asarray(V),
                                              kmod.SegmentIds(*[anp.asarray(np.repeat(
                                                  np.array([0, 1], np.int32), [100, S - 100]))]
                                                  * 2))
  np.testing.assert_allclose(np.asarray(out), np.asarray(ref), rtol=1e-4, atol=1e-4)


def test_splash_grad_causal():
  # lazy causal mask: the mask function runs in all three kernels
  g = _check_kernel("causal", True)
  _, mlib, _, kmod = ARRAX
  ref = kmod.make_masked_mha_reference(_mask(mlib, "causal")[:, :, :])
  gr = arrax.grad(lambda q, k, v: (ref(q, k, v) ** 2).sum(), argnums=(0, 1, 2))(
      anp.asarray(Q), anp.asarray(K), anp.asarray(V))
  for x, y in zip(g, gr):
    np.testing.assert_allclose(np.asarray(x), np.asarray(y), rtol=1e-3, atol=1e-3)


def test_splash_grad_partial_blocks_mqa_fused():
  # partial mask blocks with segment ids (dq + dkv kernels), then MQA with the fused kernel
  _check_kernel("numpy", True, seg=True)
  _check_kernel("local", True, mqa=True, fused=True)


def test_splash_sinks_soft_cap_layouts_gqa():
  seq = dict(q_layout=ARRAX[0].QKVLayout.SEQ_MINOR, k_layout=ARRAX[0].QKVLayout.SEQ_MINOR,
             v_layout=ARRAX[0].QKVLayout.SEQ_MINOR)
  _check_kernel("causal", True, sinks=True, attn_logits_soft_cap=5.0, bs_kw=seq, tol=5e-5)
  _check_kernel("causal", False, gqa=True, save_residuals=True)


def test_splash_dynamic_mask():
  _check_kernel("dense", False, dynamic=True)


def test_references():
  _, mlib, _, _ = JAX
  m = _mask(mlib, "numpy")[:, :64, :64]
  q, k, v = Q[:, :64, :16], K[:, :64, :16], V[:, :64, :16]
  sinks = np.array([0.3, -0.2], np.float32)
  for backward in ("vanilla", "custom", "custom_vanilla"):
    def f(lib, top, np_, backward=backward):
      ref = lib[3].make_masked_mha_reference(m, backward_impl=backward)
      loss = lambda q, k, v, s: (ref(q, k, v, None, s, attn_logits_soft_cap=3.0) ** 2).sum()  # noqa
      return top.grad(loss, argnums=(0, 1, 2, 3))(*(np_.asarray(x) for x in (q, k, v, sinks)))
    for x, y in zip(f(JAX, jax, jnp), f(ARRAX, arrax, anp)):
      np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-4, atol=1e-5)

  def mqa(lib, np_):
    ref = lib[3].make_masked_mqa_reference(m)
    return ref(np_.asarray(q), np_.asarray(k[0]), np_.asarray(v[0]), save_residuals=True)

  for x, y in zip(jax.tree.leaves(mqa(JAX, jnp)), jax.tree.leaves(mqa(ARRAX, anp))):
    np.testing.assert_allclose(np.asarray(y), np.asarray(x), rtol=1e-5, atol=1e-5)


def test_kernel_errors_and_objects():
  pkg, mlib, _, kmod = ARRAX
  mask = _mask(mlib, "causal")
  with pytest.raises(ValueError, match="multiple of 128"):
    pkg.make_splash_mha_single_device(
        mask, block_sizes=pkg.BlockSizes(block_q=128, block_kv=128, block_kv_compute=64),
        interpret=True)(anp.asarray(Q), anp.asarray(K), anp.asarray(V))
  kern = pkg.make_splash_mha_single_device(mask, block_sizes=pkg.BlockSizes(128, 128),
                                           interpret=True)
  with pytest.raises(ValueError, match="Expected 3-dim 'key' tensor"):
    kern(anp.asarray(Q), anp.asarray(K[0]), anp.asarray(V[0]))
  with pytest.raises(ValueError, match="Expected 'key' head dimension to be: 128"):
    kern(anp.asarray(Q), anp.asarray(K[:, :, :64]), anp.asarray(V))
  with pytest.raises(ValueError, match="Invalid shape for q segment_ids"):
    ids = anp.zeros((S,), np.int32)
    kern(anp.asarray(Q), anp.asarray(K), anp.asarray(V), pkg.SegmentIds(ids[:8], ids))
  with pytest.raises(ValueError, match="Need to specify backward blocks"):
    arrax.grad(lambda q: kern(q, anp.asarray(K), anp.asarray(V)).sum())(anp.asarray(Q))
  with pytest.raises(ValueError, match="Unexpected mask shape"):
    pkg.make_splash_mha_single_device(mlib.CausalMask((S, S)))
  with pytest.raises(ValueError, match="not needed with a fused kernel"):
    pkg.BlockSizes(128, 128, use_fused_bwd_kernel=True, block_q_dq=128)
  for lib in (JAX, ARRAX):
    bs = lib[0].BlockSizes(128, 256)
    assert (bs.block_kv_compute, bs.has_backward_blocks) == (256, False)
    assert lib[0].BlockSizes.get_default().has_backward_blocks
    assert (lib[3].get_kernel_name(True, False, True, "dkv")
            == "splash_mqa_dkv_segmented_no_residuals")
    assert lib[3].from_head_minor((1, 2, 3), lib[0].QKVLayout.SEQ_MINOR) == (1, 3, 2)
    assert int(lib[0].QKVLayout.SEQ_MINOR) == 2
  kern = pkg.make_splash_mha_single_device(mask, block_sizes=_block_sizes(pkg), interpret=True)
  leaves, tree = arrax.tree_util.tree_flatten(kern)
  again = arrax.tree_util.tree_unflatten(tree, leaves)
  assert type(again) is kmod.SplashAttentionKernel and again.kwargs == kern.kwargs
  assert type(again.dkv_mask_info).__name__ == "MaskInfo"
  jk = JAX[0].make_splash_mha_single_device(_mask(JAX[1], "causal"),
                                            block_sizes=_block_sizes(JAX[0]), interpret=True)
  assert len(leaves) == len(jax.tree.leaves(jk))


def test_manual_sharding_spec():
  def spec(lib, top):
    pkg, mlib = lib[0], lib[1]
    out = []
    for mask in (_mask(mlib, "causal"), _mask(mlib, "numpy")):
      kern = pkg.make_splash_mha(mask, block_sizes=_block_sizes(pkg), head_shards=2,
                                 q_seq_shards=1, interpret=True)
      mesh = top.sharding.Mesh(np.array(top.devices()[:1]).reshape(1, 1), ("h", "q"))
      s = kern.manual_sharding_spec(
          top.sharding.NamedSharding(mesh, top.sharding.PartitionSpec("h", "q")))
      out.append([repr(s.fwd_mask_info), repr(s.dq_mask_info), repr(s.dkv_mask_info)])
    return out

  assert spec(JAX, jax) == spec(ARRAX, arrax)


def test_splash_vmap_grad_compute_blocks_and_bf16():
  # block_kv 256 computed in 128-wide steps (the fused kernel's dq scratch), under vmap
  s = 512
  qkv = [rand((2, 2, s, D), np.float32, seed=i) for i in (4, 5, 6)]

  def run(lib, top, np_, what):
    pkg, L = lib[0], lib[1]
    m = L.MultiHeadMask([L.LocalMask((s, s), (200, 0), 0),
                         L.NumpyMask(L.make_causal_mask((s, s)))])
    bs = pkg.BlockSizes(block_q=128, block_kv=256, block_kv_compute=128, block_q_dkv=128,
                        block_kv_dkv=256, block_kv_dkv_compute=128, use_fused_bwd_kernel=True)
    kern = pkg.make_splash_mha_single_device(m, block_sizes=bs, interpret=True)
    if what == "grad":
      loss = lambda q, k, v: (top.vmap(kern)(q, k, v) ** 2).sum()  # noqa: E731
      return top.grad(loss, argnums=(0, 1, 2))(*(np_.asarray(x) for x in qkv))
    call = top.jit(lambda kern, q, k, v: kern(q, k, v))
    return call(kern, *(np_.asarray(x[0]).astype(np_.bfloat16) for x in qkv))

  for what in ("grad", "bf16"):
    for x, y in zip(jax.tree.leaves(run(JAX, jax, jnp, what)),
                    jax.tree.leaves(run(ARRAX, arrax, anp, what))):
      assert x.dtype == y.dtype and x.shape == y.shape
      np.testing.assert_allclose(np.asarray(y, np.float32), np.asarray(x, np.float32),
                                 rtol=2e-5, atol=2e-5)
