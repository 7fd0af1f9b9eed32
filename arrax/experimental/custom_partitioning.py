"""arrax.experimental.custom_partitioning (`jax.experimental.custom_partitioning`).

arrax lowers the decorated function's own body; the partition callbacks are recorded but not
run by XLA's partitioner (see arrax/_src/custom_partitioning.py)."""
from arrax._src.custom_partitioning import (
    ArrayMapping as ArrayMapping,
    BATCHING as BATCHING,
    CompoundFactor as CompoundFactor,
    SdyShardingRule as SdyShardingRule,
    custom_partitioning as custom_partitioning,
    custom_partitioning_p as custom_partitioning_p,
)
