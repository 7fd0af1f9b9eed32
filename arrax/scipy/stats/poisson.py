"""arrax.scipy.stats.poisson, as jax.scipy.stats.poisson."""
from arrax._src.scipy.stats.poisson import cdf, logpmf, pmf  # noqa: F401
