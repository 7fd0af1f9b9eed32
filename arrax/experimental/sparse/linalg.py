"""arrax.experimental.sparse.linalg (jax.experimental.sparse.linalg): sparse solvers."""
from arrax._src.sparse.linalg import (lobpcg_standard as lobpcg_standard, spsolve as spsolve,
                                      spsolve_p as spsolve_p)
