"""Differential-testing helpers shared by the arrax.numpy test files (JAX 0.10.2 is the oracle).

`check(afn, jfn, *args)` calls the JAX function on JAX copies of the arguments and the arrax
function on arrax copies. If JAX raises, arrax must raise an exception of the same class (by
name, so arrax.errors.X matches jax.errors.X); otherwise the outputs (any pytree of arrays) must
agree in values, dtype, shape, weak type and the sign of zeros, and arrax must return its own
Array type.
"""
import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from conftest import assert_same

BF16 = np.dtype(ml_dtypes.bfloat16)


class Raw:
  """Wraps a value that must be passed to both libraries unconverted (e.g. a numpy array)."""

  def __init__(self, value):
    self.value = value

  def __repr__(self):
    return f"Raw({self.value!r})"


def to_arrax(x):
  if isinstance(x, Raw):
    return x.value
  if isinstance(x, np.ndarray):
    return anp.asarray(x)
  if isinstance(x, (list, tuple)):
    return type(x)(to_arrax(v) for v in x)
  return x


def to_jax(x):
  if isinstance(x, Raw):
    return x.value
  if isinstance(x, np.ndarray):
    return jnp.asarray(x)
  if isinstance(x, (list, tuple)):
    return type(x)(to_jax(v) for v in x)
  return x


def _zero_signs_match(a, e):
  if e.dtype.kind == "c":
    _zero_signs_match(a.real, e.real)
    _zero_signs_match(a.imag, e.imag)
    return
  if e.dtype.kind != "f" and e.dtype != BF16:
    return
  a64, e64 = a.astype(np.float64), e.astype(np.float64)
  zeros = (e64 == 0) & (a64 == 0)
  if zeros.any():
    np.testing.assert_array_equal(np.signbit(a64[zeros]), np.signbit(e64[zeros]),
                                  err_msg="sign of zero differs from JAX")


def assert_tree_same(actual, expected, tol=None, check_weak=True, check_type=True):
  """assert_same over matching pytrees, plus signed-zero and result-type checks."""
  if isinstance(expected, (tuple, list)):
    assert isinstance(actual, (tuple, list)), type(actual)
    assert len(actual) == len(expected), (len(actual), len(expected))
    for a, e in zip(actual, expected):
      assert_tree_same(a, e, tol, check_weak, check_type)
    return
  if check_type and isinstance(expected, jax.Array):
    assert isinstance(actual, arrax.Array), f"arrax returned {type(actual)}, not arrax.Array"
  if tol is None:
    assert_same(actual, expected, check_weak=check_weak)
  else:
    a, e = np.asarray(actual), np.asarray(expected)
    assert a.shape == e.shape, (a.shape, e.shape)
    assert a.dtype == e.dtype, (a.dtype, e.dtype)
    if check_weak:
      aw = getattr(getattr(actual, "aval", None), "weak_type", False)
      ew = getattr(getattr(expected, "aval", None), "weak_type", False)
      assert aw == ew, f"weak_type: arrax {aw}, jax {ew}"
    wide = np.complex128 if e.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(a.astype(wide), e.astype(wide), rtol=tol, atol=tol)
  _zero_signs_match(np.asarray(actual), np.asarray(expected))


def same_exception(run_arrax, jax_exc):
  """arrax must raise an exception of JAX's class (compared by class name)."""
  try:
    run_arrax()
  except Exception as e:  # noqa: BLE001
    assert type(e).__name__ == type(jax_exc).__name__, (
        f"arrax raised {type(e).__name__}: {e}\nJAX raised {type(jax_exc).__name__}: {jax_exc}")
    return
  pytest.fail(f"JAX raised {type(jax_exc).__name__}: {jax_exc}\nbut arrax did not raise")


def check(afn, jfn, *args, tol=None, check_weak=True, kwargs=None, **kw):
  """Compare afn(*arrax args) against jfn(*jax args); numpy arrays are converted per library."""
  kwargs = dict(kwargs or {}, **kw)
  ka = {k: to_arrax(v) for k, v in kwargs.items()}
  kj = {k: to_jax(v) for k, v in kwargs.items()}
  try:
    expected = jfn(*[to_jax(a) for a in args], **kj)
  except Exception as e:  # noqa: BLE001
    same_exception(lambda: afn(*[to_arrax(a) for a in args], **ka), e)
    return None
  actual = afn(*[to_arrax(a) for a in args], **ka)
  assert_tree_same(actual, expected, tol=tol, check_weak=check_weak)
  return actual


def both(make):
  """make(lib_numpy, lib) -> function; returns the arrax and the JAX version."""
  return make(anp, arrax), make(jnp, jax)


def check_all(cases):
  """Run several `check` calls (given as (label, thunk) pairs) and report every failure."""
  failures = []
  for label, thunk in cases:
    try:
      thunk()
    except (Exception, pytest.fail.Exception) as e:  # noqa: BLE001  (failures and crashes alike)
      failures.append(f"--- {label}: {type(e).__name__}: {e}")
  if failures:
    pytest.fail("\n".join(failures), pytrace=False)
