"""arrax.experimental.colocated_python (`jax.experimental.colocated_python`): functions and
objects run on the CPU devices colocated with their arrays (in this process, for arrax)."""
from arrax._src.colocated_python import (
    colocated_cpu_devices as colocated_cpu_devices,
    colocated_python as colocated_python,
    colocated_python_class as colocated_python_class,
)
