"""Primitives that call a closed jaxpr as jit does, with parameters of their own that their
lowering turns into attributes: compute_on2's `compute_on`, scheduling_groups'
`xla_metadata_call`, fused's `fused_call`. `def_call_rules` gives such a primitive JAX's rules
for it (JVP, linearization, transposition, batching, dead-code elimination, and optionally
partial evaluation), each binding the primitive again with its parameters; a parameter with
one entry per output (`per_output`) is cut or extended to match the new outputs, new ones
(residuals, cotangents) getting `new_entry`."""
from __future__ import annotations

from arrax._src import ad, batching, core, tracing, tree_util


def trace_call(fun, args, kwargs=None, cache=True):
  """Trace `fun(*args, **kwargs)` (pytrees of arrays); with `cache`, once per function and
  signature (so eager calls reuse one executable) unless it closes over tracers. Returns
  (closed jaxpr taking the outer tracers it closes over first, those tracers, the flat
  arguments, the output tree)."""
  leaves, in_tree = tree_util.tree_flatten((tuple(args), dict(kwargs or {})))
  avals = tuple(core.get_aval(x) for x in leaves)

  def build():
    box = []

    def flat(*xs):
      a, kw = tree_util.tree_unflatten(in_tree, xs)
      out_leaves, out_tree = tree_util.tree_flatten(fun(*a, **kw))
      box.append(out_tree)
      return out_leaves

    jaxpr, consts = tracing.trace_to_jaxpr(flat, list(avals))
    return jaxpr, consts, box[0]

  jaxpr, consts, out_tree = (core.memo([fun], ("trace_call", in_tree, avals), build)
                             if cache else build())
  if cache and any(isinstance(c, core.Tracer) for c in consts):
    jaxpr, consts, out_tree = build()   # (those of the trace that made it may be gone)
  closed, outer = tracing.closed_with_host_consts(jaxpr, consts)
  return closed, outer, leaves, out_tree


def def_call_rules(prim, per_output=None, new_entry=None, partial_eval=False,
                   linearize_by_jvp=False):
  """Give `prim` (multiple results, a `jaxpr` parameter) the rules of a call primitive.
  `linearize_by_jvp`: its linearization calls the dead-code-eliminated JVP jaxpr on the
  primal inputs and tangents (fused's), not the tangent part of a split."""
  prim.multiple_results = True

  def with_entries(params, entries):
    return params if per_output is None else dict(params, **{per_output: tuple(entries)})

  def entries(params):
    return params[per_output] if per_output is not None else None

  def pick(params, keep):
    return with_entries(params, [e for e, k in zip(entries(params) or keep, keep) if k])

  @prim.def_abstract_eval
  def _abstract_eval(*avals, jaxpr, **params):
    return list(jaxpr.out_avals)

  @prim.def_jvp
  def _jvp(primals, tangents, *, jaxpr, **params):
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    jvp_closed, out_nz = core.memo([jaxpr], ("jvp", nonzeros),
                                   lambda: ad.jvp_jaxpr(jaxpr, nonzeros))
    ent = entries(params)
    p = params if ent is None else with_entries(
        params, [*ent, *[e for e, nz in zip(ent, out_nz) if nz]])
    outs = prim.bind(*primals, *[t for t in tangents if type(t) is not ad.Zero],
                     jaxpr=jvp_closed, **p)
    n = len(jaxpr.out_avals)
    t_it = iter(outs[n:])
    return outs[:n], [next(t_it) if nz else ad.Zero(ad.tangent_aval(a))
                      for a, nz in zip(jaxpr.out_avals, out_nz)]

  def _linearize_by_jvp(trace, primals, tangents, *, jaxpr, **params):
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    jvp_closed, out_nz = core.memo([jaxpr], ("jvp", nonzeros),
                                   lambda: ad.jvp_jaxpr(jaxpr, nonzeros))
    lin, used_in = core.memo([jvp_closed], ("dce_tangents",), lambda: core.dce_jaxpr(
        jvp_closed.jaxpr, [False] * len(out_nz) + [True] * sum(out_nz),
        [False] * len(jvp_closed.jaxpr.invars)))
    with core.set_current_trace(trace.parent):
      outs = prim.bind(*primals, jaxpr=jaxpr, **params)
    ins = [x for x, u in zip([*primals, *[t for t in tangents if type(t) is not ad.Zero]],
                             used_in) if u]
    t_outs = iter(trace.record(prim, ins, dict(pick(params, out_nz),
                                               jaxpr=core.ClosedJaxpr(lin, jvp_closed.consts))))
    return outs, [next(t_outs) if nz else ad.Zero(ad.tangent_aval(a))
                  for a, nz in zip(jaxpr.out_avals, out_nz)]

  @prim.def_linearize
  def _linearize(trace, primals, tangents, *, jaxpr, **params):
    if linearize_by_jvp:
      return _linearize_by_jvp(trace, primals, tangents, jaxpr=jaxpr, **params)
    # A known call computing the primal outputs and the residuals runs now; a call of the
    # tangent computation is recorded (JAX's linearization of these primitives).
    nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
    primal, tangent, out_nz, res_fwd = core.memo(
        [jaxpr], ("linearize", nonzeros), lambda: ad.linearize_jaxpr(jaxpr, nonzeros))
    n = len(jaxpr.out_avals)
    ent = entries(params)
    p = params if ent is None else with_entries(
        params, [*ent, *[new_entry] * (len(primal.out_avals) - n)])
    with core.set_current_trace(trace.parent):
      outs = prim.bind(*primals, jaxpr=primal, **p)
    res_it, fwd_from = iter(outs[n:]), [*jaxpr.consts, *primals]
    residuals = [next(res_it) if f is None else fwd_from[f] for f in res_fwd]
    nz_tangents = [t for t in tangents if type(t) is not ad.Zero]
    t_outs = iter(trace.record(prim, residuals + nz_tangents,
                               dict(pick(params, out_nz), jaxpr=tangent)))
    return outs[:n], [next(t_outs) if nz else ad.Zero(ad.tangent_aval(a))
                      for a, nz in zip(jaxpr.out_avals, out_nz)]

  @prim.def_transpose
  def _transpose(cts, *args, jaxpr, **params):
    # The transposed call returns the cotangents that are not symbolically zero (as JAX's).
    linear = tuple(ad.is_undefined(a) for a in args)
    ct_nz = tuple(type(ct) is not ad.Zero for ct in cts)

    def build():
      zeros = []
      t_closed = ad.transpose_jaxpr(jaxpr, linear, ct_nz, zeros=zeros)
      if any(zeros):
        t_closed = ad.transpose_jaxpr(jaxpr, linear, ct_nz, keep=[not z for z in zeros])
      return t_closed, zeros

    t_closed, zeros = core.memo([jaxpr], ("transpose_nonzero", linear, ct_nz), build)
    res = [a for a, lin in zip(args, linear) if not lin]
    outs = iter(prim.bind(*res, *[ct for ct in cts if type(ct) is not ad.Zero], jaxpr=t_closed,
                          **with_entries(params, [new_entry] * zeros.count(False))))
    z_it = iter(zeros)
    return [(None if next(z_it) else next(outs)) if lin else None for lin in linear]

  @prim.def_batch_axis
  def _batch(axis_data, args, dims, *, jaxpr, **params):
    batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
    return prim.bind(*args, jaxpr=batched, **params), out_dims

  @prim.def_dce
  def _dce(eqn, used):
    if not any(used) and not core.has_effects(eqn):
      return None
    closed = eqn.params["jaxpr"]
    j, used_in = core.memo([closed], ("dce", tuple(used)), lambda: core.dce_jaxpr(
        closed.jaxpr, used, [False] * len(closed.jaxpr.invars)))
    params = dict(pick(eqn.params, used), jaxpr=core.ClosedJaxpr(j, closed.consts))
    return core.JaxprEqn([v for v, u in zip(eqn.invars, used_in) if u],
                         [v for v, u in zip(eqn.outvars, used) if u], eqn.primitive,
                         params, eqn.source_info, eqn.traceback)

  if partial_eval:
    @prim.def_partial_eval
    def _partial_eval(trace, args, params):
      # The known part runs now as a call of its own (outputs, then residuals); the unknown
      # part is recorded as another.
      jaxpr = params["jaxpr"]
      unknowns = [trace.is_unknown(a) for a in args]
      known, unknown, out_unk, res_fwd = ad.partial_eval_jaxpr(jaxpr, unknowns)
      known_args = [a for a, u in zip(args, unknowns) if not u]
      n_known = len(out_unk) - sum(out_unk)
      ent = entries(params) or out_unk
      k_params = with_entries(params, [*[e for e, u in zip(ent, out_unk) if not u],
                                       *[new_entry] * (len(known.out_avals) - n_known)])
      with core.set_current_trace(trace.parent):
        known_outs = prim.bind(*known_args, **dict(k_params, jaxpr=known))
      res_it = iter(known_outs[n_known:])
      res = [next(res_it) if f is None else known_args[f] for f in res_fwd]
      unk_outs = iter(trace.record(prim, res + [a for a, u in zip(args, unknowns) if u],
                                   dict(pick(params, out_unk), jaxpr=unknown)))
      k_it = iter(known_outs[:n_known])
      return [next(unk_outs) if u else next(k_it) for u in out_unk]
