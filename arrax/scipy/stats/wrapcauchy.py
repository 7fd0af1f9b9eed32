"""arrax.scipy.stats.wrapcauchy, as jax.scipy.stats.wrapcauchy."""
from arrax._src.scipy.stats.wrapcauchy import (  # noqa: F401
    logpdf as logpdf, pdf as pdf)
