"""arrax.debug: printing, logging, callbacks and a debugger that work inside jit and
transformations."""
from arrax._src.debugger import breakpoint as breakpoint  # noqa: A004
from arrax._src.debugging import (DebugEffect as DebugEffect,
                                  OrderedDebugEffect as OrderedDebugEffect,
                                  debug_callback as callback,
                                  debug_log as log,
                                  debug_print as print)  # noqa: A004
from arrax._src.jaxpr_graph import jaxpr_graph as jaxpr_graph
from arrax._src.sharding_viz import (inspect_array_sharding as inspect_array_sharding,
                                     visualize_array_sharding as visualize_array_sharding,
                                     visualize_sharding as visualize_sharding)

__all__ = ["DebugEffect", "OrderedDebugEffect", "breakpoint", "callback", "inspect_array_sharding",
           "jaxpr_graph", "log", "print", "visualize_array_sharding", "visualize_sharding"]
