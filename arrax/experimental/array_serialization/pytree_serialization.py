"""arrax.experimental.array_serialization.pytree_serialization: saving and loading pytrees."""
from arrax._src.array_serialization.pytree_serialization import (  # noqa: F401
    __all__ as __all__, _PYTREEDEF_FILE, _ARRAY_STORE_DIRNAME, load as load,
    load_pytreedef as load_pytreedef, nonblocking_load as nonblocking_load,
    nonblocking_save as nonblocking_save, save as save, ts_impl, utils)
