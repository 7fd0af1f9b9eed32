"""arrax.experimental.sparse.ad (`jax.experimental.sparse.ad`): the public names of
arrax's sparse `ad` module (arrax/_src/sparse/ad.py)."""
from arrax._src.sparse.ad import (
    JAXSparse as JAXSparse,
    grad as grad,
    jacfwd as jacfwd,
    jacobian as jacobian,
    jacrev as jacrev,
    value_and_grad as value_and_grad,
)
