"""checkpoint / remat: recompute intermediate values on the backward pass instead of saving them.

`checkpoint(f)` traces `f` to a jaxpr and binds the primitive `remat2` (JAX's name) holding it.
Its rules:

* jvp: a remat2 of the JVP jaxpr.
* partial evaluation (linearize / grad): the jaxpr is split into a known part, which runs now
  outside the remat, and an unknown part, recorded as a `remat2[differentiated=True]` equation.
  Which known intermediates the unknown part may take as residuals is the `policy`'s choice,
  asked per equation as `policy(prim, *avals, **params)`: saveable ones are passed over, the
  others are recomputed inside the recorded equation (from their own inputs, recursively).
  Saved residuals that the known part also uses go through `reduce_precision` as in JAX, so
  XLA's excess precision cannot make the forward and backward values differ.
* transpose: a remat2 of the transposed jaxpr (the recomputation runs inside it).
* batching: a remat2 of the batched jaxpr.
Lowered, the jaxpr is inlined; a differentiated remat puts its inputs behind an
optimization barrier (`prevent_cse`) so XLA does not merge the recomputation with the forward.
"""
from __future__ import annotations

import collections.abc
import dataclasses
import functools
import logging
import types
import typing

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, api_util, core, dtypes, mlir, source_info_util, tracing
from arrax._src.config import config
from arrax._src.ad import Zero
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten
from arrax._src import batching
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit_p
from arrax._src.lax.dot import dot_general_p
from arrax._src.lax.elementwise import reduce_precision_p
from arrax._src.tree_util import tree_broadcast

logger = logging.getLogger(__name__)

__all__ = ["checkpoint", "remat", "checkpoint_policies", "checkpoint_name", "remat_p",
           "name_p", "Offloadable", "Recompute", "Saveable"]


# ---- policies -----------------------------------------------------------------------------------
class RecomputeType:
  """The type of `Recompute`: a policy's answer that a value is recomputed."""


Recompute = RecomputeType()


class SaveableType:
  """The type of `Saveable`: a policy's answer that a value is saved."""


Saveable = SaveableType()


class Offloadable(typing.NamedTuple):
  """A policy's answer that a value is saved, moved from memory kind `src` to `dst` meanwhile
  (arrax has one memory kind on CPU: the value is simply saved)."""
  src: str
  dst: str


def _policy_case(case):
  """A policy's answer as a bool (saved or not); JAX's TypeError for anything else."""
  if isinstance(case, bool):
    return case
  if isinstance(case, (SaveableType, Offloadable)):
    return True
  if isinstance(case, RecomputeType):
    return False
  msg = ("Value returned by a remat policy should be a bool or `ad_checkpoint.Recompute`, "
         "`ad_checkpoint.Saveable` or `ad_checkpoint.Offloadable(...)`. "
         f"Got {case} of type {type(case)}.")
  if case is Offloadable:
    msg += "Did you return `Offloadable` instead of an instantiated `Offloadable(...)`?"
  raise TypeError(msg)


def everything_saveable(*_, **__) -> bool:
  """Save every intermediate (as if not checkpointing at all)."""
  return True


def nothing_saveable(*_, **__) -> bool:
  """Save nothing: recompute every intermediate (the default of checkpoint)."""
  return False


@dataclasses.dataclass(frozen=True)
class DotsSaveable:
  """Save the results of matrix multiplications (only those without batch dimensions when
  `only_if_no_batch_dims`); recompute everything else."""
  only_if_no_batch_dims: bool

  def __call__(self, prim, *args, **params):
    if self.only_if_no_batch_dims:
      if prim is dot_general_p:
        (_, _), (lhs_b, rhs_b) = params["dimension_numbers"]
        return not lhs_b and not rhs_b
      return False
    return prim is dot_general_p or prim.name == "conv_general_dilated"


dots_saveable = DotsSaveable(False)
dots_with_no_batch_dims_saveable = DotsSaveable(True)

# `checkpoint_name(x, name)`: the identity, marking `x` for name-based policies.
name_p = core.Primitive("name")
name_p.def_abstract_eval(lambda x, *, name: x)
name_p.def_impl(lambda x, *, name: x)
name_p.def_lowering(lambda ctx, x, *, name: [x])
name_p.def_jvp(lambda primals, tangents, *, name: (name_p.bind(primals[0], name=name), tangents[0]))
name_p.def_batch(lambda args, dims, *, name: (name_p.bind(args[0], name=name), dims[0]))


def checkpoint_name(x, name):
  """The identity on the pytree `x`, naming its values `name` for checkpoint policies such as
  `save_only_these_names`."""
  return tree_map(lambda v: name_p.bind(v, name=name), x)


@dataclasses.dataclass(frozen=True)
class SaveOnlyTheseNames:
  saveable_names: frozenset

  def __call__(self, prim, *_, **params):
    return prim is name_p and params["name"] in self.saveable_names


@dataclasses.dataclass(frozen=True)
class SaveAnyNamesButThese:
  names: frozenset

  def __call__(self, prim, *_, **params):
    return prim is name_p and params["name"] not in self.names


def save_only_these_names(*names_which_can_be_saved):
  """Save only values named (with `checkpoint_name`) by one of the given names."""
  return SaveOnlyTheseNames(frozenset(names_which_can_be_saved))


def save_any_names_but_these(*names_not_to_save):
  """Save only named values, except those with the given names."""
  return SaveAnyNamesButThese(frozenset(names_not_to_save))


def save_anything_except_these_names(*names_not_to_save):
  """Save any values (as JAX 0.10.2 implements it: every value)."""
  return lambda *_, **__: True


def save_from_both_policies(policy_1, policy_2):
  """A value is saveable when either policy says so."""
  def policy(prim, *args, **params):
    out1 = policy_1(prim, *args, **params)
    out2 = policy_2(prim, *args, **params)
    if not (isinstance(out1, bool) and isinstance(out2, bool)):
      raise ValueError(f"The return value of the policies should be a boolean. Got: {out1} and "
                       f"{out2}. Please write a custom policy function directly, rather than "
                       "using this helper function.")
    return out1 or out2
  return policy


checkpoint_policies = types.SimpleNamespace(
    everything_saveable=everything_saveable,
    nothing_saveable=nothing_saveable,
    dots_saveable=dots_saveable,
    checkpoint_dots=dots_saveable,
    dots_with_no_batch_dims_saveable=dots_with_no_batch_dims_saveable,
    checkpoint_dots_with_no_batch_dims=dots_with_no_batch_dims_saveable,
    save_anything_except_these_names=save_anything_except_these_names,
    save_any_names_but_these=save_any_names_but_these,
    save_only_these_names=save_only_these_names,
    save_from_both_policies=save_from_both_policies)


# ---- jaxpr helpers ------------------------------------------------------------------------------
def _lift_consts(closed: core.ClosedJaxpr):
  """(open jaxpr taking the consts as leading inputs, consts)."""
  jaxpr = closed.jaxpr
  if not jaxpr.constvars:
    return jaxpr, []
  return tracing.consts_as_inputs(jaxpr), list(closed.consts)


def _closed(jaxpr: core.Jaxpr):
  return core.ClosedJaxpr(jaxpr, [])


def _cse_flags(prevent_cse, n):
  return list(prevent_cse) if isinstance(prevent_cse, tuple) else [prevent_cse] * n


def _cse_param(prevent_cse, flags):
  return tuple(flags) if isinstance(prevent_cse, tuple) else prevent_cse


# ---- the primitive ------------------------------------------------------------------------------
remat_p = core.Primitive("remat2")
remat_p.multiple_results = True
remat_p.def_abstract_eval(lambda *avals, jaxpr, **_: [v.aval for v in jaxpr.outvars])
remat_p.def_impl(lambda *args, jaxpr, **_: core.eval_jaxpr(jaxpr, [], *args))


def _remat_lowering(ctx, *args, jaxpr, prevent_cse, differentiated, policy):
  args = list(args)
  flags = _cse_flags(prevent_cse, len(args))
  if differentiated and any(flags):
    idx = [i for i, f in enumerate(flags) if f]
    barrier = hlo.OptimizationBarrierOp([args[i] for i in idx])
    for i, r in zip(idx, barrier.results):
      args[i] = r
  return mlir.jaxpr_subcomp(ctx.module_context, jaxpr, [], args)


remat_p.def_lowering(_remat_lowering)


def _remat_jvp(primals, tangents, *, jaxpr, prevent_cse, differentiated, policy):
  nonzeros = [type(t) is not Zero for t in tangents]
  jvp_closed, out_nz = ad.jvp_jaxpr(_closed(jaxpr), nonzeros, False)
  jvp_jaxpr, consts = _lift_consts(jvp_closed)
  nz_tangents = [t for t in tangents if type(t) is not Zero]
  flags = [False] * len(consts) + _cse_flags(prevent_cse, len(primals)) + [True] * len(
      nz_tangents)
  outs = remat_p.bind(*consts, *primals, *nz_tangents, jaxpr=jvp_jaxpr,
                      prevent_cse=_cse_param(prevent_cse, flags),
                      differentiated=differentiated, policy=policy)
  n = len(jaxpr.outvars)
  t_it = iter(outs[n:])
  t_out = [next(t_it) if nz else Zero(ad.tangent_aval(v.aval))
           for v, nz in zip(jaxpr.outvars, out_nz)]
  return outs[:n], t_out


remat_p.def_jvp(_remat_jvp)


def _prune_call(eqn, used_outs):
  """A jit / remat equation computing only its used outputs (and reading only what those
  need), or None when the primitive is not such a call."""
  prim = eqn.primitive
  if prim is jit_p:
    inner = eqn.params["jaxpr"]
    jaxpr, used_in = _dce(inner.jaxpr, used_outs)
    jaxpr = core.Jaxpr(jaxpr.constvars, [v for v, u in zip(jaxpr.invars, used_in) if u],
                       jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info)
    params = dict(eqn.params, jaxpr=core.ClosedJaxpr(jaxpr, inner.consts))
    params.pop("donated_invars", None)
  elif prim is remat_p:
    jaxpr, used_in = _dce(eqn.params["jaxpr"], used_outs)
    jaxpr = core.Jaxpr([], [v for v, u in zip(jaxpr.invars, used_in) if u], jaxpr.outvars,
                       jaxpr.eqns, jaxpr.debug_info)
    cse = eqn.params["prevent_cse"]
    flags = [f for f, u in zip(_cse_flags(cse, len(used_in)), used_in) if u]
    params = dict(eqn.params, jaxpr=jaxpr, prevent_cse=_cse_param(cse, flags))
  else:
    return None
  return core.JaxprEqn([v for v, u in zip(eqn.invars, used_in) if u],
                       [v for v, u in zip(eqn.outvars, used_outs) if u], prim, params,
                       eqn.source_info, eqn.traceback)


def _dce(jaxpr: core.Jaxpr, used_outputs):
  """Drop equations (and outputs of jit / remat calls) no used output depends on.

  Returns (jaxpr', used_invars)."""
  live = {v for v, u in zip(jaxpr.outvars, used_outputs) if u and type(v) is core.Var}
  kept = []
  for eqn in reversed(jaxpr.eqns):
    used = [type(v) is not core.DropVar and v in live for v in eqn.outvars]
    if not any(used) and not core.has_effects(eqn):   # effects (debug prints) are kept
      continue
    if not all(used):
      eqn = _prune_call(eqn, used) or eqn
    kept.append(eqn)
    live.update(v for v in eqn.invars if type(v) is core.Var)
  kept.reverse()
  outvars = [v for v, u in zip(jaxpr.outvars, used_outputs) if u]
  used_in = [v in live for v in jaxpr.invars]
  return core.Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, kept, jaxpr.debug_info), used_in


def _insert_reduce_precision(jaxpr: core.Jaxpr, res_vars):
  """Route each floating residual that other known equations also read through
  reduce_precision (both the residual and those readers then see the rounded value)."""
  read = {v for e in jaxpr.eqns for v in e.invars if type(v) is core.Var}
  invars, eqns = list(jaxpr.invars), list(jaxpr.eqns)
  for v in res_vars:
    if (type(v) is not core.Var or v not in read
        or not dtypes.issubdtype(v.aval.dtype, np.inexact)):
      continue
    info = dtypes.finfo(v.aval.dtype)
    params = dict(exponent_bits=int(info.nexp), mantissa_bits=int(info.nmant))
    new = core.Var(v.aval)
    if v in invars:
      invars[invars.index(v)] = new
      eqns.insert(0, core.JaxprEqn([new], [v], reduce_precision_p, params))
      continue
    i = next(k for k, e in enumerate(eqns) if v in e.outvars)
    eqn = eqns[i]
    if eqn.primitive is reduce_precision_p and eqn.params == params:
      continue
    eqns[i] = core.JaxprEqn(eqn.invars, [new if o is v else o for o in eqn.outvars],
                            eqn.primitive, eqn.params, eqn.source_info, eqn.traceback)
    eqns.insert(i + 1, core.JaxprEqn([new], [v], reduce_precision_p, params))
  return core.Jaxpr(jaxpr.constvars, invars, jaxpr.outvars, eqns, jaxpr.debug_info)


def _split_eqn(eqn, unknowns):
  """Partially evaluate one equation with mixed known/unknown inputs by its primitive's rule.

  Returns (known_closed, unknown_closed, out_unknowns, res_fwd) as ad.partial_eval_jaxpr.
  """
  invars = [core.Var(v.aval) for v in eqn.invars]
  outvars = [core.Var(v.aval) for v in eqn.outvars]
  one = core.Jaxpr([], invars, outvars, [core.JaxprEqn(invars, outvars, eqn.primitive,
                                                       eqn.params, eqn.source_info, eqn.traceback)])
  return ad.partial_eval_jaxpr(core.ClosedJaxpr(one, []), unknowns)


def _split_call(eqn, unk, policy, known_eqns, add_staged, unknown, consts, twin):
  """Split a jit / remat equation with mixed inputs by splitting its jaxpr with the same policy
  (as JAX's rule for calls): a known call computing the known outputs and the residuals, and
  a staged call from the residuals computing the unknown outputs and recomputing the known
  outputs the policy does not save (their staged twins). False for other primitives."""
  prim = eqn.primitive
  if prim is jit_p:
    inner = eqn.params["jaxpr"]
  elif prim is remat_p:
    inner = _closed(eqn.params["jaxpr"])
  else:
    return False
  known, staged, out_unk, used, known_inst = _split_by_policy(inner, unk, policy,
                                                              insert_rp=False, inst_out=True)
  n_res = len(staged.jaxpr.invars) - sum(used)
  res_vars = [core.Var(v.aval) for v in staged.jaxpr.invars[:n_res]]
  known_in = [v for v, u in zip(eqn.invars, unk) if not u]
  known_out = [v for v, u in zip(eqn.outvars, out_unk) if not u]
  staged_in = res_vars + [v for v, u in zip(eqn.invars, used) if u]
  twins = [core.Var(v.aval) for v, i in zip(known_out, known_inst) if i]
  staged_out = [v for v, u in zip(eqn.outvars, out_unk) if u] + twins
  twin.update(zip([v for v, i in zip(known_out, known_inst) if i], twins))
  if prim is jit_p:
    k_params = {k: v for k, v in eqn.params.items() if k != "donated_invars"}
    s_params = dict(k_params, jaxpr=staged)
    k_params["jaxpr"] = known
  else:
    k_jaxpr, k_consts = _lift_consts(known)
    s_jaxpr, s_consts = _lift_consts(staged)
    if k_consts or s_consts:   # closed-over arrays become constants of the outer jaxpr
      cvars = [core.Var(core.get_aval(c)) for c in k_consts + s_consts]
      consts.update(zip(cvars, k_consts + s_consts))
      known_in = cvars[:len(k_consts)] + known_in
      staged_in = cvars[len(k_consts):] + staged_in
    flags = _cse_flags(eqn.params["prevent_cse"], len(eqn.invars))
    k_flags = [False] * len(k_consts) + [f for f, u in zip(flags, unk) if not u]
    s_flags = [True] * (len(s_consts) + n_res) + [f for f, u in zip(flags, used) if u]
    k_params = dict(eqn.params, jaxpr=k_jaxpr,
                    prevent_cse=_cse_param(eqn.params["prevent_cse"], k_flags))
    s_params = dict(eqn.params, jaxpr=s_jaxpr, differentiated=True,
                    prevent_cse=_cse_param(eqn.params["prevent_cse"], s_flags))
  # The known call's residual outputs are saved (the inner split already applied the policy).
  known_eqns.append(core.JaxprEqn(known_in, known_out + res_vars, prim, k_params,
                                  eqn.source_info, eqn.traceback))
  add_staged(core.JaxprEqn(staged_in, staged_out, prim, s_params, eqn.source_info, eqn.traceback))
  return True


def _split_by_policy(closed: core.ClosedJaxpr, unknowns, policy, insert_rp=True,
                     inst_out=False):
  """Partially evaluate `closed` for the unknown inputs, recomputing what `policy` won't save.

  Equations with only known inputs run on the known side; those the policy does not let save
  their outputs are also copied to the staged side (recomputed there, if needed). Equations
  reading unknowns are staged; a primitive with its own partial-evaluation rule (jit, nested
  remat, ...) is first split by that rule. Known values the staged side reads become residuals
  (or, for known inputs, inputs of the staged jaxpr).

  Returns (known, staged, out_unknowns, staged_in_used), plus with `inst_out` the flags of the
  known outputs the staged jaxpr also recomputes (its extra trailing outputs):
    known:  (known inputs) -> (known outputs, residuals)
    staged: (residuals, the inputs i with staged_in_used[i], in order) -> unknown outputs
  """
  jaxpr = closed.jaxpr
  consts = dict(zip(jaxpr.constvars, closed.consts))
  alias: dict = {}

  def rd(v):
    while type(v) is core.Var and v in alias:
      v = alias[v]
    return v

  unknown = {v for v, u in zip(jaxpr.invars, unknowns) if u}
  known_eqns, staged_eqns = [], []
  twin: dict = {}   # known outputs of split calls -> their recomputed staged values

  def saveable(eqn):
    return _policy_case(policy(eqn.primitive, *[v.aval for v in eqn.invars], **eqn.params))

  def add_known(eqn):
    known_eqns.append(eqn)
    if not saveable(eqn):
      staged_eqns.append(eqn)   # recomputed on the staged side when needed

  def add_staged(eqn):
    staged_eqns.append(eqn)
    unknown.update(eqn.outvars)

  for eqn in jaxpr.eqns:
    invars = [rd(v) for v in eqn.invars]
    unk = [type(v) is core.Var and v in unknown for v in invars]
    eqn = core.JaxprEqn(invars, eqn.outvars, eqn.primitive, eqn.params, eqn.source_info, eqn.traceback)
    if not any(unk):
      add_known(eqn)
    elif all(unk) or eqn.primitive.partial_eval is None:
      add_staged(eqn)
    elif _split_call(eqn, unk, policy, known_eqns, add_staged, unknown, consts, twin):
      pass
    else:
      k_c, u_c, out_unk, res_fwd = _split_eqn(eqn, unk)
      consts.update(zip(k_c.jaxpr.constvars, k_c.consts))
      consts.update(zip(u_c.jaxpr.constvars, u_c.consts))
      kj, uj = k_c.jaxpr, u_c.jaxpr
      alias.update(zip(kj.invars, [v for v, u in zip(invars, unk) if not u]))
      for e in kj.eqns:
        add_known(core.JaxprEqn([rd(v) for v in e.invars], e.outvars, e.primitive, e.params,
                                e.source_info, e.traceback))
      n_known = len(out_unk) - sum(out_unk)
      k_res = iter(kj.outvars[n_known:])
      res_src = [kj.invars[f] if f is not None else next(k_res) for f in res_fwd]
      alias.update(zip(uj.invars[:len(res_fwd)], res_src))
      alias.update(zip(uj.invars[len(res_fwd):], [v for v, u in zip(invars, unk) if u]))
      for e in uj.eqns:
        add_staged(core.JaxprEqn([rd(v) for v in e.invars], e.outvars, e.primitive, e.params,
                                 e.source_info, e.traceback))
      k_it, u_it = iter(kj.outvars[:n_known]), iter(uj.outvars)
      for v, u in zip(eqn.outvars, out_unk):
        alias[v] = next(u_it) if u else next(k_it)
        if u:
          unknown.add(v)

  outvars = [rd(v) for v in jaxpr.outvars]
  out_unk = [type(v) is core.Var and v in unknown for v in outvars]
  recomputed = {v for e in staged_eqns for v in e.outvars}

  def tw(v):   # the staged side's value of v
    return twin.get(v, v) if type(v) is core.Var else v
  known_inst = [type(v) is core.Var and (v in recomputed or v in twin or v in jaxpr.invars)
                for v, u in zip(outvars, out_unk) if not u]
  staged_outs = [v for v, u in zip(outvars, out_unk) if u]
  if inst_out:
    staged_outs += [tw(v) for v, u in zip(outvars, out_unk) if not u and
                    type(v) is core.Var and (v in recomputed or v in twin or v in jaxpr.invars)]
  staged = core.Jaxpr([], [], staged_outs,
                      [core.JaxprEqn([tw(rd(v)) for v in e.invars], e.outvars, e.primitive,
                                     e.params, e.source_info, e.traceback) for e in staged_eqns])
  staged, _ = _dce(staged, [True] * len(staged.outvars))
  # What the staged equations read from outside themselves, in order of first use.
  defined, reads = set(), []
  for e in staged.eqns:
    for v in e.invars:
      if type(v) is core.Var and v not in defined and v not in reads:
        reads.append(v)
    defined.update(e.outvars)
  for v in staged.outvars:
    if type(v) is core.Var and v not in defined and v not in reads:
      reads.append(v)
  read_set = set(reads)
  inputs = set(jaxpr.invars)
  residuals = [v for v in reads if v not in inputs and v not in consts]
  staged_consts = [v for v in reads if v in consts]
  staged_in_used = [v in read_set for v in jaxpr.invars]
  staged_ins = [v for v in jaxpr.invars if v in read_set]
  staged = core.Jaxpr(staged_consts, residuals + staged_ins, staged.outvars, staged.eqns)
  known_outs = [v for v, u in zip(outvars, out_unk) if not u]
  known_in = [v for v, u in zip(jaxpr.invars, unknowns) if not u]
  known = core.Jaxpr([], known_in, known_outs + residuals, known_eqns)
  known, _ = _dce(known, [True] * len(known.outvars))
  if insert_rp:
    known = _insert_reduce_precision(known, residuals)
  # Consts the known equations read are closed over.
  k_reads = {v for e in known.eqns for v in e.invars if type(v) is core.Var}
  k_reads.update(v for v in known.outvars if type(v) is core.Var)
  k_consts = [v for v in consts if v in k_reads]
  known = core.Jaxpr(k_consts, known.invars, known.outvars, known.eqns)
  out = (core.ClosedJaxpr(known, [consts[v] for v in k_consts]),
         core.ClosedJaxpr(staged, [consts[v] for v in staged_consts]), out_unk, staged_in_used)
  return out + (known_inst,) if inst_out else out


def _log_residuals(jaxpr, known, unknowns, staged_in_used, n_known_out):
  """Log what a differentiated remat saves (WARNING with jax_log_checkpoint_residuals, else
  DEBUG), as JAX does: the inputs its recomputation reads and the intermediates it keeps."""
  level = logging.WARNING if config.jax_log_checkpoint_residuals else logging.DEBUG
  if not logger.isEnabledFor(level):
    return
  inputs = [v.aval.str_short() for v, u, used in zip(jaxpr.invars, unknowns, staged_in_used)
            if used and not u]
  made_by = {v: e for e in known.eqns for v in e.outvars}
  kept = []
  for v in known.outvars[n_known_out:]:
    eqn = made_by.get(v)
    src = ("from an input" if eqn is None else
           f"output of {eqn.primitive.name} from {source_info_util.summarize(eqn.source_info)}")
    kept += [v.aval.str_short(), src]
  logger.log(level, "remat-decorated function " + "saving inputs with shapes:\n" * bool(inputs)
             + "  %s\n" * len(inputs) + "and " * bool(inputs) * bool(kept)
             + "saving these intermediates:\n" * bool(kept) + "  %s from %s\n" * (len(kept) // 2),
             *inputs, *kept)


def _remat_partial_eval(trace, args, params):
  jaxpr, prevent_cse = params["jaxpr"], params["prevent_cse"]
  policy = params["policy"] or nothing_saveable
  unknowns = [trace.is_unknown(a) for a in args]
  known, staged, out_unk, staged_in_used = _split_by_policy(_closed(jaxpr), unknowns, policy)
  _log_residuals(jaxpr, known.jaxpr, unknowns, staged_in_used,
                 len(out_unk) - sum(out_unk))
  known_args = [a for a, u in zip(args, unknowns) if not u]
  with core.set_current_trace(trace.parent):
    known_outs = core.eval_jaxpr(known.jaxpr, known.consts, *known_args)
  n_known_out = len(out_unk) - sum(out_unk)
  res_vals = known_outs[n_known_out:]
  staged_jaxpr, staged_consts = _lift_consts(staged)
  staged_args = [*staged_consts, *res_vals] + [a for a, used in zip(args, staged_in_used) if used]
  flags = _cse_flags(prevent_cse, len(args))
  new_flags = ([True] * (len(staged_consts) + len(res_vals))
               + [f for f, used in zip(flags, staged_in_used) if used])
  new_params = dict(params, jaxpr=staged_jaxpr, differentiated=True,
                    prevent_cse=_cse_param(prevent_cse, new_flags))
  unk_outs = trace.record(remat_p, staged_args, new_params)
  k_it, u_it = iter(known_outs[:n_known_out]), iter(unk_outs)
  return [next(u_it) if u else next(k_it) for u in out_unk]


remat_p.def_partial_eval(_remat_partial_eval)


def _remat_transpose(cts, *args, jaxpr, prevent_cse, differentiated, policy):
  linear = [ad.is_undefined(a) for a in args]
  ct_nz = [type(ct) is not Zero for ct in cts]
  res_avals = [core.get_aval(a) for a, lin in zip(args, linear) if not lin]
  lin_avals = [a.aval for a, lin in zip(args, linear) if lin]
  ct_avals = [ad.ct_aval(v.aval) for v, nz in zip(jaxpr.outvars, ct_nz) if nz]
  n_res = len(res_avals)
  box = []

  def transposed(*xs):
    # As JAX: evaluate the non-linear part (the recomputation) first, by partial evaluation
    # with the linear inputs unknown, then transpose the linear part.
    nonlin, ct_it = list(xs[:n_res]), iter(xs[n_res:])
    known, lin_c, out_lin, res_fwd = ad.partial_eval_jaxpr(_closed(jaxpr), linear)
    known_outs = core.eval_jaxpr(known.jaxpr, known.consts, *nonlin)
    n_known = len(out_lin) - sum(out_lin)
    res_it = iter(known_outs[n_known:])
    res = [nonlin[f] if f is not None else next(res_it) for f in res_fwd]
    cts_full = [next(ct_it) if nz else Zero(ad.ct_aval(v.aval))
                for v, nz in zip(jaxpr.outvars, ct_nz)]
    cts_lin_out = [ct for ct, u in zip(cts_full, out_lin) if u]
    undefined = [ad.UndefinedPrimal(a) for a, lin in zip([v.aval for v in jaxpr.invars], linear)
                 if lin]
    cts_in = ad.backward_pass(lin_c.jaxpr, lin_c.consts, [*res, *undefined], cts_lin_out)
    cts_lin = cts_in[len(res):]
    box.append([type(ct) is Zero for ct in cts_lin])
    return [ct for ct in cts_lin if type(ct) is not Zero]

  del lin_avals
  t_closed = ad._trace_closed(transposed, res_avals + ct_avals)
  t_jaxpr, consts = _lift_consts(t_closed)
  in_zeros = box[0]
  flags = _cse_flags(prevent_cse, len(args))
  new_flags = ([False] * len(consts) + [f for f, lin in zip(flags, linear) if not lin]
               + [True] * sum(ct_nz))
  res = [a for a, lin in zip(args, linear) if not lin]
  outs = iter(remat_p.bind(*consts, *res, *[ct for ct in cts if type(ct) is not Zero],
                           jaxpr=t_jaxpr, prevent_cse=_cse_param(prevent_cse, new_flags),
                           differentiated=differentiated, policy=policy))
  z_it = iter(in_zeros)
  out = []
  for lin in linear:
    if not lin:
      out.append(None)
    else:
      out.append(None if next(z_it) else next(outs))
  return out


remat_p.def_transpose(_remat_transpose)


def _remat_batch(axis_data, args, dims, *, jaxpr, prevent_cse, differentiated, policy):
  if all(d is None for d in dims):
    outs = remat_p.bind(*args, jaxpr=jaxpr, prevent_cse=prevent_cse,
                        differentiated=differentiated, policy=policy)
    return outs, [None] * len(outs)
  batched, out_dims = batching.batch_jaxpr(_closed(jaxpr), axis_data, dims, False)
  b_jaxpr, consts = _lift_consts(batched)
  flags = [False] * len(consts) + _cse_flags(prevent_cse, len(args))
  outs = remat_p.bind(*consts, *args, jaxpr=b_jaxpr, prevent_cse=_cse_param(prevent_cse, flags),
                      differentiated=differentiated, policy=policy)
  return outs, out_dims


remat_p.def_batch_axis(_remat_batch)


# ---- the API ------------------------------------------------------------------------------------
class _Deprecated:
  def __repr__(self):
    return "<deprecated>"


_DEPRECATED = _Deprecated()


def checkpoint(fun, *, prevent_cse=True, policy=None, static_argnums=(), static_argnames=(),
               concrete=_DEPRECATED):
  """Make `fun` recompute its intermediate values when differentiated instead of storing them.

  `policy(prim, *avals, **params) -> bool` says which intermediates may be saved (see
  `checkpoint_policies`; default: none). `static_argnums` / `static_argnames` mark arguments
  that are Python values used for control flow.

  Example:
    >>> g = checkpoint(lambda x: jnp.sin(jnp.sin(x)))
    >>> grad(g)(1.0)
  """
  if concrete is not _DEPRECATED:
    raise NotImplementedError(
        "The `concrete` option to `jax.checkpoint` was deprecated in JAX v0.8.2, and removed in "
        "JAX v0.10.0. In its place please use `static_argnums`; for details refer to "
        "https://docs.jax.dev/en/latest/jep/11830-new-remat-checkpoint.html.")
  if isinstance(static_argnums, int):
    static_argnums = (static_argnums,)
  static_argnames = api_util.ensure_str_tuple(static_argnames)
  if isinstance(prevent_cse, collections.abc.Sequence):
    prevent_cse = tuple(prevent_cse)
  if not isinstance(prevent_cse, (tuple, bool)):
    raise TypeError(f"prevent_cse must be a bool or tuple of bools, got "
                    f"type(prevent_cse)={type(prevent_cse)}")

  @functools.wraps(fun)
  def fun_remat(*args, **kwargs):
    f, dyn_args = _static_argnums(fun, static_argnums, args)
    if static_argnames:
      static_kw = {k: v for k, v in kwargs.items() if k in static_argnames}
      kwargs = {k: v for k, v in kwargs.items() if k not in static_argnames}
      f = functools.partial(f, **static_kw) if static_kw else f
    leaves, in_tree = tree_flatten((tuple(dyn_args), kwargs))
    jaxpr, consts, out_tree = _trace(f, in_tree, leaves)
    if isinstance(prevent_cse, tuple):
      cse_args = (tuple(dyn_args), kwargs) if kwargs else tuple(dyn_args)
      cse = (False,) * len(consts) + tuple(tree_flatten(tree_broadcast(
          prevent_cse, cse_args, is_leaf=lambda x: x is None))[0])
    else:
      cse = prevent_cse
    outs = remat_p.bind(*consts, *leaves, jaxpr=jaxpr, prevent_cse=cse, differentiated=False,
                        policy=policy)
    return tree_unflatten(out_tree, outs)

  return fun_remat


def remat(fun, *, prevent_cse=True, policy=None, static_argnums=(), concrete=_DEPRECATED):
  """Alias of `checkpoint`."""
  return checkpoint(fun, prevent_cse=prevent_cse, policy=policy, static_argnums=static_argnums,
                    concrete=concrete)


def _static_argnums(fun, static_argnums, args):
  if not (type(static_argnums) is tuple and all(type(d) is int for d in static_argnums)):
    raise TypeError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` must be an "
                    f"int, tuple of ints or, bool, but got value {static_argnums}")
  n = len(args)
  if not all(-n <= d < n for d in static_argnums):
    raise ValueError("the `static_argnums` argument to `jax.checkpoint` / `jax.remat` can only "
                     "take integer values greater than or equal to `-len(args)` and less than "
                     f"`len(args)`, but got {static_argnums}, while `len(args)` = {n}")
  if not static_argnums:
    return fun, args
  static = frozenset(d % n for d in static_argnums)
  dyn = [x for i, x in enumerate(args) if i not in static]

  def f(*dyn_args, **kwargs):
    it = iter(dyn_args)
    full = [args[i] if i in static else next(it) for i in range(n)]
    return fun(*full, **kwargs)
  return f, dyn


def _trace(fun, in_tree, leaves):
  """Trace `fun` (pytree in/out): (open jaxpr taking the consts first, consts, out_tree)."""
  try:
    avals = [core.get_aval(x) for x in leaves]
  except TypeError as e:
    raise TypeError(f"{e}. Arguments of a checkpointed function must be arrays (or pytrees of "
                    "them); mark other arguments with `static_argnums`.") from None
  try:
    jaxpr, consts, out_tree = tracing.trace_pytree_fun(
        lambda args, kwargs: fun(*args, **kwargs), in_tree, avals)
  except ConcretizationTypeError as e:
    msg = e.args[0] if e.args else ""
    e.args = (msg + "\n\nConsider using the `static_argnums` parameter for `jax.remat` or "
              "`jax.checkpoint`. See the `jax.checkpoint` docstring and its example involving "
              "`static_argnums`:\nhttps://docs.jax.dev/en/latest/_autosummary/"
              "jax.checkpoint.html\n",)
    raise
  return tracing.consts_as_inputs(jaxpr), list(consts), out_tree
