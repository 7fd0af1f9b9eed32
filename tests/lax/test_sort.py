"""Differential tests of arrax.lax.sort, sort_key_val and top_k against jax.lax."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax as jlax  # noqa: E402

import arrax  # noqa: E402
from arrax import lax  # noqa: E402
from arrax._src.array import device_put_value  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)
ALL = [np.bool_, np.int8, np.int32, np.uint8, np.uint32, np.float16, BF16, np.float32,
       np.complex64]
FLOATS = [np.float16, BF16, np.float32]


def make(shape, dtype, seed=0, lo=-4, hi=5):
  """Small random values of `dtype` (with repeats, so ties occur)."""
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind == "u":
    return rng.integers(0, hi, shape).astype(dtype)
  if dtype.kind == "i":
    return rng.integers(lo, hi, shape).astype(dtype)
  vals = rng.integers(lo, hi, shape) / 2
  if dtype.kind == "c":
    return (vals + 1j * rng.integers(lo, hi, shape) / 2).astype(dtype)
  return vals.astype(dtype)


def to_arrax(x):
  return device_put_value(np.asarray(x))


def assert_same(actual, expected):
  """Shape, dtype, weak type and exact values, including the sign of zeros and NaN places."""
  a, e = np.asarray(actual), np.asarray(expected)
  assert a.shape == e.shape, (a.shape, e.shape)
  assert a.dtype == e.dtype, (a.dtype, e.dtype)
  assert getattr(actual, "weak_type", False) == getattr(expected, "weak_type", False)
  if e.dtype.kind == "f" or e.dtype == BF16:   # NumPy sees bfloat16 NaNs as unequal
    a, e = a.astype(np.float32), e.astype(np.float32)
    np.testing.assert_array_equal(np.signbit(a), np.signbit(e))
  np.testing.assert_array_equal(a, e)


def compare(arrax_fn, jax_fn, *args, mode="eager"):
  if mode == "jit":
    arrax_fn, jax_fn = arrax.jit(arrax_fn), jax.jit(jax_fn)
  out = arrax_fn(*map(to_arrax, args))
  ref = jax_fn(*map(jnp.asarray, args))
  if isinstance(ref, (tuple, list)):
    assert type(out) is type(ref) or mode == "jit"
    assert len(out) == len(ref)
    for o, r in zip(out, ref):
      assert_same(o, r)
  else:
    assert_same(out, ref)


def error_class(fn):
  try:
    fn()
  except Exception as e:  # noqa: BLE001
    return type(e)
  return None


def same_error(arrax_fn, jax_fn, *args, mode="eager"):
  if mode == "jit":
    arrax_fn, jax_fn = arrax.jit(arrax_fn), jax.jit(jax_fn)
  expected = error_class(lambda: jax_fn(*map(jnp.asarray, args)))
  assert expected is not None, "JAX did not raise"
  with pytest.raises(expected):
    arrax_fn(*map(to_arrax, args))


# ---- sort -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
def test_sort_dtypes(dtype):
  x = make((4, 7), dtype, seed=1)
  compare(lambda x: lax.sort(x), lambda x: jlax.sort(x), x)


@pytest.mark.parametrize("shape,dim", [((1,), 0), ((9,), 0), ((9,), -1), ((3, 4), 0),
                                       ((3, 4), 1), ((2, 3, 4), 1), ((2, 3, 4), -1),
                                       ((0,), 0), ((3, 0), 1), ((0, 3), 1)], ids=str)
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_sort_shapes(shape, dim, mode):
  compare(lambda x: lax.sort(x, dimension=dim), lambda x: jlax.sort(x, dimension=dim),
          make(shape, np.float32, seed=2), mode=mode)


SPECIAL = [np.nan, -np.nan, 1.0, -0.0, 0.0, np.inf, -np.inf, -1.0, 0.0, -0.0, np.nan, 2.0]


@pytest.mark.parametrize("mode", ["eager", "jit"])
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_sort_nan_inf_signed_zero(dtype, mode):
  x = np.array(SPECIAL, dtype)
  idx = np.arange(len(SPECIAL), dtype=np.int32)
  compare(lambda x: lax.sort(x), lambda x: jlax.sort(x), x, mode=mode)
  # The permutation shows that -0.0 and 0.0 tie (stable order kept) and NaNs go last.
  compare(lambda k, v: lax.sort_key_val(k, v), lambda k, v: jlax.sort_key_val(k, v), x, idx,
          mode=mode)


def test_sort_complex_lexicographic_with_nan():
  x = np.array([1 + 2j, 1 + 3j, 0 + 5j, complex(np.nan, 0), 1 - 1j, complex(0, np.nan),
                -0.0 + 0j, 0 - 0j, complex(1, np.inf)], np.complex64)
  idx = np.arange(len(x), dtype=np.int32)
  compare(lambda k, v: lax.sort_key_val(k, v), lambda k, v: jlax.sort_key_val(k, v), x, idx)


@pytest.mark.parametrize("dtype", [np.int8, np.uint8, np.uint32, np.int32])
def test_sort_integer_extremes(dtype):
  info = np.iinfo(dtype)
  x = np.array([info.max, 0, info.min, 1, info.max, info.min], dtype)
  compare(lambda x: lax.sort(x), lambda x: jlax.sort(x), x)


@pytest.mark.parametrize("num_keys", [1, 2, 3])
@pytest.mark.parametrize("is_stable", [True, False])
def test_sort_multiple_operands(num_keys, is_stable):
  a = make((3, 8), np.int32, seed=3, lo=0, hi=2)
  b = make((3, 8), np.float32, seed=4, lo=-1, hi=1)
  c = np.tile(np.arange(8, dtype=np.uint8), (3, 1))
  kw = dict(dimension=1, is_stable=is_stable, num_keys=num_keys)
  if not is_stable and num_keys < 3:
    # Unstable order among equal keys is unspecified: compare only the keys.
    out = lax.sort([to_arrax(v) for v in (a, b, c)], **kw)
    ref = jlax.sort([jnp.asarray(v) for v in (a, b, c)], **kw)
    for o, r in list(zip(out, ref))[:num_keys]:
      assert_same(o, r)
    return
  compare(lambda a, b, c: lax.sort((a, b, c), **kw), lambda a, b, c: jlax.sort((a, b, c), **kw),
          a, b, c)


def test_sort_list_returns_tuple_and_jit():
  a, b = make((5,), np.float32, seed=5), make((5,), np.bool_, seed=6)
  compare(lambda a, b: lax.sort([a, b], num_keys=2), lambda a, b: jlax.sort([a, b], num_keys=2),
          a, b)
  compare(lambda a, b: lax.sort([a, b]), lambda a, b: jlax.sort([a, b]), a, b, mode="jit")
  out = lax.sort([to_arrax(a)])
  assert isinstance(out, tuple) and len(out) == 1


def test_sort_key_val_multi_dim():
  k = make((3, 5), np.float32, seed=7)
  v = make((3, 5), np.complex64, seed=8)
  for dim in (0, 1, -1):
    compare(lambda k, v: lax.sort_key_val(k, v, dimension=dim),
            lambda k, v: jlax.sort_key_val(k, v, dimension=dim), k, v)


def test_sort_numpy_inputs():
  x = make((6,), np.float32, seed=9)
  assert_same(lax.sort(x), jlax.sort(x))


def test_sort_errors():
  x, y = make((3,), np.float32), make((2,), np.float32)
  same_error(lambda x, y: lax.sort((x, y)), lambda x, y: jlax.sort((x, y)), x, y)
  same_error(lambda x, y: lax.sort((x, y)), lambda x, y: jlax.sort((x, y)), x, y, mode="jit")
  same_error(lambda x, y: lax.sort_key_val(x, y), lambda x, y: jlax.sort_key_val(x, y), x, y)
  same_error(lambda x: lax.sort((x, x), num_keys=3), lambda x: jlax.sort((x, x), num_keys=3), x)
  same_error(lambda x: lax.sort((x, x), num_keys=0), lambda x: jlax.sort((x, x), num_keys=0), x)
  same_error(lambda x: lax.sort(x, num_keys=2), lambda x: jlax.sort(x, num_keys=2), x)
  same_error(lambda x: lax.sort(x, dimension=1), lambda x: jlax.sort(x, dimension=1), x)
  same_error(lambda x: lax.sort(x), lambda x: jlax.sort(x), np.float32(1))
  same_error(lambda x: lax.sort([]), lambda x: jlax.sort([]), x)


# ---- top_k ----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL[:-1], ids=lambda d: np.dtype(d).name)
def test_top_k_dtypes(dtype):
  x = make((3, 8), dtype, seed=10)   # ties: the lower index must come first
  compare(lambda x: lax.top_k(x, 4), lambda x: jlax.top_k(x, 4), x)


@pytest.mark.parametrize("shape,k,axis", [((5,), 0, -1), ((5,), 5, -1), ((5,), 2, 0),
                                          ((3, 4), 2, 0), ((3, 4), 3, 1), ((2, 3, 4), 2, 1),
                                          ((2, 3, 4), 1, -1), ((3, 0), 0, 1), ((0, 3), 2, 1)],
                         ids=str)
@pytest.mark.parametrize("mode", ["eager", "jit"])
def test_top_k_shapes(shape, k, axis, mode):
  compare(lambda x: lax.top_k(x, k, axis=axis), lambda x: jlax.top_k(x, k, axis=axis),
          make(shape, np.float32, seed=11), mode=mode)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_top_k_nan_inf_signed_zero(dtype):
  x = np.array(SPECIAL, dtype)
  compare(lambda x: lax.top_k(x, len(SPECIAL)), lambda x: jlax.top_k(x, len(SPECIAL)), x)
  compare(lambda x: lax.top_k(x, 3), lambda x: jlax.top_k(x, 3), x, mode="jit")


def test_top_k_errors():
  x = make((3,), np.float32)
  same_error(lambda x: lax.top_k(x, 4), lambda x: jlax.top_k(x, 4), x)
  same_error(lambda x: lax.top_k(x, -1), lambda x: jlax.top_k(x, -1), x)
  same_error(lambda x: lax.top_k(x, 1, axis=1), lambda x: jlax.top_k(x, 1, axis=1), x)
  same_error(lambda x: lax.top_k(x, 0), lambda x: jlax.top_k(x, 0), np.float32(1))
  same_error(lambda x: lax.top_k(x, 1), lambda x: jlax.top_k(x, 1), make((3,), np.complex64))
  same_error(lambda x: lax.top_k(x, 4), lambda x: jlax.top_k(x, 4), x, mode="jit")


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
  pytest.importorskip("arrax._src.jaxpr_printer")
  x, i = np.ones((2, 3), np.float32), np.ones((2, 3), np.int32)
  ours = str(arrax.make_jaxpr(build(lax))(to_arrax(x), to_arrax(i)))
  theirs = str(jax.make_jaxpr(build(jlax))(jnp.asarray(x), jnp.asarray(i)))
  assert ours == theirs
