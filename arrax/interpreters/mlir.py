"""arrax.interpreters.mlir (`jax.interpreters.mlir`): register lowering rules."""
from arrax._src.interpreters.mlir import (
    LoweringRuleContext as LoweringRuleContext,
    ModuleContext as ModuleContext,
    aval_to_ir_type as aval_to_ir_type,
    dtype_to_ir_type as dtype_to_ir_type,
    i32_attr as i32_attr,
    i64_attr as i64_attr,
    ir as ir,
    ir_constant as ir_constant,
    ir_constants as ir_constants,
    jaxpr_subcomp as jaxpr_subcomp,
    lower_fun as lower_fun,
    make_ir_context as make_ir_context,
    register_lowering as register_lowering,
)
