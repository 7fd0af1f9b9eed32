"""Type annotations (`jax._src.typing`): what `arrax.typing` exports, plus the helper protocols."""
from __future__ import annotations

import enum
import typing
from collections.abc import Sequence
from types import EllipsisType
from typing import Any, Protocol, Union

import numpy as np

from arrax._src.array import ArrayType as Array

DType = np.dtype
ExtendedDType = Any


@typing.runtime_checkable
class SupportsDType(Protocol):
  """Anything with a `.dtype` (for example `jnp.float32`)."""
  @property
  def dtype(self, /) -> DType: ...


class SupportsShape(Protocol):
  @property
  def shape(self, /) -> tuple[int, ...]: ...


class SupportsSize(Protocol):
  @property
  def size(self, /) -> int: ...


class SupportsNdim(Protocol):
  @property
  def ndim(self, /) -> int: ...


# Values `np.dtype` turns into a dtype arrax supports (None excluded, as in JAX).
DTypeLike = Union[str, type[Any], np.dtype, SupportsDType]

DimSize = Union[int, Any]
Shape = Sequence[DimSize]


class DuckTypedArray(Protocol):
  @property
  def dtype(self) -> DType: ...

  @property
  def shape(self) -> Shape: ...


# Static scalars and everything arrax converts to an array implicitly (no lists, no strings).
StaticScalar = Union[np.bool_, np.number, bool, int, float, complex]
ArrayLike = Union[Array, np.ndarray, StaticScalar]


class DeprecatedArg:
  def __repr__(self):
    return "Deprecated"


class DLDeviceType(enum.IntEnum):
  kDLCPU = 1
  kDLCUDA = 2
  kDLCUDAHost = 3
  kDLROCM = 10


AnyInt = int | np.integer
StaticIndex = AnyInt | slice | EllipsisType
Index = StaticIndex | None | Sequence[AnyInt] | Array | np.ndarray
