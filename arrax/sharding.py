"""arrax.sharding: meshes of devices and the shardings that lay arrays out over them."""
from arrax._src.sharding_impls import (AxisType as AxisType, Mesh as Mesh,
                                       NamedSharding as NamedSharding,
                                       PartitionSpec as PartitionSpec, Sharding as Sharding,
                                       SingleDeviceSharding as SingleDeviceSharding)

__all__ = ["AxisType", "Mesh", "NamedSharding", "PartitionSpec", "Sharding",
           "SingleDeviceSharding"]
