"""arrax.scipy: the parts of jax.scipy built so far (special, stats)."""
from arrax.scipy import fft, integrate, linalg, optimize, signal, special, stats  # noqa: F401
