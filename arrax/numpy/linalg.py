"""arrax.numpy.linalg: NumPy's linear algebra functions on arrax arrays."""
from arrax._src.numpy.linalg import (  # noqa: F401
    EigResult, SlogdetResult, cholesky, det, eig, eigvals, inv, slogdet, solve)
