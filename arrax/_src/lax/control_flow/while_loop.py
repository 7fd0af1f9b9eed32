"""The `while` primitive and `while_loop`.

`while_p` operands are (*cond_consts, *body_consts, *carry); params `cond_jaxpr`, `body_jaxpr`
(ClosedJaxprs taking their consts then the carry), `cond_nconsts`, `body_nconsts`. It lowers to
`stablehlo.while`. A predicate with a shape (under vmap, one per example) runs the loop while any
example's predicate holds; finished examples keep their carry.

Forward mode carries the tangents along with the carry; reverse mode raises JAX's error (a
while loop keeps no per-iteration residuals). Under vmap a batched predicate batches every
carry at axis 0.
"""
from __future__ import annotations

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, core, dtypes, mlir
from arrax._src.config import config
from arrax._src.core import ShapedArray
from arrax._src.errors import ConcretizationTypeError
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import common
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten, treedef_tuple

__all__ = ["while_loop", "while_p"]


# ---- while: the primitive ---------------------------------------------------------------------
while_p = core.Primitive("while")
while_p.multiple_results = True


def _while_abstract_eval(*avals, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  cond_consts, body_consts, carry = common.split_list(avals, [cond_nconsts, body_nconsts])
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


# Operations of the regions are named "<...>/while/cond/<op>" and "<...>/while/body/<op>" (JAX's
# names, which XLA keeps as they start with the while's own name).
_COND, _BODY = ("while", "cond"), ("while", "body")


def _while_lowering(ctx, *args, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  mctx = ctx.module_context
  types = [mlir.aval_to_ir_type(a) for a in ctx.avals_in]
  n = len(types)
  pred_aval = cond_jaxpr.out_avals[0]
  # XLA drops the side effects of a while's condition region, so a predicate with ordered
  # effects (a debug print in cond_fun) is computed before the loop and at the end of each
  # iteration instead, and carried (as JAX does).
  cond_ordered = core.jaxpr_has_ordered_effects(cond_jaxpr)
  # Ordered effects in the loop: the ordered-effects token is an extra (last) loop carry.
  ordered = cond_ordered or core.jaxpr_has_ordered_effects(body_jaxpr)
  extra, extra_types = [], []
  if cond_ordered:
    c_consts, _, carry = common.split_list(list(args), [cond_nconsts, body_nconsts])
    extra += common.lower_closed(mctx, cond_jaxpr, c_consts + carry, _COND)
    extra_types.append(mlir.aval_to_ir_type(pred_aval))
  if ordered:
    extra.append(mlir.current_ordered_token(mctx))
    extra_types.append(hlo.TokenType.get())
  op = hlo.WhileOp(types + extra_types, list(args) + extra)

  cond_block = op.regions[0].blocks.append(*types, *extra_types)
  with ir.InsertionPoint(cond_block):
    if cond_ordered:
      pred = cond_block.arguments[n]
    else:
      c_consts, _, carry = common.split_list(list(cond_block.arguments)[:n], [cond_nconsts, body_nconsts])
      pred, = common.lower_closed(mctx, cond_jaxpr, c_consts + carry, _COND)
    hlo.return_([_reduce_or(pred, pred_aval)])

  body_block = op.regions[1].blocks.append(*types, *extra_types)
  with ir.InsertionPoint(body_block):
    b_args = list(body_block.arguments)
    if ordered:
      mctx.ordered_token = b_args[-1]
    c_consts, b_consts, carry = common.split_list(b_args[:n], [cond_nconsts, body_nconsts])
    new = common.lower_closed(mctx, body_jaxpr, b_consts + carry, _BODY)
    if pred_aval.shape:
      # A batched predicate (under vmap): finished examples keep their carry. The predicate
      # is evaluated again here, effects included, as JAX does.
      pred, = common.lower_closed(mctx, cond_jaxpr, c_consts + carry, _COND)
      new = [_select_prefix(pred, pred_aval, x, c, a)
             for x, c, a in zip(new, carry, body_jaxpr.out_avals)]
    next_pred = common.lower_closed(mctx, cond_jaxpr, c_consts + new, _COND) if cond_ordered else []
    hlo.return_(c_consts + b_consts + new + next_pred
                + ([mlir.current_ordered_token(mctx)] if ordered else []))
  results = list(op.results)
  if ordered:
    mctx.ordered_token = results[-1]
  return results[cond_nconsts + body_nconsts:n]


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


while_p.def_abstract_eval(_while_abstract_eval)
while_p.def_lowering(_while_lowering)


# ---- autodiff -----------------------------------------------------------------------------
def _nonzero(t):
  return type(t) is not ad.Zero and not ad.is_float0(core.get_aval(t))


def _while_jvp(primals, tangents, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  # Carry tangents join the carry and body-const tangents the body consts; the predicate
  # ignores tangents. A carry whose tangent starts as zero may get a nonzero one from the body:
  # iterate to a fixed point.
  nonzeros = [_nonzero(t) for t in tangents]
  _, bconst_nz, init_nz = common.split_list(nonzeros, [cond_nconsts, body_nconsts])
  body_jvp, cond_aug, carry_nz = core.memo(
      (cond_jaxpr, body_jaxpr), ("jvp", tuple(bconst_nz), tuple(init_nz)),
      lambda: _jvp_jaxprs(cond_jaxpr, body_jaxpr, bconst_nz, init_nz))
  cconsts, bconsts, init = common.split_list(primals, [cond_nconsts, body_nconsts])
  _, bconst_dot, init_dot = common.split_list(tangents, [cond_nconsts, body_nconsts])
  bconst_dot = [t for t, nz in zip(bconst_dot, bconst_nz) if nz]
  init_dot = [ad.instantiate(t) for t, nz in zip(init_dot, carry_nz) if nz]
  outs = while_p.bind(*cconsts, *bconsts, *bconst_dot, *init, *init_dot,
                      cond_jaxpr=cond_aug, body_jaxpr=body_jvp, cond_nconsts=cond_nconsts,
                      body_nconsts=len(bconsts) + len(bconst_dot))
  n = len(init)
  dots = iter(outs[n:])
  return outs[:n], [next(dots) if nz else ad.Zero(ad.tangent_aval(a))
                    for a, nz in zip(body_jaxpr.out_avals, carry_nz)]


def _jvp_jaxprs(cond_jaxpr, body_jaxpr, bconst_nz, init_nz):
  differentiable = [not ad.is_float0(ad.tangent_aval(a)) for a in body_jaxpr.out_avals]
  carry_nz = [nz and d for nz, d in zip(init_nz, differentiable)]
  for _ in range(len(carry_nz) + 1):
    _, out_nz = ad.jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, instantiate=carry_nz)
    new = [(c or o) and d for c, o, d in zip(carry_nz, out_nz, differentiable)]
    if new == carry_nz:
      break
    carry_nz = new
  body_jvp, _ = ad.jvp_jaxpr(body_jaxpr, bconst_nz + carry_nz, instantiate=carry_nz)
  # (consts, carry, const dots, carry dots) -> (consts, const dots, carry, carry dots)
  nb, n = len(bconst_nz), len(carry_nz)
  n_bdot = sum(bconst_nz)
  j = body_jvp.jaxpr
  consts, carry, bdots, cdots = common.split_list(j.invars, [nb, n, n_bdot])
  body_jvp = core.ClosedJaxpr(core.Jaxpr(j.constvars, consts + bdots + carry + cdots,
                                         j.outvars, j.eqns, j.debug_info), body_jvp.consts)
  c = cond_jaxpr.jaxpr
  extra = [core.Var(ad.tangent_aval(a))
           for a, nz in zip(body_jaxpr.out_avals, carry_nz) if nz]
  cond_aug = core.ClosedJaxpr(core.Jaxpr(c.constvars, c.invars + extra, c.outvars, c.eqns,
                                         c.debug_info), cond_jaxpr.consts)
  return body_jvp, cond_aug, carry_nz


def _while_partial_eval(trace, args, params):
  common.check_no_refs("while_loop", args)
  # Known carries that the predicate and the known part of the body determine are computed by a
  # known loop; the unknown outputs come from the whole loop, staged (it recomputes the known
  # carries: a while loop cannot save per-iteration residuals). So `linearize` and `jvp` work,
  # and transposition reports that reverse mode is unsupported.
  cond_jaxpr, body_jaxpr = params["cond_jaxpr"], params["body_jaxpr"]
  nc, nb = params["cond_nconsts"], params["body_nconsts"]
  unknowns = [trace.is_unknown(x) for x in args]
  cconst_uk, bconst_uk, init_uk = common.split_list(unknowns, [nc, nb])
  if all(unknowns):
    return trace.record(while_p, args, params)
  split = core.memo(
      (cond_jaxpr, body_jaxpr), ("partial_eval", tuple(unknowns)),
      lambda: _known_loop(cond_jaxpr, body_jaxpr, cconst_uk, bconst_uk, init_uk))
  if split is None:
    return trace.record(while_p, args, params)
  cond_known, body_known, carry_uk = split
  cconsts, bconsts, init = common.split_list(args, [nc, nb])
  known = ([x for x, u in zip(cconsts, cconst_uk) if not u],
           [x for x, u in zip(bconsts, bconst_uk) if not u],
           [x for x, u in zip(init, carry_uk) if not u])
  with core.set_current_trace(trace.parent):
    known_outs = while_p.bind(*known[0], *known[1], *known[2], cond_jaxpr=cond_known,
                              body_jaxpr=body_known, cond_nconsts=len(known[0]),
                              body_nconsts=len(known[1]))
  all_outs = trace.record(while_p, args, params)
  known_it = iter(known_outs)
  return [o if u else next(known_it) for o, u in zip(all_outs, carry_uk)]


def _known_loop(cond_jaxpr, body_jaxpr, cconst_uk, bconst_uk, init_uk):
  """The loop over the known carries: (cond_known, body_known, carry_unknowns), or None when it
  computes nothing (the predicate is unknown, or every carry is)."""
  carry_uk = list(init_uk)
  for _ in range(len(carry_uk) + 1):
    out_uk = ad.partial_eval_jaxpr(body_jaxpr, bconst_uk + carry_uk, instantiate=carry_uk)[2]
    new = [c or o for c, o in zip(carry_uk, out_uk)]
    if new == carry_uk:
      break
    carry_uk = new
  if all(carry_uk):
    return None
  cond_known, _, (pred_uk,), _ = ad.partial_eval_jaxpr(cond_jaxpr, cconst_uk + carry_uk)
  if pred_uk:
    return None
  body_known = ad.partial_eval_jaxpr(body_jaxpr, bconst_uk + carry_uk, instantiate=carry_uk)[0]
  n_known = len(carry_uk) - sum(carry_uk)
  return _only_outputs(cond_known, 1), _only_outputs(body_known, n_known), carry_uk


def _only_outputs(closed, n):
  """`closed` returning just its first `n` outputs (dropping residuals and their work)."""
  j = closed.jaxpr
  used = [True] * n + [False] * (len(j.outvars) - n)
  dced, _ = core.dce_jaxpr(j, used, [True] * len(j.invars))
  return core.ClosedJaxpr(dced, closed.consts)


def _while_transpose(cts, *args, **params):
  raise ValueError("Reverse-mode differentiation does not work for lax.while_loop or "
                   "lax.fori_loop with dynamic start/stop values. Try using lax.scan, or using "
                   "fori_loop with static start/stop.")


while_p.def_jvp(_while_jvp)
while_p.def_partial_eval(_while_partial_eval)
while_p.def_transpose(_while_transpose)


# ---- batching -----------------------------------------------------------------------------
def _while_batch(axis_data, args, dims, *, cond_jaxpr, body_jaxpr, cond_nconsts, body_nconsts):
  cconst_dims, bconst_dims, init_dims = common.split_list(list(dims), [cond_nconsts, body_nconsts])
  cond_b, body_b, carry_dims = core.memo(
      (cond_jaxpr, body_jaxpr), ("batch", axis_data, tuple(dims)),
      lambda: _batch_jaxprs(axis_data, cond_jaxpr, body_jaxpr, cconst_dims, bconst_dims,
                            init_dims))
  cconsts, bconsts, init = common.split_list(args, [cond_nconsts, body_nconsts])
  init = [batching.matchaxis(d, new, x, axis_data.size) if new is not None else x
          for x, d, new in zip(init, init_dims, carry_dims)]
  outs = while_p.bind(*cconsts, *bconsts, *init, cond_jaxpr=cond_b, body_jaxpr=body_b,
                      cond_nconsts=cond_nconsts, body_nconsts=body_nconsts)
  return outs, carry_dims


def _batch_jaxprs(axis_data, cond_jaxpr, body_jaxpr, cconst_dims, bconst_dims, init_dims):
  """Batched (cond, body) and the carries' batch axes (None: unbatched).

  A carry is batched if it starts batched or the body makes it batched (a fixed point). If the
  predicate is then batched (one per example), every carry is, at axis 0, the layout the
  lowering expects; otherwise batched carries go right after the predicate's axes (a
  predicate batched by an inner vmap must stay a prefix of every carry's shape).
  """
  carry_bat = [d is not None for d in init_dims]
  for _ in range(len(carry_bat) + 1):
    in_dims = bconst_dims + [0 if b else None for b in carry_bat]
    _, out_dims = batching.batch_jaxpr(body_jaxpr, axis_data, in_dims, carry_bat)
    new = [b or d is not None for b, d in zip(carry_bat, out_dims)]
    if new == carry_bat:
      break
    carry_bat = new
  cond_in = cconst_dims + [0 if b else None for b in carry_bat]
  _, (pred_dim,) = batching.batch_jaxpr(cond_jaxpr, axis_data, cond_in, False)
  if pred_dim is not None:
    carry_dims = [0] * len(carry_bat)
    pred_out = 0
  else:
    rank = len(cond_jaxpr.out_avals[0].shape)
    carry_dims = [rank if b else None for b in carry_bat]
    pred_out = None
  body_b, _ = batching.batch_jaxpr(body_jaxpr, axis_data, bconst_dims + carry_dims,
                                   [False if d is None else d for d in carry_dims])
  cond_b, _ = batching.batch_jaxpr(cond_jaxpr, axis_data, cconst_dims + carry_dims,
                                   [False if pred_out is None else pred_out])
  return cond_b, body_b, carry_dims


while_p.def_batch_axis(_while_batch)


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
  plan = core.memo((cond_fun, body_fun), ("while", in_tree, avals),
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
  dced, used = core.dce_jaxpr(cond_jaxpr.jaxpr, [True], [True] * n_cc + not_fwd)
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
