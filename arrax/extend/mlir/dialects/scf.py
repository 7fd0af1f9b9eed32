"""arrax.extend.mlir.dialects.scf (`jax.extend.mlir.dialects.scf`): jaxlib's scf dialect."""
from jaxlib.mlir.dialects.scf import *  # noqa: F401,F403
