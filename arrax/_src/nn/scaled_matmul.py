"""Block-scaled matrix products (jax.nn.scaled_matmul, scaled_dot_general and its configs).

`scaled_matmul(a, b, a_scales, b_scales)` contracts the last axis of two (B, M, K) / (B, N, K)
operands whose contracting axis is quantized in blocks, each block carrying one scale:
out[b, m, n] = sum_k a[b, m, k] a_scales[b, m, k // block] b[b, n, k] b_scales[b, n, k // block].
It binds the `scaled_matmul_wrapper` primitive inside a jit named `_scaled_matmul`, as JAX does.
JAX lowers that primitive only for GPUs (a cuDNN custom call); arrax lowers it everywhere to
the dense computation: data and scales widened to float32, each scale repeated over its block,
a float32 `dot_general` and a conversion to `preferred_element_type`.

`scaled_dot_general` quantizes high-precision operands per `BlockScaleConfig` (mxfp8: float8_e4m3fn
data with float8_e8m0fnu power-of-two scales over blocks of 32; nvfp4: float4_e2m1fn data with
float8_e4m3fn scales over blocks of 16 and a float32 global scale), multiplies them with
`scaled_matmul` and differentiates through a custom VJP (the cotangent is quantized with the
third config), following JAX's XLA path step by step so that the jaxprs agree.
"""
from __future__ import annotations

import functools
import operator
import warnings
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

from arrax._src import core, dtypes
from arrax._src.core import ShapedArray
from arrax._src.custom_derivatives import custom_vjp
from arrax._src.jit import jit
from arrax._src.lax import broadcasting, staging
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import common
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs

_F32 = np.dtype("float32")

__all__ = ["BlockScaleConfig", "get_scaled_dot_general_config", "scaled_dot_general",
           "scaled_matmul"]


@dataclass(slots=True)
class BlockScaleConfig:
  """How one operand of `scaled_dot_general` is quantized: the mode ('mxfp8' or 'nvfp4'), the
  number of contracting elements sharing a scale, the data and scale dtypes, the float32 global
  scale (nvfp4 only) and whether only inference is intended."""
  mode: str
  block_size: int
  data_type: Any
  scale_type: Any
  global_scale: Any
  infer_only: bool


# ---- the scaled_matmul_wrapper primitive ---------------------------------------------------------

scaled_matmul_wrapper_p = core.Primitive("scaled_matmul_wrapper")
scaled_matmul_wrapper_p.multiple_results = True


@scaled_matmul_wrapper_p.def_abstract_eval
def _scaled_matmul_abstract_eval(a, b, a_scales, b_scales, *, preferred_element_type):
  batch, m, _ = a.shape
  _, n, _ = b.shape
  return [ShapedArray((batch, m, n), preferred_element_type)]


def _spread_scales(scales, k):
  """(B, R, K // block) scales -> (B, R, K), each entry repeated over its block."""
  batch, rows, nblocks = core.get_aval(scales).shape
  if nblocks == 0 or k % nblocks:
    raise ValueError(f"scaled_matmul: the contracting dimension ({k}) must be a multiple of "
                     f"the scales' last dimension ({nblocks})")
  block = k // nblocks
  scales = broadcasting.broadcast_in_dim(scales, (batch, rows, nblocks, block), (0, 1, 2))
  return broadcasting.reshape(scales, (batch, rows, k))


def _scaled_matmul_dense(a, b, a_scales, b_scales, *, preferred_element_type):
  f32 = dtypes.float32
  k = core.get_aval(a).shape[2]
  a = lax.mul(lax.convert_element_type(a, f32),
              _spread_scales(lax.convert_element_type(a_scales, f32), k))
  b = lax.mul(lax.convert_element_type(b, f32),
              _spread_scales(lax.convert_element_type(b_scales, f32), k))
  out = lax_dot.dot_general(a, b, (((2,), (2,)), ((0,), (0,))), preferred_element_type=f32)
  return [lax.convert_element_type(out, preferred_element_type)]


scaled_matmul_wrapper_p.def_lowering(common.lower_fun(_scaled_matmul_dense))


@scaled_matmul_wrapper_p.def_batch
def _scaled_matmul_batch(args, dims, *, preferred_element_type):
  # As JAX's rule: every operand batched along the same axis, all leading axes merged into B.
  assert len(dims) == 4
  assert dims[0] == dims[1] == dims[2] == dims[3]
  a, b, a_scales, b_scales = args
  *batch, m, k = core.get_aval(a).shape
  kb = core.get_aval(a_scales).shape[-1]
  n = core.get_aval(b).shape[-2]
  size = functools.reduce(operator.mul, batch)
  a = lax_numpy.reshape(a, (size, m, k))
  a_scales = lax_numpy.reshape(a_scales, (size, m, kb))
  b = lax_numpy.reshape(b, (size, n, k))
  b_scales = lax_numpy.reshape(b_scales, (size, n, kb))
  out = scaled_matmul_wrapper_p.bind(a, b, a_scales, b_scales,
                                     preferred_element_type=preferred_element_type)[0]
  return [lax_numpy.reshape(out, (*batch, m, n))], [dims[0]]


@functools.partial(jit, static_argnames=("preferred_element_type",))
def _scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=_F32):
  return scaled_matmul_wrapper_p.bind(lhs, rhs, lhs_scales, rhs_scales,
                                      preferred_element_type=preferred_element_type)[0]


def _scaled_matmul_wrapper(lhs, rhs, lhs_scales, rhs_scales,
                           preferred_element_type=_F32):
  _, _, lhs_k = lhs.shape
  _, _, rhs_k = rhs.shape
  assert lhs_k == rhs_k
  preferred_element_type = dtypes.check_user_dtype(preferred_element_type,
                                                   "scaled_matmul_wrapper")
  return _scaled_matmul(lhs, rhs, lhs_scales, rhs_scales,
                        preferred_element_type=preferred_element_type)


def scaled_matmul(lhs, rhs, lhs_scales, rhs_scales, preferred_element_type=np.float32):
  """Block-scaled batched matmul: `lhs` (B, M, K) and `rhs` (B, N, K), each multiplied by its
  scales (B, M, K // block) / (B, N, K // block) repeated over blocks of the last axis, are
  contracted over K into a (B, M, N) array of `preferred_element_type` (float32 by default).
  The block size is K divided by the scales' last dimension."""
  a, b, a_scales, b_scales = lhs, rhs, lhs_scales, rhs_scales
  if not all(x.ndim == 3 for x in (a, b, a_scales, b_scales)):
    raise ValueError("scaled_matmul requires all inputs to be 3-dimensional arrays")
  batch_a, m, k_a = a.shape
  batch_b, n, k_b = b.shape
  if k_a != k_b or batch_a != batch_b:
    raise ValueError("scaled_matmul requires inputs a and b to have matching batch (B) and "
                     f"contract (K) dimensions, but got shapes {a.shape} and {b.shape}")
  batch_as, m_s, k_as = a_scales.shape
  batch_bs, n_s, k_bs = b_scales.shape
  if k_as != k_bs or batch_as != batch_bs:
    raise ValueError("scaled_matmul requires scales to have matching batch (B) and contract (K) "
                     f"dimensions, but got shapes {a_scales.shape} and {b_scales.shape}")
  if m_s != m or n_s != n:
    raise ValueError("scaled_matmul requires scales to match non-contract dimensions of inputs, "
                     f"but got shapes a: {a.shape}, b: {b.shape}, a_scales: {a_scales.shape}, "
                     f"b_scales: {b_scales.shape}")
  preferred_element_type = dtypes.check_user_dtype(preferred_element_type, "scaled_matmul")
  return _scaled_matmul(a, b, a_scales, b_scales, preferred_element_type=preferred_element_type)


# ---- quantization ------------------------------------------------------------------------------

def _normalize_3d(x, dims):
  """`x` transposed to (batch axes, other axes, contracting axes) and merged into (B, M, K)."""
  contracting, batch = dims
  order = list(range(x.ndim))
  contract_order = [d for d in order if d in contracting]
  batch_order = [d for d in order if d in batch]
  kept_order = [d for d in order if d not in contracting and d not in batch]
  rows = np.prod([x.shape[d] for d in kept_order])
  cols = np.prod([x.shape[d] for d in contract_order])
  batches = np.prod([x.shape[d] for d in batch_order], dtype=int)
  t = lax_numpy.transpose(x, batch_order + kept_order + contract_order)
  return lax_numpy.reshape(t, (batches, rows, cols))


def _dot_output_shape(lhs_shape, rhs_shape, lhs_dims, rhs_dims):
  (lhs_contract, lhs_batch), (rhs_contract, rhs_batch) = lhs_dims, rhs_dims
  shape = [d for i, d in enumerate(lhs_shape) if i in lhs_batch]
  shape += [d for i, d in enumerate(lhs_shape) if i not in lhs_contract and i not in lhs_batch]
  shape += [d for i, d in enumerate(rhs_shape) if i not in rhs_contract and i not in rhs_batch]
  return tuple(shape)


def _e8m0_round_up(x):
  """The biased exponents (uint8) of the powers of two at or above float32 `x` (x >= 0)."""
  bits = x.astype(np.float32).view(np.uint32)
  exponent = bits >> 23
  mantissa = bits & 0x7FFFFF
  round_up = ufuncs.logical_and(
      ufuncs.logical_and(mantissa > 0, exponent != 0xFE),
      ~ufuncs.logical_and(exponent == 0, mantissa <= 0x400000))
  exponent = lax_numpy.where(round_up, exponent + 1, exponent)
  return exponent.astype(np.uint8)


def _e8m0_to(x, dtype):
  """Biased exponents (uint8) as powers of two of `dtype` (zero mapped to a tiny power)."""
  bits = x.astype(np.uint32) << 23
  value = bits.view(np.float32)
  tiny = 2**-15 if dtype == np.float16 else 2**-127
  value = lax_numpy.where(value == 0, creation.array(tiny, np.float32), value)
  return value.astype(dtype)


def _quantize(x, config):
  """(B, M, K) `x` -> (data of config.data_type (B, M, K), scales (B, M, K // block_size))."""
  shape = x.shape
  block = config.block_size
  assert shape[-1] >= block and shape[-1] % block == 0
  x = x.reshape(shape[:-1] + (shape[-1] // block, block))
  data_max = dtypes.finfo(config.data_type).max.astype(x.dtype)

  def block_scales(v):
    return reductions.max(ufuncs.abs(v), axis=-1, keepdims=True) / data_max

  if config.mode == "mxfp8":
    assert config.global_scale is None
    assert config.scale_type == ml_dtypes.float8_e8m0fnu
    scales = _e8m0_round_up(block_scales(x))
    scaled = x / _e8m0_to(scales, x.dtype)
  elif config.mode == "nvfp4":
    assert config.scale_type == ml_dtypes.float8_e4m3fn
    assert config.global_scale.dtype == np.float32
    scale_max = dtypes.finfo(config.scale_type).max.astype(x.dtype)
    x /= config.global_scale
    scales = lax_numpy.clip(block_scales(x), 0, scale_max)
    scales = staging.optimization_barrier(scales.astype(config.scale_type))
    scaled = x / scales.astype(np.float32)
  else:
    raise ValueError(f"Unrecognized mode: {config.mode}.")
  data = lax_numpy.clip(scaled, -data_max, data_max).astype(config.data_type)
  data = data.reshape(shape)
  scales = lax_numpy.reshape(scales, scales.shape[:-1]).view(config.scale_type)
  return data, scales


# ---- scaled_dot_general with its custom VJP ------------------------------------------------------

def _scaled_dot_impl(lhs, rhs, dimension_numbers, preferred_element_type, configs):
  if preferred_element_type is None:
    preferred_element_type = dtypes.result_type(lhs, rhs)
  else:
    preferred_element_type = dtypes.check_user_dtype(preferred_element_type, "scaled_dot_impl")
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  lhs_dims, rhs_dims = (lhs_contract, lhs_batch), (rhs_contract, rhs_batch)
  lhs_3d, rhs_3d = _normalize_3d(lhs, lhs_dims), _normalize_3d(rhs, rhs_dims)
  lhs_q, lhs_scales = _quantize(lhs_3d, configs[0])
  rhs_q, rhs_scales = _quantize(rhs_3d, configs[1])
  nvfp4 = configs[0].mode == "nvfp4"
  out = _scaled_matmul_wrapper(lhs_q, rhs_q, lhs_scales, rhs_scales,
                               preferred_element_type=np.float32 if nvfp4 else
                               preferred_element_type)
  if nvfp4:
    out *= configs[0].global_scale * configs[1].global_scale
    out = out.astype(preferred_element_type)
  return lax_numpy.reshape(out, _dot_output_shape(lhs.shape, rhs.shape, lhs_dims, rhs_dims))


def _ranges_like(*xs):
  start = 0
  for x in xs:
    yield range(start, start + len(x))
    start += len(x)


def _remaining(original, *removed):
  gone = {i for r in removed for i in r}
  return [i for i in original if i not in gone]


def _transpose_lhs(g, x, y, *, dimension_numbers, preferred_element_type, configs,
                   swap_ans=False):
  """The cotangent of `x` in scaled_dot(x, y): g contracted with y (quantized unless nvfp4)."""
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_kept = _remaining(range(core.get_aval(x).ndim), x_contract, x_batch)
  y_kept = _remaining(range(np.ndim(y)), y_contract, y_batch)
  if swap_ans:
    ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
  else:
    ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
  x_contract_by_y = list(np.take(x_contract, np.argsort(y_contract)))
  out_axes = np.argsort(list(x_batch) + x_kept + x_contract_by_y)
  y_dims, g_dims = (y_kept, y_batch), (ans_y, ans_batch)
  y_3d, g_3d = _normalize_3d(y, y_dims), _normalize_3d(g, g_dims)
  if configs[0].mode != "nvfp4":
    g_q, g_scales = _quantize(g_3d, configs[0])
    y_q, y_scales = _quantize(y_3d, configs[1])
    out = _scaled_matmul_wrapper(g_q, y_q, g_scales, y_scales, preferred_element_type)
  else:
    out = lax_numpy.matmul(g_3d, lax_numpy.permute_dims(y_3d, (0, 2, 1)),
                           preferred_element_type=preferred_element_type)
  out = lax_numpy.reshape(out, _dot_output_shape(g.shape, y.shape, g_dims, y_dims))
  return broadcasting.transpose(out, tuple(out_axes))


def _transpose_rhs(g, x, y, *, dimension_numbers, preferred_element_type, configs):
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  return _transpose_lhs(g, y, x, dimension_numbers=((y_contract, x_contract), (y_batch, x_batch)),
                        preferred_element_type=preferred_element_type, configs=configs,
                        swap_ans=True)


@functools.partial(custom_vjp, nondiff_argnums=(2, 3, 4))
def scaled_dot_general_fn(lhs, rhs, dimension_numbers, preferred_element_type, configs):
  return _scaled_dot_impl(lhs, rhs, dimension_numbers, preferred_element_type, configs)


def scaled_dot_fwd(lhs, rhs, dimension_numbers, preferred_element_type, configs):
  out = _scaled_dot_impl(lhs, rhs, dimension_numbers, preferred_element_type, configs)
  return out, (lhs, rhs)


def scaled_dot_bwd(dimension_numbers, preferred_element_type, configs, res, g):
  lhs, rhs = res
  kw = {"dimension_numbers": dimension_numbers, "preferred_element_type": preferred_element_type}
  grad_lhs = _transpose_lhs(g, lhs, rhs, configs=[configs[2], configs[1]], **kw)
  grad_rhs = _transpose_rhs(g, lhs, rhs, configs=[configs[2], configs[0]], **kw)
  if configs[2].mode == "nvfp4":
    # Straight-through estimator: no gradient where the forward quantization clipped.
    assert rhs.dtype == lhs.dtype
    data_max = dtypes.finfo(configs[0].data_type).max.astype(lhs.dtype)
    scale_max = dtypes.finfo(configs[0].scale_type).max.astype(lhs.dtype)
    grad_lhs = lax_numpy.where(
        ufuncs.abs(lhs) <= configs[0].global_scale * data_max * scale_max, grad_lhs, 0)
    grad_rhs = lax_numpy.where(
        ufuncs.abs(rhs) <= configs[1].global_scale * data_max * scale_max, grad_rhs, 0)
  return grad_lhs, grad_rhs


scaled_dot_general_fn.defvjp(scaled_dot_fwd, scaled_dot_bwd)


def _as_tuples(dimension_numbers):
  (lhs_contract, rhs_contract), (lhs_batch, rhs_batch) = dimension_numbers
  return ((tuple(lhs_contract), tuple(rhs_contract)), (tuple(lhs_batch), tuple(rhs_batch)))


def _with_batch_dim(lhs, rhs, dimension_numbers):
  """Operands given a trailing unit batch axis where the dimension numbers have none."""
  contracting, (lhs_batch, rhs_batch) = dimension_numbers
  if lhs_batch == ():
    lhs_ndim = core.get_aval(lhs).ndim
    lhs, lhs_batch = lax_numpy.expand_dims(lhs, axis=lhs_ndim), (lhs_ndim,)
  if rhs_batch == ():
    rhs_ndim = core.get_aval(rhs).ndim
    rhs, rhs_batch = lax_numpy.expand_dims(rhs, axis=rhs_ndim), (rhs_ndim,)
  return lhs, rhs, (contracting, (lhs_batch, rhs_batch))


def _scaled_dot_general_wrapper(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                                configs=None):
  if preferred_element_type not in (np.dtype("float32"), np.dtype("bfloat16"),
                                    np.dtype("float16")):
    raise TypeError("Only support preferred_element_type in (f32, bf16, f16), but got "
                    f"{preferred_element_type}")
  if configs is None:
    configs = [get_scaled_dot_general_config("mxfp8")] * 3
  dimension_numbers = _as_tuples(dimension_numbers)
  lhs_b, rhs_b, dims_b = _with_batch_dim(lhs, rhs, dimension_numbers)
  out = scaled_dot_general_fn(lhs_b, rhs_b, dims_b, preferred_element_type, configs)
  if dims_b != dimension_numbers:
    return lax_numpy.squeeze(out, axis=0)
  return out


def get_scaled_dot_general_config(mode, global_scale=None):
  """The `BlockScaleConfig` of a `scaled_dot_general` operand for `mode`: 'mxfp8'
  (float8_e4m3fn data, float8_e8m0fnu scales, blocks of 32) or 'nvfp4' (float4_e2m1fn data,
  float8_e4m3fn scales, blocks of 16, `global_scale` a float32 array, ones((1,)) by default)."""
  if mode == "nvfp4":
    return BlockScaleConfig(
        mode="nvfp4", block_size=16, data_type=ml_dtypes.float4_e2m1fn,
        scale_type=ml_dtypes.float8_e4m3fn,
        global_scale=creation.ones((1,), dtype=np.float32) if global_scale is None
        else global_scale,
        infer_only=False)
  if mode == "mxfp8":
    return BlockScaleConfig(mode="mxfp8", block_size=32, data_type=ml_dtypes.float8_e4m3fn,
                            scale_type=ml_dtypes.float8_e8m0fnu, global_scale=None,
                            infer_only=False)
  raise ValueError(f"Unsupported mode: {mode}")


def scaled_dot_general(lhs, rhs, dimension_numbers, preferred_element_type=np.float32,
                       configs=None, implementation=None):
  """`lax.dot_general` of `lhs` and `rhs` quantized block-wise along their contracting axes per
  `configs` (three `BlockScaleConfig`: lhs, rhs and the cotangent of the backward pass, e.g.
  from `get_scaled_dot_general_config`), with a custom VJP. The result (batch axes, then the
  free axes of lhs, then those of rhs) has `preferred_element_type` (float32, bfloat16 or
  float16). Without configs this is plain `lax.dot_general`. `implementation` is deprecated
  and ignored (a DeprecationWarning)."""
  if implementation is not None:
    warnings.warn("Backend selector, now ignored. The system chooses the backend automatically.",
                  DeprecationWarning)
  if configs is None:
    return lax_dot.dot_general(lhs, rhs, dimension_numbers,
                               preferred_element_type=preferred_element_type)
  return _scaled_dot_general_wrapper(lhs, rhs, dimension_numbers,
                                     preferred_element_type=preferred_element_type,
                                     configs=configs)
