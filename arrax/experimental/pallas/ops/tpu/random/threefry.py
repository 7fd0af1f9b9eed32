"""arrax.experimental.pallas.ops.tpu.random.threefry: threefry2x32 random bits as a TPU
kernel."""
from arrax._src.pallas.ops_tpu_random import (
    BLOCK_SIZE as BLOCK_SIZE, Shape as Shape, plthreefry_prng_impl as plthreefry_prng_impl,
    plthreefry_random_bits as plthreefry_random_bits,
    threefry_2x32_count as threefry_2x32_count)
from arrax.experimental.pallas.ops.tpu.random import prng_utils as prng_utils  # noqa: F401
from arrax.experimental.pallas import tpu as _tpu  # noqa: F401  (imported by JAX's module)
