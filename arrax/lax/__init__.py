"""arrax.lax: the primitive operations, with JAX's signatures."""
from arrax._src.lax.lax import *  # noqa: F401,F403
from arrax._src.lax.lax import RoundingMethod, conj, round  # noqa: F401
