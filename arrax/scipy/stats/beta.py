"""arrax.scipy.stats.beta, as jax.scipy.stats.beta."""
from arrax._src.scipy.stats.beta import logpdf, pdf  # noqa: F401
