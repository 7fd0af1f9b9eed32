"""pmap: run a function on several devices at once, one slice of the mapped axis per device.

The function is traced once per signature with the mapped axes removed (each input becomes
its per-device slice, of size 1 along its mapped axis, squeezed inside), with `axis_name`
bound to the number of devices so that collectives see it. The jaxpr is lowered to one XLA
program replicated over the devices (`num_replicas` = devices): collectives over the axis become
XLA's cross-replica collectives (see lax/parallel.py), and XLA moves the bytes. Arguments are
placed as one jaxlib array spanning the devices (split along the mapped axis, or replicated for
`in_axes=None`); results are `ShardedArray`s split along `out_axes` (replicated for None) with a
`NamedSharding` over a one-axis mesh, as JAX 0.10.2's pmap returns.

Under another transformation (jit, make_jaxpr) a pmap call is one `pmap` equation; a jit whose
program holds one runs its jaxpr operation by operation (each pmap inside compiled on its own).
"""
from __future__ import annotations

import functools
import logging
import time
import weakref

import numpy as np
from jaxlib import _jax, xla_client as xc

from arrax._src import (ad, api_util, backend as xb, batching, compiler, core, dispatch, dtypes,
                        mlir, tracing, tree_util)
from arrax._src import pmap_multiprocess
from arrax._src.array import Array, ShardedArray
from arrax._src.config import config, trace_state, x64_enabled
from arrax._src.lax import elementwise as lax_api
from arrax._src.lax import parallel, shape_ops
from arrax._src.sharding_impls import Mesh, split_sharding, xla_sharding
from arrax._src.tracing import trace_to_jaxpr

logger = logging.getLogger(__name__)

_COLLECTIVE_OPS = ("stablehlo.all_reduce", "stablehlo.all_gather", "stablehlo.reduce_scatter",
                   "stablehlo.all_to_all", "stablehlo.collective_permute")


# ---- the pmap primitive (a pmap call seen by an enclosing trace) --------------------------------
pmap_p = core.Primitive("pmap")
pmap_p.multiple_results = True


def _global_aval(aval, axis, size):
  if axis is None:
    return aval
  shape = list(aval.shape)
  shape[axis] = size
  return aval.update(shape=tuple(shape))


def _global_avals(avals, axes, size):
  return [_global_aval(a, ax, size) for a, ax in zip(avals, axes)]


@pmap_p.def_abstract_eval
def _pmap_abstract_eval(*avals, jaxpr, axis_name, axis_size, devices, in_axes, out_axes, name):
  return _global_avals(jaxpr.out_avals, out_axes, axis_size)


@pmap_p.def_lowering
def _pmap_lowering(ctx, *args, **params):
  raise mlir.MultiDeviceLowering(
      "a pmap inside a jitted function runs on several devices; arrax runs the enclosing jit's "
      "jaxpr operation by operation instead of compiling it as one program.")


pmap_p.def_pp_params(lambda p: {"name": p["name"], "axis_name": p["axis_name"],
                                "axis_size": p["axis_size"], "in_axes": p["in_axes"],
                                "out_axes": p["out_axes"], "jaxpr": p["jaxpr"]})


@pmap_p.def_batch_axis
def _pmap_batch(axis_data, args, dims, *, jaxpr, axis_name, axis_size, devices, in_axes,
                out_axes, name):
  """vmap of pmap: a pmap of the batched per-device program. A batched argument keeps its
  batch axis at the same position in the per-device slices (the mapped axis moves past it)."""
  params = dict(axis_name=axis_name, axis_size=axis_size, devices=devices, name=name)
  with batching.extend_axis_env(axis_name, axis_size):
    batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, dims)

  def shift(axes, batch_dims):
    return tuple(None if ax is None else ax + (d is not None and d <= ax)
                 for ax, d in zip(axes, batch_dims))
  outs = pmap_p.bind(*args, jaxpr=batched, in_axes=shift(in_axes, dims),
                     out_axes=shift(out_axes, out_dims), **params)
  return outs, list(out_dims)


def _wrap_jaxpr(closed, in_avals, pre, post, axis_name, size):
  """The closed jaxpr of `post(closed(*pre(args)))` on per-device values of `in_avals`."""
  with batching.extend_axis_env(axis_name, size):
    return tracing.wrap_closed(closed, in_avals, pre, post)


# Autodiff: the JVP of a pmap is a pmap of the per-device JVP; under partial evaluation the
# known part runs now as a pmap whose per-device residuals come out stacked along a new axis
# 0 (and go back in mapped along it); the transpose is a pmap of the per-device transpose. As
# in JAX (shard_map without replication checks), the cotangent of an unmapped output is divided
# among the devices and the cotangent of an unmapped input is summed over them.
@pmap_p.def_jvp
def _pmap_jvp(primals, tangents, *, jaxpr, axis_name, axis_size, devices, in_axes, out_axes,
              name):
  nonzeros = tuple(type(t) is not ad.Zero for t in tangents)
  with batching.extend_axis_env(axis_name, axis_size):
    jvp_closed, out_nz = core.memo([jaxpr], ("pmap_jvp", nonzeros, axis_name, axis_size),
                                   lambda: ad.jvp_jaxpr(jaxpr, nonzeros))
  t_in = tuple(ax for ax, nz in zip(in_axes, nonzeros) if nz)
  t_out = tuple(ax for ax, nz in zip(out_axes, out_nz) if nz)
  outs = pmap_p.bind(*primals, *[t for t in tangents if type(t) is not ad.Zero],
                     jaxpr=jvp_closed, axis_name=axis_name, axis_size=axis_size,
                     devices=devices, in_axes=in_axes + t_in, out_axes=out_axes + t_out,
                     name=name)
  n = len(out_axes)
  t_it = iter(outs[n:])
  t_outs = [next(t_it) if nz else ad.Zero(ad.tangent_aval(a))
            for a, nz in zip(_global_avals(jaxpr.out_avals, out_axes, axis_size), out_nz)]
  return outs[:n], t_outs


def _split_known_unknown(jaxpr, unknowns, in_axes, out_axes, axis_name, size):
  """The known and the unknown pmap of a partially known pmap call (memoized by the caller):
  (known jaxpr, its in/out axes, unknown jaxpr, its in/out axes, out_unk, res_fwd)."""
  with batching.extend_axis_env(axis_name, size):
    known, unknown, out_unk, res_fwd = ad.partial_eval_jaxpr(jaxpr, unknowns)
  n_known_out = len(out_unk) - sum(out_unk)
  known_in = tuple(ax for ax, u in zip(in_axes, unknowns) if not u)
  n_new_res = len(known.out_avals) - n_known_out
  known_out = tuple(ax for ax, u in zip(out_axes, out_unk) if not u) + (0,) * n_new_res
  known_w = _wrap_jaxpr(
      known, known.in_avals, lambda xs: xs,
      lambda outs: outs[:n_known_out] + [_expand(r, 0) for r in outs[n_known_out:]],
      axis_name, size)
  squeeze = [f is None for f in res_fwd]
  n_res = len(res_fwd)
  unk_avals = [a.update(shape=(1, *a.shape)) if sq else a
               for a, sq in zip(unknown.in_avals[:n_res], squeeze)] + unknown.in_avals[n_res:]
  unknown_w = _wrap_jaxpr(
      unknown, unk_avals,
      lambda xs: [_squeeze(x, 0) if i < n_res and squeeze[i] else x for i, x in enumerate(xs)],
      lambda outs: outs, axis_name, size)
  unk_in = (tuple(0 if f is None else known_in[f] for f in res_fwd) +
            tuple(ax for ax, u in zip(in_axes, unknowns) if u))
  unk_out = tuple(ax for ax, u in zip(out_axes, out_unk) if u)
  return known_w, known_in, known_out, unknown_w, unk_in, unk_out, out_unk, res_fwd


@pmap_p.def_partial_eval
def _pmap_partial_eval(trace, args, params):
  jaxpr, axis_name, size = params["jaxpr"], params["axis_name"], params["axis_size"]
  in_axes, out_axes = params["in_axes"], params["out_axes"]
  unknowns = tuple(trace.is_unknown(a) for a in args)
  known_w, known_in, known_out, unknown_w, unk_in, unk_out, out_unk, res_fwd = core.memo(
      [jaxpr], ("pmap_partial_eval", unknowns, in_axes, out_axes, axis_name, size),
      lambda: _split_known_unknown(jaxpr, unknowns, in_axes, out_axes, axis_name, size))
  n_known_out = len(out_unk) - sum(out_unk)
  known_args = [a for a, u in zip(args, unknowns) if not u]
  with core.set_current_trace(trace.parent):
    known_outs = pmap_p.bind(*known_args, **dict(params, jaxpr=known_w, in_axes=known_in,
                                                 out_axes=known_out))
  new_res = iter(known_outs[n_known_out:])
  res_args = [next(new_res) if f is None else known_args[f] for f in res_fwd]
  unk_args = [a for a, u in zip(args, unknowns) if u]
  unk_outs = iter(trace.record(pmap_p, res_args + unk_args,
                               dict(params, jaxpr=unknown_w, in_axes=unk_in, out_axes=unk_out)))
  k_outs = iter(known_outs[:n_known_out])
  return [next(unk_outs) if u else next(k_outs) for u in out_unk]


def _transpose_per_device(jaxpr, linear, ct_nz, in_axes, out_axes, axis_name, axis_size):
  """The per-device program of the transposed pmap (memoized by the caller)."""
  with batching.extend_axis_env(axis_name, axis_size):
    t_closed = ad.transpose_jaxpr(jaxpr, linear, ct_nz)
  ct_axes = tuple(ax for ax, nz in zip(out_axes, ct_nz) if nz)
  lin_axes = tuple(ax for ax, lin in zip(in_axes, linear) if lin)
  n_res = len(linear) - sum(linear)

  def divide(xs):
    out = list(xs[:n_res])
    for x, ax in zip(xs[n_res:], ct_axes):
      if ax is None and axis_size != 1 and core.get_aval(x).dtype != dtypes.float0:
        aval = core.get_aval(x)
        x = lax_api.div(x, lax_api.scalar_literal(axis_size, aval.dtype, aval.weak_type))
      out.append(x)
    return out

  def post(outs):
    return [parallel.psum(o, axis_name) if ax is None else o
            for o, ax in zip(outs, lin_axes)]

  return _wrap_jaxpr(t_closed, t_closed.in_avals, divide, post, axis_name, axis_size)


@pmap_p.def_transpose
def _pmap_transpose(cts, *args, jaxpr, axis_name, axis_size, devices, in_axes, out_axes, name):
  linear = tuple(ad.is_undefined(a) for a in args)
  ct_nz = tuple(type(ct) is not ad.Zero for ct in cts)
  wrapped = core.memo(
      [jaxpr], ("pmap_transpose", linear, ct_nz, in_axes, out_axes, axis_name, axis_size),
      lambda: _transpose_per_device(jaxpr, linear, ct_nz, in_axes, out_axes, axis_name,
                                    axis_size))
  res = [a for a, lin in zip(args, linear) if not lin]
  res_axes = tuple(ax for ax, lin in zip(in_axes, linear) if not lin)
  ct_axes = tuple(ax for ax, nz in zip(out_axes, ct_nz) if nz)
  lin_axes = tuple(ax for ax, lin in zip(in_axes, linear) if lin)
  outs = iter(pmap_p.bind(*res, *[ct for ct in cts if type(ct) is not ad.Zero],
                          jaxpr=wrapped, axis_name=axis_name, axis_size=axis_size,
                          devices=devices, in_axes=res_axes + ct_axes, out_axes=lin_axes,
                          name=name))
  return [next(outs) if lin else None for lin in linear]


class _PmapExecutable:
  """A replicated XLA program with the shardings of its arguments and results."""
  __slots__ = ("loaded", "devices", "in_axes", "in_avals", "handlers", "out_avals",
               "out_shardings", "blocking")

  def __init__(self, closed, name, axis_name, devices, in_axes, out_axes):
    size = len(devices)
    try:
      with batching.extend_axis_env(axis_name, size):   # (lowerings may trace bodies again)
        module = mlir.lower_jaxpr_to_module(
            f"pmap_{name}", closed, num_replicas=size, axis_env={axis_name: size},
            mesh=Mesh(np.array(devices), ("_internal_pmap_axis_name",)))
    except mlir.MultiDeviceLowering:
      raise NotImplementedError("pmap of a function that calls pmap (nested pmap) is not "
                                "supported by arrax; map the inner function with vmap "
                                "instead.") from None
    options = xc.CompileOptions()
    options.num_replicas = size
    options.num_partitions = 1
    options.device_assignment = xc.DeviceAssignment.create(
        np.array([[d.id] for d in devices]))
    compiler.apply_config_options(options, module.module)
    compiler.dump_module(module.module)
    start = time.perf_counter()
    self.loaded = compiler.backend_compile_and_load(
        xb.get_client(devices[0].platform), module.module, xc.DeviceList(tuple(devices)),
        options, module.host_callbacks)
    if config.jax_log_compiles:
      logger.warning("Finished XLA compilation of pmap(%s) in %.3f sec", name,
                     time.perf_counter() - start)
    self.devices = tuple(devices)
    self.in_axes = in_axes
    self.in_avals = _global_avals(closed.in_avals, in_axes, size)
    self.out_avals = _global_avals(closed.out_avals, out_axes, size)
    self.out_shardings = [split_sharding(devices, axis_name, a.ndim, ax)
                          for a, ax in zip(self.out_avals, out_axes)]
    self.handlers = [
        _jax.array_result_handler(a, xla_sharding(self.devices, a.ndim, ax), True,
                                  _skip_checks=True)
        for a, ax in zip(self.out_avals, out_axes)]
    # XLA's in-process CPU collectives deadlock when several launches of programs with
    # collectives are in flight at once (every device thread waits in a different rendezvous),
    # so such a program starts only when the previous one has finished.
    text = str(module)
    self.blocking = any(op in text for op in _COLLECTIVE_OPS)

  def run(self, args):
    if dispatch.no_execution.value:
      dispatch.raise_no_execution("pmap")
    bufs = [_place(x, a, ax, self.devices) for x, a, ax in zip(args, self.in_avals, self.in_axes)]
    if self.blocking:
      wait_for_collectives()
    raw = self.loaded.execute_sharded(bufs).consume_with_handlers(self.handlers)
    if self.blocking:
      _in_flight.extend(raw)
    return [ShardedArray(b, a, s) for b, a, s in zip(raw, self.out_avals, self.out_shardings)]


def _place(x, aval, axis, devices):
  """The jaxlib array of argument `x` split along `axis` (replicated if None) over `devices`."""
  if type(x) is ShardedArray:
    named = x._named
    if (named.mesh.devices.ndim == 1 and named._device_assignment == devices and
        named._split_dim() == axis):
      return x._gbuf
  if isinstance(x, core.Tracer):
    core._raise_escaped(x)
  if isinstance(x, core.Literal):
    x = x.val
  host = np.asarray(x)
  if host.dtype != aval.dtype:
    host = host.astype(aval.dtype)
  if axis is None:
    pieces = [host] * len(devices)
  else:
    pieces = [host[(slice(None),) * axis + (slice(i, i + 1),)] for i in range(len(devices))]
  return _jax.batched_device_put(aval, xla_sharding(devices, aval.ndim, axis), pieces,
                                 list(devices), True, True, enable_x64=x64_enabled())


# per-device jaxpr -> {(axis name, devices, in_axes, out_axes): executable}; as jit's, an
# entry lives as long as its jaxpr (held by the pmap-wrapped function or an equation).
_exe_cache: "weakref.WeakKeyDictionary" = core.register_cache(weakref.WeakKeyDictionary())


class _CallCache(dict):
  """One pmap-wrapped function's eager calls seen before (weakly listed for clear_caches, so
  the cache goes away with its function)."""
  __slots__ = ("__weakref__",)


_call_caches: weakref.WeakValueDictionary = weakref.WeakValueDictionary()   # id -> cache


class _AllCallCaches:
  def clear(self):
    for cache in list(_call_caches.values()):
      cache.clear()


core.register_cache(_AllCallCaches())
_in_flight: list = []   # the results of the last launched program with collectives


def wait_for_collectives():
  """Wait until the last launched program with collectives has finished (see
  `_PmapExecutable.blocking`): call before launching another such program."""
  if _in_flight:
    _jax.batched_block_until_ready(_in_flight)
    _in_flight.clear()


def _executable(jaxpr, name, axis_name, devices, in_axes, out_axes):
  per_jaxpr = _exe_cache.setdefault(jaxpr, {})
  key = (axis_name, devices, in_axes, out_axes)
  exe = per_jaxpr.get(key)
  if exe is None:
    exe = per_jaxpr[key] = _PmapExecutable(jaxpr, name, axis_name, devices, in_axes, out_axes)
  return exe


@pmap_p.def_impl
def _pmap_impl(*args, jaxpr, axis_name, axis_size, devices, in_axes, out_axes, name):
  return _executable(jaxpr, name, axis_name, devices, in_axes, out_axes).run(args)


# ---- the public function ------------------------------------------------------------------------
def _squeeze(x, axis):
  return x if axis is None else shape_ops.squeeze(x, (axis,))


def _expand(x, axis):
  return x if axis is None else shape_ops.expand_dims(x, (axis,))


def _trace_replica(fun, in_tree, statics, replica_avals, in_axes, out_axes_spec, axis_name,
                   size):
  """The per-device program: squeeze the mapped axes, call `fun`, insert the output axes."""
  box = []

  def flat_fun(*xs):
    xs = [_squeeze(x, ax) for x, ax in zip(xs, in_axes)]
    args, kwargs = tree_util.tree_unflatten(in_tree, xs)
    it = iter(args)
    full = [statics[i] if i in statics else next(it) for i in range(len(args) + len(statics))]
    out = fun(*full, **kwargs)
    leaves, out_tree = tree_util.tree_flatten(out)
    if type(out_axes_spec) is int or out_axes_spec is None:
      flat_out_axes = [out_axes_spec] * len(leaves)
    else:
      flat_out_axes = batching.flatten_axes("pmap out_axes", out_tree, out_axes_spec)
    flat_out_axes = [None if ax is None else ax % (core.get_aval(v).ndim + 1)
                     for v, ax in zip(leaves, flat_out_axes)]
    box.append((out_tree, tuple(flat_out_axes)))
    return [_expand(v, ax) for v, ax in zip(leaves, flat_out_axes)]

  with batching.extend_axis_env(axis_name, size):
    jaxpr, consts = trace_to_jaxpr(flat_fun, list(replica_avals))
  if any(isinstance(c, core.Tracer) for c in consts):
    raise NotImplementedError("pmap of a function closing over values of an enclosing "
                              "transformation is not supported by arrax; pass them as "
                              "arguments.")
  out_tree, flat_out_axes = box[0]
  # The traced program keeps the size-1 per-device axis of every output; its aval without it
  # is what the per-device function returned.
  return core.ClosedJaxpr(jaxpr, consts), out_tree, flat_out_axes


def pmap(fun, axis_name=None, *, in_axes=0, out_axes=0, static_broadcasted_argnums=(),
         devices=None, backend=None, axis_size=None, donate_argnums=()):
  """Map `fun` over the leading (or `in_axes`) axis of its arguments, one slice per device.

  Inside `fun`, collectives (`lax.psum`, `lax.all_gather`, ...) over `axis_name` communicate
  across the devices. `in_axes=None` gives every device the whole argument; `out_axes=None`
  returns one device's (identical) result. The mapped size must not exceed the number of
  devices (simulate several CPU devices with
  `XLA_FLAGS=--xla_force_host_platform_device_count=N`). Donation is accepted and ignored.

  Example:
    >>> pmap(lambda x: lax.psum(x, 'i'), 'i')(jnp.arange(2.))   # on 2 devices
    Array([1., 1.], dtype=float32)
  """
  if not callable(fun):
    raise TypeError(f"Expected a callable value, got {fun}")
  if devices is not None:
    if not devices:
      raise ValueError("'devices' argument to pmap must be non-empty, or None.")
    devices = tuple(devices)
  axis_name = "_internal_pmap_axis_name" if axis_name is None else axis_name
  static_tuple = api_util.ensure_index_tuple(static_broadcasted_argnums)
  api_util.ensure_index_tuple(donate_argnums)
  batching.check_axis_leaves("pmap in_axes", in_axes)
  batching.check_axis_leaves("pmap out_axes", out_axes)
  if isinstance(in_axes, list):
    in_axes = tuple(in_axes)
  name = getattr(fun, "__name__", type(fun).__name__)
  traces = {}   # (signature) -> (per-device jaxpr, out tree, out axes)
  # (signature) -> (executable, out tree): eager calls seen before
  fast = _CallCache()
  _call_caches[id(fast)] = fast

  @functools.wraps(fun, updated=())
  def pmap_f(*args, **kwargs):
    if static_tuple:
      if max(static_tuple) >= len(args):
        raise ValueError(
            f"pmapped function has static_broadcasted_argnums={static_tuple} but was called "
            f"with only {len(args)} positional argument{'s' if len(args) > 1 else ''}. All "
            "static broadcasted arguments must be passed positionally.")
      statics = {i: args[i] for i in static_tuple}
      dyn_idx = [i for i in range(len(args)) if i not in statics]
      dyn_args = tuple(args[i] for i in dyn_idx)
      dyn_in_axes = (tuple(in_axes[i] for i in dyn_idx) if isinstance(in_axes, tuple)
                     else in_axes)
      for v in statics.values():
        try:
          hash(v)
        except TypeError:
          raise ValueError(f"Non-hashable static arguments are not supported. An error "
                           f"occurred while trying to hash an object of type {type(v)}, "
                           f"{v}.") from None
    else:
      statics, dyn_args, dyn_in_axes = {}, args, in_axes
    leaves, in_tree = tree_util.tree_flatten((dyn_args, kwargs))
    avals = tuple(x.aval if isinstance(x, Array) else core.get_aval(x) for x in leaves)
    static_key = tuple(sorted(statics.items())) if statics else ()
    eager = core.trace_ctx.trace is core.eval_trace
    if eager:   # the hot path: a signature seen before
      fast_key = (in_tree, avals, static_key, trace_state())
      hit = fast.get(fast_key)
      if hit is not None:
        exe, out_tree = hit
        return tree_util.tree_unflatten(out_tree, exe.run(leaves))
    if type(dyn_in_axes) is int and not kwargs:
      in_flat = [dyn_in_axes] * len(leaves)
    else:
      if isinstance(dyn_in_axes, tuple) and len(dyn_in_axes) != len(dyn_args):
        raise ValueError(f"pmap in_axes specification must be a tree prefix of the "
                         f"corresponding value, got specification {dyn_in_axes} for value "
                         f"tree {in_tree}.")
      in_flat = batching.flatten_axes("pmap in_axes", in_tree, (dyn_in_axes, 0), kws=True)
    for a, ax in zip(avals, in_flat):
      if ax is not None and not -a.ndim <= ax < a.ndim:
        rank = ax + 1 if ax >= 0 else -ax
        raise ValueError(f"pmap was requested to map its argument along axis {ax}, which "
                         f"implies that its rank should be at least {rank}, but is only "
                         f"{a.ndim} (its shape is {a.shape})")
    in_flat = tuple(None if ax is None else ax % max(a.ndim, 1)
                    for a, ax in zip(avals, in_flat))
    sizes = [a.shape[ax] for a, ax in zip(avals, in_flat) if ax is not None]
    if not sizes:
      raise ValueError("pmap requires at least one argument with a mapped axis.")
    size = sizes[0]
    if any(s != size for s in sizes):
      raise ValueError(f"pmap got inconsistent sizes for array axes to be mapped: "
                       f"{sorted(set(sizes))}")
    if axis_size is not None and axis_size != size:
      raise ValueError(f"Specified axis_size {axis_size} doesn't match received axis_size "
                       f"{size}.")
    all_devices = devices if devices is not None else tuple(xb.devices(backend))
    local_size, size = size, pmap_multiprocess.global_axis_size(size, devices, backend)
    if size > len(all_devices):
      raise ValueError(f"compiling computation that requires {size} logical devices, but only "
                       f"{len(all_devices)} XLA devices are available (num_replicas={size})")
    mesh_devices = tuple(all_devices[:size])
    replica_avals = tuple(a if ax is None else _global_aval(a, ax, 1)
                          for a, ax in zip(avals, in_flat))
    key = (in_tree, replica_avals, in_flat, static_key, trace_state(), mesh_devices)
    hit = traces.get(key)
    if hit is None:
      hit = traces[key] = _trace_replica(fun, in_tree, statics, replica_avals, in_flat,
                                         out_axes, axis_name, size)
    closed, out_tree, out_flat = hit
    params = dict(jaxpr=closed, axis_name=axis_name, axis_size=size, devices=mesh_devices,
                  in_axes=in_flat, out_axes=out_flat, name=name)
    if eager:
      exe = _executable(closed, name, axis_name, mesh_devices, in_flat, out_flat)
      if size != local_size:   # several processes: local arguments and results
        exe = pmap_multiprocess.ProcessLocalPmap(exe, axis_name)
      fast[fast_key] = (exe, out_tree)
      outs = exe.run(leaves)
    else:
      if size != local_size:
        raise NotImplementedError("pmap inside another transformation in a job of several "
                                  "processes")
      outs = pmap_p.bind(*leaves, **params)
    return tree_util.tree_unflatten(out_tree, outs)

  return pmap_f
