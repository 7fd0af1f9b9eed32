"""`jax.ad_checkpoint.print_saved_residuals`: which values a function's VJP keeps for the
backward pass, and where each comes from (an argument, a constant, or an equation's output)."""
from __future__ import annotations

from arrax._src import api_util, core, source_info_util
from arrax._src.ad_api import vjp
from arrax._src.api import make_jaxpr
from arrax._src.checkpoint import name_p
from arrax._src.lax.elementwise import reduce_precision_p
from arrax._src.tree_util import tree_flatten, tree_structure, tree_unflatten

__all__ = ["print_saved_residuals", "saved_residuals"]


def saved_residuals(f, *args, **kwargs):
  """[(aval, description)] of the residuals `vjp(f, *args, **kwargs)` saves."""
  leaves, in_tree = tree_flatten((args, kwargs))

  def flat_f(*xs):
    a, kw = tree_unflatten(in_tree, list(xs))
    return f(*a, **kw)

  info = api_util.debug_info("saved_residuals", f, args, kwargs)
  closed, out_shape = make_jaxpr(lambda *xs: vjp(flat_f, *xs), return_shape=True)(*leaves)
  jaxpr = closed.jaxpr
  num_res = tree_structure(out_shape[1]).num_leaves
  outvars = jaxpr.outvars[len(jaxpr.outvars) - num_res:]
  names = info.arg_names or ("unknown",) * len(jaxpr.invars)
  return _describe(jaxpr, outvars, names)


def _describe(jaxpr, outvars, arg_names):
  lits = [v for v in outvars if isinstance(v, core.Literal)]
  # A residual rounded by reduce_precision is described by the value it rounds.
  through = {e.outvars[0]: e.invars[0] for e in jaxpr.eqns if e.primitive is reduce_precision_p}
  res = {through.get(v, v) for v in outvars if not isinstance(v, core.Literal)}
  out = [(v.aval, "from a literal") for v in lits]
  out += [(v.aval, "from a constant") for v in jaxpr.constvars if v in res]
  for i, v in enumerate(jaxpr.invars):
    if v in res:
      # JAX's text for a nameless argument (an f-string it forgot to mark) is kept verbatim.
      out.append((v.aval, f"from the argument {arg_names[i]}" if arg_names[i]
                  else "from the argument at flattened index {i}"))
  for eqn in jaxpr.eqns:
    for v in eqn.outvars:
      if v not in res:
        continue
      src = source_info_util.summarize(eqn)
      if eqn.primitive is name_p:
        out.append((v.aval, f"named '{eqn.params['name']}' from {src}"))
      elif eqn.primitive.name == "jit":
        out.append((v.aval, f"output of jitted function '{eqn.params['name']}' from {src}"))
      else:
        out.append((v.aval, f"output of {eqn.primitive.name} from {src}"))
  return out


def print_saved_residuals(f, *args, **kwargs):
  """Print one line per residual the VJP of f at args saves: its type and where it comes from."""
  for aval, src in saved_residuals(f, *args, **kwargs):
    print(f"{aval.str_short(short_dtypes=True)} {src}")
