"""Internal testing helpers (the part of `jax._src.test_util` public test utilities build on):
NumPy random-value generators (`rand_default`, ...) and `JaxTestCase`, a test case with a
per-test seeded NumPy RandomState and array comparisons with per-dtype tolerances.

Like JAX's, `JaxTestCase` is an absl `parameterized.TestCase` (so `parameterized.parameters`
and friends work on its methods) when absl-py is installed; arrax does not require absl, and
without it the base is `unittest.TestCase`."""
from __future__ import annotations

import functools
import unittest
import zlib

try:
  from absl.testing import parameterized as _parameterized
except ImportError:
  _parameterized = None

import numpy as np

from arrax._src import config, dtypes
from arrax._src.public_test_util import _allclose, _dtype, tolerance


def _dims(shape):
  if isinstance(shape, (list, tuple)):
    return tuple(shape)
  if np.ndim(shape) == 0:
    return (shape,)
  raise TypeError(type(shape))


def _rand_dtype(rand, shape, dtype, scale=1., post=lambda x: x):
  """`scale * rand(*shape)` as `dtype` (absolute values for unsigned integers; real and
  imaginary parts drawn in turn for complex), then `post`-processed."""
  unsigned = dtypes.issubdtype(dtype, np.unsignedinteger)

  def draw():
    v = scale * rand(*_dims(shape))
    return np.asarray(abs(v) if unsigned else v).astype(dtype)
  vals = draw()
  if dtypes.issubdtype(dtype, np.complexfloating):
    vals = vals + 1.0j * draw()
  out = np.asarray(post(vals), dtype)
  assert out.shape == _dims(shape)
  return out


def rand_default(rng, scale=3):
  """Normal values times `scale`."""
  return functools.partial(_rand_dtype, rng.randn, scale=scale)


def rand_nonzero(rng):
  post = lambda x: np.where(x == 0, np.array(1, dtype=x.dtype), x)
  return functools.partial(_rand_dtype, rng.randn, scale=3, post=post)


def rand_positive(rng):
  return functools.partial(_rand_dtype, rng.rand, scale=2, post=lambda x: x + 1)


def rand_small(rng):
  return functools.partial(_rand_dtype, rng.randn, scale=1e-3)


def rand_uniform(rng, low=0.0, high=1.0):
  assert low < high
  return functools.partial(_rand_dtype, rng.rand, post=lambda x: x * (high - low) + low)


def _is_sequence(x):
  try:
    iter(x)
  except TypeError:
    return False
  return True


_Base = unittest.TestCase if _parameterized is None else _parameterized.TestCase


class JaxTestCase(_Base):
  """Base class of arrax's test helpers: `self.rng()` (a RandomState seeded from the test's
  name), JAX's test-mode configuration, and tolerant array/pytree comparisons."""
  _default_thread_local_config = {
      "jax_enable_checks": True,
      "jax_numpy_dtype_promotion": "strict",
      "jax_numpy_rank_promotion": "raise",
      "jax_legacy_prng_key": "error",
  }

  def setUp(self):
    super().setUp()
    self._rng = np.random.RandomState(zlib.adler32(self._testMethodName.encode()))
    for name, value in self._default_thread_local_config.items():
      self.enterContext(config.config_states[name](value))

  def rng(self):
    return self._rng

  def assertDtypesMatch(self, actual, desired, *, canonicalize_dtypes=True):
    a, d = _dtype(actual), _dtype(desired)
    if canonicalize_dtypes and not config.x64_enabled():
      a, d = dtypes.canonicalize_dtype(a), dtypes.canonicalize_dtype(d)
    self.assertEqual(a, d)

  def assertArraysEqual(self, actual, desired, *, check_dtypes=True, err_msg="",
                        allow_object_dtype=False, verbose=True):
    """Assert that two arrays are exactly equal."""
    if check_dtypes:
      self.assertDtypesMatch(actual, desired)
    actual, desired = np.asarray(actual), np.asarray(desired)
    if not allow_object_dtype and object in (actual.dtype, desired.dtype):
      raise TypeError("assertArraysEqual may be poorly behaved when np.asarray casts to "
                      "dtype=object; to let the test proceed anyway, pass "
                      "allow_object_dtype=True.")
    with np.errstate(over="ignore"):
      np.testing.assert_array_equal(actual, desired, err_msg=err_msg, verbose=verbose)

  def assertArraysAllClose(self, actual, desired, *, check_dtypes=True, atol=None, rtol=None,
                           err_msg=""):
    """Assert that two arrays are close (per-dtype default tolerances)."""
    self.assertEqual(actual.shape, desired.shape)
    atol = max(tolerance(_dtype(actual), atol), tolerance(_dtype(desired), atol))
    rtol = max(tolerance(_dtype(actual), rtol), tolerance(_dtype(desired), rtol))
    _allclose(actual, desired, atol, rtol, err_msg)
    if check_dtypes:
      self.assertDtypesMatch(actual, desired)

  def assertAllClose(self, actual, desired, *, check_dtypes=True, atol=None, rtol=None,
                     canonicalize_dtypes=True, err_msg=""):
    """Assert that two arrays, or nested dicts/tuples/lists of them, are close."""
    kw = dict(check_dtypes=check_dtypes, atol=atol, rtol=rtol,
              canonicalize_dtypes=canonicalize_dtypes, err_msg=err_msg)
    if isinstance(actual, dict):
      self.assertIsInstance(desired, dict)
      self.assertEqual(set(actual), set(desired))
      for k in actual:
        self.assertAllClose(actual[k], desired[k], **kw)
    elif _is_sequence(actual) and not hasattr(actual, "__array__"):
      if not (_is_sequence(desired) and not hasattr(desired, "__array__")):
        self.fail(f"Expected sequence, got {desired}")
      self.assertEqual(len(actual), len(desired))
      for a, d in zip(actual, desired):
        self.assertAllClose(a, d, **kw)
    elif hasattr(actual, "__array__") or np.isscalar(actual):
      if not (hasattr(desired, "__array__") or np.isscalar(desired)):
        self.fail(f"Expected array-like, got {desired}")
      if check_dtypes:
        self.assertDtypesMatch(actual, desired, canonicalize_dtypes=canonicalize_dtypes)
      self.assertArraysAllClose(np.asarray(actual), np.asarray(desired), check_dtypes=False,
                                atol=atol, rtol=rtol, err_msg=err_msg)
    elif actual != desired:
      raise TypeError((type(actual), type(desired)))
