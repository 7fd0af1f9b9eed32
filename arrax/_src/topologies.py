"""`jax.experimental.topologies`: descriptions of device topologies, and meshes over them.

Only the attached devices are known to arrax: compile-only topologies come from PjRt topology
plugins (TPU), and none exists for CPU, so `get_topology_desc` refuses as JAX does on a
machine without TPU support (NotImplementedError for a named non-TPU platform, RuntimeError for
TPU).
"""
from __future__ import annotations

from collections.abc import Sequence

from arrax._src import backend
from arrax._src.mesh_utils import create_device_mesh
from arrax._src.sharding_impls import Mesh

Device = backend.Device


class TopologyDescription:
  """A list of devices (attached or compile-only) a mesh can be built from."""

  def __init__(self, devices: list[Device]):
    self.devices: list[Device] = devices


def get_attached_topology(platform=None) -> TopologyDescription:
  """The topology of the devices of `platform` (default: the default backend) in this
  process."""
  return TopologyDescription(backend.devices(platform))


def get_topology_desc(topology_name: str = "", platform: str | None = None,
                      **kwargs) -> TopologyDescription:
  """A compile-only topology by name; needs a PjRt topology plugin (none for CPU) or a
  `make_topology` given to register_backend_factory."""
  if platform in backend.topology_factories:
    topology = backend.topology_factories[platform](topology_name, **kwargs)
    return TopologyDescription(topology._make_compile_only_devices())
  if platform is None or platform == "tpu":
    raise RuntimeError("JAX TPU support not installed; cannot generate TPU topology. See "
                       "https://github.com/jax-ml/jax#installation")
  raise NotImplementedError(f"topology not implemented for {platform}")


def make_mesh(topo: TopologyDescription, mesh_shape: Sequence[int],
              axis_names: tuple[str, ...], *, contiguous_submeshes: bool = False) -> Mesh:
  """A Mesh of `mesh_shape` over the topology's devices (laid out as create_device_mesh
  does)."""
  devices = create_device_mesh(mesh_shape, list(topo.devices),
                               contiguous_submeshes=contiguous_submeshes)
  return Mesh(devices, axis_names)
