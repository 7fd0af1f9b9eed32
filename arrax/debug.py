"""arrax.debug: printing, logging and callbacks that work inside jit and transformations."""
from arrax._src.debugging import (DebugEffect as DebugEffect,
                                  OrderedDebugEffect as OrderedDebugEffect,
                                  debug_callback as callback,
                                  debug_log as log,
                                  debug_print as print)  # noqa: A004

__all__ = ["DebugEffect", "OrderedDebugEffect", "callback", "log", "print"]
