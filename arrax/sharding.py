"""arrax.sharding: meshes of devices and the shardings that lay arrays out over them."""
from arrax._src.sharding_impls import (AbstractDevice as AbstractDevice,
                                       AbstractMesh as AbstractMesh, AxisType as AxisType,
                                       ManualAxisType as ManualAxisType,
                                       make_single_device_sharding as make_single_device_sharding,
                                       Mesh as Mesh, NamedSharding as NamedSharding,
                                       PartitionSpec as PartitionSpec, Sharding as Sharding,
                                       SingleDeviceSharding as SingleDeviceSharding,
                                       get_abstract_mesh as get_abstract_mesh,
                                       get_mesh as get_mesh, set_mesh as set_mesh,
                                       use_abstract_mesh as use_abstract_mesh)
from arrax._src.spmd import (auto_axes as auto_axes, explicit_axes as explicit_axes,
                             reshard as reshard)

__all__ = ["AbstractDevice", "AbstractMesh", "AxisType", "ManualAxisType", "Mesh",
           "NamedSharding", "PartitionSpec", "Sharding", "SingleDeviceSharding",
           "make_single_device_sharding", "auto_axes", "explicit_axes", "get_abstract_mesh",
           "get_mesh", "reshard", "set_mesh", "use_abstract_mesh"]
