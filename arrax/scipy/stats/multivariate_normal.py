"""arrax.scipy.stats.multivariate_normal, as jax.scipy.stats.multivariate_normal."""
from arrax._src.scipy.stats.multivariate_normal import logpdf, pdf  # noqa: F401
