"""arrax.scipy.stats.betabinom, as jax.scipy.stats.betabinom."""
from arrax._src.scipy.stats.betabinom import (  # noqa: F401
    logpmf as logpmf, pmf as pmf)
