"""Implementation of arrax.scipy.stats: one module per distribution, as in JAX."""
