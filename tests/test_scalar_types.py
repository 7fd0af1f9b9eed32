"""jnp's scalar types make arrays (as JAX's do) and stand in for dtypes everywhere."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from oracle import assert_same

NAMES = ["bool_", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
         "float16", "float32", "float64", "bfloat16", "complex64", "complex128", "single",
         "double", "csingle", "cdouble", "float_", "int_", "uint", "complex_", "bool"]


@pytest.mark.filterwarnings("ignore:Explicitly requested dtype")
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("value", [1, 2.5, True, [1, 0, 3], np.arange(3, dtype=np.int16)])
def test_call_makes_an_array(name, value):
  if name in ("bool_", "bool") or "int" in name:
    if isinstance(value, float):
      value = 2
  assert_same(getattr(anp, name)(value), getattr(jnp, name)(value))


@pytest.mark.parametrize("name", NAMES)
def test_acts_as_its_dtype(name, x64):
  a, j = getattr(anp, name), getattr(jnp, name)
  assert np.dtype(a) == np.dtype(j)
  assert anp.dtype(a) == jnp.dtype(j)
  assert a == np.dtype(j).type and hash(a) == hash(np.dtype(j).type)
  assert isinstance(np.zeros((), np.dtype(j))[()], a)
  assert anp.issubdtype(a, anp.number) == jnp.issubdtype(j, jnp.number)
  assert anp.zeros(2, a).dtype == jnp.zeros(2, j).dtype
  assert anp.arange(3).astype(a).dtype == jnp.arange(3).astype(j).dtype


def test_under_jit_and_as_array_argument():
  assert_same(arrax.jit(lambda x: anp.float32(x) * 2)(3), jax.jit(lambda x: jnp.float32(x) * 2)(3))
  assert_same(arrax.vmap(anp.int8)(anp.arange(3.0)), jax.vmap(jnp.int8)(jnp.arange(3.0)))
  assert anp.float32 != anp.float64
  assert not isinstance(np.float64(1), anp.float32)
