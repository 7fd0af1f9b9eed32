"""arrax.scipy.stats.multinomial, as jax.scipy.stats.multinomial."""
from arrax._src.scipy.stats.multinomial import (  # noqa: F401
    logpmf as logpmf, pmf as pmf)
