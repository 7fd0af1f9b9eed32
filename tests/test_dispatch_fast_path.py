"""The jit call path's last-signature shortcut (and Python-scalar caches) against the plain
cache lookup and against JAX: same results, same retraces."""
import functools

import jax
import numpy as np
import pytest

import arrax
from arrax._src import jit as jit_module

# (the sequence of signatures compiles g more often than the recompilation warning allows)
pytestmark = pytest.mark.filterwarnings("ignore:jit\\(g\\) has been compiled")


def _describe(out):
  out = np.asarray(out) if not isinstance(out, (arrax.Array, jax.Array)) else out
  return (np.asarray(out).tolist(), str(out.dtype), getattr(out, "weak_type", None))


def _run(lib, slow=0):
  """Calls a jitted function with a sequence of signatures; returns per call (result, traces
  so far). `slow` 1: forget the recorded plain call before each call (the last-signature
  shortcut); 2: forget the last signature too (the plain cache lookup)."""
  traces = []

  def g(x, y):
    traces.append(1)
    return x * y

  def h(x, n):
    traces.append(1)
    return (x * n).sum()

  def k(x, tag):
    traces.append(1)
    return x * len(str(tag))

  gj, hj, kj = lib.jit(g), lib.jit(h, static_argnums=1), lib.jit(k, static_argnums=1)
  a3 = lib.numpy.asarray(np.arange(3, dtype=np.float32))
  a4 = lib.numpy.asarray(np.arange(4, dtype=np.float32))
  i3 = lib.numpy.asarray(np.arange(3, dtype=np.int32))
  log = []

  def call(fn, *args):
    if slow and lib is arrax:
      fn._cache.fast = None
      if slow == 2:
        fn._cache.last = None
    out = fn(*args)
    log.append((_describe(out), len(traces)))
    return out

  out = call(gj, a3, a3)
  call(gj, a3, a3)
  call(gj, out, a3)                # an output fed back
  call(gj, a4, a4)                 # new shape
  call(gj, a3, a3)
  for y in (2.0, 2.0, 2, 2, True, -0.0, 0.0, 3 + 1j):   # Python scalars: weak types, bool
    call(gj, a3, y)
  call(gj, i3, 2)
  call(gj, i3, 2.5)
  call(gj, np.arange(3, dtype=np.float32), a3)          # a NumPy argument
  call(gj, a3, i3)                                     # the same shapes, another dtype
  call(gj, a3, a3)
  call(gj, a3, a3[:3])                                 # an equal aval, another object
  call(gj, lib.device_put(a3, lib.devices()[0]), a3)   # a committed argument
  call(gj, a3, a3)
  for n in (1, 1, 1.0, True, 1):                       # static values of different types
    call(hj, a3, n)
  for tag in ("ab", "ab", "abc", None, None, 2.5, 2.5, b"ab", 7, 7.0):   # a lone static value
    call(kj, a3, tag)
  with lib.disable_jit():
    call(gj, a3, a3)
  for name in ("jax_disable_jit", "jax_debug_nans"):   # call flags set globally, not in a context
    lib.config.update(name, True)
    try:
      call(gj, a3, a3)
    finally:
      lib.config.update(name, False)
  call(gj, a3, a3)
  gj.clear_cache()
  call(gj, a3, a3)
  lib.config.update("jax_enable_x64", True)
  try:
    call(gj, a3, 2.0)
    call(gj, a3, 2)
  finally:
    lib.config.update("jax_enable_x64", False)
  call(gj, a3, 2.0)
  call(gj, a3, 2)
  return log


@functools.cache
def _jax_log():
  return _run(jax)


@pytest.mark.parametrize("slow", [0, 1, 2], ids=["plain-call", "last-signature", "cache-lookup"])
def test_call_path_matches_jax(slow):
  got, want = _run(arrax, slow=slow), _jax_log()
  assert len(got) == len(want)
  for i, (g, w) in enumerate(zip(got, want)):
    assert g == w, f"call {i}: arrax {g} JAX {w}"


def test_evicted_signature_compiles_again(monkeypatch):
  monkeypatch.setattr(jit_module, "JIT_CACHE_SIZE", 1)
  fj = arrax.jit(lambda x: x + 1)
  a, b = arrax.numpy.ones(2), arrax.numpy.ones(3)
  fj(a)
  fj(a)
  fj(b)   # evicts a's executable, which was the last signature before
  assert fj._cache.compiles == 2 and fj._cache_size() == 1
  np.testing.assert_array_equal(fj(a), [2, 2])
  assert fj._cache.compiles == 3


def test_python_int_overflow_still_raises():
  fj = arrax.jit(lambda x: x)
  fj(2 ** 31 - 1)
  with pytest.raises(OverflowError):
    fj(2 ** 31)
  with pytest.raises(OverflowError):
    fj(2 ** 31)   # (not cached by the first failure)


def test_debug_nans_set_globally_is_checked_on_the_call_path():
  # (set with config.update, not a context: the call path's one-flag shortcut must see it)
  gj = arrax.jit(lambda x, y: x * y)
  a = arrax.numpy.arange(3.0)
  gj(a, a)
  arrax.config.update("jax_debug_nans", True)
  try:
    with pytest.raises(FloatingPointError):
      gj(a * np.nan, a)
  finally:
    arrax.config.update("jax_debug_nans", False)
  assert np.isnan(gj(a * np.nan, a)).all()


def test_plain_call_shortcut_keeps_commitment_errors_and_cache_clears():
  gj = arrax.jit(lambda x, y: (x + y, x * y))
  a = arrax.numpy.arange(3.0)
  gj(a, a)
  s, p = gj(a, a)   # (taken by the recorded plain call)
  assert gj._cache.fast is not None and not s._committed and not p._committed
  c = arrax.device_put(a, arrax.devices()[0])
  s, p = gj(c, a)
  assert s._committed and p._committed   # committed in, committed out (as in JAX)
  gj.clear_cache()
  assert gj._cache.fast is None
  gj(a, a)
  assert gj._cache.compiles == 2
  b = arrax.numpy.arange(3.0)
  b.delete()
  with pytest.raises(RuntimeError, match="deleted"):
    gj(b, a)
  np.testing.assert_array_equal(gj(a, a)[1], [0, 1, 4])


def test_committed_arguments_give_committed_results_as_in_jax():
  for lib in (jax, arrax):
    a = lib.numpy.arange(3.0)
    c = lib.device_put(a, lib.devices()[0])   # committed to the default device
    f = lib.jit(lambda x, y: x + y)
    got = [f(c, a), f(a, a), c + 1, a + 1, lib.lax.add(c, a), lib.lax.add(a, a),
           lib.numpy.sin(c)]
    assert [x._committed for x in got] == [True, False, True, False, True, False, True], lib


def test_plain_call_shortcut_with_a_static_argument():
  traces = []

  def f(x, n, s):
    traces.append(n)
    return x * n + len(s)

  fj = arrax.jit(f, static_argnums=(1, 2))
  a = arrax.numpy.arange(3.0)
  assert fj(a, 2, "ab").tolist() == [2, 4, 6]
  assert fj._cache.fast is not None and fj._cache.fast.avals[1:] == [2, "ab"]
  assert fj(a, 2, "ab").tolist() == [2, 4, 6] and traces == [2]
  assert fj(a, 3, "ab").tolist() == [2, 5, 8] and traces == [2, 3]
  assert fj(a, 2.0, "ab").tolist() == [2, 4, 6] and traces == [2, 3, 2.0]   # (a float: as JAX)
  assert fj(a, 2, "ab").tolist() == [2, 4, 6] and traces == [2, 3, 2.0]
  with pytest.raises(ValueError, match="Non-hashable static"):
    fj(a, [2], "ab")


def _keywords_and_nones(lib):
  traces = []

  def f(x, w=None, *, axis=0, keep=False):
    traces.append(axis)
    out = x.sum(axis=axis, keepdims=keep)
    return out if w is None else out * w

  fj = lib.jit(f, static_argnames=("axis", "keep"))
  a = lib.numpy.ones((2, 3))
  outs = [fj(a, None, axis=1, keep=False), fj(a, None, axis=1, keep=False),
          fj(a, None, axis=0, keep=False),   # another static
          fj(a, None, axis=0, keep=True), fj(a, 2.0, axis=0, keep=True),   # None -> a scalar
          fj(a, 3.0, axis=0, keep=True), fj(a, None, axis=0),   # a keyword left out
          fj(a, axis=0, keep=True), fj(a, axis=0, keep=True)]
  return [o.tolist() for o in outs], traces, fj


def test_plain_call_shortcut_with_static_keywords_and_nones():
  got, traces, fj = _keywords_and_nones(arrax)
  assert (got, traces) == _keywords_and_nones(jax)[:2]
  assert fj._cache.fast is not None
  # jnp reductions take this path (static keywords, None defaults)
  x = arrax.numpy.arange(6.0).reshape(2, 3)
  for _ in range(2):
    assert arrax.numpy.sum(x, axis=0).tolist() == [3, 5, 7]
  assert arrax.numpy.sum(x).tolist() == 15 and arrax.numpy.sum(x, axis=1).tolist() == [3, 12]
