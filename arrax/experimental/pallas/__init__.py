"""arrax.experimental.pallas (`jax.experimental.pallas`): kernels written on refs and run over
a grid of blocks with `pallas_call`; on CPU they run in interpret mode (`interpret=True`)."""
from arrax._src.checkify import debug_check as debug_check
from arrax._src.indexing import Slice as Slice, ds as ds, dslice as dslice
from arrax._src.numpy.lax_numpy import broadcast_to as broadcast_to
from arrax._src.pallas.core import (
    BlockDim as BlockDim, Blocked as Blocked, BlockSpec as BlockSpec,
    BoundedSlice as BoundedSlice, Buffered as Buffered, CompilerParams as CompilerParams,
    CostEstimate as CostEstimate, Element as Element, GridSpec as GridSpec,
    Indirect as Indirect, MemoryRef as MemoryRef, MemorySpace as MemorySpace,
    RevisitMode as RevisitMode, Squeezed as Squeezed, core_map as core_map,
    enable_debug_checks as enable_debug_checks, enable_poison_buffers as enable_poison_buffers,
    lower_as_mlir as lower_as_mlir, no_block_spec as no_block_spec,
    pallas_export_experimental as pallas_export_experimental, semaphore as semaphore,
    squeezed as squeezed)
from arrax._src.pallas.helpers import (
    align_to as align_to, cdiv as cdiv, empty as empty, empty_like as empty_like,
    empty_ref_like as empty_ref_like, estimate_cost as estimate_cost, kernel as kernel,
    loop as loop, next_power_of_2 as next_power_of_2, run_state as run_state,
    select_ref as select_ref, strides_from_shape as strides_from_shape, when as when,
    with_scoped as with_scoped)
from arrax._src.pallas.pallas_call import (pallas_call as pallas_call,
                                           pallas_call_p as pallas_call_p)
from arrax._src.pallas.primitives import (
    DeviceIdType as DeviceIdType, debug_print as debug_print, delay as delay,
    get_global as get_global, multiple_of as multiple_of, num_programs as num_programs,
    program_id as program_id, reciprocal as reciprocal, run_scoped as run_scoped,
    semaphore_read as semaphore_read, semaphore_signal as semaphore_signal,
    semaphore_wait as semaphore_wait)

ANY = MemorySpace.ANY
HOST = MemorySpace.HOST

from arrax._src.deprecations import deprecation_getattr as _deprecation_getattr  # noqa: E402
from arrax._src.pallas import primitives as _primitives  # noqa: E402

__getattr__ = _deprecation_getattr(__name__, {
    "dot": ("jax.experimental.pallas.dot was moved to jax.experimental.pallas.triton. Accessing "
            "it via jax.experimental.pallas is deprecated. You can use jax.numpy.dot, "
            "jax.numpy.einsum or the @ operator instead in a TPU or MGPU kernel.",
            _primitives.dot),
    "debug_checks_enabled": ("jax.experimental.pallas.debug_checks_enabled is deprecated, use "
                             "pl.enable_debug_checks.value instead.",
                             _primitives.debug_checks_enabled),
})
del _deprecation_getattr
