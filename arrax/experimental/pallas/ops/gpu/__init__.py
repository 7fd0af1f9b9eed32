"""arrax.experimental.pallas.ops.gpu (`jax.experimental.pallas.ops.gpu`): Triton-style GPU
Pallas kernels (run with `interpret=True` off-GPU)."""
