"""arrax.scipy.linalg: dense linear algebra, as jax.scipy.linalg."""
from arrax._src.scipy.linalg import (  # noqa: F401
    cho_factor as cho_factor, cho_solve as cho_solve, cholesky as cholesky, det as det,
    eigh as eigh, expm as expm, expm_frechet as expm_frechet, funm as funm,
    hessenberg as hessenberg, inv as inv, lu as lu, lu_factor as lu_factor, lu_solve as lu_solve,
    polar as polar, qr as qr, qr_multiply as qr_multiply, rsf2csf as rsf2csf, schur as schur,
    solve as solve, solve_sylvester as solve_sylvester, solve_triangular as solve_triangular,
    sqrtm as sqrtm, svd as svd)
from arrax._src.scipy.linalg_matrices import (  # noqa: F401
    block_diag as block_diag, circulant as circulant, companion as companion,
    convolution_matrix as convolution_matrix, dft as dft, fiedler as fiedler,
    fiedler_companion as fiedler_companion, hadamard as hadamard, hankel as hankel,
    helmert as helmert, hilbert as hilbert, invhilbert as invhilbert, invpascal as invpascal,
    leslie as leslie, pascal as pascal, toeplitz as toeplitz)
from arrax._src.scipy.linalg_tridiagonal import eigh_tridiagonal as eigh_tridiagonal  # noqa: F401
