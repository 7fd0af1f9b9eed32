"""arrax.experimental: APIs JAX keeps under jax.experimental."""
from arrax._src.callback import io_callback as io_callback
# (imported here as in JAX)
from arrax.experimental import multihost_utils as multihost_utils
from arrax.experimental import compilation_cache as compilation_cache
from arrax.experimental import hijax as hijax
from arrax.experimental import sparse as sparse

__all__ = ["io_callback"]
