"""arrax.scipy.stats.uniform, as jax.scipy.stats.uniform."""
from arrax._src.scipy.stats.uniform import cdf, logpdf, pdf, ppf  # noqa: F401
