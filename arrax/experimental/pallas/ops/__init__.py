"""arrax.experimental.pallas.ops (`jax.experimental.pallas.ops`): kernels written in Pallas."""
