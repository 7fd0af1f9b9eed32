"""arrax.experimental.sparse.bcsr (`jax.experimental.sparse.bcsr`): the public names of
arrax's sparse `bcsr` module (arrax/_src/sparse/bcsr.py)."""
from arrax._src.array import (
    Array as Array,
)
from arrax._src.sparse.bcsr import (
    BCSR as BCSR,
    JAXSparse as JAXSparse,
    SparseInfo as SparseInfo,
    bcsr_broadcast_in_dim as bcsr_broadcast_in_dim,
    bcsr_concatenate as bcsr_concatenate,
    bcsr_dot_general as bcsr_dot_general,
    bcsr_dot_general_p as bcsr_dot_general_p,
    bcsr_eliminate_zeros as bcsr_eliminate_zeros,
    bcsr_extract as bcsr_extract,
    bcsr_extract_p as bcsr_extract_p,
    bcsr_fromdense as bcsr_fromdense,
    bcsr_fromdense_p as bcsr_fromdense_p,
    bcsr_sum_duplicates as bcsr_sum_duplicates,
    bcsr_todense as bcsr_todense,
    bcsr_todense_p as bcsr_todense_p,
    nfold_vmap as nfold_vmap,
)
from arrax._src.sparse.util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning,
    SparseEfficiencyWarning as SparseEfficiencyWarning,
)
