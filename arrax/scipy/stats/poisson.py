"""arrax.scipy.stats.poisson, as jax.scipy.stats.poisson."""
from arrax._src.scipy.stats.poisson import (  # noqa: F401
    cdf as cdf, entropy as entropy, logpmf as logpmf, pmf as pmf)
