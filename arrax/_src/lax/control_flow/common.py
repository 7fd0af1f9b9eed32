"""What the control-flow primitives share: tracing bodies into jaxprs whose closed-over values
are explicit operands, small jaxpr rewrites, JAX's type checks and messages, lowering helpers.

A traced body is a `ClosedJaxpr` with no consts of its own: the values it closed over (concrete
arrays and tracers of enclosing traces alike) become its leading inputs and are passed to the
primitive as operands, as JAX does. Traces are cached on the body function (weakly), so calling
`lax.cond`/`scan`/... again with the same functions and argument types reuses the jaxprs and
hence the compiled executable.
"""
from __future__ import annotations

import inspect

import numpy as np

from arrax._src import ad, core, dtypes, mlir, tracing
from arrax._src.errors import type_mismatch_details
from arrax._src.array import device_put_value
from arrax._src.core import ClosedJaxpr, Jaxpr, Literal, Tracer, Var
from arrax._src.tree_util import (flatten_one_level_with_keys, keystr, registry,
                                  tree_flatten_with_path, tree_unflatten, treedef_is_leaf)
from arrax._src.lax import shape_ops


# ---- tracing bodies -------------------------------------------------------------------------
class Traced:
  """A traced body: `jaxpr` takes (*consts, *args); `consts` are the closed-over values."""
  __slots__ = ("jaxpr", "consts", "out_tree")

  def __init__(self, jaxpr: ClosedJaxpr, consts, out_tree):
    self.jaxpr = jaxpr
    self.consts = consts
    self.out_tree = out_tree

  @property
  def out_avals(self):
    return self.jaxpr.out_avals


def trace_body(fun, in_tree, in_avals) -> Traced:
  """Trace `fun(*tree_unflatten(in_tree, args))` for arguments of `in_avals`."""
  return core.memo((fun,), (in_tree, tuple(in_avals)),
                   lambda: _trace_body(fun, in_tree, in_avals))


def _trace_body(fun, in_tree, in_avals) -> Traced:
  jaxpr, consts, out_tree = tracing.trace_pytree_fun(fun, in_tree, in_avals)
  return Traced(ClosedJaxpr(tracing.consts_as_inputs(jaxpr), []), list(consts), out_tree)


def merge_consts(traced: list[Traced]):
  """Give bodies traced separately one shared const list (deduplicated by identity), as the
  branches of `cond` must: each body takes all consts and ignores the others'.

  Returns (jaxprs, consts). A body traced once but used twice keeps one jaxpr object.
  """
  consts, index = [], {}
  for t in traced:
    for c in t.consts:
      if id(c) not in index:
        index[id(c)] = len(consts)
        consts.append(c)
  done: dict[int, ClosedJaxpr] = {}
  jaxprs = []
  for t in traced:
    closed = done.get(id(t.jaxpr))
    if closed is None:
      closed = done[id(t.jaxpr)] = _pad_consts(t, consts, index)
    jaxprs.append(closed)
  return jaxprs, consts


def _pad_consts(t: Traced, consts, index) -> ClosedJaxpr:
  n = len(t.consts)
  if [index[id(c)] for c in t.consts] == list(range(len(consts))):
    return t.jaxpr
  jaxpr = t.jaxpr.jaxpr
  new_consts = [Var(core.get_aval(c)) for c in consts]
  for v, c in zip(jaxpr.invars[:n], t.consts):
    new_consts[index[id(c)]] = v
  return ClosedJaxpr(Jaxpr([], new_consts + jaxpr.invars[n:], jaxpr.outvars, jaxpr.eqns,
                           jaxpr.debug_info), t.jaxpr.consts)


# ---- jaxpr rewrites -------------------------------------------------------------------------
def forwarding(jaxpr: Jaxpr) -> list:
  """For each output, the index of the input it returns unchanged, or None."""
  pos = {v: i for i, v in enumerate(jaxpr.invars)}
  return [None if isinstance(v, Literal) else pos.get(v) for v in jaxpr.outvars]


def prune_outputs(closed: ClosedJaxpr, keep) -> ClosedJaxpr:
  if all(keep):
    return closed
  j = closed.jaxpr
  outvars = [v for v, k in zip(j.outvars, keep) if k]
  return ClosedJaxpr(Jaxpr(j.constvars, j.invars, outvars, j.eqns, j.debug_info), closed.consts)


def move_binders_to_front(closed: ClosedJaxpr, to_move) -> ClosedJaxpr:
  if not any(to_move):
    return closed
  j = closed.jaxpr
  invars = ([v for v, m in zip(j.invars, to_move) if m]
            + [v for v, m in zip(j.invars, to_move) if not m])
  return ClosedJaxpr(Jaxpr(j.constvars, invars, j.outvars, j.eqns, j.debug_info), closed.consts)


def merge_lists(which, falses, trues):
  """Interleave: position i takes the next of `trues` where which[i], else of `falses`."""
  f_it, t_it = iter(falses), iter(trues)
  return [next(t_it) if w else next(f_it) for w in which]


def split_list(xs, sizes):
  """xs cut into consecutive pieces of `sizes`, plus the rest."""
  out, start = [], 0
  for n in sizes:
    out.append(list(xs[start:start + n]))
    start += n
  out.append(list(xs[start:]))
  return out


def user_value(x):
  """A value handed to user code: symbolic zeros and literals become arrays."""
  if type(x) is ad.Zero:
    x = ad.zeros_like_aval(x.aval)
  if type(x) is Literal:
    return device_put_value(x.val, None, dtype=x.aval.dtype, weak_type=x.aval.weak_type)
  return x


def as_array(x):
  """A forwarded input returned to the user: host values become Arrays (as JAX's asarray)."""
  if isinstance(x, Tracer) or hasattr(x, "_buf"):
    return x
  if isinstance(x, Literal):
    return device_put_value(x.val, dtype=x.aval.dtype, weak_type=x.aval.weak_type)
  return device_put_value(x)


# ---- checks and messages --------------------------------------------------------------------
def typematch(a, b) -> bool:
  """Equal types up to weak typing (what control flow requires of carries and branches). As
  JAX's, shardings must agree only when both types have one (a type without names no mesh)."""
  if not (a.shape == b.shape and a.dtype == b.dtype
          and getattr(a, "vma", frozenset()) == getattr(b, "vma", frozenset())
          and getattr(a, "ur", None) == getattr(b, "ur", None)):
    return False
  s, t = getattr(a, "sharding", None), getattr(b, "sharding", None)
  return s is None or t is None or s == t


def pcast_hint(fixes, loop=False) -> str:
  """JAX's suggestion of `jax.lax.pcast(..., to='varying')` calls for vma mismatches (laid out
  as JAX's loop and cond messages do)."""
  if not fixes:
    return ""
  if len(fixes) == 1:
    msg = f"This might be fixed by {fixes[0]}.\n"
  elif loop:
    msg = ("This might be fixed by:\n" + "\n".join(f"  * {d};\n" for d in fixes[:-1])
           + f"  * {fixes[-1]}.\n")
  else:
    msg = ("This might be fixed by:\n" + "\n".join(f"  * {d};" for d in fixes[:-1])
           + f"\n  * {fixes[-1]}.\n")
  return msg + ("See https://docs.jax.dev/en/latest/notebooks/shard_map.html#scan-vma for more "
                "information.\n\n")


def all_typematch(avals1, avals2) -> bool:
  return len(avals1) == len(avals2) and all(typematch(a, b) for a, b in zip(avals1, avals2))


def avals_str(avals) -> str:
  return ", ".join(a.str_short() for a in avals)


def fun_sourceinfo(fun) -> str:
  """`name at file:line` of a Python function (as JAX shows functions in errors)."""
  while hasattr(fun, "func") and hasattr(fun, "args"):   # functools.partial
    fun = fun.func
  fun = inspect.unwrap(fun)
  code = getattr(fun, "__code__", None)
  if code is None:
    return getattr(fun, "__name__", "<unknown>")
  return f"{fun.__name__} at {code.co_filename}:{code.co_firstlineno}"


def capitalize(s: str) -> str:
  return s[:1].upper() + s[1:]


class _LeafName:
  def __repr__(self):
    return "pytree leaf"


def structure_differences(tree1, tree2, path=()):
  """Yield (path, thing1, thing2, explanation) for each place two pytrees differ in structure."""
  leaf1 = treedef_is_leaf(registry.flatten(tree1)[1])
  leaf2 = treedef_is_leaf(registry.flatten(tree2)[1])
  if leaf1 and leaf2:
    return
  if type(tree1) is not type(tree2):
    yield path, _thing(tree1), _thing(tree2), "their Python types differ"
    return
  if isinstance(tree1, (list, tuple)) and len(tree1) != len(tree2):
    name = type(tree1).__name__
    yield (path, f"{name} of length {len(tree1)}", f"{name} of length {len(tree2)}",
           "the lengths do not match")
    return
  kids1, aux1 = flatten_one_level_with_keys(tree1)
  kids2, aux2 = flatten_one_level_with_keys(tree2)
  kids1, kids2 = list(kids1), list(kids2)
  keys1, keys2 = [k for k, _ in kids1], [k for k, _ in kids2]
  if keys1 != keys2:
    diff = " ".join(str(k) for k in keys1 if k not in keys2) or " ".join(
        str(k) for k in keys2 if k not in keys1)
    yield (path, f"{_thing(tree1)} with keys {keys1}", f"{_thing(tree2)} with keys {keys2}",
           f"the keys do not match ({diff})")
    return
  if aux1 != aux2:
    yield (path, f"{_thing(tree1)} with auxiliary data {aux1}",
           f"{_thing(tree2)} with auxiliary data {aux2}", "the auxiliary data differ")
    return
  for (k, c1), (_, c2) in zip(kids1, kids2):
    yield from structure_differences(c1, c2, (*path, k))


def _thing(x):
  return "pytree leaf" if isinstance(x, _LeafName) else str(type(x))


def leaves_like(tree):
  """The structure `tree` (a treedef) with placeholder leaves, for structure messages."""
  return tree_unflatten(tree, [_LeafName() for _ in range(tree.num_leaves)])


def leaf_paths(tree):
  return [p for p, _ in tree_flatten_with_path(leaves_like(tree))[0]]


def bullet_list(diffs, end=".", capital=True):
  if len(diffs) == 1:
    return (capitalize(diffs[0]) if capital else diffs[0]) + end + "\n"
  return "\n".join(f"  * {d};" for d in diffs[:-1]) + f"\n  * {diffs[-1]}{end}\n"


def check_carry_type(name, body_fun, in_tree, in_avals, out_tree, out_avals):
  """TypeError unless a loop body's carry output has its input's structure and types."""
  try:
    params = list(inspect.signature(body_fun).parameters)
    carry_name = params[0] if params else None
  except (TypeError, ValueError):
    carry_name = None

  def component(path):
    if carry_name:
      return (f"the input carry component {carry_name}{keystr(path)}" if path
              else f"the input carry {carry_name}")
    return f"the input carry at path {keystr(path)}" if path else "the input carry"

  if in_tree != out_tree:
    diffs = [f"{component(p)} is a {t1} but the corresponding component of the carry output "
             f"is a {t2}, so {why}" for p, t1, t2, why in
             structure_differences(tree_unflatten(in_tree, in_avals),
                                   tree_unflatten(out_tree, out_avals)
                                   if out_tree.num_leaves == len(out_avals) else
                                   leaves_like(out_tree))]
    if not diffs:
      diffs = [f"the input tree structure is {in_tree} but the output tree structure is "
               f"{out_tree}"]
    raise TypeError(
        f"{name} function carry input and carry output must have the same pytree structure, "
        f"but they differ:\n\n{bullet_list(diffs)}\nRevise the function so that the carry "
        "output has the same pytree structure as the carry input.")
  paths = leaf_paths(in_tree)
  diffs = [f"{component(p)} has type {a.str_short()} but the corresponding output carry "
           f"component has type {b.str_short()}{type_mismatch_details(a, b)}"
           for p, a, b in zip(paths, in_avals, out_avals) if not typematch(a, b)]
  if diffs:
    fixes = [f"applying `jax.lax.pcast(..., {tuple(b.vma - a.vma)}, to='varying')`, to the "
             f"initial carry value corresponding to {component(p)}"
             for p, a, b in zip(paths, in_avals, out_avals)
             if not typematch(a, b) and getattr(b, "vma", frozenset()) - getattr(
                 a, "vma", frozenset())]
    raise TypeError(
        f"{name} function carry input and carry output must have equal types, but they "
        f"differ:\n\n{bullet_list(diffs)}\n{pcast_hint(fixes, loop=True)}Revise the "
        "function so that all output types match the corresponding input types.")


# ---- lowering -------------------------------------------------------------------------------
def lower_closed(mctx, closed: ClosedJaxpr, args, scope=()):
  """Emit the equations of `closed` at the current insertion point; return its outputs.
  `scope`: names its operations' names get after the enclosing equation's ("while", "body")."""
  consts = [mlir.ir_constant(np.asarray(c, v.aval.dtype))
            for v, c in zip(closed.jaxpr.constvars, closed.consts)]
  # (the enclosing stack is rendered first: "jvp()/while/body", not "jvp(while/body)", as JAX;
  # its OpAttributes stay, so the region's ops get the enclosing equation's attributes too)
  ns = mctx.name_stack
  stack = ((core.render_name_stack(ns), *[e for e in ns if type(e) is core.OpAttributes])
           if ns else ())
  return mlir.jaxpr_subcomp(mctx, closed.jaxpr, consts, list(args),
                            stack + scope if scope else None)


def lower_fun(fun):
  """A lowering rule that traces `fun(*operands, **params)` (flat in, flat out, written with lax
  operations) for the operand types and emits the result."""
  def rule(ctx, *args, **params):
    jaxpr, consts = tracing.trace_to_jaxpr(lambda *xs: fun(*xs, **params), ctx.avals_in)
    const_irs = [mlir.ir_constant(np.asarray(c, v.aval.dtype))
                 for v, c in zip(jaxpr.constvars, consts)]
    return mlir.jaxpr_subcomp(ctx.module_context, jaxpr, const_irs, list(args))
  return rule


# ---- for the transformation rules of control-flow primitives ------------------------------
MemorySpace = core.MemorySpace   # where an `empty2` buffer lives


# An uninitialized scalar (XLA gets zeros): fills residual slots a cond branch does not use.
empty2_p = core.Primitive("empty2")
empty2_p.def_abstract_eval(lambda *, dtype, memory_space: core.ShapedArray((), dtype))
empty2_p.def_lowering(lambda ctx, *, dtype, memory_space: [
    mlir.ir_constant(np.zeros((), dtype))])
# Nullary: no operand can carry a tangent or a batch axis.
ad.defjvp_zero(empty2_p)
empty2_p.def_batch(lambda args, dims, **params: (empty2_p.bind(**params), None))


def empty_like_aval(aval):
  """A value of type `aval` whose contents do not matter (zeros, as JAX's `empty2`)."""
  if aval.dtype == dtypes.float0:
    return np.zeros(aval.shape, dtypes.float0)
  out = empty2_p.bind(dtype=aval.dtype, memory_space=MemorySpace.Device)
  if not aval.shape:
    return out
  return shape_ops.broadcast_in_dim_p.bind(out, shape=aval.shape, broadcast_dimensions=(),
                                           sharding=getattr(aval, "sharding", None))


def check_no_refs(name, args):
  """Reverse-mode differentiation of control flow over mutable array references is not
  implemented (forward mode is): say so rather than computing wrong tangents."""
  if any(type(core.get_aval(a)) is core.AbstractRef for a in args):
    raise NotImplementedError(f"reverse-mode differentiation (linearize, grad, vjp) of a "
                              f"{name} that uses mutable array references")
