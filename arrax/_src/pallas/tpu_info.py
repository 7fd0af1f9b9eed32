"""TPU hardware information (jax.experimental.pallas.tpu): chip versions, their per-TensorCore
figures (`TpuInfo`, `get_tpu_info_for_chip`) and tilings. arrax runs on CPU, so the current
device is never a TPU (`get_tpu_info` raises ValueError, as JAX does off-TPU)."""
from __future__ import annotations

import dataclasses
import enum

import ml_dtypes
import numpy as np

from arrax._src import backend


class ChipVersionBase:
  """The base of chip version enums."""


class ChipVersion(ChipVersionBase, enum.Enum):
  """TPU generations."""
  TPU_V2 = "v2"
  TPU_V3 = "v3"
  TPU_V4I = "v4i"
  TPU_V4 = "v4"
  TPU_V5E = "v5e"
  TPU_V5P = "v5p"
  TPU_V6E = "v6e"
  TPU_7 = "7"
  TPU_7X = "7x"
  TPU_8I = "8i"

  def __str__(self) -> str:
    return self.value

  @property
  def num_physical_tensor_cores_per_chip(self) -> int:
    """TensorCores on one chip (1 on the lite chips)."""
    return 1 if self.is_lite else 2

  @property
  def supports_megacore(self) -> bool:
    """Whether the chip's two TensorCores can act as one device (v4, v5p)."""
    return self in (ChipVersion.TPU_V4, ChipVersion.TPU_V5P)

  @property
  def is_lite(self) -> bool:
    """Whether this is a single-TensorCore ("lite") chip."""
    return self in (ChipVersion.TPU_V4I, ChipVersion.TPU_V5E, ChipVersion.TPU_V6E)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SparseCoreInfo:
  """A chip's SparseCore figures."""
  num_cores: int
  num_subcores: int
  num_lanes: int
  vmem_capacity_bytes: int
  dma_granule_size_bytes: int


@dataclasses.dataclass(frozen=True, kw_only=True)
class TpuInfo:
  """Hardware figures of a TPU, per TensorCore (multiply by `num_cores` for a device)."""
  chip_version: ChipVersionBase
  generation: int
  num_cores: int
  num_lanes: int
  num_sublanes: int
  mxu_column_size: int
  num_mxus: int
  num_accumulators: int
  vmem_capacity_bytes: int
  cmem_capacity_bytes: int
  smem_capacity_bytes: int
  hbm_capacity_bytes: int
  mem_bw_bytes_per_second: int
  bf16_ops_per_second: int
  int8_ops_per_second: int
  fp8_ops_per_second: int
  int4_ops_per_second: int
  sparse_core: SparseCoreInfo | None = None

  @property
  def is_lite(self) -> bool:
    return self.chip_version.is_lite

  @property
  def is_split_chip(self) -> bool:
    """Whether a two-core chip is used one core per device."""
    return self.num_cores == 1 and self.chip_version.num_physical_tensor_cores_per_chip > 1

  @property
  def is_megacore(self) -> bool:
    """Whether two TensorCores form one device."""
    return self.num_cores > 1

  def is_matmul_supported(self, lhs_dtype, rhs_dtype) -> bool:
    """Whether the MXU multiplies these operand dtypes without converting them."""
    lhs, rhs = _dtype(lhs_dtype), _dtype(rhs_dtype)
    names = lambda *ns: {_dtype(n) for n in ns}  # noqa: E731
    floats = names("float32", "bfloat16")
    g = self.generation
    if g in (2, 3):
      return lhs == rhs == np.dtype(np.float32)
    if g == 4:
      return lhs in floats and rhs in floats | names("int8")
    if g in (5, 6):
      f8 = floats | names("float8_e5m2", "float8_e4m3b11fnuz")
      return ((lhs in f8 and rhs in f8) or (lhs in names("int8", "uint8")
                                           and rhs in names("int8", "uint8"))
              or (lhs in names("int4", "uint4") and rhs in names("int4", "uint4")))
    if g in (7, 8):
      f8 = names("float8_e5m2", "float8_e4m3fn")
      return (lhs in floats and rhs in floats) or (lhs in floats | f8 and rhs in f8)
    return False

  def get_sublane_tiling(self, dtype) -> int:
    """The second-minor tile size of `dtype` (XLA's default layouts)."""
    d = _dtype(dtype)
    bits = 4 if d.name in ("int4", "uint4", "float4_e2m1fn") else d.itemsize * 8
    if self.generation < 7:
      return self.num_sublanes if bits in (16, 32) else self.num_sublanes * (32 // bits)
    if self.generation == 7:
      return self.num_sublanes * (32 // bits)
    raise NotImplementedError("TPU generation is not supported")


def _dtype(d):
  return np.dtype(getattr(ml_dtypes, d)) if isinstance(d, str) and hasattr(ml_dtypes, d) \
      else np.dtype(d)


_MIB = 1024 * 1024
# Per chip: generation, MXUs (per core), accumulators, VMEM/SMEM (per core), CMEM, HBM
# bytes, HBM bytes/s, bf16/int8/fp8/int4 ops/s, SparseCore (cores, subcores, lanes,
# VMEM per subcore, DMA granule), and whether the per-chip figures are split between the
# chip's TensorCores.
_CHIPS = {
    ChipVersion.TPU_V2: (2, 1, 0, 16 * _MIB, 16 * 1024, 0, 16_000_000_000, 7.16e11, 4.6e13,
                         0, 0, 0, None, True),
    ChipVersion.TPU_V3: (3, 2, 0, 16 * _MIB, 16 * 1024, 0, 34_400_000_000, 8.25e11, 1.40e14,
                         0, 0, 0, None, True),
    ChipVersion.TPU_V4I: (4, 4, 0, 16 * _MIB, _MIB, 134_000_000, 8_590_000_000, 6.14e11,
                          1.37e14, 0, 0, 0, None, False),
    ChipVersion.TPU_V4: (4, 4, 0, 16 * _MIB, _MIB, 134_000_000, 34_400_000_000, 1.23e12,
                         2.75e14, 0, 0, 0, None, True),
    ChipVersion.TPU_V5E: (5, 4, 0, 128 * _MIB, _MIB, 0, 17_200_000_000, 8.20e11, 1.97e14,
                          3.94e14, 0, 7.88e14, None, False),
    ChipVersion.TPU_V5P: (5, 4, 0, 64 * _MIB, _MIB, 0, 103_000_000_000, 2.46e12, 4.59e14,
                          9.18e14, 0, 1.84e15, (4, 16, 8, 512 * 1024, 32), True),
    ChipVersion.TPU_V6E: (6, 2, 0, 128 * _MIB, _MIB, 0, 34_400_000_000, 1.64e12, 9.20e14,
                          1.84e15, 9.20e14, 3.68e15, (2, 16, 8, 256 * 1024, 32), False),
    ChipVersion.TPU_7: (7, 2, 128, 64 * _MIB, _MIB, 0, 206_000_000_000, 7.40e12, 2.31e15, 0,
                        4.60e15, 0, (2, 16, 16, 512 * 1024, 32), True),
    ChipVersion.TPU_8I: (8, 2, 256, 192 * _MIB, _MIB, 0, 309_000_000_000, 8.60e12, 1.101e15,
                         0, 8.808e15, 0, (1, 4, 16, 512 * 1024, 64), True),
}
_CHIPS[ChipVersion.TPU_7X] = _CHIPS[ChipVersion.TPU_7]


def _chip_info(chip_version: ChipVersion, num_cores: int) -> TpuInfo:
  if chip_version not in _CHIPS:
    raise ValueError(f"Unsupported TPU chip version: {chip_version}")
  (gen, mxus, accs, vmem, smem, cmem, hbm, bw, bf16, int8, fp8, int4, sc,
   split) = _CHIPS[chip_version]
  n = chip_version.num_physical_tensor_cores_per_chip if split else 1
  per_core = lambda v: int(v // n)  # noqa: E731
  return TpuInfo(
      chip_version=chip_version, generation=gen, num_cores=num_cores, num_lanes=128,
      num_sublanes=8, mxu_column_size=256 if gen >= 6 else 128, num_mxus=mxus,
      num_accumulators=accs, vmem_capacity_bytes=vmem, cmem_capacity_bytes=per_core(cmem),
      smem_capacity_bytes=smem, hbm_capacity_bytes=per_core(hbm),
      mem_bw_bytes_per_second=per_core(bw), bf16_ops_per_second=per_core(bf16),
      int8_ops_per_second=per_core(int8), fp8_ops_per_second=per_core(fp8),
      int4_ops_per_second=per_core(int4),
      sparse_core=None if sc is None else SparseCoreInfo(
          num_cores=sc[0], num_subcores=sc[1], num_lanes=sc[2], vmem_capacity_bytes=sc[3],
          dma_granule_size_bytes=sc[4]))


def get_tpu_info_for_chip(chip_version: ChipVersion,
                          num_tensor_cores_per_logical_device: int) -> TpuInfo:
  """The figures of `chip_version` with this many TensorCores per device (1, or 2 for a
  megacore v4/v5p), per TensorCore."""
  if ((chip_version.is_lite or not chip_version.supports_megacore)
      and num_tensor_cores_per_logical_device != 1):
    raise ValueError("Lite chips and dual-core chips that do not support Megacore must have "
                     "num_tensor_cores_per_logical_device=1, but got "
                     f"{num_tensor_cores_per_logical_device}.")
  return _chip_info(chip_version, num_tensor_cores_per_logical_device)


def is_tpu_device() -> bool:
  """Whether the default device is a TPU (never, for arrax)."""
  return False


def get_tpu_info() -> TpuInfo:
  """Hardware information on the current TPU; raises ValueError elsewhere."""
  raise ValueError(f"Unsupported TPU device kind: {backend.devices()[0].device_kind}")


class Tiling(enum.Enum):
  """Memory tilings: TensorCore's compact (8, 128) and SparseCore's (8,)."""
  COMPACT = enum.auto()
  SPARSE_CORE = enum.auto()

  @property
  def shape(self) -> tuple[int, ...]:
    return (8, 128) if self is Tiling.COMPACT else (8,)
