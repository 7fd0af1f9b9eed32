"""jax.export: a jitted function lowered to a serialized StableHLO module, with its calling
convention (JAX's), and a primitive that calls such a module from arrax programs.

An `Exported` holds the function's flat input/output avals and pytree structures, the module
as a StableHLO portable artifact (versioned VHLO bytecode) and the calling-convention facts:
platforms, effects, kept inputs, whether the module needs shape refinement. Its bytes
(`serialize`) are JAX's flatbuffer format (serialization.py), so modules move between JAX and
arrax both ways.

Calling (`Exported.call`) binds `call_exported`, whose lowering merges the module's functions
into the caller's module (renamed, private) and calls its `main`; arguments and results are
converted between the caller's static shapes and the module's (possibly symbolic) ones, and
the whole module is then shape-refined. Reverse-mode AD goes through a custom_vjp whose
backward pass calls the exported VJP (`Exported.vjp()`).
"""
from __future__ import annotations

import collections
import dataclasses
import json
import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func as func_d, stablehlo as hlo

from arrax._src import (ad, ad_api, backend, batching, core, dtypes, jit as jit_mod, mlir,
                        sharding_impls, spmd, tree_util)
from arrax._src.api import ShapeDtypeStruct
from arrax._src import config as config_mod
from arrax._src.config import config, env_number, int_parser
from arrax._src.custom_derivatives import custom_vjp
from arrax._src.lax import linalg
from arrax._src.export import serialization as _serialization, shape_poly
from arrax._src.export.serialization import (DisabledSafetyCheck,
                                             register_pytree_node_serialization)

minimum_supported_calling_convention_version = 9
maximum_supported_calling_convention_version = 10

config.define("jax_export_calling_convention_version",
              env_number("jax_export_calling_convention_version", 10, int),
              int_parser("jax_export_calling_convention_version"))
config_mod.State("jax_export_calling_convention_version",
                 "Context manager for `jax_export_calling_convention_version` config option.")


@dataclasses.dataclass(frozen=True)
class Exported:
  """A function lowered to StableHLO for given argument shapes, with its calling convention.

  Fields as JAX's: fun_name, in_tree/out_tree (pytree structures of (args, kwargs) and of the
  result), in_avals/out_avals (flat), shardings (None: unspecified), nr_devices, platforms,
  effects, disabled_safety_checks, mlir_module_serialized (a StableHLO portable artifact),
  calling_convention_version, module_kept_var_idx (the inputs the module takes),
  uses_global_constants (the module needs shape refinement) and `_get_vjp`.
  """
  fun_name: str
  in_tree: tree_util.PyTreeDef
  in_avals: tuple[core.ShapedArray, ...]
  out_tree: tree_util.PyTreeDef
  out_avals: tuple[core.ShapedArray, ...]
  _has_named_shardings: bool
  _in_named_shardings: tuple[Any, ...]
  _out_named_shardings: tuple[Any, ...]
  in_shardings_hlo: tuple[Any, ...]
  out_shardings_hlo: tuple[Any, ...]
  nr_devices: int
  platforms: tuple[str, ...]
  ordered_effects: tuple[Any, ...]
  unordered_effects: tuple[Any, ...]
  disabled_safety_checks: Sequence[DisabledSafetyCheck]
  mlir_module_serialized: bytes
  calling_convention_version: int
  module_kept_var_idx: tuple[int, ...]
  uses_global_constants: bool
  _get_vjp: Callable[[Exported], Exported] | None

  def mlir_module(self, serialized: bool = True) -> Any:
    """The module as text (or, with serialized=False, as an ir.Module)."""
    ctx = mlir.make_ir_context()
    with ctx:
      module = _jax.mlir.deserialize_portable_artifact(self.mlir_module_serialized, ctx)
      if not serialized:
        return module
      return module.operation.get_asm(enable_debug_info=True)

  def __str__(self):
    return f"Exported(fun_name={self.fun_name}, ...)"

  def in_shardings_jax(self, mesh) -> Sequence[Any]:
    """The input shardings as arrax shardings over `mesh` (None where unspecified)."""
    return tuple(_named_sharding_on(s, mesh) for s in self._in_named_shardings)

  def out_shardings_jax(self, mesh) -> Sequence[Any]:
    """The output shardings as arrax shardings over `mesh` (None where unspecified)."""
    return tuple(_named_sharding_on(s, mesh) for s in self._out_named_shardings)

  def has_vjp(self) -> bool:
    """Whether this Exported can give its VJP."""
    return self._get_vjp is not None

  def vjp(self) -> Exported:
    """The exported VJP: takes the flat primal inputs then one cotangent per flat output and
    returns the flat input cotangents."""
    if self._get_vjp is None:
      raise ValueError("No VJP is available")
    return self._get_vjp(self)

  def serialize(self, vjp_order: int = 0) -> bytearray:
    """JAX's flatbuffer serialization, with VJPs up to order `vjp_order`."""
    return _serialization.serialize(self, vjp_order=vjp_order)

  def call(self, *args, **kwargs):
    """Call the exported function (eagerly or inside arrax transformations) on arguments of the
    pytree structure, shapes and dtypes it was exported for."""
    return call_exported(self)(*args, **kwargs)


def _named_sharding_on(s, mesh):
  if s is None or mesh is None:   # unspecified, or the sharding as exported
    return s
  if tuple(mesh.axis_names) != tuple(s.axis_names) or \
      tuple(mesh.axis_sizes if hasattr(mesh, "axis_sizes") else mesh.devices.shape) != \
      tuple(s.axis_sizes):
    raise ValueError(f"NamedSharding new mesh {mesh} does not match the mesh used for export "
                     f"{s!r}.")
  return sharding_impls.NamedSharding(mesh, sharding_impls.PartitionSpec(*s.spec))


def deserialize(blob: bytearray) -> Exported:
  """An Exported from bytes made by `Exported.serialize` (of JAX or arrax)."""
  return _serialization.deserialize(blob, Exported)


# ---- pytree node serialization ---------------------------------------------------------------
def _ordereddict_keys_bytes(keys):
  if isinstance(keys, Sequence) and all(isinstance(k, str) for k in keys):
    return json.dumps(list(keys)).encode("utf-8")
  raise NotImplementedError("Serialization of collections.OrderedDict is supported only when "
                            f"the keys are strings. Found keys: {keys}.")


register_pytree_node_serialization(
    collections.OrderedDict, serialized_name="collections.OrderedDict",
    serialize_auxdata=_ordereddict_keys_bytes,
    deserialize_auxdata=lambda b: json.loads(b.decode("utf-8")),
    from_children=lambda keys, children: collections.OrderedDict(zip(keys, children)))


# ---- exporting -------------------------------------------------------------------------------
def default_export_platform() -> str:
  """The platform exports are made for by default ('cpu', 'cuda', 'rocm' or 'tpu')."""
  p = backend.default_backend()
  return "cuda" if p == "gpu" else p


# Custom call targets JAX promises to keep stable (the CPU LAPACK kernels arrax uses among them).
_STABLE_CUSTOM_CALLS = frozenset(
    [f"lapack_{t}{op}_ffi" for t in "sdcz"
     for op in ("potrf", "geqrf", "getrf", "syevd", "geev", "gesdd", "sytrd", "gehrd",
                "gees", "trsm", "gtsv")]
    + [f"lapack_{t}orgqr_ffi" for t in "sd"] + [f"lapack_{t}ungqr_ffi" for t in "cz"]
    + [f"lapack_{t}heevd_ffi" for t in "cz"] + [f"lapack_{t}hetrd_ffi" for t in "cz"]
    + ["Sharding", "SPMDFullToShardShape", "SPMDShardToFullShape",
       "annotate_device_placement", "shape_assertion", "AllocateBuffer", "ApproxTopK",
       "stablehlo.dynamic_approx_top_k", "stablehlo.dynamic_reduce_window",
       "stablehlo.dynamic_rng_bit_generator", "stablehlo.dynamic_top_k", "Eigh", "Qr",
       "ProductOfElementaryHouseholderReflectors", "LuDecomposition", "tpu_custom_call",
       "cu_threefry2x32_ffi", "hip_threefry2x32_ffi", "tf.call_tf_function", "mosaic_gpu_v2"])


def export(fun_jit, *, platforms: Sequence[str] | None = None,
           disabled_checks: Sequence[DisabledSafetyCheck] = (),
           _override_lowering_rules: Sequence[tuple[Any, Any]] | None = None
           ) -> Callable[..., Exported]:
  """Export a jitted function: returns a function of argument specs (ShapeDtypeStructs or
  arrays, as for `jit(f).trace`) giving an `Exported`.

  Symbolic dimensions are supported where arrax's tracer handles them (elementwise ops,
  broadcasts, reductions, matmuls); for platforms other than 'cpu' the code must be portable
  (no LAPACK kernels, no lax.platform_dependent); no custom lowering rules.
  """
  if isinstance(fun_jit, spmd.ShardedJit):
    raise NotImplementedError("arrax cannot export a jit with in_shardings/out_shardings yet.")
  if not isinstance(fun_jit, jit_mod.Wrapped):
    raise ValueError(f"Function to be exported must be the result of `jit` but is: {fun_jit}")
  if _override_lowering_rules:
    raise NotImplementedError("arrax's export does not take _override_lowering_rules.")

  def do_export(*args_specs, **kwargs_specs) -> Exported:
    plats = tuple(platforms) if platforms is not None else (default_export_platform(),)
    if not plats:
      raise ValueError("At least one platform must be specified.")
    traced = fun_jit.trace(*args_specs, **kwargs_specs)
    return _export_traced(traced, fun_jit, plats, tuple(disabled_checks))

  return do_export


def _result_names(out_tree):
  paths = [p for p, _ in tree_util.tree_flatten_with_path(
      out_tree.unflatten([0] * out_tree.num_leaves))[0]]
  return [f"result{tree_util.keystr(p)}" for p in paths]


def _export_traced(traced, fun_jit, plats, disabled_checks) -> Exported:
  version = config.jax_export_calling_convention_version
  if not (minimum_supported_calling_convention_version <= version
          <= maximum_supported_calling_convention_version):
    raise ValueError(
        f"The requested export calling convention version {version} is outside the range of "
        f"supported versions [{minimum_supported_calling_convention_version}.."
        f"{maximum_supported_calling_convention_version}]")
  closed = traced._closed
  in_avals = tuple(closed.in_avals)
  dim_vars = shape_poly.all_dim_vars(in_avals)
  dim_sources = {}
  for i, a in enumerate(in_avals):
    for d, e in enumerate(a.shape):
      name = e.as_var() if shape_poly.is_symbolic_dim(e) else None
      if name is not None:
        dim_sources.setdefault(name, (i, d))
  missing = [v for v in dim_vars if v not in dim_sources]
  if missing:
    raise NotImplementedError(
        f"arrax exports symbolic shapes whose dimension variables each appear alone as some "
        f"argument's dimension; {missing} do not.")
  # As JAX's jit (keep_unused=False), the module takes only the inputs the function reads
  # (all of them with symbolic shapes, as in JAX).
  if getattr(fun_jit, "_keep_unused", False) or dim_vars:
    kept = tuple(range(len(in_avals)))
    pruned = closed
  else:
    j, used = core.dce_jaxpr(closed.jaxpr, [True] * len(closed.jaxpr.outvars))
    kept = tuple(i for i, u in enumerate(used) if u)
    pruned = core.ClosedJaxpr(j, closed.consts)
  names = traced._arg_names
  # (JAX's main for symbolic shapes is a wrapper whose arguments have no names)
  kept_names = None if names is None or dim_vars else [names[i] for i in kept]
  multi = len(plats) > 1
  if multi and dim_vars:
    raise NotImplementedError("arrax cannot export for several platforms with symbolic shapes.")
  if plats != ("cpu",):
    _check_portable(pruned.jaxpr, plats)
  if multi:
    # JAX's convention: main takes the platform's index (in `plats`) first. arrax lowers the
    # same (portable) code for every platform, so the index is not read.
    j = pruned.jaxpr
    pruned = core.ClosedJaxpr(
        core.Jaxpr(j.constvars, [core.Var(core.ShapedArray((), np.int32))] + list(j.invars),
                   j.outvars, j.eqns, j.debug_info), pruned.consts)
    kept_names = None if kept_names is None else [None] + kept_names
  lowered = mlir.lower_jaxpr_to_module(traced.fun_name, pruned, arg_names=kept_names,
                                       result_names=_result_names(traced.out_tree),
                                       dim_var_sources=dim_sources)
  if lowered.host_callbacks:
    raise NotImplementedError("serialization of host_callbacks is not yet implemented")
  module = lowered.module
  with module.context:
    module.operation.attributes["jax.uses_shape_polymorphism"] = ir.BoolAttr.get(
        multi or bool(dim_vars))
    if multi:
      main = ir.SymbolTable(module.operation)["main"]
      n_args = len(ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value).inputs)
      main.arg_attrs = ir.ArrayAttr.get(
          [ir.DictAttr.get({"jax.global_constant": ir.StringAttr.get("_platform_index")})]
          + [ir.DictAttr.get({}) for _ in range(n_args - 1)])
  if dim_vars:
    _add_shape_assertions(module, in_avals, traced.in_tree, dim_sources)
  _check_module(module, disabled_checks)
  if plats != ("cpu",):
    _check_no_cpu_kernels(module, plats)
  serialized = _module_to_bytecode(module)

  def get_vjp(primal: Exported) -> Exported:
    return _export_vjp(closed, primal)

  return Exported(
      fun_name=traced.fun_name, in_tree=traced.in_tree, in_avals=in_avals,
      out_tree=traced.out_tree, out_avals=tuple(closed.out_avals),
      _has_named_shardings=True,
      _in_named_shardings=(None,) * len(in_avals),
      _out_named_shardings=(None,) * len(closed.out_avals),
      in_shardings_hlo=(None,) * len(in_avals),
      out_shardings_hlo=(None,) * len(closed.out_avals),
      nr_devices=1, platforms=plats, ordered_effects=(), unordered_effects=(),
      disabled_safety_checks=disabled_checks, mlir_module_serialized=serialized,
      calling_convention_version=version, module_kept_var_idx=kept,
      uses_global_constants=multi or bool(dim_vars), _get_vjp=get_vjp)


def _add_shape_assertions(module, in_avals, in_tree, dim_sources):
  """At the start of main, JAX's `shape_assertion` custom calls: every dimension variable is
  >= 1 and every symbolic dimension of the arguments equals its specification. (Callers that
  refine shapes check them when the shapes become known; arrax and JAX also check statically.)"""
  with module.context, ir.Location.unknown():
    main = ir.SymbolTable(module.operation)["main"]
    block = main.regions[0].blocks[0]
    args = list(block.arguments)
    with ir.InsertionPoint.at_block_begin(block):
      sizes = {}

      def size(i, d):
        if (i, d) not in sizes:
          sizes[(i, d)] = hlo.get_dimension_size(args[i], d)
        return sizes[(i, d)]

      var_values = {v: size(i, d) for v, (i, d) in sorted(dim_sources.items())}
      names = sorted(var_values)
      specs = ",".join(
          f"{_arg_descr(in_tree, k)}.shape = ({', '.join(str(x) for x in a.shape)}"
          f"{',' if len(a.shape) == 1 else ''})" for k, a in enumerate(in_avals)
          if any(shape_poly.is_symbolic_dim(x) for x in a.shape))

      def obtained(first):
        return "".join(
            f"'{v}' = {{{first + k}}} from specification '{v}' for dimension "
            f"{_arg_descr(in_tree, *dim_sources[v])} (= {{{first + k}}}), "
            for k, v in enumerate(names))

      def message(what, first):
        return (f"Input shapes do not match the polymorphic shapes specification. {what}. "
                f"Using the following polymorphic shapes specifications: {specs}. "
                f"Obtained dimension variables: {obtained(first)}. Please see "
                "https://docs.jax.dev/en/latest/export/shape_poly.html"
                "#shape-assertion-errors for more details.")

      def emit(pred, operands, msg):
        call = hlo.CustomCallOp([], [pred, *operands], ir.StringAttr.get("shape_assertion"),
                                has_side_effect=ir.BoolAttr.get(True),
                                api_version=mlir.i32_attr(2))
        call.attributes["error_message"] = ir.StringAttr.get(msg)

      one = mlir.ir_constant(np.int32(1))
      for v in names:
        pred = mlir.compare(var_values[v], one, "GE", np.int32)
        emit(pred, [var_values[n] for n in names],
             message(f"Expected value >= 1 for dimension variable '{v}'", 0))
      with mlir.dim_values(var_values):
        for i, a in enumerate(in_avals):
          for d, e in enumerate(a.shape):
            if not shape_poly.is_symbolic_dim(e) or dim_sources.get(e.as_var()) == (i, d):
              continue
            actual, expected = size(i, d), mlir.dim_value(e)
            pred = mlir.compare(actual, expected, "EQ", np.int32)
            emit(pred, [actual, expected, *[var_values[n] for n in names]],
                 message(f"Found inconsistency between dimension size "
                         f"{_arg_descr(in_tree, i, d)} (= {{0}}) and the specification "
                         f"'{e}' (= {{1}})", 2))


def _check_portable(jaxpr, plats):
  """arrax lowers `lax.platform_dependent` for the CPU only: such code is not exported for
  other platforms."""
  for eqn in jaxpr.eqns:
    if eqn.primitive.name == "platform_index":
      raise NotImplementedError(
          f"arrax cannot export platform-dependent code for platforms {plats}: it lowers "
          "lax.platform_dependent for 'cpu' only.")
  for sub in core.subjaxprs(jaxpr):
    _check_portable(sub.jaxpr if isinstance(sub, core.ClosedJaxpr) else sub, plats)


def _check_no_cpu_kernels(module, plats):
  text = str(module)
  m = re.search(r'call_target_name = "(lapack_\w+)"', text) or \
      re.search(r"stablehlo.custom_call @(lapack_\w+)", text)
  if m:
    raise NotImplementedError(
        f"arrax cannot export for platforms {plats}: the module calls the CPU kernel "
        f"{m.group(1)} (arrax lowers linear algebra for 'cpu' only).")


def _module_to_bytecode(module) -> bytes:
  with module.context:
    target = hlo.get_version_from_compatibility_requirement(
        hlo.StablehloCompatibilityRequirement.WEEK_4)
    return _jax.mlir.serialize_portable_artifact(module, target, False)


def _check_module(module, disabled_checks):
  allowed = set(_STABLE_CUSTOM_CALLS)
  allowed.update(t for t in (dc.is_custom_call() for dc in disabled_checks) if t is not None)
  bad = []

  def walk(op):
    op = op.operation
    if op.name == "stablehlo.custom_call" and "ALL" not in allowed:
      target = ir.StringAttr(op.attributes["call_target_name"]).value
      if target not in allowed:
        bad.append(f"{op} at {op.location}")
    for region in op.regions:
      for block in region:
        for inner in block:
          walk(inner)

  walk(module.operation)
  if bad:
    raise ValueError(
        "Cannot serialize code with custom calls whose targets have no compatibility "
        "guarantees. See https://docs.jax.dev/en/latest/export/export.html"
        "#compatibility-guarantees-for-custom-calls. Examples are:\n"
        + "\n".join(bad) + ".\n")


def _export_vjp(closed, primal: Exported) -> Exported:
  """Export the VJP of the primal jaxpr: (*flat primals, *flat output cotangents) -> flat input
  cotangents, as JAX does."""
  n_in = len(primal.in_avals)

  def fun_vjp_jax(*args_and_out_cts_flat_jax):
    primals, cts = args_and_out_cts_flat_jax[:n_in], args_and_out_cts_flat_jax[n_in:]
    _, pullback = ad_api.vjp(core.jaxpr_as_fun(closed), *primals)
    return pullback(list(cts))

  vjp_in = [ShapeDtypeStruct(a.shape, a.dtype) for a in primal.in_avals] + [
      ShapeDtypeStruct(a.shape, ad.tangent_dtype(a.dtype)) for a in primal.out_avals]
  return export(jit_mod.jit(fun_vjp_jax), platforms=primal.platforms,
                disabled_checks=primal.disabled_safety_checks)(*vjp_in)


def _path_str(path) -> str:
  """`args[0]...` / `kwargs['x']...` for a path into the (args, kwargs) tuple."""
  head, rest = path[0], path[1:]
  base = "args" if head == tree_util.SequenceKey(0) else "kwargs"
  return base + tree_util.keystr(rest)


def _arg_descr(in_tree, arg_idx, dim_idx=None) -> str:
  paths = tree_util.tree_flatten_with_path(in_tree.unflatten([0] * in_tree.num_leaves))[0]
  s = _path_str(paths[arg_idx][0])
  return s if dim_idx is None else f"{s}.shape[{dim_idx}]"


# ---- calling ---------------------------------------------------------------------------------
def _structure_errors(path, t1, t2):
  """(path, what 1, what 2, why) for the first structural differences of two pytrees."""
  leaf1 = tree_util.treedef_is_leaf(tree_util.tree_structure(t1))
  leaf2 = tree_util.treedef_is_leaf(tree_util.tree_structure(t2))
  if leaf1 and leaf2 and t1 is not None and t2 is not None:
    return
  if type(t1) is not type(t2):
    yield path, str(type(t1)), str(type(t2)), "their Python types differ"
    return
  if isinstance(t1, (list, tuple)) and len(t1) != len(t2):
    yield (path, f"{type(t1).__name__} of length {len(t1)}",
           f"{type(t2).__name__} of length {len(t2)}", "the lengths do not match")
    return
  c1, meta1 = tree_util.flatten_one_level(t1)
  c2, meta2 = tree_util.flatten_one_level(t2)
  c1, c2 = tuple(c1), tuple(c2)
  keys1, keys2 = tree_util._child_keys(t1), tree_util._child_keys(t2)
  if len(c1) != len(c2):
    try:
      diff = " ".join(repr(k.key) for k in set(keys1).symmetric_difference(set(keys2)))
    except Exception:  # noqa: BLE001
      diff = ""
    yield (path, f"{type(t1)} with {len(c1)} child{'ren' if len(c1) > 1 else ''}",
           f"{type(t2)} with {len(c2)} child{'ren' if len(c2) > 1 else ''}",
           "the numbers of children do not match"
           + (diff and f", with the symmetric difference of key sets: {{{diff}}}"))
    return
  if meta1 != meta2:
    yield (path, f"{type(t1)} with pytree metadata {meta1}",
           f"{type(t2)} with pytree metadata {meta2}", "the pytree node metadata does not match")
    return
  for k, a, b in zip(keys1, c1, c2):
    yield from _structure_errors((*path, k), a, b)


def call_exported(exported: Exported) -> Callable[..., Any]:
  """A function calling `exported` on pytree arguments (differentiable in reverse mode when
  the Exported has a VJP)."""
  if not isinstance(exported, Exported):
    raise ValueError(f"The exported argument must be an export.Exported. Found {exported}.")

  @custom_vjp
  def f_flat(*args_flat):
    return call_exported_p.bind(*args_flat, exported=exported)

  def f_flat_vjp_fwd(*args_flat):
    return f_flat(*args_flat), args_flat

  def f_flat_vjp_bwd(residual, ct_res_flat):
    exp_vjp = exported.vjp()
    expected = exp_vjp.in_avals[len(residual):]
    cts = [np.zeros(e.shape, dtypes.float0) if e.dtype == dtypes.float0 else ct
           for ct, e in zip(ct_res_flat, expected)]
    return tuple(call_exported(exp_vjp)(*residual, *cts))

  f_flat.defvjp(f_flat_vjp_fwd, f_flat_vjp_bwd)

  def f_imported(*args, **kwargs):
    args_flat, in_tree = tree_util.tree_flatten((args, kwargs))
    if in_tree != exported.in_tree:
      got = in_tree.unflatten([0] * in_tree.num_leaves)
      want = exported.in_tree.unflatten([0] * exported.in_tree.num_leaves)
      raise ValueError(
          "The invocation args and kwargs must have the same pytree structure as when the "
          f"function '{exported.fun_name}' was exported, but they have the following "
          "structural differences:\n" + "\n".join(
              f"   - {_path_str(path)} is a {a} in the invocation and a {b} when exported, "
              f"so {why}.\n" for path, a, b, why in _structure_errors((), got, want)))
    return exported.out_tree.unflatten(f_flat(*args_flat))

  return f_imported


call = call_exported

call_exported_p = core.Primitive("call_exported")
call_exported_p.multiple_results = True


def _solve_dims(exported: Exported, in_avals):
  """The values of the dimension variables of `exported.in_avals` given the actual shapes
  (each solved from a dimension linear in one unknown variable), checked as JAX's shape
  assertions check them."""
  env, obtained = {}, []
  pending = []
  for i, (exp, act) in enumerate(zip(exported.in_avals, in_avals)):
    for d, (e, a) in enumerate(zip(exp.shape, act.shape)):
      if shape_poly.is_symbolic_dim(e):
        pending.append((e, int(a), i, d))

  def fail(what):
    return ValueError(_dim_error(exported, what, obtained))

  progress = True
  while progress:
    progress = False
    for e, a, i, d in pending:
      unknown = sorted(v for v in set(e.variables()) if v not in env)
      if len(unknown) != 1 or not _is_evaluable(e, env, unknown[0]):
        continue
      var = unknown[0]
      e0, e1, e2 = (e.evaluate({**env, var: k}) for k in (0, 1, 2))
      if e1 - e0 != e2 - e1 or e1 == e0:   # not linear in var
        continue
      coeff = e1 - e0
      where = f"for dimension {_arg_descr(exported.in_tree, i, d)} (= {a}), "
      if (a - e0) % coeff:
        raise fail(f"Division had remainder {(a - e0) % coeff} when computing the value of "
                   f"'{var}'")
      env[var] = (a - e0) // coeff
      obtained.append(f"'{var}' = {env[var]} from specification '{e}' {where}")
      if env[var] < 1:
        raise fail(f"Expected value >= 1 for dimension variable '{var}'")
      progress = True
  for e, a, i, d in pending:
    missing = sorted({v for v in e.variables() if v not in env})
    if missing:
      raise NotImplementedError(
          f"arrax cannot solve the dimension variables {missing} of "
          f"{_arg_descr(exported.in_tree, i, d)} = {e} from the argument shapes.")
    if e.evaluate(env) != a:
      raise fail(f"Found inconsistency between dimension size "
                 f"{_arg_descr(exported.in_tree, i, d)} (= {a}) and the specification '{e}' "
                 f"(= {e.evaluate(env)})")
  return env


def _is_evaluable(e, env, var):
  try:
    e.evaluate({**env, var: 0})
    return True
  except (KeyError, ZeroDivisionError):
    return False


def _dim_error(exported, what, obtained):
  specs = ",".join(
      f"{_arg_descr(exported.in_tree, k)}.shape = ({', '.join(str(x) for x in av.shape)}"
      f"{',' if len(av.shape) == 1 else ''})" for k, av in enumerate(exported.in_avals)
      if any(shape_poly.is_symbolic_dim(x) for x in av.shape))
  return (f"Input shapes do not match the polymorphic shapes specification. {what}. "
          f"Using the following polymorphic shapes specifications: {specs}. "
          f"Obtained dimension variables: {''.join(obtained)}. "
          "Please see https://docs.jax.dev/en/latest/export/shape_poly.html"
          "#shape-assertion-errors for more details.")


@call_exported_p.def_abstract_eval
def _call_exported_abstract_eval(*in_avals, exported):
  if len(in_avals) != len(exported.in_avals):
    raise ValueError(f"Expected {len(exported.in_avals)} arguments, got {len(in_avals)}")
  for i, (exp, act) in enumerate(zip(exported.in_avals, in_avals)):
    if not isinstance(act, core.ShapedArray):
      raise ValueError(f"Expected ShapedArray but got: {act}")
    if len(exp.shape) != len(act.shape):
      raise ValueError(f"Rank mismatch for {_arg_descr(exported.in_tree, i)}: expected "
                       f"{exp.shape} and called with {act.shape}")
    if exp.dtype != act.dtype:
      raise ValueError(f"Dtype mismatch for {_arg_descr(exported.in_tree, i)}: expected "
                       f"{exp.dtype} and called with {act.dtype}")
    for d, e in enumerate(exp.shape):
      if not shape_poly.is_symbolic_dim(e) and e != act.shape[d]:
        raise ValueError(
            f"Shape mismatch for {_arg_descr(exported.in_tree, i, d)} (expected same "
            f"constant): expected {exp.shape} and called with {act.shape}")
  env = _solve_dims(exported, in_avals) if shape_poly.all_dim_vars(exported.in_avals) else {}
  return [core.ShapedArray(tuple(shape_poly._evaluate(d, env) for d in a.shape), a.dtype)
          for a in exported.out_avals]


# As in JAX: a module compiled for fixed shapes has no batched form.
call_exported_p.def_batch(batching.no_batching_rule("call_exported"))


def _drop_shardings(module):
  """Remove Shardy's meshes and sharding annotations from `module`: on one device they ask
  for nothing, and the caller's module has no meshes for them to name."""
  def no_sdy(attrs):
    return ir.ArrayAttr.get([ir.DictAttr.get({a.name: a.attr for a in ir.DictAttr(d)
                                              if not a.name.startswith("sdy.")})
                             for d in attrs])

  def walk(op):
    op = op.operation
    for region in op.regions:
      for block in region:
        for inner in list(block):
          walk(inner)
    if op.name == "sdy.sharding_constraint":
      op.results[0].replace_all_uses_with(op.operands[0])
      op.erase()
      return
    if "sdy.sharding" in op.attributes:
      del op.attributes["sdy.sharding"]
    if op.name == "func.func":
      for key in ("arg_attrs", "res_attrs"):
        if key in op.attributes:
          op.attributes[key] = no_sdy(op.attributes[key])

  for op in list(module.body.operations):
    if op.operation.name == "sdy.mesh":
      op.operation.erase()
    else:
      walk(op)


def _merge_module(mctx, src, name):
  """Move the functions of `src` into the module being lowered, renamed to fresh private
  names; the new name of src's main."""
  dst_symtab = mctx.symbol_table
  src_symtab = ir.SymbolTable(src.operation)
  renames, used = {}, set()
  for op in src.body.operations:
    if "sym_name" not in op.attributes:
      continue
    old = ir.StringAttr(op.attributes["sym_name"]).value
    base = name if old == "main" else old
    new, k = base, 0
    while new in src_symtab or new in dst_symtab or new in used:
      new = f"{base}_{k}"
      k += 1
    renames[old] = new
    used.add(new)
  private = ir.StringAttr.get("private")
  for op in src.body.operations:
    if "sym_name" not in op.attributes:
      continue
    old = ir.StringAttr(op.attributes["sym_name"]).value
    if renames[old] != old:
      src_symtab.set_symbol_name(op, renames[old])
    if op.operation.name == "func.func":
      op.attributes["sym_visibility"] = private
  for old, new in renames.items():
    if old != new:
      for op in src.body.operations:
        ir.SymbolTable.replace_all_symbol_uses(old, new, op.operation)
  for op in list(src.body.operations):
    mctx.module.body.append(op)
    dst_symtab.insert(op)
  return renames["main"]


@call_exported_p.def_lowering
def _call_exported_lowering(ctx, *args, exported):
  if exported.nr_devices != 1:
    raise ValueError(f"Function {exported.fun_name} was exported for {exported.nr_devices} "
                     "devices and is called in a context with 1 devices, which is not allowed.")
  if exported.ordered_effects:
    raise NotImplementedError("arrax cannot call an exported function with ordered effects.")
  mctx = ctx.module_context
  platform = "cpu"
  if platform in exported.platforms:
    platform_idx = exported.platforms.index(platform)
  elif DisabledSafetyCheck.platform() in exported.disabled_safety_checks:
    platform_idx = 0
  else:
    raise ValueError(f"Function '{exported.fun_name}' was exported for platforms "
                     f"'{exported.platforms}' but it is used on '('{platform}',)'.")
  if "cpu" in exported.platforms:
    linalg._ensure_lapack()   # the module may call jaxlib's CPU LAPACK kernels
  src = _jax.mlir.deserialize_portable_artifact(exported.mlir_module_serialized,
                                                mctx.module.context)
  _drop_shardings(src)
  main = ir.SymbolTable(src.operation)["main"]
  callee_type = ir.FunctionType(ir.TypeAttr(main.attributes["function_type"]).value)
  fn_name = _merge_module(mctx, src, f"call_exported_{exported.fun_name}")
  call_args = []
  if len(exported.platforms) > 1:
    idx_type = callee_type.inputs[0]
    call_args.append(hlo.constant(ir.DenseElementsAttr.get(
        np.asarray(platform_idx, np.int32), type=ir.RankedTensorType(idx_type).element_type)))
  refine = exported.uses_global_constants
  kept = set(exported.module_kept_var_idx)
  kept_args = [a for i, a in enumerate(args) if i in kept]
  for a, t in zip(kept_args, callee_type.inputs[len(call_args):]):
    if a.type != t:
      a = hlo.convert(t, a)
      refine = True
    call_args.append(a)
  call_op = func_d.CallOp(list(callee_type.results), ir.FlatSymbolRefAttr.get(fn_name),
                          call_args)
  results = []
  for r, aval in zip(call_op.results, ctx.avals_out):
    t = mlir.aval_to_ir_type(aval)
    if r.type != t:
      r = hlo.convert(t, r)
      refine = True
    results.append(r)
  if refine:
    mctx.needs_shape_refinement = True
  return results


