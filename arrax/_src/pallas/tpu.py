"""The parts of jax.experimental.pallas.tpu that interpret mode can run: TPU memory spaces
(VMEM, SMEM, ... as MemoryRef factories for scratch shapes and block specs), semaphores
(int16 refs starting at zero), local DMAs (`make_async_copy`/`async_copy`/`sync_copy`: the
copy happens at `start`, `wait` has nothing left to wait for), the compiler parameters
(accepted and ignored), grid dimension semantics, and `PrefetchScalarGridSpec`
(scalar-prefetch operands: passed whole to the kernel and to every index map as refs)."""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from arrax._src import dtypes, tree_util
from arrax._src.core import AbstractRef, ShapedArray
from arrax._src.pallas import core as pallas_core
from arrax._src.pallas import primitives


class GridDimensionSemantics(enum.Enum):
  """How a grid dimension's iterations may run (a hint; interpret mode runs them in order)."""
  PARALLEL = "parallel"
  CORE_PARALLEL = "core_parallel"
  SUBCORE_PARALLEL = "subcore_parallel"
  ARBITRARY = "arbitrary"


PARALLEL = GridDimensionSemantics.PARALLEL
CORE_PARALLEL = GridDimensionSemantics.CORE_PARALLEL
SUBCORE_PARALLEL = GridDimensionSemantics.SUBCORE_PARALLEL
ARBITRARY = GridDimensionSemantics.ARBITRARY


class SideEffectType(enum.Enum):
  """Whether a kernel may be deduplicated or removed by XLA."""
  PURE = "pure"
  DATAFLOW_SIDE_EFFECTING = "dataflow_side_effecting"
  SIDE_EFFECTING = "side_effecting"


class MemorySpace(enum.Enum):
  """TPU memory spaces; calling one with (shape, dtype) gives a MemoryRef."""
  VMEM = "vmem"
  VMEM_SHARED = "vmem_shared"
  SMEM = "smem"
  CMEM = "cmem"
  SEMAPHORE = "semaphore_mem"
  HBM = "hbm"

  def __str__(self) -> str:
    return self.value

  def __repr__(self) -> str:
    return self.name

  def from_type(self, ty):
    return pallas_core.MemoryRef(ty, memory_space=self)

  def __call__(self, shape, dtype):
    return self.from_type(ShapedArray(tuple(shape), dtypes.canonicalize_dtype(dtype)))


@dataclasses.dataclass(frozen=True, init=False)
class CompilerParams:
  """Mosaic TPU compiler parameters (interpret mode ignores them)."""
  dimension_semantics: tuple | None = None
  allow_input_fusion: tuple | None = None
  vmem_limit_bytes: int | None = None
  collective_id: int | None = None
  has_side_effects: Any = False
  flags: Any = None
  internal_scratch_in_bytes: int | None = None
  serialization_format: int = 1
  disable_bounds_checks: bool = False
  disable_semaphore_checks: bool = False
  skip_device_barrier: bool = False
  allow_collective_id_without_custom_barrier: bool = False
  shape_invariant_numerics: bool = True
  use_tc_tiling_on_sc: bool | None = None
  needs_layout_passes: bool = True
  fuse_transposed_lhs_in_matmul: bool = False

  def __init__(self, dimension_semantics: Sequence[Any] | None = None,
               allow_input_fusion: Sequence[bool] | None = None,
               vmem_limit_bytes: int | None = None, collective_id: int | None = None,
               has_side_effects: Any = False, flags: Mapping[str, Any] | None = None,
               internal_scratch_in_bytes: int | None = None, serialization_format: int = 1,
               disable_bounds_checks: bool = False, disable_semaphore_checks: bool = False,
               skip_device_barrier: bool = False,
               allow_collective_id_without_custom_barrier: bool = False,
               shape_invariant_numerics: bool = True, use_tc_tiling_on_sc: bool | None = None,
               needs_layout_passes: bool = True, fuse_transposed_lhs_in_matmul: bool = False):
    values = dict(locals())
    del values["self"]
    if dimension_semantics is not None:
      values["dimension_semantics"] = tuple(dimension_semantics)
    if allow_input_fusion is not None:
      values["allow_input_fusion"] = tuple(allow_input_fusion)
    if flags is not None:
      values["flags"] = tuple(sorted(dict(flags).items()))
    for k, v in values.items():
      object.__setattr__(self, k, v)

  replace = dataclasses.replace


class PrefetchScalarGridSpec(pallas_core.GridSpec):
  """A GridSpec whose first `num_scalar_prefetch` operands are scalar-prefetch operands: the
  kernel and every index map get them (whole, as SMEM refs) before their other arguments."""
  num_scalar_prefetch: int

  def __init__(self, num_scalar_prefetch: int, grid=(), in_specs=pallas_core.no_block_spec,
               out_specs=pallas_core.no_block_spec, scratch_shapes=()):
    super().__init__(grid, in_specs, out_specs, scratch_shapes)
    self.num_scalar_prefetch = num_scalar_prefetch
    self.scratch_shapes = tuple(scratch_shapes)

  def _make_scalar_ref_aval(self, aval):
    return AbstractRef(ShapedArray(aval.shape, aval.dtype), MemorySpace.SMEM)


# ---- semaphores and DMAs -------------------------------------------------------------------------
class SemaphoreType(enum.Enum):
  """Kinds of semaphores; `SemaphoreType.DMA` (or `.DMA(shape)`) as a scratch shape gives a
  semaphore ref (interpret mode: int16, starting at zero)."""
  REGULAR = "regular"
  DMA = "dma"
  BARRIER = "barrier"

  def __call__(self, shape):
    return pallas_core.MemoryRef(ShapedArray(tuple(shape), np.dtype(np.int16)),
                                 MemorySpace.SEMAPHORE)

  def get_array_aval(self):
    return self(()).get_array_aval()

  def get_ref_aval(self):
    return self(()).get_ref_aval()


class _AsyncCopy:
  """A local DMA from `src_ref` to `dst_ref` signalling `dst_sem`."""

  def __init__(self, src_ref, dst_ref, dst_sem):
    if tuple(src_ref.shape) != tuple(dst_ref.shape):
      raise ValueError(f"Cannot copy a ref of shape {tuple(src_ref.shape)} into one of shape "
                       f"{tuple(dst_ref.shape)}")
    self.src_ref, self.dst_ref, self.dst_sem = src_ref, dst_ref, dst_sem

  def start(self, priority: int = 0, *, add: bool = False):
    v = self.src_ref[...]
    self.dst_ref[...] = self.dst_ref[...] + v if add else v

  def wait(self):
    pass   # (the copy completed at `start`)

  wait_recv = wait

  def wait_send(self):
    raise ValueError("Cannot `wait_send` on a local copy.")


def make_async_copy(src_ref, dst_ref, sem):
  """A description of a copy from `src_ref` to `dst_ref` (start it, then wait on it)."""
  return _AsyncCopy(src_ref, dst_ref, sem)


def async_copy(src_ref, dst_ref, sem, *, priority: int = 0, add: bool = False):
  """Start a copy from `src_ref` to `dst_ref` (added to it with `add`); returns its
  descriptor to wait on."""
  copy = make_async_copy(src_ref, dst_ref, sem)
  copy.start(priority=priority, add=add)
  return copy


def sync_copy(src_ref, dst_ref, *, add: bool = False) -> None:
  """Copy a pytree of refs into another (added with `add`)."""
  srcs = tree_util.tree_leaves(src_ref)
  if not srcs:
    return
  dsts = tree_util.tree_leaves(dst_ref)

  def body(sem):
    for s, d in zip(srcs, dsts):
      async_copy(s, d, sem, add=add).wait()

  primitives.run_scoped(body, SemaphoreType.DMA(()))
