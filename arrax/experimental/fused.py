"""arrax.experimental.fused (jax.experimental.fused)."""
from arrax._src.fused import fused as fused, fused_p as fused_p
