"""arrax.experimental.sparse.api (`jax.experimental.sparse.api`): the public names of
arrax's sparse `api` module (arrax/_src/sparse/api.py)."""
from arrax._src.array import (
    Array as Array,
)
from arrax._src.sparse.api import (
    BCOO as BCOO,
    BCSR as BCSR,
    COO as COO,
    CSC as CSC,
    CSR as CSR,
    JAXSparse as JAXSparse,
    empty as empty,
    eye as eye,
    todense as todense,
    todense_p as todense_p,
)
