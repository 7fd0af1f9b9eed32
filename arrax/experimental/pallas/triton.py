"""arrax.experimental.pallas.triton (`jax.experimental.pallas.triton`): masked loads and
stores, atomics, compiler parameters and hints for Triton kernels, run in interpret mode."""
from arrax._src.pallas.primitives import dot as dot
from arrax._src.pallas.triton import (
    CompilerParams as CompilerParams, approx_tanh as approx_tanh, atomic_add as atomic_add,
    atomic_and as atomic_and, atomic_cas as atomic_cas, atomic_max as atomic_max,
    atomic_min as atomic_min, atomic_or as atomic_or, atomic_xchg as atomic_xchg,
    atomic_xor as atomic_xor, debug_barrier as debug_barrier,
    elementwise_inline_asm as elementwise_inline_asm, load as load,
    max_contiguous as max_contiguous, store as store)
