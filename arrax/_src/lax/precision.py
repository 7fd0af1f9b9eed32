"""Types that describe how precisely lax computes: dot algorithms (`DotAlgorithm`,
`DotAlgorithmPreset`), the `PrecisionLike` and `DotDimensionNumbers` type aliases, and the
accuracy requests of transcendental functions (`AccuracyMode`, `Tolerance`).

These are JAX's public names with JAX's fields and members. arrax's `dot_general` takes
`Precision` values (or their names); the algorithm types are accepted here as values but dot
products do not take them yet. The transcendental functions take `accuracy` (lax/accuracy.py).
"""
from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import Any, NamedTuple, Union

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import dtypes, mlir
from arrax._src.lax.accuracy import AccuracyMode, Tolerance
from arrax._src.lax.dot import Precision

__all__ = ["AccuracyMode", "DotAlgorithm", "DotAlgorithmPreset", "DotDimensionNumbers",
           "PrecisionLike", "Tolerance"]


class DotAlgorithm(NamedTuple):
  """A dot-product algorithm: the types the operands are rounded to and the accumulator type,
  how many components each operand is split into and how many products are computed (to
  emulate higher precision), and whether a cheaper accumulation is allowed."""
  lhs_precision_type: Any
  rhs_precision_type: Any
  accumulation_type: Any
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False

  def _convert_to_hlo_attr(self, lhs_dtype, rhs_dtype):
    del lhs_dtype, rhs_dtype
    return hlo.DotAlgorithm.get(
        mlir.dtype_to_ir_type(np.dtype(self.lhs_precision_type)),
        mlir.dtype_to_ir_type(np.dtype(self.rhs_precision_type)),
        mlir.dtype_to_ir_type(np.dtype(self.accumulation_type)),
        self.lhs_component_count, self.rhs_component_count, self.num_primitive_operations,
        self.allow_imprecise_accumulation)


_FLOAT8 = tuple(np.dtype(t) for t in dtypes._float8_dtypes)


class DotAlgorithmPreset(enum.Enum):
  """Named dot algorithms known to some platform: `LHS_RHS_ACCUMULATOR` types, with `_X3`,
  `_X6`, `_X9` for 3, 6 or 9 products emulating more precision, `FAST_ACCUM` for cheaper
  accumulation, `ANY_F8` for any float8 operands and `ANY` for the accumulator type given by
  `preferred_element_type`."""
  DEFAULT = enum.auto()
  ANY_F8_ANY_F8_F32 = enum.auto()
  ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
  ANY_F8_ANY_F8_ANY = enum.auto()
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
  F16_F16_F16 = enum.auto()
  F16_F16_F32 = enum.auto()
  BF16_BF16_BF16 = enum.auto()
  BF16_BF16_F32 = enum.auto()
  BF16_BF16_F32_X3 = enum.auto()
  BF16_BF16_F32_X6 = enum.auto()
  BF16_BF16_F32_X9 = enum.auto()
  TF32_TF32_F32 = enum.auto()
  TF32_TF32_F32_X3 = enum.auto()
  F32_F32_F32 = enum.auto()
  F64_F64_F64 = enum.auto()

  def __repr__(self):
    return f"{type(self).__name__}.{self.name}"

  def __str__(self):
    return self.name

  @property
  def _any_input(self):
    return self.name == "DEFAULT" or self.name.startswith("ANY_F8")

  @property
  def supported_lhs_types(self):
    """The operand dtypes the algorithm takes (None: any)."""
    if self._any_input:
      return None
    first = self.name.split("_")[0]
    if first == "F16":
      return (np.float16,)
    if first == "BF16" and self.name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
      return (dtypes.bfloat16, np.float32)
    if first == "F64":
      return (np.float64,)
    return (np.float32,)

  @property
  def supported_rhs_types(self):
    return self.supported_lhs_types

  @property
  def accumulation_type(self):
    """The accumulator dtype (None: chosen from the operands or preferred_element_type)."""
    if self.name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
      return None
    return {"F16_F16_F16": np.float16, "BF16_BF16_BF16": dtypes.bfloat16,
            "F64_F64_F64": np.float64}.get(self.name, np.float32)

  def supported_output_types(self, lhs_dtype, rhs_dtype):
    """The result dtypes the algorithm can produce for these operand dtypes (None: any)."""
    if self.name in ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"):
      return (np.float32, np.float16, dtypes.bfloat16, *(np.dtype(t) for t in (
          "float8_e4m3fn", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3fnuz",
          "float8_e4m3b11fnuz")))
    narrow = {"F16_F16_F32": np.dtype(np.float16), "BF16_BF16_F32": dtypes.bfloat16}
    if self.name in narrow:
      both = dtypes.promote_types(lhs_dtype, rhs_dtype)
      return (np.float32, narrow[self.name]) if both == narrow[self.name] else (np.float32,)
    acc = self.accumulation_type
    return None if acc is None else (acc,)

  def _convert_to_hlo_attr(self, lhs_dtype, rhs_dtype):
    """The StableHLO dot algorithm attribute (None for DEFAULT)."""
    if self.name == "DEFAULT":
      return None
    if self.name.startswith("ANY_F8"):
      if np.dtype(lhs_dtype) not in _FLOAT8 or np.dtype(rhs_dtype) not in _FLOAT8:
        raise ValueError(f"The dot algorithm '{self}' requires both inputs to have float8 "
                         f"dtypes. Got {lhs_dtype} and {rhs_dtype} instead.")
      return hlo.DotAlgorithm.get(mlir.dtype_to_ir_type(np.dtype(lhs_dtype)),
                                  mlir.dtype_to_ir_type(np.dtype(rhs_dtype)),
                                  ir.F32Type.get(), 1, 1, 1,
                                  self.name == "ANY_F8_ANY_F8_F32_FAST_ACCUM")
    parts = self.name.split("_")
    ops = int(parts[3][1:]) if len(parts) == 4 else 1
    types = {"F16": ir.F16Type.get, "BF16": ir.BF16Type.get, "TF32": ir.FloatTF32Type.get,
             "F32": ir.F32Type.get, "F64": ir.F64Type.get}
    lhs, rhs, acc = (types[p]() for p in parts[:3])
    return hlo.DotAlgorithm.get(lhs, rhs, acc, 1, 1, ops, False)


PrecisionLike = Union[None, str, Precision, tuple[str, str], tuple[Precision, Precision],
                      DotAlgorithm, DotAlgorithmPreset]

DotDimensionNumbers = tuple[tuple[Sequence[int], Sequence[int]],
                            tuple[Sequence[int], Sequence[int]]]
