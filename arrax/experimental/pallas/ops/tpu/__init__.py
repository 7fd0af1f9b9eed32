"""arrax.experimental.pallas.ops.tpu (`jax.experimental.pallas.ops.tpu`): TPU Pallas kernels
(run in TPU interpret mode off-TPU)."""
