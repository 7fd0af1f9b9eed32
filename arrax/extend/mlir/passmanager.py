"""arrax.extend.mlir.passmanager (`jax.extend.mlir.passmanager`): jaxlib's MLIR pass manager."""
from jaxlib.mlir.passmanager import *  # noqa: F401,F403
