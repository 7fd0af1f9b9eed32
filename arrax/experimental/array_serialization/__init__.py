"""arrax.experimental.array_serialization (`jax.experimental.array_serialization`): arrays and
pytrees saved with TensorStore. Its submodules need the optional `tensorstore` package."""
