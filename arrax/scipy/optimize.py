"""arrax.scipy.optimize: minimize (BFGS), as jax.scipy.optimize."""
from arrax._src.scipy.optimize import (  # noqa: F401
    OptimizeResults as OptimizeResults, minimize as minimize)
