"""arrax.experimental.compute_on (jax.experimental.compute_on)."""
from arrax._src.compute_on import compute_on as compute_on, compute_on2 as compute_on2
