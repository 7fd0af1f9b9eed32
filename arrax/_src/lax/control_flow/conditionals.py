"""cond and switch: the `cond` primitive, holding one closed jaxpr per branch.

`cond_p` takes the int32 branch index first, then the operands every branch receives (the
branches' closed-over values first, then the user's operands); its param `branches` is a tuple
of ClosedJaxprs that all have the same input and output types. It lowers to `stablehlo.case`.
A cond made by `lax.platform_dependent` also has the param `branches_platforms` (the platforms
of each branch, None for the default one): it lowers to the branch of the platform compiled
for, and every rule passes the param on.

Its rules (JVP, partial evaluation, transpose, batching) transform every branch alike and then
make the branches agree on one signature. Under vmap a batched index turns the cond into a
`select_n` over the results of all branches, as in JAX.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, core, dtypes, mlir, tracing
from arrax._src.config import config
from arrax._src.errors import type_mismatch_details
from arrax._src.core import Tracer
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax.control_flow import common
from arrax._src.tree_util import keystr, tree_flatten, tree_unflatten

__all__ = ["cond", "switch", "cond_p"]

_no_operand = object()


# ---- the primitive --------------------------------------------------------------------------
cond_p = core.Primitive("cond")
cond_p.multiple_results = True


def _cond_abstract_eval(index, *avals, branches, **_):
  if index.shape != () or index.dtype != np.int32:
    raise TypeError(f"cond: the branch index must be a scalar int32, got {index.str_short()}")
  if not branches:
    raise TypeError("cond: needs at least one branch")
  outs = branches[0].out_avals
  for i, br in enumerate(branches):
    if not common.all_typematch(br.in_avals, avals):
      raise TypeError(f"cond: branch {i} takes ({common.avals_str(br.in_avals)}) but the "
                      f"operands are ({common.avals_str(avals)})")
    if not common.all_typematch(br.out_avals, outs):
      raise TypeError(f"cond: branch {i} returns ({common.avals_str(br.out_avals)}) but branch "
                      f"0 returns ({common.avals_str(outs)})")
  return list(outs)


def _cond_lowering(ctx, index, *args, branches, branches_platforms=None):
  if branches_platforms is not None:
    branch = branches[platform_branch(branches_platforms, "cond")]
    return common.lower_closed(ctx.module_context, branch, args)
  mctx = ctx.module_context
  out_types = [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
  # Ordered effects in a branch: the branches take the ordered-effects token (captured) and
  # give it back as an extra result.
  ordered = any(core.jaxpr_has_ordered_effects(b) for b in branches)
  token = mlir.current_ordered_token(mctx) if ordered else None
  case = hlo.CaseOp(out_types + ([hlo.TokenType.get()] if ordered else []), index,
                    len(branches))
  for i, (region, branch) in enumerate(zip(case.regions, branches)):
    block = region.blocks.append()
    with ir.InsertionPoint(block):
      if ordered:   # (otherwise the enclosing block's token must survive the cond)
        mctx.ordered_token = token
      # (named "<...>/cond/branch_<i>_fun/<op>", as JAX names them)
      outs = common.lower_closed(mctx, branch, args, ("cond", f"branch_{i}_fun"))
      hlo.return_(outs + ([mlir.current_ordered_token(mctx)] if ordered else []))
  results = list(case.results)
  if ordered:
    *results, mctx.ordered_token = results
  return results


cond_p.def_abstract_eval(_cond_abstract_eval)
cond_p.def_lowering(_cond_lowering)


# ---- autodiff -----------------------------------------------------------------------------
# The index never has a tangent. Every rule transforms all branches alike and then makes them
# agree on their outputs (the union of what any branch needs), since a cond's branches must have
# one type.
def _nonzero(t):
  return type(t) is not ad.Zero and not ad.is_float0(core.get_aval(t))


def _cond_jvp(primals, tangents, *, branches, **params):
  index, *ops = primals
  nonzeros = tuple(_nonzero(t) for t in tangents[1:])
  jvps, out_nz = core.memo(branches, ("jvp", nonzeros),
                                     lambda: _jvp_branches(branches, nonzeros))
  dots = [t for t, nz in zip(tangents[1:], nonzeros) if nz]
  outs = cond_p.bind(index, *ops, *dots, branches=jvps, **params)
  n = len(out_nz)
  dots_out = iter(outs[n:])
  return outs[:n], [next(dots_out) if nz else ad.Zero(ad.tangent_aval(a))
                    for a, nz in zip(branches[0].out_avals, out_nz)]


def _jvp_branches(branches, nonzeros):
  per_branch = _per_distinct(branches, lambda b: ad.jvp_jaxpr(b, nonzeros)[1])
  out_nz = [any(nz) and not ad.is_float0(ad.tangent_aval(a))
            for nz, a in zip(zip(*per_branch), branches[0].out_avals)]
  jvps = _per_distinct(branches, lambda b: ad.jvp_jaxpr(b, nonzeros, instantiate=out_nz)[0])
  return tuple(jvps), out_nz


def _per_distinct(branches, fn):
  """`fn` of each branch, computed once per distinct jaxpr (switch may repeat a branch)."""
  done: dict[int, object] = {}
  for b in branches:
    if id(b) not in done:
      done[id(b)] = fn(b)
  return [done[id(b)] for b in branches]


def _cond_partial_eval(trace, args, params):
  common.check_no_refs("cond", args)
  branches = params["branches"]
  rest = {k: v for k, v in params.items() if k != "branches"}
  index, *ops = args
  if trace.is_unknown(index):
    # An unknown index makes everything unknown: stage the whole cond.
    return trace.record(cond_p, args, params)
  ops_uk = tuple(trace.is_unknown(x) for x in ops)
  known, unknown, out_uk, res_src = core.memo(
      branches, ("partial_eval", ops_uk), lambda: _split_branches(branches, ops_uk))
  known_ops = [x for x, u in zip(ops, ops_uk) if not u]
  known_outs = []
  if known[0].out_avals or any(k.eqns for k in known):
    with core.set_current_trace(trace.parent):
      known_outs = cond_p.bind(index, *known_ops, branches=known, **rest)
  n_known = len(out_uk) - sum(out_uk)
  computed = iter(known_outs[n_known:])
  residuals = [next(computed) if src is None else known_ops[src] for src in res_src]
  unk_ops = [x for x, u in zip(ops, ops_uk) if u]
  unk_outs = iter(())
  if any(out_uk):
    unk_outs = iter(trace.record(cond_p, [index, *residuals, *unk_ops],
                                 {"branches": unknown, **rest}))
  known_it = iter(known_outs[:n_known])
  return [next(unk_outs) if u else next(known_it) for u in out_uk]


def _split_branches(branches, ops_uk):
  """Split each branch into a known and an unknown part with common signatures.

  Known branches take the known operands and return (known outputs, residuals); unknown ones
  take (residuals, unknown operands). The residual list is the union of the branches'
  residuals matched by type; a branch leaves the slots of others' residuals empty. A slot that
  every branch fills with the same known operand is that operand, not a cond output:
  `res_src[i]` is its index among the known operands, or None.
  """
  per_branch = _per_distinct(branches, lambda b: ad.partial_eval_jaxpr(b, list(ops_uk))[2])
  out_uk = [any(u) for u in zip(*per_branch)]
  splits = _per_distinct(branches,
                         lambda b: ad.partial_eval_jaxpr(b, list(ops_uk), instantiate=out_uk))
  res_avals = [unk.in_avals[:len(fwd)] for _, unk, _, fwd in splits]
  all_res, slots = _merge_residuals(res_avals)
  res_src = []
  for i in range(len(all_res)):
    srcs = {fwd[sl.index(i)] if i in sl else None for (_, _, _, fwd), sl in zip(splits, slots)}
    res_src.append(srcs.pop() if len(srcs) == 1 else None)
  n_known_out = len(out_uk) - sum(out_uk)
  known = tuple(_known_with_residuals(k, fwd, all_res, sl, n_known_out, res_src)
                for (k, _, _, fwd), sl in zip(splits, slots))
  unknown = tuple(_unknown_with_residuals(u, all_res, sl)
                  for (_, u, _, _), sl in zip(splits, slots))
  return known, unknown, out_uk, res_src


def _merge_residuals(res_avals):
  """One residual list for all branches: the i-th residual of a type in a branch shares the
  slot of the i-th residual of that type in every other branch. Returns (avals, slots), with
  slots[b][i] the slot of branch b's residual i."""
  all_avals, slot_of, slots = [], {}, []
  for avals in res_avals:
    seen: dict = {}
    mine = []
    for a in avals:
      key = (a.shape, a.dtype, a.weak_type)
      tag = (key, seen.get(key, 0))
      seen[key] = tag[1] + 1
      if tag not in slot_of:
        slot_of[tag] = len(all_avals)
        all_avals.append(a)
      mine.append(slot_of[tag])
    slots.append(mine)
  return all_avals, slots


def _known_with_residuals(known, res_fwd, all_res, slots, n_out, res_src):
  def fun(*args):
    outs = core.eval_jaxpr(known.jaxpr, known.consts, *args)
    computed = iter(outs[n_out:])
    mine = [args[f] if f is not None else next(computed) for f in res_fwd]
    res = [common.empty_like_aval(a) if src is None else None
           for a, src in zip(all_res, res_src)]
    for s, r in zip(slots, mine):
      res[s] = r
    return list(outs[:n_out]) + [r for r, src in zip(res, res_src) if src is None]
  # Known work no output needs (a branch's dead code) is dropped first, as JAX's split does.
  known = core.ClosedJaxpr(core.dce_jaxpr(known.jaxpr, [True] * len(known.out_avals), True)[0],
                           known.consts)
  return _trace_closed(fun, known.in_avals)


def _unknown_with_residuals(unknown, all_res, slots):
  j = unknown.jaxpr
  res_vars = [core.Var(a) for a in all_res]
  for s, v in zip(slots, j.invars):
    res_vars[s] = v
  invars = res_vars + j.invars[len(slots):]
  return core.ClosedJaxpr(core.Jaxpr(j.constvars, invars, j.outvars, j.eqns, j.debug_info),
                          unknown.consts)


def _trace_closed(fun, in_avals):
  jaxpr, consts = tracing.trace_to_jaxpr(fun, list(in_avals))
  return core.ClosedJaxpr(jaxpr, consts)


def _cond_transpose(cts, index, *ops, branches, **params):
  if ad.is_undefined(index):
    raise ValueError("cond: cannot transpose with respect to the branch index")
  linear = tuple(ad.is_undefined(x) for x in ops)
  ct_nz = tuple(_nonzero(ct) for ct in cts)
  transposed, keep = core.memo(branches, ("transpose", linear, ct_nz),
                               lambda: _transpose_branches(branches, list(linear), list(ct_nz)))
  res = [x for x, lin in zip(ops, linear) if not lin]
  outs = iter(cond_p.bind(index, *res, *[ct for ct, nz in zip(cts, ct_nz) if nz],
                          branches=transposed, **params) if any(keep) else ())
  kept = iter(keep)
  return [None] + [(next(outs) if next(kept) else None) if lin else None for lin in linear]


def _transpose_branches(branches, linear, ct_nz):
  """Transposed branches returning only the cotangents some branch makes (the others are
  symbolic zeros outside the cond, as in JAX), and which linear inputs those are."""
  def zeros_of(b):
    zeros: list = []
    ad.transpose_jaxpr(b, linear, ct_nz, zeros=zeros)
    return zeros
  keep = [not all(z) for z in zip(*_per_distinct(branches, zeros_of))]
  return tuple(_per_distinct(branches, lambda b: ad.transpose_jaxpr(b, linear, ct_nz,
                                                                    keep=keep))), keep


def _cond_dce(eqn, used):
  """The cond computing only its `used` outputs: every branch pruned to them, taking the
  operands any branch still reads (none used and no effects: no equation)."""
  if not any(used) and not core.has_effects(eqn):
    return None
  branches = eqn.params["branches"]
  used_in = [any(u) for u in zip(*_per_distinct(
      branches, lambda b: core.dce_jaxpr(b.jaxpr, used)[1]))]
  pruned = _per_distinct(branches, lambda b: core.ClosedJaxpr(
      core.dce_jaxpr(b.jaxpr, used, used_in)[0], b.consts))
  index, *ops = eqn.invars
  return core.JaxprEqn([index] + [v for v, u in zip(ops, used_in) if u],
                       [v for v, u in zip(eqn.outvars, used) if u], eqn.primitive,
                       dict(eqn.params, branches=tuple(pruned)), eqn.source_info, eqn.traceback)


cond_p.def_jvp(_cond_jvp)
cond_p.def_partial_eval(_cond_partial_eval)
cond_p.def_transpose(_cond_transpose)
cond_p.def_dce(_cond_dce)


# ---- batching -----------------------------------------------------------------------------
def _cond_batch(axis_data, args, dims, *, branches, **params):
  index, *ops = args
  index_dim, *op_dims = dims
  if index_dim is not None:
    return _cond_batch_select(axis_data, args, dims, branches)
  # One index for all examples: batch the branches (their batched outputs at axis 0).
  ops = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(ops, op_dims)]
  in_dims = tuple(None if d is None else 0 for d in op_dims)
  per_branch = _per_distinct(
      branches, lambda b: batching.batch_jaxpr(b, axis_data, in_dims, False)[1])
  out_bat = [any(d is not None for d in ds) for ds in zip(*per_branch)]
  batched = tuple(_per_distinct(
      branches, lambda b: batching.batch_jaxpr(b, axis_data, in_dims, out_bat)[0]))
  outs = cond_p.bind(index, *ops, branches=batched, **params)
  return outs, [0 if b else None for b in out_bat]


def _cond_batch_select(axis_data, args, dims, branches):
  # One index per example: every branch runs on every example and a select_n picks the results
  # (as JAX does). Each branch sees the operands of the examples it does not serve through
  # stop_gradient, so that their (unselected) derivatives cannot reach the operands.
  size = axis_data.size
  index, *ops = [batching.bdim_at_front(x, d, size) for x, d in zip(args, dims)]
  in_dims = (0,) * len(ops)
  batched = _per_distinct(branches, lambda b: batching.batch_jaxpr(b, axis_data, in_dims,
                                                                   True)[0])
  branch_outs = []
  for i, b in enumerate(batched):
    pred = lax.eq(index, np.int32(i))
    ops_i = [_bcast_select_n(pred, lax.stop_gradient(x), x) for x in ops]
    branch_outs.append(core.eval_jaxpr(b.jaxpr, b.consts, *ops_i))
  outs = [_bcast_select_n(index, *cases) for cases in zip(*branch_outs)]
  return outs, [0] * len(outs)


def _bcast_select_n(which, *cases):
  shape = core.get_aval(cases[0]).shape
  if core.get_aval(which).ndim != len(shape):
    which = shape_ops.broadcast_in_dim(which, shape, tuple(range(core.get_aval(which).ndim)))
  return lax.select_n(which, *cases)


cond_p.def_batch_axis(_cond_batch)


# ---- the API ----------------------------------------------------------------------------------
def cond(pred, true_fun, false_fun, *operands, operand=_no_operand):
  """Apply `true_fun(*operands)` if `pred` is true, else `false_fun(*operands)`.

  Both branches are traced; only one runs. `pred` is a boolean or numeric scalar (nonzero
  means true). The branches must return the same pytree structure with equal types.

  Example:
    >>> lax.cond(x > 0, lambda x: x, lambda x: -x, x)
  """
  if not (callable(true_fun) and callable(false_fun)):
    # The old form cond(pred, true_operand, true_fun, false_operand, false_fun).
    if callable(false_fun) and len(operands) == 2 and callable(operands[1]):
      x_true, f_true, x_false, f_false = true_fun, false_fun, *operands
      return cond(pred, lambda x, _: f_true(x), lambda _, x: f_false(x), x_true, x_false)
    raise TypeError("lax.cond: true_fun and false_fun arguments should be callable.")
  operands = _operands(operands, operand)
  if pred is None:
    raise TypeError("cond predicate is None")
  if isinstance(pred, Sequence) or np.ndim(pred) != 0:
    raise TypeError(f"Pred must be a scalar, got {pred} of "
                    + (f"type {type(pred)}" if isinstance(pred, Sequence)
                       else f"shape {np.shape(pred)}."))
  try:
    pred_dtype = dtypes.result_type(pred)
  except TypeError as err:
    raise TypeError(f"Pred type must be either boolean or number, got {pred}.") from err
  if pred_dtype.kind != "b":
    if pred_dtype.kind not in "iuf":
      raise TypeError(f"Pred type must be either boolean or number, got {pred_dtype}.")
    pred = pred != 0
  if config.jax_disable_jit and not isinstance(pred, Tracer):
    return true_fun(*operands) if pred else false_fun(*operands)

  args, in_tree = tree_flatten(operands)
  avals = tuple(core.get_aval(a) for a in args)
  traced = [common.trace_body(f, in_tree, avals) for f in (true_fun, false_fun)]
  _check_branch_outputs("cond", "true_fun", "false_fun", true_fun, false_fun, *traced)
  (true_jaxpr, false_jaxpr), consts = common.merge_consts(traced)
  index = lax.convert_element_type(pred, np.int32)
  return _bind_cond(index, [false_jaxpr, true_jaxpr], consts, args, traced[0].out_tree)


def switch(index, branches, *operands, operand=_no_operand):
  """Apply `branches[index](*operands)`; `index` is clamped into range.

  Example:
    >>> lax.switch(i, [jnp.sin, jnp.cos, jnp.tanh], x)
  """
  if not all(callable(b) for b in branches):
    raise TypeError("lax.switch: branches argument should be a sequence of callables.")
  operands = _operands(operands, operand)
  if len(np.shape(index)) != 0:
    raise TypeError(f"Branch index must be scalar, got {index} of shape {np.shape(index)}.")
  try:
    index_dtype = dtypes.result_type(index)
  except TypeError as err:
    raise TypeError(f"Index type must be an integer, got {index}.") from err
  if index_dtype.kind not in "iu":
    raise TypeError(f"Index type must be an integer, got {index} as {index_dtype}")
  branches = tuple(branches)
  if not branches:
    raise ValueError("Empty branch sequence")
  if len(branches) == 1:
    return branches[0](*operands)
  index = lax.convert_element_type(index, np.int32)
  index = lax.clamp(np.array(0, np.int32), index, np.array(len(branches) - 1, np.int32))
  if config.jax_disable_jit and not isinstance(index, Tracer):
    return branches[int(np.asarray(index))](*operands)

  return switch_traced(index, branches, operands)


def switch_traced(index, branches, operands, **params):
  """A `cond` of the traced `branches` on `operands` (a tuple) at the int32 `index`; `params`
  are further cond params (`branches_platforms`)."""
  args, in_tree = tree_flatten(operands)
  avals = tuple(core.get_aval(a) for a in args)
  traced = [common.trace_body(f, in_tree, avals) for f in branches]
  for i in range(1, len(branches)):
    _check_branch_outputs("switch", "branch 0", f"branch{i}", branches[0], branches[i],
                          traced[0], traced[i])
  jaxprs, consts = common.merge_consts(traced)
  return _bind_cond(index, jaxprs, consts, args, traced[0].out_tree, **params)


# The platform arrax compiles for (it runs on the CPU).
_PLATFORM = "cpu"


def platform_branch(branches_platforms, what):
  """The index of the branch for the platform compiled for: the one whose platforms include
  it, else the default (None) one."""
  default = None
  for i, platforms in enumerate(branches_platforms):
    if platforms is None:
      default = i
    elif _PLATFORM in platforms:
      return i
  if default is None:
    raise NotImplementedError(f"MLIR translation rule for primitive '{what}' not found for "
                              f"platform {_PLATFORM}")
  return default


def _operands(operands, operand):
  if operand is _no_operand:
    return operands
  if operands:
    raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                    f"passed, got operand={operand!r} and positional operands {operands}")
  return (operand,)


def _bind_cond(index, jaxprs, consts, args, out_tree, **params):
  # Outputs that every branch returns unchanged from the same input are not cond results.
  fwds = [common.forwarding(j.jaxpr) for j in jaxprs]
  in_fwd = [f[0] if len(set(f)) == 1 else None for f in zip(*fwds)]
  keep = [f is None for f in in_fwd]
  pruned: dict[int, core.ClosedJaxpr] = {}
  for j in jaxprs:
    if id(j) not in pruned:
      pruned[id(j)] = common.prune_outputs(j, keep)
  branches = tuple(pruned[id(j)] for j in jaxprs)
  outs = iter(cond_p.bind(index, *consts, *args, branches=branches, **params))
  inputs = [*consts, *args]
  flat = [next(outs) if f is None else common.as_array(inputs[f]) for f in in_fwd]
  return tree_unflatten(out_tree, flat)


def _check_branch_outputs(api, name1, name2, f1, f2, t1, t2):
  info = (f"{name1} is {common.fun_sourceinfo(f1)}\n{name2} is {common.fun_sourceinfo(f2)}\n\n")
  if t1.out_tree != t2.out_tree:
    diffs = [f"{name1} output{_at(p)} is a {a} but {name2} output{_at(p)} is a {b}, so {why}"
             for p, a, b, why in common.structure_differences(
                 common.leaves_like(t1.out_tree), common.leaves_like(t2.out_tree))]
    if not diffs:
      return
    raise TypeError(
        f"{api} branch outputs must have the same pytree structure, but they differ:\n\n"
        f"{info}{common.bullet_list(diffs, capital=False)}\nRevise {name1} and/or {name2} so "
        "that they have the same pytree structure.")
  paths = common.leaf_paths(t1.out_tree)
  diffs = [f"the output of {name1}{_at(p)} has type {a.str_short()} but the corresponding "
           f"output of {name2} has type {b.str_short()}{type_mismatch_details(a, b)}"
           for p, a, b in zip(paths, t1.out_avals, t2.out_avals) if not common.typematch(a, b)]
  if diffs:
    fixes = [f"applying `jax.lax.pcast(..., {tuple(a1.vma - a2.vma)}, to='varying')` to the "
             f"output of {n}{_at(p)}"
             for p, a, b in zip(paths, t1.out_avals, t2.out_avals)
             for n, a1, a2 in [(name1, b, a), (name2, a, b)]
             if not common.typematch(a1, a2) and getattr(a2, "vma", frozenset()) - getattr(
                 a1, "vma", frozenset())]
    raise TypeError(
        f"{api} branches must have equal output types but they differ.\n\n{info}"
        f"{common.bullet_list(diffs)}\n{common.pcast_hint(fixes)}Revise {name1} and/or "
        f"{name2} so that all output types match.")


def _at(path):
  return f" at path {keystr(path)}" if path else ""
