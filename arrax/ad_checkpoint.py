"""Rematerialization (as `jax.ad_checkpoint`): checkpoint/remat, names and policies."""
from arrax._src.checkpoint import (
    checkpoint as checkpoint,
    checkpoint_name as checkpoint_name,
    checkpoint_policies as checkpoint_policies,
    remat as remat,
)
