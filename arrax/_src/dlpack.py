"""jax.dlpack: arrays from DLPack producers, and which dtypes DLPack carries."""
from __future__ import annotations

import numpy as np

from arrax._src import dtypes
from arrax._src.array import Array
from arrax._src.numpy import index_tricks

_ALIGNMENT = 64

# The dtypes JAX exchanges through DLPack.
SUPPORTED_DTYPES = frozenset(np.dtype(d) for d in (
    np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64,
    np.float16, dtypes.bfloat16, np.float32, np.float64, np.complex64, np.complex128, np.bool_))


def is_supported_dtype(dtype) -> bool:
  """Whether arrays of `dtype` can go through DLPack."""
  if dtype is None:   # np.dtype(None) would silently be float64
    raise TypeError(f"Expected a string or dtype-like object; got {dtype=}")
  return np.dtype(dtype) in SUPPORTED_DTYPES


def from_dlpack(external_array, device=None, copy=None):
  """An Array from an object with `__dlpack__` and `__dlpack_device__` (NumPy, arrax, ...),
  on its own device or on `device` (a Device or single-device Sharding); `copy=True` always
  copies, `copy=False` forbids a copy."""
  if copy is False and not isinstance(external_array, Array) and \
      hasattr(external_array, "__dlpack__"):
    # XLA's CPU client can alias host memory only at 64-byte alignment (as JAX reports).
    try:
      host = np.from_dlpack(external_array)
    except (RuntimeError, TypeError, BufferError):
      host = None
    if host is not None and host.size and host.ctypes.data % _ALIGNMENT:
      raise ValueError("Specified input which requires a copy since the source data buffer is "
                       f"not aligned to {_ALIGNMENT} bytes.  However copy=False. Set copy=True "
                       "or copy=None to perform the requested operation.")
  return index_tricks.from_dlpack(external_array, device=device, copy=copy)
