"""jax.experimental.scheduling_groups: a function called as one `xla_metadata_call` equation,
lowered to a func.call carrying the given XLA frontend attributes (a scheduling group's name,
...)."""
from __future__ import annotations

from arrax._src import core, mlir, tree_util
from arrax._src.call_primitives import def_call_rules, trace_call


def scheduling_group(name):
  """Decorator: the function's operations form the XLA scheduling group `name`."""
  return xla_metadata_call(scheduling_group=name)


def xla_metadata_call(f=None, **meta):
  """`f` called as one `xla_metadata_call` equation whose call carries `meta` (strings) as
  XLA frontend attributes; a decorator when `f` is None."""
  if f is None:
    return lambda g: _xla_metadata_call(g, **meta)
  return _xla_metadata_call(f, **meta)


def _xla_metadata_call(fun, **meta):
  def wrapped(*args, **kwargs):
    closed, outer, leaves, out_tree = trace_call(fun, args, kwargs, cache=False)
    outs = xla_metadata_call_p.bind(*outer, *leaves, jaxpr=closed, **meta)
    return tree_util.tree_unflatten(out_tree, outs)
  return wrapped


xla_metadata_call_p = core.Primitive("xla_metadata_call")
def_call_rules(xla_metadata_call_p)


@xla_metadata_call_p.def_lowering
def _xla_metadata_call_lowering(ctx, *args, jaxpr, **meta):
  for v in meta.values():
    if not isinstance(v, str):
      raise NotImplementedError(f"mlir attr handler for type(x)={type(v)}")
  return mlir.call_subjaxpr(ctx, jaxpr, "xla_metadata_call", args, attributes=meta)
