"""arrax.extend.random (`jax.extend.random`): the PRNG implementation record and threefry2x32.
arrax's key arrays implement threefry2x32 only, so JAX's rbg implementations and
`define_prng_impl` (user-defined key types) are not offered."""
from arrax._src.prng import (random_seed as random_seed, seed_with_impl as seed_with_impl,
                             threefry2x32_p as threefry2x32_p,
                             threefry_2x32_hash as threefry_2x32,
                             threefry_prng_impl as threefry_prng_impl)
