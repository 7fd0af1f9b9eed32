"""arrax.debug: printing, logging, callbacks and a debugger that work inside jit and
transformations."""
from arrax._src.debugger import breakpoint as breakpoint  # noqa: A004
from arrax._src.debugging import (DebugEffect as DebugEffect,
                                  OrderedDebugEffect as OrderedDebugEffect,
                                  debug_callback as callback,
                                  debug_log as log,
                                  debug_print as print)  # noqa: A004

__all__ = ["DebugEffect", "OrderedDebugEffect", "breakpoint", "callback", "log", "print"]
