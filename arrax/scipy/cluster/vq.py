"""arrax.scipy.cluster.vq, as jax.scipy.cluster.vq."""
from arrax._src.scipy.cluster.vq import vq as vq  # noqa: F401
