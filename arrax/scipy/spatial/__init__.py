"""arrax.scipy.spatial, as jax.scipy.spatial."""
from arrax.scipy.spatial import transform  # noqa: F401
