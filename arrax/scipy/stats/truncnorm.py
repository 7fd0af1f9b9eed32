"""arrax.scipy.stats.truncnorm, as jax.scipy.stats.truncnorm."""
from arrax._src.scipy.stats.truncnorm import (  # noqa: F401
    cdf as cdf, logcdf as logcdf, logpdf as logpdf, logsf as logsf, pdf as pdf, sf as sf)
