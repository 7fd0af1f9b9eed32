"""arrax.scipy.stats.logistic, as jax.scipy.stats.logistic."""
from arrax._src.scipy.stats.logistic import cdf, isf, logpdf, pdf, ppf, sf  # noqa: F401
