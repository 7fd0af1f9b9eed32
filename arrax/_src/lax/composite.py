"""`composite`: a function staged as one named operation with a decomposition.

`composite(decomposition, name, version)(*args, **attributes)` traces `decomposition` and binds
the `composite` primitive holding its jaxpr (values it closes over become leading operands),
lowered to `stablehlo.composite` whose decomposition is a private function: a compiler that
knows `name` may replace it, XLA otherwise inlines the decomposition. Keyword arguments are
static attributes (None-valued ones are left out of the op's attributes).

As in JAX, composites have no derivative, transpose or batching rules (use custom_jvp to
differentiate one).
"""
from __future__ import annotations

import functools

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import batching, core, mlir, tracing
from arrax._src.errors import UnexpectedTracerError
from arrax._src.tree_util import tree_flatten, tree_unflatten

__all__ = ["composite"]


class HashableArray:
  """A NumPy array attribute, hashable by value (composite params must be hashable)."""
  __slots__ = ("val",)

  def __init__(self, val):
    self.val = np.asarray(val)

  def __repr__(self):
    return f"HashableArray({self.val!r})"

  def __hash__(self):
    return hash((self.val.shape, self.val.dtype, self.val.tobytes()))

  def __eq__(self, other):
    return (isinstance(other, HashableArray) and self.val.shape == other.val.shape
            and self.val.dtype == other.val.dtype and np.array_equal(self.val, other.val))


composite_p = core.Primitive("composite")
composite_p.multiple_results = True
composite_p.def_abstract_eval(lambda *avals, jaxpr, **_: list(jaxpr.out_avals))


def _ir_attribute(v):
  """An MLIR attribute for a composite attribute value."""
  if isinstance(v, HashableArray):
    v = v.val
  if isinstance(v, (bool, np.bool_)):
    return ir.BoolAttr.get(bool(v))
  if isinstance(v, (int, np.integer)):
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), int(v))
  if isinstance(v, (float, np.floating)):
    return ir.FloatAttr.get(ir.F32Type.get() if isinstance(v, np.float32) else
                            ir.F64Type.get(), float(v))
  if isinstance(v, str):
    return ir.StringAttr.get(v)
  if isinstance(v, np.ndarray):
    return ir.DenseElementsAttr.get(np.ascontiguousarray(v),
                                    type=mlir.dtype_to_ir_type(v.dtype))
  if isinstance(v, (list, tuple)):
    return ir.ArrayAttr.get([_ir_attribute(x) for x in v])
  raise TypeError(f"composite: cannot make an attribute of {v!r} ({type(v).__name__}).")


@composite_p.def_lowering
def _composite_lower(ctx, *args, name, attributes, version, jaxpr):
  mctx = ctx.module_context
  fn = mlir.lower_jaxpr_to_fun(mctx, mctx.fresh_func_name(name), jaxpr)
  attrs = {}
  for k, leaves, tree in attributes:
    v = tree_unflatten(tree, leaves)
    if v is not None:
      attrs[k] = _ir_attribute(v)
  op = hlo.CompositeOp([mlir.aval_to_ir_type(a) for a in ctx.avals_out], list(args),
                       name=ir.StringAttr.get(name),
                       decomposition=ir.FlatSymbolRefAttr.get(fn.name.value),
                       composite_attributes=ir.DictAttr.get(attrs),
                       version=mlir.i32_attr(version))
  return list(op.results)


@composite_p.def_jvp
def _composite_jvp(primals, tangents, **params):
  raise ValueError("JVP rule for composite not implemented. You can use `jax.custom_jvp` to "
                   "add support. See "
                   "https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html")


@composite_p.def_transpose
def _composite_transpose(cts, *args, **params):
  raise ValueError("Transpose rule for composite not implemented. You can use"
                   "`jax.custom_jvp` or `jax.custom_vjp` to add support. See "
                   "https://docs.jax.dev/en/latest/_autosummary/jax.custom_jvp.html")


composite_p.def_batch(batching.no_batching_rule("composite"))


def _trace(fun, in_tree, in_avals, name):
  jaxpr, consts, out_tree = tracing.trace_pytree_fun(fun, in_tree, in_avals)
  if any(isinstance(c, core.Tracer) for c in consts):
    raise UnexpectedTracerError(
        f"Found a JAX Tracer as a constant in the decomposition for the composite op "
        f"'{name}'. This means that the decomposition function closes over a value that is "
        "involved in a JAX transformation. Any values that aren't explicitly known at compile "
        "time must be explicitly passed as arguments to the composite.")
  # The closed-over values become leading inputs.
  return core.ClosedJaxpr(tracing.consts_as_inputs(jaxpr), []), list(consts), out_tree


def composite(decomposition, name, version=0):
  """Wrap `decomposition` as the composite operation `name` (see the module docstring):
  positional arguments are its operands, keyword arguments its static attributes."""
  @functools.wraps(decomposition)
  def wrapped(*args, **kwargs):
    leaves, in_tree = tree_flatten(args)
    in_avals = [core.get_aval(x) for x in leaves]
    if any(isinstance(v, core.Tracer) for v in kwargs.values()):
      raise UnexpectedTracerError(
          "Found a JAX Tracer as an attribute in the decomposition for the composite op "
          f"'{name}'. This means that the decomposition function closes over a value that "
          "is involved in a JAX transformation. Any values that aren't explicitly known at "
          "compile time must be explicitly passed as arguments to the composite.\n\nNote: If "
          "you are passing jax arrays as attributes, use numpy arrays instead.")
    jaxpr, consts, out_tree = _trace(functools.partial(decomposition, **kwargs), in_tree,
                                     in_avals, name)
    attributes = []
    for k, v in kwargs.items():
      v_leaves, v_tree = tree_flatten(v)
      v_leaves = tuple(HashableArray(x) if isinstance(x, np.ndarray) else x for x in v_leaves)
      attributes.append((k, v_leaves, v_tree))
    outs = composite_p.bind(*consts, *leaves, name=name, attributes=tuple(attributes),
                            version=version, jaxpr=jaxpr)
    return tree_unflatten(out_tree, outs)
  return wrapped
