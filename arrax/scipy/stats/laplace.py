"""arrax.scipy.stats.laplace, as jax.scipy.stats.laplace."""
from arrax._src.scipy.stats.laplace import cdf, logpdf, pdf  # noqa: F401
