"""arrax.numpy.linalg: NumPy's linear algebra functions on arrax arrays."""
from arrax._src.numpy.linalg import (  # noqa: F401
    EigResult, EighResult, QRResult, SlogdetResult, SVDResult, cholesky, cond, det, eig, eigh,
    eigvals, eigvalsh, inv, lstsq, matrix_norm, matrix_power, matrix_rank, norm, pinv, qr,
    slogdet, solve, svd, svdvals, vector_norm)
