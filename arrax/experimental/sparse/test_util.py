"""arrax.experimental.sparse.test_util (`jax.experimental.sparse.test_util`): random sparse
arrays, sparse layouts, and `SparseTestCase` (checks of sparse operations against dense
ones)."""
from arrax._src.sparse.test_util import (
    MATMUL_TOL as MATMUL_TOL,
    BatchedDotGeneralProperties as BatchedDotGeneralProperties,
    SparseLayout as SparseLayout,
    SparseTestCase as SparseTestCase,
    is_sparse as is_sparse,
    iter_bcsr_layouts as iter_bcsr_layouts,
    iter_sparse_layouts as iter_sparse_layouts,
    iter_subsets as iter_subsets,
    rand_bcoo as rand_bcoo,
    rand_bcsr as rand_bcsr,
    rand_sparse as rand_sparse,
)

__all__ = ["MATMUL_TOL", "BatchedDotGeneralProperties", "SparseLayout", "SparseTestCase",
           "is_sparse", "iter_bcsr_layouts", "iter_sparse_layouts", "iter_subsets", "rand_bcoo",
           "rand_bcsr", "rand_sparse"]
