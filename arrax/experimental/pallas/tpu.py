"""arrax.experimental.pallas.tpu (`jax.experimental.pallas.tpu`), the parts interpret mode
runs: memory spaces, semaphores, local DMAs, compiler parameters, grid dimension semantics
and PrefetchScalarGridSpec."""
from arrax._src.pallas.tpu import (
    ARBITRARY as ARBITRARY, CORE_PARALLEL as CORE_PARALLEL, CompilerParams as CompilerParams,
    GridDimensionSemantics as GridDimensionSemantics, MemorySpace as MemorySpace,
    PARALLEL as PARALLEL, PrefetchScalarGridSpec as PrefetchScalarGridSpec,
    SUBCORE_PARALLEL as SUBCORE_PARALLEL, SemaphoreType as SemaphoreType,
    SideEffectType as SideEffectType, async_copy as async_copy,
    make_async_copy as make_async_copy, sync_copy as sync_copy)

CMEM = MemorySpace.CMEM
SMEM = MemorySpace.SMEM
VMEM = MemorySpace.VMEM
VMEM_SHARED = MemorySpace.VMEM_SHARED
HBM = MemorySpace.HBM
SEMAPHORE = MemorySpace.SEMAPHORE
