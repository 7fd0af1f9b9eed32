"""arrax.experimental.colocated_python.obj_backend
(`jax.experimental.colocated_python.obj_backend`): the live objects of colocated classes (by
instance id)."""
from arrax._src.colocated_python import (
    SINGLETON_OBJECT_STORE as SINGLETON_OBJECT_STORE,
)
