"""arrax.experimental.sparse.csr (`jax.experimental.sparse.csr`): the public names of
arrax's sparse `csr` module (arrax/_src/sparse/csr.py)."""
from arrax._src.array import (
    Array as Array,
)
from arrax._src.sparse.coo import (
    COOInfo as COOInfo,
)
from arrax._src.sparse.csr import (
    CSC as CSC,
    CSR as CSR,
    JAXSparse as JAXSparse,
    csr_fromdense as csr_fromdense,
    csr_fromdense_p as csr_fromdense_p,
    csr_matmat as csr_matmat,
    csr_matmat_p as csr_matmat_p,
    csr_matvec as csr_matvec,
    csr_matvec_p as csr_matvec_p,
    csr_todense as csr_todense,
    csr_todense_p as csr_todense_p,
)
from arrax._src.sparse.util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning,
)
