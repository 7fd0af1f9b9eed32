"""arrax.cloud_tpu_init (`jax.cloud_tpu_init`): deprecated; importing it warns, as in JAX, and its
`cloud_tpu_init` function is gone (arrax, on the CPU, has no Cloud TPU to set up)."""
import warnings

from arrax._src.deprecations import deprecation_getattr as _deprecation_getattr

warnings.warn("jax.cloud_tpu_init was deprecated in JAX v0.8.1. You should remove imports of "
              "this module.", DeprecationWarning, stacklevel=1)

__getattr__ = _deprecation_getattr(__name__, {}, {
    "cloud_tpu_init": "jax.cloud_tpu_init was deprecated in JAX v0.8.1. You do not need to call "
                      "this function explicitly; JAX calls this function automatically."})

del warnings
