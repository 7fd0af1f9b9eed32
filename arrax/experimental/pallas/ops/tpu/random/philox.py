"""arrax.experimental.pallas.ops.tpu.random.philox: Philox-4x32 random bits as a TPU kernel."""
from arrax._src.pallas.ops_tpu_random import (
    BLOCK_SIZE as BLOCK_SIZE, K_HI_32 as K_HI_32, K_LO_32 as K_LO_32, MUL_A as MUL_A,
    MUL_B as MUL_B, Shape as Shape, mul32_hi_lo as mul32_hi_lo, philox_4x32 as philox_4x32,
    philox_4x32_count as philox_4x32_count, philox_4x32_kernel as philox_4x32_kernel,
    philox_fold_in as philox_fold_in, philox_random_bits as philox_random_bits,
    philox_split as philox_split, plphilox_prng_impl as plphilox_prng_impl)
from arrax.experimental.pallas.ops.tpu.random import prng_utils as prng_utils  # noqa: F401
from arrax.experimental.pallas import tpu as _tpu  # noqa: F401  (imported by JAX's module)
