"""jnp's scalar types (`jnp.float32`, `jnp.int32`, ...): callables that make 0-d (or n-d) arrays.

NumPy's scalar types build NumPy scalars; JAX's build arrax Arrays of that dtype
(`jnp.float32(1)` is `Array(1., dtype=float32)`). Each is a class whose metaclass makes it
behave as its dtype everywhere a dtype is accepted (`np.dtype(jnp.float32)`,
`x.astype(jnp.int8)`), compare and hash equal to the NumPy type, and answer `isinstance` for
NumPy scalars of that type.
"""
from __future__ import annotations

import numpy as np

from arrax._src import dtypes
from arrax._src.numpy.creation import asarray


class _ScalarMeta(type):
  dtype: np.dtype

  def __hash__(cls):
    return hash(cls.dtype.type)

  def __eq__(cls, other):
    return cls is other or cls.dtype.type == other

  def __ne__(cls, other):
    return not cls == other

  def __call__(cls, x):
    return asarray(x, dtype=cls.dtype)

  def __instancecheck__(cls, instance):
    return isinstance(instance, cls.dtype.type)

  @property
  def __numpy_dtype__(cls):   # NumPy >= 2.4 reads this protocol
    return cls.dtype


def _scalar_type(np_type) -> _ScalarMeta:
  t = _ScalarMeta(np_type.__name__, (object,), {"dtype": np.dtype(np_type)})
  t.__module__ = "arrax.numpy"
  t.__doc__ = (f"Scalar constructor of dtype {np_type.__name__}: makes an arrax Array (scalars "
               "are 0-d arrays).")
  return t


bool_ = _scalar_type(np.bool_)
int8, int16, int32, int64 = (_scalar_type(t) for t in (np.int8, np.int16, np.int32, np.int64))
uint8, uint16, uint32, uint64 = (_scalar_type(t)
                                 for t in (np.uint8, np.uint16, np.uint32, np.uint64))
float16, float32, float64 = (_scalar_type(t) for t in (np.float16, np.float32, np.float64))
bfloat16 = _scalar_type(dtypes.bfloat16.type)
complex64, complex128 = _scalar_type(np.complex64), _scalar_type(np.complex128)
