"""arrax.scipy.stats.expon, as jax.scipy.stats.expon."""
from arrax._src.scipy.stats.expon import cdf, logcdf, logpdf, logsf, pdf, ppf, sf  # noqa: F401
