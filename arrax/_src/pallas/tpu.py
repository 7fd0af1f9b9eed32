"""The parts of jax.experimental.pallas.tpu that interpret mode can run: TPU memory spaces
(VMEM, SMEM, ... as MemoryRef factories for scratch shapes and block specs), the compiler
parameters (accepted and ignored), grid dimension semantics, and `PrefetchScalarGridSpec`
(scalar-prefetch operands: passed whole to the kernel and to every index map as refs)."""
from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping, Sequence
from typing import Any

from arrax._src import dtypes
from arrax._src.core import AbstractRef, ShapedArray
from arrax._src.pallas import core as pallas_core


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
