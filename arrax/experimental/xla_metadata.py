"""arrax.experimental.xla_metadata (jax.experimental.xla_metadata)."""
from arrax._src.xla_metadata import set_xla_metadata as set_xla_metadata
