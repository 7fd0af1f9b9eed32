"""arrax.experimental.colocated_python.api (`jax.experimental.colocated_python.api`): the
colocated_python API."""
from arrax._src.colocated_python import (
    colocated_cpu_devices as colocated_cpu_devices,
    colocated_python as colocated_python,
    colocated_python_class as colocated_python_class,
    make_callable as make_callable,
    wrap_class as wrap_class,
)
