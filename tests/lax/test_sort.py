"""Differential tests of arrax.lax.sort, sort_key_val and top_k against jax.lax."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import functools  # noqa: E402
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax as jlax  # noqa: E402

import arrax  # noqa: E402
import arrax.numpy as anp  # noqa: E402
from arrax import lax  # noqa: E402
from arrax._src.array import device_put_value  # noqa: E402
import oracle  # noqa: E402
from oracle import BF16, assert_same, make_with, rand  # noqa: E402

ALL = [np.bool_, np.int8, np.int32, np.uint8, np.uint32, np.float16, BF16, np.float32,
       np.complex64]
FLOATS = [np.float16, BF16, np.float32]

# Cases are pairs (arrax function, JAX function) on arrays made from the NumPy arguments; results
# are compared exactly, sign bits (of zeros and NaNs) included.
check = functools.partial(oracle.check, convert="arrays", exact=True, signbits="all",
                          strict_tree=True)
check_raises = functools.partial(oracle.check_raises, convert="arrays")
# Small random values (halves: exact in every dtype) with repeats, so ties occur.
tie_values = functools.partial(rand, ints=(-4, 5), step=0.5)


# ---- sort -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
def test_sort_dtypes(dtype):
  x = tie_values((4, 7), dtype, seed=1)
  check(lambda x: lax.sort(x), lambda x: jlax.sort(x), x)


@pytest.mark.parametrize("shape,dim", [((1,), 0), ((9,), 0), ((9,), -1), ((3, 4), 0),
                                       ((3, 4), 1), ((2, 3, 4), 1), ((2, 3, 4), -1),
                                       ((0,), 0), ((3, 0), 1), ((0, 3), 1)], ids=str)
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_sort_shapes(shape, dim, mode):
  check(lambda x: lax.sort(x, dimension=dim), lambda x: jlax.sort(x, dimension=dim),
        tie_values(shape, np.float32, seed=2), eager=mode == "eager", jit=mode == "jit")


SPECIAL = [np.nan, -np.nan, 1.0, -0.0, 0.0, np.inf, -np.inf, -1.0, 0.0, -0.0, np.nan, 2.0]


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_sort_nan_inf_signed_zero(dtype, mode):
  x = np.array(SPECIAL, dtype)
  idx = np.arange(len(SPECIAL), dtype=np.int32)
  check(lambda x: lax.sort(x), lambda x: jlax.sort(x), x, eager=mode == "eager", jit=mode == "jit")
  # The permutation shows that -0.0 and 0.0 tie (stable order kept) and NaNs go last.
  check(lambda k, v: lax.sort_key_val(k, v), lambda k, v: jlax.sort_key_val(k, v), x, idx,
        eager=mode == "eager", jit=mode == "jit")


def test_sort_complex_lexicographic_with_nan():
  x = np.array([1 + 2j, 1 + 3j, 0 + 5j, complex(np.nan, 0), 1 - 1j, complex(0, np.nan),
                -0.0 + 0j, 0 - 0j, complex(1, np.inf)], np.complex64)
  idx = np.arange(len(x), dtype=np.int32)
  check(lambda k, v: lax.sort_key_val(k, v), lambda k, v: jlax.sort_key_val(k, v), x, idx)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.uint32, np.int32])
def test_sort_integer_extremes(dtype):
  info = np.iinfo(dtype)
  x = np.array([info.max, 0, info.min, 1, info.max, info.min], dtype)
  check(lambda x: lax.sort(x), lambda x: jlax.sort(x), x)


@pytest.mark.parametrize("num_keys", [1, 2, 3])
@pytest.mark.parametrize("is_stable", [True, False])
def test_sort_multiple_operands(num_keys, is_stable):
  a = tie_values((3, 8), np.int32, seed=3, ints=(0, 2))
  b = tie_values((3, 8), np.float32, seed=4, ints=(-1, 1))
  c = np.tile(np.arange(8, dtype=np.uint8), (3, 1))
  kw = dict(dimension=1, is_stable=is_stable, num_keys=num_keys)
  if not is_stable and num_keys < 3:
    # Unstable order among equal keys is unspecified: compare only the keys.
    out = lax.sort([anp.asarray(v) for v in (a, b, c)], **kw)
    ref = jlax.sort([jnp.asarray(v) for v in (a, b, c)], **kw)
    for o, r in list(zip(out, ref))[:num_keys]:
      assert_same(o, r, exact=True, signbits="all")
    return
  check(lambda a, b, c: lax.sort((a, b, c), **kw), lambda a, b, c: jlax.sort((a, b, c), **kw), a, b,
        c)


def test_sort_list_returns_tuple_and_jit():
  a, b = tie_values((5,), np.float32, seed=5), tie_values((5,), np.bool_, seed=6)
  check(lambda a, b: lax.sort([a, b], num_keys=2), lambda a, b: jlax.sort([a, b], num_keys=2), a, b)
  check(lambda a, b: lax.sort([a, b]), lambda a, b: jlax.sort([a, b]), a, b, eager=False, jit=True)
  out = lax.sort([anp.asarray(a)])
  assert isinstance(out, tuple) and len(out) == 1


def test_sort_key_val_multi_dim():
  k = tie_values((3, 5), np.float32, seed=7)
  v = tie_values((3, 5), np.complex64, seed=8)
  for dim in (0, 1, -1):
    check(lambda k, v: lax.sort_key_val(k, v, dimension=dim),
          lambda k, v: jlax.sort_key_val(k, v, dimension=dim), k, v)


def test_sort_numpy_inputs():
  x = tie_values((6,), np.float32, seed=9)
  assert_same(lax.sort(x), jlax.sort(x), exact=True, signbits="all")


def test_sort_errors():
  x, y = tie_values((3,), np.float32), tie_values((2,), np.float32)
  check_raises(lambda x, y: lax.sort((x, y)), lambda x, y: jlax.sort((x, y)), x, y)
  check_raises(lambda x, y: lax.sort((x, y)), lambda x, y: jlax.sort((x, y)), x, y, jit=True)
  check_raises(lambda x, y: lax.sort_key_val(x, y), lambda x, y: jlax.sort_key_val(x, y), x, y)
  check_raises(lambda x: lax.sort((x, x), num_keys=3), lambda x: jlax.sort((x, x), num_keys=3), x)
  check_raises(lambda x: lax.sort((x, x), num_keys=0), lambda x: jlax.sort((x, x), num_keys=0), x)
  check_raises(lambda x: lax.sort(x, num_keys=2), lambda x: jlax.sort(x, num_keys=2), x)
  check_raises(lambda x: lax.sort(x, dimension=1), lambda x: jlax.sort(x, dimension=1), x)
  check_raises(lambda x: lax.sort(x), lambda x: jlax.sort(x), np.float32(1))
  check_raises(lambda x: lax.sort([]), lambda x: jlax.sort([]), x)


# ---- top_k ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL[:-1], ids=lambda d: np.dtype(d).name)
def test_top_k_dtypes(dtype):
  x = tie_values((3, 8), dtype, seed=10)   # ties: the lower index must come first
  check(lambda x: lax.top_k(x, 4), lambda x: jlax.top_k(x, 4), x)


@pytest.mark.parametrize("shape,k,axis", [((5,), 0, -1), ((5,), 5, -1), ((5,), 2, 0),
                                          ((3, 4), 2, 0), ((3, 4), 3, 1), ((2, 3, 4), 2, 1),
                                          ((2, 3, 4), 1, -1), ((3, 0), 0, 1), ((0, 3), 2, 1)],
                         ids=str)
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_top_k_shapes(shape, k, axis, mode):
  check(lambda x: lax.top_k(x, k, axis=axis), lambda x: jlax.top_k(x, k, axis=axis),
        tie_values(shape, np.float32, seed=11), eager=mode == "eager", jit=mode == "jit")


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_top_k_nan_inf_signed_zero(dtype):
  x = np.array(SPECIAL, dtype)
  check(lambda x: lax.top_k(x, len(SPECIAL)), lambda x: jlax.top_k(x, len(SPECIAL)), x)
  check(lambda x: lax.top_k(x, 3), lambda x: jlax.top_k(x, 3), x, eager=False, jit=True)


def test_top_k_errors():
  x = tie_values((3,), np.float32)
  check_raises(lambda x: lax.top_k(x, 4), lambda x: jlax.top_k(x, 4), x)
  check_raises(lambda x: lax.top_k(x, -1), lambda x: jlax.top_k(x, -1), x)
  check_raises(lambda x: lax.top_k(x, 1, axis=1), lambda x: jlax.top_k(x, 1, axis=1), x)
  check_raises(lambda x: lax.top_k(x, 0), lambda x: jlax.top_k(x, 0), np.float32(1))
  check_raises(lambda x: lax.top_k(x, 1), lambda x: jlax.top_k(x, 1),
               tie_values((3,), np.complex64))
  check_raises(lambda x: lax.top_k(x, 4), lambda x: jlax.top_k(x, 4), x, jit=True)


@pytest.mark.parametrize("fn", ["top_k", "sort"])
def test_weak_type_propagates(fn):
  # JAX keeps the operand's weak type on the results (top_k's int32 indices included).
  ops = {"top_k": lambda L: lambda x: L.top_k(x, 2), "sort": lambda L: lambda x: L.sort(x)}[fn]
  weak = device_put_value(np.ones(3, np.float32), weak_type=True)
  ours = arrax.make_jaxpr(ops(lax))(weak).out_avals
  theirs = jax.make_jaxpr(lambda s: ops(jlax)(jnp.broadcast_to(s, (3,))))(1.0).out_avals
  assert [a.weak_type for a in ours] == [a.weak_type for a in theirs]
  assert [a.dtype for a in ours] == [a.dtype for a in theirs]


# ---- jaxprs ---------------------------------------------------------------------------------
JAXPR_CASES = [
    ("sort", lambda L: lambda x, i: L.sort(x, dimension=1)),
    ("sort0", lambda L: lambda x, i: L.sort(x, dimension=0, is_stable=False)),
    ("sort_key_val", lambda L: lambda x, i: L.sort_key_val(x, i, dimension=1)),
    ("sort_multi", lambda L: lambda x, i: L.sort((x, i), num_keys=2)),
    ("top_k", lambda L: lambda x, i: L.top_k(x, 2)),
    ("top_k_axis", lambda L: lambda x, i: L.top_k(x, 1, axis=0)),
]


@pytest.mark.parametrize("name,build", JAXPR_CASES, ids=[c[0] for c in JAXPR_CASES])
def test_jaxpr_matches(name, build):
  x, i = np.ones((2, 3), np.float32), np.ones((2, 3), np.int32)
  oracle.check_jaxpr(build, x, i, build=make_with("lax"), convert="arrays")
