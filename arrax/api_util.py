"""arrax.api_util (`jax.api_util`)."""
from arrax._src.api_util import (
    debug_info as debug_info,
    flatten_fun as flatten_fun,
    flatten_fun_nokwargs as flatten_fun_nokwargs,
    shaped_abstractify as shaped_abstractify,
)
