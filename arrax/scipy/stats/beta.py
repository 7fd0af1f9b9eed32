"""arrax.scipy.stats.beta, as jax.scipy.stats.beta."""
from arrax._src.scipy.stats.beta import (  # noqa: F401
    cdf as cdf, logcdf as logcdf, logpdf as logpdf, logsf as logsf, pdf as pdf, sf as sf)
