"""`jax._src.xla_bridge` compatibility: the XLA clients (backends) of this process."""
from arrax._src.backend import (_clients as _backends, backends, default_backend,  # noqa: F401
                                get_backend, process_count, process_index,
                                backends_are_initialized)
