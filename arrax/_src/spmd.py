"""`jit(f, in_shardings=..., out_shardings=...)`: one program partitioned by XLA over a mesh.

The function is traced on the global avals and lowered once with `num_partitions` = the mesh
size; every argument and every specified result carries an `mhlo.sharding` attribute (the
HLO form of its NamedSharding), and XLA's SPMD partitioner splits the computation and inserts
the communication. Arguments are placed as their shardings say (a ShardedArray already laid
out that way is passed as is); results are ShardedArrays. A result whose sharding is left
unspecified gets the layout XLA chose, named by the first PartitionSpec over the mesh with
that HLO sharding. Under another transformation (grad, vmap, an outer jit) the call is an
ordinary jit: shardings only place data, they never change values.
"""
from __future__ import annotations

import functools
import itertools

import numpy as np
from jaxlib import _jax, xla_client as xc
from jaxlib.mlir import ir

from arrax._src import backend as xb, batching, compiler, core, dispatch, jit as jit_mod, mlir, pmap
from arrax._src.api import _abstractify, _put_named, device_put as api_device_put
from arrax._src.array import ShardedArray
from arrax._src.sharding_impls import (NamedSharding, PartitionSpec, SingleDeviceSharding,
                                       _named_xla_sharding, get_mesh)
from arrax._src.tracing import trace_to_jaxpr
from arrax._src.tree_util import tree_flatten, tree_structure, tree_unflatten


def _per_leaf(name, tree, shardings):
  if isinstance(shardings, jit_mod._Unspecified):
    return [None] * tree.num_leaves
  out = batching.flatten_axes(name, tree, shardings)
  if any(isinstance(s, PartitionSpec) for s in out):
    mesh = get_mesh()
    if mesh.empty:
      raise RuntimeError(
          f"jit requires a non-empty mesh in context if you are passing `PartitionSpec`s to "
          f"{name}. You can define a context mesh via `jax.set_mesh(mesh)`. Alternatively, "
          f"provide `Sharding`s to {name} and then the mesh context manager is not required.")
    out = [NamedSharding(mesh, s) if isinstance(s, PartitionSpec) else s for s in out]
  for s in out:
    if isinstance(s, SingleDeviceSharding):
      raise NotImplementedError(f"jit {name}: arrax supports NamedShardings there (a "
                                "SingleDeviceSharding: use device_put before the call).")
    if not (s is None or isinstance(s, NamedSharding)):
      raise TypeError(f"jit {name} must be Shardings (or None), got {s!r}")
  return out


def _sharding_attr(sharding, ndim):
  """The `mhlo.sharding` attribute of an argument or result laid out as `sharding` says."""
  return ir.StringAttr.get(str(sharding._xla_sharding(ndim)._hlo_sharding))


class _Executable:
  __slots__ = ("loaded", "mesh", "in_shardings", "out_shardings", "handlers", "out_avals",
               "out_tree")

  def __init__(self, name, closed, mesh, in_shardings, out_specified, out_tree):
    devices = tuple(mesh.devices.flat)
    lowered = mlir.lower_jaxpr_to_module(name, closed, num_partitions=len(devices), mesh=mesh)
    if lowered.host_callbacks:
      raise NotImplementedError("jit with shardings of a function with host callbacks")
    n_out = len(closed.out_avals)
    names = ["result"] if n_out == 1 else [f"result[{i}]" for i in range(n_out)]
    with lowered.module.context:
      main = next(op for op in lowered.module.body.operations
                  if ir.StringAttr(op.attributes["sym_name"]).value == "main")
      main.arg_attrs = ir.ArrayAttr.get([
          ir.DictAttr.get({"mhlo.sharding": _sharding_attr(s, a.ndim)})
          for s, a in zip(in_shardings, closed.in_avals)])
      res = []
      for nm, s, a in zip(names, out_specified, closed.out_avals):
        attrs = {"jax.result_info": ir.StringAttr.get(nm)}
        if s is not None:
          attrs["mhlo.sharding"] = _sharding_attr(s, a.ndim)
        res.append(ir.DictAttr.get(attrs))
      main.result_attrs = ir.ArrayAttr.get(res)
    client = xb.get_client(devices[0].platform)
    options = xc.CompileOptions()
    options.num_replicas = 1
    options.num_partitions = len(devices)
    options.device_assignment = xc.DeviceAssignment.create(np.array([[d.id for d in devices]]))
    build = options.executable_build_options
    build.use_spmd_partitioning = True
    build.allow_spmd_sharding_propagation_to_parameters = [False] * len(closed.in_avals)
    build.allow_spmd_sharding_propagation_to_output = [s is None for s in out_specified]
    self.loaded = compiler.backend_compile_and_load(client, lowered.module, xc.DeviceList(devices),
                                                    options)
    self.mesh = mesh
    self.in_shardings = in_shardings
    self.out_avals = closed.out_avals
    self.out_tree = out_tree
    chosen = self.loaded.get_output_shardings()
    if chosen is None:   # (a one-device mesh: nothing is partitioned)
      chosen = [xc.HloSharding.replicate()] * len(out_specified)
    self.out_shardings = [s if s is not None else _named_from_hlo(mesh, c, a.ndim)
                          for s, c, a in zip(out_specified, chosen, closed.out_avals)]
    self.handlers = [_jax.array_result_handler(a, s._xla_sharding(a.ndim), True,
                                               _skip_checks=True)
                     for a, s in zip(self.out_avals, self.out_shardings)]

  def run(self, leaves):
    if dispatch.no_execution.value:
      dispatch.raise_no_execution("jit")
    bufs = [x._gbuf if type(x) is ShardedArray and x._named == s else _put_named(x, s)._gbuf
            for x, s in zip(leaves, self.in_shardings)]
    pmap.wait_for_collectives()   # (XLA's CPU collectives: one such program at a time)
    raw = self.loaded.execute_sharded(bufs).consume_with_handlers(self.handlers)
    _jax.batched_block_until_ready(raw)
    return [ShardedArray(b, a, s) for b, a, s in zip(raw, self.out_avals, self.out_shardings)]


def _candidate_specs(mesh, ndim):
  """PartitionSpecs of rank `ndim` over `mesh`, fewest mesh axes used first."""
  names = mesh.axis_names
  for used in range(len(names) + 1):
    for subset in itertools.permutations(names, used):
      for cuts in itertools.product(range(ndim), repeat=used):
        parts = [[] for _ in range(ndim)]
        for name, dim in zip(subset, cuts):
          parts[dim].append(name)
        if any(parts[d] != [n for n in subset if n in parts[d]] for d in range(ndim)):
          continue
        spec = [None if not p else p[0] if len(p) == 1 else tuple(p) for p in parts]
        while spec and spec[-1] is None:
          spec.pop()
        yield PartitionSpec(*spec)


def _named_from_hlo(mesh, op_sharding, ndim):
  target = xc.HloSharding.from_proto(op_sharding) if not isinstance(
      op_sharding, xc.HloSharding) else op_sharding
  if target.is_replicated():
    return NamedSharding(mesh, PartitionSpec())
  for spec in _candidate_specs(mesh, ndim):
    if _named_xla_sharding(mesh, spec, ndim)._hlo_sharding == target:
      return NamedSharding(mesh, spec)
  raise NotImplementedError(f"jit: XLA chose the layout {target} for a result, which no "
                            f"PartitionSpec over {mesh} describes; give out_shardings.")


def _equivalent(x, s):
  """Whether the committed array `x` is laid out as `s` says."""
  mine = x.sharding
  if mine == s:
    return True
  return (tuple(mine._device_assignment) == s._device_assignment and
          mine.devices_indices_map(x.shape) == s.devices_indices_map(x.shape))


class ShardedJit:
  """`jit` with in_shardings and/or out_shardings (see the module docstring)."""

  def __init__(self, fun, in_shardings, out_shardings, plain):
    self._fun = fun
    self._in = in_shardings
    self._out = out_shardings
    self._plain = plain
    self._name = getattr(fun, "__name__", type(fun).__name__)
    self._cache: dict = {}
    self._named_shardings = [s for s in tree_flatten((in_shardings, out_shardings))[0]
                             if isinstance(s, (NamedSharding, SingleDeviceSharding,
                                               PartitionSpec))]
    functools.update_wrapper(self, fun, updated=())

  def __repr__(self):
    return f"<JitWrapped({self._fun!r})>"

  def __get__(self, obj, objtype=None):
    if obj is None:
      return self
    return functools.partial(self, obj)

  def __getattr__(self, name):
    # Stages and the rest (lower, trace, eval_shape, clear_cache, ...) are an ordinary
    # jit's: they describe the single-device program.
    if name.startswith("__") or name in ("_plain", "_fun"):
      raise AttributeError(name)
    return getattr(self._plain, name)

  def __call__(self, *args, **kwargs):
    leaves, in_tree = tree_flatten((args, kwargs))
    if core.trace_ctx.trace is not core.eval_trace or any(
        isinstance(x, core.Tracer) for x in leaves):
      return self._plain(*args, **kwargs)
    if not self._named_shardings and not any(type(x) is ShardedArray for x in leaves):
      return self._plain(*args, **kwargs)   # (shardings all None: an ordinary jit)
    if kwargs and not isinstance(self._in, jit_mod._Unspecified):
      raise ValueError("pjit does not support kwargs when in_shardings is specified.")
    arg_shardings = _per_leaf("in_shardings", tree_structure(args), self._in)
    arg_shardings += [None] * (len(leaves) - len(arg_shardings))
    for x, s in zip(leaves, arg_shardings):
      if (s is not None and isinstance(x, np.ndarray) and not s.is_fully_replicated and
          xb.process_count() > 1):
        raise ValueError(
            "Passing non-trivial shardings for numpy inputs is not allowed. To fix this error, "
            "either specify a replicated sharding explicitly or use "
            "`jax.make_array_from_process_local_data(...)` to convert your host local numpy "
            "inputs to a jax.Array which you can pass to jit. If the numpy input is the same "
            "on each process, then you can use `jax.make_array_from_callback(...) to create a "
            f"`jax.Array` which you can pass to jit. Got arg type: {_abstractify(x)}")
      if s is not None and getattr(x, "committed", False) and not _equivalent(x, s):
        raise ValueError(
            f"Sharding passed to jit does not match the sharding on the respective arg. Got "
            f"jit sharding: {s!r},\narg sharding: {x.sharding!r} for arg type: "
            f"{x.aval.str_short() if hasattr(x.aval, 'str_short') else x.aval}")
    avals = [_abstractify(x) for x in leaves]
    key = (in_tree, tuple(avals), tuple(arg_shardings), get_mesh(),
           tuple(x._named if type(x) is ShardedArray else None for x in leaves))
    exe = self._cache.get(key)
    if exe is None:
      exe = self._cache[key] = self._compile(leaves, in_tree, avals, arg_shardings)
    outs = exe.run(leaves)
    return tree_unflatten(exe.out_tree, outs)

  def _compile(self, leaves, in_tree, avals, arg_shardings):
    box = []

    def flat_fun(*flat):
      a, k = tree_unflatten(in_tree, flat)
      out_leaves, out_tree = tree_flatten(self._fun(*a, **k))
      box.append(out_tree)
      return out_leaves

    jaxpr, consts = trace_to_jaxpr(flat_fun, avals)
    out_tree = box[0]
    closed = core.ClosedJaxpr(jaxpr, consts)
    out_specified = _per_leaf("out_shardings", out_tree, self._out)
    named = [s for s in arg_shardings + out_specified if s is not None]
    named += [x._named for x in leaves if type(x) is ShardedArray]
    if not named:
      raise NotImplementedError("jit with shardings: no NamedSharding names the mesh")
    mesh = named[0].mesh
    devices = tuple(mesh.devices.flat)
    for s in named:
      if s._device_assignment != devices:
        raise ValueError(f"Received incompatible devices for jitted computation. Got "
                         f"{s!r}, whose devices differ from those of {named[0]!r}.")
    resolved = []
    for x, s in zip(leaves, arg_shardings):
      if s is None:
        s = (x._named if type(x) is ShardedArray and x._named._device_assignment == devices
             else NamedSharding(mesh, PartitionSpec()))
      resolved.append(s)
    for s, a in zip(resolved, closed.in_avals):
      s.check_compatible(a.shape, "pjit arguments")
    for s, a in zip(out_specified, closed.out_avals):
      if s is not None:
        s.check_compatible(a.shape, "pjit outputs")
    return _Executable(self._name, closed, mesh, resolved, out_specified, out_tree)


jit_mod.register_sharded_jit(ShardedJit)


# ---- reshard, auto_axes, explicit_axes -----------------------------------------------------------
def _resolve(s):
  if isinstance(s, PartitionSpec):
    mesh = get_mesh()
    if mesh.empty:
      raise ValueError(
          "Using PartitionSpec when you are not under a mesh context is not allowed. Please "
          "pass a NamedSharding instance or enter into a mesh context via `jax.set_mesh`. Got "
          f"{s}")
    return NamedSharding(mesh, s)
  if not isinstance(s, (NamedSharding, SingleDeviceSharding)):
    raise TypeError(f"reshard out_shardings must be Shardings or PartitionSpecs, got {s!r}")
  return s


def reshard(xs, out_shardings):
  """Lay the arrays `xs` out as `out_shardings` (a tree prefix: NamedShardings, or
  PartitionSpecs over the mesh set by set_mesh) say. Values never change: under a
  transformation the arrays pass through unchanged."""
  leaves, tree = tree_flatten(xs)
  targets = batching.flatten_axes("reshard out_shardings", tree, out_shardings)
  targets = [_resolve(s) for s in targets]
  out = []
  for x, s in zip(leaves, targets):
    if isinstance(x, core.Tracer) or core.trace_ctx.trace is not core.eval_trace:
      out.append(x)
    elif isinstance(s, SingleDeviceSharding):
      out.append(api_device_put(x, s))
    else:
      s.check_compatible(np.shape(x), "reshard args")
      out.append(x if type(x) is ShardedArray and x._named == s else _put_named(x, s))
  return tree_unflatten(tree, out)


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
  """Run `f` with the mesh axes `axes` treated as Auto (arrax's shardings never constrain
  values, so `f` runs as is) and lay its results out as `out_sharding` says."""
  def wrap(g):
    @functools.wraps(g)
    def wrapped(*args, **kwargs):
      out = g(*args, **kwargs)
      return out if out_sharding is None else reshard(out, out_sharding)
    return wrapped
  return wrap if f is None else wrap(f)


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
  """Run `f` with the mesh axes `axes` treated as Explicit, its arguments laid out as
  `in_sharding` says first."""
  def wrap(g):
    @functools.wraps(g)
    def wrapped(*args, **kwargs):
      if in_sharding is not None:
        args = reshard(args, in_sharding if isinstance(in_sharding, tuple) and
                       len(args) != 1 else (in_sharding,) if len(args) == 1 else in_sharding)
      return g(*args, **kwargs)
    return wrapped
  return wrap if f is None else wrap(f)
