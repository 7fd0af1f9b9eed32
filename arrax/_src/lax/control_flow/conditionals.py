"""cond and switch: the `cond` primitive, holding one closed jaxpr per branch.

`cond_p` takes the int32 branch index first, then the operands every branch receives (the
branches' closed-over values first, then the user's operands); its param `branches` is a tuple
of ClosedJaxprs that all have the same input and output types. It lowers to `stablehlo.case`.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import core, dtypes, mlir
from arrax._src.config import config
from arrax._src.core import Tracer
from arrax._src.lax import lax
from arrax._src.lax.control_flow import common
from arrax._src.tree_util import keystr, tree_flatten, tree_unflatten

__all__ = ["cond", "switch", "cond_p"]

_no_operand = object()


# ---- the primitive --------------------------------------------------------------------------
cond_p = core.Primitive("cond")
cond_p.multiple_results = True


def _cond_abstract_eval(index, *avals, branches):
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


def _cond_lowering(ctx, index, *args, branches):
  out_types = [mlir.aval_to_ir_type(a) for a in ctx.avals_out]
  case = hlo.CaseOp(out_types, index, len(branches))
  for region, branch in zip(case.regions, branches):
    block = region.blocks.append()
    with ir.InsertionPoint(block):
      hlo.return_(common.lower_closed(ctx.module_context, branch, args))
  return list(case.results)


cond_p.abstract_eval = _cond_abstract_eval
cond_p.lowering = _cond_lowering


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

  args, in_tree = tree_flatten(operands)
  avals = tuple(core.get_aval(a) for a in args)
  traced = [common.trace_body(f, in_tree, avals) for f in branches]
  for i in range(1, len(branches)):
    _check_branch_outputs("switch", "branch 0", f"branch{i}", branches[0], branches[i],
                          traced[0], traced[i])
  jaxprs, consts = common.merge_consts(traced)
  return _bind_cond(index, jaxprs, consts, args, traced[0].out_tree)


def _operands(operands, operand):
  if operand is _no_operand:
    return operands
  if operands:
    raise TypeError("if 'operand' keyword is passed then no positional operands can be "
                    f"passed, got operand={operand!r} and positional operands {operands}")
  return (operand,)


def _bind_cond(index, jaxprs, consts, args, out_tree):
  # Outputs that every branch returns unchanged from the same input are not cond results.
  fwds = [common.forwarding(j.jaxpr) for j in jaxprs]
  in_fwd = [f[0] if len(set(f)) == 1 else None for f in zip(*fwds)]
  keep = [f is None for f in in_fwd]
  pruned: dict[int, core.ClosedJaxpr] = {}
  for j in jaxprs:
    if id(j) not in pruned:
      pruned[id(j)] = common.prune_outputs(j, keep)
  branches = tuple(pruned[id(j)] for j in jaxprs)
  outs = iter(cond_p.bind(index, *consts, *args, branches=branches))
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
           f"output of {name2} has type {b.str_short()}{common.mismatch_extra(a, b)}"
           for p, a, b in zip(paths, t1.out_avals, t2.out_avals) if not common.typematch(a, b)]
  if diffs:
    raise TypeError(
        f"{api} branches must have equal output types but they differ.\n\n{info}"
        f"{common.bullet_list(diffs)}\nRevise {name1} and/or {name2} so that all output types "
        "match.")


def _at(path):
  return f" at path {keystr(path)}" if path else ""
