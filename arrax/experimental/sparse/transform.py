"""arrax.experimental.sparse.transform (`jax.experimental.sparse.transform`): the public names of
arrax's sparse `transform` module (arrax/_src/sparse/transform.py)."""
from arrax._src.sparse.bcoo import (
    bcoo_multiply_dense as bcoo_multiply_dense,
    bcoo_multiply_sparse as bcoo_multiply_sparse,
)
from arrax._src.sparse.transform import (
    BCOO as BCOO,
    BCSR as BCSR,
    SparseTracer as SparseTracer,
    eval_sparse as eval_sparse,
    sparse_rules_bcoo as sparse_rules_bcoo,
    sparsify as sparsify,
)
