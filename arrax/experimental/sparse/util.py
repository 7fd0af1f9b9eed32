"""arrax.experimental.sparse.util (`jax.experimental.sparse.util`): the public names of
arrax's sparse `util` module (arrax/_src/sparse/util.py)."""
from arrax._src.array import (
    Array as Array,
)
from arrax._src.sparse.util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning,
    SparseEfficiencyError as SparseEfficiencyError,
    SparseEfficiencyWarning as SparseEfficiencyWarning,
    SparseInfo as SparseInfo,
    broadcasting_vmap as broadcasting_vmap,
    nfold_vmap as nfold_vmap,
)
