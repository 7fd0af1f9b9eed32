"""arrax.experimental.sparse.random (`jax.experimental.sparse.random`): the public names of
arrax's sparse `random` module (arrax/_src/sparse/random.py)."""
from arrax._src.array import (
    Array as Array,
)
from arrax._src.sparse.random import (
    random_bcoo as random_bcoo,
)
