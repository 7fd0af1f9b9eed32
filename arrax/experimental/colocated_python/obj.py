"""arrax.experimental.colocated_python.obj (`jax.experimental.colocated_python.obj`): colocated
classes."""
from arrax._src.colocated_python import (
    wrap_class as wrap_class,
)
