"""arrax.nn.scaled_matmul / scaled_dot_general / get_scaled_dot_general_config against JAX.

JAX 0.10.2 traces these on CPU (make_jaxpr, eval_shape) but cannot run them: its
`scaled_matmul` primitive has GPU lowerings only (a cuDNN custom call), so evaluation raises
NotImplementedError. arrax lowers it everywhere to the dense computation. For value tests the
`jax_scaled_matmul_on_cpu` fixture gives JAX's primitive a CPU lowering with that same
definition (data and scales widened to float32, scales repeated over their blocks, a float32
dot, a cast), for the duration of this module only; everything around it (quantization, shape
normalization, the custom VJP, batching) is JAX's own code.
"""
import functools
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from jax._src.cudnn import scaled_matmul_stablehlo as jax_sms
from jax._src.interpreters import mlir as jax_mlir
from oracle import assert_same, check, check_all, check_jaxpr, check_raises, rand

import arrax

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
E5M2 = np.dtype(ml_dtypes.float8_e5m2)
E8M0 = np.dtype(ml_dtypes.float8_e8m0fnu)
E2M1 = np.dtype(ml_dtypes.float4_e2m1fn)
F16, F32 = np.dtype(np.float16), np.dtype(np.float32)


def _jax_dense_scaled_matmul(a, b, sa, sb, *, preferred_element_type):
  k = a.shape[2]
  a = a.astype(F32) * jnp.repeat(sa.astype(F32), k // sa.shape[2], axis=2)
  b = b.astype(F32) * jnp.repeat(sb.astype(F32), k // sb.shape[2], axis=2)
  out = jnp.einsum("bmk,bnk->bmn", a, b, preferred_element_type=F32)
  return [out.astype(preferred_element_type)]


@pytest.fixture(scope="module", autouse=True)
def jax_scaled_matmul_on_cpu():
  prim = jax_sms._scaled_matmul_p
  table = jax_mlir._platform_specific_lowerings["cpu"]
  assert prim not in table   # JAX itself has no CPU lowering
  jax_mlir.register_lowering(prim, jax_mlir.lower_fun(_jax_dense_scaled_matmul,
                                                      multiple_results=True), platform="cpu")
  jax.clear_caches()
  yield
  table.pop(prim, None)
  jax.clear_caches()


def _nn(top):
  return top.nn


# ---- scaled_matmul ---------------------------------------------------------------------------

def _quantized(shape, dtype, seed):
  """Random values representable in `dtype` (fp8/fp4 data), as a `dtype` array."""
  return (rand(shape, F32, seed) * (2.0 if dtype == E2M1 else 8.0)).astype(dtype)


def _scales(shape, dtype, seed):
  if dtype == E8M0:   # powers of two 2^-3 .. 2^3
    rng = np.random.default_rng(seed)
    return np.exp2(rng.integers(-3, 4, shape)).astype(F32).astype(E8M0)
  return np.abs(rand(shape, F32, seed) + 0.1).astype(dtype)


MATMUL_CASES = [
    # (data, scale, block, B, M, N, K, preferred_element_type)
    (E4M3, E8M0, 32, 1, 2, 3, 32, np.float32),
    (E4M3, E8M0, 32, 2, 5, 4, 96, BF16),
    (E5M2, E8M0, 32, 3, 1, 7, 64, np.float16),
    (E2M1, E4M3, 16, 2, 4, 3, 48, np.float32),
    (E2M1, E4M3, 16, 1, 8, 8, 16, BF16),
    (np.float32, np.float32, 4, 2, 3, 3, 8, np.float32),
]


def test_scaled_matmul_values_eager_and_jit():
  cases = []
  for i, (dt, st, block, b, m, n, k, pet) in enumerate(MATMUL_CASES):
    args = (_quantized((b, m, k), dt, i), _quantized((b, n, k), dt, 10 + i),
            _scales((b, m, k // block), st, 20 + i), _scales((b, n, k // block), st, 30 + i))
    tol = 1e-2 if np.dtype(pet) in (BF16, F16) else 1e-5
    cases.append((f"{np.dtype(dt).name} {np.dtype(st).name} {(b, m, n, k)} {np.dtype(pet)}",
                  lambda args=args, pet=pet, tol=tol: check(
                      lambda top, *a: top.nn.scaled_matmul(*a, preferred_element_type=pet),
                      *args, build=lambda f, lib: lambda *a: f(lib.top, *a), jit=True,
                      tol=tol)))
  check_all(cases)


def test_scaled_matmul_default_dtype_and_shape():
  a = _quantized((2, 3, 64), E4M3, 0)
  s = _scales((2, 3, 2), E8M0, 1)
  out = arrax.nn.scaled_matmul(a, a, s, s)
  assert out.dtype == F32 and out.shape == (2, 3, 3)
  expected = np.einsum("bmk,bnk->bmn", *[a.astype(F32) * np.repeat(s.astype(F32), 32, 2)] * 2)
  np.testing.assert_allclose(np.asarray(out), expected, rtol=1e-5)
  shape = jax.eval_shape(functools.partial(jax.nn.scaled_matmul,
                                           preferred_element_type=jnp.float16), a, a, s, s)
  ashape = arrax.eval_shape(functools.partial(arrax.nn.scaled_matmul,
                                              preferred_element_type=arrax.numpy.float16),
                            a, a, s, s)
  assert (ashape.shape, ashape.dtype) == (shape.shape, shape.dtype)


def test_scaled_matmul_bad_inputs():
  a3, s3 = _quantized((1, 2, 32), E4M3, 0), _scales((1, 2, 1), E8M0, 0)
  b3 = _quantized((1, 4, 64), E4M3, 1)
  sm = lambda top, *a, **k: top.nn.scaled_matmul(*a, **k)
  build = lambda f, lib: lambda *a, **k: f(lib.top, *a, **k)
  cases = {
      "rank 2 lhs": (a3[0], a3, s3, s3),
      "rank 4 scale": (a3, a3, s3[None], s3),
      "K mismatch": (a3, b3, s3, _scales((1, 4, 1), E8M0, 0)),
      "B mismatch": (a3, np.concatenate([a3, a3]), s3, np.concatenate([s3, s3])),
      "scale K mismatch": (a3, a3, s3, _scales((1, 2, 2), E8M0, 0)),
      "scale M mismatch": (a3, a3, _scales((1, 3, 1), E8M0, 0), s3),
  }
  check_all([(label, lambda args=args: check_raises(sm, *args, build=build, convert=None))
             for label, args in cases.items()] + [
      ("int32 preferred", lambda: check(sm, a3, a3, s3, s3, build=build, convert=None,
                                        preferred_element_type=np.int32)),
      ("None preferred", lambda: check_raises(sm, a3, a3, s3, s3, build=build, convert=None,
                                              preferred_element_type=None)),
  ])
  # Scales not dividing K: JAX accepts this while tracing and fails in its GPU kernel; arrax
  # fails when lowering.
  s3x = _scales((1, 2, 3), E8M0, 0)
  assert jax.eval_shape(jax.nn.scaled_matmul, a3, a3, s3x, s3x).shape == (1, 2, 2)
  assert arrax.eval_shape(arrax.nn.scaled_matmul, a3, a3, s3x, s3x).shape == (1, 2, 2)
  with pytest.raises(ValueError, match="multiple of"):
    arrax.nn.scaled_matmul(a3, a3, s3x, s3x)


def test_scaled_matmul_jaxpr_and_vmap():
  a = _quantized((3, 2, 4, 32), E4M3, 0)
  s = _scales((3, 2, 4, 1), E8M0, 1)
  sm = lambda top, *x: top.nn.scaled_matmul(*x)
  build = lambda f, lib: lambda *x: f(lib.top, *x)
  check_jaxpr(sm, a[0], a[0], s[0], s[0], build=build)
  vm = lambda top, f: top.vmap(f)
  check_jaxpr(sm, a, a, s, s, build=build, transform=vm)
  check(sm, a, a, s, s, build=build, transform=vm, tol=1e-5)
  check(sm, a, a, s, s, build=build, transform=lambda top, f: top.vmap(f, in_axes=1),
        tol=1e-5)
  # JAX's batching rule requires every operand batched along the same axis.
  check_raises(sm, a, a[0], s, s[0], build=build,
               transform=lambda top, f: top.vmap(f, in_axes=(0, None, 0, None)))


# ---- get_scaled_dot_general_config -------------------------------------------------------------

def test_configs():
  for mode, scale in [("mxfp8", None), ("nvfp4", None), ("nvfp4", np.array([0.5], F32))]:
    a = arrax.nn.get_scaled_dot_general_config(mode, scale)
    j = jax.nn.get_scaled_dot_general_config(mode, scale)
    assert repr(a).replace("arrax", "") == repr(j), (repr(a), repr(j))
    assert type(a).__name__ == type(j).__name__ == "BlockScaleConfig"
    for field in ("mode", "block_size", "data_type", "scale_type", "infer_only"):
      assert getattr(a, field) == getattr(j, field)
    if mode == "nvfp4":
      assert_same(a.global_scale, j.global_scale)
  check_raises(lambda top: top.nn.get_scaled_dot_general_config("fp8"),
               build=lambda f, lib: lambda: f(lib.top))


# ---- scaled_dot_general ------------------------------------------------------------------------

def _configs(top, mode, global_scale=None):
  scale = None if global_scale is None else top.numpy.asarray(np.float32(global_scale))[None]
  return [top.nn.get_scaled_dot_general_config(mode, scale)] * 3


def _sdg(mode, dims, global_scale=None, **kw):
  def make(top):
    configs = _configs(top, mode, global_scale)
    return lambda x, y: top.nn.scaled_dot_general(x, y, dims, configs=configs, **kw)
  return make


BUILD = lambda f, lib: f(lib.top)

DOT_CASES = [
    # (mode, lhs shape, rhs shape, dimension numbers, preferred, input dtype)
    ("mxfp8", (2, 4, 64), (2, 3, 64), (((2,), (2,)), ((0,), (0,))), np.float32, F32),
    ("mxfp8", (5, 32), (32, 3), (((1,), (0,)), ((), ())), BF16, F32),
    ("mxfp8", (4, 2, 32, 3), (3, 2, 32), (((2,), (2,)), ((3, 1), (0, 1))), np.float16, F32),
    ("mxfp8", (3, 2, 16), (2, 16, 4), (((0, 2), (0, 1)), ((), ())), np.float32, F32),
    ("mxfp8", (2, 3, 32), (2, 5, 32), [[[2], [2]], [[0], [0]]], np.float32, BF16),
    ("mxfp8", (2, 3, 32), (2, 5, 32), (((2,), (2,)), ((0,), (0,))), np.float16, F16),
    ("nvfp4", (2, 4, 32), (2, 3, 32), (((2,), (2,)), ((0,), (0,))), np.float32, F32),
    ("nvfp4", (16, 6), (5, 16), (((0,), (1,)), ((), ())), BF16, F32),
    ("nvfp4", (3, 48, 2), (3, 2, 48), (((1,), (2,)), ((0,), (0,))), np.float16, F32),
]


def _tol(pet):
  return 1e-2 if np.dtype(pet) in (BF16, F16) else 1e-5


def test_scaled_dot_general_values():
  cases = []
  for i, (mode, ls, rs, dims, pet, dt) in enumerate(DOT_CASES):
    x, y = rand(ls, dt, i), rand(rs, dt, 50 + i)
    cases.append((f"{mode} {ls} {rs} {dims} {np.dtype(pet)} {dt}",
                  lambda mode=mode, dims=dims, pet=pet, x=x, y=y, i=i: check(
                      _sdg(mode, dims, preferred_element_type=pet), x, y, build=BUILD,
                      eager=i == 0, jit=True, tol=_tol(pet))))
  # nvfp4 with a global scale; values large enough to clip.
  x, y = rand((2, 3, 32), F32, 7) * 30, rand((2, 4, 32), F32, 8)
  dims = (((2,), (2,)), ((0,), (0,)))
  cases.append(("nvfp4 global scale", lambda: check(_sdg("nvfp4", dims, 0.01), x, y,
                                                     build=BUILD, eager=False, jit=True,
                                                     tol=1e-5)))
  # Without configs: plain dot_general.
  cases.append(("no configs", lambda: check(
      lambda top: lambda a, b: top.nn.scaled_dot_general(a, b, dims), x, y, build=BUILD)))
  check_all(cases)


GRAD_CASES = [
    ("mxfp8", (2, 32, 64), (2, 32, 64), (((2,), (2,)), ((0,), (0,))), None),
    ("mxfp8", (64, 32), (32, 64), (((1,), (0,)), ((), ())), None),
    ("nvfp4", (2, 3, 32), (2, 5, 32), (((2,), (2,)), ((0,), (0,))), None),
    ("nvfp4", (4, 16), (16, 3, 2), (((1,), (0,)), ((), ())), 0.001),
]


def test_scaled_dot_general_grad():
  cases = []
  for i, (mode, ls, rs, dims, gs) in enumerate(GRAD_CASES):
    x, y = rand(ls, F32, 70 + i) * 2, rand(rs, F32, 80 + i) * 2

    def loss(top, mode=mode, dims=dims, gs=gs):
      f = _sdg(mode, dims, gs)(top)
      return top.grad(lambda a, b: (f(a, b) * top.numpy.arange(1.0, 2.0, 1 / 64)[:1]).sum(),
                      argnums=(0, 1))
    cases.append((f"grad {mode} {ls} {rs} {dims} {gs}",
                  lambda x=x, y=y, loss=loss: check(loss, x, y, build=BUILD, eager=False,
                                                    jit=True, tol=1e-4)))
  check_all(cases)


def test_scaled_dot_general_grad_zeroes_clipped_nvfp4():
  # nvfp4's straight-through estimator: no gradient where |x| exceeds the representable range.
  x, y = rand((4, 16), F32, 1) * 3, rand((16, 2), F32, 2)
  f = _sdg("nvfp4", (((1,), (0,)), ((), ())), 0.001)(arrax)
  g = np.asarray(arrax.jit(arrax.grad(lambda a: f(a, y).sum()))(x))
  clipped = np.abs(x) > 0.001 * 6 * 448
  assert clipped.any() and not clipped.all()
  assert (g[clipped] == 0).all() and (g[~clipped] != 0).any()


def test_scaled_dot_general_vmap():
  dims = (((1,), (1,)), ((), ()))
  x, y = rand((3, 4, 32), F32, 1), rand((3, 5, 32), F32, 2)
  check(_sdg("mxfp8", dims), x, y, build=BUILD, transform=lambda top, f: top.vmap(f),
        eager=False, jit=True, tol=1e-5)
  check(_sdg("nvfp4", dims), x, y[0], build=BUILD, eager=False, jit=True,
        transform=lambda top, f: top.vmap(f, in_axes=(0, None)))


def test_scaled_dot_general_jaxprs():
  dims = (((2,), (2,)), ((0,), (0,)))
  x, y = rand((2, 32, 64), F32, 1), rand((2, 32, 64), F32, 2)
  check_jaxpr(_sdg("mxfp8", dims), x, y, build=BUILD)
  check_jaxpr(_sdg("nvfp4", (((1,), (0,)), ((), ())), preferred_element_type=BF16),
              x[0], y[0].T, build=BUILD)
  check_jaxpr(lambda top: top.jit(_sdg("mxfp8", dims)(top)), x, y, build=BUILD)
  check_jaxpr(lambda top: top.grad(lambda a, b: _sdg("mxfp8", dims)(top)(a, b).sum()), x, y,
              build=BUILD)
  check_jaxpr(lambda top: top.vmap(_sdg("nvfp4", (((1,), (1,)), ((), ())))(top)), x, y,
              build=BUILD)


def test_scaled_dot_general_x64(x64):
  x, y = rand((2, 3, 32), np.float64, 1), rand((2, 4, 32), np.float64, 2)
  dims = (((2,), (2,)), ((0,), (0,)))
  check(_sdg("mxfp8", dims), x, y, build=BUILD, eager=False, jit=True, tol=1e-5)
  check_raises(_sdg("mxfp8", dims, preferred_element_type=np.float64), x, y, build=BUILD)
  a, s = _quantized((1, 2, 32), E4M3, 0), _scales((1, 2, 1), E8M0, 0)
  check(lambda top: functools.partial(top.nn.scaled_matmul, preferred_element_type=np.float64),
        a, a, s, s, build=BUILD)


def test_scaled_dot_general_bad_inputs():
  x3, dims = rand((2, 4, 48), F32, 0), (((2,), (2,)), ((0,), (0,)))
  x2 = rand((4, 32), F32, 1)
  check_all([
      ("K not a multiple of the block", lambda: check_raises(
          _sdg("mxfp8", dims), x3, x3, build=BUILD)),
      ("K below the block", lambda: check_raises(
          _sdg("nvfp4", (((1,), (1,)), ((), ()))), x2[:, :8], x2[:, :8], build=BUILD)),
      ("int preferred", lambda: check_raises(
          _sdg("mxfp8", (((1,), (1,)), ((), ())), preferred_element_type=np.int32), x2, x2,
          build=BUILD)),
      ("float64 preferred", lambda: check_raises(
          _sdg("mxfp8", (((1,), (1,)), ((), ())), preferred_element_type=np.float64), x2, x2,
          build=BUILD)),
      ("None preferred", lambda: check_raises(
          _sdg("mxfp8", (((1,), (1,)), ((), ())), preferred_element_type=None), x2, x2,
          build=BUILD)),
      ("unknown config mode", lambda: check_raises(
          lambda top: lambda a, b: top.nn.scaled_dot_general(
              a, b, (((1,), (1,)), ((), ())),
              configs=[_configs(top, "mxfp8")[0].__class__("fp8", 32, E4M3, E8M0, None,
                                                           False)] * 3),
          x2, x2, build=BUILD)),
  ])


def test_scaled_dot_general_implementation_is_deprecated():
  x = rand((4, 32), F32, 0)
  dims = (((1,), (1,)), ((), ()))
  for top in (jax, arrax):
    with pytest.warns(DeprecationWarning, match="Backend selector"):
      top.nn.scaled_dot_general(x, x, dims, implementation="cudnn")
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    assert_same(arrax.nn.scaled_dot_general(x, x, dims), jax.nn.scaled_dot_general(x, x, dims))


def test_view_same_dtype_and_0d_jaxprs():
  # quantize's `.view(scale_type)` is a no-op when the scales already have that type.
  for shape in [(3,), ()]:
    for dt in [np.float32, np.int32, np.uint32]:
      check_jaxpr(lambda top, dt=dt: lambda x: x.view(dt), np.ones(shape, F32), build=BUILD)
