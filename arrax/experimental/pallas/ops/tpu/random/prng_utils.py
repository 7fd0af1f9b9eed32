"""arrax.experimental.pallas.ops.tpu.random.prng_utils: counters of the elements of a block."""
from arrax._src.pallas.ops_tpu_random import (
    Shape as Shape, blocked_iota as blocked_iota,
    compute_scalar_offset as compute_scalar_offset, round_up as round_up)
