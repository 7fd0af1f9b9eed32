"""arrax.scipy: SciPy-like APIs, as jax.scipy."""
from arrax.scipy import (cluster, fft, integrate, interpolate, linalg, ndimage,  # noqa: F401
                         optimize, signal, sparse, spatial, special, stats)
