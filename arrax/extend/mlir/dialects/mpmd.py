"""arrax.extend.mlir.dialects.mpmd (`jax.extend.mlir.dialects.mpmd`): jaxlib's mpmd dialect."""
from jaxlib.mlir.dialects.mpmd import *  # noqa: F401,F403
