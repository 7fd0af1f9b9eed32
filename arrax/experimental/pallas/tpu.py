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
    BufferType as BufferType, CoreType as CoreType,
    InterpretParams as InterpretParams, bitcast as bitcast,
    create_tensorcore_mesh as create_tensorcore_mesh, dma_semaphore as dma_semaphore,
    einshape as einshape, force_tpu_interpret_mode as force_tpu_interpret_mode,
    get_barrier_semaphore as get_barrier_semaphore, load as load,
    pack_elementwise as pack_elementwise, prng_random_bits as prng_random_bits,
    prng_seed as prng_seed, reset_tpu_interpret_mode_state as reset_tpu_interpret_mode_state,
    roll as roll, set_tpu_interpret_mode as set_tpu_interpret_mode,
    stochastic_round as stochastic_round, store as store,
    unpack_elementwise as unpack_elementwise, LoweringException as LoweringException,
    async_remote_copy as async_remote_copy, core_barrier as core_barrier,
    emit_pipeline as emit_pipeline,
    emit_pipeline_with_allocations as emit_pipeline_with_allocations,
    make_async_remote_copy as make_async_remote_copy, matmul_acc_lhs as matmul_acc_lhs,
    matmul_pop as matmul_pop, matmul_push_rhs as matmul_push_rhs,
    stateful_bernoulli as stateful_bernoulli, stateful_bits as stateful_bits,
    stateful_normal as stateful_normal, stateful_uniform as stateful_uniform,
    run_on_first_core as run_on_first_core, touch as touch, trace_value as trace_value,
    with_memory_space_constraint as with_memory_space_constraint)
from arrax._src.pallas.tpu_info import (
    ChipVersion as ChipVersion, Tiling as Tiling, TpuInfo as TpuInfo,
    get_tpu_info as get_tpu_info, get_tpu_info_for_chip as get_tpu_info_for_chip,
    is_tpu_device as is_tpu_device)
from arrax._src.pallas.tpu_pipeline import (BufferedRef as BufferedRef,
                                            BufferedRefBase as BufferedRefBase)
from arrax._src.pallas.tpu_random import (sample_block as sample_block,
                                          to_pallas_key as to_pallas_key)

CMEM = MemorySpace.CMEM
SMEM = MemorySpace.SMEM
VMEM = MemorySpace.VMEM
VMEM_SHARED = MemorySpace.VMEM_SHARED
HBM = MemorySpace.HBM
SEMAPHORE = MemorySpace.SEMAPHORE
