"""`custom_vjp.defvjp(..., optimize_remat=True)`: the fwd rule run as one `remat_opt` equation.

`remat_opt_p` holds the fwd rule's jaxpr (inputs: constants, then primals; outputs: the
`num_res` residuals, then the primal outputs) and a thunk tracing the primal function. When
dead-code elimination finds its residuals unused (the forward pass of a rematerialized
computation, whose backward pass recomputes them), the equation becomes a `closed_call` of the
primal function, so the forward pass does not pay for the fwd rule's extra work. Its JVP and
batching rules transform both jaxprs; it has no transpose (no higher-order AD), as in JAX.
"""
from __future__ import annotations

import functools

from arrax._src import ad, batching, core, mlir
from arrax._src.call import closed_call_p
from arrax._src.tracing import consts_as_inputs, trace_to_jaxpr
from arrax._src.tree_util import tree_flatten, tree_unflatten

remat_opt_p = core.Primitive("remat_opt")
remat_opt_p.multiple_results = True


def _closed_no_consts(jaxpr, consts):
  """(a ClosedJaxpr taking `consts` as its leading inputs, consts)."""
  return core.ClosedJaxpr(consts_as_inputs(jaxpr), []), list(consts)


def _memoize(thunk):
  """`thunk`, called at most once. (Named as JAX's, whose jaxprs print such thunks as
  `<function _memoize.<locals>.memoized ...>`.)"""
  box = []

  def memoized():
    if not box:
      box.append(thunk())
    return box[0]
  return memoized


def remat_opt_fwd(fun, fwd):
  """A fwd rule (`fwd(*args) -> (out, residuals)`, pytrees) binding `remat_opt_p`; `fun` is
  the primal function it stands in for."""
  @functools.wraps(fwd)
  def wrapped(*args):
    leaves, in_tree = tree_flatten(args)
    avals = [core.get_aval(x) for x in leaves]
    trees = {}

    def flat_fwd(*xs):
      out, res = fwd(*tree_unflatten(in_tree, xs))
      out_leaves, trees["out"] = tree_flatten(out)
      res_leaves, trees["res"] = tree_flatten(res)
      return [*res_leaves, *out_leaves]

    jaxpr, consts = trace_to_jaxpr(flat_fwd, avals)
    # Residuals that are inputs are passed on, not computed (JAX's forwarding).
    n_res_all = trees["res"].num_leaves
    arg_pos = {v: i for i, v in enumerate(jaxpr.invars)}
    fwds = [arg_pos.get(v) if type(v) is core.Var else None for v in jaxpr.outvars[:n_res_all]]
    outvars = ([v for v, f in zip(jaxpr.outvars, fwds) if f is None]
               + jaxpr.outvars[n_res_all:])
    jaxpr = core.Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, jaxpr.eqns, jaxpr.debug_info)
    fwd_closed, consts = _closed_no_consts(jaxpr, consts)

    @_memoize
    def fun_jaxpr_thunk():
      j, c = trace_to_jaxpr(lambda *xs: tree_flatten(fun(*tree_unflatten(in_tree, xs)))[0],
                            avals)
      return j, tuple(c)

    num_res = sum(f is None for f in fwds)
    outs = remat_opt_p.bind(*consts, *leaves, num_consts=len(consts), num_res=num_res,
                            fwd_jaxpr=fwd_closed, fun_jaxpr_thunk=fun_jaxpr_thunk)
    res_it = iter(outs[:num_res])
    res = [next(res_it) if f is None else leaves[f] for f in fwds]
    return (tree_unflatten(trees["out"], outs[num_res:]), tree_unflatten(trees["res"], res))
  return wrapped


def _impl(*args, fwd_jaxpr, **_):
  return core.eval_jaxpr(fwd_jaxpr.jaxpr, fwd_jaxpr.consts, *args)


remat_opt_p.def_impl(_impl)
remat_opt_p.def_abstract_eval(lambda *avals, fwd_jaxpr, **_: list(fwd_jaxpr.out_avals))


@remat_opt_p.def_lowering
def _lowering(ctx, *args, fwd_jaxpr, **_):
  consts = [mlir.ir_constant(c) for c in fwd_jaxpr.consts]
  return mlir.jaxpr_subcomp(ctx.module_context, fwd_jaxpr.jaxpr, consts, list(args))


@remat_opt_p.def_batch_axis
def _batch(axis_data, args, dims, *, num_consts, num_res, fwd_jaxpr, fun_jaxpr_thunk):
  batched, out_dims = batching.batch_jaxpr(fwd_jaxpr, axis_data, dims, False)
  batched, extra = _closed_no_consts(batched.jaxpr, batched.consts)

  @_memoize
  def batched_fun_thunk():
    j, c = fun_jaxpr_thunk()
    b, _ = batching.batch_jaxpr(core.ClosedJaxpr(j, list(c)), axis_data, dims[num_consts:],
                                out_dims[num_res:])
    return b.jaxpr, tuple(b.consts)

  outs = remat_opt_p.bind(*extra, *args, num_consts=num_consts + len(extra), num_res=num_res,
                          fwd_jaxpr=batched, fun_jaxpr_thunk=batched_fun_thunk)
  return outs, out_dims


def _jvp_reordered(closed, num_consts, num_res):
  """The JVP of `closed` (every input differentiated, every tangent output instantiated) with
  inputs (consts, const tangents, primals, tangents) and outputs (residuals, their tangents,
  outputs, their tangents)."""
  jvp_closed, _ = ad.jvp_jaxpr(closed, [True] * len(closed.in_avals), instantiate=True)
  n_in, n_out = len(closed.in_avals), len(closed.out_avals)

  def reordered(*xs):
    consts, consts_dot = xs[:num_consts], xs[num_consts:2 * num_consts]
    primals, tangents = xs[2 * num_consts:num_consts + n_in], xs[num_consts + n_in:]
    outs = core.eval_jaxpr(jvp_closed.jaxpr, jvp_closed.consts, *consts, *primals, *consts_dot,
                           *tangents)
    p, t = outs[:n_out], outs[n_out:]
    return [*p[:num_res], *t[:num_res], *p[num_res:], *t[num_res:]]

  in_avals = list(closed.in_avals)
  t_avals = [ad.tangent_aval(a) for a in in_avals]
  avals = (in_avals[:num_consts] + t_avals[:num_consts] + in_avals[num_consts:]
           + t_avals[num_consts:])
  jaxpr, consts = trace_to_jaxpr(reordered, avals)
  return _closed_no_consts(jaxpr, consts)


@remat_opt_p.def_jvp
def _jvp(primals, tangents, *, num_consts, num_res, fwd_jaxpr, fun_jaxpr_thunk):
  tangents = [ad.instantiate(t) for t in tangents]
  jvp_closed, extra = _jvp_reordered(fwd_jaxpr, num_consts, num_res)
  n_args = len(primals) - num_consts

  @_memoize
  def fun_jvp_thunk():
    j, c = fun_jaxpr_thunk()
    jc, _ = ad.jvp_jaxpr(core.ClosedJaxpr(j, list(c)), [True] * n_args, instantiate=True)
    return jc.jaxpr, tuple(jc.consts)

  outs = remat_opt_p.bind(*extra, *primals[:num_consts], *tangents[:num_consts],
                          *primals[num_consts:], *tangents[num_consts:],
                          num_consts=len(extra) + 2 * num_consts, num_res=2 * num_res,
                          fwd_jaxpr=jvp_closed, fun_jaxpr_thunk=fun_jvp_thunk)
  n_out = len(fwd_jaxpr.out_avals) - num_res
  res, res_dot = outs[:num_res], outs[num_res:2 * num_res]
  out, out_dot = outs[2 * num_res:2 * num_res + n_out], outs[2 * num_res + n_out:]
  return [*res, *out], [*res_dot, *out_dot]


@remat_opt_p.def_transpose
def _transpose(cts, *args, **params):
  raise NotImplementedError("remat optimization for custom_vjp does not support higher-order AD")


@remat_opt_p.def_dce
def _dce(eqn, used):
  """Residuals used: the fwd jaxpr cut to the used outputs. None used: a closed_call of the
  primal function computing the used outputs."""
  if not any(used) and not core.has_effects(eqn):
    return None
  params = eqn.params
  num_consts, num_res = params["num_consts"], params["num_res"]
  outvars = [v for v, u in zip(eqn.outvars, used) if u]
  if any(used[:num_res]):
    keep = [False] * num_consts + [True] * (len(eqn.invars) - num_consts)
    jaxpr, used_in = core.dce_jaxpr(params["fwd_jaxpr"].jaxpr, used, keep)
    new_params = dict(params, fwd_jaxpr=core.ClosedJaxpr(jaxpr, params["fwd_jaxpr"].consts),
                      num_consts=sum(used_in[:num_consts]), num_res=sum(used[:num_res]))
    return core.JaxprEqn([v for v, u in zip(eqn.invars, used_in) if u], outvars, remat_opt_p,
                         new_params, eqn.source_info, eqn.traceback)
  fun_jaxpr, consts = params["fun_jaxpr_thunk"]()
  jaxpr, used_in = core.dce_jaxpr(fun_jaxpr, used[num_res:])
  args = eqn.invars[num_consts:]
  return core.JaxprEqn([v for v, u in zip(args, used_in) if u], outvars, closed_call_p,
                       {"call_jaxpr": core.ClosedJaxpr(jaxpr, list(consts))}, eqn.source_info,
                       eqn.traceback)
