"""arrax.experimental.pallas.ops.tpu.megablox (`jax.experimental.pallas.ops.tpu.megablox`):
grouped matrix multiplication kernels."""
from arrax.experimental.pallas.ops.tpu.megablox.ops import gmm as gmm
