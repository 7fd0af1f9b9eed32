"""The `while` primitive and `while_loop`.

`while_p` operands are (*cond_consts, *body_consts, *carry); params `cond_jaxpr`, `body_jaxpr`
(ClosedJaxprs taking their consts then the carry), `cond_nconsts`, `body_nconsts`. It lowers to
`stablehlo.while`. A predicate with a shape (under vmap, one per example) runs the loop while any
example's predicate holds; finished examples keep their carry.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import core, dtypes, mlir
from arrax._src.config import config
from arrax._src.core import ShapedArray
from arrax._src.errors import ConcretizationTypeError
from arrax._src.lax import lax
from arrax._src.lax.control_flow import common
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten, treedef_tuple

__all__ = ["while_loop", "while_p"]


def _split(xs, sizes):
  out, start = [], 0
  for n in sizes:
    out.append(list(xs[start:start + n]))
    start += n
  out.append(list(xs[start:]))
  return out


# ---- while: the primitive ---------------------------------------------------------------------
while_p = core.Primitive("while")
while_p.multiple_results = True


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  cond_consts, body_consts, carry = _split(avals, [cond_nconsts, body_nconsts])
  if len(cond_jaxpr.in_avals) != cond_nconsts + len(carry):
    raise TypeError(f"while: cond_jaxpr takes {len(cond_jaxpr.in_avals)} inputs but got "
                    f"{cond_nconsts} consts and {len(carry)} carries")
  if len(body_jaxpr.in_avals) != body_nconsts + len(carry):
    raise TypeError(f"while: body_jaxpr takes {len(body_jaxpr.in_avals)} inputs but got "
                    f"{body_nconsts} consts and {len(carry)} carries")
  pred = cond_jaxpr.out_avals
  if len(pred) != 1 or pred[0].dtype != np.bool_:
    raise TypeError(f"while: cond_jaxpr must return one boolean, got {pred}")
  outs = body_jaxpr.out_avals
  if not common.all_typematch(outs, carry):
    raise TypeError(f"while: the body maps carry ({common.avals_str(carry)}) to "
                    f"({common.avals_str(outs)})")
  return list(outs)


def _while_lowering(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  mctx = ctx.module_context
  types = [mlir.aval_to_ir_type(a) for a in ctx.avals_in]
  op = hlo.WhileOp(types, list(args))
  pred_aval = cond_jaxpr.out_avals[0]

  cond_block = op.regions[0].blocks.append(*types)
  with ir.InsertionPoint(cond_block):
    c_consts, _, carry = _split(list(cond_block.arguments), [cond_nconsts, body_nconsts])
    pred, = common.lower_closed(mctx, cond_jaxpr, c_consts + carry)
    hlo.return_([_reduce_or(pred, pred_aval)])

  body_block = op.regions[1].blocks.append(*types)
  with ir.InsertionPoint(body_block):
    c_consts, b_consts, carry = _split(list(body_block.arguments), [cond_nconsts, body_nconsts])
    new = common.lower_closed(mctx, body_jaxpr, b_consts + carry)
    if pred_aval.shape:
      # A batched predicate (under vmap): finished examples keep their carry.
      pred, = common.lower_closed(mctx, cond_jaxpr, c_consts + carry)
      new = [_select_prefix(pred, pred_aval, n, c, a)
             for n, c, a in zip(new, carry, body_jaxpr.out_avals)]
    hlo.return_(c_consts + b_consts + new)
  return list(op.results)[cond_nconsts + body_nconsts:]


def _reduce_or(pred, aval):
  if not aval.shape:
    return pred
  scalar = ir.RankedTensorType.get([], mlir.dtype_to_ir_type(np.bool_))
  red = hlo.ReduceOp([scalar], [pred], [mlir.ir_constant(np.array(False))],
                     mlir.dense_i64(range(len(aval.shape))))
  mlir.make_reducer_region(red, np.bool_, lambda acc, x: [hlo.or_(acc[0], x[0])])
  return red.result


def _select_prefix(pred, pred_aval, on_true, on_false, aval):
  shape_t = mlir.aval_to_ir_type(ShapedArray(aval.shape, np.bool_))
  pred = hlo.broadcast_in_dim(shape_t, pred, mlir.dense_i64(range(len(pred_aval.shape))))
  return hlo.select(pred, on_true, on_false)


while_p.abstract_eval = _while_abstract_eval
while_p.lowering = _while_lowering


# ---- while_loop -------------------------------------------------------------------------------
def while_loop(cond_fun, body_fun, init_val):
  """Run `val = body_fun(val)` while `cond_fun(val)` is true; return the final `val`.

  The carry `val` (any pytree) must keep its structure, shapes and dtypes. The loop is one
  XLA While; it is not reverse-differentiable (use `fori_loop` with static bounds or `scan`).

  Example:
    >>> lax.while_loop(lambda i: i < 10, lambda i: i + 1, 0)
    Array(10, dtype=int32, weak_type=True)
  """
  if not (callable(body_fun) and callable(cond_fun)):
    raise TypeError("lax.while_loop: body_fun and cond_fun arguments should be callable.")
  if config.jax_disable_jit:
    try:
      val = tree_map(common.as_array, init_val)
      while cond_fun(val):
        val = tree_map(common.as_array, body_fun(val))
      return val
    except ConcretizationTypeError:
      pass   # a traced predicate: stage the loop after all
  init, in_tree = tree_flatten(init_val)
  avals = tuple(core.get_aval(x) for x in init)
  plan = common.cached((cond_fun, body_fun), ("while", in_tree, avals),
                       lambda: _while_plan(cond_fun, body_fun, in_tree, avals))
  init = [lax.convert_element_type(x, dt) if dt is not None else x
          for x, dt in zip(init, plan.promote)]
  moved = [x for x, m in zip(init, plan.move_to_const) if m]
  carry = [x for x, m in zip(init, plan.move_to_const) if not m]
  outs = while_p.bind(*plan.cond_consts, *moved, *plan.body_consts, *carry,
                      cond_jaxpr=plan.cond_jaxpr, body_jaxpr=plan.body_jaxpr,
                      cond_nconsts=len(plan.cond_consts),
                      body_nconsts=len(moved) + len(plan.body_consts))
  outs = common.merge_lists(plan.move_to_const, outs, moved)
  return tree_unflatten(plan.out_tree, outs)


class _WhilePlan:
  __slots__ = ("cond_jaxpr", "body_jaxpr", "cond_consts", "body_consts", "move_to_const",
               "promote", "out_tree")


def _while_plan(cond_fun, body_fun, in_tree, avals):
  args_tree = treedef_tuple([in_tree])
  cond_t, body_t = _trace_while(cond_fun, body_fun, args_tree, avals)
  if body_t.out_tree.num_leaves != len(avals):
    common.check_carry_type("while_loop body", body_fun, in_tree, avals, body_t.out_tree,
                            body_t.out_avals)
  promote = _weak_promotions(avals, body_t.out_avals)
  if any(dt is not None for dt in promote):
    avals = tuple(a if dt is None else ShapedArray(a.shape, dt) for a, dt in zip(avals, promote))
    cond_t, body_t = _trace_while(cond_fun, body_fun, args_tree, avals)
  common.check_carry_type("while_loop body", body_fun, in_tree, avals, body_t.out_tree,
                          body_t.out_avals)
  plan = _WhilePlan()
  plan.promote, plan.out_tree = promote, body_t.out_tree
  cond_jaxpr, body_jaxpr = cond_t.jaxpr, body_t.jaxpr
  n_cc, n_bc = len(cond_t.consts), len(body_t.consts)
  # A carry the body returns unchanged and the predicate ignores is a body const.
  body_fwd = common.forwarding(body_jaxpr.jaxpr)
  not_fwd = [n_bc + i != f for i, f in enumerate(body_fwd)]
  dced, used = common.dce_jaxpr(cond_jaxpr.jaxpr, [True], [True] * n_cc + not_fwd)
  move = [not u for u in used[n_cc:]]
  if any(move):
    cond_jaxpr = core.ClosedJaxpr(dced, cond_jaxpr.consts)
    body_jaxpr = common.prune_outputs(body_jaxpr, [not m for m in move])
    body_jaxpr = common.move_binders_to_front(body_jaxpr, [False] * n_bc + move)
  plan.cond_jaxpr, plan.body_jaxpr, plan.move_to_const = cond_jaxpr, body_jaxpr, move
  plan.cond_consts, plan.body_consts = cond_t.consts, body_t.consts
  return plan


def _trace_while(cond_fun, body_fun, args_tree, avals):
  cond_t = common.trace_body(cond_fun, args_tree, avals)
  body_t = common.trace_body(body_fun, args_tree, avals)
  if cond_t.out_tree.num_leaves != 1 or cond_t.out_tree.num_nodes != 1:
    raise TypeError(f"cond_fun must return a boolean scalar, but got pytree {cond_t.out_tree}.")
  pred = cond_t.out_avals[0]
  if pred.shape != () or pred.dtype != np.bool_:
    raise TypeError("cond_fun must return a boolean scalar, but got output type(s) "
                    f"{list(cond_t.out_avals)}.")
  return cond_t, body_t


def _weak_promotions(in_avals, out_avals):
  """Weakly typed initial carries that the body changes to another dtype get that dtype (so
  `while_loop(c, b, 0)` works for a body returning floats): one dtype or None per carry."""
  out = []
  for a, b in zip(in_avals, out_avals):
    if a.weak_type and not common.typematch(a, b):
      out.append(dtypes.result_type(_AvalLike(a), _AvalLike(b)))
    else:
      out.append(None)
  return out


class _AvalLike:
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval
