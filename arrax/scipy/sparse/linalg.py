"""arrax.scipy.sparse.linalg: iterative solvers, as jax.scipy.sparse.linalg (without gmres)."""
from arrax._src.scipy.sparse.linalg import bicgstab as bicgstab, cg as cg  # noqa: F401
