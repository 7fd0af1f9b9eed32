"""arrax.extend.mlir.ir (`jax.extend.mlir.ir`): jaxlib's MLIR core bindings (contexts, types,
attributes, operations), the ones arrax's lowering builds modules with."""
from jaxlib.mlir.ir import *  # noqa: F401,F403
