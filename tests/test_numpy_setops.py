"""arrax.numpy set operations and comparison/testing functions compared with jax.numpy 0.10.2.

unique (all flags, axis, equal_nan, size/fill_value) and the unique_* functions, isin (each
method), union1d, intersect1d, setdiff1d and setxor1d, then isclose, allclose, array_equal,
array_equiv, isposinf/isneginf, isreal/iscomplex, isdtype, iterable, nan_to_num and spacing: over
dtypes with repeated values, NaN, +-inf and -0.0, 0-d and empty inputs, under jit (with size=, and
the ConcretizationTypeError without it), a few under x64, and grad/vmap where differentiable.
"""
import math

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from oracle import BF16, Raw, check, check_all

import arrax
import arrax.numpy as anp

DTYPES = {
    "bool": np.dtype(np.bool_), "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
    "int32": np.dtype(np.int32), "float16": np.dtype(np.float16), "bfloat16": BF16,
    "float32": np.dtype(np.float32), "complex64": np.dtype(np.complex64),
}
nan, inf = float("nan"), float("inf")
FLOAT_POOL = [1.5, -2.0, 0.0, -0.0, 1.5, nan, inf, -inf, 3.0, nan, -2.0, 0.25]
COMPLEX_POOL = [1 + 1j, 1 + 0j, complex(nan, 0), complex(0, nan), -2j, 1 + 1j, 0j,
                complex(inf, 1), 3 - 1j, -2j, complex(nan, nan), 1 + 0j]


def dups(dtype, shape, specials=True, seed=0):
  """Deterministic values with repeats (and, for inexact dtypes, NaN/inf/-0.0 if `specials`)."""
  dt = DTYPES[dtype] if isinstance(dtype, str) else np.dtype(dtype)
  n = math.prod(shape)
  order = (np.arange(n) * 7 + seed * 5) % 12
  if dt == np.bool_:
    return (order % 3 == 0).reshape(shape)
  if dt.kind in "iu":
    vals = order % 5 - (0 if dt.kind == "u" else 2)
    return vals.astype(dt).reshape(shape)
  if dt.kind == "c":
    pool = COMPLEX_POOL if specials else [1 + 1j, -2j, 0.5 + 0j, 1 + 1j, 3 - 1j, -2j]
    return np.array([pool[i % len(pool)] for i in order], dt).reshape(shape)
  pool = FLOAT_POOL if specials else [1.5, -2.0, 0.0, 1.5, 3.0, 0.25]
  return np.array([pool[i % len(pool)] for i in order]).astype(dt).reshape(shape)


def fns(name):
  return (lambda *a, **k: getattr(anp, name)(*a, **k),
          lambda *a, **k: getattr(jnp, name)(*a, **k))


def run(name, *args, **kwargs):
  fa, fj = fns(name)
  return check(fa, fj, *args, **kwargs)


def run_jit(name, *args, static=(), **kwargs):
  """`name` under jit (the arrays traced, the keyword arguments closed over)."""
  fa, fj = fns(name)
  return check(arrax.jit(lambda *a: fa(*a, **kwargs)), jax.jit(lambda *a: fj(*a, **kwargs)),
               *args)


def _id(v):
  return repr(v).replace(" ", "")


def both_jit(fn, *args):
  """fn(module, *args) under arrax.jit against jax.jit (one compilation for many results)."""
  return check(arrax.jit(lambda *a: fn(anp, *a)), jax.jit(lambda *a: fn(jnp, *a)), *args)


def both(fn, *args):
  """fn(module, *args) run eagerly by each library."""
  return check(lambda *a: fn(anp, *a), lambda *a: fn(jnp, *a), *args)


# ---- unique ------------------------------------------------------------------------------------
ALL = {"return_index": True, "return_inverse": True, "return_counts": True}


def _unique_sized(m, x, x2):
  return (m.unique(x, size=12, fill_value=1, **ALL),
          m.unique(x, size=4, return_counts=True),
          m.unique(x, size=12, equal_nan=False, return_index=True),
          m.unique(x2, axis=0, size=3, **ALL),
          m.unique_all(x, size=12))


def _unique_sized_small(m, x, x2):
  return m.unique(x, size=12, fill_value=1, **ALL), m.unique(x2, axis=-1, size=3)


def _repeated_rows(dtype):
  x2 = np.concatenate([dups(dtype, (2, 4), seed=1)] * 2, 0)[[0, 1, 3, 2]]
  x2[3, 1] = x2[0, 0]
  return x2


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_unique_with_size_under_jit(dtype):
  fn = _unique_sized if dtype in ("float32", "complex64") else _unique_sized_small
  both_jit(fn, dups(dtype, (12,)), _repeated_rows(dtype))


def _unique_eager(m, x, x2):
  return (m.unique(x), m.unique(x, **ALL), m.unique(x, equal_nan=False, return_counts=True),
          m.unique(x2, axis=1, **ALL), m.unique(x2, return_inverse=True), m.unique_all(x),
          m.unique_counts(x), m.unique_inverse(x2), m.unique_values(x),
          m.unique_counts(x, size=3, fill_value=0))


@pytest.mark.parametrize("dtype", ["float32", "int8"])
def test_unique_without_size(dtype):
  x = dups(dtype, (12,))
  both(_unique_eager, x, np.concatenate([x.reshape(4, 3)[:, :2]] * 2, 1))


def test_unique_empty_and_0d():
  def fn(m, s, e, e2):
    out = []
    for x in (s, e, e2):
      out += [m.unique(x, **ALL), m.unique(x, size=2, fill_value=7.0, **ALL), m.unique(x, size=0)]
    out += [m.unique(e2, axis=0, **ALL), m.unique(e2, axis=1, return_counts=True),
            m.unique(e2, axis=1, size=2, fill_value=1.0)]
    return out
  s, e, e2 = np.float32(2.5), np.zeros(0, np.float32), np.zeros((3, 0), np.float32)
  both(fn, s, e, e2)
  check_all([
      ("empty with size, no fill_value", lambda: run("unique", e, size=2)),
      ("0-d axis=0", lambda: run("unique", s, axis=0)),
  ])


def test_unique_jit_needs_size_and_other_errors():
  x = dups("float32", (3, 4))
  check_all([
      ("jit no size", lambda: run_jit("unique", x)),
      ("jit unique_all no size", lambda: run_jit("unique_all", x)),
      ("jit traced size", lambda: check(arrax.jit(lambda a, s: anp.unique(a, size=s)),
                                        jax.jit(lambda a, s: jnp.unique(a, size=s)), x, 3)),
      ("jit traced fill_value", lambda: both_jit(
          lambda m, a, f: m.unique(a, size=8, fill_value=f), x, np.float32(-9))),
      ("vmap no size", lambda: check(arrax.vmap(anp.unique), jax.vmap(jnp.unique), x)),
      ("list", lambda: run("unique", Raw([1, 2, 2]))),
      ("float size", lambda: run("unique", x, size=2.5)),
      ("bad axis", lambda: run("unique", x, axis=2)),
      ("sorted=False", lambda: run("unique", dups("int32", (5,)), sorted=False)),
  ])


def test_unique_vmap_with_size():
  x = dups("float32", (3, 4))
  check(arrax.vmap(lambda a: anp.unique(a, size=3, return_counts=True)),
        jax.vmap(lambda a: jnp.unique(a, size=3, return_counts=True)), x)


def test_unique_namedtuples():
  x = dups("int8", (6,))
  for name in ("unique_all", "unique_counts", "unique_inverse"):
    a, j = getattr(anp, name)(x), getattr(jnp, name)(jnp.asarray(x))
    assert type(a).__name__ == type(j).__name__ and a._fields == j._fields, name


def test_unique_x64(x64):
  x = dups("float32", (10,)).astype(np.float64)
  both_jit(lambda m, a, b: (m.unique_all(a, size=5), m.unique(b, size=6)), x, np.arange(10) % 4)


# ---- isin --------------------------------------------------------------------------------------
METHODS = ["auto", "compare_all", "binary_search", "sort"]
ISIN_DTYPES = ["bool", "uint8", "bfloat16", "float32", "complex64"]


def _isin_all(method):
  def fn(m, *xs):
    out = []
    for i, (x, t) in enumerate(zip(xs[::2], xs[1::2])):
      out.append(m.isin(x, t, invert=bool(i % 2), assume_unique=bool(i % 3 == 1),
                        method=method))
    return out
  return fn


@pytest.mark.parametrize("method", METHODS)
def test_isin_under_jit(method):
  args = []
  for dt in ISIN_DTYPES:
    args += [dups(dt, (3, 4), seed=1), dups(dt, (5,), seed=3)]
  args += [dups("int8", (6,)), np.array([1.0, 0.5], np.float32)]   # mixed dtypes
  both_jit(_isin_all(method), *args)


def test_isin_eager_and_edge_cases():
  x, t = dups("float32", (3, 4), seed=1), dups("float32", (5,), seed=3)
  both(lambda m, a, b: [m.isin(a, b, method=k, invert=k == "sort") for k in METHODS], x, t)
  check_all([
      ("empty element", lambda: run("isin", x[:0], t)),
      ("empty test", lambda: run("isin", x, t[:0], invert=True)),
      ("empty sort", lambda: run("isin", x[:0], t, method="sort")),
      ("0-d element", lambda: run("isin", x[0, 0], t)),
      ("python scalar", lambda: run("isin", 2, dups("int32", (6,)))),
      ("list", lambda: run("isin", Raw([1, 2]), t)),
      ("bad method", lambda: run("isin", x, t, method="foo")),
  ])


# ---- union1d / intersect1d / setdiff1d / setxor1d ----------------------------------------------
SET_NAMES = ["union1d", "intersect1d", "setdiff1d", "setxor1d"]
PAIRS = [(dups("float32", (8,)), dups("float32", (5,), seed=3)),
         (dups("int8", (6,)), dups("float16", (2, 2), specials=False)),
         (dups("uint8", (6,)), dups("uint8", (4,), seed=1)),
         (dups("bool", (5,)), dups("bool", (3,), seed=1))]
UNIQUE_PAIRS = [(np.array([5, 1, 3, -2], np.int32), np.array([3, 7, -2], np.int32)),
                (np.array([2.5, -1.0, 0.5], np.float32), np.array([0.5, 4.0], np.float32))]


def _flat(pairs):
  return [v for p in pairs for v in p]


def _set_sized(name):
  def fn(m, *xs):
    f = getattr(m, name)
    out = []
    for i, (a, b) in enumerate(zip(xs[::2], xs[1::2])):
      if i == 0:
        out += [f(a, b, size=3), f(b, a, size=12, fill_value=-1)]
      else:
        out.append(f(a, b, size=5))
      if name == "intersect1d" and i < 2:
        out.append(f(a, b, return_indices=True, size=5, fill_value=0 if i else None))
    return out
  return fn


@pytest.mark.parametrize("name", SET_NAMES)
def test_set_functions_with_size_under_jit(name):
  both_jit(_set_sized(name), *_flat(PAIRS))


@pytest.mark.parametrize("name", SET_NAMES)
def test_set_functions_without_size(name):
  def fn(m, *xs):
    f = getattr(m, name)
    out = []
    for a, b in zip(xs[::2], xs[1::2]):
      out.append(f(a, b))
      if name == "intersect1d":
        out.append(f(a, b, return_indices=True))
    return out
  both(fn, *_flat(PAIRS[:2]))


@pytest.mark.parametrize("name", ["intersect1d", "setdiff1d", "setxor1d"])
def test_set_functions_assume_unique(name):
  def fn(m, *xs):
    f = getattr(m, name)
    out = []
    for a, b in zip(xs[::2], xs[1::2]):
      out += [f(a, b, True), f(a, b, True, size=5, fill_value=9)]
      if name == "intersect1d":
        out += [f(a, b, True, True), f(a, b, True, True, size=4)]
    return out
  both(fn, *_flat(UNIQUE_PAIRS))


def test_set_functions_edge_cases_and_errors():
  a, b = PAIRS[0]
  e = a[:0]
  run("union1d", a[0], b)   # 0-d

  def empties(m, a, e):
    out = []
    for name in SET_NAMES:
      f = getattr(m, name)
      out += [f(e, a), f(e, e, size=2, fill_value=0)]
    return out
  both(empties, a, e)
  check_all([(f"{n} jit no size", lambda n=n: run_jit(n, a, b)) for n in SET_NAMES] + [
      ("union1d list", lambda: run("union1d", Raw([1, 2]), b)),
      ("setdiff1d traced size", lambda: check(
          arrax.jit(lambda x, s: anp.setdiff1d(x, x, size=s)),
          jax.jit(lambda x, s: jnp.setdiff1d(x, x, size=s)), a, 2)),
      ("intersect1d array fill (static)", lambda: run("intersect1d", a, b, size=2,
                                                      fill_value=np.array(1))),
      ("union1d fill array", lambda: run("union1d", a, b, size=9, fill_value=np.int32(4))),
  ])


def test_set_functions_x64(x64):
  a = np.array([3, 1, 4, 1, 5, 9, 2, 6], np.int64)
  b = np.array([2.0, 7.0, 1.0, 8.0], np.float64)
  both(lambda m, a, b: [m.union1d(a, b), m.setdiff1d(a, b)], a, b)
  both_jit(lambda m, a, b: [m.intersect1d(a, b, size=5), m.setxor1d(a, b, size=5)], a, b)


# ---- isclose / allclose ------------------------------------------------------------------------
CLOSE_A = [1.0, 1.0 + 1e-6, 1.0, nan, inf, -inf, inf, 0.0, 1e-9, 100.0, nan, -0.0]
CLOSE_B = [1.0, 1.0, 1.1, nan, inf, inf, 1e30, 1e-9, 0.0, 100.001, 1.0, 0.0]


def _close_pair(dtype):
  dt = DTYPES[dtype]
  if dt.kind in "fc" or dt == BF16:
    return np.array(CLOSE_A).astype(dt), np.array(CLOSE_B).astype(dt)
  return dups(dtype, (12,)), dups(dtype, (12,), seed=1)


def _closeness(m, a, b):
  out = []
  for f in (m.isclose, m.allclose):
    out += [f(a, b), f(a, b, equal_nan=True), f(a, b, rtol=0.2, atol=1e-3), f(a, a),
            f(a, a, equal_nan=True), f(a.reshape(3, 4), b[:4]), f(a, 1), f(a[0], b[0]),
            f(a[:0], b[:0])]
  return out


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_isclose_allclose(dtype):
  a, b = _close_pair(dtype)
  check_all([("eager", lambda: both(_closeness, a, b)),
             ("jit", lambda: both_jit(_closeness, a, b))])


def test_isclose_mixed_and_bad():
  a = np.array(CLOSE_A, np.float32)
  check_all([
      ("mixed", lambda: both(lambda m, x, i: (
          m.isclose(i, x), m.isclose(x.astype(np.float16), x.astype(np.complex64)),
          m.isclose(x, x + 1e-3, rtol=np.float32(1e-2))), a, dups("int32", (12,)))),
      ("bad shapes", lambda: run("isclose", a, a[:5])),
      ("list", lambda: run("allclose", Raw([1.0]), a)),
      ("traced rtol", lambda: both_jit(lambda m, x, r: m.allclose(x, x + 0.01, rtol=r),
                                       np.ones(3, np.float32), 0.1)),
  ])


def test_isclose_x64(x64):
  a = np.array([1.0, 1.0 + 1e-12, nan], np.float64)
  both(lambda m, a: (m.isclose(a, np.ones(3)), m.isclose(a, np.ones(3), rtol=1e-14, atol=0),
                     m.allclose(a.astype(np.complex128), 1.0, equal_nan=True)), a)


# ---- array_equal / array_equiv -----------------------------------------------------------------
def test_array_equal_equiv():
  x = dups("float32", (3, 4))
  y = x.copy()
  y[1, 2] = 42.0
  i = dups("int32", (3, 4))

  def fn(m, x, y, i, t):
    out = []
    for f in (m.array_equal, m.array_equiv):
      out += [f(i, i + 0), f(x, x), f(x, y), f(i, i[:2]), f(t, i[0]),
              f(i[0], i[:1]), f(m.full(3, 2), 2), f([1, 2], [1, 2]), f(i, i.astype(float)),
              f(x[:0], x[:0]), f(x[0, 0], x[0, 0])]
    out += [m.array_equal(x, x, equal_nan=True), m.array_equal(i, i, equal_nan=True),
            m.array_equal(x.astype(complex), x.astype(complex), equal_nan=True)]
    return out
  check_all([("eager", lambda: both(fn, x, y, i, np.tile(i[:1], (3, 1)))),
             ("jit", lambda: both_jit(lambda m, a, b: (m.array_equal(a, b),
                                                       m.array_equiv(a, b[1])), i, i))])


def test_array_equiv_same_rank_mismatch_raises_like_jax():
  # JAX catches only the ValueError of rank-promotion; same-rank mismatches raise lax's TypeError.
  run("array_equiv", np.ones(3), np.ones(4))


# ---- isposinf / isneginf / isreal / iscomplex ----------------------------------------------------
def _inf_real(m, x):
  out = [m.isreal(x), m.iscomplex(x), m.isreal(x[0, 0]), m.iscomplex(x[:0])]
  if x.dtype.kind != "c":
    out += [m.isposinf(x), m.isneginf(x), m.isposinf(x[0, 0]), m.isneginf(x[:0])]
  return out


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_inf_and_real_tests(dtype):
  x = dups(dtype, (3, 4))
  check_all([("eager", lambda: both(_inf_real, x)), ("jit", lambda: both_jit(_inf_real, x))])


def test_inf_and_real_tests_scalars_and_errors():
  c = dups("complex64", (3,))
  check_all([
      ("python scalars", lambda: both(lambda m: (m.isposinf(inf), m.isneginf(3), m.isreal(1 + 2j),
                                                 m.iscomplex(2.0)))),
      ("isposinf complex", lambda: run("isposinf", c)),
      ("isneginf complex", lambda: run("isneginf", c)),
      ("isposinf out", lambda: run("isposinf", np.ones(2), out=np.ones(2))),
      ("isneginf list", lambda: run("isneginf", Raw([1.0]))),
      ("iscomplex list", lambda: run("iscomplex", Raw([1.0]))),
  ])


# ---- isdtype / iterable ------------------------------------------------------------------------
KINDS = ["bool", "signed integer", "unsigned integer", "integral", "real floating",
         "complex floating", "numeric", ("bool", "real floating"), np.float32, "float32",
         (np.int8, "complex floating")]
ALL_DTYPES = [np.bool_, np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint16, np.uint32,
              np.uint64, np.float16, BF16, np.float32, np.float64, np.complex64, np.complex128,
              ml_dtypes.float8_e4m3fn, ml_dtypes.float8_e5m2, ml_dtypes.int4, ml_dtypes.uint4]


def test_isdtype():
  for dt in ALL_DTYPES:
    for kind in KINDS:
      assert anp.isdtype(dt, kind) == jnp.isdtype(dt, kind), (dt, kind)
  check_all([
      ("unknown kind string", lambda: run("isdtype", np.int32, "floating")),
      ("bad kind type", lambda: run("isdtype", np.int32, 3)),
      ("string dtype", lambda: run("isdtype", "int8", "signed integer")),
  ])


def test_iterable():
  for v in [anp.arange(3), anp.array(1.0), [1, 2], 3, "ab", (), np.float32(1),
            anp.zeros((0, 2))]:
    j = jnp.asarray(v) if isinstance(v, arrax.Array) else v
    assert anp.iterable(v) == jnp.iterable(j), v


# ---- nan_to_num --------------------------------------------------------------------------------
def _nan_to_num(m, x):
  return (m.nan_to_num(x), m.nan_to_num(x, nan=-1.0, posinf=9.0, neginf=-9.0),
          m.nan_to_num(x, nan=1, posinf=2), m.nan_to_num(x[1, 1]), m.nan_to_num(x[:0]),
          m.nan_to_num(x, False))


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_nan_to_num(dtype):
  x = dups(dtype, (3, 4))
  check_all([("eager", lambda: both(_nan_to_num, x)), ("jit", lambda: both_jit(_nan_to_num, x))])


def test_nan_to_num_scalars_grad_vmap():
  x = np.array([nan, inf, -inf, 1.5, -0.0], np.float32)
  fa = lambda v: anp.nan_to_num(v * 2.0, nan=1.0).sum()
  fj = lambda v: jnp.nan_to_num(v * 2.0, nan=1.0).sum()
  check_all([
      ("scalars", lambda: both(lambda m, x: (m.nan_to_num(nan), m.nan_to_num(3),
                                             m.nan_to_num(x, nan=np.float32(7))), x)),
      ("list", lambda: run("nan_to_num", Raw([1.0]))),
      ("grad", lambda: check(arrax.grad(fa), jax.grad(fj), x)),
      ("jit grad", lambda: check(arrax.jit(arrax.grad(fa)), jax.jit(jax.grad(fj)), x)),
      ("vmap posinf", lambda: check(arrax.vmap(lambda v, p: anp.nan_to_num(v, posinf=p)),
                                    jax.vmap(lambda v, p: jnp.nan_to_num(v, posinf=p)),
                                    x, np.arange(5, dtype=np.float32))),
      ("grad complex", lambda: check(
          arrax.grad(lambda v: anp.nan_to_num(v * (1 + 1j)).real.sum()),
          jax.grad(lambda v: jnp.nan_to_num(v * (1 + 1j)).real.sum()), x)),
  ])


def test_nan_to_num_x64(x64):
  x = np.array([nan, inf, -inf, 1.5], np.float64)
  both(lambda m, x: (m.nan_to_num(x), m.nan_to_num(x.astype(np.complex128) * 1j),
                     m.nan_to_num(np.arange(3))), x)


# ---- spacing -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_spacing(dtype):
  x = dups(dtype, (3, 4))
  if DTYPES[dtype].kind in "f" or DTYPES[dtype] == BF16:
    x = np.concatenate([x.ravel(), np.array([1e-40, -1e-40, 6.0e4, 1e38, -7.0])]).astype(x.dtype)
  fn = lambda m, x: (m.spacing(x), m.spacing(x.ravel()[1]))
  check_all([("eager", lambda: both(fn, x)), ("jit", lambda: both_jit(fn, x))])


def test_spacing_scalars_and_x64(x64):
  check_all([("scalars", lambda: both(lambda m: (m.spacing(1.0), m.spacing(3)))),
             ("f64", lambda: run("spacing", np.array([0.0, -1.0, 1e300, nan]))),
             ("list", lambda: run("spacing", Raw([1.0])))])


# ---- jaxprs ------------------------------------------------------------------------------------
JAXPR_CASES = [
    ("unique size", lambda m, x: m.unique(x, size=4)),
    ("unique all flags size", lambda m, x: m.unique(x, return_index=True, return_inverse=True,
                                                    return_counts=True, size=4, fill_value=0)),
    ("unique_all", lambda m, x: m.unique_all(x, size=3)),
    ("isin", lambda m, x: m.isin(x, x[:3])),
    ("isin sort", lambda m, x: m.isin(x, x[:3], method="sort")),
    ("isin binary_search", lambda m, x: m.isin(x, x[:3], method="binary_search")),
    ("union1d", lambda m, x: m.union1d(x, x[:2], size=5)),
    ("intersect1d", lambda m, x: m.intersect1d(x, x[::2], size=3, return_indices=True)),
    ("setdiff1d", lambda m, x: m.setdiff1d(x, x[::2], size=3)),
    ("setxor1d", lambda m, x: m.setxor1d(x, x[::2], size=3)),
    ("isclose", lambda m, x: m.isclose(x, 1.0)),
    ("allclose", lambda m, x: m.allclose(x, x, equal_nan=True)),
    ("array_equal", lambda m, x: m.array_equal(x, x, equal_nan=True)),
    ("isposinf", lambda m, x: m.isposinf(x)),
    ("iscomplex", lambda m, x: m.iscomplex(x)),
    ("nan_to_num", lambda m, x: m.nan_to_num(x, posinf=1.0)),
    ("spacing", lambda m, x: m.spacing(x)),
]


@pytest.mark.parametrize("case", JAXPR_CASES, ids=lambda c: c[0])
def test_jaxpr_matches_jax(case):
  _, fn = case
  x = dups("float32", (8,))
  want = str(jax.make_jaxpr(lambda v: fn(jnp, v))(x))
  got = str(arrax.make_jaxpr(lambda v: fn(anp, v))(x))
  assert got == want, f"arrax:\n{got}\njax:\n{want}"
