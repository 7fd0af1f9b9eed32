"""The differential-testing helpers every test file shares: JAX 0.10.2 is the oracle.

A test case is written once and built for both libraries. `check(afn, jfn, *args)` calls the
JAX function on JAX copies of the arguments and the arrax function on arrax copies. If JAX
raises, arrax must raise an exception of the same class (by name, so arrax.errors.X matches
jax.errors.X); otherwise the outputs must be the same (`assert_same`: pytree, values, dtype,
shape, weak type, result type, the sign of zeros).

Keyword options of `check` (and of `check_raises`, `check_jaxpr`) describe how a file writes
its cases:
  build      how a case becomes each library's function; None: the case is the pair
             (afn, jfn); `call_with("lax")`: fn(lax, *args); `make_with("lax", "np")`:
             make(lax, jnp)(*args); `named("lax")`: a name under lax.
  transform  transform(top_module, f) wraps each library's function (vmap, grad, ...).
  convert    "tree": NumPy arrays in the arguments (lists, tuples, dicts) become each
             library's arrays; "arrays": every positional argument becomes an array; None:
             arguments are passed as they are.
  eager, jit run eagerly, and/or under each library's jit (the JAX result under jit is
             compared with arrax's under jit).
The other keywords are `assert_same`'s (tol, exact, signbits, check_weak, check_type,
strict_tree); any further keywords are passed to the functions.
"""
import collections
import contextlib
import functools
import io
import os
import textwrap

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax as jlax  # noqa: E402

import arrax  # noqa: E402
import arrax.numpy as anp  # noqa: E402
from arrax import lax as alax  # noqa: E402
from arrax._src import core  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT0 = jax.dtypes.float0

Lib = collections.namedtuple("Lib", "top lax np")
JAX = Lib(jax, jlax, jnp)
ARRAX = Lib(arrax, alax, anp)


# ---- test values -----------------------------------------------------------------------------
def rand(shape, dtype=np.float32, seed=0, *, ints=(-5, 6), step=None):
  """Random values of `dtype` drawn with np.random.default_rng(seed) (`seed` may be a Generator,
  which is used as it is).

  Booleans are fair coin flips; integers come from [lo, hi) = `ints` ([0, hi) if unsigned);
  floats are standard normal (complex: independent real and imaginary draws) or, with `step`,
  integers from `ints` times `step` (exactly representable, with repeats so ties occur).
  """
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  lo, hi = ints
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind in "iu":
    return rng.integers(0 if dtype.kind == "u" else lo, hi, shape).astype(dtype)
  if step is None:
    if dtype.kind == "c":
      return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)
    return rng.standard_normal(shape).astype(dtype)
  vals = rng.integers(lo, hi, shape) * step
  if dtype.kind == "c":
    vals = vals + 1j * (rng.integers(lo, hi, shape) * step)
  return vals.astype(dtype)


class Raw:
  """Wraps a value that must be passed to both libraries unconverted (e.g. a numpy array)."""

  def __init__(self, value):
    self.value = value

  def __repr__(self):
    return f"Raw({self.value!r})"


def _convert(x, lib_np):
  if isinstance(x, Raw):
    return x.value
  if isinstance(x, np.ndarray):
    return lib_np.asarray(x)
  if isinstance(x, (list, tuple)):
    return type(x)(_convert(v, lib_np) for v in x)
  if isinstance(x, dict):
    return {k: _convert(v, lib_np) for k, v in x.items()}
  return x


def to_arrax(x):
  """NumPy arrays in `x` (through lists, tuples and dicts) become arrax arrays; Raw unwraps."""
  return _convert(x, anp)


def to_jax(x):
  """NumPy arrays in `x` (through lists, tuples and dicts) become JAX arrays; Raw unwraps."""
  return _convert(x, jnp)


# ---- comparing results -----------------------------------------------------------------------
def ad_tol(dtype):
  """Tolerance of derivatives: 3e-5 for 32 bits, 1e-12 for 64, 3e-2 for bfloat16."""
  if dtype == BF16:
    return 3e-2
  return 1e-12 if dtype in (np.float64, np.complex128) else 3e-5


def linalg_tol(dtype, scale=1.0):
  """Tolerance of LAPACK-backed results: 1e-9 in 64 bits, 2e-4 below (times `scale`)."""
  return (1e-9 if np.dtype(dtype) in (np.float64, np.complex128) else 2e-4) * scale


def _tolerances(dtype, tol, rtol, atol):
  if tol is not None:
    t = tol(dtype) if callable(tol) else tol
    return t if isinstance(t, tuple) else (t, t)
  if rtol is None and atol is None:
    return (1e-6 if dtype.itemsize >= 4 else 1e-2), 1e-6
  return rtol or 0, atol or 0


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


def _assert_leaf_same(actual, expected, rtol, atol, tol, exact, signbits, check_weak,
                      check_type, strict_tree):
  if isinstance(expected, jax.Array):
    if check_type:
      assert isinstance(actual, arrax.Array), f"arrax returned {type(actual)}, not arrax.Array"
  elif isinstance(expected, np.ndarray):   # JAX's float0 tangents: a NumPy subclass
    if strict_tree:
      assert type(actual) is np.ndarray, (type(actual), type(expected))
  elif strict_tree:
    assert type(actual) is type(expected), (type(actual), type(expected))
  a, e = np.asarray(actual), np.asarray(expected)
  assert a.shape == e.shape, (a.shape, e.shape)
  assert a.dtype == e.dtype, (a.dtype, e.dtype)
  if check_weak:
    aw = getattr(getattr(actual, "aval", None), "weak_type", False)
    ew = getattr(getattr(expected, "aval", None), "weak_type", False)
    assert aw == ew, f"weak_type: arrax {aw}, jax {ew}"
  if e.dtype == FLOAT0:
    return
  if (e.dtype.kind in "fc" or e.dtype == BF16) and not exact:
    r, t = _tolerances(e.dtype, tol, rtol, atol)
    wide = np.complex128 if e.dtype.kind == "c" else np.float64
    np.testing.assert_allclose(a.astype(wide), e.astype(wide), rtol=r, atol=t)
  elif e.dtype in (BF16, np.float16):   # NumPy sees bfloat16 NaNs as unequal
    np.testing.assert_array_equal(a.astype(np.float32), e.astype(np.float32))
  else:
    np.testing.assert_array_equal(a, e)
  if signbits == "zeros":
    _zero_signs_match(a, e)
  elif signbits == "all" and (e.dtype.kind == "f" or e.dtype == BF16):
    np.testing.assert_array_equal(np.signbit(a.astype(np.float32)),
                                  np.signbit(e.astype(np.float32)), err_msg="sign bits differ")


def assert_same(actual, expected, rtol=None, atol=None, *, tol=None, exact=False,
                signbits="zeros", check_weak=True, check_type=True, strict_tree=False):
  """arrax's result `actual` equals JAX's `expected`: per array, shape, dtype, weak type and
  values (float0 arrays: shape and dtype only), through tuples and lists.

  Values: integers and booleans exactly; inexact ones within `tol` (rtol = atol; a pair
  (rtol, atol); or a function of the dtype giving either), else `rtol`/`atol`, else rtol 1e-6
  (1e-2 below 32 bits) and atol 1e-6; `exact` compares them exactly too. `signbits`: "zeros"
  (the sign of zeros must match), "all" (every real float's sign bit, NaNs included) or None.
  `check_type`: arrax.Array where JAX returns a jax.Array. `strict_tree`: the same pytree
  structure (the printed treedefs) and the same type of every non-array leaf.
  """
  opts = dict(rtol=rtol, atol=atol, tol=tol, exact=exact, signbits=signbits,
              check_weak=check_weak, check_type=check_type, strict_tree=strict_tree)
  if strict_tree:
    a_leaves, a_tree = arrax.tree_util.tree_flatten(actual)
    e_leaves, e_tree = jax.tree_util.tree_flatten(expected)
    assert str(a_tree) == str(e_tree), (a_tree, e_tree)
    for a, e in zip(a_leaves, e_leaves):
      _assert_leaf_same(a, e, **opts)
    return
  if isinstance(expected, (tuple, list)):
    assert isinstance(actual, (tuple, list)), type(actual)
    assert len(actual) == len(expected), (len(actual), len(expected))
    for a, e in zip(actual, expected):
      assert_same(a, e, **opts)
    return
  _assert_leaf_same(actual, expected, **opts)


def assert_tree_same(actual, expected, tol=None, check_weak=True, check_type=True):
  """assert_same with `tol` (rtol = atol) as its third argument (the NumPy tests' spelling)."""
  assert_same(actual, expected, tol=tol, check_weak=check_weak, check_type=check_type)


def assert_close(actual, expected, tol=None, **opts):
  """assert_same without the weak-type, array-type and zero-sign checks: shape, dtype and values
  (within `tol`), for results where only those are compared (LAPACK factors, NumPy references,
  parameter trees)."""
  assert_same(actual, expected, tol=tol, check_weak=False, check_type=False, signbits=None,
              **opts)


def assert_bits_equal(actual, expected):
  """Same shape, dtype (typed PRNG keys: both typed) and bit pattern."""
  def raw(x):
    if isinstance(x, jax.Array) and jnp.issubdtype(x.dtype, jax.dtypes.prng_key):
      return np.asarray(jax.random.key_data(x)), "key"
    if type(x).__name__ == "PRNGKeyArray":
      return np.asarray(arrax.random.key_data(x)), "key"
    return np.asarray(x), "array"
  a, ka = raw(actual)
  e, ke = raw(expected)
  assert ka == ke, f"arrax gave a {ka}, jax a {ke}"
  assert a.shape == e.shape, (a.shape, e.shape)
  assert a.dtype == e.dtype, (a.dtype, e.dtype)
  a, e = np.atleast_1d(a), np.atleast_1d(e)
  if e.dtype.kind == "c":   # compare real and imaginary parts
    part = np.dtype(f"float{4 * e.dtype.itemsize}")
    a, e = a.view(part), e.view(part)
  uint = np.dtype(f"uint{8 * e.dtype.itemsize}")
  np.testing.assert_array_equal(a.view(uint), e.view(uint))


# ---- exceptions --------------------------------------------------------------------------------
def raised(thunk):
  """The exception `thunk()` raises, or None."""
  try:
    thunk()
  except Exception as e:  # noqa: BLE001
    return e
  return None


def error_of(thunk):
  """(class name, message) of the exception `thunk()` raises, or None."""
  e = raised(thunk)
  return None if e is None else (type(e).__name__, str(e))


def same_exception(run_arrax, jax_exc, match=()):
  """arrax must raise an exception of JAX's class (compared by class name), with each of the
  `match` strings in both messages. Returns arrax's exception."""
  assert jax_exc is not None, "JAX did not raise"
  try:
    run_arrax()
  except Exception as e:  # noqa: BLE001
    assert type(e).__name__ == type(jax_exc).__name__, (
        f"arrax raised {type(e).__name__}: {e}\nJAX raised {type(jax_exc).__name__}: {jax_exc}")
    for s in match:
      assert s in str(jax_exc), f"test expectation {s!r} not in JAX's message"
      assert s in str(e), f"{s!r} not in arrax's message: {e}"
    return e
  pytest.fail(f"JAX raised {type(jax_exc).__name__}: {jax_exc}\nbut arrax did not raise")


def assert_raises_like(run_jax, run_arrax):
  """run_jax() raises, and run_arrax() raises an instance of that exception's class."""
  with pytest.raises(Exception) as jax_err:
    run_jax()
  with pytest.raises(type(jax_err.value)):
    run_arrax()


# ---- building a case for both libraries ------------------------------------------------------
def call_with(*parts):
  """build: the case is fn(*parts, *args), e.g. call_with("lax") for fn(lax, x, y)."""
  return lambda fn, lib: functools.partial(fn, *(getattr(lib, p) for p in parts))


def make_with(*parts):
  """build: the case is make(*parts) -> function, e.g. make_with("lax", "np") for
  make(lax, jnp)."""
  return lambda make, lib: make(*(getattr(lib, p) for p in parts))


def named(prefix=""):
  """build: the case is a dotted name under the top module (after `prefix`), e.g.
  named("scipy") for "special.erf"."""
  return lambda name, lib: functools.reduce(getattr, f"{prefix}.{name}".strip(".").split("."),
                                            lib.top)


def both(make, build=make_with("np", "top")):
  """(arrax's, JAX's) version of a case; by default make(numpy_module, top_module)."""
  return build(make, ARRAX), build(make, JAX)


_CONVERTERS = {
    "tree": (to_arrax, to_jax),
    "arrays": (anp.asarray, jnp.asarray),
    None: (lambda x: x, lambda x: x),
}


def _prepare(fn, args, build, transform, convert, kwargs):
  """Each library's (function maker, arguments, keyword arguments) for a case. The function is
  built (and transformed) when the case runs, so that errors raised while building count as
  the case's errors."""
  if build is None:
    (afn, jfn), args = (fn, args[0]), args[1:]
    makers = [lambda: afn, lambda: jfn]
  else:
    makers = [lambda: build(fn, ARRAX), lambda: build(fn, JAX)]
  if transform is not None:
    makers = [lambda m=makers[0]: transform(arrax, m()), lambda m=makers[1]: transform(jax, m())]
  ca, cj = _CONVERTERS[convert]
  ka, kj = _CONVERTERS["tree" if convert == "arrays" else convert]
  return ((makers[0], [ca(a) for a in args], {k: ka(v) for k, v in kwargs.items()}),
          (makers[1], [cj(a) for a in args], {k: kj(v) for k, v in kwargs.items()}))


def _bound(fn, kwargs):
  return functools.partial(fn, **kwargs) if kwargs else fn


def _call(top, make, args, kwargs, jit):
  fn = _bound(make(), kwargs)
  return (top.jit(fn) if jit else fn)(*args)


def check(fn, *args, build=None, transform=None, convert="tree", eager=True, jit=False,
          tol=None, exact=False, signbits="zeros", check_weak=True, check_type=True,
          strict_tree=False, kwargs=None, **kw):
  """The case gives the same result in arrax as in JAX (or the same exception class); see
  the module docstring for the options. Returns arrax's (first) result."""
  (amake, a_args, a_kw), (jmake, j_args, j_kw) = _prepare(fn, args, build, transform, convert,
                                                         dict(kwargs or {}, **kw))
  first = None
  for jitted in [False] * eager + [True] * jit:
    try:
      expected = _call(jax, jmake, j_args, j_kw, jitted)
    except Exception as e:  # noqa: BLE001
      same_exception(lambda: _call(arrax, amake, a_args, a_kw, jitted), e)
      continue
    actual = _call(arrax, amake, a_args, a_kw, jitted)
    assert_same(actual, expected, tol=tol, exact=exact, signbits=signbits,
                check_weak=check_weak, check_type=check_type, strict_tree=strict_tree)
    first = actual if first is None else first
  return first


def vmapped(**vmap_kw):
  """transform: each library's vmap with these keywords (in_axes, out_axes, axis_name, ...)."""
  return lambda top, f: top.vmap(f, **vmap_kw)


def grad_of(argnums=0):
  """transform: each library's grad with respect to `argnums`."""
  return lambda top, f: top.grad(f, argnums=argnums)


def vectorized(**kw):
  """transform: each library's numpy.vectorize with these keywords (signature, excluded)."""
  return lambda top, f: top.numpy.vectorize(f, **kw)


_VMAP_KEYWORDS = ("in_axes", "out_axes", "axis_name", "axis_size", "spmd_axis_name")


def check_vmap(fn, *args, build=make_with("top"), jit=False, strict_tree=True, **kw):
  """`check` of vmap(case) (by default make(top_module) -> function), eagerly or, with `jit`,
  under jit only; vmap's keywords (in_axes, out_axes, axis_name, axis_size) go to vmap. Results
  must have the same pytree structure."""
  vmap_kw = {k: kw.pop(k) for k in _VMAP_KEYWORDS if k in kw}
  return check(fn, *args, build=build, transform=vmapped(**vmap_kw), eager=not jit, jit=jit,
               strict_tree=strict_tree, **kw)


def check_value(*args, **kw):
  """`check` of a case where JAX gives a value (so values, not just errors, are compared)."""
  out = check(*args, **kw)
  assert out is not None, "JAX raised: this case compares no values"
  return out


def check_error(fn, *args, match, build, **kw):
  """`check` of a case where JAX raises an error matching the regular expression `match`
  (arrax: the same class); JAX's call is `build(fn)(*args, **kw)`, arguments unconverted."""
  with pytest.raises(Exception, match=match):
    build(fn, JAX)(*args, **kw)
  assert check(fn, *args, build=build, **kw) is None


def check_raises(fn, *args, build=None, transform=None, convert="tree", jit=False, match=(),
                 **kw):
  """JAX raises on the case; arrax raises the same exception class, with each of the `match`
  strings in both messages. Returns arrax's exception."""
  (amake, a_args, a_kw), (jmake, j_args, j_kw) = _prepare(fn, args, build, transform, convert,
                                                         kw)
  jax_exc = raised(lambda: _call(jax, jmake, j_args, j_kw, jit))
  return same_exception(lambda: _call(arrax, amake, a_args, a_kw, jit), jax_exc, match)


def _typecheck(jaxpr):
  core.check_jaxpr(jaxpr)
  for eqn in jaxpr.eqns:
    for v in eqn.params.values():
      for j in (v if isinstance(v, tuple) else (v,)):
        if isinstance(j, core.ClosedJaxpr):
          _typecheck(j.jaxpr)


def check_jaxpr(fn, *args, build=None, transform=None, convert="tree", typecheck=False,
                **kw):
  """make_jaxpr of the case prints the same text in arrax and JAX (where JAX raises while
  tracing, arrax raises the same class); `typecheck`: arrax's jaxpr and the jaxprs in its
  equations' parameters pass core.check_jaxpr. Returns JAX's text."""
  (amake, a_args, a_kw), (jmake, j_args, j_kw) = _prepare(fn, args, build, transform, convert,
                                                         kw)
  try:
    expected = str(jax.make_jaxpr(_bound(jmake(), j_kw))(*j_args))
  except Exception as e:  # noqa: BLE001
    same_exception(lambda: arrax.make_jaxpr(_bound(amake(), a_kw))(*a_args), e)
    return None
  closed = arrax.make_jaxpr(_bound(amake(), a_kw))(*a_args)
  assert str(closed) == expected, f"arrax:\n{closed}\njax:\n{expected}"
  if typecheck:
    _typecheck(closed.jaxpr)
  return expected


def of_argnums(f, args, argnums):
  """`f` as a function of its arguments at `argnums` only (the others fixed to `args`)."""
  def g(*diff):
    full = list(args)
    for i, v in zip(argnums, diff):
      full[i] = v
    return f(*full)
  return g


def tangent_for(x, seed=0):
  """A random tangent (or cotangent) for the value `x`: float0 zeros where x is an integer or
  boolean, else `rand` values of x's shape and dtype."""
  x = np.asarray(x)
  if x.dtype.kind in "iub":
    return np.zeros(x.shape, FLOAT0)
  return rand(x.shape, x.dtype, seed)


def check_jvp_vjp(fn, *args, build=call_with("lax"), argnums=None, seed=0, tol=None,
                  eager=False, tangent=tangent_for, kwargs=None):
  """jvp and vjp of the case (by default fn(lax_module, *args, **kwargs)) agree between arrax
  and JAX,
  differentiating the arguments at `argnums` (default all): primal outputs, tangents and
  cotangents, within `tol` (default `ad_tol`). Tangents, then output cotangents, are drawn with
  `tangent(x, rng)` from one np.random.default_rng(seed). Both run under jit (one compilation
  each) unless `eager`."""
  rng = np.random.default_rng(seed)
  argnums = tuple(range(len(args))) if argnums is None else tuple(argnums)

  def restrict(f):
    return of_argnums(f, args, argnums)

  afn, jfn = (_bound(f, kwargs or {}) for f in both(fn, build))
  diff = tuple(args[i] for i in argnums)
  tangents = tuple(tangent(d, rng) for d in diff)
  out_shape = jax.eval_shape(restrict(jfn), *diff)
  cts = jax.tree_util.tree_map(lambda o: tangent(np.zeros(o.shape, o.dtype), rng), out_shape)

  def run(top, f):
    f = restrict(f)
    jvp = lambda d, t: top.jvp(f, d, t)  # noqa: E731

    def vjp(d, c):
      out, pullback = top.vjp(f, *d)
      return out, pullback(c)
    if not eager:
      jvp, vjp = top.jit(jvp), top.jit(vjp)
    return jvp(diff, tangents), vjp(diff, cts)

  expected = run(jax, jfn)
  actual = run(arrax, afn)
  assert_same(actual, expected, tol=ad_tol if tol is None else tol)


def check_all(cases):
  """Run several checks (given as (label, thunk) pairs) and report every failure."""
  failures = []
  for label, thunk in cases:
    try:
      thunk()
    except (Exception, pytest.fail.Exception) as e:  # noqa: BLE001  (failures and crashes alike)
      failures.append(f"--- {label}: {type(e).__name__}: {e}")
  if failures:
    pytest.fail("\n".join(failures), pytrace=False)


def assert_all_same(labels, actual, expected, failures=(), **opts):
  """assert_same for each labelled case of a batch; one failure lists every difference (after
  the `failures` messages found earlier)."""
  failures = list(failures)
  for label, a, e in zip(labels, actual, expected):
    try:
      assert_same(a, e, **opts)
    except AssertionError as err:
      failures.append(f"--- {label}: {err}")
  assert not failures, f"{len(failures)} cases differ:\n" + "\n".join(failures)


def distinct_data(shape, dtype=np.float32, scale=1.25):
  """Distinct values (some negative, times `scale` for floats) of `dtype`; a mixed pattern for
  bool."""
  n = int(np.prod(shape))
  v = (np.arange(n) * 7 % 11) - 4
  dt = np.dtype(dtype)
  if dt == np.bool_:
    return (v % 3 == 0).reshape(shape)
  if dt.kind == "c":
    return (v + 1j * (v[::-1] - 2)).astype(dt).reshape(shape)
  if dt.kind == "u":
    v = v + 4
  return (v * scale if dt.kind == "f" or dt == BF16 else v).astype(dt).reshape(shape)


def api_of(lib_np):
  """The top-level module (arrax or jax) of a numpy module (anp or jnp)."""
  return arrax if lib_np is anp else jax


def check_jit_batch(cases, arrays, transform=None):
  """Every case f(lib_np, *arrays) under one jit per library; one failure lists every difference.

  `transform(api, g)` may wrap each case's function g(*arrays) (api is arrax or jax).
  """
  def batch(lib):
    fns = [(lambda *xs, f=f: f(lib, *xs)) for _, f in cases]
    if transform is not None:
      fns = [transform(api_of(lib), g) for g in fns]
    return lambda *xs: tuple(g(*xs) for g in fns)
  with no_unroll_warning():
    actual = arrax.jit(batch(anp))(*[anp.asarray(a) for a in arrays])
  expected = jax.jit(batch(jnp))(*[jnp.asarray(a) for a in arrays])
  failures = []
  for (label, _), a, e in zip(cases, actual, expected):
    try:
      assert_tree_same(a, e)
    except AssertionError as err:
      failures.append(f"--- {label}: {err}")
  assert not failures, f"{len(failures)} of {len(cases)} cases differ:\n" + "\n".join(failures)


def check_cases(cases):
  """Eager comparisons (results or exception classes) of (label, f(lib_np, *args), args) cases."""
  check_all([(label, lambda f=f, args=args: check(lambda *a: f(anp, *a), lambda *a: f(jnp, *a),
                                                  *args))
             for label, f, args in cases])


@contextlib.contextmanager
def no_unroll_warning():
  """For batches that unroll a Python loop over their cases on purpose."""
  old = arrax.config.arrax_loop_unroll_warning_threshold
  arrax.config.update("arrax_loop_unroll_warning_threshold", 0)
  try:
    yield
  finally:
    arrax.config.update("arrax_loop_unroll_warning_threshold", old)


@contextlib.contextmanager
def threefry_mode(partitionable):
  """Set jax_threefry_partitionable in arrax and in the JAX oracle; restore afterwards."""
  old_a = arrax.config.jax_threefry_partitionable
  old_j = jax.config.jax_threefry_partitionable
  arrax.config.update("jax_threefry_partitionable", partitionable)
  jax.config.update("jax_threefry_partitionable", partitionable)
  try:
    yield partitionable
  finally:
    arrax.config.update("jax_threefry_partitionable", old_a)
    jax.config.update("jax_threefry_partitionable", old_j)


# ---- printed output ----------------------------------------------------------------------------
def run_printed(code, scope):
  """What `code` (dedented) prints when run with the names in `scope`; an exception ends the
  output with 'raised <class name>' (the error class is part of what is compared)."""
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
  code = textwrap.dedent(prelude) + textwrap.dedent(code)
  common = {"np": np, "partial": functools.partial}
  want = run_printed(code, {**common, "jax": jax, "jnp": jnp, **(jax_scope or {})})
  got = run_printed(code, {**common, "jax": arrax, "jnp": anp, **(arrax_scope or {})})
  assert "raised" not in want or "raised" in got, f"jax:\n{want}\narrax:\n{got}"
  assert got == want, f"jax:\n{want}\narrax:\n{got}"
  return want
