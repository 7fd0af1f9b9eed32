"""arrax.extend.random (`jax.extend.random`): PRNG implementation records (threefry2x32, rbg,
unsafe_rbg) and `define_prng_impl`, whose implementations key arrays accept as JAX's do."""
from arrax._src.prng import (random_seed as random_seed, seed_with_impl as seed_with_impl,
                             threefry2x32_p as threefry2x32_p,
                             threefry_2x32_hash as threefry_2x32,
                             threefry_prng_impl as threefry_prng_impl)
from arrax._src.rbg import (define_prng_impl as define_prng_impl,
                            rbg_prng_impl as rbg_prng_impl,
                            unsafe_rbg_prng_impl as unsafe_rbg_prng_impl)
