"""`jax.interpreters.mlir` compatibility: register a primitive's lowering the way JAX's API does.

`register_lowering(prim, rule)` fills arrax's `lowering` slot (same `(ctx, *ir_values, **params)
-> [ir values]` convention, `ctx.avals_in` / `ctx.avals_out`); `lower_fun(fun, multiple_results)`
makes a rule that traces `fun` written with lax/jnp operations and emits it. Rules build ops with
jaxlib's MLIR bindings (`jax.extend.mlir.ir`, `.dialects.*`) in arrax's lowering context, which
is entered while they run (so `ir.Location`/`InsertionPoint` are set as in JAX).

The module-level helpers take JAX's signatures and map onto arrax's lowering
(`arrax/_src/mlir.py`): one platform (CPU), no effect tokens beyond the ordered-effects token,
no per-argument shardings."""
from __future__ import annotations

import dataclasses
import io
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple, Protocol, Union

import numpy as np
from jaxlib import _jax
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import func as func_d
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import callback as _callback
from arrax._src import core
from arrax._src.call import core_call_lowering as core_call_lowering
from arrax._src.config import config
from arrax._src.hijax import EffectTypeSet
from arrax._src.mlir import (
    LoweringRuleContext as LoweringRuleContext, ModuleContext as ModuleContext,
    aval_to_ir_type as aval_to_ir_type, dtype_to_ir_type as dtype_to_ir_type,
    i32_attr as i32_attr, i64_attr as i64_attr, ir_attribute as ir_attribute,
    ir_constant as ir_constant, jaxpr_subcomp as jaxpr_subcomp,
    make_ir_context as make_ir_context)
from arrax._src import mlir as _mlir
from arrax._src.lax.control_flow import common as _cf_common
from arrax._src.sharding_impls import Mesh as Mesh

Value = ir.Value
Token = ir.Value
IrValues = Union[ir.Value, tuple[ir.Value, ...]]
IrTypes = Union[ir.Type, tuple[ir.Type, ...]]
LoweringRule = Callable[..., Sequence[IrValues]]
MeshAxisName = Any

# The kinds of custom-call channels (XLA's ChannelHandle types).
DEVICE_TO_DEVICE_TYPE = 1
SEND_TO_HOST_TYPE = 2
RECV_FROM_HOST_TYPE = 3

token_type = hlo.TokenType.get
dense_int_array = ir.DenseI64ArrayAttr.get

# Effects the lowering may meet (library effects register their classes here). arrax lowers
# every effect the same way (ordered ones are threaded through one token), so this set only
# records registrations.
lowerable_effects = EffectTypeSet()


def register_lowering(prim, rule, platform=None, inline=True, cacheable=True):
  """Use `rule` to lower `prim` (arrax compiles for its one platform, so `platform` only filters:
  a rule for another platform is ignored)."""
  del inline, cacheable
  if platform is not None and platform not in ("cpu",) and prim.has_rule("lowering"):
    return rule
  prim.def_lowering(rule)
  return rule


def lower_fun(fun, multiple_results=True):
  """A lowering rule that traces `fun(*args, **params)` and emits its operations."""
  if multiple_results:
    flat = lambda *args, **params: list(fun(*args, **params))
  else:
    flat = lambda *args, **params: [fun(*args, **params)]
  return _cf_common.lower_fun(flat)


def ir_constants(val):
  return [ir_constant(val)]


def lower_with_sharding_in_types(ctx, op, aval):
  """`op` constrained to the sharding in `aval`'s type. arrax's avals carry no sharding (every
  value is unconstrained, as JAX's on an empty mesh), so `op` is returned as it is."""
  del ctx, aval
  return op


# ---- types, attributes, values ----------------------------------------------------------------
def dense_int_elements(xs) -> ir.DenseElementsAttr:
  """A dense i64 elements attribute holding `xs`."""
  return ir.DenseIntElementsAttr.get(np.asarray(xs, np.int64))


ir_type_handlers: dict[type, Callable] = {
    core.ShapedArray: lambda aval: aval_to_ir_type(aval),
    core.AbstractToken: lambda aval: hlo.TokenType.get(),
}


def aval_to_ir_types(ctx, aval) -> tuple[ir.Type, ...]:
  """The IR types standing for a value of type `aval` (from `ir_type_handlers`)."""
  del ctx
  try:
    handler = ir_type_handlers[type(aval)]
  except KeyError:
    raise TypeError(f"No ir_type_handler for aval type: {type(aval)}") from None
  types = handler(aval)
  return (types,) if isinstance(types, ir.Type) else tuple(types)


# Lowering rules may give an ir.Value or a tuple/list of them per output.
ir_tree_registry = _jax.pytree.PyTreeRegistry(enable_none=False, enable_tuple=True,
                                              enable_namedtuple=False, enable_list=True,
                                              enable_dict=False)
ir_tree_registry.register_node(ir.OpResultList, lambda r: (r, None), lambda _, r: list(r))


def flatten_ir_values(xs) -> list[ir.Value]:
  """The ir.Values of `xs` (values or sequences of them) in one list."""
  return ir_tree_registry.flatten(xs)[0]


def flatten_ir_types(xs) -> list[ir.Type]:
  """The ir.Types of `xs` (types or sequences of them) in one list."""
  return ir_tree_registry.flatten(xs)[0]


def unflatten_ir_values_like_types(xs, ys) -> list:
  """The flat values `xs` grouped as the types `ys` are."""
  return ir_tree_registry.flatten(ys)[1].unflatten(xs)


def shape_tensor(ctx, sizes) -> ir.Value:
  """The i32[len(sizes)] tensor of `sizes` (ints or scalar integer ir.Values)."""
  del ctx
  one = ir.RankedTensorType.get([1], ir.IntegerType.get_signless(32))
  i32 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(32))

  def dim(d):
    if type(d) is int:
      return ir_constant(np.array([d], np.int32))
    if d.type != i32:
      d = hlo.convert(i32, d)
    return hlo.reshape(one, d)

  parts = [dim(d) for d in sizes]
  if not parts:
    return ir_constant(np.zeros((0,), np.int32))
  return parts[0] if len(parts) == 1 else hlo.concatenate(parts, i64_attr(0))


class ConstantHandler(Protocol):
  def __call__(self, val: Any, aval: core.AbstractValue | None) -> IrValues:
    """The IR value(s) of the constant `val`."""


def register_constant_handler(type_: type, handler_fun: ConstantHandler):
  """Make `ir_constant(x)` for `x` of `type_` (exactly) call `handler_fun(x, aval)`."""
  _mlir.constant_handlers[type_] = handler_fun


# ---- modules ----------------------------------------------------------------------------------
def module_to_string(module: ir.Module, enable_debug_info=None) -> str:
  """The text of `module` (with locations unless `jax_include_debug_info_in_dumps` is off)."""
  if enable_debug_info is None:
    flag = str(getattr(config, "jax_include_debug_info_in_dumps", True)).lower()
    enable_debug_info = flag not in ("false", "0")
  out = io.StringIO()
  module.operation.print(file=out, enable_debug_info=enable_debug_info)
  return out.getvalue()


def module_to_bytecode(module: ir.Module) -> bytes:
  """`module` as MLIR bytecode."""
  out = io.BytesIO()
  module.operation.write_bytecode(file=out)
  return out.getvalue()


def merge_mlir_modules(dst_module: ir.Module, sym_name: str, src_module: ir.Module,
                       dst_symtab: ir.SymbolTable | None = None) -> str:
  """Move `src_module`'s functions into `dst_module`, private, renamed where their names are
  taken; its `main` becomes `sym_name` (or a fresh variant). Returns main's new name.
  `src_module` is left unusable."""
  if dst_module.context != src_module.context:
    raise ValueError("merge_mlir_modules needs both modules in one MLIR context")
  src_symtab = ir.SymbolTable(src_module.operation)
  dst_symtab = dst_symtab or ir.SymbolTable(dst_module.operation)
  taken, renames = set(), {}
  for op in src_module.body.operations:
    name = ir.StringAttr(op.attributes["sym_name"]).value
    if name == "main" or name in dst_symtab:
      base = sym_name if name == "main" else name
      new, i = base, 0
      while new in src_symtab or new in dst_symtab or new in taken:
        new, i = f"{base}_{i}", i + 1
      renames[name] = new
      taken.add(new)
  for op in src_module.body.operations:
    name = ir.StringAttr(op.attributes["sym_name"]).value
    if name in renames:
      src_symtab.set_symbol_name(op, renames[name])
    op.attributes["sym_visibility"] = ir.StringAttr.get("private")
  for old, new in renames.items():
    src_symtab.replace_all_symbol_uses(old, new, src_module.operation)
  for op in list(src_module.body.operations):
    dst_module.body.append(op)
    dst_symtab.insert(op)
  return renames["main"]


@dataclasses.dataclass(frozen=True)
class ShardingContext:
  """Lowering for `num_devices` devices partitioned by XLA's SPMD partitioner."""
  num_devices: int
  device_assignment: tuple | None = None
  abstract_mesh: Any = None


@dataclasses.dataclass(frozen=True)
class SPMDAxisContext:
  """Lowering over `mesh`, manual (shard_map) over `manual_axes`."""
  mesh: Mesh
  manual_axes: frozenset = frozenset()


@dataclasses.dataclass(frozen=True)
class ReplicaAxisContext:
  """Lowering with named axes mapped over replicas (pmap)."""
  axis_env: Any


AxisContext = Union[SPMDAxisContext, ReplicaAxisContext, ShardingContext]


class ShapePolyLoweringState:
  """The dimension variables of a lowering with symbolic shapes (sorted names)."""

  def __init__(self, dim_vars: tuple[str, ...], lowering_platforms: tuple[str, ...] | None):
    self.has_platform_index_argument = bool(lowering_platforms and len(lowering_platforms) > 1)
    if self.has_platform_index_argument:
      dim_vars = ("_platform_index", *dim_vars)
    self.dim_vars = tuple(dim_vars)
    self.uses_dim_vars = bool(self.dim_vars)


@dataclasses.dataclass(frozen=True)
class LoweringParameters:
  """Options of a lowering: `override_lowering_rules` ((primitive, rule) pairs used instead of
  the primitives' rules); the others concern export and are accepted as JAX's."""
  override_lowering_rules: tuple | None = None
  global_constant_computation: bool = False
  for_export: bool = False
  export_ignore_forward_compatibility: bool = False
  hoist_constants_as_args: bool = False


class LoweringResult(NamedTuple):
  module: ir.Module
  keepalive: Any
  host_callbacks: list
  shape_poly_state: ShapePolyLoweringState


def _check_platforms(platforms):
  if platforms is not None and any(p != "cpu" for p in platforms):
    raise NotImplementedError(f"arrax lowers for the CPU only, not for {tuple(platforms)}")


def lower_jaxpr_to_module(module_name: str, jaxpr: core.ClosedJaxpr, *, num_const_args: int,
                          in_avals, ordered_effects, platforms, backend, axis_context,
                          donated_args, replicated_args=None, arg_shardings=None,
                          result_shardings=None, in_layouts=None, out_layouts=None,
                          arg_names=None, result_names=None, num_partitions: int = 1,
                          all_default_mem_kind: bool = True, input_output_aliases=None,
                          propagated_out_mem_kinds=None,
                          lowering_parameters: LoweringParameters) -> LoweringResult:
  """A StableHLO module named `module_name` whose public `main` computes `jaxpr` (its first
  `num_const_args` inputs are hoisted constants, passed as arguments); it compiles with the
  backend's `compile_and_load` or arrax's executables. Shardings, layouts and memory kinds
  are not supported beyond their defaults (one CPU device)."""
  del in_avals, ordered_effects, backend, axis_context, replicated_args, in_layouts
  del out_layouts, all_default_mem_kind, propagated_out_mem_kinds, num_const_args
  _check_platforms(platforms)
  if any(s is not None for s in (arg_shardings or ())) or any(
      s is not None for s in (result_shardings or ())):
    raise NotImplementedError("arrax's lower_jaxpr_to_module takes no shardings")
  if input_output_aliases is not None and any(a is not None for a in input_output_aliases):
    raise NotImplementedError("arrax's lower_jaxpr_to_module takes donated_args, not "
                              "input_output_aliases")
  overrides = lowering_parameters.override_lowering_rules
  donated = tuple(donated_args) if donated_args is not None and any(donated_args) else None
  lowered = _mlir.lower_jaxpr_to_module(
      module_name.removeprefix("jit_"), jaxpr, arg_names=arg_names, result_names=result_names,
      num_partitions=num_partitions, donated_args=donated,
      override_rules=dict(overrides) if overrides else None)
  with lowered.module.context:
    lowered.module.operation.attributes["sym_name"] = ir.StringAttr.get(module_name)
  return LoweringResult(lowered.module, lowered.keepalive, lowered.host_callbacks,
                        ShapePolyLoweringState((), tuple(platforms)))


def lower_jaxpr_to_fun(ctx: ModuleContext, name: str, jaxpr: core.ClosedJaxpr, effects, *,
                       num_const_args: int, main_function: bool = False,
                       replicated_args=None, in_avals, arg_shardings=None,
                       result_shardings=None, use_sharding_annotations: bool = True,
                       input_output_aliases=None, xla_donated_args=None, arg_names=None,
                       result_names=None, arg_memory_kinds=None, result_memory_kinds=None,
                       arg_layouts=None, result_layouts=None,
                       propagated_out_mem_kinds=None) -> func_d.FuncOp:
  """Emit `jaxpr` as a function `name` of the module being lowered (public if
  `main_function`); call it with `func.CallOp`. A jaxpr with ordered effects takes the
  ordered-effects token first and returns it first."""
  del effects, num_const_args, replicated_args, in_avals, arg_shardings, result_shardings
  del use_sharding_annotations, arg_memory_kinds, result_memory_kinds, arg_layouts
  del result_layouts, propagated_out_mem_kinds
  if isinstance(jaxpr, core.Jaxpr):
    jaxpr = core.ClosedJaxpr(jaxpr, [])
  return _mlir.lower_jaxpr_to_fun(
      ctx, name, jaxpr, public=main_function, arg_names=arg_names, result_names=result_names,
      input_output_aliases=input_output_aliases, buffer_donors=xla_donated_args,
      with_token=core.jaxpr_has_ordered_effects(jaxpr))


# ---- effects ----------------------------------------------------------------------------------
class TokenSet:
  """Tokens threading side effects, one per effect, in order (immutable)."""
  __slots__ = ("_tokens",)

  def __init__(self, tokens: dict | None = None):
    self._tokens = dict(tokens) if tokens is not None else {}

  def __len__(self):
    return len(self._tokens)

  def get(self, effect) -> Token:
    return self._tokens[effect]

  @classmethod
  def create(cls, effects) -> TokenSet:
    """A TokenSet of fresh tokens for `effects`."""
    return TokenSet({e: hlo.create_token() for e in effects})

  def items(self):
    return tuple(self._tokens.items())

  def effects(self) -> set:
    return set(self._tokens)

  def subset(self, effects) -> TokenSet:
    return TokenSet({e: self._tokens[e] for e in effects})

  def update_tokens(self, tokens: TokenSet) -> TokenSet:
    """This set with the tokens of `tokens`' effects replaced (order kept)."""
    new = dict(self._tokens)
    new.update(tokens._tokens)
    return TokenSet(new)


def emit_python_callback(ctx, callback, token, operands, operand_avals, result_avals, *,
                         has_side_effect: bool, returns_token: bool = True,
                         partitioned: bool = False, sharding=None):
  """A custom call running `callback(*numpy operands) -> results` on the host: (result
  ir.Values, the token out (when `token` is given), keepalive). The results' number, shapes
  and dtypes are checked against `result_avals` when it runs."""
  del returns_token, sharding
  if partitioned and result_avals:
    raise ValueError("Partitioned callback not supported with return values.")
  result_avals = list(result_avals)

  def host_fn(*arrays):
    return _callback.checked_results(callback(*arrays), result_avals)

  results, token = _callback.emit_host_call(ctx.module_context, host_fn, token, operands,
                                            operand_avals, result_avals,
                                            has_side_effect=has_side_effect)
  return results, token, None
