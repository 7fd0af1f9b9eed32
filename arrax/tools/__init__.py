"""arrax.tools (`jax.tools`): command-line tools (`jax_to_ir`, `pgo_nsys_converter`)."""
