"""arrax.experimental.sparse.coo (`jax.experimental.sparse.coo`): the public names of
arrax's sparse `coo` module (arrax/_src/sparse/coo.py)."""
from arrax._src.array import (
    Array as Array,
)
from arrax._src.sparse.coo import (
    COO as COO,
    COOInfo as COOInfo,
    JAXSparse as JAXSparse,
    coo_fromdense as coo_fromdense,
    coo_fromdense_p as coo_fromdense_p,
    coo_matmat as coo_matmat,
    coo_matmat_p as coo_matmat_p,
    coo_matvec as coo_matvec,
    coo_matvec_p as coo_matvec_p,
    coo_todense as coo_todense,
    coo_todense_p as coo_todense_p,
)
from arrax._src.sparse.util import (
    CuSparseEfficiencyWarning as CuSparseEfficiencyWarning,
)
