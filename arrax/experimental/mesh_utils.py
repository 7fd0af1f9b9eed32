"""arrax.experimental.mesh_utils (`jax.experimental.mesh_utils`): device meshes."""
from arrax._src.mesh_utils import (create_device_mesh as create_device_mesh,
                                   create_hybrid_device_mesh as create_hybrid_device_mesh,
                                   device_kind_handler_dict as device_kind_handler_dict)
