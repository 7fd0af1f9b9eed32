"""arrax.experimental.shard_alike (jax.experimental.shard_alike)."""
from arrax._src.shard_alike import shard_alike as shard_alike
