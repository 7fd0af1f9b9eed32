"""arrax.lib (`jax.lib`): JAX exposes nothing public here; the module exists for imports."""
