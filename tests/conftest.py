"""Shared test set-up: the JAX oracle runs on CPU beside arrax in the same process."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def x64():
  """Run a test with jax_enable_x64 on in both arrax and the JAX oracle."""
  import jax

  import arrax
  arrax.config.update("jax_enable_x64", True)
  jax.config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    arrax.config.update("jax_enable_x64", False)
    jax.config.update("jax_enable_x64", False)


def assert_same(actual, expected, rtol=None, atol=None, check_weak=True):
  """Values, dtype, shape (and weak type) of an arrax result equal the JAX oracle's."""
  a = np.asarray(actual)
  e = np.asarray(expected)
  assert a.shape == e.shape, (a.shape, e.shape)
  assert a.dtype == e.dtype, (a.dtype, e.dtype)
  if check_weak:
    aw = getattr(getattr(actual, "aval", None), "weak_type", False)
    ew = getattr(getattr(expected, "aval", None), "weak_type", False)
    assert aw == ew, f"weak_type: arrax {aw}, jax {ew}"
  if rtol is None and atol is None:
    if e.dtype.kind in "fc" or e.dtype.name == "bfloat16":
      np.testing.assert_allclose(a.astype(np.complex128 if e.dtype.kind == "c" else np.float64),
                                 e.astype(np.complex128 if e.dtype.kind == "c" else np.float64),
                                 rtol=1e-6 if e.dtype.itemsize >= 4 else 1e-2, atol=1e-6)
    else:
      np.testing.assert_array_equal(a, e)
  else:
    big = np.complex128 if e.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(np.asarray(a, big), np.asarray(e, big),
                               rtol=rtol or 0, atol=atol or 0)


def _ad_tol(dtype):
  if dtype.name == "bfloat16":
    return 3e-2
  return 1e-12 if dtype in (np.float64, np.complex128) else 3e-5


def assert_tree_same(actual, expected, tol=None):
  """Like assert_same over (nested) tuples/lists; float0 arrays compare by shape only; `tol`
  (rtol = atol) defaults by dtype: 3e-5 for 32 bits, 1e-12 for 64, 3e-2 for bfloat16."""
  if isinstance(expected, (tuple, list)):
    assert isinstance(actual, (tuple, list)) and len(actual) == len(expected)
    for a, e in zip(actual, expected):
      assert_tree_same(a, e, tol)
    return
  e = np.asarray(expected)
  if e.dtype.name == "float0":
    a = np.asarray(actual)
    assert (a.shape, a.dtype) == (e.shape, e.dtype), (a.shape, a.dtype, e.shape, e.dtype)
    return
  if e.dtype.kind in "fc" or e.dtype.name == "bfloat16":
    tol = _ad_tol(e.dtype) if tol is None else tol
    assert_same(actual, expected, rtol=tol, atol=tol)
  else:
    assert_same(actual, expected)


def rand(rng, shape, dtype):
  """Standard-normal test values of `dtype` (complex: independent real and imaginary draws;
  integers in [-5, 5]; booleans fair coin flips)."""
  dt = np.dtype(dtype)
  if dt.kind == "c":
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dt)
  if dt.kind in "iu":
    return rng.integers(-5, 6, shape).astype(dt)
  if dt == np.bool_:
    return rng.random(shape) < 0.5
  return rng.standard_normal(shape).astype(dt)


def run_printed(code, scope):
  """What `code` (dedented) prints when run with the names in `scope`; an exception ends the
  output with 'raised <class name>' (the error class is part of what is compared)."""
  import contextlib
  import io
  import textwrap
  out = io.StringIO()
  with contextlib.redirect_stdout(out):
    try:
      exec(textwrap.dedent(code), dict(scope))
    except Exception as e:  # noqa: BLE001
      print("raised", type(e).__name__)
  return out.getvalue()


def assert_prints_like_jax(code, prelude="", jax_scope=None, arrax_scope=None):
  """`prelude + code` prints the same with jax/jnp bound to arrax as to real JAX (also `np` and
  `functools.partial`, plus the extra names of each scope). Returns JAX's output."""
  import functools
  import textwrap

  import jax
  import jax.numpy as jnp

  import arrax
  import arrax.numpy as anp
  code = textwrap.dedent(prelude) + textwrap.dedent(code)
  common = {"np": np, "partial": functools.partial}
  want = run_printed(code, {**common, "jax": jax, "jnp": jnp, **(jax_scope or {})})
  got = run_printed(code, {**common, "jax": arrax, "jnp": anp, **(arrax_scope or {})})
  assert "raised" not in want or "raised" in got
  assert got == want
  return want
