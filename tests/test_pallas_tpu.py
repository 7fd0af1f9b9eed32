"""jax.experimental.pallas.triton and the newer parts of pallas.tpu in interpret mode, against
JAX 0.10.2 (`interpret=True` or `pltpu.InterpretParams()`): masked loads and stores, atomics,
roll/bitcast/einshape, interpret-mode settings, hardware enums, and the errors of operations
that need a GPU or TPU."""
import dataclasses
import functools
import importlib

import jax
import jax.experimental.pallas  # noqa: F401
import jax.experimental.pallas.tpu  # noqa: F401
import jax.experimental.pallas.tpu_sc  # noqa: F401
import jax.experimental.pallas.triton  # noqa: F401
import numpy as np
import pytest
from oracle import call_with, check_all, check_error, check_value, rand

import arrax
import arrax.experimental.pallas  # noqa: F401
import arrax.experimental.pallas.tpu  # noqa: F401
import arrax.experimental.pallas.tpu_sc  # noqa: F401
import arrax.experimental.pallas.triton  # noqa: F401

TOP = call_with("top")
ok = functools.partial(check_value, build=TOP)   # a case JAX runs
err = functools.partial(check_error, build=TOP)  # a case JAX raises on (err(..., match=...))


def _libs(top):
  return top.experimental.pallas, top.experimental.pallas.triton, top.experimental.pallas.tpu


def _call(top, kernel, out, *args, interpret=True):
  """pallas_call(kernel) on whole-array blocks; `out` is a (shape, dtype) pair or a list."""
  pl = top.experimental.pallas
  sds = ([top.ShapeDtypeStruct(*o) for o in out] if isinstance(out, list)
         else top.ShapeDtypeStruct(*out))
  if interpret == "tpu":
    interpret = top.experimental.pallas.tpu.InterpretParams()
  return pl.pallas_call(kernel, out_shape=sds, interpret=interpret)(*args)


# ---- pallas.triton ---------------------------------------------------------------------------
def _masked_load(top, x, m, other, view):
  _, plt, _ = _libs(top)

  def kernel(x_ref, m_ref, o_ref):
    if view:
      o_ref[...] = plt.load(x_ref.at[1:5], mask=m_ref[1:5], other=other)
    else:
      o_ref[...] = plt.load(x_ref, mask=m_ref[...], other=other)

  shape = (4,) + x.shape[1:] if view else x.shape
  return _call(top, kernel, (shape, x.dtype), x, m)


def _masked_store(top, x, m):
  _, plt, _ = _libs(top)

  def kernel(x_ref, m_ref, o_ref):
    o_ref[...] = top.numpy.zeros_like(o_ref)
    plt.store(o_ref, x_ref[...], mask=m_ref[...])

  return _call(top, kernel, (x.shape, x.dtype), x, m)


def _store_bad(top, x, val):
  _, plt, _ = _libs(top)

  def kernel(x_ref, o_ref):
    plt.store(o_ref, x_ref[...].astype(np.int32) if val == "int" else val)

  return _call(top, kernel, (x.shape, x.dtype), x)


def _load_bad_mask(top, x):
  _, plt, _ = _libs(top)

  def kernel(x_ref, o_ref):
    o_ref[...] = plt.load(x_ref, mask=x_ref[...][:2] > 0, other=0)

  return _call(top, kernel, (x.shape, x.dtype), x)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.float16])
def test_triton_masked_load_store(dtype):
  x = rand((6, 3), dtype, seed=1)
  m = rand((6, 3), np.bool_, seed=2)
  check_all([
      ("load_other", lambda: ok(_masked_load, x, m, -1, False)),
      ("load_no_other", lambda: ok(_masked_load, x, m, None, False)),
      ("load_view", lambda: ok(_masked_load, x, m, 5, True)),
      ("load_row_mask", lambda: ok(_masked_load, x, m[:, :1], 2, False)),
      ("store", lambda: ok(_masked_store, x, m, jit=True)),
      ("store_row_mask", lambda: ok(_masked_store, x, m[:1])),
      ("load_vmap", lambda: ok(lambda top, x, m: top.vmap(
          lambda a, b: _masked_load(top, a, b, 0, False))(x, m), x[None], m[None])),
  ])


def test_triton_load_store_errors():
  x = rand((4,), np.float32, seed=3)
  check_all([
      ("store_scalar", lambda: err(_store_bad, x, 1.0, match="Invalid shape for `swap`")),
      ("store_dtype", lambda: err(_store_bad, x, "int", match="Invalid dtype for `swap`")),
      ("load_mask_shape", lambda: err(_load_bad_mask, x, match="Cannot broadcast mask")),
  ])


def _atomic(top, name, x, idx, val, out_shape):
  """`name` on o_ref (a copy of x) at the slice `idx` = (start, size), with `val` a scalar
  or, for "ones", an array of ones made in the kernel. (JAX 0.10.2 fails on integer
  indices, so only slices are compared.)"""
  _, plt, _ = _libs(top)
  pl = top.experimental.pallas

  def kernel(x_ref, o_ref, p_ref):
    v = top.numpy.ones(out_shape, x.dtype) if isinstance(val, str) else val
    o_ref[...] = x_ref[...]
    p_ref[...] = getattr(plt, name)(o_ref, pl.ds(*idx), v)

  return _call(top, kernel, [(x.shape, x.dtype), (out_shape, x.dtype)], x)


def _atomic_masked(top, x):
  _, plt, _ = _libs(top)
  pl = top.experimental.pallas

  def kernel(x_ref, o_ref, p_ref):
    o_ref[...] = x_ref[...]
    p_ref[...] = plt.atomic_add(o_ref, pl.ds(0, 2), x_ref[:2], mask=x_ref[:2] > 0)

  return _call(top, kernel, [(x.shape, x.dtype), ((2,), x.dtype)], x)


def _cas(top, x, cmp, val):
  _, plt, _ = _libs(top)

  def kernel(x_ref, o_ref, p_ref):
    o_ref[...] = x_ref[...]
    p_ref[...] = plt.atomic_cas(o_ref, cmp, val)

  return _call(top, kernel, [((), x.dtype), ((), x.dtype)], x)


def test_triton_atomics():
  xf = rand((8,), np.float32, seed=4)
  xi = np.arange(8, dtype=np.int32) - 3
  xh = rand((8,), np.float16, seed=5)
  x8 = np.arange(8, dtype=np.int8)
  cases = []
  for name in ["atomic_add", "atomic_max", "atomic_min"]:
    cases += [
        (name + "_f32", lambda n=name: ok(_atomic, n, xf, (1, 3), "ones", (3,))),
        (name + "_i32", lambda n=name: ok(_atomic, n, xi, (2, 4), "ones", (4,))),
        (name + "_scalar_val", lambda n=name: err(_atomic, n, xi, (2, 4), 1, (4,),
                                                  match="Invalid shape")),
    ]
  for name in ["atomic_xchg", "atomic_and", "atomic_or", "atomic_xor"]:
    cases.append((name, lambda n=name: err(_atomic, n, xi, (0, 2), "ones", (2,),
                                           match="AtomicOpType")))
  cases += [
      ("add_f16", lambda: ok(_atomic, "atomic_add", xh, (0, 2), "ones", (2,))),
      ("max_f16", lambda: err(_atomic, "atomic_max", xh, (0, 2), "ones", (2,),
                              match="does not support f16")),
      ("add_i8", lambda: err(_atomic, "atomic_add", x8, (0, 2), "ones", (2,),
                             match="does not support int8")),
      ("masked", lambda: err(_atomic_masked, xf, match=None)),   # (NotImplementedError())
      ("cas_hit", lambda: ok(_cas, np.int32(2), 2, 7)),
      ("cas_miss", lambda: ok(_cas, np.int32(3), 2, 7)),
      ("cas_f32", lambda: ok(_cas, np.float32(1.5), 1.5, -1.0)),
      ("cas_dtypes", lambda: err(_cas, np.int32(3), 2, 7.0, match="identical dtypes")),
  ]
  check_all(cases)


def _gpu_only(top, what, x):
  _, plt, _ = _libs(top)

  def kernel(x_ref, o_ref):
    v = x_ref[...]
    if what == "tanh":
      v = plt.approx_tanh(v)
    elif what == "barrier":
      plt.debug_barrier()
    elif what == "contiguous":
      v = plt.max_contiguous(v, 4)
    elif what == "dot":
      v = plt.dot(v, v.T)[:, :1] + v
    o_ref[...] = v

  return _call(top, kernel, (x.shape, x.dtype), x)


def test_triton_misc():
  x = rand((4, 4), np.float32, seed=6)
  check_all([
      ("approx_tanh", lambda: err(_gpu_only, "tanh", x, match="elementwise_inline_asm")),
      ("approx_tanh_int", lambda: err(_gpu_only, "tanh", np.arange(16).reshape(4, 4),
                                      match="does not accept")),
      ("debug_barrier", lambda: err(_gpu_only, "barrier", x, match="debug_barrier")),
      ("max_contiguous", lambda: ok(_gpu_only, "contiguous", np.arange(4.0, dtype=np.float32))),
      ("dot", lambda: ok(_gpu_only, "dot", x, tol=1e-5)),
  ])
  jp, ap = jax.experimental.pallas.triton, arrax.experimental.pallas.triton
  assert repr(ap.CompilerParams(num_warps=4)) == repr(jp.CompilerParams(num_warps=4))
  assert ap.CompilerParams() == ap.CompilerParams(None, None)
  with pytest.raises(dataclasses.FrozenInstanceError):
    ap.CompilerParams().num_warps = 2


# ---- pallas.tpu --------------------------------------------------------------------------------
def _tpu_op(top, what, x, interpret=True, **kw):
  _, _, pltpu = _libs(top)

  def kernel(x_ref, o_ref):
    v = x_ref[...]
    if what == "roll":
      v = pltpu.roll(v, **kw)
    elif what == "bitcast":
      v = pltpu.bitcast(v, **kw)
    elif what == "einshape":
      v = pltpu.einshape(kw.pop("eq"), v, **kw)
    elif what == "load":
      v = pltpu.load(x_ref, mask=v > 0)
    elif what == "store":
      o_ref[...] = top.numpy.zeros_like(o_ref)
      pltpu.store(o_ref, v, mask=v > 0)
      return
    else:
      v = getattr(pltpu, what)(v, **kw)
    o_ref[...] = v

  shape_dtype = jax.eval_shape(lambda v: _eval_tpu(what, v, dict(kw)), x)
  return _call(top, kernel, (shape_dtype.shape, shape_dtype.dtype), x, interpret=interpret)


def _eval_tpu(what, v, kw):
  """The result shape/dtype of an op (JAX's, evaluated outside a kernel)."""
  pltpu = jax.experimental.pallas.tpu
  if what in ("load", "store", "roll"):
    return v
  if what == "bitcast":
    src, dst = v.dtype.itemsize, np.dtype(kw["ty"]).itemsize
    shape = list(v.shape)
    if v.ndim >= 2:
      shape[-2] = shape[-2] * src // dst
    return jax.ShapeDtypeStruct(tuple(shape), kw["ty"])
  if what == "einshape":
    return pltpu.einshape(kw.pop("eq"), v, **kw)
  return v


def test_tpu_vector_ops():
  x = rand((4, 8), np.float32, seed=7)
  xi = rand((4, 8), np.int8, seed=8)
  x3 = rand((2, 4, 6), np.float32, seed=9)
  check_all([
      ("roll", lambda: ok(_tpu_op, "roll", x, shift=3, axis=1)),
      ("roll_tpu_params", lambda: ok(_tpu_op, "roll", x, "tpu", shift=1, axis=0, jit=True)),
      ("roll_stride", lambda: ok(_tpu_op, "roll", x, shift=1, axis=0, stride=1,
                                    stride_axis=1)),
      ("roll_stride3", lambda: ok(_tpu_op, "roll", x3, shift=2, axis=2, stride=3,
                                     stride_axis=0)),
      ("roll_negative", lambda: err(_tpu_op, "roll", x, shift=-1, axis=1,
          match="shift must be non-negative")),
      ("roll_axis", lambda: err(_tpu_op, "roll", x, shift=1, axis=2,
          match="axis is out of range")),
      ("roll_stride_only", lambda: err(_tpu_op, "roll", x, shift=1, axis=0, stride=1,
          match="must be both specified")),
      ("roll_same_axis", lambda: err(_tpu_op, "roll", x, shift=1, axis=0, stride=1,
                                     stride_axis=0, match="axis and stride_axis are different")),
      ("bitcast_same", lambda: ok(_tpu_op, "bitcast", x, ty=np.int32)),
      ("bitcast_narrow", lambda: ok(_tpu_op, "bitcast", x, ty=np.int16)),
      ("bitcast_wide", lambda: ok(_tpu_op, "bitcast", xi, ty=np.float32)),
      ("bitcast_bf16", lambda: ok(_tpu_op, "bitcast", x3, ty=arrax.numpy.bfloat16)),
      ("bitcast_1d", lambda: err(_tpu_op, "bitcast", x[0], ty=np.int32,
          match="bitcast 1D")),
      ("bitcast_unpackable", lambda: err(_tpu_op, "bitcast", xi[:3], ty=np.int32,
          match="perfectly packed")),
      ("load_mask", lambda: ok(_tpu_op, "load", x)),
      ("store_mask", lambda: ok(_tpu_op, "store", x, "tpu")),
  ])


def test_einshape():
  x = rand((4, 6), np.float32, seed=10)
  x3 = rand((2, 3, 4), np.int32, seed=11)
  check_all([
      ("transpose", lambda: ok(_tpu_op, "einshape", x, eq="ab->ba")),
      ("split", lambda: ok(_tpu_op, "einshape", x, eq="a(bc)->abc", b=2)),
      ("split_transpose", lambda: ok(_tpu_op, "einshape", x, eq="a(bc)->cab", c=3)),
      ("merge", lambda: ok(_tpu_op, "einshape", x3, eq="abc->(ab)c")),
      ("merge_transpose", lambda: ok(_tpu_op, "einshape", x3, eq="abc->c(ba)")),
      ("regroup", lambda: ok(_tpu_op, "einshape", x, eq="(ab)c->a(bc)", a=2)),
  ])


def test_tpu_only_ops_raise():
  x = rand((2, 4), np.float32, seed=12)
  u = np.full((2, 4), 0x3F804000, np.uint32)

  def prng(top, what, interpret=True):
    _, _, pltpu = _libs(top)

    def kernel(o_ref):
      pltpu.prng_seed(0)
      o_ref[...] = (pltpu.prng_random_bits((2, 4)) if what == "bits"
                    else pltpu.stateful_uniform((2, 4)))
    return _call(top, kernel, ((2, 4), np.int32 if what == "bits" else np.float32),
                 interpret=interpret)

  def rounding(top, x):
    def kernel(x_ref, o_ref):
      bits = top.numpy.zeros(x.shape, np.uint32)
      o_ref[...] = top.experimental.pallas.tpu.stochastic_round(
          x_ref[...], bits, target_dtype=top.numpy.bfloat16)
    return _call(top, kernel, (x.shape, top.numpy.bfloat16), x)

  check_all([
      ("prng_bits", lambda: err(prng, "bits", match="prng_seed")),
      ("stateful_uniform", lambda: err(prng, "uniform", match="prng_seed")),
      ("stochastic_round", lambda: err(rounding, x, match="stochastic_round")),
      ("pack", lambda: err(
          lambda top, v: top.experimental.pallas.tpu.pack_elementwise(
              [v, v], packed_dtype=top.numpy.bfloat16), x, match="pack_elementwise")),
      ("unpack", lambda: err(
          lambda top, v: top.experimental.pallas.tpu.unpack_elementwise(
              v, index=0, packed_dtype=top.numpy.bfloat16, unpacked_dtype=np.float32), u,
          match="unpack_elementwise")),
  ])


def test_tpu_info_and_interpret_mode():
  jt, at = jax.experimental.pallas.tpu, arrax.experimental.pallas.tpu
  assert at.is_tpu_device() is jt.is_tpu_device() is False
  with pytest.raises(ValueError) as je:
    jt.get_tpu_info()
  with pytest.raises(ValueError) as ae:
    at.get_tpu_info()
  assert str(ae.value) == str(je.value)
  for name in ["ChipVersion", "CoreType", "Tiling", "BufferType"]:
    assert ([(m.name, m.value) for m in getattr(at, name)]
            == [(m.name, m.value) for m in getattr(jt, name)]), name
  assert at.Tiling.COMPACT.shape == jt.Tiling.COMPACT.shape
  assert at.Tiling.SPARSE_CORE.shape == jt.Tiling.SPARSE_CORE.shape
  assert [b.is_input for b in at.BufferType] == [b.is_input for b in jt.BufferType]
  assert [b.is_output for b in at.BufferType] == [b.is_output for b in jt.BufferType]
  assert repr(at.CoreType.TC) == repr(jt.CoreType.TC) and str(at.CoreType.TC) == "tc"
  assert repr(at.InterpretParams()) == repr(jt.InterpretParams())
  assert (repr(at.InterpretParams(uninitialized_memory="zero", random_seed=3))
          == repr(jt.InterpretParams(uninitialized_memory="zero", random_seed=3)))
  with pytest.raises(TypeError):
    at.InterpretParams(False)
  assert at.reset_tpu_interpret_mode_state() is None

  x = rand((2, 4), np.float32, seed=13)

  def double(top, x):
    def kernel(x_ref, o_ref):
      o_ref[...] = x_ref[...] * 2
    return _call(top, kernel, (x.shape, x.dtype), x, interpret=False)

  err(double, x, match="Only interpret mode")
  with at.force_tpu_interpret_mode(), jt.force_tpu_interpret_mode():
    ok(double, x)
  err(double, x, match="Only interpret mode")
  at.set_tpu_interpret_mode(at.InterpretParams())
  try:
    np.testing.assert_array_equal(double(arrax, x), x * 2)
  finally:
    at.set_tpu_interpret_mode(None)
  with pytest.raises(ValueError, match="Only interpret mode"):
    double(arrax, x)


def _tpu_stmt(top, what, x, interpret=True):
  """A copy kernel that also runs one TPU-only statement."""
  pl = top.experimental.pallas
  pltpu = top.experimental.pallas.tpu

  def kernel(x_ref, o_ref):
    v = x_ref[...]
    if what == "touch":
      pltpu.touch(x_ref)
    elif what == "trace_value":
      pltpu.trace_value("v", v[0, 0])
    elif what == "matmul_pop":
      v = pltpu.matmul_pop(0, x.shape, x.dtype, 0)
    elif what == "constraint":
      v = pltpu.with_memory_space_constraint(v, pltpu.VMEM) * 2
    elif what == "pipeline":
      def body(i_ref, o_blk):
        o_blk[...] = i_ref[...] + 1
      spec = pl.BlockSpec((1, x.shape[1]), lambda i: (i, 0))
      pltpu.emit_pipeline(body, grid=(x.shape[0],), in_specs=[spec], out_specs=[spec])(
          x_ref, o_ref)
      return
    o_ref[...] = v

  return _call(top, kernel, (x.shape, x.dtype), x, interpret=interpret)


def test_tpu_only_statements():
  x = rand((2, 4), np.float32, seed=14)
  check_all([
      ("touch", lambda: err(_tpu_stmt, "touch", x, match="add_dependency")),
      ("trace_value", lambda: err(_tpu_stmt, "trace_value", x, match="trace_value")),
      ("matmul_pop", lambda: err(_tpu_stmt, "matmul_pop", x, match="matmul_pop")),
      ("constraint", lambda: ok(_tpu_stmt, "constraint", x, "tpu")),
      ("pipeline", lambda: err(_tpu_stmt, "pipeline", x, match="Unsupported TPU device")),
      ("pipeline_grid", lambda: err(
          lambda top: top.experimental.pallas.tpu.emit_pipeline(lambda: None, grid=(0, 2)),
          match="strictly positive")),
  ])
  assert issubclass(arrax.experimental.pallas.tpu.LoweringException, Exception)


def _first_core(top, x):
  """vmap over a named "core" axis, writing x + 1 into a ref on core 0 only."""
  pltpu = top.experimental.pallas.tpu

  def per_core(v):
    out = top.new_ref(v * 0)

    @pltpu.run_on_first_core("c")
    def _():
      out[...] = v + 1
    return out[...]

  return top.vmap(per_core, axis_name="c")(x)


@pytest.mark.xfail(strict=True, reason="arrax: pl.when (cond) writing a ref under vmap fails "
                   "('AbstractRef' has no 'vma'); JAX runs it")
def test_run_on_first_core_two_cores():
  ok(_first_core, np.arange(2.0, dtype=np.float32))


def test_run_on_first_core():
  check_all([
      ("one_core", lambda: ok(_first_core, np.arange(1.0, dtype=np.float32))),
      ("unbound", lambda: err(lambda top: top.experimental.pallas.tpu.run_on_first_core("c"),
                              match="unbound axis name")),
  ])


# ---- hardware figures, meshes, semaphores --------------------------------------------------------
def test_tpu_info_for_chip():
  jt, at = jax.experimental.pallas.tpu, arrax.experimental.pallas.tpu
  for jc, ac in zip(jt.ChipVersion, at.ChipVersion):
    for cores in (1, 2):
      try:
        want = jt.get_tpu_info_for_chip(jc, cores)
      except ValueError as e:
        with pytest.raises(ValueError, match="num_tensor_cores_per_logical_device=1"):
          at.get_tpu_info_for_chip(ac, cores)
        assert "must have num_tensor_cores_per_logical_device=1" in str(e)
        continue
      got = at.get_tpu_info_for_chip(ac, cores)
      assert isinstance(got, at.TpuInfo)
      assert repr(got).replace("arrax", "jax") == repr(want), jc
      assert (got.is_lite, got.is_split_chip, got.is_megacore) == (
          want.is_lite, want.is_split_chip, want.is_megacore)
      for d1, d2 in [("float32", "float32"), ("bfloat16", "int8"), ("int8", "uint8"),
                     ("float8_e5m2", "float8_e4m3fn"), ("int4", "int4"), ("float32", "int32")]:
        assert got.is_matmul_supported(d1, d2) == want.is_matmul_supported(d1, d2), (jc, d1, d2)
      if want.generation <= 7:
        for d in [np.float32, "bfloat16", np.int8, "int4"]:
          assert got.get_sublane_tiling(d) == want.get_sublane_tiling(d), (jc, d)
    assert (ac.is_lite, ac.supports_megacore, ac.num_physical_tensor_cores_per_chip) == (
        jc.is_lite, jc.supports_megacore, jc.num_physical_tensor_cores_per_chip)
  with pytest.raises(TypeError):
    at.TpuInfo(generation=2)


def test_tensorcore_mesh_and_semaphores():
  jt, at = jax.experimental.pallas.tpu, arrax.experimental.pallas.tpu
  jm, am = jt.create_tensorcore_mesh("x", num_cores=2), at.create_tensorcore_mesh("x", num_cores=2)
  assert repr(am).replace("arrax", "jax") == repr(jm)
  assert am.shape == jm.shape and am.core_type.name == jm.core_type.name
  assert am == at.create_tensorcore_mesh("x", num_cores=2) and hash(am) == hash(
      at.create_tensorcore_mesh("x", num_cores=2))
  assert [d.value for d in am.dimension_semantics] == [d.value for d in jm.dimension_semantics]
  for kw in [{}, {"devices": "dev"}]:   # (CPU devices have no TensorCores)
    jkw = {k: jax.devices() for k in kw}
    akw = {k: arrax.devices() for k in kw}
    with pytest.raises(AttributeError):
      jt.create_tensorcore_mesh("x", **jkw)
    with pytest.raises(AttributeError):
      at.create_tensorcore_mesh("x", **akw)
  with pytest.raises(ValueError, match="both devices and num_cores"):
    at.create_tensorcore_mesh("x", devices=arrax.devices(), num_cores=1)
  assert issubclass(at.dma_semaphore, arrax.experimental.pallas.semaphore.__mro__[1])
  assert arrax.numpy.issubdtype(at.dma_semaphore, arrax.dtypes.extended)
  with pytest.raises(NotImplementedError, match="get_barrier_semaphore"):
    jt.get_barrier_semaphore()
  with pytest.raises(NotImplementedError, match="get_barrier_semaphore"):
    at.get_barrier_semaphore()


def _mesh_kernel(top, x, what, cores=2, interpret=True):
  """pl.kernel over a TensorCore mesh (whole-array refs in interpret mode)."""
  pl, pltpu = top.experimental.pallas, top.experimental.pallas.tpu
  mesh = pltpu.create_tensorcore_mesh("core", num_cores=cores)
  sds = top.ShapeDtypeStruct(x.shape, x.dtype)
  if what == "scratch":
    def body(x_ref, o_ref, s_ref):
      s_ref[...] = x_ref[...] * 2
      o_ref[...] = s_ref[...] + 1
    return pl.kernel(body, out_type=sds, mesh=mesh, interpret=interpret,
                     scratch_types=[pltpu.VMEM(x.shape, x.dtype)])(x)

  def body(x_ref, o_ref, p_ref):
    o_ref[...] = x_ref[...] - 1
    p_ref[:2] = x_ref[:2]   # (the rest stays uninitialized: NaN)

  run = pl.kernel(out_type=(sds, sds), mesh=mesh, interpret=interpret)(body)
  return top.jit(run)(x) if what == "jit" else run(x)


def test_kernel_on_tensorcore_mesh():
  x = rand((4,), np.float32, seed=19)
  check_all([
      ("tuple_out", lambda: ok(_mesh_kernel, x, "tuple")),
      ("jit_one_core", lambda: ok(_mesh_kernel, x, "jit", 1)),
      ("scratch", lambda: ok(_mesh_kernel, x, "scratch")),
      ("not_interpreted", lambda: err(_mesh_kernel, x, "tuple", interpret=False,
                                      match="Only interpret mode")),
  ])


# ---- random: sample_block and Pallas keys -----------------------------------------------------------
def _sampled(top, sampler, dtype, interpret=True):
  """A (8, 16) array sampled in (4, 8) blocks from (2, 4) tiles."""
  pl, pltpu = top.experimental.pallas, top.experimental.pallas.tpu

  def kernel(o_ref):
    key = top.random.key(3)
    o_ref[...] = pltpu.sample_block(getattr(top.random, sampler), key, block_size=(4, 8),
                                    tile_size=(2, 4), total_size=(8, 16), dtype=dtype)

  return pl.pallas_call(kernel, out_shape=top.ShapeDtypeStruct((8, 16), dtype), grid=(2, 2),
                        out_specs=pl.BlockSpec((4, 8), lambda i, j: (i, j)),
                        interpret=interpret)()


def test_sample_block():
  check_all([
      ("uniform", lambda: ok(_sampled, "uniform", np.float32)),
      ("normal_f16", lambda: ok(lambda top: top.experimental.pallas.tpu.sample_block(
          top.random.normal, top.random.key(2), (2, 4), (2, 2), (3, 8), block_index=(1, 1),
          dtype=np.float16))),
  ])
  out = _sampled(arrax, "uniform", np.float32)
  block = arrax.experimental.pallas.tpu.sample_block(   # (block-shape invariance)
      arrax.random.uniform, arrax.random.key(3), (2, 8), (2, 4), (8, 16), block_index=(3, 1),
      dtype=np.float32)
  np.testing.assert_array_equal(out[6:8, 8:16], block)
  legacy = ok(lambda top: top.experimental.pallas.tpu.sample_block(
      top.random.bits, top.random.PRNGKey(1), (4,), (2,), (7,), block_index=(1,)))
  assert legacy.shape == (4,)
  err(lambda top: top.experimental.pallas.tpu.sample_block(
      top.random.bits, top.random.key(1), (4,), (2, 2), (8,), block_index=(0,)),
      match="must have the same length")


def test_to_pallas_key():
  def data(top, k):
    return top.random.key_data(top.experimental.pallas.tpu.to_pallas_key(k))

  check_all([
      ("typed", lambda: ok(lambda top: data(top, top.random.key(5)))),
      ("raw", lambda: ok(lambda top: data(top, top.random.PRNGKey(5)))),
      ("batched", lambda: ok(lambda top: data(top, top.random.split(top.random.key(1), 3)))),
      ("jit", lambda: ok(lambda top: top.random.key_data(top.jit(lambda k: k)(
          top.experimental.pallas.tpu.to_pallas_key(top.random.key(2)))))),
  ])
  jk = jax.experimental.pallas.tpu.to_pallas_key(jax.random.key(0))
  ak = arrax.experimental.pallas.tpu.to_pallas_key(arrax.random.key(0))
  assert (str(ak.dtype), ak.shape, ak.ndim) == (str(jk.dtype), jk.shape, jk.ndim)
  assert str(arrax.random.key_impl(ak)) == str(jax.random.key_impl(jk)) == "pallas_tpu"
  kb = arrax.experimental.pallas.tpu.to_pallas_key(arrax.random.split(arrax.random.key(1), 3))
  assert kb.shape == (3,) and kb[2].shape == () and str(kb[2].dtype) == "key<pl>"
  np.testing.assert_array_equal(arrax.random.key_data(kb[2]), arrax.random.key_data(kb)[2])
  for use in [lambda top, k: top.random.bits(k, (2,)), lambda top, k: top.random.split(k),
              lambda top, k: top.random.uniform(k, (2,)),
              lambda top, k: top.random.fold_in(k, 1)]:
    with pytest.raises(NotImplementedError):
      use(jax, jk)
    with pytest.raises(NotImplementedError):
      use(arrax, ak)


# ---- BufferedRef ----------------------------------------------------------------------------------
def _buffered_double(top, x, tiling, buffer_count=2, interpret=True):
  """Rows of x doubled through an input and an output BufferedRef driven by hand."""
  pl, pltpu = top.experimental.pallas, top.experimental.pallas.tpu
  tiling = None if tiling is None else getattr(pltpu.Tiling, tiling)
  spec = pl.BlockSpec((1, x.shape[1]), lambda i: (i, 0))

  def kernel(x_hbm, o_hbm):
    def body(bi, bo):
      bi, bo = bi.initialize_slots(), bo.initialize_slots()
      for i in range(x.shape[0]):
        bi.copy_in(x_hbm, (i,))
        bi.wait_in(x_hbm, (i,))
        bo.current_ref[...] = bi.current_ref[...] * 2
        bo.copy_out(o_hbm, (i,))
        bo.wait_out(o_hbm, (i,))
        bi = bi.advance_copy_in_slot().advance_wait_in_slot()
        bo = bo.advance_copy_out_slot(i % 2 == 0).advance_wait_out_slot()
    pl.run_scoped(body, pltpu.BufferedRef.input(spec, x.dtype, buffer_count, tiling=tiling),
                  pltpu.BufferedRef.output(spec, x.dtype, buffer_count, tiling=tiling))

  any_spec = pl.BlockSpec(memory_space=pl.ANY)
  if interpret == "tpu":
    interpret = pltpu.InterpretParams()
  return pl.pallas_call(kernel, out_shape=top.ShapeDtypeStruct(x.shape, x.dtype),
                        in_specs=[any_spec], out_specs=any_spec, interpret=interpret)(x)


def test_buffered_ref_pipeline():
  x = rand((4, 8), np.float32, seed=15)
  check_all([
      ("sparse_core_tiling", lambda: ok(_buffered_double, x, "SPARSE_CORE")),
      ("single_buffer_tpu", lambda: ok(_buffered_double, x, "SPARSE_CORE", 1, "tpu")),
      ("compact_needs_tpu", lambda: err(_buffered_double, x, None,
                                        match="Unsupported TPU device kind")),
  ])


def _bref(top, kind, *args, **kw):
  pltpu = top.experimental.pallas.tpu
  return getattr(pltpu.BufferedRef, kind)(*args, **kw)


def test_buffered_ref_fields():
  specs = {}
  for top in (jax, arrax):
    pl, pltpu = top.experimental.pallas, top.experimental.pallas.tpu
    specs[top] = dict(row=pl.BlockSpec((1, 8), lambda i: (i, 0)),
                      flat=pl.BlockSpec((8,), lambda i: (i,)),
                      vmem=pl.BlockSpec((8,), lambda i: (i,), memory_space=pltpu.VMEM),
                      sem=pl.BlockSpec((8,), lambda i: (i,), memory_space=pltpu.SEMAPHORE))

  def fields(top, kind, spec, **kw):
    pltpu = top.experimental.pallas.tpu
    if "source_memory_space" in kw:
      kw["source_memory_space"] = pltpu.VMEM
    b = _bref(top, kind, specs[top][spec], np.float32, **kw)
    window = None if b.window_ref is None else (b.window_ref.shape, str(b.window_ref.dtype),
                                                str(b.window_ref.memory_space))
    sems = [None if s is None else s.shape for s in (b.sem_recvs, b.sem_sends)]
    return (window, sems, b.is_buffered, b.use_lookahead, b.is_input, b.is_output,
            b.is_input_output, b.has_allocated_buffer, len(top.tree.leaves(b)))

  for kind, spec, kw in [("input", "row", {}), ("output", "flat", {}),
                         ("input_output", "row", {"buffer_count": 1}),
                         ("input", "flat", {"buffer_count": 3, "tiling": "SPARSE_CORE"}),
                         ("input", "vmem", {"source_memory_space": 1}),
                         ("input", "flat", {"use_lookahead": True, "grid_rank": 1})]:
    kj, ka = dict(kw), dict(kw)
    if "tiling" in kw:
      kj["tiling"] = jax.experimental.pallas.tpu.Tiling.SPARSE_CORE
      ka["tiling"] = arrax.experimental.pallas.tpu.Tiling.SPARSE_CORE
    assert fields(arrax, kind, spec, **ka) == fields(jax, kind, spec, **kj), (kind, spec, kw)
  for top in (jax, arrax):
    with pytest.raises(NotImplementedError, match="Buffer count >2"):
      _bref(top, "output", specs[top]["flat"], np.float32, buffer_count=3)
    with pytest.raises(ValueError, match="Unsupported buffer memory space"):
      _bref(top, "input", specs[top]["sem"], np.float32)
    with pytest.raises(ValueError, match="grid_rank must be specified"):
      _bref(top, "input", specs[top]["flat"], np.float32, use_lookahead=True)
    b = _bref(top, "input", specs[top]["vmem"], np.float32,
              source_memory_space=top.experimental.pallas.tpu.VMEM)
    with pytest.raises(ValueError, match="buffer count is undefined"):
      b.buffer_count
    base = top.experimental.pallas.tpu.BufferedRefBase()
    assert base.is_buffered is False and base.is_trivial_windowing is False
    with pytest.raises(NotImplementedError):
      base.spec


# ---- pallas.tpu_sc ---------------------------------------------------------------------------------
def _sc_kernel(top, what, x):
  """A kernel applying one SparseCore operation to x (f32[8])."""
  plsc = top.experimental.pallas.tpu_sc
  jnp = top.numpy

  def kernel(x_ref, o_ref):
    v = x_ref[...]
    o_ref[...] = v
    if what == "cumsum":
      o_ref[...] = plsc.cumsum(v)
    elif what == "bitcast":
      o_ref[...] = plsc.bitcast(v, jnp.int32).astype(jnp.float32)
    elif what == "ffs":
      o_ref[...] = v + plsc.all_reduce_ffs(v > 3).astype(jnp.float32)
    elif what == "scan_count":
      o_ref[...] = plsc.scan_count(v.astype(jnp.int32))[0].astype(jnp.float32)
    elif what == "barrier":
      plsc.subcore_barrier()
    elif what == "gather":
      o_ref[...] = plsc.load_gather(x_ref, [jnp.arange(8)[::-1]])
    elif what == "sort":
      o_ref[...] = plsc.sort_key_val(-v, v)[1]
    elif what == "scatter":
      plsc.store_scatter(o_ref, [jnp.arange(8)[::-1]], v)
    elif what == "fetch_add_vector":
      plsc.fetch_and_add(o_ref, 1.0, subcore_id=0)
    elif what == "fetch_add_f32":
      plsc.fetch_and_add(o_ref.at[0], 1.0, subcore_id=0)
    elif what == "unpack_f32":
      plsc.unpack(v, format=plsc.PackFormat.INTERLEAVED)

  return _call(top, kernel, ((8,), np.float32), x)


def test_tpu_sc_operations_need_a_sparse_core():
  x = np.arange(8, dtype=np.float32)
  cases = [(w, lambda w=w, m=m: err(_sc_kernel, w, x, match=m)) for w, m in [
      ("cumsum", "masked_cumsum"), ("bitcast", "bitcast"), ("ffs", "all_reduce_ffs"),
      ("scan_count", "unique"), ("barrier", "barrier"), ("gather", "Unsupported TPU"),
      ("sort", "Unsupported TPU"), ("scatter", "scatter"),
      ("fetch_add_vector", "Expected a scalar ref"), ("fetch_add_f32", "Only int32 refs"),
      ("unpack_f32", "Only unpacking of bloat16 and int16")]]
  check_all(cases)
  js, as_ = jax.experimental.pallas.tpu_sc, arrax.experimental.pallas.tpu_sc
  for top, sc in [(jax, js), (arrax, as_)]:
    with pytest.raises(ValueError, match="Unsupported TPU device kind"):
      sc.get_sparse_core_info()
    with pytest.raises(ValueError, match="Unsupported TPU device kind"):
      sc.VectorSubcoreMesh(core_axis_name="c", subcore_axis_name="s", num_cores=1,
                           num_subcores=1)
    with pytest.raises(ValueError, match="Unsupported TPU device kind"):
      sc.ScalarSubcoreMesh(axis_name="c")
    idx = sc.Indices(top.numpy.arange(3), 7)
    leaves, tree = top.tree.flatten(idx)
    assert len(leaves) == 1 and top.tree.unflatten(tree, leaves).ignored_value == 7
  assert [(p.name, p.value) for p in as_.PackFormat] == [(p.name, p.value) for p in js.PackFormat]


def _parallel_loop_kernel(top, x):
  plsc = top.experimental.pallas.tpu_sc

  def kernel(x_ref, o_ref, c_ref):
    @plsc.parallel_loop(1, 8, 2)
    def _(i):
      o_ref[i] = x_ref[i] * 2

    def body(i, c):
      return c[0] + x_ref[i], i

    s, last = plsc.parallel_loop(0, 8, 3, carry=(x_ref[0] * 0, top.numpy.int32(0)))(body)
    c_ref[0] = s
    c_ref[1] = last.astype(x.dtype)

  return _call(top, kernel, [((8,), x.dtype), ((2,), x.dtype)], x)


def test_tpu_sc_parallel_loop():
  """arrax runs parallel loops in order (JAX has no CPU rule: it raises)."""
  x = rand((8,), np.float32, seed=16)
  with pytest.raises(NotImplementedError):
    _parallel_loop_kernel(jax, x)
  o, c = _parallel_loop_kernel(arrax, x)
  np.testing.assert_array_equal(np.asarray(o)[1::2], x[1::2] * 2)
  np.testing.assert_allclose(np.asarray(c), [x[0] + x[3] + x[6], 6], rtol=1e-6)
  err(lambda top: top.experimental.pallas.tpu_sc.parallel_loop(0, 4, carry=top.numpy.int32(0))(
      lambda i, c: (c, c)), match="same structure as carry")


# ---- ops.tpu kernels ---------------------------------------------------------------------------
def _ops_matmul(top, x, y, **kw):
  mm = importlib.import_module(top.__name__ + ".experimental.pallas.ops.tpu.matmul")
  with top.experimental.pallas.tpu.force_tpu_interpret_mode():
    return mm.matmul(x, y, **kw)


def test_ops_tpu_matmul():
  x = rand((16, 32), np.float32, seed=17)
  y = rand((32, 8), np.float32, seed=18)
  xi, yi = (x * 3).astype(np.int8), (y * 3).astype(np.int8)
  check_all([
      ("f32", lambda: ok(_ops_matmul, x, y, block_shape=(8, 8), block_k=16, tol=1e-5)),
      ("dtypes", lambda: err(_ops_matmul, x, yi, block_shape=(8, 8), block_k=16,
                             match="Cannot deduce output dtype")),
  ])
  out = _ops_matmul(arrax, xi, yi, block_shape=(16, 8), block_k=32, out_dtype=np.int32)
  np.testing.assert_array_equal(out, xi.astype(np.int32) @ yi.astype(np.int32))


def _megablox(top, name):
  return importlib.import_module(top.__name__ + ".experimental.pallas.ops.tpu.megablox" + name)


def _gmm_ref(lhs, rhs, sizes, first=0):
  out = np.zeros((lhs.shape[0], rhs.shape[-1]), np.float32)
  starts = np.concatenate([[0], np.cumsum(sizes)])
  for g in range(rhs.shape[0]):
    s, e = starts[g + first], starts[g + first + 1]
    out[s:e] = lhs[s:e] @ rhs[g]
  return out


def test_ops_tpu_megablox():
  lhs = rand((16, 12), np.float32, seed=20)
  rhs = rand((3, 12, 8), np.float32, seed=21)
  sizes = np.array([5, 0, 11], np.int32)

  def gmm(top, *args, **kw):
    return _megablox(top, ".gmm").gmm(*args, tiling=(8, 8, 8), interpret=True, **kw)

  def grads(top, lhs, rhs, sizes):
    f = lambda a, b: (_megablox(top, "").gmm(  # noqa: E731
        a, b, sizes, np.float32, (8, 8, 8), None, None, False, True) ** 2).sum()
    return top.grad(f, argnums=(0, 1))(lhs, rhs)

  check_all([
      ("vjp_tgmm", lambda: ok(grads, lhs[:, :8], rhs[:, :8], sizes, tol=1e-4)),
      ("lhs_rank", lambda: err(gmm, lhs[None], rhs, sizes, match="2-tensor for 'lhs'")),
      ("sizes_dtype", lambda: err(gmm, lhs, rhs, sizes.astype(np.int16), match="32-bit")),
      ("float16", lambda: err(gmm, lhs.astype(np.float16), rhs, sizes,
                              match="bfloat16 or float32")),
      ("existing_dtype", lambda: err(gmm, lhs, rhs, sizes, existing_out=lhs[:, :8],
                                     preferred_element_type=np.dtype("bfloat16"),
                                     match="must match preferred_element_type")),
  ])
  mod = _megablox(arrax, ".gmm")   # (ragged k tiles, transposed rhs, group offset)
  np.testing.assert_allclose(gmm(arrax, lhs, rhs, sizes), _gmm_ref(lhs, rhs, sizes),
                             rtol=1e-5, atol=1e-5)
  out_t = mod.gmm(lhs, rhs.transpose(0, 2, 1), sizes, tiling=(8, 4, 8), transpose_rhs=True,
                  interpret=True)
  np.testing.assert_allclose(out_t, _gmm_ref(lhs, rhs, sizes), rtol=1e-5, atol=1e-5)
  out_o = mod.gmm(lhs, rhs[1:], sizes, tiling=(8, 8, 8), interpret=True,
                  group_offset=arrax.numpy.asarray(1, np.int32))
  np.testing.assert_allclose(out_o, _gmm_ref(lhs, rhs[1:], sizes, 1), rtol=1e-5, atol=1e-5)
  with pytest.raises(ValueError, match="divisible by x-dimension tile size"):
    mod.gmm(lhs, rhs, sizes, tiling=(6, 8, 8), interpret=True)


def _attention(top, q, k, v, ab, seg, grad=False, **kw):
  fa = importlib.import_module(top.__name__ + ".experimental.pallas.ops.tpu.flash_attention")
  bs = fa.BlockSizes(block_q=8, block_k_major=128, block_k=128, block_b=1,
                     block_q_major_dkv=8, block_k_major_dkv=128, block_k_dkv=128,
                     block_q_dkv=8, block_k_major_dq=128, block_k_dq=128, block_q_dq=8)
  seg = None if seg is None else fa.SegmentIds(*seg)
  with top.experimental.pallas.tpu.force_tpu_interpret_mode():
    f = lambda q, k, v, ab: fa.flash_attention(q, k, v, ab, seg, block_sizes=bs, **kw)  # noqa
    if grad:
      return top.grad(lambda *a: (f(*a) ** 2).sum(), argnums=(0, 1, 2, 3))(q, k, v, ab)
    return f(q, k, v, ab)


def test_ops_tpu_flash_attention():
  q = rand((1, 1, 8, 8), np.float32, seed=22)
  k = rand((1, 1, 128, 8), np.float32, seed=23)
  v = rand((1, 1, 128, 8), np.float32, seed=24)
  ab = rand((1, 1, 8, 128), np.float32, seed=25)
  seg = (np.repeat([[0, 1]], 4, 1).astype(np.int32), np.repeat([[0, 1]], 64, 1).astype(np.int32))
  check_all([
      ("masked", lambda: ok(_attention, q, k, v, ab, seg, causal=True, sm_scale=0.5,
                            tol=1e-5)),
      ("grad", lambda: ok(_attention, q, k, v, ab, None, True, sm_scale=0.5, tol=1e-5)),
      ("shapes", lambda: err(_attention, q, k[:, :, :64], v, None, None,
                             match="KV sequence length mismatch")),
  ])
  fa = importlib.import_module("arrax.experimental.pallas.ops.tpu.flash_attention")
  ref = fa.mha_reference_no_custom_vjp(q, k, v, ab, fa.SegmentIds(*seg), causal=True,
                                       sm_scale=0.5)
  np.testing.assert_allclose(_attention(arrax, q, k, v, ab, seg, causal=True, sm_scale=0.5),
                             ref, rtol=1e-5, atol=1e-6)
  with pytest.raises(ValueError, match="should divide"):
    fa.BlockSizes(block_q=8, block_k_major=128, block_k=96, block_b=1)
