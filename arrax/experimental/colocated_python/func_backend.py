"""arrax.experimental.colocated_python.func_backend
(`jax.experimental.colocated_python.func_backend`): where results of colocated function calls
are kept (by call id)."""
from arrax._src.colocated_python import (
    SINGLETON_RESULT_STORE as SINGLETON_RESULT_STORE,
)
