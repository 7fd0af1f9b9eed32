"""jax.dlpack: exchange arrays with other libraries through DLPack."""
from arrax._src.dlpack import (from_dlpack as from_dlpack,
                               is_supported_dtype as is_supported_dtype)
