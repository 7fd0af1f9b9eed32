"""`pbroadcast`: every example along a named axis receives the value of example `source`.

Like the collectives of parallel.py it is defined under vmap (by its axis-aware batching rule:
the batched value's `source` row, repeated) and passed on to an enclosing vmap when the axis
is another one. Inside pmap it lowers to a cross-replica sum of the value kept only on replica
`source` (zeros elsewhere). It is linear: its transpose sums the cotangents over the axis into
example `source`.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, core, mlir
from arrax._src.lax import elementwise as lax
from arrax._src.lax import creation, parallel
from arrax._src.lax.utils import asarray_operand
from arrax._src.numpy import indexing
from arrax._src.tree_util import tree_map

__all__ = ["pbroadcast"]

pbroadcast_p = core.Primitive("pbroadcast")
pbroadcast_p.def_abstract_eval(lambda x, *, axis_name, source: x)


@pbroadcast_p.def_lowering
def _pbroadcast_lower(ctx, x, *, axis_name, source):
  groups = parallel._replica_groups(ctx, "pbroadcast", axis_name, None)
  aval = ctx.avals_out[0]
  here = mlir.compare(parallel._axis_index_value(ctx, parallel._names(axis_name)[0]),
                      mlir.ir_constant(np.int32(source)), "EQ",
                      np.int32)
  pred = hlo.broadcast_in_dim(mlir.aval_to_ir_type(aval.update(dtype=np.dtype(np.bool_))),
                              here, mlir.dense_i64([]))
  kept = hlo.select(pred, x, mlir.full_like_aval(0, aval))
  return [parallel._all_reduce(ctx, "psum", kept, aval, groups)]


@pbroadcast_p.def_batch_axis
def _pbroadcast_batch(axis_data, args, dims, *, axis_name, source):
  (v,), (d,) = args, dims
  names = parallel._names(axis_name)
  if axis_data.name not in names:
    return pbroadcast_p.bind(v, axis_name=axis_name, source=source), d
  if len(names) > 1:
    raise NotImplementedError("pbroadcast batcher only supports a single axis")
  if not 0 <= source < axis_data.size:
    raise ValueError(f"pbroadcast source {source} is out of range for the axis {names[0]!r} of "
                     f"size {axis_data.size}.")
  if d is None:
    return v, None
  return indexing.take(v, np.full(axis_data.size, source, np.int32), axis=d), d


def _pbroadcast_transpose(ct, x, *, axis_name, source):
  total = parallel.psum(ct, axis_name)
  at_source = lax.eq(parallel.axis_index(axis_name), np.int32(source))
  return [lax.select(at_source, total, creation.full_like(ct, 0))]


ad.deflinear(pbroadcast_p, _pbroadcast_transpose)


def pbroadcast(x, axis_name, source):
  """Each example along `axis_name` gets the value (a pytree) of example `source`."""
  return tree_map(lambda v: pbroadcast_p.bind(asarray_operand(v), axis_name=axis_name,
                                              source=source), x)
