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
import warnings
from typing import Any, NamedTuple

import numpy as np
from jaxlib import _jax, xla_client as xc
from jaxlib.mlir import ir

from arrax._src import backend as xb, batching, compiler, core, dispatch, jit as jit_mod, mlir, pmap
from arrax._src.api import (ShapeDtypeStruct, _abstractify, _put_named,
                            device_put as api_device_put)
from arrax._src.array import ShardedArray
from arrax._src.config import trace_state
from arrax._src.sharding_impls import (AbstractMesh, AxisType, Mesh, NamedSharding,
                                       PartitionSpec, SingleDeviceSharding, _named_xla_sharding,
                                       concrete_mesh, get_abstract_mesh, get_mesh, type_sharding,
                                       use_abstract_mesh)
from arrax._src.sharding_types import reshard_p
from arrax._src.numpy import util as numpy_util
from arrax._src.tree_util import tree_flatten, tree_structure, tree_unflatten


def _per_leaf(name, tree, shardings):
  if isinstance(shardings, jit_mod._Unspecified):
    return [None] * tree.num_leaves
  try:
    out = batching.flatten_axes(name, tree, shardings)
  except ValueError:
    if name == "in_shardings" and tree_structure(shardings).num_nodes != 1 and (
        type(shardings) is not tuple or len(shardings) != len(tree.children())):
      _raise_args_prefix(f"pjit {name}", tree, shardings)
    raise
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


def _raise_args_prefix(what, tree, shardings):
  """JAX's ValueError for in_shardings that cannot be a prefix of the arguments tuple."""
  n = len(tree.children())
  msg = (f"{what} specification must be a tree prefix of the positional arguments tuple. In "
         f"particular, {what} must either be a Sharding, a PartitionSpec, or a tuple of length "
         "equal to the number of positional arguments.")
  if type(shardings) is not tuple:
    msg += f" But {what} is not a tuple: got {type(shardings)} instead."
  else:
    msg += (f" But {what} is the wrong length: got a tuple or list of length "
            f"{len(shardings)} for an args tuple of length {n}.")
  if n == 1:
    try:
      batching.flatten_axes(what, tree, (shardings,))
    except ValueError:
      pass
    else:
      msg += (f" Given the corresponding argument being passed, it looks like {what} might "
              "need to be wrapped in a singleton tuple.")
  raise ValueError(msg)


def _sharding_attr(sharding, ndim):
  """The `mhlo.sharding` attribute of an argument or result laid out as `sharding` says."""
  return ir.StringAttr.get(str(sharding._xla_sharding(ndim)._hlo_sharding))


def _spmd_module(name, closed, mesh, in_shardings, out_specified, donated=None,
                 arg_names=None):
  """The module of `closed` partitioned over `mesh`: its arguments and specified results carry
  their `mhlo.sharding`, donated arguments their aliases or donor marks."""
  aliases, donors = _donation(closed, in_shardings, out_specified, donated, mesh.size)
  lowered = mlir.lower_jaxpr_to_module(name, closed, num_partitions=mesh.size, mesh=mesh,
                                       arg_names=arg_names)
  if lowered.host_callbacks:
    raise NotImplementedError("jit with shardings of a function with host callbacks")
  n_out = len(closed.out_avals)
  names = ["result"] if n_out == 1 else [f"result[{i}]" for i in range(n_out)]
  with lowered.module.context:
    main = next(op for op in lowered.module.body.operations
                if ir.StringAttr(op.attributes["sym_name"]).value == "main")
    old = list(main.arg_attrs) if "arg_attrs" in main.attributes else [None] * len(in_shardings)
    args = []
    for i, (s, a) in enumerate(zip(in_shardings, closed.in_avals)):
      attrs = {} if old[i] is None else {n.name: n.attr for n in ir.DictAttr(old[i])}
      attrs["mhlo.sharding"] = _sharding_attr(s, a.ndim)
      if aliases is not None and aliases[i] is not None:
        attrs["tf.aliasing_output"] = mlir.i32_attr(aliases[i])
      elif donors is not None and donors[i]:
        attrs["jax.buffer_donor"] = ir.BoolAttr.get(True)
      args.append(ir.DictAttr.get(attrs))
    main.arg_attrs = ir.ArrayAttr.get(args)
    res = []
    for nm, s, a in zip(names, out_specified, closed.out_avals):
      attrs = {"jax.result_info": ir.StringAttr.get(nm)}
      if s is not None:
        attrs["mhlo.sharding"] = _sharding_attr(s, a.ndim)
      res.append(ir.DictAttr.get(attrs))
    main.result_attrs = ir.ArrayAttr.get(res)
  return lowered


class _Executable:
  __slots__ = ("loaded", "mesh", "in_shardings", "out_shardings", "handlers", "out_avals",
               "out_tree", "donated")

  def __init__(self, name, closed, mesh, in_shardings, out_specified, out_tree, donated=None,
               arg_names=None, compiler_options=(), lowered=None):
    devices = tuple(mesh.devices.flat)
    if lowered is None:
      lowered = _spmd_module(name, closed, mesh, in_shardings, out_specified, donated,
                             arg_names)
    client = xb.get_client(devices[0].platform)
    options = xc.CompileOptions()
    options.num_replicas = 1
    options.num_partitions = len(devices)
    options.device_assignment = xc.DeviceAssignment.create(np.array([[d.id for d in devices]]))
    build = options.executable_build_options
    build.use_spmd_partitioning = True
    build.allow_spmd_sharding_propagation_to_parameters = [False] * len(closed.in_avals)
    build.allow_spmd_sharding_propagation_to_output = [s is None for s in out_specified]
    compiler.apply_config_options(options, lowered.module)
    if compiler_options:
      compiler.apply_overrides(options, compiler_options)
    compiler.dump_module(lowered.module)
    self.loaded = compiler.backend_compile_and_load(client, lowered.module, xc.DeviceList(devices),
                                                    options)
    self.mesh = mesh
    self.in_shardings = in_shardings
    # (results of out_shardings over Explicit mesh axes have those shardings in their types)
    self.out_avals = [a if s is None or not isinstance(a, core.ShapedArray) else
                      core.intern_aval(a.update(sharding=s)) for a, s in
                      zip(closed.out_avals, out_specified)]
    self.out_tree = out_tree
    self.donated = donated
    chosen = self.loaded.get_output_shardings()
    if chosen is None:   # (a one-device mesh: nothing is partitioned)
      chosen = [xc.HloSharding.replicate()] * len(out_specified)
    self.out_shardings = [s if s is not None else _named_from_hlo(mesh, c, a.ndim)
                          for s, c, a in zip(out_specified, chosen, closed.out_avals)]
    self.handlers = [_jax.array_result_handler(core.ShapedArray(a.shape, a.dtype, a.weak_type),
                                               s._xla_sharding(a.ndim), True, _skip_checks=True)
                     for a, s in zip(self.out_avals, self.out_shardings)]

  def run(self, leaves):
    if dispatch.no_execution.value:
      dispatch.raise_no_execution("jit")
    bufs = [x._gbuf if type(x) is ShardedArray and x._named == s else _put_named(x, s)._gbuf
            for x, s in zip(leaves, self.in_shardings)]
    if self.donated:
      for x, d in zip(leaves, self.donated):
        if d and type(x) is ShardedArray:   # (its buffer goes: no gathered copy may outlive it)
          x._npy = x._gathered = x._shard_bufs = None
    pmap.wait_for_collectives()   # (XLA's CPU collectives: one such program at a time)
    try:
      raw = self.loaded.execute_sharded(bufs).consume_with_handlers(self.handlers)
    except _jax.JaxRuntimeError:
      dispatch.raise_if_deleted(leaves)
      raise
    _jax.batched_block_until_ready(raw)
    return [ShardedArray(b, a, s) for b, a, s in zip(raw, self.out_avals, self.out_shardings)]


def _donation(closed, in_shardings, out_specified, donated, n_devices):
  """(aliases, donors) of the donated arguments, as JAX decides them: with every result's
  layout given, matched to results by their per-device shapes (as a plain jit matches), else
  (more than one device) all handed to XLA as buffer donors; (None, None) without donation."""
  if not donated:
    return None, None
  if n_devices > 1 and any(s is None for s in out_specified):
    return None, list(donated)

  def local(s, a):
    if not isinstance(a, core.ShapedArray):
      return a
    return core.ShapedArray(tuple(s.shard_shape(a.shape)), a.dtype)
  aliases, donors, unusable = mlir.donation_plan(
      [local(s, a) for s, a in zip(in_shardings, closed.in_avals)],
      [local(s, a) for s, a in zip(out_specified, closed.out_avals)], donated)
  if unusable:
    warnings.warn("Some donated buffers were not usable: "
                  f"{', '.join(str(a) for a in unusable)}.\nSee an explanation at "
                  "https://docs.jax.dev/en/latest/faq.html#buffer-donation.", stacklevel=4)
  return aliases, donors


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
    # The rest (eval_shape, ...) is the ordinary jit's.
    if name.startswith("__") or name in ("_plain", "_fun"):
      raise AttributeError(name)
    return getattr(self._plain, name)

  def _cache_size(self):
    return len(self._cache) + self._plain._cache_size()

  def clear_cache(self):
    self._cache.clear()
    self._plain.clear_cache()

  def __call__(self, *args, **kwargs):
    # Static arguments and donation are the plain jit's: its split, hashing and trace cache.
    plain = self._plain
    if plain._has_static:
      dyn_args, dyn_kwargs, statics = plain._split_static(args, kwargs)
    else:
      dyn_args, dyn_kwargs, statics = args, kwargs, ()
    leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
    if core.trace_ctx.trace is not core.eval_trace or any(
        isinstance(x, core.Tracer) for x in leaves):
      return plain(*args, **kwargs)
    if not self._named_shardings and not any(type(x) is ShardedArray for x in leaves):
      return plain(*args, **kwargs)   # (shardings all None: an ordinary jit)
    avals, arg_shardings = self._arguments(args, kwargs, dyn_args, leaves, _abstractify)
    key = (in_tree, tuple(avals), tuple(arg_shardings), get_mesh(),
           tuple(x._named if type(x) is ShardedArray else None for x in leaves), statics)
    exe = self._cache.get(key)
    if exe is None:
      plan = self._plan(args, kwargs, dyn_args, dyn_kwargs, statics, leaves, in_tree, avals,
                        arg_shardings)
      exe = self._cache[key] = _Executable(
          self._name, plan.closed, plan.mesh, plan.in_shardings, plan.out_specified,
          plan.out_tree, plan.donated, plan.arg_names, compiler_options=plain._compiler_options)
    outs = exe.run(leaves)
    return tree_unflatten(exe.out_tree, outs)

  def _arguments(self, args, kwargs, dyn_args, leaves, aval_of):
    """(avals, in_shardings) of the flat dynamic arguments, checked as JAX checks them."""
    if kwargs and not isinstance(self._in, jit_mod._Unspecified):
      # (static keyword arguments count too, as in JAX)
      raise ValueError("pjit does not support kwargs when in_shardings is specified.")
    # in_shardings: a prefix of the dynamic positional arguments (static ones removed).
    arg_shardings = _per_leaf("in_shardings", tree_structure(dyn_args), self._in)
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
    avals = [aval_of(x) for x in leaves]
    if core.sharding_typing.on or any(s is not None for s in arg_shardings):
      # (arguments placed over Explicit mesh axes have those shardings in their types)
      avals = [a if s is None or not isinstance(a, core.ShapedArray) else
               a.update(sharding=type_sharding(s, a.shape)) for a, s in zip(avals, arg_shardings)]
    return avals, arg_shardings

  def _plan(self, args, kwargs, dyn_args, dyn_kwargs, statics, leaves, in_tree, avals,
            arg_shardings):
    """The `_Plan` of a call: the traced program and how its arguments and results lie."""
    plain = self._plain
    closed, out_tree, names = plain._staged_closed(args, kwargs, dyn_args, dyn_kwargs, in_tree,
                                                   tuple(avals), statics)
    donated = plain._donation(args, kwargs)
    out_specified = _per_leaf("out_shardings", out_tree, self._out)
    named = [s for s in arg_shardings + out_specified if s is not None]
    named += [s for s in map(_layout_of, leaves) if s is not None]
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
        s = _layout_of(x)
        if s is None or s._device_assignment != devices:
          s = NamedSharding(mesh, PartitionSpec())
      resolved.append(s)
    for s, a in zip(resolved, closed.in_avals):
      s.check_compatible(a.shape, "pjit arguments")
    for s, a in zip(out_specified, closed.out_avals):
      if s is not None:
        s.check_compatible(a.shape, "pjit outputs")
    return _Plan(closed, mesh, resolved, out_specified, out_tree, donated, names, in_tree)

  # ---- stages: the partitioned program -------------------------------------------------------
  def trace(self, *args, **kwargs):
    """Trace for these arguments (arrays or ShapeDtypeStructs); `.lower()` of the result is
    the program partitioned over the mesh."""
    plain = self._plain
    traced = plain.trace(*args, **kwargs)
    if not self._named_shardings:
      return traced
    dyn_args, dyn_kwargs, statics = plain._split_static(args, kwargs)
    leaves, in_tree = tree_flatten((dyn_args, dyn_kwargs))
    avals, arg_shardings = self._arguments(args, kwargs, dyn_args, leaves, jit_mod._arg_aval)
    plan = self._plan(args, kwargs, dyn_args, dyn_kwargs, statics, leaves, in_tree, avals,
                      arg_shardings)
    return _SpmdTraced(traced, self, plan)

  def lower(self, *args, **kwargs):
    return self.trace(*args, **kwargs).lower()


class _Plan(NamedTuple):
  """A jit with shardings planned for some arguments: what its partitioned program needs."""
  closed: Any
  mesh: Any
  in_shardings: list
  out_specified: list
  out_tree: Any
  donated: Any
  arg_names: Any
  in_tree: Any


def _layout_of(x):
  """The NamedSharding an argument (a ShardedArray, or a ShapeDtypeStruct given one) has."""
  if type(x) is ShardedArray:
    return x._named
  s = getattr(x, "sharding", None) if not isinstance(x, core.Tracer) else None
  return s if isinstance(s, NamedSharding) and isinstance(x, ShapeDtypeStruct) else None


class _SpmdTraced(jit_mod.Traced):
  """A jit with shardings traced: its jaxpr, and the partitioned program when lowered."""

  def __init__(self, traced, sharded, plan):
    self.__dict__.update(traced.__dict__)
    self._sharded = sharded
    self._plan = plan

  def lower(self, *, lowering_platforms=None):
    p = self._plan
    module = _spmd_module(self._sharded._name, p.closed, p.mesh, p.in_shardings,
                          p.out_specified, p.donated, p.arg_names)
    return _SpmdLowered(self._jitted, None, self._closed, p.out_tree, module, p.in_tree,
                        self._donated, sharded=self._sharded, plan=p)


class _SpmdLowered(jit_mod.Lowered):
  """The partitioned module of a jit with shardings; `compile` gives its executable."""

  def __init__(self, *args, sharded, plan, **kwargs):
    super().__init__(*args, **kwargs)
    self._sharded = sharded
    self._plan = plan

  def compile(self, compiler_options=None):
    p = self._plan
    options = self._jitted._compiler_options + jit_mod._compiler_options_kvs(compiler_options)
    exe = _Executable(self._sharded._name, p.closed, p.mesh, p.in_shardings, p.out_specified,
                      p.out_tree, p.donated, compiler_options=options, lowered=self._module)
    return _SpmdCompiled(exe, p.in_tree, p.out_tree, self._jitted, p.closed, self._donated)


class _SpmdCompiled(jit_mod.Compiled):
  """The executable of a jit with shardings, called with the dynamic arguments only."""

  def __init__(self, exe, in_tree, out_tree, jitted, closed, donated):
    super().__init__(exe, in_tree, out_tree, jitted, None, closed, donated)

  @property
  def input_shardings(self):
    return tree_unflatten(self.in_tree, list(self._exe.in_shardings))

  @property
  def output_shardings(self):
    return tree_unflatten(self.out_tree, list(self._exe.out_shardings))

  def __call__(self, *args, **kwargs):
    leaves, treedef = tree_flatten((args, kwargs))
    if treedef != self.in_tree:
      raise TypeError("Function compiled with input pytree does not match the input pytree it "
                      f"was called with: compiled for {self.in_tree}, called with {treedef}.")
    return tree_unflatten(self.out_tree, self._exe.run(leaves))


jit_mod.register_sharded_jit(ShardedJit)


# ---- shardings in types: eager results, jit over typed arguments ------------------------------
def _mesh_spec(aval):
  spec = aval.sharding.spec.partitions if aval.sharding is not None else (None,) * aval.ndim
  return PartitionSpec(*spec)


def _place(x, aval):
  """`x` laid out over the devices of its type's mesh as `aval` (sharded) says, typed `aval`."""
  named = NamedSharding(concrete_mesh(aval.sharding.mesh), _mesh_spec(aval))
  placed = x if type(x) is ShardedArray and x._named == named else _put_named(x, named)
  return placed if placed.aval == aval else ShardedArray(placed._gbuf, aval, named)


def _place_typed(arr):
  """An eager result whose type carries a sharding, laid out over its mesh as the type says."""
  return _place(arr, arr.aval)


dispatch.register_typed_placement(_place_typed)


def _typed_executable(name, closed, mesh):
  """`closed` compiled over `mesh`, each argument and result laid out as its type says."""
  return _Executable(name, closed, mesh, [NamedSharding(mesh, _mesh_spec(a)) for a in
                                          closed.in_avals],
                     [NamedSharding(mesh, _mesh_spec(a)) for a in closed.out_avals], None)


_typed_eager_cache: dict = core.register_cache({})


def _typed_eager(prim, args, params):
  """Run one primitive eagerly on operands whose types carry shardings: one SPMD program over
  their mesh (cached per primitive, params, operand types and mesh), results laid out as their
  types say, as JAX's eager operations are."""
  avals = [core.get_aval(a) for a in args]
  leaves = [np.asarray(a.val, a.aval.dtype) if isinstance(a, core.Literal) else a for a in args]
  if any(not isinstance(a, core.ShapedArray) for a in avals):
    raise NotImplementedError(f"{prim.name}: eager operands of this kind over a mesh")
  abstract = next(a.sharding.mesh for a in avals if a.sharding is not None)
  mesh = concrete_mesh(abstract)
  key = (prim, tuple(params.items()), tuple(avals), mesh, trace_state())
  run = _typed_eager_cache.get(key)
  if run is None:
    run = _typed_eager_cache[key] = _typed_executable(
        prim.name, dispatch.primitive_jaxpr(prim, avals, params), mesh)
  results = run.run(leaves)
  return results if prim.multiple_results else results[0]


dispatch.register_typed_eager(_typed_eager)


def _typed_runner(name, closed):
  """Run a jitted program whose types carry shardings as one SPMD program over their mesh: the
  arguments laid out as their types say, each result as its type says."""
  exes = {}
  avals = list(closed.in_avals) + list(closed.out_avals)
  abstract = next(a.sharding.mesh for a in avals if getattr(a, "sharding", None) is not None)

  def run(leaves):
    mesh = concrete_mesh(abstract)
    exe = exes.get(mesh)
    if exe is None:
      exe = exes[mesh] = _typed_executable(name, closed, mesh)
    return exe.run(leaves)
  return run


jit_mod.register_typed_runner(_typed_runner)


# ---- reshard, auto_axes, explicit_axes -----------------------------------------------------------
def _resolve(s):
  if isinstance(s, PartitionSpec):
    mesh = get_mesh()
    if mesh.empty:
      abstract = get_abstract_mesh()
      if not abstract.empty:   # (inside auto_axes/explicit_axes: the context's types)
        return NamedSharding(abstract, s)
      raise ValueError(
          "Using PartitionSpec when you are not under a mesh context is not allowed. Please "
          "pass a NamedSharding instance or enter into a mesh context via `jax.set_mesh`. Got "
          f"{s}")
    abstract = get_abstract_mesh()
    if abstract != mesh.abstract_mesh:   # (inside auto_axes/explicit_axes)
      return NamedSharding(abstract, s)
    return NamedSharding(mesh, s)
  if not isinstance(s, (NamedSharding, SingleDeviceSharding)):
    raise TypeError(f"reshard out_shardings must be Shardings or PartitionSpecs, got {s!r}")
  return s


def _reshard_one(x, s):
  shape = np.shape(x)
  if isinstance(s, SingleDeviceSharding):
    if isinstance(x, core.Tracer) or core.trace_ctx.trace is not core.eval_trace:
      return x
    return api_device_put(x, s)
  if isinstance(s.mesh, Mesh):
    s.check_compatible(shape, "reshard args")
  ts = type_sharding(s, shape)
  if isinstance(x, core.Tracer) or core.trace_ctx.trace is not core.eval_trace:
    aval = core.get_aval(x)
    if ts is None and getattr(aval, "sharding", None) is None and not _explicit(s.mesh):
      return x   # (no Explicit mesh axes: a placement only, nothing to type)
    return reshard_p.bind(x, dst_sharding=ts)
  if isinstance(s.mesh, AbstractMesh):   # (a type change inside auto_axes/explicit_axes)
    if ts is None and type(x) is ShardedArray:
      return ShardedArray(x._gbuf, x.aval.update(sharding=None), x._named)
    if ts is None:
      return x
    aval = core.get_aval(x)
    return _place(x, core.ShapedArray(aval.shape, aval.dtype, aval.weak_type, sharding=ts))
  if ts is not None or _explicit(s.mesh):   # (JAX's reshard names every axis of the result)
    spec = s.spec.partitions
    s = NamedSharding(s.mesh, PartitionSpec(*spec, *(None,) * (len(shape) - len(spec))),
                      memory_kind=s._memory_kind)
  return x if type(x) is ShardedArray and x._named == s else _put_named(x, s)


def _explicit(mesh):
  return AxisType.Explicit in getattr(mesh, "axis_types", ())


def reshard(xs, out_shardings):
  """Lay the arrays `xs` out as `out_shardings` (a tree prefix: NamedShardings, or
  PartitionSpecs over the mesh set by set_mesh) say. Values never change. Over Explicit mesh
  axes the shardings are part of the types: traced, `reshard` is a primitive changing them."""
  leaves, tree = tree_flatten(xs)
  targets = batching.flatten_axes("reshard out_shardings", tree, out_shardings)
  targets = [_resolve(s) for s in targets]
  return tree_unflatten(tree, [_reshard_one(x, s) for x, s in zip(leaves, targets)])


def _with_axis_types(mesh, axes, axis_type):
  types = dict(zip(mesh.axis_names, mesh.axis_types))
  for a in axes:
    types[a] = axis_type
  return AbstractMesh(mesh.axis_sizes, mesh.axis_names,
                      tuple(types[n] for n in mesh.axis_names),
                      abstract_device=mesh.abstract_device)


def _context_mesh(name, shardings):
  cur = get_abstract_mesh()
  given = None
  for s in tree_flatten(shardings)[0]:
    if isinstance(s, NamedSharding):
      m = s.mesh.abstract_mesh
      if given is not None and given != m:
        raise ValueError(f"Shardings passed to {name} should have the same mesh. Got one mesh "
                         f"{given} and another {s.mesh}")
      given = m
  if given is not None and not cur.empty and given != cur:
    raise ValueError(f"Context mesh {cur} must match the mesh passed to shardings {given}. "
                     "Recommended approach is to use `jax.set_mesh` context manager.")
  return cur if not cur.empty else given


def _axes_tuple(axes, mesh):
  if axes is None:
    return mesh.axis_names
  return axes if isinstance(axes, tuple) else (axes,)


def _strip_axes(tree, axes):
  """`tree`'s arrays with the mesh axes `axes` removed from their types."""
  def one(x):
    aval = core.get_aval(x)
    s = getattr(aval, "sharding", None)
    if s is None:
      return x
    parts = []
    for p in s.spec.partitions:
      kept = tuple(n for n in (() if p is None else p if isinstance(p, tuple) else (p,))
                   if n not in axes)
      parts.append(None if not kept else kept[0] if len(kept) == 1 else kept)
    return _reshard_one(x, NamedSharding(s.mesh, PartitionSpec(*parts)))
  leaves, tree_def = tree_flatten(tree)
  return tree_unflatten(tree_def, [one(x) for x in leaves])


def auto_axes(f=None, /, *, axes=None, out_sharding=None):
  """Run `f` with the mesh axes `axes` (default: all) Auto: inside, the arguments' types no
  longer name them (the compiler chooses that part of the layout); the results are then
  resharded to `out_sharding` (required: here or as a keyword of the call)."""
  def wrap(g):
    @functools.wraps(g)
    def wrapped(*args, **kwargs):
      if out_sharding is None:
        if "out_sharding" not in kwargs:
          raise TypeError("Missing required keyword argument: 'out_sharding'")
        target = kwargs.pop("out_sharding")
      else:
        target = out_sharding
      mesh = _context_mesh("auto_axes", target)
      if mesh is None:
        return g(*args, **kwargs)
      names = _axes_tuple(axes, mesh)
      if all(t is not AxisType.Explicit for n, t in zip(mesh.axis_names, mesh.axis_types)
             if n in names):
        return g(*args, **kwargs)
      with use_abstract_mesh(_with_axis_types(mesh, names, AxisType.Auto)):
        out = g(*_strip_axes(args, names), **kwargs)
      with use_abstract_mesh(mesh):
        return reshard(out, target)
    return wrapped
  return wrap if f is None else wrap(f)


def explicit_axes(f=None, /, *, axes=None, in_sharding=None):
  """Run `f` with the mesh axes `axes` (default: all) Explicit: its arguments are resharded to
  `in_sharding` (required: here or as a keyword of the call) and typed by it inside; the
  results' types then drop those axes again."""
  def wrap(g):
    @functools.wraps(g)
    def wrapped(*args, **kwargs):
      if in_sharding is None:
        if "in_sharding" not in kwargs:
          raise TypeError("Missing required keyword argument: 'in_sharding'")
        target = kwargs.pop("in_sharding")
      else:
        target = in_sharding
      mesh = get_abstract_mesh()
      if mesh.empty:
        raise ValueError("Context mesh cannot be empty. Please use `jax.set_mesh` API to enter "
                         "into a mesh context when using `explicit_axes` API.")
      names = _axes_tuple(axes, mesh)
      inner = _with_axis_types(mesh, names, AxisType.Explicit)
      with use_abstract_mesh(inner):
        args = reshard(args, target)
        out = g(*args, **kwargs)
      dropped = tuple(n for n, t in zip(mesh.axis_names, mesh.axis_types)
                      if t is not AxisType.Explicit)
      with use_abstract_mesh(mesh):
        return _strip_axes(out, dropped)
    return wrapped
  return wrap if f is None else wrap(f)


numpy_util.auto_axes_hook[:] = [auto_axes]
