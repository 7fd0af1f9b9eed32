"""arrax.scipy.stats.pareto, as jax.scipy.stats.pareto."""
from arrax._src.scipy.stats.pareto import (  # noqa: F401
    cdf as cdf, logcdf as logcdf, logpdf as logpdf, logsf as logsf, pdf as pdf, ppf as ppf,
    sf as sf)
