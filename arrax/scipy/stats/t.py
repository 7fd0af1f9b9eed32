"""arrax.scipy.stats.t, as jax.scipy.stats.t."""
from arrax._src.scipy.stats.t import logpdf, pdf  # noqa: F401
