"""arrax.experimental.colocated_python.func (`jax.experimental.colocated_python.func`): colocated
functions and their specializations."""
from arrax._src.colocated_python import (
    FunctionInfo as FunctionInfo,
    Specialization as Specialization,
    is_prng_key_dtype as is_prng_key_dtype,
    make_callable as make_callable,
)
