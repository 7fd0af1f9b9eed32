"""arrax.extend.lowering (`jax.extend.lowering`): the MLIR context lowering rules run in and the
dialects loaded into it."""
from arrax._src.mlir import (
    JaxIrContext as JaxIrContext,
    LoweringRuleContext as LoweringRuleContext,
    upstream_dialects as upstream_dialects,
)
