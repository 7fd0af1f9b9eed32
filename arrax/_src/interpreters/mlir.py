"""`jax.interpreters.mlir` compatibility: register a primitive's lowering the way JAX's API does.

`register_lowering(prim, rule)` fills arrax's `lowering` slot (same `(ctx, *ir_values, **params)
-> [ir values]` convention, `ctx.avals_in` / `ctx.avals_out`); `lower_fun(fun, multiple_results)`
makes a rule that traces `fun` written with lax/jnp operations and emits it."""
from jaxlib.mlir import ir  # noqa: F401
from jaxlib.mlir.dialects import stablehlo as hlo  # noqa: F401

from arrax._src.mlir import (LoweringRuleContext, ModuleContext, aval_to_ir_type,  # noqa: F401
                             i32_attr, i64_attr,
                             dtype_to_ir_type, ir_constant, jaxpr_subcomp, make_ir_context)
from arrax._src.lax.control_flow import common as _cf_common


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
