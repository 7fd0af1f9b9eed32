"""arrax.scipy.sparse, as jax.scipy.sparse."""
from arrax.scipy.sparse import linalg  # noqa: F401
