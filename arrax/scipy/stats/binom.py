"""arrax.scipy.stats.binom, as jax.scipy.stats.binom."""
from arrax._src.scipy.stats.binom import (  # noqa: F401
    logpmf as logpmf, pmf as pmf)
