"""jax.experimental.fused: a function called as one `fused_call` equation that XLA must fuse,
its outputs placed in `out_spaces`. Only GPU lowers it (as in JAX): on CPU lowering raises."""
from __future__ import annotations

from arrax._src import core, tree_util
from arrax._src.call_primitives import def_call_rules, trace_call


def fused(*, out_spaces):
  """Decorator: the function runs as one fused kernel whose outputs live in `out_spaces`."""
  def wrap(f):
    def wrapped(*args):
      closed, outer, leaves, out_tree = trace_call(f, args)
      if len(out_spaces) != len(closed.out_avals):
        raise ValueError(f"safe_zip() argument 1 has length {len(out_spaces)} but argument 0 "
                         f"has length {len(closed.out_avals)}. All lengths: "
                         f"({len(closed.out_avals)}, {len(out_spaces)})")
      outs = fused_p.bind(*outer, *leaves, jaxpr=closed, out_spaces=tuple(out_spaces))
      return tree_util.tree_unflatten(out_tree, outs)
    return wrapped
  return wrap


fused_p = core.Primitive("fused_call")
def_call_rules(fused_p, per_output="out_spaces", new_entry=core.MemorySpace.Device,
               linearize_by_jvp=True)


@fused_p.def_lowering
def _fused_lowering(ctx, *args, jaxpr, out_spaces):
  raise NotImplementedError("MLIR translation rule for primitive 'fused_call' not found for "
                            "platform cpu")
