"""Shared pytest set-up: the JAX oracle runs on CPU beside arrax in the same process.

The differential-testing helpers live in oracle.py; this file holds the fixtures."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

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
