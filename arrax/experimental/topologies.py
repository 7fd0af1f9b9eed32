"""arrax.experimental.topologies (`jax.experimental.topologies`): the attached topology and
meshes over it (no compile-only topologies on CPU, as in JAX)."""
from arrax._src.topologies import (
    Device as Device,
    TopologyDescription as TopologyDescription,
    get_attached_topology as get_attached_topology,
    get_topology_desc as get_topology_desc,
    make_mesh as make_mesh,
)
