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
    np.testing.assert_allclose(np.asarray(a, np.float64), np.asarray(e, np.float64),
                               rtol=rtol or 0, atol=atol or 0)
