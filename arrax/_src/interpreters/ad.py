"""`jax.interpreters.ad` / `jax._src.interpreters.ad` compatibility over arrax's ad module."""
from arrax._src import ad as _ad
from arrax._src import core as _core
from arrax._src.ad import (JVPTrace, JVPTracer, UndefinedPrimal, Zero, add_tangents,  # noqa: F401
                           defjvp, defjvp2, defjvp_zero, deflinear, deflinear2,
                           instantiate_zeros, is_undefined, jvp_jaxpr, zeros_like_aval)
from arrax._src.interpreters.registry import RuleTable
from arrax._src.tree_util import tree_flatten, tree_leaves, tree_unflatten

primitive_jvps = RuleTable("jvp")
primitive_transposes = RuleTable("transpose")
add_jaxvals_p = _ad.add_any_p
add_any_p = _ad.add_any_p
is_undefined_primal = is_undefined
zeros_like_jaxval = zeros_like_aval


def add_jaxvals(x, y):
  """x + y of two tangents (the `add_any` primitive)."""
  return add_jaxvals_p.bind(x, y)


def zero_from_primal(x, instantiate=False):
  """The symbolic (or, with `instantiate`, concrete) zero tangent of primal `x`."""
  z = Zero(_ad.tangent_aval(_ad.core.get_aval(x)))
  return instantiate_zeros(z) if instantiate else z


def get_primitive_transpose(p):
  """The transpose rule of primitive `p` (NotImplementedError if it has none)."""
  try:
    return primitive_transposes[p]
  except KeyError:
    raise NotImplementedError(
        f"Transpose rule (for reverse-mode differentiation) for '{p}' not implemented"
    ) from None


def defbilinear(prim, lhs_rule, rhs_rule):
  """`prim(x, y)` is linear in each operand: its JVP is `prim(dx, y) + prim(x, dy)`, and its
  transpose with respect to x (y) is `lhs_rule(ct, x, y, **params)` (`rhs_rule`)."""
  defjvp(prim, lambda g, x, y, **params: prim.bind(g, y, **params),
         lambda g, x, y, **params: prim.bind(x, g, **params))

  def transpose(ct, x, y, **params):
    x_lin = is_undefined(x)
    if x_lin == is_undefined(y):
      raise ValueError(f"bilinear transpose of {prim} needs exactly one linear operand")
    lin = x if x_lin else y
    if type(ct) is Zero:
      out = Zero(lin.aval)
    else:
      out = (lhs_rule if x_lin else rhs_rule)(ct, x, y, **params)
      if type(out) is Zero:
        out = Zero(lin.aval)
    return [out, None] if x_lin else [None, out]

  prim.def_transpose(transpose)


def _args(tree_or_args):
  """Positional arguments from a FlatTree-like object (`.unflatten()`) or a sequence."""
  return tuple(tree_or_args.unflatten()) if hasattr(tree_or_args, "unflatten") else tuple(
      tree_or_args)


def _is_zero(x):
  return type(x) is Zero


def _strip(trace, x):
  return trace.to_primal_tangent(x)[0] if isinstance(x, _core.Tracer) else x


def _flat_fun(fun, p_tree, has_aux, check_pair=False):
  """(`fun` on flat leaves returning flat leaves, a box that gets the output tree and the aux
  leaves, stripped to primals, with their tree)."""
  box = {}

  def flat(*xs):
    out = fun(*tree_unflatten(p_tree, xs))
    if has_aux:
      if check_pair and (not isinstance(out, (list, tuple)) or len(out) != 2):
        raise TypeError("expected function with aux output to return a two-element tuple, "
                        f"but got type {type(out)} with value {out!r}")
      out, aux = out
      trace = _core.current_trace()
      box["aux"] = [_strip(trace, a) for a in tree_leaves(aux)], tree_flatten(aux)[1]
    leaves, box["tree"] = tree_flatten(out)
    return leaves
  return flat, box


def jvp(fun, primals, tangents, has_aux=False, instantiate=True, transform_stack=True):
  """Push `tangents` through `fun(*primals)` (sequences of positional arguments, or JAX's
  FlatTrees of them): (out_primals, out_tangents[, aux]); `instantiate` (a bool or one per
  output) turns symbolic Zero output tangents into arrays."""
  p_leaves, p_tree = tree_flatten(_args(primals))
  t_leaves = tree_leaves(_args(tangents), is_leaf=_is_zero)
  flat, box = _flat_fun(fun, p_tree, has_aux)
  out_p, out_t = _ad.jvp_flat(flat, p_leaves, t_leaves, transform_stack)
  inst = instantiate if isinstance(instantiate, (list, tuple)) else [instantiate] * len(out_t)
  out_t = [instantiate_zeros(t) if i else t for t, i in zip(out_t, inst)]
  out = (tree_unflatten(box["tree"], out_p), tree_unflatten(box["tree"], out_t))
  if has_aux:
    aux_leaves, aux_tree = box["aux"]
    return (*out, tree_unflatten(aux_tree, aux_leaves))
  return out


def linearize(traceable, primals_ft, has_aux=False, is_vjp=False):
  """Linearize `traceable(*primals)` (a sequence of positional arguments or a FlatTree):
  (out_primals, out_zeros, jaxpr, consts[, aux]): `jaxpr(*consts, *tangents)` gives the
  tangents of the outputs not symbolically zero (`out_zeros[i]` marks those that are)."""
  del is_vjp
  p_leaves, p_tree = tree_flatten(_args(primals_ft))
  flat, box = _flat_fun(traceable, p_tree, has_aux, check_pair=True)
  out_p, lin = _ad.linearize_flat(flat, p_leaves)
  result = (tree_unflatten(box["tree"], out_p), list(lin.out_zeros), lin.jaxpr, list(lin.consts))
  if has_aux:
    aux_leaves, aux_tree = box["aux"]
    return (*result, tree_unflatten(aux_tree, aux_leaves))
  return result
