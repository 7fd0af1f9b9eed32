"""Differential tests of arrax.lax.dot_general / dot / batch_matmul against jax.lax."""
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
from oracle import BF16, assert_same, call_with, rand  # noqa: E402

ALL = [np.bool_, np.int8, np.int32, np.uint8, np.uint32, np.float16, BF16, np.float32,
       np.complex64]

# Cases are fn(lax_module, *args) on arrays made from the NumPy arguments; results are compared
# exactly, eagerly and under jit.
check = functools.partial(oracle.check, build=call_with("lax"), convert="arrays", jit=True,
                          exact=True)
check_raises = functools.partial(oracle.check_raises, build=call_with("lax"), convert="arrays")
check_jaxpr = functools.partial(oracle.check_jaxpr, build=call_with("lax"), convert=None)
# Small integer values, exactly representable (and products and sums exact) in every dtype.
exact_values = functools.partial(rand, ints=(-3, 4), step=1)


# ---- dtypes -----------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ALL, ids=lambda d: np.dtype(d).name)
def test_matmul_dtypes(dtype):
  check(lambda L, a, b: L.dot(a, b), exact_values((3, 4), dtype),
        exact_values((4, 2), dtype, seed=1))


@pytest.mark.parametrize("lhs,rhs", [
    (np.float32, np.int32), (BF16, np.float16), (np.uint8, np.int8), (np.uint32, np.int32),
    (np.float32, np.complex64), (np.bool_, np.float32), (np.int8, np.uint16),
    (np.int8, np.bool_), (np.float16, np.int32),
], ids=lambda d: np.dtype(d).name)
def test_mixed_dtypes(lhs, rhs):
  check(lambda L, a, b: L.dot(a, b), exact_values((2, 3), lhs), exact_values((3,), rhs, seed=1))


@pytest.mark.parametrize("dtype,pet", [
    (np.int8, np.int32), (np.int8, np.float32), (np.float16, np.float32), (BF16, np.float32),
    (np.bool_, np.int32), (np.float32, np.float16), (np.int32, np.uint32), (np.uint8, np.int8),
    (np.float32, np.complex64), (np.int32, np.int32), (np.bool_, np.float32),
], ids=lambda d: np.dtype(d).name)
def test_preferred_element_type(dtype, pet):
  check(lambda L, a, b: L.dot(a, b, preferred_element_type=pet), exact_values((2, 3), dtype),
        exact_values((3, 2), dtype, seed=1))


def test_preferred_float64_truncates_with_warning():
  a, b = exact_values((2, 3)), exact_values((3,))
  with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    out = lax.dot(anp.asarray(a), anp.asarray(b), preferred_element_type=np.float64)
  assert out.dtype == np.float32 and any("float64" in str(w.message) for w in caught)


def test_weak_type():
  aw, jw = lax.broadcast(1.0, (3,)), jlax.broadcast(1.0, (3,))   # weakly typed f32[3]
  assert_same(lax.dot(aw, aw), jlax.dot(jw, jw), exact=True)
  strong = np.ones(3, np.float32)
  assert_same(lax.dot(aw, anp.asarray(strong)), jlax.dot(jw, jnp.asarray(strong)), exact=True)


# ---- shapes and dimension numbers -----------------------------------------------------------
@pytest.mark.parametrize("lshape,rshape", [
    ((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)), ((0, 3), (3, 2)),
    ((2, 0), (0, 4)), ((1, 1), (1, 1)),
])
def test_dot_shapes(lshape, rshape):
  check(lambda L, a, b: L.dot(a, b), exact_values(lshape), exact_values(rshape, seed=1))


@pytest.mark.parametrize("lshape,rshape,dnums", [
    ((2, 3), (2, 3), (([1], [1]), ([], []))),
    ((2, 3), (4, 5), (([], []), ([], []))),                       # outer product
    ((5, 2, 3), (5, 3, 4), (([2], [1]), ([0], [0]))),             # batched matmul
    ((2, 5, 3), (3, 4, 5), (([2], [0]), ([1], [2]))),             # batch axes not leading
    ((2, 3, 4), (4, 3, 2), (([1, 2], [1, 0]), ([], []))),         # two contracting axes
    ((6, 2, 3, 4), (6, 4, 2, 5), (([3], [1]), ([0, 1], [0, 2]))),  # two batch axes
    ((0, 3), (0, 3), (([0], [0]), ([], []))),                     # empty contraction
    ((3, 0), (3, 2), (([0], [0]), ([], []))),
    ((4,), (4,), (([], []), ([0], [0]))),                         # batch-only
    ((2, 3), (3, 2), ((1, 0), ((), ()))),                          # ints and tuples
])
def test_dot_general(lshape, rshape, dnums):
  check(lambda L, a, b: L.dot_general(a, b, dnums), exact_values(lshape),
        exact_values(rshape, seed=1))


@pytest.mark.parametrize("precision", [
    None, "highest", "bfloat16", "tensorfloat32", jlax.Precision.HIGH,
    ("high", "default"), (jlax.Precision.HIGHEST, jlax.Precision.DEFAULT),
], ids=str)
def test_precision(precision):
  def conv(L):
    if isinstance(precision, jlax.Precision):
      return L.Precision[precision.name]
    if isinstance(precision, tuple) and isinstance(precision[0], jlax.Precision):
      return tuple(L.Precision[p.name] for p in precision)
    return precision
  a, b = exact_values((2, 3)), exact_values((3, 2), seed=1)
  check(lambda L, a, b: L.dot(a, b, precision=conv(L)), a, b)
  check_jaxpr(lambda L, a, b: L.dot_general(a, b, ((1, 0), ((), ())), precision=conv(L)), a, b)


def test_precision_enum():
  assert [p.name for p in lax.Precision] == [p.name for p in jlax.Precision]
  for p in jlax.Precision:
    q = lax.Precision[p.name]
    assert (q.value, str(q), repr(q)) == (p.value, str(p), repr(p))
  for name in ["highest", "float32", "high", "bfloat16_3x", "tensorfloat32", "default",
               "bfloat16", "fastest"]:
    assert lax.Precision(name).name == jlax.Precision(name).name


def test_default_matmul_precision_config():
  a, b = exact_values((2, 3)), exact_values((3,))
  arrax.config.update("jax_default_matmul_precision", "highest")
  try:
    jaxpr = str(arrax.make_jaxpr(lambda a, b: lax.dot(a, b))(a, b))
  finally:
    arrax.config.update("jax_default_matmul_precision", None)
  assert "precision=(Precision.HIGHEST, Precision.HIGHEST)" in jaxpr


@pytest.mark.parametrize("shapes", [((2, 3, 4), (2, 4, 5)), ((3, 2, 1, 4), (3, 2, 4, 2)),
                                    ((2, 2), (2, 2)), ((0, 2, 3), (0, 3, 1))])
def test_batch_matmul(shapes):
  check(lambda L, a, b: L.batch_matmul(a, b), exact_values(shapes[0]),
        exact_values(shapes[1], seed=1))


def test_python_scalar_operands():
  assert_same(lax.dot_general(2.0, 3.0, (((), ()), ((), ()))),
              jlax.dot_general(2.0, 3.0, (((), ()), ((), ()))), exact=True)
  a = exact_values((3,))
  assert_same(lax.dot_general(anp.asarray(a), 2.0, (((), ()), ((), ()))),
              jlax.dot_general(jnp.asarray(a), 2.0, (((), ()), ((), ()))), exact=True)


# ---- errors -----------------------------------------------------------------------------------
ERRORS = [
    lambda L, x: L.dot_general(x, x, (([1], [0]), ([], []))),
    lambda L, x: L.dot_general(x, x, (([1], [2]), ([], []))),
    lambda L, x: L.dot_general(x, x, (([-1], [1]), ([], []))),
    lambda L, x: L.dot_general(x, x, (([1], [1]), ([0], []))),
    lambda L, x: L.dot_general(x, x, (([1], [1]), ([1], [1]))),
    lambda L, x: L.dot_general(x, x, (([1, 1], [1, 1]), ([], []))),
    lambda L, x: L.dot_general(x, x, (([], []), ([0, 0], [0, 0]))),
    lambda L, x: L.dot_general(x, L.transpose(x, (1, 0)), (([], []), ([0], [0]))),
    lambda L, x: L.dot(x, x),
    lambda L, x: L.dot(x, 2.0),
    lambda L, x: L.dot(x, L.convert_element_type(x, np.int32), preferred_element_type=np.int8),
    lambda L, x: L.dot(L.convert_element_type(x, np.int32), L.transpose(
        L.convert_element_type(x, np.int32), (1, 0)), preferred_element_type=np.bool_),
    lambda L, x: L.dot(x, L.transpose(x, (1, 0)), precision="bogus"),
    lambda L, x: L.dot(x, L.transpose(x, (1, 0)), precision=("high",)),
    lambda L, x: L.batch_matmul(x, L.index_in_dim(x, 0, 0, False)),
    lambda L, x: L.batch_matmul(L.broadcast(x, (1,)), x),
]


@pytest.mark.parametrize("k", range(len(ERRORS)))
def test_error_classes(k):
  fn = ERRORS[k]
  x = exact_values((2, 3))
  check_raises(fn, x)
  check_raises(fn, x, jit=True)


# ---- printed jaxprs ---------------------------------------------------------------------------
JAXPRS = {
    "plain": lambda L, x: L.dot_general(x, x, (([1], [1]), ([], []))),
    "preferred": lambda L, x: L.dot_general(x, x, (([1], [1]), ([], [])),
                                            preferred_element_type=np.float32),
    "dot": lambda L, x: L.dot(x, L.transpose(x, (1, 0))),
    "batch_matmul": lambda L, x: L.batch_matmul(L.broadcast(x, (2,)),
                                                L.broadcast(L.transpose(x, (1, 0)), (2,))),
    "int_preferred": lambda L, x: L.dot(
        L.convert_element_type(x, np.int8),
        L.convert_element_type(L.transpose(x, (1, 0)), np.int8), preferred_element_type=np.int32),
}


@pytest.mark.parametrize("name", list(JAXPRS))
def test_jaxpr_matches(name):
  check_jaxpr(JAXPRS[name], exact_values((2, 3)))


def test_x64(x64):
  a, b = exact_values((2, 3), np.float64), exact_values((3, 2), np.float64, seed=1)
  check(lambda L, a, b: L.dot(a, b), a, b)
  check(lambda L, a, b: L.dot(a, b, preferred_element_type=np.float32), a, b)
  check(lambda L, a, b: L.dot(a, b, preferred_element_type=np.float64),
        exact_values((2, 3), np.int32), exact_values((3,), np.int32))
