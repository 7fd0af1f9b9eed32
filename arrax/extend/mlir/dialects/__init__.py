"""arrax.extend.mlir.dialects (`jax.extend.mlir.dialects`): jaxlib's MLIR dialect bindings, one
submodule per dialect (stablehlo, chlo, func, sdy, ...)."""
