"""arrax.experimental.pallas.tpu (`jax.experimental.pallas.tpu`), the parts interpret mode
runs: memory spaces, semaphores, local DMAs, compiler parameters, grid dimension semantics,
PrefetchScalarGridSpec, vector ops (roll, bitcast, einshape, masked load/store), interpret-mode
settings and hardware enums (TPU-only operations raise as on CPU)."""
from arrax._src.pallas.tpu import (
    ARBITRARY as ARBITRARY, CORE_PARALLEL as CORE_PARALLEL, CompilerParams as CompilerParams,
    GridDimensionSemantics as GridDimensionSemantics, MemorySpace as MemorySpace,
    PARALLEL as PARALLEL, PrefetchScalarGridSpec as PrefetchScalarGridSpec,
    SUBCORE_PARALLEL as SUBCORE_PARALLEL, SemaphoreType as SemaphoreType,
    SideEffectType as SideEffectType, async_copy as async_copy,
    make_async_copy as make_async_copy, sync_copy as sync_copy,
    BufferType as BufferType, ChipVersion as ChipVersion, CoreType as CoreType,
    InterpretParams as InterpretParams, Tiling as Tiling, bitcast as bitcast,
    einshape as einshape, force_tpu_interpret_mode as force_tpu_interpret_mode,
    get_tpu_info as get_tpu_info, is_tpu_device as is_tpu_device, load as load,
    pack_elementwise as pack_elementwise, prng_random_bits as prng_random_bits,
    prng_seed as prng_seed, reset_tpu_interpret_mode_state as reset_tpu_interpret_mode_state,
    roll as roll, set_tpu_interpret_mode as set_tpu_interpret_mode,
    stochastic_round as stochastic_round, store as store,
    unpack_elementwise as unpack_elementwise)

CMEM = MemorySpace.CMEM
SMEM = MemorySpace.SMEM
VMEM = MemorySpace.VMEM
VMEM_SHARED = MemorySpace.VMEM_SHARED
HBM = MemorySpace.HBM
SEMAPHORE = MemorySpace.SEMAPHORE
