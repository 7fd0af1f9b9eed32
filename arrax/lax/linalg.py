"""arrax.lax.linalg: linear algebra primitives (LAPACK on CPU), with JAX's signatures."""
from arrax._src.lax.linalg import (  # noqa: F401
    EigImplementation, cholesky, cholesky_p, eig, eig_p, lu, lu_p, lu_pivots_to_permutation,
    triangular_solve, triangular_solve_p)
