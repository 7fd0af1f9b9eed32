"""Row softmax as a Triton-style Pallas kernel (jax.experimental.pallas.ops.gpu.softmax): one
kernel instance per row, the row loaded padded to a power of two; off-GPU it runs with
`interpret=True`."""
from __future__ import annotations

import functools

from arrax._src import batching, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.indexing import ds
from arrax._src.numpy import creation, reductions, ufuncs
from arrax._src.pallas import helpers, pallas_call, triton


def _row_softmax_kernel(in_ref, out_ref, *, block_row: int):
  """Softmax of the one row `in_ref` holds (`block_row` >= its length)."""
  n = in_ref.shape[-1]
  valid = creation.arange(block_row) < n
  row = triton.load(in_ref.at[ds(0, block_row)], mask=valid, other=-float("inf"))
  e = ufuncs.exp((row - reductions.max(row, axis=0)).astype("float32"))
  probs = e / reductions.sum(e, axis=0)
  triton.store(out_ref.at[ds(0, block_row)], probs.astype(out_ref.dtype), mask=valid)


@functools.partial(jit.jit, static_argnames=["axis", "num_warps", "interpret", "debug"])
def softmax(x, *, axis: int = -1, num_warps: int = 4, interpret: bool = False,
            debug: bool = False):
  """Softmax of `x` along its last axis (the only one supported), one kernel per row."""
  axis = axis + x.ndim if axis < 0 else axis
  if axis != x.ndim - 1:
    raise NotImplementedError("reductions along non-trailing dimension unsupported")
  n = x.shape[-1]
  call = pallas_call.pallas_call(
      functools.partial(_row_softmax_kernel, block_row=helpers.next_power_of_2(n)),
      out_shape=ShapeDtypeStruct((n,), x.dtype), grid=(),
      compiler_params=triton.CompilerParams(num_warps=num_warps, num_stages=1),
      debug=debug, interpret=interpret)
  for _ in range(x.ndim - 1):
    call = batching.vmap(call)
  return call(x)
