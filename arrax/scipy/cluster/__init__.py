"""arrax.scipy.cluster, as jax.scipy.cluster."""
from arrax.scipy.cluster import vq  # noqa: F401
