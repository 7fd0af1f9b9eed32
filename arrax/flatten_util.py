"""arrax.flatten_util (`jax.flatten_util`)."""
from arrax._src.flatten_util import ravel_pytree as ravel_pytree
