"""arrax.dtypes: JAX's public dtype utilities (`jax.dtypes`)."""
import numpy as _np

from arrax._src import dtypes as _dtypes
from arrax._src.dtypes import (TypePromotionError as TypePromotionError,
                               extended as extended, finfo as finfo, float0 as float0,
                               iinfo as iinfo, issubdtype as issubdtype, prng_key as prng_key,
                               result_type as result_type)

bfloat16 = _dtypes.bfloat16.type


def canonicalize_dtype(dtype, allow_extended_dtype=False):
  """The dtype arrax computes in for `dtype` (64-bit types become 32-bit unless x64)."""
  del allow_extended_dtype
  return _dtypes.canonicalize_dtype(dtype)


def itemsize_bits(dtype) -> int:
  """The size of one element of `dtype`, in bits."""
  return _np.dtype(dtype).itemsize * 8


def scalar_type_of(x):
  """The Python scalar type (bool, int, float or complex) matching the dtype of `x`."""
  dt = getattr(x, "dtype", None)
  dt = _np.asarray(x).dtype if dt is None else _np.dtype(dt)
  for generic, typ in ((_np.bool_, bool), (_np.integer, int), (_np.complexfloating, complex)):
    if issubdtype(dt, generic):
      return typ
  return float
