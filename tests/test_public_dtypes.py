"""arrax.dtypes and arrax.float0 mirror jax.dtypes / jax.float0."""
import jax
import ml_dtypes
import numpy as np
import pytest

import arrax


def test_float0_and_bfloat16():
  assert arrax.float0 == jax.float0 and arrax.dtypes.float0 == jax.dtypes.float0
  assert arrax.dtypes.bfloat16 is jax.dtypes.bfloat16 is ml_dtypes.bfloat16


@pytest.mark.parametrize("x", [True, 1, 1.0, 1j, np.int8(1), np.float16(1), np.uint32(3),
                               np.zeros(2, ml_dtypes.bfloat16), np.complex64(1)])
def test_scalar_type_and_itemsize(x):
  assert arrax.dtypes.scalar_type_of(x) is jax.dtypes.scalar_type_of(x)
  dt = np.asarray(x).dtype
  assert arrax.dtypes.itemsize_bits(dt) == jax.dtypes.itemsize_bits(dt)


@pytest.mark.parametrize("dt", [np.float64, np.int64, np.uint64, np.complex128, np.float32,
                                np.int8, ml_dtypes.bfloat16, bool])
def test_canonicalize_and_result_type(dt):
  assert arrax.dtypes.canonicalize_dtype(dt) == jax.dtypes.canonicalize_dtype(dt)
  assert arrax.dtypes.result_type(dt, np.float32) == jax.dtypes.result_type(dt, np.float32)
  assert arrax.dtypes.issubdtype(dt, np.floating) == jax.dtypes.issubdtype(dt, np.floating)
