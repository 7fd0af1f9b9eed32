"""arrax.extend.mlir.dialects.math (`jax.extend.mlir.dialects.math`): jaxlib's math dialect."""
from jaxlib.mlir.dialects.math import *  # noqa: F401,F403
