"""`jax.experimental.mesh_utils`: arrange devices into an array shaped like a logical mesh.

arrax runs on CPU (and GPU-like) platforms, where JAX lays devices out in the order given
(GPUs sorted by id); the TPU topology-aware layouts do not apply. Handlers registered in
`device_kind_handler_dict` (device kind -> function) are consulted first, as in JAX.
"""
from __future__ import annotations

import collections
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from arrax._src import backend

# Device kind -> handler(mesh_shape, devices, *, contiguous_submeshes) returning the device
# array or None (then the default layout applies). JAX fills it with its TPU layouts.
device_kind_handler_dict: dict[str, Callable[..., np.ndarray | None]] = {}


def _canonicalize_axis_sizes(axis_sizes):
  try:
    return tuple(int(s) for s in axis_sizes)
  except Exception:  # noqa: BLE001  (anything not convertible means "not a shape")
    return None


def create_device_mesh(mesh_shape: Sequence[int], devices: Sequence[Any] | None = None, *,
                       contiguous_submeshes: bool = False,
                       allow_split_physical_axes: bool = False) -> np.ndarray:
  """A NumPy array of `devices` (default: all devices) with shape `mesh_shape`, ready for
  `Mesh`. The number of devices must equal the product of `mesh_shape`."""
  if devices is None:
    devices = backend.devices()
  shape = _canonicalize_axis_sizes(mesh_shape)
  if shape is None:
    raise ValueError("`mesh_shape` passed to `create_device_mesh` should be a sequence of "
                     f"ints. Got {mesh_shape}")
  if math.prod(shape) != len(devices):
    raise ValueError(f"Number of devices {len(devices)} must equal the product of mesh_shape "
                     f"{shape}")
  last = devices[-1]
  handler = device_kind_handler_dict.get(last.device_kind)
  if handler is not None:
    result = handler(shape, devices, contiguous_submeshes=contiguous_submeshes)
    if result is not None:
      return result
  if last.platform == "gpu":
    devices = sorted(devices, key=lambda d: d.id)
  return np.asarray(devices).reshape(shape)


def create_hybrid_device_mesh(mesh_shape: Sequence[int], dcn_mesh_shape: Sequence[int],
                              devices: Sequence[Any] | None = None, *,
                              process_is_granule: bool = False,
                              should_sort_granules_by_key: bool = True,
                              allow_split_physical_axes: bool = False) -> np.ndarray:
  """A device mesh for two-level parallelism: the devices are grouped into granules (slices,
  or processes when `process_is_granule`), each granule is laid out as `mesh_shape`, and the
  granules tile the result along `dcn_mesh_shape` (the result's shape is the elementwise
  product)."""
  if devices is None:
    devices = backend.devices()
  attr = "process_index" if process_is_granule else "slice_index"
  if not hasattr(devices[0], attr):
    raise ValueError(f"Device {devices[0]} does not have attribute {attr}. See "
                     "`process_is_granule` option.")
  groups = collections.defaultdict(list)
  for d in devices:
    groups[getattr(d, attr)].append(d)
  granules = ([groups[k] for k in sorted(groups)] if should_sort_granules_by_key
              else list(groups.values()))
  if np.prod(dcn_mesh_shape) != len(granules):
    raise ValueError(f"Number of slices {len(granules)} must equal the product of "
                     f"dcn_mesh_shape {dcn_mesh_shape}")
  meshes = [create_device_mesh(mesh_shape, g, allow_split_physical_axes=allow_split_physical_axes)
            for g in granules]
  order = np.arange(len(granules)).reshape(dcn_mesh_shape)
  blocks = np.empty(order.shape, dtype=object)
  for idx in np.ndindex(order.shape):
    blocks[idx] = meshes[order[idx]]
  return np.block(blocks.tolist())
