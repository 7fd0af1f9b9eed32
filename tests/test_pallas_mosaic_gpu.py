"""jax.experimental.pallas.mosaic_gpu (plgpu) against JAX 0.10.2 on CPU: what JAX's interpret
mode runs (plain kernels with GPU params/memory spaces/block specs, `kernel`, `nd_loop`,
operand-free `emit_pipeline`, helpers) gives the same values; what needs an NVIDIA GPU raises
the same exception class."""
import dataclasses
import enum
import functools
import warnings

import jax
import jax.experimental.pallas  # noqa: F401
import jax.experimental.pallas.mosaic_gpu  # noqa: F401
import numpy as np
import pytest
from oracle import call_with, check_all, check_error, check_value, rand

import arrax
import arrax.experimental.pallas  # noqa: F401
import arrax.experimental.pallas.mosaic_gpu  # noqa: F401

TOP = call_with("top")
ok = functools.partial(check_value, build=TOP)
err = functools.partial(check_error, build=TOP)
X = rand((8, 16), np.float32, seed=3)
NAMES = sorted(n for n in dir(jax.experimental.pallas.mosaic_gpu) if not n.startswith("_"))


def _libs(top):
  return top.experimental.pallas, top.experimental.pallas.mosaic_gpu


def _sds(top, shape=(8, 16), dtype=np.float32):
  return top.ShapeDtypeStruct(shape, dtype)


def _pc(top, kernel, *args, out=((8, 16), np.float32), interpret=True, **kw):
  pl, plgpu = _libs(top)
  kw.setdefault("compiler_params", plgpu.CompilerParams())
  return pl.pallas_call(kernel, out_shape=_sds(top, *out), interpret=interpret, **kw)(*args)


# ---- the public names ------------------------------------------------------------------------
def test_public_names():
  mod = arrax.experimental.pallas.mosaic_gpu
  assert len(NAMES) == 92
  assert NAMES == sorted(n for n in dir(mod) if not n.startswith("_"))


def test_dataclasses_and_enums():
  j, a = jax.experimental.pallas.mosaic_gpu, arrax.experimental.pallas.mosaic_gpu
  n_dc = n_enum = 0
  for name in NAMES:
    jo, ao = getattr(j, name), getattr(a, name)
    if isinstance(jo, type) and issubclass(jo, enum.Enum):
      assert [(m.name, m.value) for m in jo] == [(m.name, m.value) for m in ao], name
      n_enum += 1
    elif isinstance(jo, type) and dataclasses.is_dataclass(jo):
      def fields(c):
        return [(f.name, f.kw_only, f.init, f.default is dataclasses.MISSING)
                for f in dataclasses.fields(c) if f.name != "_init"]
      assert fields(jo) == fields(ao), name
      assert jo.__dataclass_params__.frozen == ao.__dataclass_params__.frozen, name
      n_dc += 1
    elif isinstance(jo, enum.Enum):
      assert (jo.name, jo.value) == (ao.name, ao.value), name
  assert n_enum == 8 and n_dc == 18
  assert str(a.SMEM) == "smem" and a.Layout.WG_STRIDED((8,), vec_size=2) is not None
  cp = a.CompilerParams(dimension_semantics=["parallel"], approx_math=True)
  jcp = j.CompilerParams(dimension_semantics=["parallel"], approx_math=True)
  assert cp.dimension_semantics == jcp.dimension_semantics == ("parallel",)
  assert cp.replace(max_concurrent_steps=2).max_concurrent_steps == 2
  assert a.CompilerParams().profile_trace_scope.value == "warpgroup"
  assert a.Barrier(num_barriers=3).num_barriers == j.Barrier(num_barriers=3).num_barriers
  assert a.ClusterBarrier(collective_axes=("x",)).num_barriers == (1,)
  m, jm = a.Mesh(grid=(2,), grid_names=("i",), num_threads=2, thread_name="t"), \
      j.Mesh(grid=(2,), grid_names=("i",), num_threads=2, thread_name="t")
  assert m.shape == jm.shape and a.WarpMesh(axis_name="w").shape == j.WarpMesh(axis_name="w").shape
  for mk in (lambda t: t.GMEM((8,), np.float32), lambda t: t.TMEM((128, 8), np.float32),
             lambda t: t.SMEM.like(np.zeros((2, 3), np.int8)),
             lambda t: t.RefUnion(t.SMEM((8,), np.float32), (t.SMEM((4,), np.float32),
                                                              t.SMEM((300,), np.int8))),
             lambda t: t.TryClusterCancelResult(), lambda t: t.TryClusterCancelResult(3)):
    r, jr = mk(a), mk(j)
    assert (r.shape, np.dtype(r.dtype), str(r.memory_space)) == \
        (jr.shape, np.dtype(jr.dtype), str(jr.memory_space))
  assert a.ACC.init(arrax.numpy.zeros((64, 8))).shape == (64, 8)


def _build(top, what):
  _, plgpu = _libs(top)
  return what(plgpu)


@pytest.mark.parametrize("what", [
    lambda g: g.CompilerParams(profile_space=4),
    lambda g: g.Barrier(num_arrivals=0),
    lambda g: g.ClusterBarrier(collective_axes=("x",), num_arrivals=0),
    lambda g: g.Mesh(grid=(2,), grid_names=()),
    lambda g: g.Mesh(num_threads=2),
    lambda g: g.Mesh(num_threads=17, thread_name="t"),
    lambda g: g.Mesh(cluster=(1, 1, 1, 1), cluster_names="abcd"),
    lambda g: g.SwizzleTransform(16),
    lambda g: g.TMEM((128, 8), np.float16),
    lambda g: g.TMEM((128, 8), np.float32, transforms=(g.TilingTransform((8, 8)),)),
    lambda g: g.SMEM((8,), np.float16, packed=True),
    lambda g: g.find_swizzle(64, "lhs"),
    lambda g: g.kernel(lambda *r: None, out_shape=(), out_type=()),
])
def test_constructor_errors(what):
  err(_build, what, match="")


def test_helpers():
  meta16 = np.asarray(rand((128, 32, 2), np.int32, seed=4, ints=(0, 4)))
  meta8 = np.asarray(rand((128, 64, 2), np.int32, seed=5, ints=(0, 4)))

  def sparse(top, m, dt):
    _, plgpu = _libs(top)
    return plgpu.format_tcgen05_sparse_metadata(top.numpy.asarray(m).astype(np.dtype("uint2")), dt)

  def snake(top, i, shape, minor, w):
    _, plgpu = _libs(top)
    return top.numpy.stack(plgpu.planar_snake(top.numpy.int32(i), shape, minor, w))

  check_all(
      [(f"swizzle{b}", lambda b=b: ok(lambda t: _libs(t)[1].find_swizzle(b))) for b in
       (128, 256, 512, 1024, 3072)]
      + [("sparse16", lambda: ok(sparse, meta16, np.float16, convert=None)),
         ("sparse8", lambda: ok(sparse, meta8, np.int8, convert=None)),
         ("sparse_f32", lambda: err(sparse, meta16, np.float32, match="not implemented")),
         ("sparse_u8", lambda: err(lambda t: _libs(t)[1].format_tcgen05_sparse_metadata(
             t.numpy.zeros((128, 32, 2), np.uint8), np.float16), match="uint2"))]
      + [(f"snake{i}_{m}_{w}", lambda i=i, m=m, w=w: ok(snake, i, (6, 5), m, w))
         for i in (0, 7, 13, 29) for m in (0, 1) for w in (2, 3)])


# ---- kernels JAX's interpret mode runs ---------------------------------------------------------
def _plain(top, x, variant):
  pl, plgpu = _libs(top)

  def k(x_ref, o_ref):
    o_ref[...] = x_ref[...] * 2 + 1

  if variant == "blockspec":
    spec = plgpu.BlockSpec((4, 16), lambda i: (i, 0))
    return _pc(top, k, x, grid=(2,), in_specs=[spec], out_specs=spec)
  if variant == "gmem":
    return _pc(top, k, x, in_specs=[pl.BlockSpec(memory_space=plgpu.GMEM)],
               out_specs=pl.BlockSpec(memory_space=plgpu.GMEM))
  if variant == "smem_scratch":
    def ks(x_ref, o_ref, s, acc, tmem, u):
      s[...] = x_ref[...]
      o_ref[...] = s[...] - 1
    return _pc(top, ks, x, scratch_shapes=[
        plgpu.SMEM((8, 16), np.float32), plgpu.ACC((64, 8)),
        plgpu.TMEM((128, 8), np.float32), plgpu.RefUnion(plgpu.SMEM((8,), np.float32))])
  if variant == "gmem_scratch":
    def kg(x_ref, o_ref, s):
      s[...] = x_ref[...] * 3
      o_ref[...] = s[...]
    return _pc(top, kg, x, scratch_shapes=[plgpu.GMEM((8, 16), np.float32)])
  if variant == "prefetch":
    def kp(x_ref, o_ref):
      plgpu.async_prefetch(x_ref)
      o_ref[...] = x_ref[...]
    return _pc(top, kp, x)
  if variant == "iota":
    def ki(o_ref):
      o_ref[...] = plgpu.broadcasted_iota(np.int32, (8, 16), 1)
    return _pc(top, ki, out=((8, 16), np.int32))
  return _pc(top, k, x)


@pytest.mark.parametrize("variant", ["plain", "blockspec", "gmem", "smem_scratch",
                                     "gmem_scratch", "prefetch", "iota"])
def test_plain_kernels(variant):
  ok(_plain, X, variant)


def _kernel(top, x, variant):
  _, plgpu = _libs(top)
  sds = _sds(top)
  if variant == "scratch":
    def ks(x_ref, o_ref, s):
      s[...] = x_ref[...]
      o_ref[...] = s[...] * 3
    return plgpu.kernel(ks, out_type=sds, scratch_types=[plgpu.SMEM((8, 16), np.float32)],
                        interpret=True)(x)
  if variant == "scratch_dict":
    def kd(x_ref, o_ref, *, s):
      s[...] = x_ref[...] + 2
      o_ref[...] = s[...]
    return plgpu.kernel(kd, out_type=sds, scratch_types=dict(s=plgpu.SMEM((8, 16), np.float32)),
                        interpret=True)(x)
  if variant == "two_outs":
    def k2(x_ref, a_ref, b_ref):
      a_ref[...] = x_ref[...] + 1
      b_ref[...] = x_ref[...].astype(np.int32)
    return plgpu.kernel(k2, out_type=(sds, _sds(top, (8, 16), np.int32)), interpret=True)(x)
  if variant == "decorator":
    @plgpu.kernel(out_type=sds, interpret=True)
    def kdec(x_ref, o_ref):
      o_ref[...] = -x_ref[...]
    return kdec(x)
  if variant == "grid":
    def kgr(x_ref, o_ref):
      o_ref[...] = x_ref[...] + 1
    return plgpu.kernel(kgr, out_type=sds, grid=(3,), grid_names=("i",), interpret=True)(x)
  if variant == "jit":
    def kj(x_ref, o_ref):
      o_ref[...] = x_ref[...] * x_ref[...]
    return top.jit(plgpu.kernel(kj, out_type=sds, interpret=True))(x)
  if variant == "pl_kernel":
    def kpl(x_ref, o_ref):
      o_ref[...] = x_ref[...] - 5
    return top.experimental.pallas.kernel(kpl, out_type=sds, mesh=plgpu.Mesh(),
                                          interpret=True)(x)
  if variant == "out_shape":
    with warnings.catch_warnings():
      warnings.simplefilter("ignore")
      return plgpu.kernel(lambda x_ref, o_ref: o_ref.__setitem__(..., x_ref[...]),
                          out_shape=sds, interpret=True)(x)
  raise AssertionError(variant)


@pytest.mark.parametrize("variant", ["scratch", "scratch_dict", "two_outs", "decorator", "grid",
                                     "jit", "pl_kernel", "out_shape"])
def test_kernel(variant):
  ok(_kernel, X, variant)


def _nd_loop(top, grid, tiling, carry):
  _, plgpu = _libs(top)

  def k(o_ref):
    o_ref[...] = top.numpy.zeros_like(o_ref)
    if carry:
      @plgpu.nd_loop(grid, collective_axes=(), tiling=tiling, init_carry=np.int32(0))
      def body(info, carry):
        o_ref[info.index] = info.local_index + 10 * info.num_local_steps + 100 * carry
        return carry + 1
    else:
      @plgpu.nd_loop(grid, collective_axes=(), tiling=tiling)
      def body(info):
        o_ref[info.index] = info.local_index * 3 + 1
  return _pc(top, k, out=(grid, np.int32))


@pytest.mark.parametrize("grid,tiling,carry", [((2, 3), None, False), ((2, 4), (1, 2), True),
                                               ((4, 4), (2, 2), False), ((3,), None, True)])
def test_nd_loop(grid, tiling, carry):
  ok(_nd_loop, grid, tiling, carry)


def test_nd_loop_bad_tiling():
  err(_nd_loop, (2, 3), (1, 2), False, match="does not divide")


def _pipeline(top, carry):
  _, plgpu = _libs(top)

  def k(o_ref):
    o_ref[...] = top.numpy.zeros_like(o_ref)
    if carry:
      def body(idx, c):
        o_ref[idx] = c
        return c + 2
      o_ref[0, 0] = plgpu.emit_pipeline(body, grid=(2, 3), init_carry=np.int32(5))() * 0 + \
          o_ref[0, 0]
    else:
      def body(idx):
        o_ref[idx] = idx[0] * 10 + idx[1]
      plgpu.emit_pipeline(body, grid=(2, 3))()
  return _pc(top, k, out=((2, 3), np.int32))


@pytest.mark.parametrize("carry", [False, True])
def test_emit_pipeline_no_operands(carry):
  ok(_pipeline, carry)


# ---- what needs an NVIDIA GPU ------------------------------------------------------------------
_SM = lambda g: g.SMEM((8, 16), np.float32)  # noqa: E731


def _gpu_case(top, x, name):
  pl, plgpu = _libs(top)
  np_ = top.numpy
  spec = pl.BlockSpec(memory_space=plgpu.GMEM)
  scratch = []

  def body(x_ref, o_ref, *s):
    o_ref[...] = x_ref[...]
    if name == "smem_transforms":
      s[0][...] = x_ref[...]
    if name == "copy_gmem_to_smem":
      plgpu.copy_gmem_to_smem(x_ref, s[0], s[1])
    elif name == "barrier_wait":
      plgpu.barrier_wait(s[0])
    elif name == "copy_smem_to_gmem":
      plgpu.copy_smem_to_gmem(s[0], o_ref)
    elif name == "wait_smem_to_gmem":
      plgpu.wait_smem_to_gmem(0)
    elif name == "commit_smem":
      plgpu.commit_smem()
    elif name == "commit_smem_to_gmem_group":
      plgpu.commit_smem_to_gmem_group()
    elif name == "commit_tmem":
      plgpu.commit_tmem()
    elif name == "wait_load_tmem":
      plgpu.wait_load_tmem()
    elif name == "layout_cast":
      o_ref[...] = plgpu.layout_cast(x_ref[...], plgpu.Layout.WGMMA)
    elif name == "iota_layout":
      o_ref[...] = plgpu.broadcasted_iota(np.int32, (8, 16), 1,
                                          layout=plgpu.Layout.WGMMA).astype(np.float32)
    elif name == "load":
      o_ref[...] = plgpu.load(x_ref, (), layout=plgpu.Layout.WGMMA)
    elif name == "print_layout":
      plgpu.print_layout("{}", x_ref[...])
    elif name == "set_max_registers":
      plgpu.set_max_registers(40, action="increase")
    elif name == "griddepcontrol_wait":
      plgpu.griddepcontrol_wait()
    elif name == "griddepcontrol_launch_dependents":
      plgpu.griddepcontrol_launch_dependents()
    elif name == "wgmma_wait":
      plgpu.wgmma_wait(0)
    elif name == "inline_mgpu":
      plgpu.inline_mgpu()(lambda ctx: None)()
    elif name == "semaphore_signal":
      plgpu.semaphore_signal(s[0])
    elif name == "semaphore_wait":
      plgpu.semaphore_wait(s[0], 0)
    elif name == "multimem_store":
      plgpu.multimem_store(x_ref[...], o_ref, "x")
    elif name == "async_store_tmem":
      plgpu.async_store_tmem(s[0], np_.zeros((128, 8), np.float32))
    elif name == "wgmma_accumulator_load":
      o_ref[:1, :1] = plgpu.wgmma_accumulator_load(s[0])[:1, :1]
    elif name == "remote_ref":
      o_ref[...] = plgpu.remote_ref(x_ref, 0)[...]
    elif name == "transpose_ref":
      o_ref[...] = plgpu.transpose_ref(x_ref, (1, 0))[...].T
    elif name == "emit_pipeline":
      bs = plgpu.BlockSpec((4, 16), lambda i: (i, 0))
      plgpu.emit_pipeline(lambda i, a, b: b.__setitem__(..., a[...]), grid=(2,),
                          in_specs=[bs], out_specs=[bs])(x_ref, o_ref)
    elif name == "dynamic_scheduling_loop":
      plgpu.dynamic_scheduling_loop(grid_names=())(lambda info: None)
  if name in ("copy_gmem_to_smem",):
    scratch = [_SM(plgpu), plgpu.Barrier()]
  elif name in ("barrier_wait", "barrier_scratch"):
    scratch = [plgpu.Barrier()]
  elif name == "copy_smem_to_gmem":
    scratch = [_SM(plgpu)]
  elif name in ("semaphore_signal", "semaphore_wait"):
    scratch = [plgpu.SemaphoreType.REGULAR(())]
  elif name == "async_store_tmem":
    scratch = [plgpu.TMEM((128, 8), np.float32)]
  elif name == "wgmma_accumulator_load":
    scratch = [plgpu.ACC((64, 64))]
  elif name == "smem_transforms":
    scratch = [plgpu.SMEM((8, 16), np.float32, transforms=(plgpu.TilingTransform((8, 8)),))]
  elif name == "blockspec_transforms":
    tspec = plgpu.BlockSpec((8, 16), lambda: (0, 0), transforms=(plgpu.TilingTransform((8, 8)),))
    return _pc(top, body, x, in_specs=[tspec])
  if name == "dynamic_scheduling_loop":
    return plgpu.kernel(body, out_type=_sds(top), interpret=True)(x)
  if name == "threads":
    return plgpu.kernel(body, out_type=_sds(top), num_threads=2, thread_name="t",
                        interpret=True)(x)
  if name == "grid_axis_index":
    def kg(x_ref, o_ref):
      o_ref[...] = x_ref[...] + top.lax.axis_index("i").astype(np.float32)
    return plgpu.kernel(kg, out_type=_sds(top), grid=(2,), grid_names=("i",), interpret=True)(x)
  if name == "not_interpreted":
    return plgpu.kernel(body, out_type=_sds(top))(x)
  return _pc(top, body, x, in_specs=[spec], out_specs=spec, scratch_shapes=scratch)


GPU_ONLY = ["copy_gmem_to_smem", "barrier_wait", "barrier_scratch", "copy_smem_to_gmem",
            "wait_smem_to_gmem", "commit_smem", "commit_smem_to_gmem_group", "commit_tmem",
            "wait_load_tmem", "layout_cast", "iota_layout", "load", "print_layout",
            "set_max_registers", "griddepcontrol_wait", "griddepcontrol_launch_dependents",
            "wgmma_wait", "inline_mgpu", "semaphore_signal", "semaphore_wait", "multimem_store",
            "async_store_tmem", "wgmma_accumulator_load", "remote_ref", "transpose_ref",
            "emit_pipeline", "dynamic_scheduling_loop", "smem_transforms",
            "blockspec_transforms", "threads", "grid_axis_index", "not_interpreted"]


@pytest.mark.parametrize("name", GPU_ONLY)
def test_gpu_only_fails_as_in_jax(name):
  err(_gpu_case, X, name, match="")


def test_gpu_only_message():
  with pytest.raises(NotImplementedError, match="NVIDIA GPU with Mosaic GPU"):
    _gpu_case(arrax, arrax.numpy.asarray(X), "wgmma_wait")
  with pytest.raises(NotImplementedError, match="NVIDIA GPU with Mosaic GPU"):
    _gpu_case(arrax, arrax.numpy.asarray(X), "copy_gmem_to_smem")
