"""The small jax.experimental.pallas.ops.tpu modules against JAX 0.10.2 in TPU interpret mode:
example_kernel, the random kernels (philox, threefry, prng_utils: bit-identical), the
flash-attention reference backward pass, megablox's group metadata, and all_gather (in a
subprocess with simulated devices)."""
import functools
import importlib

import jax
import jax.experimental.pallas.tpu  # noqa: F401
import numpy as np
import pytest
from oracle import call_with, check_all, check_error, check_value, rand

import arrax
import arrax.experimental.pallas.tpu  # noqa: F401
from tests.multidevice import script_results

TOP = call_with("top")
ok = functools.partial(check_value, build=TOP)   # a case JAX runs
err = functools.partial(check_error, build=TOP)  # a case JAX raises on (err(..., match=...))


def _ops(top, name):
  return importlib.import_module(f"{top.__name__}.experimental.pallas.ops.tpu.{name}")


def _interpreted(fn):
  """`fn(top, ...)` run under `force_tpu_interpret_mode`."""
  def run(top, *args, **kw):
    with top.experimental.pallas.tpu.force_tpu_interpret_mode():
      return fn(top, *args, **kw)
  return run


# ---- example_kernel --------------------------------------------------------------------------
def _double(top, x):
  return _ops(top, "example_kernel").double(x)


def _double_kernel(top, x):
  ek = _ops(top, "example_kernel")
  return top.experimental.pallas.pallas_call(
      ek.double_kernel, out_shape=top.ShapeDtypeStruct(x.shape, x.dtype), interpret=True)(x)


def test_example_kernel():
  x = rand((4, 8), np.float32, seed=1)
  check_all([
      ("double", lambda: ok(_interpreted(_double), x, exact=True)),
      ("double_int", lambda: ok(_interpreted(_double), x.astype(np.int32), exact=True)),
      ("kernel", lambda: ok(_double_kernel, x[:2], exact=True)),
      ("not_interpreted", lambda: err(_double, x, match="Only interpret mode")),
  ])


# ---- random ----------------------------------------------------------------------------------
KEY = np.array([0x12345678, 0x9ABCDEF0], np.uint32)


def _philox(top, what, *args, **kw):
  return getattr(_ops(top, "random.philox"), what)(*args, **kw)


def _threefry(top, what, *args, **kw):
  return getattr(_ops(top, "random.threefry"), what)(*args, **kw)


def _utils(top, what, *args):
  return getattr(_ops(top, "random.prng_utils"), what)(*args)


def _fold_in(top, key, data):
  return _ops(top, "random.philox").philox_fold_in(key, top.numpy.asarray(data))


def _impl_fns(top, which):
  """The registered PRNG implementation record's functions on raw key data."""
  mod = _ops(top, "random." + which)
  impl = getattr(mod, "plphilox_prng_impl" if which == "philox" else "plthreefry_prng_impl")
  key = impl.seed(np.int32(5))
  return (key, impl.split(key, (2,)), impl.fold_in(key, np.uint32(3)),
          impl.random_bits(key, 32, (3,)), impl.key_shape, impl.name, impl.tag)


def test_random_philox():
  ph = functools.partial(_interpreted(_philox))
  x = rand((3, 5), np.uint32, seed=2, ints=(0, 2 ** 31))
  y = rand((3, 5), np.uint32, seed=3, ints=(0, 2 ** 31))
  z = [rand((2, 3), np.uint32, seed=s, ints=(0, 2 ** 31)) for s in range(4, 10)]
  check_all([
      ("mul32_hi_lo", lambda: ok(_philox, "mul32_hi_lo", x, y, exact=True)),
      ("mul32_extremes", lambda: ok(_philox, "mul32_hi_lo", np.uint32([0xFFFFFFFF, 1, 0]),
                                    np.uint32([0xFFFFFFFF, 0xFFFFFFFF, 7]), exact=True)),
      ("philox_4x32", lambda: ok(_philox, "philox_4x32", *z, exact=True)),
      ("philox_4x32_rounds", lambda: ok(_philox, "philox_4x32", *z, rounds=3, exact=True)),
      ("count_2d", lambda: ok(ph, "philox_4x32_count", KEY, (3, 5), exact=True)),
      ("count_offset_unfused", lambda: ok(ph, "philox_4x32_count", KEY, (2, 4), offset=9,
                                          fuse_output=False, exact=True)),
      ("count_1d", lambda: ok(ph, "philox_4x32_count", KEY, (7,), exact=True)),
      ("count_0d", lambda: ok(ph, "philox_4x32_count", KEY, (), exact=True)),
      ("kernel_3d_blocks", lambda: ok(ph, "philox_4x32_kernel", KEY, (2, 8, 16), (2, 8, 16),
                                      (4, 8), offset=3, exact=True)),
      ("kernel_padded", lambda: ok(ph, "philox_4x32_kernel", KEY, (8, 8), (6, 5), (4, 4),
                                   fuse_output=False, exact=True)),
      ("split", lambda: ok(ph, "philox_split", KEY, (2, 3), exact=True)),
      ("random_bits", lambda: ok(ph, "philox_random_bits", KEY, 32, (4, 3), exact=True)),
      ("fold_in", lambda: ok(_interpreted(_fold_in), KEY, np.int32(11), exact=True)),
      ("impl", lambda: ok(_interpreted(_impl_fns), "philox", exact=True)),
      ("bit_width", lambda: err(ph, "philox_random_bits", KEY, 16, (4,),
                                match="Only 32-bit PRNG supported")),
      ("not_divisible", lambda: err(ph, "philox_4x32_kernel", KEY, (8, 6), (8, 6), (4, 4),
                                    match="must be divisible by")),
      ("offset_rank", lambda: err(ph, "philox_4x32_kernel", KEY, (4, 4), (4, 4), (4, 4),
                                  offset=np.uint32([1, 2]), match="Offset must be scalar")),
      ("not_interpreted", lambda: err(_philox, "philox_4x32_count", KEY, (2, 2),
                                      match="Only interpret mode")),
  ])


def test_random_threefry_and_utils():
  tf = _interpreted(_threefry)
  check_all([
      ("bits_2d", lambda: ok(tf, "plthreefry_random_bits", KEY, 32, (3, 5), exact=True)),
      ("bits_1d", lambda: ok(tf, "plthreefry_random_bits", KEY, 32, (6,), exact=True)),
      ("bits_0d", lambda: ok(tf, "plthreefry_random_bits", KEY, 32, (), exact=True)),
      ("count_blocks", lambda: ok(tf, "threefry_2x32_count", KEY, (2, 8, 8), (2, 8, 8), (4, 4),
                                  exact=True)),
      ("count_padded", lambda: ok(tf, "threefry_2x32_count", KEY, (8, 8), (5, 7), (8, 4),
                                  exact=True)),
      ("impl", lambda: ok(_interpreted(_impl_fns), "threefry", exact=True)),
      ("bit_width", lambda: err(tf, "plthreefry_random_bits", KEY, 8, (4,),
                                match="Only 32-bit PRNG supported")),
      ("not_divisible", lambda: err(tf, "threefry_2x32_count", KEY, (6, 8), (6, 8), (4, 4),
                                    match="must be divisible by")),
      ("blocked_iota", lambda: ok(_utils, "blocked_iota", (2, 3), (4, 6), exact=True)),
      ("blocked_iota_3d", lambda: ok(_utils, "blocked_iota", (2, 2, 3), (3, 4, 5), exact=True)),
      ("round_up", lambda: ok(_utils, "round_up", 13, 8)),
  ])
  for args in [((1, 2), (4, 6), (2, 3)), ((0, 3, 1), (2, 5, 7), (1, 2, 3))]:
    theirs = jax.experimental.pallas.ops.tpu.random.prng_utils.compute_scalar_offset(*args)
    ours = arrax.experimental.pallas.ops.tpu.random.prng_utils.compute_scalar_offset(*args)
    assert ours == theirs


def test_random_bits_not_constant():
  """The bits differ between keys, positions and offsets (a check of the test's own power)."""
  ph = _ops(arrax, "random.philox")
  with arrax.experimental.pallas.tpu.force_tpu_interpret_mode():
    a = np.asarray(ph.philox_4x32_count(KEY, (2, 4)))
    b = np.asarray(ph.philox_4x32_count(KEY + 1, (2, 4)))
    c = np.asarray(ph.philox_4x32_count(KEY, (2, 4), offset=1))
  assert len(set(a.ravel().tolist())) == 8 and not (a == b).any()
  np.testing.assert_array_equal(a.ravel()[1:], c.ravel()[:-1])


# ---- flash_attention.mha_reference_bwd --------------------------------------------------------
def _mha_bwd(top, q, k, v, ab, seg, do, **kw):
  fa = _ops(top, "flash_attention")
  seg = None if seg is None else fa.SegmentIds(*seg)
  o, l, m = fa.mha_reference_no_custom_vjp(q, k, v, ab, seg, save_residuals=True, **kw)
  return fa.mha_reference_bwd(q, k, v, ab, seg, o, l, m, do, **kw)


def _mha_grads(top, q, k, v, ab, do):
  """Autodiff of the reference, to check mha_reference_bwd in arrax itself."""
  fa = _ops(top, "flash_attention")
  f = lambda *a: fa.mha_reference_no_custom_vjp(*a, None, causal=True)  # noqa: E731
  return top.vjp(f, q, k, v, ab)[1](do)


def test_mha_reference_bwd():
  q = rand((1, 2, 8, 4), np.float32, seed=11)
  k = rand((1, 2, 16, 4), np.float32, seed=12)
  v = rand((1, 2, 16, 4), np.float32, seed=13)
  ab = rand((1, 2, 8, 16), np.float32, seed=14)
  do = rand((1, 2, 8, 4), np.float32, seed=15)
  seg = (np.array([[0, 0, 1, 1, 1, 2, 2, 2]], np.int32), np.repeat([[0, 1, 2, 2]], 4, 1)
         .astype(np.int32))
  check_all([
      ("plain", lambda: ok(_mha_bwd, q, k, v, None, None, do, tol=1e-5)),
      ("bias_segments_causal", lambda: ok(_mha_bwd, q, k, v, ab, seg, do, causal=True,
                                          tol=1e-5)),
      ("bfloat16", lambda: ok(_mha_bwd, *(x.astype("bfloat16") for x in (q, k, v)), None, None,
                              do.astype("bfloat16"), tol=2e-2)),
  ])
  for top in (jax, arrax):   # (JAX's error has no message)
    with pytest.raises(NotImplementedError):
      _mha_bwd(top, q, k, v, None, None, do, sm_scale=0.5)
  ours = _mha_bwd(arrax, q, k, v, ab, None, do, causal=True)
  auto = _mha_grads(arrax, q, k, v, ab, do)
  for a, b in zip(ours, auto):
    np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-5)


# ---- megablox.gmm.make_group_metadata ---------------------------------------------------------
def _metadata(top, sizes, start, **kw):
  gmm = _ops(top, "megablox.gmm")
  return gmm.make_group_metadata(group_sizes=top.numpy.asarray(sizes),
                                 start_group=top.numpy.asarray(start, np.int32), **kw)


def test_make_group_metadata():
  sizes = np.array([5, 0, 11, 3, 0, 13], np.int32)   # m = 32: groups start inside tiles
  aligned = np.array([8, 0, 16, 8], np.int32)
  cases = []
  for label, s, m, tm in [("unaligned", sizes, 32, 8), ("aligned", aligned, 32, 8),
                          ("one_tile", np.array([3, 0, 1], np.int32), 4, 4),
                          ("tile_of_one", np.array([2, 1], np.int32), 3, 1)]:
    for start, count in [(0, len(s)), (1, 2)]:
      for visit in [True, False]:
        cases.append((f"{label}_{start}_{visit}", functools.partial(
            ok, _metadata, s, start, m=m, tm=tm, num_nonzero_groups=count,
            visit_empty_groups=visit, exact=True)))
  cases.append(("jit", lambda: ok(lambda top, *a, **kw: top.jit(
      lambda s: _metadata(top, s, 2, **kw))(*a), sizes, m=32, tm=8, num_nonzero_groups=3,
      exact=True)))
  cases.append(("not_divisible", lambda: err(_metadata, sizes, 0, m=32, tm=6,
                                             num_nonzero_groups=6,
                                             match="divisible by x-dimension tile size")))
  check_all(cases)


# ---- all_gather (simulated devices) -----------------------------------------------------------
_ALL_GATHER = r"""
import json, importlib
import numpy as np
import jax, arrax
import jax.experimental.pallas.tpu, arrax.experimental.pallas.tpu

def run(top):
  ag = importlib.import_module(top.__name__ + ".experimental.pallas.ops.tpu.all_gather")
  P = top.sharding.PartitionSpec
  out = {}
  mesh = top.sharding.Mesh(np.array(top.devices()), ("x",))
  x = top.numpy.arange(32.0).reshape(16, 2)
  def attempt(name, fn):
    try:
      out[name] = fn()
    except Exception as e:
      out[name] = ["raised", type(e).__name__, str(e)[:200]]
  def interpreted():
    with top.experimental.pallas.tpu.force_tpu_interpret_mode():
      r = np.asarray(ag.all_gather(x, mesh=mesh, axis_name="x"))
    return [list(r.shape), bool(np.isnan(r).any())]
  attempt("interpreted", interpreted)
  attempt("compiled", lambda: np.asarray(ag.all_gather(x, mesh=mesh, axis_name="x")).tolist())
  attempt("two_axes", lambda: ag.all_gather(x, mesh=mesh, axis_name=("x", "y")))
  one = top.sharding.Mesh(np.array(top.devices()[:1]), ("x",))
  attempt("size_one", lambda: np.asarray(ag.all_gather(x, mesh=one, axis_name="x")).tolist())
  grid = top.sharding.Mesh(np.array(top.devices()).reshape(2, 2), ("x", "y"))
  spec = P(("x", "y"))
  for axis in ("x", "y"):
    def body(a, axis=axis):
      me = top.lax.axis_index(axis)
      rows = [top.numpy.stack(ag.get_neighbor(me, grid, axis, direction=d))
              for d in ("left", "right", "up")]
      return top.numpy.stack(rows)[None]
    f = top.shard_map(body, mesh=grid, in_specs=spec, out_specs=spec)
    attempt("neighbor_" + axis, lambda: np.asarray(f(top.numpy.zeros(4))).tolist())
  out["P"] = ag.P is top.sharding.PartitionSpec
  return out

print("RESULTS" + json.dumps({"jax": run(jax), "arrax": run(arrax)}))
"""


def test_all_gather():
  res = script_results(_ALL_GATHER, ndev=4)
  a, j = res["arrax"], res["jax"]
  for name in ("neighbor_x", "neighbor_y", "size_one"):
    assert a[name] == j[name], (name, a[name], j[name])
  assert j["neighbor_x"] == [[[1, 0], [1, 0], [1, 0]], [[1, 1], [1, 1], [1, 1]],
                             [[0, 0], [0, 0], [0, 0]], [[0, 1], [0, 1], [0, 1]]]
  assert a["two_axes"][:2] == j["two_axes"][:2] == ["raised", "NotImplementedError"]
  assert a["P"] is j["P"] is True
  # JAX's interpret mode simulates the devices' remote DMAs (its result has unwritten, NaN,
  # half-slots: the kernel does not wait for the last incoming copies); arrax's interpret mode
  # has no remote DMAs and says so.
  assert j["interpreted"] == [[16, 2], True] or j["interpreted"] == [[16, 2], False]
  assert a["interpreted"][:2] == ["raised", "NotImplementedError"]
  assert "TPU" in a["interpreted"][2]
  # Without interpret mode both fail: the kernel cannot be compiled for CPU.
  assert a["compiled"] == j["compiled"] == [
      "raised", "ValueError", "Only interpret mode is supported on CPU backend."]


if __name__ == "__main__":
  pytest.main([__file__, "-q"])
