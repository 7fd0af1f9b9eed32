"""A blocked matrix multiplication as a TPU Pallas kernel
(jax.experimental.pallas.ops.tpu.matmul): the grid runs over output blocks and, innermost,
over blocks of the contracted dimension, accumulating in a VMEM scratch buffer (float32, or
int32 for 8- and 4-bit integer inputs). Off-TPU it runs in TPU interpret mode
(`pltpu.force_tpu_interpret_mode()`)."""
from __future__ import annotations

import functools

import numpy as np

from arrax._src import dtypes, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.lax import dot as lax_dot, elementwise as lax
from arrax._src.numpy import creation
from arrax._src.pallas import core as pallas_core, helpers, pallas_call, primitives, tpu


def matmul_kernel(x_tile_ref, y_tile_ref, o_tile_ref, acc_ref):
  """One step: add the product of an x block and a y block to the accumulator (zeroed at the
  first contraction step) and store the accumulator into the output block."""
  @helpers.when(primitives.program_id(2) == 0)
  def _():
    acc_ref[...] = creation.zeros(acc_ref.shape, acc_ref.dtype)

  x, y = x_tile_ref[...], y_tile_ref[...]
  acc_ref[...] = acc_ref[...] + lax_dot.dot_general(
      x, y, (((1,), (0,)), ((), ())), preferred_element_type=acc_ref.dtype)
  o_tile_ref[...] = lax.convert_element_type(acc_ref[...], o_tile_ref.dtype)


_INT_INPUTS = ("int8", "int4", "uint8", "uint4")


@functools.partial(jit.jit, static_argnames=["block_shape", "block_k", "debug", "out_dtype"])
def matmul(x, y, *, block_shape, block_k: int = 256, out_dtype=None, debug: bool = False):
  """`x @ y` computed in (block_shape[0], block_k) x (block_k, block_shape[1]) blocks (the
  sizes must divide the operands); the result has `out_dtype` (default: the inputs' dtype,
  which must then agree)."""
  if out_dtype is None:
    if x.dtype != y.dtype:
      raise TypeError("Cannot deduce output dtype for different input dtypes: "
                      f"{x.dtype}, {y.dtype}")
    out_dtype = x.dtype
  acc = np.dtype(np.int32) if np.dtype(x.dtype).name in _INT_INPUTS else np.dtype(np.float32)
  bm, bn = block_shape
  m, k = x.shape
  n = y.shape[1]
  spec = pallas_core.BlockSpec
  return pallas_call.pallas_call(
      matmul_kernel,
      out_shape=ShapeDtypeStruct((m, n), dtypes.canonicalize_dtype(out_dtype)),
      grid_spec=tpu.PrefetchScalarGridSpec(
          num_scalar_prefetch=0,
          grid=(m // bm, n // bn, k // block_k),
          in_specs=[spec((bm, block_k), lambda i, j, kk: (i, kk)),
                    spec((block_k, bn), lambda i, j, kk: (kk, j))],
          out_specs=spec((bm, bn), lambda i, j, kk: (i, j)),
          scratch_shapes=[tpu.MemorySpace.VMEM((bm, bn), acc)]),
      compiler_params=tpu.CompilerParams(
          dimension_semantics=("parallel", "parallel", "arbitrary")),
      debug=debug)(x, y)
