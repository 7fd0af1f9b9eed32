"""dtype promotion: arrax's lattice against jax.numpy.result_type, exhaustively."""
import itertools

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import arrax
from arrax._src import dtypes

DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
          np.uint64, ml_dtypes.bfloat16, np.float16, np.float32, np.float64, np.complex64,
          np.complex128]
SCALARS = [True, 1, 1.5, 1j]
VALUES = [np.dtype(d) for d in DTYPES] + SCALARS


def _name(v):
  return str(v) if not isinstance(v, np.dtype) else v.name


@pytest.mark.parametrize("x64", [False, True])
def test_result_type_pairs(x64):
  arrax.config.update("jax_enable_x64", x64)
  jax.config.update("jax_enable_x64", x64)
  try:
    for a, b in itertools.product(VALUES, repeat=2):
      expected = jax.dtypes.result_type(a, b, return_weak_type_flag=True)
      actual = dtypes.result_type(a, b, return_weak_type_flag=True)
      assert (np.dtype(actual[0]), actual[1]) == (np.dtype(expected[0]), expected[1]), (
          _name(a), _name(b))
  finally:
    arrax.config.update("jax_enable_x64", False)
    jax.config.update("jax_enable_x64", False)


def test_result_type_triples():
  for a, b, c in itertools.product(VALUES[::2] + SCALARS, repeat=3):
    assert dtypes.result_type(a, b, c) == jax.dtypes.result_type(a, b, c), (a, b, c)


def test_weak_arrays_promote_like_jax():
  for a, b in [(1.0, np.float16), (2, np.int8), (1.0, np.int32), (1j, np.float32)]:
    x = arrax.numpy.asarray(np.ones(3, b)) + a
    y = jnp.asarray(np.ones(3, b)) + a
    assert x.dtype == y.dtype and x.weak_type == y.weak_type


def test_canonicalize_x64_off():
  assert dtypes.canonicalize_dtype(np.float64) == np.float32
  assert dtypes.canonicalize_dtype(np.int64) == np.int32
  assert dtypes.canonicalize_dtype(np.uint64) == np.uint32
  assert dtypes.canonicalize_dtype(np.complex128) == np.complex64


def test_explicit_float64_request_warns_and_truncates():
  with pytest.warns(UserWarning, match="Explicitly requested dtype float64"):
    x = arrax.numpy.zeros(3, dtype=np.float64)
  assert x.dtype == np.float32


def test_x64_gives_float64(x64):
  x = arrax.numpy.zeros(3, dtype=np.float64)
  assert x.dtype == np.float64
  assert arrax.numpy.array(1.0).dtype == np.float64


def test_short_names():
  assert dtypes.short_dtype_name(np.float32) == "f32"
  assert dtypes.short_dtype_name(np.uint8) == "u8"
  assert dtypes.short_dtype_name(np.bool_) == "bool"
  assert dtypes.short_dtype_name(ml_dtypes.bfloat16) == "bf16"


@pytest.mark.parametrize("value", [5, 5.5, True, np.float32(2), np.int8(-3)])
@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.bool_, np.uint8])
def test_lax_convert_element_type_of_host_scalars_gives_arrays(value, dtype):
  import jax

  from oracle import assert_same
  out = arrax.lax.convert_element_type(value, dtype)
  assert isinstance(out, arrax.Array)
  assert_same(out, jax.lax.convert_element_type(value, dtype))
