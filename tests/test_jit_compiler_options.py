"""jit(..., compiler_options=...) and Lowered.compile(compiler_options) against JAX 0.10.2."""
import os

import numpy as np
import pytest

import arrax
import arrax.numpy as anp
import jax
import jax.numpy as jnp


def _f(np_):
  return lambda x: np_.sin(x) * 2.0 + 1.0


_VALID = [{"xla_cpu_enable_fast_math": False}, {"xla_backend_optimization_level": 0},
          {"xla_backend_optimization_level": 3}, {"xla_backend_optimization_level": "1"},
          {"exec_time_optimization_effort": 0.5}]


@pytest.mark.parametrize("opts", _VALID, ids=str)
def test_valid_options_compile_and_match(opts):
  x = np.linspace(-2, 2, 7, dtype=np.float32)
  got = arrax.jit(_f(anp), compiler_options=opts)(anp.asarray(x))
  want = jax.jit(_f(jnp), compiler_options=opts)(jnp.asarray(x))
  assert got.dtype == want.dtype and got.shape == want.shape
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def _error(lib, make):
  try:
    make(lib)
  except Exception as e:  # noqa: BLE001
    return type(e).__mro__[1:], str(e)
  return None


_BAD = {
    "unknown_name": lambda lib: lib.jit(lambda x: x + 1, compiler_options={
        "xla_no_such_option": True})(np.float32(1)),
    "bad_bool": lambda lib: lib.jit(lambda x: x + 1, compiler_options={
        "xla_cpu_enable_fast_math": "false"})(np.float32(1)),
    "bad_int": lambda lib: lib.jit(lambda x: x + 1, compiler_options={
        "xla_backend_optimization_level": 1.5})(np.float32(1)),
    "lowered_compile_unknown": lambda lib: lib.jit(lambda x: x + 1).lower(
        np.float32(1)).compile({"xla_no_such_option": 1}),
    "nested": lambda lib: lib.jit(lambda x: lib.jit(lambda y: y + 1, compiler_options={
        "xla_backend_optimization_level": 0})(x))(np.float32(1)),
}


@pytest.mark.parametrize("name", sorted(_BAD))
def test_errors_match_jax(name):
  a, j = _error(arrax, _BAD[name]), _error(jax, _BAD[name])
  assert a is not None and j is not None
  assert a[0] == j[0]
  assert a[1] == j[1] if name != "nested" else a[1] in j[1]


def test_options_are_part_of_the_cache_key():
  def g(x):
    return x * 3.0
  x = anp.ones(4)
  plain = arrax.jit(g)
  np.testing.assert_array_equal(plain(x), np.full(4, 3.0))
  bad = arrax.jit(g, compiler_options={"xla_no_such_option": True})
  with pytest.raises(arrax.errors.JaxRuntimeError, match="No such compile option"):
    bad(x)   # (not served from the plain jit's cache)
  good = arrax.jit(g, compiler_options={"xla_backend_optimization_level": 1})
  np.testing.assert_array_equal(good(x), np.full(4, 3.0))
  assert plain._cache_size() == 1 and good._cache_size() == 1
  # Lowered.compile's options add to the jit's.
  c = good.lower(x).compile({"xla_cpu_enable_fast_math": False})
  np.testing.assert_array_equal(c(x), np.full(4, 3.0))
  with pytest.raises(arrax.errors.JaxRuntimeError, match="No such compile option"):
    good.lower(x).compile({"xla_nope": 0})


def test_override_reaches_xla(tmp_path):
  """An XLA option given per jit applies to that executable only (over XLA_FLAGS)."""
  out = tmp_path / "dump"
  f = arrax.jit(lambda x: x - 7.0, compiler_options={"xla_dump_to": str(out)})
  np.testing.assert_array_equal(f(anp.ones(2)), np.full(2, -6.0))
  assert out.is_dir() and any("jit" in n for n in os.listdir(out))
  before = set(os.listdir(out))
  arrax.jit(lambda x: x - 8.0)(anp.ones(2))
  assert set(os.listdir(out)) == before


def test_decorator_form():
  @arrax.jit(compiler_options={"xla_backend_optimization_level": 0}, static_argnums=1)
  def h(x, n):
    return x * n
  np.testing.assert_array_equal(h(anp.arange(3), 2), np.arange(3) * 2)
