"""Short aliases of the pytree utilities in :mod:`arrax.tree_util`."""
from arrax._src.tree_util import (
    static as static,
    pub_tree_all as all,
    pub_tree_broadcast as broadcast,
    pub_tree_flatten as flatten,
    pub_tree_flatten_with_path as flatten_with_path,
    pub_tree_leaves as leaves,
    pub_tree_leaves_with_path as leaves_with_path,
    pub_tree_map as map,
    pub_tree_map_with_path as map_with_path,
    pub_tree_reduce as reduce,
    pub_tree_reduce_associative as reduce_associative,
    pub_tree_structure as structure,
    pub_tree_transpose as transpose,
    tree_unflatten as unflatten,
)

__all__ = [
    "all", "broadcast", "flatten", "flatten_with_path", "leaves",
    "leaves_with_path", "map", "map_with_path", "reduce", "reduce_associative",
    "static", "structure", "transpose", "unflatten",
]
