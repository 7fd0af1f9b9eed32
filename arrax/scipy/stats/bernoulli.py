"""arrax.scipy.stats.bernoulli, as jax.scipy.stats.bernoulli."""
from arrax._src.scipy.stats.bernoulli import cdf, logpmf, pmf, ppf  # noqa: F401
