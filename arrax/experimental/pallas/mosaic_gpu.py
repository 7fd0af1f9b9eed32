"""arrax.experimental.pallas.mosaic_gpu (`jax.experimental.pallas.mosaic_gpu`, "plgpu"): on
CPU, what JAX's Pallas interpret mode runs (plain kernels with GPU compiler params, memory
spaces and block specs, `kernel`, `nd_loop`, operand-free `emit_pipeline`, host-side helpers);
the operations that need an NVIDIA GPU with Mosaic GPU raise as in JAX."""
from arrax._src.pallas.mosaic_gpu import (
    Barrier as Barrier, BlockSpec as BlockSpec, cluster_ref as cluster_ref,
    ClusterBarrier as ClusterBarrier, CompilerParams as CompilerParams, kernel as kernel,
    Layout as Layout, layout_cast as layout_cast, MemorySpace as MemorySpace, Mesh as Mesh,
    multicast_ref as multicast_ref, PeerMemRef as PeerMemRef, RefUnion as RefUnion,
    remote_ref as remote_ref, SemaphoreType as SemaphoreType,
    SwizzleTransform as SwizzleTransform, TilingTransform as TilingTransform,
    TMEMLayout as TMEMLayout, TraceScope as TraceScope, transform_ref as transform_ref,
    transpose_ref as transpose_ref, TryClusterCancelResult as TryClusterCancelResult,
    WarpMesh as WarpMesh, WGMMAAccumulatorRef as ACC,
    WGMMAAccumulatorRef as WGMMAAccumulatorRef,
    dynamic_scheduling_loop as dynamic_scheduling_loop, find_swizzle as find_swizzle,
    format_tcgen05_sparse_metadata as format_tcgen05_sparse_metadata, nd_loop as nd_loop,
    NDLoopInfo as NDLoopInfo, planar_snake as planar_snake, warp_map as warp_map,
    emit_pipeline as emit_pipeline,
    emit_pipeline_warp_specialized as emit_pipeline_warp_specialized,
    PipelinePipeline as PipelinePipeline,
    async_copy_scales_to_tmem as async_copy_scales_to_tmem,
    async_copy_smem_to_tmem as async_copy_smem_to_tmem,
    async_copy_sparse_metadata_to_tmem as async_copy_sparse_metadata_to_tmem,
    async_load_tmem as async_load_tmem, async_prefetch as async_prefetch,
    async_store_smem as async_store_smem, async_store_tmem as async_store_tmem,
    atomic_add as atomic_add, atomic_and as atomic_and, atomic_max as atomic_max,
    atomic_min as atomic_min, atomic_or as atomic_or, atomic_xor as atomic_xor,
    barrier_arrive as barrier_arrive, barrier_test as barrier_test,
    barrier_wait as barrier_wait, broadcasted_iota as broadcasted_iota,
    commit_smem as commit_smem, commit_smem_to_gmem_group as commit_smem_to_gmem_group,
    commit_tmem as commit_tmem, copy_gmem_to_smem as copy_gmem_to_smem,
    copy_smem_to_gmem as copy_smem_to_gmem,
    griddepcontrol_launch_dependents as griddepcontrol_launch_dependents,
    griddepcontrol_wait as griddepcontrol_wait, inline_mgpu as inline_mgpu, load as load,
    multimem_load_reduce as multimem_load_reduce, multimem_store as multimem_store,
    print_layout as print_layout, query_cluster_cancel as query_cluster_cancel,
    RefType as RefType, semaphore_signal as semaphore_signal,
    semaphore_signal_multicast as semaphore_signal_multicast,
    semaphore_signal_parallel as semaphore_signal_parallel, semaphore_wait as semaphore_wait,
    SemaphoreSignal as SemaphoreSignal, set_max_registers as set_max_registers,
    ShapeDtypeStruct as ShapeDtypeStruct, tcgen05_commit_arrive as tcgen05_commit_arrive,
    tcgen05_mma as tcgen05_mma, try_cluster_cancel as try_cluster_cancel,
    wait_load_tmem as wait_load_tmem, wait_smem_to_gmem as wait_smem_to_gmem, wgmma as wgmma,
    wgmma_accumulator_load as wgmma_accumulator_load, wgmma_wait as wgmma_wait,
    as_torch_kernel as as_torch_kernel, Transform as Transform,
    LoweringSemantics as LoweringSemantics, Replicated as Replicated, Tiling as Tiling,
    CopyPartition as CopyPartition, OOBFillMode as OOBFillMode)

GMEM = MemorySpace.GMEM
SMEM = MemorySpace.SMEM
TMEM = MemorySpace.TMEM
REGS = MemorySpace.REGS
