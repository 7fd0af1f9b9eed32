"""arrax.extend.mlir.dialects.chlo (`jax.extend.mlir.dialects.chlo`): jaxlib's chlo dialect."""
from jaxlib.mlir.dialects.chlo import *  # noqa: F401,F403
