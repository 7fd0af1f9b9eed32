"""arrax.extend.mlir.dialects.stablehlo (`jax.extend.mlir.dialects.stablehlo`): jaxlib's stablehlo dialect."""
from jaxlib.mlir.dialects.stablehlo import *  # noqa: F401,F403
