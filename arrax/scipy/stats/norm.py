"""arrax.scipy.stats.norm, as jax.scipy.stats.norm."""
from arrax._src.scipy.stats.norm import (  # noqa: F401
    cdf, isf, logcdf, logpdf, logsf, pdf, ppf, sf)
