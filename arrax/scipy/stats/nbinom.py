"""arrax.scipy.stats.nbinom, as jax.scipy.stats.nbinom."""
from arrax._src.scipy.stats.nbinom import (  # noqa: F401
    logpmf as logpmf, pmf as pmf)
