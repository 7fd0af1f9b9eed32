"""arrax.scipy.stats.gamma, as jax.scipy.stats.gamma."""
from arrax._src.scipy.stats.gamma import cdf, logcdf, logpdf, logsf, pdf, sf  # noqa: F401
