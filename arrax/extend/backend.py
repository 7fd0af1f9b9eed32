"""arrax.extend.backend (`jax.extend.backend`): the XLA clients arrax runs on."""
from arrax._src.backend import (
    backend_xla_version as backend_xla_version,
    backends as backends,
    clear_backends as clear_backends,
    get_backend as get_backend,
    get_default_device as get_default_device,
    register_backend_factory as register_backend_factory,
)
from arrax._src.compiler import get_compile_options as get_compile_options
from arrax._src.extend import (
    clear_in_memory_compilation_cache as clear_in_memory_compilation_cache,
    register_backend_cache as register_backend_cache,
)
from jaxlib import _ifrt_proxy as ifrt_proxy  # noqa: F401  (jaxlib's module, as JAX's)
