"""arrax.experimental.array_serialization.pytree_serialization_utils: pytree structures as
JSON-friendly dicts."""
from arrax._src.array_serialization.pytree_serialization_utils import (  # noqa: F401
    __all__ as __all__, PyTreeFuture as PyTreeFuture, _LEAF_IDS_KEY, _TREE_REPR_KEY,
    deserialize_pytreedef as deserialize_pytreedef,
    register_pytree_node_serialization as register_pytree_node_serialization,
    serialize_pytreedef as serialize_pytreedef)
