"""arrax.experimental.pallas.ops.tpu.matmul (`jax.experimental.pallas.ops.tpu.matmul`): a
blocked matmul kernel."""
from arrax._src.pallas.ops_tpu_matmul import matmul as matmul, matmul_kernel as matmul_kernel
