"""arrax.distributed: run one program in several processes (jax.distributed)."""
from arrax._src.distributed import (initialize as initialize, is_initialized as is_initialized,
                                    shutdown as shutdown)

__all__ = ["initialize", "is_initialized", "shutdown"]
