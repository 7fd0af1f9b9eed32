"""arrax.experimental.pallas.ops.tpu.random (`jax.experimental.pallas.ops.tpu.random`):
counter-based random bits as TPU Pallas kernels (`philox`, `threefry`, `prng_utils`)."""
