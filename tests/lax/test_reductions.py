"""Differential tests of arrax.lax reductions, argmin/argmax and cumulative ops against jax.lax."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import functools  # noqa: E402
import warnings  # noqa: E402

import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax as jlax  # noqa: E402

import arrax  # noqa: E402
import arrax.numpy as anp  # noqa: E402
from arrax import lax  # noqa: E402
import oracle  # noqa: E402
from oracle import BF16, both, make_with, named, rand  # noqa: E402

ALL = [np.bool_, np.int8, np.int32, np.uint8, np.uint32, np.float16, BF16, np.float32,
       np.complex64]
NUMBERS = ALL[1:]
INTS = [np.int8, np.int32, np.uint8, np.uint32]
FLOATS = [np.float16, BF16, np.float32]


def _tol(dtype):
  """rtol = atol of inexact results: 1e-5 from 32 bits, 1e-2 below."""
  return 1e-5 if dtype.itemsize >= 4 else 1e-2


# Cases are pairs (arrax function, JAX function) on arrays made from the NumPy arguments.
check = functools.partial(oracle.check, convert="arrays", tol=_tol)
check_raises = functools.partial(oracle.check_raises, convert="arrays")
# Small random values (halves: exact in every dtype) with repeats, so ties occur.
tie_values = functools.partial(rand, ints=(-4, 5), step=0.5)

def ident(v):
  """Readable test ids for dtypes."""
  return np.dtype(v).name if isinstance(v, type) or isinstance(v, np.dtype) else str(v)


# ---- monoid reductions ----------------------------------------------------------------------
REDUCERS = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min", "reduce_and",
            "reduce_or", "reduce_xor"]


def _accepts(name, dtype):
  dtype = np.dtype(dtype)
  if name in ("reduce_sum", "reduce_prod"):
    return dtype != np.bool_
  if name in ("reduce_and", "reduce_or", "reduce_xor"):
    return dtype == np.bool_ or dtype.kind in "iu"
  return True


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", REDUCERS)
def test_reduce_dtypes(name, dtype):
  f, g = both(name, named("lax"))
  x = tie_values((3, 4), dtype, seed=1, ints=(-2, 3))
  if _accepts(name, dtype):
    check(lambda x: f(x, (1,)), lambda x: g(x, (1,)), x)
  else:
    check_raises(lambda x: f(x, (1,)), lambda x: g(x, (1,)), x)


SHAPES_AXES = [((), ()), ((5,), (0,)), ((3, 4), (0,)), ((3, 4), (1,)), ((3, 4), (0, 1)),
               ((3, 4), (1, 0)), ((2, 3, 4), (0, 2)), ((2, 3, 4), ()), ((2, 3, 4), (0, 1, 2)),
               ((0,), (0,)), ((0, 3), (0,)), ((3, 0), (1,)), ((2, 0, 3), (0, 2)),
               ((2, 0, 3), (0,))]


@pytest.mark.parametrize("shape,axes", SHAPES_AXES, ids=str)
@pytest.mark.parametrize("name,dtype", [("reduce_sum", np.float32), ("reduce_prod", np.int32),
                                        ("reduce_max", np.float32), ("reduce_min", np.uint8),
                                        ("reduce_and", np.bool_), ("reduce_or", np.int8),
                                        ("reduce_xor", np.uint32)], ids=ident)
def test_reduce_shapes_axes(name, dtype, shape, axes):
  f, g = both(name, named("lax"))
  mode = "jit" if len(shape) % 2 else "eager"
  check(lambda x: f(x, axes), lambda x: g(x, axes), tie_values(shape, dtype, seed=2),
        eager=mode == "eager", jit=mode == "jit")


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name", ["reduce_max", "reduce_min", "reduce_sum", "reduce_prod"])
def test_reduce_special_floats(name, mode):
  f, g = both(name, named("lax"))
  x = np.array([[1.0, np.nan, 3.0, -1.0],
                [np.inf, -np.inf, 0.0, 2.0],
                [-0.0, 0.0, -0.0, -0.0],
                [-np.inf, -np.inf, 5.0, np.nan],
                [np.inf, 1.0, 2.0, 3.0]], np.float32)
  check(lambda x: f(x, (1,)), lambda x: g(x, (1,)), x, eager=mode == "eager", jit=mode == "jit")
  check(lambda x: f(x, (0,)), lambda x: g(x, (0,)), x, eager=mode == "eager", jit=mode == "jit")


def test_reduce_max_min_negative_zero_sign():
  x = np.array([-0.0, -0.0], np.float32)
  out = np.asarray(lax.reduce_max(anp.asarray(x), (0,)))
  ref = np.asarray(jlax.reduce_max(jnp.asarray(x), (0,)))
  assert np.signbit(out) == np.signbit(ref)


@pytest.mark.parametrize("name", ["reduce_max", "reduce_min"])
def test_reduce_complex_lexicographic(name):
  f, g = both(name, named("lax"))
  x = np.array([[1 + 2j, 1 + 3j, 0 + 5j], [2 - 1j, 2 - 3j, -1 + 9j]], np.complex64)
  check(lambda x: f(x, (1,)), lambda x: g(x, (1,)), x)
  check(lambda x: f(x, (0, 1)), lambda x: g(x, (0, 1)), x, eager=False, jit=True)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.uint32, np.int32])
def test_reduce_integer_extremes(dtype):
  info = np.iinfo(dtype)
  x = np.array([[info.min, info.max, 0], [info.max, info.max, 1]], dtype)
  for name in REDUCERS:
    f, g = both(name, named("lax"))
    check(lambda x: f(x, (1,)), lambda x: g(x, (1,)), x)


@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_and", "reduce_prod"])
def test_reduce_python_scalar_weak_type(name):
  f, g = both(name, named("lax"))
  for v in (True, 3, 2.5):
    check(f, g, v, (), convert=None)


@pytest.mark.parametrize("axes", [(0, 0), (2,), (-1,)], ids=str)
@pytest.mark.parametrize("name", ["reduce_sum", "reduce_max", "reduce_min", "reduce_prod"])
def test_reduce_bad_axes(name, axes):
  f, g = both(name, named("lax"))
  check_raises(lambda x: f(x, axes), lambda x: g(x, axes), tie_values((2, 3), np.float32))


@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_logical_reduce_bad_axes(mode):
  f, g = both("reduce_and", named("lax"))
  check_raises(lambda x: f(x, (2,)), lambda x: g(x, (2,)), tie_values((2, 3), np.bool_),
               jit=mode == "jit")
  check_raises(lambda x: f(x, (0, 0)), lambda x: g(x, (0, 0)), tie_values((2, 3), np.bool_),
               jit=mode == "jit")
  check_raises(lambda x: f(x, (-1,)), lambda x: g(x, (-1,)), tie_values((2, 3), np.bool_),
               jit=mode == "jit")


# ---- argmin / argmax -------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL[:-1], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argminmax_dtypes(name, dtype):
  f, g = both(name, named("lax"))
  x = tie_values((4, 5), dtype, seed=3, ints=(-2, 3))   # many ties: first index must win
  check(lambda x: f(x, 1, np.int32), lambda x: g(x, 1, np.int32), x)


@pytest.mark.parametrize("shape,axis", [((1,), 0), ((7,), 0), ((3, 4), 0), ((2, 3, 4), 1),
                                        ((2, 3, 4), 2), ((3, 0), 0), ((0, 3), 1)], ids=str)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argminmax_shapes(name, shape, axis):
  f, g = both(name, named("lax"))
  mode = "jit" if len(shape) == 3 else "eager"
  check(lambda x: f(x, axis, np.int32), lambda x: g(x, axis, np.int32),
        tie_values(shape, np.float32, seed=4, ints=(-1, 2)), eager=mode == "eager",
        jit=mode == "jit")


NAN_ROWS = [
    [1.0, np.nan, 3.0, np.nan],
    [np.nan, np.nan, np.nan, np.nan],
    [-np.inf, -np.inf, np.inf, np.inf],
    [2.0, 2.0, 2.0, np.nan],
    [-0.0, 0.0, 0.0, -0.0],
    [np.inf, np.nan, -np.inf, 1.0],
]


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argminmax_nan_inf_ties(name, dtype, mode):
  f, g = both(name, named("lax"))
  x = np.array(NAN_ROWS, dtype)
  check(lambda x: f(x, 1, np.int32), lambda x: g(x, 1, np.int32), x, eager=mode == "eager",
        jit=mode == "jit")
  check(lambda x: f(x, 0, np.int32), lambda x: g(x, 0, np.int32), x, eager=mode == "eager",
        jit=mode == "jit")


@pytest.mark.parametrize("index_dtype", [np.int8, np.uint8, np.int16, np.int32, np.uint32,
                                         "int32", jnp.int32])
def test_argmax_index_dtypes(index_dtype):
  f, g = both("argmax", named("lax"))
  x = tie_values((3, 40), np.float32, seed=5, ints=(-40, 40))
  check(lambda x: f(x, 1, index_dtype), lambda x: g(x, 1, index_dtype), x)


def test_argmax_index_dtype_int64_truncated():
  f, g = both("argmax", named("lax"))
  x = tie_values((3, 4), np.float32)
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    check(lambda x: f(x, 1, np.int64), lambda x: g(x, 1, np.int64), x)
  with pytest.warns(UserWarning):
    f(anp.asarray(x), 1, np.int64)


@pytest.mark.parametrize("name", ["argmax", "argmin"])
def test_argminmax_errors(name):
  f, g = both(name, named("lax"))
  x = tie_values((3, 4), np.float32)
  check_raises(lambda x: f(x, 2, np.int32), lambda x: g(x, 2, np.int32), x)
  check_raises(lambda x: f(x, -1, np.int32), lambda x: g(x, -1, np.int32), x)
  check_raises(lambda x: f(x, 1, np.float32), lambda x: g(x, 1, np.float32), x)
  check_raises(lambda x: f(x, 1, np.bool_), lambda x: g(x, 1, np.bool_), x)
  check_raises(lambda x: f(x, 0, np.int32), lambda x: g(x, 0, np.int32),
               tie_values((0, 4), np.float32))
  check_raises(lambda x: f(x, 0, np.int32), lambda x: g(x, 0, np.int32), np.float32(1))
  for mode in ("eager", "jit"):   # complex fails when lowered, as in JAX
    check_raises(lambda x: f(x, 0, np.int32), lambda x: g(x, 0, np.int32),
                 tie_values((3,), np.complex64), jit=mode == "jit")


def test_argmax_weak_type_stripped():
  f = lambda x: lax.argmax(lax.add(x, 1.0), 0, np.int32)  # noqa: E731
  jaxpr = arrax.make_jaxpr(f)(anp.asarray(np.ones(3, np.float32)))
  assert not jaxpr.out_avals[0].weak_type
  assert lax.argmax(anp.asarray(np.ones(3, np.float32)), 0, np.int32).weak_type is False


# ---- cumulative reductions -------------------------------------------------------------------
CUMULATIVE = ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"]


@pytest.mark.parametrize("name,dtype", [(n, d) for n in CUMULATIVE for d in NUMBERS
                                        if n != "cumlogsumexp" or d not in INTS], ids=ident)
def test_cumulative_dtypes(name, dtype):
  f, g = both(name, named("lax"))
  x = tie_values((3, 5), dtype, seed=6, ints=(-2, 3))
  reverse = np.dtype(dtype).itemsize % 2 == 1 or np.dtype(dtype) == np.int32
  tol = 2e-2 if np.dtype(dtype).itemsize <= 2 else _tol
  check(lambda x: f(x, 1, reverse), lambda x: g(x, 1, reverse), x, tol=tol)


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("shape,axis", [((0,), 0), ((1,), 0), ((6,), 0), ((3, 4), 0),
                                        ((3, 4), 1), ((2, 0, 3), 1), ((2, 0, 3), 2),
                                        ((2, 3, 4), 2)], ids=str)
@pytest.mark.parametrize("name,dtype", [("cumsum", np.int32), ("cummax", np.float32),
                                        ("cumlogsumexp", np.float32)], ids=ident)
def test_cumulative_shapes(name, dtype, shape, axis, reverse):
  f, g = both(name, named("lax"))
  mode = "jit" if reverse else "eager"
  check(lambda x: f(x, axis, reverse), lambda x: g(x, axis, reverse),
        tie_values(shape, dtype, seed=7), eager=mode == "eager", jit=mode == "jit")


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("name", CUMULATIVE)
def test_cumulative_special_floats(name, mode):
  f, g = both(name, named("lax"))
  x = np.array([[1.0, np.nan, 3.0, -1.0, 2.0],
                [-np.inf, -np.inf, 0.0, np.inf, 1.0],
                [-0.0, 0.0, -0.0, 5.0, -np.inf]], np.float32)
  check(lambda x: f(x, 1), lambda x: g(x, 1), x, eager=mode == "eager", jit=mode == "jit")
  check(lambda x: f(x, 1, True), lambda x: g(x, 1, True), x, eager=mode == "eager",
        jit=mode == "jit")


def test_cumsum_large_float():
  f, g = both("cumsum", named("lax"))
  x = np.random.default_rng(8).standard_normal((4, 300)).astype(np.float32)
  check(lambda x: f(x, 1), lambda x: g(x, 1), x, tol=1e-4)
  check(lambda x: f(x, 1, True), lambda x: g(x, 1, True), x, tol=1e-4)


def test_cumsum_integer_wraparound():
  f, g = both("cumsum", named("lax"))
  check(lambda x: f(x), lambda x: g(x), np.array([100, 100, 100, -128], np.int8))
  check(lambda x: f(x), lambda x: g(x), np.array([200, 100, 7], np.uint8))


@pytest.mark.parametrize("name", CUMULATIVE)
def test_cumulative_errors(name):
  f, g = both(name, named("lax"))
  x = tie_values((3, 4), np.float32)
  check_raises(lambda x: f(x, -1), lambda x: g(x, -1), x)
  check_raises(lambda x: f(x, 2), lambda x: g(x, 2), x)
  check_raises(lambda x: f(x, 0), lambda x: g(x, 0), tie_values((3,), np.bool_))
  check_raises(lambda x: f(x, 0), lambda x: g(x, 0), np.float32(2.0))


def test_cumlogsumexp_integer_rejected():
  # JAX accepts integers when tracing and then fails to lower; arrax fails when lowering too.
  x = anp.asarray(np.arange(3, dtype=np.int32))
  assert arrax.make_jaxpr(lambda x: lax.cumlogsumexp(x))(x).out_avals[0].dtype == np.int32
  with pytest.raises(TypeError):
    lax.cumlogsumexp(x)


# ---- the general reduce ----------------------------------------------------------------------
@pytest.mark.parametrize("op,init", [("add", 0.0), ("mul", 1.0), ("max", -np.inf),
                                     ("min", np.inf)])
def test_reduce_monoid_values(op, init):
  x = tie_values((3, 4), np.float32, seed=9)
  check(lambda x: lax.reduce(x, np.float32(init), getattr(lax, op), (1,)),
        lambda x: jlax.reduce(x, np.float32(init), getattr(jlax, op), (1,)), x)


@pytest.mark.parametrize("op,init", [("bitwise_and", -1), ("bitwise_or", 0),
                                     ("bitwise_xor", 0), ("add", 0)])
def test_reduce_monoid_ints(op, init):
  x = tie_values((3, 4), np.int32, seed=10)
  check(lambda x: lax.reduce(x, init, getattr(lax, op), (0,)),
        lambda x: jlax.reduce(x, init, getattr(jlax, op), (0,)), x)


def test_reduce_variadic_custom():
  def argmax_like(lib):
    def comp(a, b):
      take = lib.gt(b[0], a[0])
      return lib.select(take, b[0], a[0]), lib.select(take, b[1], a[1])
    return comp

  x = tie_values((3, 5), np.float32, seed=11)
  idx = np.tile(np.arange(5, dtype=np.int32), (3, 1))
  for mode in ("eager", "jit"):
    check(lambda x, i: lax.reduce((x, i), (np.float32(-np.inf), np.int32(0)),
                                  argmax_like(lax), (1,)),
          lambda x, i: jlax.reduce((x, i), (np.float32(-np.inf), np.int32(0)),
                                   argmax_like(jlax), (1,)),
          x, idx, eager=mode == "eager", jit=mode == "jit")


def test_reduce_non_monoid_init():
  # add with a non-zero init is not a monoid reduction: it goes through the general reduce.
  x = tie_values((4,), np.float32, seed=12)
  check(lambda x: lax.reduce(x, np.float32(0), lambda a, b: lax.add(a, b), (0,)),
        lambda x: jlax.reduce(x, np.float32(0), lambda a, b: jlax.add(a, b), (0,)), x)


def test_reduce_errors():
  x = tie_values((3, 4), np.float32)
  check_raises(lambda x: lax.reduce((x, x), (0.0,), lax.add, (0,)),
               lambda x: jlax.reduce((x, x), (0.0,), jlax.add, (0,)), x)
  check_raises(lambda x: lax.reduce(x, np.int32(0), lambda a, b: lax.add(a, b), (0,)),
               lambda x: jlax.reduce(x, np.int32(0), lambda a, b: jlax.add(a, b), (0,)), x)


# ---- jaxprs -----------------------------------------------------------------------------------
JAXPR_CASES = [
    ("sum", lambda L: lambda x: L.reduce_sum(x, (0,)), np.float32),
    ("sum2", lambda L: lambda x: L.reduce_sum(x, (0, 1)), np.float32),
    ("max", lambda L: lambda x: L.reduce_max(x, (0, 1)), np.float32),
    ("prod", lambda L: lambda x: L.reduce_prod(x, (0,)), np.float32),
    ("min", lambda L: lambda x: L.reduce_min(x, (1,)), np.float32),
    ("and", lambda L: lambda x: L.reduce_and(L.gt(x, 0.0), (1,)), np.float32),
    ("or", lambda L: lambda x: L.reduce_or(L.gt(x, 0.0), (1,)), np.float32),
    ("xor", lambda L: lambda x: L.reduce_xor(x, (1,)), np.int32),
    ("argmax", lambda L: lambda x: L.argmax(x, 1, np.int32), np.float32),
    ("argmin", lambda L: lambda x: L.argmin(x, 0, np.int32), np.float32),
    ("cumsum", lambda L: lambda x: L.cumsum(x, 1), np.float32),
    ("cumprod", lambda L: lambda x: L.cumprod(x, 1, reverse=True), np.float32),
    ("cummax", lambda L: lambda x: L.cummax(x), np.float32),
    ("cummin", lambda L: lambda x: L.cummin(x, 1), np.int32),
    ("cumlogsumexp", lambda L: lambda x: L.cumlogsumexp(x, 0), np.float32),
    ("reduce_monoid", lambda L: lambda x: L.reduce(x, 0.0, L.add, (0,)), np.float32),
    ("reduce_max_monoid", lambda L: lambda x: L.reduce(x, -np.inf, L.max, (1,)), np.float32),
]


@pytest.mark.parametrize("name,build,dtype", JAXPR_CASES, ids=[c[0] for c in JAXPR_CASES])
def test_jaxpr_matches(name, build, dtype):
  oracle.check_jaxpr(build, np.ones((2, 3), dtype), build=make_with("lax"), convert="arrays")


# ---- 64-bit dtypes ----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float64, np.int64, np.uint64, np.complex128],
                         ids=lambda d: np.dtype(d).name)
def test_x64_dtypes(x64, dtype):
  x = tie_values((3, 4), dtype, seed=13)
  for name, args in [("reduce_max", ((1,),)), ("reduce_sum", ((0, 1),)), ("cumsum", (1,)),
                     ("cummin", (0, True))]:
    f, g = both(name, named("lax"))
    check(lambda x: f(x, *args), lambda x: g(x, *args), x)
  if np.dtype(dtype).kind != "c":
    f, g = both("argmin", named("lax"))
    check(lambda x: f(x, 1, np.int64), lambda x: g(x, 1, np.int64), x)
