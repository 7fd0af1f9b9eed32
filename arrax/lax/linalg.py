"""arrax.lax.linalg: linear algebra primitives (LAPACK on CPU), with JAX's signatures."""
from arrax._src.lax.linalg import (  # noqa: F401
    EigImplementation, EighImplementation, SvdAlgorithm, cholesky, cholesky_p, eig, eig_p,
    eigh, eigh_p, householder_product, householder_product_p, lu, lu_p,
    lu_pivots_to_permutation, lu_pivots_to_permutation_p, qr, qr_p, svd, svd_p,
    triangular_solve, triangular_solve_p)
from arrax._src.lax.linalg_schur import (  # noqa: F401
    hessenberg as hessenberg, hessenberg_p as hessenberg_p, schur as schur, schur_p as schur_p)
from arrax._src.lax.linalg_extra import (  # noqa: F401
    cholesky_update as cholesky_update, cholesky_update_p as cholesky_update_p,
    ormqr as ormqr, ormqr_p as ormqr_p, symmetric_product as symmetric_product,
    symmetric_product_p as symmetric_product_p, tridiagonal as tridiagonal,
    tridiagonal_p as tridiagonal_p, tridiagonal_solve as tridiagonal_solve,
    tridiagonal_solve_p as tridiagonal_solve_p)
from arrax._src.lax.qdwh import qdwh as qdwh  # noqa: F401
