"""jax.experimental.compilation_cache.compilation_cache: set_cache_dir and reset_cache."""
from arrax._src.compilation_cache import (reset_cache as reset_cache,
                                          set_cache_dir as set_cache_dir)
