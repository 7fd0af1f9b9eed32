"""arrax.api_util (`jax.api_util`)."""
from arrax._src.api_util import (
    argnums_partial as argnums_partial,
    debug_info as debug_info,
    donation_vector as donation_vector,
    flatten_axes as flatten_axes,
    flatten_fun as flatten_fun,
    flatten_fun_nokwargs as flatten_fun_nokwargs,
    rebase_donate_argnums as rebase_donate_argnums,
    shaped_abstractify as shaped_abstractify,
)
from arrax._src.api_util import safe_map as safe_map
