"""arrax.numpy window functions, i0, frexp / ldexp / modf, gcd / lcm / bitwise_count and
logspace / geomspace compared with jax.numpy 0.10.2: values (incl. NaN, +-inf, subnormals,
signed zeros), dtypes and weak types for bool / int / unsigned / float16 / bfloat16 / float32 /
complex inputs, error classes, under jit, grad and vmap, x64, and jaxprs.
"""
import inspect

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from oracle import assert_tree_same as assert_close
from oracle import BF16, Raw, assert_tree_same, check, check_all

nan, inf = float("nan"), float("inf")
FLOATS = np.array([0.0, -0.0, 0.5, -1.5, 3.0, 7.9, 8.0, 8.1, 20.0, -50.0, inf, -inf, nan,
                   1e-40, -3e-39, 1e-30, 3e38])
INTS = np.array([0, 1, -1, 3, -7, 100, 127, -128])
FLOAT_DTYPES = {"float16": np.dtype(np.float16), "bfloat16": BF16,
                "float32": np.dtype(np.float32)}
INT_DTYPES = {"bool": np.dtype(np.bool_), "int8": np.dtype(np.int8),
              "uint8": np.dtype(np.uint8), "int32": np.dtype(np.int32)}


def floats(name):
  with np.errstate(over="ignore"):
    return FLOATS.astype(FLOAT_DTYPES[name])


def ints(name):
  dt = INT_DTYPES[name]
  return INTS.astype(dt) if dt != np.bool_ else INTS.astype(bool)


def run(name, cases, tol=None):
  afn, jfn = getattr(anp, name), getattr(jnp, name)
  check_all([(f"{name}{i}:{kw}", lambda args=args, kw=kw: check(afn, jfn, *args, tol=tol,
                                                                 **kw))
             for i, (args, kw) in enumerate(cases)])


# ---- windows --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_windows(name):
  run(name, [((Raw(m),), {}) for m in (-1, 0, 1, 2, 7, 10, 5.7, np.int32(4))])


def test_kaiser():
  run("kaiser", [((Raw(m), b), {}) for m, b in [(0, 1.0), (1, 2.0), (6, 0.0), (7, 5.0),
                                               (9, 14.0), (5, np.float32(3.0))]])


def test_windows_need_static_length():
  with pytest.raises(arrax.errors.ConcretizationTypeError):
    arrax.jit(anp.hanning)(5)
  with pytest.raises(jax.errors.ConcretizationTypeError):
    jax.jit(jnp.hanning)(5)
  assert_tree_same(arrax.jit(lambda b: anp.kaiser(6, b))(2.5),
                   jax.jit(lambda b: jnp.kaiser(6, b))(2.5))


# ---- i0 -------------------------------------------------------------------------------------
def test_i0():
  run("i0", [((floats(n),), {}) for n in FLOAT_DTYPES] + [
      ((ints("int32"),), {}), ((ints("bool"),), {}), ((ints("uint8"),), {}), ((2.5,), {}),
      ((np.array(-3.0),), {}), ((np.zeros((0, 2), np.float32),), {}),
      ((np.array([1 + 1j], np.complex64),), {}), ((Raw([1.0]),), {}),
  ], tol=2e-6)


# ---- frexp, ldexp, modf ---------------------------------------------------------------------
def test_frexp():
  run("frexp", [((floats(n),), {}) for n in FLOAT_DTYPES] + [
      ((ints("int32"),), {}), ((ints("bool"),), {}), ((3.0,), {}),
      ((np.array([1j], np.complex64),), {}), ((np.zeros((2, 0)),), {}),
  ])


def test_ldexp():
  run("ldexp", [
      ((floats("float32"), np.arange(17, dtype=np.int32) - 8), {}),
      ((floats("float16"), np.int8(3)), {}), ((floats("bfloat16"), 2), {}),
      ((floats("float32"), np.array([200, -200, 300, -300] * 4 + [129], np.int32)), {}),
      ((ints("int32"), 3), {}), ((ints("uint8"), ints("int8")), {}), ((1.5, 4), {}),
      ((np.float32(1e-38), np.array([-30, 10, 300])), {}),
      ((floats("float32"), floats("float32")), {}), ((np.array([1j]), 2), {}),
  ])


def test_modf():
  run("modf", [((floats(n),), {}) for n in FLOAT_DTYPES] + [
      ((ints("int8"),), {}), ((ints("bool"),), {}), ((-2.5,), {}),
      ((np.array([1.5j]),), {}), ((floats("float32"),), {"out": np.zeros(17)}),
  ])


# ---- gcd, lcm, bitwise_count ----------------------------------------------------------------
@pytest.mark.parametrize("name", ["gcd", "lcm"])
def test_gcd_lcm(name):
  a = np.array([0, 1, -4, 12, 18, -27, 100, 7, 0])
  b = np.array([0, 5, 6, -8, 12, 9, -75, 7, 3])
  run(name, [((a.astype(np.int32), b.astype(np.int32)), {}),
             ((a.astype(np.int8), b.astype(np.int8)), {}),
             ((np.abs(a).astype(np.uint8), np.abs(b).astype(np.uint8)), {}),
             ((a.astype(np.int16), 6), {}), ((12, 18), {}),
             ((a.reshape(3, 3).astype(np.int32), b[:3].astype(np.int32)), {}),
             ((a.astype(bool), b.astype(bool)), {}), ((a.astype(np.float32), b), {}),
             ((np.zeros((0,), np.int32), 4), {})])


def test_bitwise_count():
  run("bitwise_count", [((ints(n),), {}) for n in INT_DTYPES] + [
      ((np.array([2**31 - 1, -2**31], np.int32),), {}),
      ((np.array([0, 255, 2**16 - 1], np.uint16),), {}), ((7,), {}),
      ((floats("float32"),), {}),
  ])


# ---- logspace, geomspace --------------------------------------------------------------------
def test_logspace():
  run("logspace", [
      ((0.0, 3.0), {"num": 4}), ((1, 2), {"num": 5, "base": 2}), ((0, 2), {}),
      ((0.0, 1.0), {"num": 3, "endpoint": False}),
      ((np.array([0.0, 1.0]), np.array([2.0, 3.0])), {"num": 3, "axis": -1}),
      ((0, 4), {"num": 5, "dtype": np.int32}), ((0, 1), {"num": 3, "dtype": np.float16}),
      ((0.0, 1.0), {"num": 1}), ((0.0, 1.0), {"num": 0}), ((0.0, 1.0), {"num": -1}),
      ((0j, 1j), {"num": 3}), ((0.0, 2.0), {"num": 3, "base": np.array([2.0, 10.0])[:, None]}),
  ], tol=1e-5)


def test_geomspace():
  run("geomspace", [
      ((1.0, 1000.0), {"num": 4}), ((-1, -8), {"num": 4}), ((1, 16), {"num": 5}),
      ((2.0, 32.0), {"num": 3, "endpoint": False}),
      ((np.array([1.0, 2.0]), np.array([8.0, 32.0])), {"num": 4, "axis": 1}),
      ((np.array([1.0, 2.0]), np.array([8.0, 32.0])), {"num": 4, "axis": -1,
                                                       "dtype": np.float16}),
      ((1, 256), {"num": 9, "dtype": np.int32}), ((1j, 8j), {"num": 4}),
      ((1.0, 10.0), {"num": 1}), ((0.0, 10.0), {"num": 3}), ((1.0, 10.0), {"num": 3,
                                                                           "axis": 2}),
  ], tol=1e-5)


def test_linear_grids_need_static_num():
  with pytest.raises(arrax.errors.ConcretizationTypeError):
    arrax.jit(lambda n: anp.logspace(0.0, 1.0, n))(3)
  with pytest.raises(arrax.errors.ConcretizationTypeError):
    arrax.jit(lambda n: anp.geomspace(1.0, 2.0, n))(3)


# ---- jit, grad, vmap, x64 -------------------------------------------------------------------
JIT_CASES = {
    "i0": lambda np_, x: [np_.i0(x), np_.i0(x.astype(np_.float16))],
    "frexp": lambda np_, x: list(np_.frexp(x * 1e-39)),
    "ldexp": lambda np_, x: [np_.ldexp(x, np_.arange(5) * 40 - 80)],
    "modf": lambda np_, x: list(np_.modf(x * 2.5)),
    "gcd": lambda np_, x: [np_.gcd(x.astype(int), 6), np_.lcm(x.astype(int), 4)],
    "bitwise_count": lambda np_, x: [np_.bitwise_count(x.astype(np_.int8))],
    "logspace": lambda np_, x: [np_.logspace(x[0], x[1], 4),
                                np_.geomspace(x[1] + 1, x[3], 3)],
    "windows": lambda np_, x: [np_.blackman(5) * x, np_.kaiser(5, x[2])],
}


@pytest.mark.parametrize("name", list(JIT_CASES))
def test_under_jit(name):
  x = np.array([-3.0, 1.0, 2.5, 8.5, 30.0], np.float32)
  fn = JIT_CASES[name]
  assert_tree_same(arrax.jit(lambda x: fn(anp, x))(x), jax.jit(lambda x: fn(jnp, x))(x),
                   tol=1e-6)


GRAD_CASES = {
    "i0": lambda np_, x: np_.i0(x).sum(),
    "kaiser": lambda np_, x: np_.kaiser(6, x[1] + 3.0).sum(),
    "frexp": lambda np_, x: np_.frexp(x * 10.0)[0].sum(),
    "ldexp": lambda np_, x: np_.ldexp(x, 3).sum(),
    "modf": lambda np_, x: (np_.modf(x * 3.0)[0] ** 2).sum(),
    "logspace": lambda np_, x: np_.logspace(x[0], 1.0, 5).sum(),
    "geomspace": lambda np_, x: np_.geomspace(x[1] ** 2 + 1.0, 10.0, 5).sum(),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_grad_and_vmap(name):
  x = np.array([-3.0, 0.0, 1.0, 2.5, 8.5, 30.0], np.float32)
  fn = GRAD_CASES[name]
  assert_close(arrax.grad(lambda x: fn(anp, x))(x), jax.grad(lambda x: fn(jnp, x))(x),
               tol=1e-5)
  xs = np.stack([x, 0.5 * x])
  assert_close(arrax.vmap(lambda x: fn(anp, x))(xs), jax.vmap(lambda x: fn(jnp, x))(xs),
               tol=1e-5)


def test_frexp_tangent_of_exponent_is_float0():
  x = np.array([1.5, -3.0], np.float32)
  a = arrax.jvp(anp.frexp, (x,), (np.ones(2, np.float32),))
  j = jax.jvp(jnp.frexp, (x,), (np.ones(2, np.float32),))
  assert_close(a, j)


def test_x64(x64):
  run("i0", [((FLOATS,), {})], tol=1e-13)
  run("frexp", [((FLOATS,), {}), ((np.array([5e-324, 1e308]),), {})])
  run("ldexp", [((FLOATS, 3), {}), ((np.float64(1e-310), 1100), {})])
  run("gcd", [((np.array([2**40, 12], np.int64), 2**20), {})])
  run("logspace", [((0, 2), {"num": 3})])
  run("bitwise_count", [((np.array([2**62, -1], np.int64),), {})])


JAXPR_CASES = {
    "frexp": lambda np_: lambda x: np_.frexp(x),
    "ldexp": lambda np_: lambda x: np_.ldexp(x, 2),
    "modf": lambda np_: lambda x: np_.modf(x),
    "gcd": lambda np_: lambda x: np_.gcd(x.astype(np_.int32), 6),
    "lcm": lambda np_: lambda x: np_.lcm(x.astype(np_.int32), 6),
    "bitwise_count": lambda np_: lambda x: np_.bitwise_count(x.astype(np_.int32)),
    "logspace": lambda np_: lambda x: np_.logspace(x[0], 2.0, 4),
    "geomspace": lambda np_: lambda x: np_.geomspace(x[1], 2.0, 4),
    "blackman": lambda np_: lambda x: np_.blackman(5) * x,
}


@pytest.mark.parametrize("name", list(JAXPR_CASES))
def test_jaxpr_matches(name):
  x = np.arange(1.0, 6.0, dtype=np.float32)
  mk = JAXPR_CASES[name]
  assert str(arrax.make_jaxpr(mk(anp))(x)) == str(jax.make_jaxpr(mk(jnp))(x))


def test_signatures():
  for name in ["bartlett", "blackman", "hamming", "hanning", "kaiser", "i0", "frexp", "ldexp",
               "modf", "gcd", "lcm", "bitwise_count", "logspace", "geomspace"]:
    a, j = inspect.signature(getattr(anp, name)), inspect.signature(getattr(jnp, name))
    assert [(p.name, p.kind, p.default) for p in a.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in j.parameters.values()], name
    assert getattr(anp, name).__doc__, name
