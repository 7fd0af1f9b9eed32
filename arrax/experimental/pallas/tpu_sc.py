"""arrax.experimental.pallas.tpu_sc (`jax.experimental.pallas.tpu_sc`): TPU SparseCore meshes
and operations (SparseCore-only: they raise as JAX's do off-TPU), and `parallel_loop`."""
from arrax._src.pallas.tpu_sc import (
    Indices as Indices, PackFormat as PackFormat, ScalarSubcoreMesh as ScalarSubcoreMesh,
    VectorSubcoreMesh as VectorSubcoreMesh, addupdate as addupdate,
    addupdate_compressed as addupdate_compressed, addupdate_scatter as addupdate_scatter,
    all_reduce_ffs as all_reduce_ffs,
    all_reduce_population_count as all_reduce_population_count, bitcast as bitcast,
    cummax as cummax, cumsum as cumsum, fetch_and_add as fetch_and_add,
    get_sparse_core_info as get_sparse_core_info, load_expanded as load_expanded,
    load_gather as load_gather, pack as pack, parallel_loop as parallel_loop,
    scan_count as scan_count, sort_key_val as sort_key_val,
    store_compressed as store_compressed, store_scatter as store_scatter,
    subcore_barrier as subcore_barrier, unpack as unpack)
