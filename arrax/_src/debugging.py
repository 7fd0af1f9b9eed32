"""Host callbacks for debugging: `arrax.debug.print` and `arrax.debug.callback`.

Under jit the callback is a side-effecting custom call (`xla_ffi_python_cpu_callback`, which jaxlib
registers statically) that hands the operands to Python as NumPy arrays every time the compiled
program runs; eagerly the callback is simply called.
"""
from __future__ import annotations

import functools
import string

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import core, mlir
from arrax._src.tree_util import tree_flatten, tree_unflatten
from arrax._src.array import Array
from arrax._src.lax import shape_ops

debug_callback_p = core.Primitive("debug_callback")
debug_callback_p.multiple_results = True


class _Callback:
  """A hashable holder of the user's callback and the structure of its arguments."""
  __slots__ = ("fn", "in_tree")

  def __init__(self, fn, in_tree):
    self.fn = fn
    self.in_tree = in_tree

  def __call__(self, *flat_values):
    args, kwargs = tree_unflatten(self.in_tree, flat_values)
    self.fn(*args, **kwargs)

  def __repr__(self):
    return f"<callback {getattr(self.fn, '__name__', self.fn)}>"


def _debug_callback_abstract_eval(*avals, callback, effect):
  return []


def _debug_callback_impl(*args, callback, effect):
  callback(*[np.asarray(a._value) if isinstance(a, Array) else np.asarray(
      a.val if isinstance(a, core.Literal) else a) for a in args])
  return []


def _layout(aval):
  return ir.DenseIntElementsAttr.get(np.arange(len(aval.shape) - 1, -1, -1, dtype=np.int64),
                                     type=ir.IndexType.get())


def _debug_callback_lowering(ctx, *args, callback, effect):
  def host_fn(*arrays):
    callback(*arrays)
    return ()

  callbacks = ctx.module_context.host_callbacks
  callbacks.append(host_fn)
  op = hlo.CustomCallOp(
      [], list(args), "xla_ffi_python_cpu_callback", has_side_effect=True,
      operand_layouts=ir.ArrayAttr.get([_layout(a) for a in ctx.avals_in]),
      result_layouts=ir.ArrayAttr.get([]))
  op.attributes["mhlo.backend_config"] = ir.DictAttr.get({
      "index": ir.IntegerAttr.get(ir.IntegerType.get_unsigned(64), len(callbacks) - 1)})
  return []


debug_callback_p.def_abstract_eval(_debug_callback_abstract_eval)
debug_callback_p.def_lowering(_debug_callback_lowering)
debug_callback_p.def_impl(_debug_callback_impl)


def _debug_callback_batch(args, dims, *, callback, effect):
  """Under vmap the callback runs once per example, in order."""
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  for i in range(size):
    debug_callback_p.bind(*[x if d is None else shape_ops.index_in_dim(x, i, d, False)
                            for x, d in zip(args, dims)], callback=callback, effect=effect)
  return [], []


debug_callback_p.def_batch(_debug_callback_batch)
# Under differentiation the callback sees the primal values only (as in JAX).
debug_callback_p.def_jvp(lambda primals, tangents, **params: (
    debug_callback_p.bind(*primals, **params), []))


def callback(callback, *args, ordered=False, **kwargs):
  """Call `callback(*args, **kwargs)` on the host with concrete values, also under jit."""
  flat, in_tree = tree_flatten((args, kwargs))
  debug_callback_p.bind(*flat, callback=_Callback(callback, in_tree),
                        effect="Debug" if not ordered else "OrderedDebug")


class _Formatter(string.Formatter):
  def format_field(self, value, format_spec):
    if isinstance(value, np.ndarray) and value.ndim == 0 and format_spec:
      value = value[()]
    return super().format_field(value, format_spec)


def _format_print(fmt, *args, **kwargs):
  print(_Formatter().format(fmt, *args, **kwargs))


def debug_print(fmt: str, *args, ordered=False, **kwargs):
  """Print `fmt.format(*args, **kwargs)` with the runtime values, also inside jit."""
  callback(functools.partial(_format_print, fmt), *args, ordered=ordered, **kwargs)
