"""Custom vmap rules: `custom_vmap` (with `def_vmap`) and `sequential_vmap`.

A `custom_vmap` function binds `custom_vmap_call`, which holds the traced function (`call`, run
as it is eagerly, under jit and under differentiation) and the user's rule, called instead of
batching `call` when vmap reaches the primitive:
`rule(axis_size, in_batched, *args) -> (out, out_batched)`, batched arguments having their
mapped axis first.
"""
from __future__ import annotations

import functools
import inspect
import operator

from arrax._src import ad, batching, core, tracing
from arrax._src.tree_util import (tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten,
                                  treedef_tuple)
from arrax._src.lax.control_flow import common, loops


def _rule_name(rule):
  return getattr(rule, "__name__", "<unnamed rule>")


class _ClosedRule:
  """The user's rule, called with the consts of `call` (never batched) split off. Every rule
  bound with `custom_vmap_call` (this or the jvp's) takes `in_batched` and the arguments as
  the two-part trees (consts, args) / (primals, tangents)."""

  def __init__(self, rule):
    functools.update_wrapper(self, rule)
    self.rule = rule

  def __call__(self, axis_size, all_in_batched, *all_args):
    _, args = all_args
    _, in_batched = all_in_batched
    return self.rule(axis_size, list(in_batched), *args)

  def __str__(self):
    return str(self.rule)

  __repr__ = __str__


def _check_rule_trees(rule, original_out_tree, out_tree, out_batched_tree):
  if out_tree != out_batched_tree:
    raise ValueError(
        "structure of output value and output batching specification returned by custom vmap "
        f"rule ({_rule_name(rule)}) do not match.\nOutput values: {out_tree}\n"
        f"Batching spec: {out_batched_tree}")
  if out_tree != original_out_tree:
    raise ValueError(
        f"structure of output returned by custom vmap rule ({_rule_name(rule)}) does not match "
        f"that of original custom-vmapped function.\nOriginal output: {original_out_tree}\n"
        f"Rule output: {out_tree}")


custom_vmap_p = core.Primitive("custom_vmap_call")
custom_vmap_p.multiple_results = True


@custom_vmap_p.def_abstract_eval
def _custom_vmap_abstract_eval(*avals, call, rule, in_tree, out_tree):
  return list(call.out_avals)


@custom_vmap_p.def_impl
def _custom_vmap_impl(*args, call, rule, in_tree, out_tree):
  return core.eval_jaxpr(call.jaxpr, call.consts, *args)


@custom_vmap_p.def_lowering
def _custom_vmap_lowering(ctx, *args, call, rule, in_tree, out_tree):
  return common.lower_closed(ctx.module_context, call, args)


@custom_vmap_p.def_batch
def _custom_vmap_batch(args, dims, *, call, rule, in_tree, out_tree):
  axis_size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  args = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(args, dims)]
  in_batched = tree_unflatten(in_tree, [d is not None for d in dims])
  out, out_batched = rule(axis_size, in_batched, *tree_unflatten(in_tree, args))
  outs, tree1 = tree_flatten(out)
  flags, tree2 = tree_flatten(out_batched)
  _check_rule_trees(rule, out_tree, tree1, tree2)
  return outs, [0 if b else None for b in flags]


@custom_vmap_p.def_jvp
def _custom_vmap_jvp(primals, tangents, *, call, rule, in_tree, out_tree):
  def jvp_rule(axis_size, in_batched, primals, tangents):
    ps_b, ts_b = in_batched
    mutual = tree_map(operator.and_, ps_b, ts_b)
    extra_p = tree_map(lambda p, t: 0 if p and not t else None, ps_b, ts_b)
    extra_t = tree_map(lambda p, t: 0 if t and not p else None, ps_b, ts_b)
    box = []

    def to_jvp(*ps):
      out, out_b = rule(axis_size, mutual, *ps)
      _check_rule_trees(rule, out_tree, tree_structure(out), tree_structure(out_b))
      box.append(out_b)
      return out

    def jvp_of_rule(ps, ts):
      p_flat, p_tree = tree_flatten(ps)

      def flat(*xs):
        return tree_leaves(to_jvp(*tree_unflatten(p_tree, xs)))

      outs, t_outs = ad.jvp_flat(flat, p_flat, tree_leaves(ts))
      return (tree_unflatten(out_tree, outs),
              tree_unflatten(out_tree, [ad.instantiate(t) for t in t_outs]))

    flat_extra, _ = tree_flatten((extra_p, extra_t), is_leaf=lambda x: x is None)
    if any(d is not None for d in flat_extra):
      out_ps, out_ts = batching.vmap(jvp_of_rule, in_axes=(extra_p, extra_t),
                                     axis_size=axis_size)(primals, tangents)
      out_b = tree_map(lambda _: True, out_ps)
      return (out_ps, out_ts), (out_b, out_b)
    out_ps, out_ts = jvp_of_rule(primals, tangents)
    return (out_ps, out_ts), (box[0], box[0])

  tangents = [ad.instantiate_zeros(t) for t in tangents]
  jvp_call, _ = ad.jvp_jaxpr(call, [True] * len(primals), True)
  outs = custom_vmap_p.bind(*primals, *tangents, call=jvp_call, rule=jvp_rule,
                            in_tree=treedef_tuple((in_tree, in_tree)),
                            out_tree=treedef_tuple((out_tree, out_tree)))
  n = len(outs) // 2
  return outs[:n], outs[n:]


class custom_vmap:  # noqa: N801
  """A function with its own vmap rule: `jax.vmap` calls the rule registered with `def_vmap`
  instead of batching the function's body. Elsewhere (eagerly, under jit, jvp) the function
  runs as written. Reverse-mode differentiation is not supported (wrap in `custom_vjp`).

  Example:
    >>> @custom_vmap
    ... def f(x, y):
    ...   return x + y
    >>> @f.def_vmap
    ... def f_rule(axis_size, in_batched, xs, ys):
    ...   return xs * ys, True
    >>> jax.vmap(f)(jnp.arange(3), jnp.arange(1, 4))
    Array([0, 2, 6], dtype=int32)
  """

  def __init__(self, fun):
    functools.update_wrapper(self, fun)
    self.fun = fun
    self.vmap_rule = None

  def __getattr__(self, name):
    if name in ("fun", "vmap_rule"):
      raise AttributeError(name)
    return getattr(self.fun, name)

  def __get__(self, obj, objtype=None):
    return self if obj is None else functools.partial(self, obj)

  def def_vmap(self, vmap_rule):
    """Register `vmap_rule(axis_size, in_batched, *args) -> (out, out_batched)` (returned
    unchanged)."""
    self.vmap_rule = vmap_rule
    return vmap_rule

  def __call__(self, *args, **kwargs):
    name = getattr(self.fun, "__name__", str(self.fun))
    if kwargs:
      args = _resolve_kwargs(self.fun, name, args, kwargs)
    if not self.vmap_rule:
      raise AttributeError(f"No batching rule defined for custom_vmap function {name} using "
                           "def_vmap.")
    leaves, in_tree = tree_flatten(args)
    jaxpr, consts, out_tree = tracing.trace_pytree_fun(self.fun, in_tree,
                                                       [core.get_aval(x) for x in leaves])
    all_tree = treedef_tuple((tree_structure(list(consts)), in_tree))
    outs = custom_vmap_p.bind(*consts, *leaves,
                              call=core.ClosedJaxpr(tracing.consts_as_inputs(jaxpr), []),
                              rule=_ClosedRule(self.vmap_rule), in_tree=all_tree,
                              out_tree=out_tree)
    return tree_unflatten(out_tree, outs)


def _resolve_kwargs(fun, name, args, kwargs):
  try:
    ba = inspect.signature(fun).bind(*args, **kwargs)
    ba.apply_defaults()
    if ba.kwargs:
      raise TypeError("keyword-only arguments cannot be passed")
  except TypeError as e:
    raise TypeError(
        f"The input arguments to the custom_vmap-decorated function {name} could not be "
        f"resolved to positional-only arguments. Binding failed with the error:\n{e}") from e
  return ba.args


def sequential_vmap(f):
  """A `custom_vmap` function whose vmap rule loops: under vmap, `f` is called once per
  element of the batch (with `lax.map`), for functions that cannot handle a batch axis.

  Example:
    >>> @sequential_vmap
    ... def f(x):
    ...   return x + 1
    >>> jax.vmap(f)(jnp.arange(3))
    Array([1, 2, 3], dtype=int32)
  """
  f = custom_vmap(f)

  @f.def_vmap
  def rule(axis_size, in_batched, *args):
    args = list(args)
    mapped = tree_map(lambda b, x: x if b else None, in_batched, args)
    fixed = tree_map(lambda b, x: None if b else x, in_batched, args)

    def to_map(mapped_args):
      merged = tree_map(lambda b, m, c: m if b else c, in_batched, mapped_args, fixed)
      return f(*merged)

    out = loops.map(to_map, mapped)
    return out, tree_map(lambda _: True, out)

  return f
