"""arrax.experimental: APIs JAX keeps under jax.experimental."""
from arrax._src.callback import io_callback as io_callback

__all__ = ["io_callback"]
