"""`jax.interpreters.batching` compatibility over arrax's batching module.

JAX's tables map onto arrax's slots: `primitive_batchers[p] = rule(args, dims, **params)` is the
`batch` slot (called only when something is batched); `fancy_primitive_batchers[p] =
rule(axis_data, args, dims, **params)` is `batch_axis`; `axis_primitive_batchers[p] =
rule(axis_size, axis_name, trace_type, args, dims, **params)` (an older form) too."""
import numpy as np

from arrax._src import batching as _batching
from arrax._src.batching import (AxisData, BatchTrace, BatchTracer, bdim_at_front,  # noqa: F401
                                 broadcast, defbroadcasting, defvectorized, matchaxis, moveaxis,
                                 not_mapped)
from arrax._src.interpreters.registry import RuleTable


def _axis_rule(prim, rule):
  def batch_axis(axis_data, args, dims, **params):
    return rule(axis_data.size, axis_data.name, None, args, dims, **params)
  return batch_axis


primitive_batchers = RuleTable("batch")
fancy_primitive_batchers = RuleTable("batch_axis")
axis_primitive_batchers = RuleTable("batch_axis", _axis_rule)
batch_jaxpr = _batching.batch_jaxpr
register_vmappable = _batching.register_vmappable
unregister_vmappable = _batching.unregister_vmappable
is_vmappable = _batching.is_vmappable


def defreducer(prim):
  """Batch `prim`, a reduction over the axes in its `axes` parameter, by reducing the same
  axes of the batched operand (shifted past the batch axis)."""
  def rule(args, dims, *, axes, **params):
    (x,), (d,) = args, dims
    axes = tuple(np.int64(a + (a >= d)) for a in axes)   # (JAX's params hold NumPy ints)
    out_dim = int(d - sum(a < d for a in axes))
    if "input_shape" in params:
      params = dict(params, input_shape=tuple(x.shape))
    return prim.bind(x, axes=axes, **params), out_dim
  prim.def_batch(rule)
