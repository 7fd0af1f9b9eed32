"""arrax.custom_batching: functions with their own vmap rules."""
from arrax._src.custom_batching import (custom_vmap as custom_vmap,
                                        sequential_vmap as sequential_vmap)

__all__ = ["custom_vmap", "sequential_vmap"]
