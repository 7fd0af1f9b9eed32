"""arrax.scipy.sparse.linalg: iterative solvers, as jax.scipy.sparse.linalg."""
from arrax._src.scipy.sparse.linalg import (  # noqa: F401
    bicgstab as bicgstab, cg as cg, gmres as gmres)
