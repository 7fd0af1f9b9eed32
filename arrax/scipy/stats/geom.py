"""arrax.scipy.stats.geom, as jax.scipy.stats.geom."""
from arrax._src.scipy.stats.geom import (  # noqa: F401
    logpmf as logpmf, pmf as pmf)
