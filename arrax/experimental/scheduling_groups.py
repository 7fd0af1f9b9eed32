"""arrax.experimental.scheduling_groups (jax.experimental.scheduling_groups)."""
from arrax._src.scheduling_groups import (
    scheduling_group as scheduling_group, xla_metadata_call as xla_metadata_call,
    xla_metadata_call_p as xla_metadata_call_p)
