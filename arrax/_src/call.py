"""JAX's call primitives `call_p` and `closed_call_p`: an equation calling a jaxpr.

They are bound as JAX binds them, with the function to call as a parameter:
`closed_call_p.bind(*args, subfuns=(fun,))` (`fun` a callable or linear_util WrappedFun taking
and returning flat lists). Eagerly the function just runs; under a transformation it is traced
to a jaxpr and the call is one equation holding it (`call_jaxpr`: a ClosedJaxpr for
`closed_call`, a Jaxpr for `call`), whose JVP, transpose, batching and partial evaluation are
calls of the transformed jaxpr, as in JAX. Values closed over by the function become leading
arguments of the call. Binding with `call_jaxpr=...` given (as a jaxpr's equation is re-bound)
skips the tracing.
"""
from __future__ import annotations

from arrax._src import ad, batching, core, mlir, tracing


class CallPrimitive(core.Primitive):
  """A primitive whose equations call the jaxpr in their `call_jaxpr` parameter."""
  multiple_results = True
  call_primitive = True
  closed = False          # whether `call_jaxpr` is a ClosedJaxpr (closed_call) or a Jaxpr

  def bind(self, *args, **params):
    subfuns = params.pop("subfuns", None)
    if subfuns is None:
      return super().bind(*args, **params)
    fun, = subfuns
    run = fun.call_wrapped if hasattr(fun, "call_wrapped") else fun
    if core.trace_ctx.trace is core.eval_trace:
      return list(run(*args))
    jaxpr, consts = tracing.trace_to_jaxpr(lambda *xs: list(run(*xs)),
                                           [core.get_aval(a) for a in args])
    closed = core.ClosedJaxpr(tracing.consts_as_inputs(jaxpr), [])
    return super().bind(*consts, *args, call_jaxpr=self._wrap(closed), **params)

  def _wrap(self, closed):
    """`call_jaxpr` of this primitive for `closed` (consts as leading arguments if open)."""
    if self.closed:
      return closed
    if closed.consts:
      raise ValueError("a `call` equation's jaxpr has no constants")
    return closed.jaxpr


def _closed(call_jaxpr) -> core.ClosedJaxpr:
  return call_jaxpr if isinstance(call_jaxpr, core.ClosedJaxpr) else core.ClosedJaxpr(
      call_jaxpr, [])


def _open(prim, closed, args):
  """(call_jaxpr, args) for binding `prim` on `closed`: consts become leading args of `call`."""
  if prim.closed or not closed.consts:
    return prim._wrap(closed), list(args)
  return tracing.consts_as_inputs(closed.jaxpr), [*closed.consts, *args]


def _rebind(prim, closed, args, **params):
  call_jaxpr, args = _open(prim, closed, args)
  return prim.bind(*args, call_jaxpr=call_jaxpr, **params)


def _impl(*args, call_jaxpr, **_):
  closed = _closed(call_jaxpr)
  return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)


def _abstract_eval(*avals, call_jaxpr, **_):
  return list(_closed(call_jaxpr).out_avals)


def core_call_lowering(ctx, *args, name="core_call", backend=None, call_jaxpr):
  """Lower a call equation to a private function holding `call_jaxpr` and a call of it."""
  del backend
  return mlir.call_subjaxpr(ctx, _closed(call_jaxpr), name, args)


def _make_jvp(prim):
  def jvp(primals, tangents, *, call_jaxpr, **params):
    closed = _closed(call_jaxpr)
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    jvp_closed, out_nz = ad.jvp_jaxpr(closed, nonzeros)
    outs = _rebind(prim, jvp_closed, [*primals, *[t for t in tangents if type(t) is not ad.Zero]],
                   **params)
    n = len(closed.out_avals)
    t_it = iter(outs[n:])
    return outs[:n], [next(t_it) if nz else ad.Zero(ad.tangent_aval(a))
                      for a, nz in zip(closed.out_avals, out_nz)]
  return jvp


def _make_partial_eval(prim):
  def partial_eval(trace, args, params):
    params = dict(params)
    closed = _closed(params.pop("call_jaxpr"))
    unknowns = [trace.is_unknown(a) for a in args]
    known, unknown, out_unk, res_fwd = ad.partial_eval_jaxpr(closed, unknowns)
    known_args = [a for a, u in zip(args, unknowns) if not u]
    with core.set_current_trace(trace.parent):
      known_outs = _rebind(prim, known, known_args, **params)
    n_known = len(out_unk) - sum(out_unk)
    res_it = iter(known_outs[n_known:])
    res = [next(res_it) if f is None else known_args[f] for f in res_fwd]
    call_jaxpr, unk_args = _open(prim, unknown, res + [a for a, u in zip(args, unknowns) if u])
    unk_outs = iter(trace.record(prim, unk_args, dict(params, call_jaxpr=call_jaxpr)))
    known_it = iter(known_outs[:n_known])
    return [next(unk_outs) if u else next(known_it) for u in out_unk]
  return partial_eval


def _make_transpose(prim):
  def transpose(cts, *args, call_jaxpr, **params):
    closed = _closed(call_jaxpr)
    linear = tuple(ad.is_undefined(a) for a in args)
    ct_nz = tuple(type(ct) is not ad.Zero for ct in cts)
    t_closed = ad.transpose_jaxpr(closed, linear, ct_nz)
    res = [a for a, lin in zip(args, linear) if not lin]
    outs = iter(_rebind(prim, t_closed, [*res, *[ct for ct in cts if type(ct) is not ad.Zero]],
                        **params))
    return [next(outs) if lin else None for lin in linear]
  return transpose


def _make_batch(prim):
  def batch(axis_data, args, dims, *, call_jaxpr, **params):
    batched, out_dims = batching.batch_jaxpr(_closed(call_jaxpr), axis_data, dims)
    return _rebind(prim, batched, args, **params), out_dims
  return batch


def dce_call_rule(used_outputs, eqn):
  """JAX's DCE rule of a call equation: (used inputs, the pruned equation or None)."""
  closed = _closed(eqn.params["call_jaxpr"])
  if not any(used_outputs) and not core.has_effects(eqn):
    return [False] * len(eqn.invars), None
  jaxpr, used_in = core.dce_jaxpr(closed.jaxpr, used_outputs)
  new = core.ClosedJaxpr(jaxpr, closed.consts)
  params = dict(eqn.params, call_jaxpr=new if eqn.primitive.closed else new.jaxpr)
  return used_in, core.JaxprEqn([v for v, u in zip(eqn.invars, used_in) if u],
                                [v for v, u in zip(eqn.outvars, used_outputs) if u],
                                eqn.primitive, params, eqn.source_info, eqn.traceback)


def _dce(eqn, used):
  return dce_call_rule(used, eqn)[1]


def _make(name, closed):
  prim = CallPrimitive(name)
  prim.closed = closed
  prim.def_impl(_impl)
  prim.def_abstract_eval(_abstract_eval)
  prim.def_lowering(lambda ctx, *args, call_jaxpr, **params: core_call_lowering(
      ctx, *args, name=params.get("name", name), call_jaxpr=call_jaxpr))
  prim.def_jvp(_make_jvp(prim))
  prim.def_partial_eval(_make_partial_eval(prim))
  prim.def_transpose(_make_transpose(prim))
  prim.def_batch_axis(_make_batch(prim))
  prim.def_dce(_dce)
  return prim


call_p = _make("call", closed=False)
closed_call_p = _make("closed_call", closed=True)
