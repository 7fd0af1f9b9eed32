"""jax.experimental.compilation_cache: the persistent compilation cache's settings."""
