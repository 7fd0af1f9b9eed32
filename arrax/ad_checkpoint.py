"""Rematerialization helpers (as `jax.ad_checkpoint`): names and policies; `jax.checkpoint` /
`jax.remat` themselves are top-level, as in JAX."""
from arrax._src.checkpoint import (
    checkpoint_name as checkpoint_name,
    checkpoint_policies as checkpoint_policies,
)
