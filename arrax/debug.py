"""arrax.debug: printing and callbacks that work inside jit."""
from arrax._src.debugging import callback, debug_print as print  # noqa: A004

__all__ = ["callback", "print"]
