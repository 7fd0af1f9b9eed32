"""arrax.numpy.linalg: NumPy's linear algebra functions on arrax arrays."""
from arrax._src.numpy.linalg import (  # noqa: F401
    EigResult, EighResult, QRResult, SlogdetResult, SVDResult, cholesky, cond, det, eig, eigh,
    eigvals, eigvalsh, inv, lstsq, matrix_norm, matrix_power, matrix_rank, norm, pinv, qr,
    slogdet, solve, svd, svdvals, vector_norm)
from arrax._src.numpy.linalg import (  # noqa: E402
    cross as cross, diagonal as diagonal, matmul as matmul, matrix_transpose as matrix_transpose,
    multi_dot as multi_dot, outer as outer, tensordot as tensordot, tensorinv as tensorinv,
    tensorsolve as tensorsolve, trace as trace, vecdot as vecdot)
