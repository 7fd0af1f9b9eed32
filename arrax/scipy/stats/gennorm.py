"""arrax.scipy.stats.gennorm, as jax.scipy.stats.gennorm."""
from arrax._src.scipy.stats.gennorm import (  # noqa: F401
    cdf as cdf, logpdf as logpdf, pdf as pdf)
