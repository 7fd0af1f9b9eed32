"""Beyond JAX: a jitted function that keeps compiling warns once, naming what changes."""
import warnings

import pytest

import arrax
import arrax.numpy as jnp
from arrax._src.jit import RecompileWarning


def _caught(run):
  with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    run()
  return [x for x in w if issubclass(x.category, RecompileWarning)]


def test_shape_changes_warn_once_at_threshold_plus_one():
  f = arrax.jit(lambda x, scale: x * scale)
  w = _caught(lambda: [f(jnp.ones(n), 2.0) for n in range(1, 13)])
  assert len(w) == 1
  msg = str(w[0].message)
  assert "compiled 9 times" in msg and "argument 0 (x) changed: shape (8,) -> (9,)" in msg
  assert w[0].filename == __file__            # points at the caller's line


def test_dtype_weak_type_and_static_changes_are_named():
  with arrax.config._override("arrax_recompile_warning_threshold", 2):
    f = arrax.jit(lambda x: x + 1)
    w = _caught(lambda: [f(jnp.ones(3, jnp.float32)), f(jnp.ones(3, jnp.int32)),
                         f(jnp.ones(3, jnp.float16))])
    assert "dtype int32 -> float16" in str(w[0].message)
    g = arrax.jit(lambda x, k: x * k, static_argnums=1)
    w = _caught(lambda: [g(jnp.ones(3), k) for k in range(3)])
    assert "a static argument changed from (1,) to (2,)" in str(w[0].message)
    h = arrax.jit(lambda x: x * 2)
    w = _caught(lambda: [h(jnp.float32(1)), h(jnp.ones(2)), h(1.0)])   # the last is weak
    assert "weak type False -> True" in str(w[0].message)


def test_cache_hits_do_not_count_and_zero_disables():
  f = arrax.jit(lambda x: x - 1)
  assert _caught(lambda: [f(jnp.ones(n % 3 + 1)) for n in range(30)]) == []
  with arrax.config._override("arrax_recompile_warning_threshold", 0):
    g = arrax.jit(lambda x: x - 1)
    assert _caught(lambda: [g(jnp.ones(n)) for n in range(1, 20)]) == []


def test_flag_is_a_config_option():
  assert arrax.config.arrax_recompile_warning_threshold == 8
  with pytest.raises(AttributeError):
    arrax.config.update("arrax_recompile_warning_treshold", 3)


def test_arrax_own_jitted_functions_do_not_warn():
  # jnp functions are jitted inside arrax: many shapes through them are the user's business.
  assert _caught(lambda: [jnp.multiply(jnp.ones(n), 2) for n in range(1, 14)]) == []
