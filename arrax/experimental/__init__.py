"""arrax.experimental: APIs JAX keeps under jax.experimental (submodules: checkify, layout)."""
