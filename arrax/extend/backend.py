"""arrax.extend.backend (`jax.extend.backend`): the XLA clients arrax runs on."""
from arrax._src.backend import (
    backends as backends,
    clear_backends as clear_backends,
    get_backend as get_backend,
    get_default_device as get_default_device,
)
