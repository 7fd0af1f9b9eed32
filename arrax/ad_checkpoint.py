"""Rematerialization helpers (as `jax.ad_checkpoint`): names and policies; `jax.checkpoint` /
`jax.remat` themselves are top-level, as in JAX."""
from arrax._src.checkpoint import (
    Offloadable as Offloadable,
    Recompute as Recompute,
    Saveable as Saveable,
    checkpoint_name as checkpoint_name,
    checkpoint_policies as checkpoint_policies,
)
from arrax._src.saved_residuals import print_saved_residuals as print_saved_residuals
