"""shard_map: run a function on every device of a mesh, each call seeing its own shard.

`shard_map(f, mesh=..., in_specs=..., out_specs=...)` splits each argument over the mesh axes
its PartitionSpec names (replicating it over the others), calls `f` once per device on the
per-device blocks, and assembles the per-device results as `out_specs` says (a mesh axis an
output spec does not name is a promise that the result is the same on every device along it).
Inside `f` the mesh axis names are bound for collectives (psum, all_gather, ppermute, ...).

The call is one `shard_map` equation holding the per-shard jaxpr (avals are per-shard inside,
global outside). It lowers for XLA's SPMD partitioner as JAX's (non-Shardy) lowering does: each
argument is annotated with its sharding (`custom_call @Sharding`) and cut into its manual shard
(`@SPMDFullToShardShape`), the body is a private function whose collectives name partitions
(`lax/parallel.py`'s SPMD lowering), and each result is reassembled
(`@SPMDShardToFullShape`). Eagerly it runs as one such program over the mesh (`spmd.py`'s
executable); in a jit without shardings the jit runs its jaxpr operation by operation, so the
shard_map equation still runs as its own SPMD program.

With `check_vma=True` (the default) values inside the body are typed, as in JAX, by the
manual mesh axes they vary over (`aval.vma`, printed `f32[2,4]{V:i}`): arguments vary over the
axes their in_specs name, standard operations give the union of their operands' axes (an
invariant operand meeting a varying one is cast by an implicit `pvary` equation), psum/pmax/
pmin remove the axes they reduce (psum is staged as `psum_invariant`), axis_index varies over
its axis and the data-moving collectives cast their operand to vary over theirs (see
lax/parallel.py's hooks). out_specs promising replication of a value whose type varies are
rejected with JAX's ValueError. With check_vma=False no value carries such a type. Values can
also be unreduced or reduced over manual axes (`aval.ur`, `{U:i}`/`{R:i}`; lax.pcast and the
unreduced collectives of lax/parallel.py); unreduced/reduced out_specs need an Explicit mesh.

A shard_map inside a body (over the mesh's remaining axes; the body's context mesh is the
abstract mesh with its manual axes Manual) keeps the outer axes manual and lowers inline in
the parent's manual body (`_nested_lowering`).

Transformations: the JVP is a shard_map of the body's JVP; partial evaluation splits it into a
known and an unknown shard_map (new per-device residuals leave first, concatenated along their
leading axis, scalars given one, over every mesh axis or, with check_vma, over the axes they
vary over); the transpose is a shard_map of the body's transpose. With check_vma the types do
the bookkeeping (pvary transposes to psum_invariant and back); without it the cotangent of an
output replicated over some mesh axes is divided among those devices and the cotangent of an
input replicated over some axes is psummed over them (the values JAX gives). vmap batches the
body, the batch axis left unsplit.
"""
from __future__ import annotations

import contextlib
import functools
import inspect
import math
import weakref

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, core, dtypes, mlir, spmd, tracing
from arrax._src import jit as jit_mod
from arrax._src.api import _abstractify
from arrax._src.config import trace_state
from arrax._src.array import ShardedArray
from arrax._src.lax import elementwise as lax_api
from arrax._src.lax import parallel, shape_ops
from arrax._src.sharding_impls import (AbstractMesh, AxisType, Mesh, NamedSharding,
                                       PartitionSpec, get_abstract_mesh, get_mesh, make_mesh,
                                       use_abstract_mesh)
from arrax._src.sharding_impls import _names as _spec_entry_names
from arrax._src.tracing import trace_to_jaxpr
from arrax._src.lax.utils import asarray_operand
from arrax._src.tree_util import (keystr, tree_flatten, tree_flatten_with_path, tree_structure,
                                  tree_unflatten)

P = PartitionSpec


class InferFromArgs:
  """The default of shard_map's in_specs: take each argument's spec from its sharding (meshes
  whose manual axes are all Explicit)."""

  def __repr__(self):
    return "jax.sharding.Infer"

  def __reduce__(self):
    return (_get_infer, ())


Infer = InferFromArgs()


def _get_infer():
  return Infer


# ---- specs and avals ---------------------------------------------------------------------------
def _dims(spec):
  """{array axis: mesh axis names} of a PartitionSpec."""
  return {d: _spec_entry_names(p) for d, p in enumerate(spec.partitions)
          if _spec_entry_names(p)}


def _spec_axes(spec):
  return frozenset(n for names in _dims(spec).values() for n in names)


def _factor(mesh, names):
  return math.prod(mesh.shape[n] for n in names)


def _shard_aval(aval, spec, mesh, vma_axes=None):
  """The per-device aval of an argument; with check_vma (`vma_axes`, the manual axes) it varies
  over the manual axes its spec names."""
  shape = list(aval.shape)
  for d, names in _dims(spec).items():
    shape[d] //= _factor(mesh, names)
  vma = frozenset() if vma_axes is None else _spec_axes(spec) & vma_axes
  return aval.update(shape=tuple(shape), vma=vma | aval.vma)


def _unshard_aval(aval, spec, mesh):
  shape = list(aval.shape)
  for d, names in _dims(spec).items():
    shape[d] *= _factor(mesh, names)
  # (inside an outer shard_map the result still varies over the outer manual axes)
  return aval.update(shape=tuple(shape), vma=aval.vma & _outer_manual(mesh), ur=core.NO_UR)


def _outer_manual(mesh):
  """The axes of `mesh` already manual (a shard_map nested in another's body)."""
  return frozenset(n for n, t in zip(mesh.axis_names, mesh.axis_types) if t == AxisType.Manual)


def _manual_mesh(mesh, manual):
  """The abstract mesh a body sees: `mesh` with the `manual` axes made Manual."""
  am = mesh.abstract_mesh
  types = tuple(AxisType.Manual if n in manual else t
                for n, t in zip(am.axis_names, am.axis_types))
  return AbstractMesh(am.axis_sizes, am.axis_names, types, abstract_device=am.abstract_device)


def _unmentioned(mesh, spec):
  used = _spec_axes(spec)
  return tuple(n for n in mesh.axis_names if n not in used)


@contextlib.contextmanager
def _mesh_axes(mesh, names=None, check_vma=False, manual=None):
  """Bind the mesh axis names (all, or the manual `names`) with their sizes for the
  collectives of the body; with `check_vma`, type values by the `manual` axes (default
  `names`, else all) they vary over."""
  with contextlib.ExitStack() as stack:
    for name, size in zip(mesh.axis_names, mesh.axis_sizes):
      if names is None or name in names:
        stack.enter_context(batching.extend_axis_env(name, size))
    manual = manual if manual is not None else names
    manual = (frozenset(mesh.axis_names) if manual is None else frozenset(manual)) | \
        _outer_manual(mesh)
    stack.enter_context(use_abstract_mesh(_manual_mesh(mesh, manual)))
    if check_vma:
      core.note_axis_order(mesh.axis_names)
      stack.enter_context(core.checking_vma(manual))
    else:
      stack.enter_context(core.checking_vma(None))
    yield


def _body_axes(params):
  """`_mesh_axes` of an existing shard_map equation's body."""
  return _mesh_axes(params["mesh"], check_vma=params["check_vma"],
                    manual=params["newly_manual_axes"])


# ---- the primitive -----------------------------------------------------------------------------
shard_map_p = core.Primitive("shard_map")
shard_map_p.multiple_results = True


@shard_map_p.def_abstract_eval
def _shard_map_abstract_eval(*avals, jaxpr, mesh, in_specs, out_specs, check_vma,
                             newly_manual_axes):
  return [_unshard_aval(a, s, mesh) for a, s in zip(jaxpr.out_avals, out_specs)]


shard_map_p.def_pp_params(lambda p: {
    "check_vma": p["check_vma"], "in_specs": p["in_specs"], "jaxpr": p["jaxpr"],
    "mesh": p["mesh"], "newly_manual_axes": p["newly_manual_axes"],
    "out_specs": p["out_specs"]})


def _custom_call(target, x, aval, sharding):
  op = hlo.CustomCallOp.build_generic(
      results=[mlir.aval_to_ir_type(aval)], operands=[x],
      attributes={"call_target_name": ir.StringAttr.get(target),
                  "backend_config": ir.StringAttr.get("")})
  op.operation.attributes["mhlo.sharding"] = ir.StringAttr.get(sharding)
  return op.results[0]


def _hlo_sharding(mesh, spec, ndim):
  return str(NamedSharding(mesh, spec)._xla_sharding(ndim)._hlo_sharding)


@shard_map_p.def_lowering
def _shard_map_lowering(ctx, *args, jaxpr, mesh, in_specs, out_specs, check_vma,
                        newly_manual_axes):
  mctx = ctx.module_context
  if _outer_manual(mesh):
    return _nested_lowering(ctx, args, jaxpr, mesh, in_specs, out_specs, newly_manual_axes)
  parts = ir.IntegerAttr(mctx.module.operation.attributes["mhlo.num_partitions"]).value
  if parts != mesh.size or getattr(mctx.axis_env, "spmd", False):
    raise mlir.MultiDeviceLowering(
        "a shard_map inside a single-device jit runs on several devices; arrax runs the "
        "enclosing jit's jaxpr operation by operation instead.")
  shards = []
  for x, glob, loc, spec in zip(args, ctx.avals_in, jaxpr.in_avals, in_specs):
    x = _custom_call("Sharding", x, glob, _hlo_sharding(mesh, spec, glob.ndim))
    shards.append(_custom_call("SPMDFullToShardShape", x, loc, "{manual}"))
  outer, outer_mesh = mctx.axis_env, mctx.mesh
  mctx.axis_env = parallel.ManualAxisEnv(zip(mesh.axis_names, mesh.axis_sizes))
  mctx.mesh = outer_mesh or mesh   # (a one-device jit: the body still knows its mesh)
  try:
    with _mesh_axes(mesh, check_vma=check_vma, manual=newly_manual_axes):
      outs = mlir.call_subjaxpr(ctx, jaxpr, "shmap_body", shards)
  finally:
    mctx.axis_env, mctx.mesh = outer, outer_mesh
  results = []
  for o, loc, glob, spec in zip(outs, jaxpr.out_avals, ctx.avals_out, out_specs):
    o = _custom_call("Sharding", o, loc, "{manual}")
    results.append(_custom_call("SPMDShardToFullShape", o, glob,
                                _hlo_sharding(mesh, spec, glob.ndim)))
  return results


def _nested_lowering(ctx, args, jaxpr, mesh, in_specs, out_specs, newly_manual_axes):
  """A shard_map inside another's body. The outer body is lowered with every mesh axis manual
  (each device holds its whole block, replicated over the axes the outer one left
  automatic), so the inner one takes each device's slice along its newly manual axes, runs
  its body, and gathers its results along the axes their out_specs name."""
  if not getattr(ctx.module_context.axis_env, "spmd", False):
    raise NotImplementedError("a nested shard_map lowers only inside its parent's body")

  def emulate(*xs):
    parts = []
    for x, spec in zip(xs, in_specs):
      for d, names in _dims(spec).items():
        size = core.get_aval(x).shape[d] // _factor(mesh, names)
        start = lax_api.mul(parallel.axis_index(names), np.int32(size))
        x = shape_ops.dynamic_slice_in_dim(x, start, size, d)
      parts.append(x)
    outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *parts)
    res = []
    for o, spec in zip(outs, out_specs):
      for d, names in sorted(_dims(spec).items(), reverse=True):
        o = parallel.all_gather(o, names, axis=d, tiled=True)
      res.append(o)
    return res

  with core.checking_vma(None):
    body, consts = trace_to_jaxpr(emulate, [a.update(vma=frozenset(), ur=core.NO_UR)
                                            for a in ctx.avals_in])
  return mlir.call_subjaxpr(ctx, core.ClosedJaxpr(body, consts), "shmap_body", args)


# Eager: one SPMD program per (body, mesh, specs, argument avals), kept as long as the body.
_exe_cache: "weakref.WeakKeyDictionary" = core.register_cache(weakref.WeakKeyDictionary())


@shard_map_p.def_impl
def _shard_map_impl(*args, **params):
  jaxpr, mesh = params["jaxpr"], params["mesh"]
  args = [x.val if isinstance(x, core.Literal) else x for x in args]
  avals = tuple(_abstractify(x) for x in args)
  key = (mesh, params["in_specs"], params["out_specs"], avals)
  per = _exe_cache.setdefault(jaxpr, {})
  exe = per.get(key)
  if exe is None:
    one, consts = trace_to_jaxpr(lambda *xs: shard_map_p.bind(*xs, **params), list(avals))
    closed = core.ClosedJaxpr(one, consts)
    exe = per[key] = spmd._Executable(
        "shmap_body", closed, mesh, [NamedSharding(mesh, s) for s in params["in_specs"]],
        [NamedSharding(mesh, s) for s in params["out_specs"]], None)
  return exe.run(list(args))


# ---- autodiff ----------------------------------------------------------------------------------
def _rebind(params, **changes):
  return dict(params, **changes)


@shard_map_p.def_jvp
def _shard_map_jvp(primals, tangents, **params):
  jaxpr, mesh = params["jaxpr"], params["mesh"]
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  with _body_axes(params):
    jvp_closed, out_nz = core.memo([jaxpr], ("shard_map_jvp", nonzeros, mesh),
                                   lambda: ad.jvp_jaxpr(jaxpr, nonzeros))
  t_in = tuple(s for s, nz in zip(params["in_specs"], nonzeros) if nz)
  t_out = tuple(s for s, nz in zip(params["out_specs"], out_nz) if nz)
  outs = shard_map_p.bind(*primals, *[t for t in tangents if type(t) is not ad.Zero],
                          **_rebind(params, jaxpr=jvp_closed,
                                    in_specs=params["in_specs"] + t_in,
                                    out_specs=params["out_specs"] + t_out))
  n = len(params["out_specs"])
  t_it = iter(outs[n:])
  glob = _shard_map_abstract_eval(jaxpr=jaxpr, **{k: v for k, v in params.items()
                                                  if k != "jaxpr"})
  t_outs = [next(t_it) if nz else ad.Zero(ad.tangent_aval(a)) for a, nz in zip(glob, out_nz)]
  return outs[:n], t_outs


def _wrap(closed, in_avals, pre, post, params):
  """The closed jaxpr of `post(closed(*pre(args)))` on per-device values of `in_avals`."""
  with _body_axes(params):
    return tracing.wrap_closed(closed, in_avals, pre, post)


def _all_axes_spec(mesh, names=None):
  names = tuple(n for n in mesh.axis_names if names is None or n in names)
  return P(names if len(names) > 1 else names[0]) if names else P()


def _split(jaxpr, unknowns, in_specs, out_specs, params):
  mesh = params["mesh"]
  with _body_axes(params):
    known, unknown, out_unk, res_fwd = ad.partial_eval_jaxpr(jaxpr, unknowns)
  n_known_out = len(out_unk) - sum(out_unk)
  known_in = tuple(s for s, u in zip(in_specs, unknowns) if not u)
  new_res = known.out_avals[n_known_out:]
  # New residuals leave first (as JAX's), concatenated along their leading axis (scalars get
  # one) over every mesh axis, or with check_vma over the axes the residual varies over.
  own = frozenset(mesh.axis_names) - _outer_manual(mesh)
  new_specs = [_all_axes_spec(mesh, (a.vma if params["check_vma"] else own) & own)
               for a in new_res]
  known_out = tuple(new_specs) + tuple(s for s, u in zip(out_specs, out_unk) if not u)
  known_w = _wrap(known, known.in_avals, lambda xs: xs,
                  lambda outs: [shape_ops.expand_dims(r, (0,)) if not core.get_aval(r).ndim
                                else r for r in outs[n_known_out:]] + outs[:n_known_out],
                  params)
  n_res = len(res_fwd)
  squeeze = [f is None and not a.ndim for f, a in zip(res_fwd, unknown.in_avals)]
  unk_avals = [a.update(shape=(1, *a.shape)) if sq else a
               for a, sq in zip(unknown.in_avals[:n_res], squeeze)] + unknown.in_avals[n_res:]
  unknown_w = _wrap(unknown, unk_avals,
                    lambda xs: [shape_ops.squeeze(x, (0,)) if i < n_res and squeeze[i] else x
                                for i, x in enumerate(xs)], lambda outs: outs, params)
  spec_it = iter(new_specs)
  unk_in = (tuple(next(spec_it) if f is None else known_in[f] for f in res_fwd) +
            tuple(s for s, u in zip(in_specs, unknowns) if u))
  unk_out = tuple(s for s, u in zip(out_specs, out_unk) if u)
  return known_w, known_in, known_out, unknown_w, unk_in, unk_out, out_unk, res_fwd


@shard_map_p.def_partial_eval
def _shard_map_partial_eval(trace, args, params):
  jaxpr, mesh = params["jaxpr"], params["mesh"]
  unknowns = tuple(trace.is_unknown(a) for a in args)
  known_w, known_in, known_out, unknown_w, unk_in, unk_out, out_unk, res_fwd = core.memo(
      [jaxpr], ("shard_map_pe", unknowns, params["in_specs"], params["out_specs"], mesh,
                params["check_vma"], params["newly_manual_axes"]),
      lambda: _split(jaxpr, unknowns, params["in_specs"], params["out_specs"], params))
  n_known_out = len(out_unk) - sum(out_unk)
  known_args = [a for a, u in zip(args, unknowns) if not u]
  with core.set_current_trace(trace.parent):
    known_outs = shard_map_p.bind(*known_args, **_rebind(params, jaxpr=known_w,
                                                          in_specs=known_in,
                                                          out_specs=known_out))
  n_new = len(known_outs) - n_known_out
  new_res = iter(known_outs[:n_new])
  res_args = [next(new_res) if f is None else known_args[f] for f in res_fwd]
  unk_args = [a for a, u in zip(args, unknowns) if u]
  unk_outs = iter(trace.record(shard_map_p, res_args + unk_args,
                               _rebind(params, jaxpr=unknown_w, in_specs=unk_in,
                                       out_specs=unk_out)))
  k_outs = iter(known_outs[n_new:])
  return [next(unk_outs) if u else next(k_outs) for u in out_unk]


def _transpose_body(jaxpr, linear, ct_nz, in_specs, out_specs, params):
  mesh = params["mesh"]
  with _body_axes(params):
    t_closed = ad.transpose_jaxpr(jaxpr, linear, ct_nz)
  if params["check_vma"]:   # (pvary/psum_invariant in the body transpose as JAX's types say)
    return t_closed
  ct_specs = [s for s, nz in zip(out_specs, ct_nz) if nz]
  lin_specs = [s for s, lin in zip(in_specs, linear) if lin]
  n_res = len(linear) - sum(linear)

  def divide(xs):
    out = list(xs[:n_res])
    for x, spec in zip(xs[n_res:], ct_specs):
      k = _factor(mesh, [n for n in _unmentioned(mesh, spec) if n not in _outer_manual(mesh)])
      aval = core.get_aval(x)
      if k != 1 and aval.dtype != dtypes.float0:
        x = lax_api.div(x, lax_api.scalar_literal(k, aval.dtype, aval.weak_type))
      out.append(x)
    return out

  def post(outs):
    res = []
    for o, spec in zip(outs, lin_specs):
      rest = tuple(n for n in _unmentioned(mesh, spec) if n not in _outer_manual(mesh))
      if rest and core.get_aval(o).dtype != dtypes.float0:
        o = parallel.psum(o, rest)
      res.append(o)
    return res

  return _wrap(t_closed, t_closed.in_avals, divide, post, params)


@shard_map_p.def_transpose
def _shard_map_transpose(cts, *args, **params):
  jaxpr, mesh = params["jaxpr"], params["mesh"]
  in_specs, out_specs = params["in_specs"], params["out_specs"]
  linear = tuple(ad.is_undefined(a) for a in args)
  ct_nz = tuple(type(ct) is not ad.Zero for ct in cts)
  body = core.memo([jaxpr], ("shard_map_transpose", linear, ct_nz, in_specs, out_specs, mesh),
                   lambda: _transpose_body(jaxpr, linear, ct_nz, in_specs, out_specs, params))
  res = [a for a, lin in zip(args, linear) if not lin]
  res_specs = tuple(s for s, lin in zip(in_specs, linear) if not lin)
  ct_specs = tuple(s for s, nz in zip(out_specs, ct_nz) if nz)
  lin_specs = tuple(s for s, lin in zip(in_specs, linear) if lin)
  outs = iter(shard_map_p.bind(*res, *[ct for ct in cts if type(ct) is not ad.Zero],
                               **_rebind(params, jaxpr=body, in_specs=res_specs + ct_specs,
                                         out_specs=lin_specs)))
  return [next(outs) if lin else None for lin in linear]


# ---- vmap --------------------------------------------------------------------------------------
def _insert_none(spec, d):
  parts = list(spec)
  parts += [None] * (d - len(parts))
  parts.insert(d, None)
  return P(*parts)


@shard_map_p.def_batch_axis
def _shard_map_batch(axis_data, args, dims, **params):
  jaxpr = params["jaxpr"]
  dims = tuple(dims)
  with _body_axes(params):
    batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)
  in_specs = tuple(s if d is None else _insert_none(s, d)
                   for s, d in zip(params["in_specs"], dims))
  out_specs = tuple(s if d is None else _insert_none(s, d)
                    for s, d in zip(params["out_specs"], out_dims))
  outs = shard_map_p.bind(*args, **_rebind(params, jaxpr=batched, in_specs=in_specs,
                                           out_specs=out_specs))
  return outs, list(out_dims)


# ---- errors ------------------------------------------------------------------------------------
def _fun_name(f):
  return getattr(f, "__name__", str(f))


def _bound_params(f, tree):
  try:
    return inspect.signature(f).bind(*tree_unflatten(tree, [False] * tree.num_leaves))
  except (TypeError, ValueError):
    return None


def _arg_extra(f, ba, path):
  if ba is None or not path:
    return ""
  idx = getattr(path[0], "idx", None)
  if idx is None:
    return ""
  params = [(n, p) for n, p in ba.signature.parameters.items()
            if p.kind not in (inspect.Parameter.KEYWORD_ONLY, inspect.Parameter.VAR_KEYWORD)]
  name = _fun_name(f)
  if idx >= len(params) or params[idx][1].kind == inspect.Parameter.VAR_POSITIONAL:
    return (f", where args{keystr(path[:1])} is the index {idx - len(params) + 1} component "
            f"of {name}'s varargs parameter '{params[-1][0]}',")
  return f", where args{keystr(path[:1])} is bound to {name}'s parameter '{params[idx][1]}',"


def _spec_paths(specs, tree, prefix_name):
  """(spec key path, spec) for each leaf of `tree` (specs a tree prefix of it)."""
  spec_leaves = tree_flatten_with_path(specs, is_leaf=lambda x: x is None or isinstance(x, P))[0]
  holder = tree_unflatten(tree_structure(specs, is_leaf=lambda x: x is None or isinstance(x, P)),
                          list(range(len(spec_leaves))))
  idx = batching.flatten_axes(prefix_name, tree, holder)
  return [spec_leaves[i] for i in idx]


def _bullets(msgs):
  """Error items separated by blank lines; a lone item loses its bullet (as JAX prints)."""
  return "\n\n".join([msgs[0][2:]] if len(msgs) == 1 else msgs)


def _mesh_sentence(mesh):
  return (f"The mesh given has shape {tuple(mesh.axis_sizes)} with corresponding axis names "
          f"{mesh.axis_names}.")


def _rank_error(kind, f, tree, specs, fails, prefix_name):
  name = _fun_name(f)
  prefix = "in" if kind == "in" else "out"
  base = "the passed args" if kind == "in" else f"{name}(*args)"
  ba = _bound_params(f, tree) if kind == "in" else None
  paths = [p for p, _ in tree_flatten_with_path(tree_unflatten(tree, [0] * tree.num_leaves))[0]]
  spec_paths = _spec_paths(specs, tree, prefix_name)
  msgs = []
  for (skey, spec), path, aval in zip(spec_paths, paths, fails):
    if aval is None:
      continue
    extra = _arg_extra(f, ba, path) if kind == "in" else ""
    msgs.append(f"* {prefix}_specs{keystr(skey)} is {spec} which has length {len(spec)}, but "
                f"{base}{keystr(path)}{extra} has shape {aval.str_short()}, which has rank "
                f"{aval.ndim} (and {aval.ndim} < {len(spec)})")
  msg = (f"shard_map applied to the function '{name}' was given an {prefix}_specs entry which "
         f"is too long to be compatible with the corresponding {prefix}put value from the "
         f"function:\n\n" + _bullets(msgs) + "\n\n" +
         f"Entries in {prefix}_specs must be of length no greater than the number of axes in "
         f"the corresponding {prefix}put value.\n\nEither revise the spec to be shorter, or "
         f"modify '{name}' so that its {prefix}puts have sufficient rank.")
  if any(a is not None and not a.ndim for a in fails):
    msg += (f"\n\nFor scalar values (rank 0), consider using an {prefix}_specs entry of "
            "`P()`, where `P = jax.sharding.PartitionSpec`.")
    if kind == "out":
      msg += (" In particular, for rank 0 outputs which are not constant over the mesh, add "
              "at least one (singleton) axis to them so that they can be concatenated using "
              "out_specs.")
  return ValueError(msg)


def _divisibility_error(f, mesh, tree, specs, fails):
  name = _fun_name(f)
  ba = _bound_params(f, tree)
  paths = [p for p, _ in tree_flatten_with_path(tree_unflatten(tree, [0] * tree.num_leaves))[0]]
  msgs = []
  for (skey, spec), path, aval in zip(_spec_paths(specs, tree, "shard_map in_specs"), paths,
                                      fails):
    if aval is None:
      continue
    extra = _arg_extra(f, ba, path)
    for d, ns in _dims(spec).items():
      sz = _factor(mesh, ns)
      if aval.shape[d] % sz:
        axis = f"axes {ns}" if len(ns) > 1 else f"axis '{ns[0]}'"
        total = "total " if len(ns) > 1 else ""
        msgs.append(f"* the passed args{keystr(path)} of shape {aval.str_short()}{extra} "
                    f"corresponds to in_specs{keystr(skey)} of value {spec}, which maps array "
                    f"axis {d} (of size {aval.shape[d]}) to mesh {axis} (of {total}size {sz}), "
                    f"but {sz} does not evenly divide {aval.shape[d]}")
  return ValueError(
      f"shard_map applied to the function '{name}' was given argument arrays with axis sizes "
      f"that are not evenly divisible by the corresponding mesh axis sizes:\n\n"
      f"{_mesh_sentence(mesh)}\n\n" + _bullets(msgs) + "\n\nArray arguments' axis sizes must be evenly divisible "
      "by the mesh axis or axes indicated by the corresponding elements of the argument's "
      "in_specs entry. Consider checking that in_specs are correct, and if so consider "
      f"changing the mesh axis sizes or else padding the input and adapting '{name}' "
      "appropriately.")


def _vma_error(f, mesh, tree, specs, fails):
  msgs = []
  for (skey, spec), vma in zip(_spec_paths(specs, tree, "shard_map out_specs"), fails):
    if vma is None:
      continue
    unmentioned = _unmentioned(mesh, spec)
    order = lambda names: ",".join(n for n in mesh.axis_names if n in names)  # noqa: E731
    if len(unmentioned) > 1:
      diff = order([n for n in unmentioned if n in vma])
      msgs.append(f"* out_specs{keystr(skey)} is {spec} which implies that the corresponding "
                  f"output value is only varying across mesh axes {{{order(_spec_axes(spec))}}}"
                  f" and not {{{diff}}}, but it was inferred to be possibly varying over "
                  f"{{{order(vma)}}}")
    else:
      msgs.append(f"* out_specs{keystr(skey)} is {spec} which implies that the corresponding "
                  f"output value is replicated across mesh axis '{unmentioned[0]}', but could "
                  f"not infer replication over any axes")
  return ValueError(
      f"shard_map applied to the function '{_fun_name(f)}' was given out_specs which require "
      f"replication which can't be statically inferred given the mesh:\n\n"
      f"{_mesh_sentence(mesh)}\n\n" + _bullets(msgs) + "\n\nCheck if these output values are meant to be replicated over "
      "those mesh axes. If not, consider revising the corresponding out_specs entries. If so, "
      "consider disabling the check by passing the check_vma=False argument to "
      "`jax.shard_map`.")


def _check_specs(kind, specs, manual_axes):
  if kind == "in" and specs is None:
    raise TypeError(
        "shard_map in_specs argument must be a pytree of `jax.sharding.PartitionSpec` "
        "instances, but it was None.\nInstead of `in_specs=None`, did you mean `in_specs=P()`, "
        "where `P = jax.sharding.PartitionSpec`?")
  leaves = tree_flatten_with_path(specs, is_leaf=lambda x: x is None or isinstance(x, P))[0]
  bad_type = [f"  {kind}_specs{keystr(k)} is {x} of type {type(x).__name__}, "
              for k, x in leaves if not isinstance(x, P)]
  if bad_type:
    raise TypeError(f"shard_map {kind}_specs argument must be a pytree of "
                    f"`jax.sharding.PartitionSpec` instances, but:\n\n" + "\n\n".join(bad_type) +
                    f"\n\nCheck the {kind}_specs values passed to shard_map.")
  msgs = [f"  {kind}_specs{keystr(k)} refers to {n!r}" for k, p in leaves
          for e in p.partitions for n in _spec_entry_names(e) if n not in manual_axes]
  if msgs:
    raise ValueError(f"shard_map {kind}_specs argument must refer to an axis marked as manual "
                     f"({manual_axes}), but:\n\n" + "\n\n".join(msgs) +
                     f"\n\nCheck the {kind}_specs values passed to shard_map.")


def _concrete_mesh(mesh):
  """The Mesh to run on for `mesh` (an AbstractMesh takes the context's or the first
  devices)."""
  if isinstance(mesh, Mesh):
    return mesh
  ctx = get_mesh()
  if not ctx.empty and ctx.abstract_mesh == mesh:
    return ctx
  return make_mesh(mesh.axis_sizes, mesh.axis_names, mesh.axis_types)


def _shmap_checks(mesh, axis_names, in_specs, out_specs):
  if mesh is None:
    ctx = get_mesh()
    if _outer_manual(get_abstract_mesh()):   # (inside a shard_map body: its manual mesh)
      mesh = get_abstract_mesh()
    elif ctx.empty:
      abstract = get_abstract_mesh()
      if abstract.empty:
        raise ValueError("The context mesh cannot be empty. Use `jax.set_mesh(mesh)` to enter "
                         "into a mesh context")
      mesh = abstract
    else:
      mesh = ctx
  else:
    ctx = get_abstract_mesh()
    if (isinstance(mesh, (Mesh, AbstractMesh)) and not ctx.empty and
        mesh.abstract_mesh != ctx):
      raise ValueError(f"The context mesh {ctx} should match the mesh passed to shard_map "
                       f"{mesh}")
  if not isinstance(mesh, (Mesh, AbstractMesh)):
    raise TypeError("shard_map requires a `jax.sharding.Mesh` or a "
                    "`jax.sharding.AbstractMesh` instance for its second argument, but got "
                    f"{mesh} of type {type(mesh)}.")
  if mesh.empty:
    raise ValueError(f"shard_map requires a non-empty mesh. Got {mesh}")
  if not isinstance(axis_names, (frozenset, set)):
    raise TypeError("`axis_names` argument of shard_map should be of type `frozenset` or "
                    f"`set`. Got type: {type(axis_names)}")
  axis_names = frozenset(axis_names) or frozenset(mesh.axis_names)
  if not axis_names <= frozenset(mesh.axis_names):
    raise ValueError(f"jax.shard_map requires axis_names={axis_names} to be a subset of "
                     f"mesh.axis_names={frozenset(mesh.axis_names)}")
  types = mesh._name_to_type
  if in_specs is Infer and not all(types[a] == AxisType.Explicit for a in axis_names):
    kinds = ", ".join(str(types[a]) for a in axis_names)
    raise TypeError("shard_map in_specs argument must be a pytree of "
                    "`jax.sharding.PartitionSpec` instances, but it was `None` when "
                    f"axis_names={axis_names} are of type {kinds}")
  if in_specs is not Infer and in_specs is not None:
    _check_specs("in", in_specs, axis_names)
    _check_unreduced("in", mesh, axis_names, in_specs)
  _check_specs("out", out_specs, axis_names)
  _check_unreduced("out", mesh, axis_names, out_specs)
  return mesh, axis_names


def _check_unreduced(prefix, mesh, manual_axes, specs):
  """JAX's errors for unreduced/reduced axes in specs: only over a fully manual shard_map of
  Explicit mesh axes (where the arguments' and results' types carry them)."""
  for s in tree_flatten(specs, is_leaf=lambda x: x is None)[0]:
    if not isinstance(s, P) or not (s.unreduced or s.reduced):
      continue
    if frozenset(mesh.axis_names) != manual_axes:
      raise NotImplementedError(
          f"unreduced/reduced can only be passed to {prefix}_specs when shard_map is in full "
          f"manual mode. Got mesh axis names {mesh.axis_names}, manual_axes: {manual_axes}, "
          f"specs: {s}. Please file a bug at https://github.com/jax-ml/jax/issues.")
    for kind, axes in (("unreduced", s.unreduced), ("reduced", s.reduced)):
      if not all(mesh._name_to_type[u] == AxisType.Explicit for u in axes):
        raise ValueError(
            f"{kind} in {prefix}_specs {s} can only be used when the mesh passed to shard_map "
            f"contains axis names all of type `Explicit`. Got mesh {mesh}")
    # (arrax's arrays and avals carry no unreduced/reduced sharding yet)
    raise NotImplementedError(f"unreduced/reduced axes in shard_map {prefix}_specs ({s}) over "
                              "an Explicit mesh are not supported by arrax yet")


def _ur_spec(mesh, aval):
  """JAX's PartitionSpec naming a body value's varying, unreduced and reduced axes."""
  varying = tuple(n for n in mesh.axis_names if n in aval.vma)
  return P(varying or None, unreduced=aval.ur[0], reduced=aval.ur[1])


def _eager_ur_error(jaxpr, mesh):
  """JAX runs an eager shard_map body one operation at a time, each result laid out by its
  type: over a mesh that is not Explicit, the first unreduced or reduced value raises."""
  for eqn in jaxpr.eqns:
    for v in eqn.outvars:
      aval = v.aval
      if type(aval) is core.ShapedArray and aval.ur is not core.NO_UR:
        spec = _ur_spec(mesh, aval)
        kind = "unreduced" if spec.unreduced else "reduced"
        return ValueError(
            f"{kind} in out_specs {spec} can only be used when the mesh passed to shard_map "
            f"contains axis names all of type `Explicit`. Got mesh {mesh}")
  return None


def _arg_spec(x, mesh, ndim):
  """The PartitionSpec (padded to `ndim`) an argument is laid out with over `mesh`."""
  named = x._named if type(x) is ShardedArray else None
  parts = list(named.spec) if named is not None and named.mesh == mesh else []
  return P(*(parts + [None] * (ndim - len(parts))))


def _padded(spec, ndim):
  parts = list(spec)
  return P(*(parts + [None] * (ndim - len(parts))))


# ---- the public function -----------------------------------------------------------------------
def shard_map(f=None, /, *, out_specs, in_specs=Infer, mesh=None, axis_names=frozenset(),
              check_vma=True):
  """Map `f` over shards of its arguments, one call per device of `mesh`.

  Each argument is split over the mesh axes its `in_specs` entry names (replicated over the
  others); `f` sees one block per device and may use collectives over the mesh axis names;
  its results are concatenated along the mesh axes their `out_specs` name. `mesh` defaults to
  the one set by `jax.set_mesh`. Usable as a decorator with keyword arguments only.
  """
  kwargs = dict(mesh=mesh, in_specs=in_specs, out_specs=out_specs, axis_names=axis_names,
                check_vma=check_vma)
  if f is None:
    return lambda g: _shard_map(g, **kwargs)
  return _shard_map(f, **kwargs)


def _shard_map(f, *, mesh, in_specs, out_specs, axis_names, check_vma):
  if not callable(f):
    raise TypeError("shard_map requires a callable for its first argument, but got "
                    f"{f} of type {type(f)}.")
  cache: dict = {}

  @functools.wraps(f)
  def wrapped(*args):
    m, names = _shmap_checks(mesh, axis_names, in_specs, out_specs)
    if _outer_manual(m):   # nested in another shard_map: its manual axes stay manual
      names = names - _outer_manual(m)
      if not names:
        raise ValueError(
            f"shard_map over the mesh axes {sorted(axis_names or m.axis_names)} inside a "
            "shard_map body: every one of them is already manual (bound by a parent "
            "shard_map)")
    leaves, in_tree = tree_flatten(args)
    eager = core.trace_ctx.trace is core.eval_trace and not any(
        isinstance(x, core.Tracer) for x in leaves)
    run_mesh = m if _outer_manual(m) else _concrete_mesh(m)
    if in_specs is Infer:
      specs = [_manual_spec(names, _arg_spec(x, run_mesh, core.get_aval(x).ndim))
               for x in leaves]
    else:
      specs = batching.flatten_axes("shard_map in_specs", in_tree, in_specs)
    static = [s is None for s in specs]
    dyn = [x for x, st in zip(leaves, static) if not st]
    dyn_specs = tuple(s for s in specs if s is not None)
    avals = [_abstractify(x) for x in dyn]
    if any(len(s) > a.ndim for s, a in zip(dyn_specs, avals)):
      fails = _expand([a if len(s) > a.ndim else None for s, a in zip(dyn_specs, avals)],
                      static)
      raise _rank_error("in", f, in_tree, in_specs, fails, "shard_map in_specs")
    if any(a.shape[d] % _factor(m, ns) for s, a in zip(dyn_specs, avals)
           for d, ns in _dims(s).items()):
      fails = _expand([a if any(a.shape[d] % _factor(m, ns) for d, ns in _dims(s).items())
                       else None for s, a in zip(dyn_specs, avals)], static)
      raise _divisibility_error(f, m, in_tree, in_specs, fails)
    if (eager and in_specs is not Infer and names == frozenset(m.axis_names) and
        all(m._name_to_type[a] == AxisType.Explicit for a in names)):
      for x, s, a in zip(dyn, dyn_specs, avals):
        want, got = _padded(s, a.ndim), _arg_spec(x, run_mesh, a.ndim)
        if want != got:
          raise ValueError(
              f"in_specs passed to shard_map: {want} does not match the specs of the input: "
              f"{got} for arg: {a.str_short()}. `in_specs` is an optional argument so you can "
              "omit specifying it and shard_map will infer the in_specs from the arguments. If "
              "you want to reshard your inputs, you can use `jax.reshard` on the arguments and "
              "then pass those args to shard_map.")
    key = (in_tree, tuple(avals), tuple(static), dyn_specs, run_mesh, trace_state())
    hit = cache.get(key) if eager else None
    if hit is None:
      hit = _trace(f, in_tree, static, [x for x, st in zip(leaves, static) if st], avals,
                   dyn_specs, out_specs, m, run_mesh, names, check_vma)
      if eager and not any(isinstance(c, core.Tracer) for c in hit[1]):
        cache[key] = hit
    closed, consts, all_in_specs, out_flat, out_tree = hit
    if eager and check_vma and not all(t == AxisType.Explicit for t in m._name_to_type.values()):
      err = _eager_ur_error(closed.jaxpr, m)
      if err is not None:
        raise err
    outs = shard_map_p.bind(*consts, *dyn, jaxpr=closed, mesh=run_mesh,
                            in_specs=all_in_specs, out_specs=out_flat, check_vma=check_vma,
                            newly_manual_axes=names)
    return tree_unflatten(out_tree, outs)

  return wrapped


def _expand(fails, static):
  it = iter(fails)
  return [None if st else next(it) for st in static]


def _manual_spec(manual_axes, spec):
  out = []
  for p in spec:
    if p is None:
      out.append(None)
    elif isinstance(p, tuple):
      kept = [n if n in manual_axes else None for n in p]
      while kept and kept[-1] is None:
        kept.pop()
      if None in kept:
        raise ValueError(f"Invalid spec: {spec}")
      out.append(tuple(kept) if kept else None)
    else:
      out.append(p if p in manual_axes else None)
  return P(*out)


def _trace(f, in_tree, static, static_vals, avals, dyn_specs, out_specs, mesh, run_mesh,
           names, check_vma):
  """Trace `f` on per-shard avals: (closed body, consts, in_specs, out_specs, out tree)."""
  local = [_shard_aval(a, s, mesh, names if check_vma else None)
           for a, s in zip(avals, dyn_specs)]
  box = []

  def body(*xs):
    it, st = iter(xs), iter(static_vals)
    full = [next(st) if s else next(it) for s in static]
    out = f(*tree_unflatten(in_tree, full))
    out_leaves, out_tree = tree_flatten(out)
    box.append(out_tree)
    outs = [asarray_operand(v) for v in out_leaves]
    if check_vma:   # results vary over the manual axes their out_specs name (JAX's pvary)
      specs = batching.flatten_axes("shard_map out_specs", out_tree, out_specs)
      outs = [parallel._pvary(v, (_spec_axes(s) & names) - core.get_aval(v).vma)
              for v, s in zip(outs, specs)]
    return outs

  with _mesh_axes(mesh, names, check_vma):
    jaxpr, consts = trace_to_jaxpr(body, local)
  out_tree = box[0]
  out_flat = tuple(batching.flatten_axes("shard_map out_specs", out_tree, out_specs))
  out_local = [v.aval for v in jaxpr.outvars]
  if any(len(s) > a.ndim for s, a in zip(out_flat, out_local)):
    fails = [a.update(vma=frozenset()) if len(s) > a.ndim else None
             for s, a in zip(out_flat, out_local)]
    raise _rank_error("out", f, out_tree, out_specs, fails, "shard_map out_specs")
  n_const = len(consts)
  jaxpr = core.Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.outvars,
                     jaxpr.eqns)
  all_in_specs = (P(),) * n_const + tuple(dyn_specs)
  if check_vma:
    vma = [v.aval.vma for v in jaxpr.outvars]
    fails = [v if (v & frozenset(_unmentioned(mesh, s)) & names) else None
             for v, s in zip(vma, out_flat)]
    # (a result unreduced or reduced over an axis is not the same on every device there)
    fails = [frozenset() if x is None and v.aval.ur is not core.NO_UR and (
                 v.aval.ur[0] | v.aval.ur[1]) - s.unreduced - s.reduced else x
             for x, v, s in zip(fails, jaxpr.outvars, out_flat)]
    if any(x is not None for x in fails):
      raise _vma_error(f, mesh, out_tree, out_specs, fails)
  return core.ClosedJaxpr(jaxpr, []), list(consts), all_in_specs, out_flat, out_tree



def _axes_to_spec(axis_name, axis):
  return P() if axis is None else P(*([None] * axis + [axis_name]))


def smap(f=None, /, *, in_axes=Infer, out_axes, axis_name):
  """shard_map over the one mesh axis `axis_name` of the context mesh, with vmap-style
  `in_axes`/`out_axes` (the mapped array axis of each argument and result)."""
  def build(g):
    if isinstance(axis_name, (list, tuple)):
      raise TypeError(f"smap axis_name should be a `str` or a `Hashable`, but got {axis_name}")
    if in_axes is not None and in_axes is not Infer and not isinstance(in_axes, (int, tuple)):
      raise TypeError("smap in_axes must be an int, None, jax.sharding.Infer, or a tuple of "
                      "entries corresponding to the positional arguments passed to the "
                      f"function, but got {in_axes}.")
    to_spec = functools.partial(_axes_to_spec, axis_name)
    in_specs = Infer if in_axes is Infer else _map_axes(to_spec, in_axes)
    out_specs = _map_axes(to_spec, out_axes)
    return _shard_map(g, mesh=None, in_specs=in_specs, out_specs=out_specs,
                      axis_names={axis_name}, check_vma=True)
  return build if f is None else build(f)


def _map_axes(fn, axes):
  leaves, tree = tree_flatten(axes, is_leaf=lambda x: x is None)
  return tree_unflatten(tree, [fn(a) for a in leaves])


# ---- jit of a function holding shard_maps: one SPMD program ------------------------------------
def _meshes(jaxpr, found):
  """Collect the meshes of the shard_map equations of `jaxpr` (and of jaxprs in its params);
  False when it holds another multi-device equation (pmap)."""
  for eqn in jaxpr.eqns:
    if eqn.primitive is shard_map_p:
      found.add(eqn.params["mesh"])
      continue
    if eqn.primitive.name == "pmap":
      return False
    for v in eqn.params.values():
      for sub in (v if isinstance(v, (tuple, list)) else (v,)):
        if isinstance(sub, core.ClosedJaxpr) and not _meshes(sub.jaxpr, found):
          return False
        if isinstance(sub, core.Jaxpr) and not _meshes(sub, found):
          return False
  return True


class _SpmdRunner:
  """Runs a jitted jaxpr holding shard_maps as one program partitioned over their mesh: each
  argument keeps its layout over the mesh (others are replicated), results take the layouts
  XLA's propagation gives them."""

  def __init__(self, name, closed, mesh):
    self.name, self.closed, self.mesh = name, closed, mesh
    self.exes = {}

  def __call__(self, leaves):
    layouts = tuple(x._named if type(x) is ShardedArray and x._named.mesh == self.mesh
                    else None for x in leaves)
    exe = self.exes.get(layouts)
    if exe is None:
      ins = [s if s is not None else NamedSharding(self.mesh, P()) for s in layouts]
      try:
        exe = spmd._Executable(self.name, self.closed, self.mesh, ins,
                               [None] * len(self.closed.out_avals), None)
      except NotImplementedError:   # (a layout no PartitionSpec names, a host callback, ...)
        exe = False
      self.exes[layouts] = exe
    if exe is False:
      return core.eval_jaxpr(self.closed.jaxpr, self.closed.consts, *leaves)
    return exe.run([x.val if isinstance(x, core.Literal) else x for x in leaves])


def _multi_device_runner(name, closed):
  found = set()
  if not _meshes(closed.jaxpr, found) or len(found) != 1:
    return None
  runner = _SpmdRunner(name, closed, found.pop())
  return runner


jit_mod.register_multi_device_runner(_multi_device_runner)
