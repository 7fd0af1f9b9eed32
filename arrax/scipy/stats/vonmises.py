"""arrax.scipy.stats.vonmises, as jax.scipy.stats.vonmises."""
from arrax._src.scipy.stats.vonmises import (  # noqa: F401
    logpdf as logpdf, pdf as pdf)
