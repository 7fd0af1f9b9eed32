"""arrax.scipy.stats.dirichlet, as jax.scipy.stats.dirichlet."""
from arrax._src.scipy.stats.dirichlet import (  # noqa: F401
    logpdf as logpdf, pdf as pdf)
