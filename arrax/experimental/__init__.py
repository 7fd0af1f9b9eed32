"""arrax.experimental: APIs JAX keeps under jax.experimental."""
from arrax._src.callback import io_callback as io_callback
# (imported so that their primitives exist whenever arrax is imported; pallas, sparse,
# custom_partitioning ... are imported when used, as in JAX)
from arrax.experimental import multihost_utils as multihost_utils
from arrax.experimental import compilation_cache as compilation_cache
from arrax.experimental import hijax as hijax
from arrax._src.hijax import cur_qdd as cur_qdd
from arrax._src.dtypes import primal_tangent_dtype as primal_tangent_dtype
from arrax._src.earray import EArray as EArray

__all__ = ["io_callback"]
