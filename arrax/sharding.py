"""arrax.sharding: meshes of devices and the shardings that lay arrays out over them."""
from arrax._src.sharding_impls import (AxisType as AxisType, Mesh as Mesh,
                                       NamedSharding as NamedSharding,
                                       PartitionSpec as PartitionSpec, Sharding as Sharding,
                                       SingleDeviceSharding as SingleDeviceSharding,
                                       get_mesh as get_mesh, set_mesh as set_mesh)

__all__ = ["AxisType", "Mesh", "NamedSharding", "PartitionSpec", "Sharding",
           "SingleDeviceSharding", "get_mesh", "set_mesh"]
