"""Primitives about how a computation is staged and compiled rather than what it computes:
`optimization_barrier` (XLA may not move work across it, or merge work on both sides),
`dce_sink` (marks values as used, so the work making them is kept), and `stage` (lifts a host
value into the current trace).

All three are the identity (`dce_sink` returns nothing) and transform as JAX's do: the barrier
is applied to primals and (instantiated) tangents alike, and to cotangents when transposed;
`dce_sink` is linear; a batched `dce_sink` is dropped (JAX's batching rule does not bind it
again, so vmapped jaxprs print without it).
"""
from __future__ import annotations

from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, core
from arrax._src.array import Array, device_put_value
from arrax._src.core import Literal
from arrax._src.lax.utils import asarray_operand
from arrax._src.tracing import JaxprTrace
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["dce_sink", "optimization_barrier", "stage"]


# ---- optimization_barrier ---------------------------------------------------------------------
optimization_barrier_p = core.Primitive("optimization_barrier")
optimization_barrier_p.multiple_results = True
optimization_barrier_p.def_abstract_eval(lambda *avals: list(avals))


@optimization_barrier_p.def_lowering
def _optimization_barrier_lower(ctx, *args):
  if not args:
    return []
  return list(hlo.OptimizationBarrierOp(list(args)).results)


@optimization_barrier_p.def_batch
def _optimization_barrier_batch(args, dims):
  return optimization_barrier_p.bind(*args), list(dims)


@optimization_barrier_p.def_jvp
def _optimization_barrier_jvp(primals, tangents):
  tangents = [ad.instantiate(t) for t in tangents]
  return optimization_barrier_p.bind(*primals), optimization_barrier_p.bind(*tangents)


@optimization_barrier_p.def_transpose
def _optimization_barrier_transpose(cts, *args):
  return optimization_barrier_p.bind(*[ad.instantiate(ct) for ct in cts])


def optimization_barrier(operand, /):
  """The identity on a pytree of arrays, through which XLA may not move or merge work: every
  output is computed before anything that uses an output of the barrier."""
  leaves, tree = tree_flatten(operand)
  out = optimization_barrier_p.bind(*[asarray_operand(x) for x in leaves])
  return tree_unflatten(tree, out)


# ---- dce_sink ---------------------------------------------------------------------------------
dce_sink_p = core.Primitive("dce_sink")
dce_sink_p.multiple_results = True
dce_sink_p.def_abstract_eval(lambda x, *, prevent_mlir_dce: [])


@dce_sink_p.def_lowering
def _dce_sink_lower(ctx, x, *, prevent_mlir_dce):
  if prevent_mlir_dce:
    raise NotImplementedError("dce_sink(prevent_mlir_dce=True) needs the dce_sink FFI "
                              "target, which arrax does not provide.")
  return []


# Under vmap the sink is dropped (not bound again), as JAX's batching rule does.
dce_sink_p.def_batch(lambda args, dims, **params: ([], []))
ad.deflinear(dce_sink_p, lambda cts, x, **params: [None])


def dce_sink(val, *, prevent_mlir_dce: bool = False):
  """Mark every array of the pytree `val` as used (dead-code elimination keeps the work that
  makes it). Returns None."""
  tree_map(lambda x: dce_sink_p.bind(asarray_operand(x), prevent_mlir_dce=prevent_mlir_dce),
           val)


# ---- stage ------------------------------------------------------------------------------------
stage_p = core.Primitive("stage")
stage_p.def_abstract_eval(lambda x: x)
stage_p.def_lowering(lambda ctx, x: [x])
stage_p.def_batch(lambda args, dims: (args[0], dims[0]))
ad.deflinear(stage_p, lambda ct, x: [ct])


def _innermost_staging():
  trace = core.current_trace()
  while trace is not None and not isinstance(trace, JaxprTrace):
    trace = getattr(trace, "parent", None)
  return trace


def stage(x, /):
  """Lift `x` (a host scalar or array, or a traced value) into the current trace: eagerly an
  arrax Array; while staging a jaxpr, a literal (rank 0) or a constant of the jaxpr."""
  if isinstance(x, core.Tracer):
    return x
  x = asarray_operand(x)
  if _innermost_staging() is None or isinstance(x, Array):
    if isinstance(x, Literal):
      return device_put_value(x.val, dtype=x.aval.dtype, weak_type=x.aval.weak_type)
    return x if isinstance(x, Array) else device_put_value(x)
  if isinstance(x, Literal):
    return x
  return device_put_value(x)
