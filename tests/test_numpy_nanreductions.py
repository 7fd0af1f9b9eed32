"""arrax.numpy's NaN-ignoring reductions (nansum ... nanpercentile) compared with jax.numpy 0.10.2.

Each function is crossed with the dtypes (NaN, +-inf and -0.0 for the float kinds, all-NaN
slices), axis forms (None, int, negative, tuple), keepdims, dtype=, where=/initial=, ddof and
mean=, q scalars / vectors / all quantile methods and weights, empty and 0-d inputs, Python
scalars (weak types), and is checked eagerly and under jit; gradients and vmap against jax's;
error classes for bad arguments; a few jaxprs printed side by side.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from oracle import assert_tree_same as assert_close
from oracle import BF16, Raw, assert_tree_same, check, check_all

DTYPES = {
    "bool": np.dtype(np.bool_), "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
    "int32": np.dtype(np.int32), "float16": np.dtype(np.float16), "bfloat16": BF16,
    "float32": np.dtype(np.float32), "complex64": np.dtype(np.complex64),
}
FLOATS = ["float16", "bfloat16", "float32"]
nan, inf = float("nan"), float("inf")

# (3, 4): column 1 is all NaN, the rest mixes NaN, +-inf, -0.0 and ordinary values.
_SPECIAL = [[nan, nan, -2.0, 0.5], [inf, nan, 3.0, nan], [1.0, nan, -inf, -0.0]]
_FINITE = [[1.5, nan, -2.0, 0.5], [2.0, nan, 3.0, nan], [1.0, nan, -1.0, -0.0]]


def sample(name, special=True):
  """A (3, 4) test array of dtype `name` (NaNs for the inexact kinds)."""
  dt = DTYPES[name]
  if dt == np.bool_:
    return np.array([[True, False, True, True], [False, False, True, False],
                     [True, False, False, True]])
  if dt.kind in "iu":
    return np.array([[3, 0, 7, 1], [5, 2, 0, 4], [1, 6, 2, 3]]).astype(dt)
  vals = np.array(_SPECIAL if special else _FINITE)
  if dt.kind == "c":
    return (vals + 1j * np.array([[1.0, 0, -1, 2], [0, 1, 0, 1], [2, 0, 0, -1]])).astype(dt)
  return vals.astype(dt)


def cube(seed=0, dtype=np.float32):
  """A (2, 3, 4) array with a few NaNs (none of the slices along one axis all NaN)."""
  x = np.random.default_rng(seed).standard_normal((2, 3, 4))
  x[0, 1, 2] = x[1, 0, 0] = x[1, 2, 3] = nan
  return x.astype(dtype)


MASK = np.array([[True, False, True, True], [False, True, True, True],
                 [True, True, False, True]])

# Per function: (dtype name, kwargs) cases. Every function sees every dtype class (bool, signed
# and unsigned ints, the 16-bit floats, float32, complex64) and each of its keyword arguments.
CASES = {
    "nansum": [("float32", {}), ("float32", {"axis": 0}), ("float32", {"axis": (0, 1)}),
               ("float16", {"axis": -1, "keepdims": True}), ("bfloat16", {"axis": 1}),
               ("complex64", {"axis": 0}), ("int8", {}), ("uint8", {"axis": 1}),
               ("bool", {"axis": 0}), ("int32", {"dtype": np.float32}),
               ("float32", {"axis": 1, "where": MASK, "initial": 1.5}),
               ("float32", {"axis": (), "dtype": np.int32})],
    "nanprod": [("float32", {}), ("float32", {"axis": -1, "keepdims": True}),
                ("bfloat16", {"axis": 0}), ("complex64", {"axis": 1}), ("int8", {"axis": 0}),
                ("bool", {}), ("float16", {"axis": 0, "where": MASK, "initial": 2})],
    "nanmin": [("float32", {}), ("float32", {"axis": 0}), ("float32", {"axis": (0, 1)}),
               ("float16", {"axis": -1, "keepdims": True}), ("bfloat16", {"axis": 0}),
               ("int8", {"axis": 1}), ("uint8", {}), ("bool", {"axis": 0}),
               ("float32", {"axis": 1, "initial": 0.0}),
               ("float32", {"axis": 0, "where": MASK, "initial": 10.0}),
               ("float32", {"axis": 0, "where": MASK})],      # no initial: ValueError
    "nanmax": [("float32", {"axis": 0}), ("float32", {"axis": None, "keepdims": True}),
               ("bfloat16", {"axis": -1}), ("int32", {"axis": 0, "initial": 4}),
               ("complex64", {"axis": 1}), ("float32", {"axis": 1, "initial": -1.0})],
    "nanargmin": [("float32", {}), ("float32", {"axis": 0}), ("float16", {"axis": 1}),
                  ("int8", {"axis": -1, "keepdims": True}), ("bool", {"axis": 0}),
                  ("float32", {"axis": None, "keepdims": True})],
    "nanargmax": [("float32", {"axis": 1}), ("bfloat16", {}), ("uint8", {"axis": 0}),
                  ("complex64", {"axis": 1})],
    "nanmean": [("float32", {}), ("float32", {"axis": 0}), ("float32", {"axis": (0, 1)}),
                ("float16", {"axis": -1, "keepdims": True}), ("bfloat16", {"axis": 1}),
                ("complex64", {"axis": 0}), ("int8", {"axis": 1}), ("bool", {}),
                ("float32", {"axis": 1, "dtype": np.float16}),
                ("float32", {"axis": 1, "where": MASK}), ("uint8", {"dtype": np.float16})],
    "nanvar": [("float32", {}), ("float32", {"axis": 0, "ddof": 1}),
               ("float32", {"axis": 1, "ddof": 3}), ("float32", {"axis": (0, 1)}),
               ("float16", {"axis": 0, "keepdims": True}), ("bfloat16", {"axis": 1}),
               ("complex64", {"axis": 0}), ("int8", {"axis": 1}), ("bool", {}),
               ("float32", {"axis": 1, "dtype": np.float32, "where": MASK}),
               ("float32", {"axis": 1, "mean": np.full((3, 1), 0.5, np.float32)})],
    "nanstd": [("float32", {"axis": 1}), ("float32", {"ddof": 2}), ("bfloat16", {"axis": 0}),
               ("complex64", {}), ("uint8", {"axis": 0, "keepdims": True}),
               ("float32", {"axis": 0, "where": MASK})],
    "nancumsum": [("float32", {}), ("float32", {"axis": 0}), ("float16", {"axis": -1}),
                  ("complex64", {"axis": 1}), ("int8", {"axis": 0}), ("bool", {}),
                  ("float32", {"axis": 1, "dtype": np.bool_}),
                  ("uint8", {"axis": 1, "dtype": np.int32})],
    "nancumprod": [("float32", {"axis": 1}), ("bfloat16", {}), ("int32", {"axis": 0}),
                   ("bool", {"axis": 1}), ("float32", {"dtype": np.float16})],
    "nanmedian": [("float32", {}), ("float32", {"axis": 0}), ("float32", {"axis": (0, 1)}),
                  ("float16", {"axis": -1, "keepdims": True}), ("bfloat16", {"axis": 1}),
                  ("int8", {"axis": 0}), ("uint8", {}), ("bool", {"axis": 1}),
                  ("complex64", {})],                          # complex: ValueError
}


@pytest.mark.parametrize("name", list(CASES))
def test_nan_function(name):
  afn, jfn = getattr(anp, name), getattr(jnp, name)
  special = name not in ("nanprod", "nancumprod", "nanvar", "nanstd")
  check_all([(f"{name}[{dt}]{kw}",
              lambda dt=dt, kw=kw: check(afn, jfn, sample(dt, special), **kw,
                                         tol=2e-2 if dt in ("float16", "bfloat16") else 2e-6))
             for dt, kw in CASES[name]])


# ---- quantiles ------------------------------------------------------------------------------
METHODS = ["linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf"]


@pytest.mark.parametrize("method", METHODS)
def test_nanquantile_methods(method):
  x = cube()
  q_vec = np.array([0.0, 0.25, 0.5, 0.9, 1.0], np.float32)
  check_all([
      ("q scalar, axis None", lambda: check(anp.nanquantile, jnp.nanquantile, x, 0.3,
                                            method=method)),
      ("q vector, axis 1", lambda: check(anp.nanquantile, jnp.nanquantile, x, q_vec, axis=1,
                                         method=method)),
      ("tuple axis keepdims", lambda: check(anp.nanquantile, jnp.nanquantile, x, q_vec,
                                            axis=(0, 2), keepdims=True, method=method)),
      ("percentile", lambda: check(anp.nanpercentile, jnp.nanpercentile, sample("float32"),
                                   70, axis=-1, keepdims=True, method=method)),
  ])


def test_nanquantile_weights():
  x = cube(1)
  w = np.random.default_rng(2).random((2, 3, 4)).astype(np.float32)
  w_axis = np.array([1.0, 2.0, 0.5, 3.0], np.float32)
  check_all([
      ("full weights", lambda: check(anp.nanquantile, jnp.nanquantile, x, 0.4, axis=1,
                                     method="inverted_cdf", weights=w)),
      ("axis weights", lambda: check(anp.nanquantile, jnp.nanquantile, x,
                                     np.array([0.2, 0.8]), axis=-1, method="inverted_cdf",
                                     weights=w_axis, keepdims=True)),
      ("negative weight -> nan", lambda: check(anp.nanquantile, jnp.nanquantile, x, 0.5,
                                               axis=-1, method="inverted_cdf",
                                               weights=w_axis * np.array([1, -1, 1, 1]))),
      ("percentile weights", lambda: check(anp.nanpercentile, jnp.nanpercentile, x, 50,
                                           axis=None, method="inverted_cdf", weights=w)),
      ("weights need inverted_cdf", lambda: check(anp.nanquantile, jnp.nanquantile, x, 0.5,
                                                  weights=w)),
      ("weights shape", lambda: check(anp.nanquantile, jnp.nanquantile, x, 0.5, axis=0,
                                      method="inverted_cdf", weights=w_axis)),
      ("weights, axis None", lambda: check(anp.nanquantile, jnp.nanquantile, x, 0.5,
                                           method="inverted_cdf", weights=w_axis)),
      ("complex weights", lambda: check(anp.nanquantile, jnp.nanquantile, x, 0.5, axis=-1,
                                        method="inverted_cdf",
                                        weights=w_axis.astype(np.complex64))),
  ])


# ---- empty, 0-d, scalars, all-NaN ----------------------------------------------------------
def test_empty_and_scalar_inputs():
  empty = np.zeros((0, 3), np.float32)
  zero_d = np.array(nan, np.float32)
  cases = []
  inputs = [((empty,), {"axis": 0}), ((empty,), {}), ((zero_d,), {}), ((2.5,), {}),
            ((np.array(2, np.int32),), {}), ((True,), {})]
  for i, name in enumerate(["nansum", "nanprod", "nanmean", "nanvar", "nanstd", "nancumsum",
                            "nancumprod", "nanmin", "nanmax", "nanargmin", "nanargmax",
                            "nanmedian"]):
    # each function on two of the inputs, the inputs taken in turn
    for args, kw in (inputs[i % 6], inputs[(i + 3) % 6]):
      cases.append((f"{name}{args[0]!r}{kw}",
                    lambda name=name, args=args, kw=kw: check(getattr(anp, name),
                                                              getattr(jnp, name), *args,
                                                              **kw)))
  cases.append(("nanquantile empty", lambda: check(anp.nanquantile, jnp.nanquantile, empty,
                                                   0.5, axis=1)))
  cases.append(("nanquantile 0-d", lambda: check(anp.nanquantile, jnp.nanquantile,
                                                 np.array(3.0), 0.5)))
  cases.append(("all nan median", lambda: check(anp.nanmedian, jnp.nanmedian,
                                                np.full((3, 2), nan, np.float32), axis=0)))
  cases.append(("all nan var", lambda: check(anp.nanvar, jnp.nanvar,
                                             np.full((3, 2), nan, np.float32), axis=0)))
  check_all(cases)


# ---- jit, grad, vmap -------------------------------------------------------------------------
JIT_CASES = {
    "nansum": lambda np_, x: [np_.nansum(x), np_.nansum(x, axis=1, keepdims=True),
                              np_.nansum(x, (0, 2), dtype=np_.float16)],
    "nanprod": lambda np_, x: [np_.nanprod(x, axis=-1), np_.nanprod(x, initial=2.0)],
    "nanmin": lambda np_, x: [np_.nanmin(x, 0), np_.nanmin(x, initial=-5.0, where=x > 0)],
    "nanmax": lambda np_, x: [np_.nanmax(x, (1, 2)), np_.nanmax(x, keepdims=True)],
    "nanmean": lambda np_, x: [np_.nanmean(x, 1), np_.nanmean(x, where=x < 1)],
    "nanvar": lambda np_, x: [np_.nanvar(x, 2, ddof=1), np_.nanvar(x, keepdims=True)],
    "nanstd": lambda np_, x: [np_.nanstd(x, 0), np_.nanstd(x, (0, 1), ddof=2)],
    "nanargmax": lambda np_, x: [np_.nanargmax(x), np_.nanargmax(x, 1, keepdims=True)],
    "nanargmin": lambda np_, x: [np_.nanargmin(x, -1)],
    "nancumsum": lambda np_, x: [np_.nancumsum(x), np_.nancumsum(x, 1)],
    "nancumprod": lambda np_, x: [np_.nancumprod(x, -1, dtype=np_.float32)],
    "nanmedian": lambda np_, x: [np_.nanmedian(x, 0), np_.nanmedian(x, (0, 2), keepdims=True)],
    "nanquantile": lambda np_, x: [np_.nanquantile(x, np_.array([0.1, 0.6]), 1),
                                   np_.nanquantile(x, 0.5, method="nearest")],
    "nanpercentile": lambda np_, x: [np_.nanpercentile(x, 75.0, -1, method="higher")],
}


@pytest.mark.parametrize("name", list(JIT_CASES))
def test_under_jit(name):
  x = cube(3)
  fn = JIT_CASES[name]
  expected = jax.jit(lambda x: fn(jnp, x))(x)
  actual = arrax.jit(lambda x: fn(anp, x))(x)
  assert_tree_same(actual, expected, tol=1e-6)


GRAD_CASES = {
    "nansum": lambda np_, x: np_.nansum(x * x, axis=0).sum(),
    "nanprod": lambda np_, x: np_.nanprod(x, axis=1).sum(),
    "nanmean": lambda np_, x: np_.nanmean(x * x),
    "nanvar": lambda np_, x: np_.nanvar(x, axis=1).sum(),
    "nanstd": lambda np_, x: np_.nanstd(x, ddof=1),
    "nanmax": lambda np_, x: np_.nanmax(x, axis=0).sum(),
    "nanmin": lambda np_, x: np_.nanmin(x),
    "nancumsum": lambda np_, x: (np_.nancumsum(x, axis=1) ** 2).sum(),
    "nancumprod": lambda np_, x: np_.nancumprod(x, axis=-1).sum(),
    "nanmedian": lambda np_, x: np_.nanmedian(x, axis=0).sum(),
    "nanquantile": lambda np_, x: np_.nanquantile(x, np_.array([0.2, 0.7]), axis=1).sum(),
    "nanpercentile": lambda np_, x: np_.nanpercentile(x, 30.0).sum(),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_grad_and_vmap(name):
  x = cube(4)[0]
  fn = GRAD_CASES[name]
  assert_close(arrax.grad(lambda x: fn(anp, x))(x), jax.grad(lambda x: fn(jnp, x))(x))
  xs = np.stack([x, 2 * x])
  assert_close(arrax.vmap(lambda x: fn(anp, x))(xs), jax.vmap(lambda x: fn(jnp, x))(xs))


def test_x64(x64):
  x = sample("float32").astype(np.float64)
  xi = sample("int8")
  check_all([
      ("nansum f64", lambda: check(anp.nansum, jnp.nansum, x, axis=0)),
      ("nansum int8 -> int64", lambda: check(anp.nansum, jnp.nansum, xi)),
      ("nanmean int8", lambda: check(anp.nanmean, jnp.nanmean, xi, axis=1)),
      ("nanvar f64", lambda: check(anp.nanvar, jnp.nanvar, x, axis=1)),
      ("nanargmax int64 index", lambda: check(anp.nanargmax, jnp.nanargmax, x, axis=0)),
      ("nanquantile f64", lambda: check(anp.nanquantile, jnp.nanquantile, x, 0.3, axis=1)),
      ("nanmedian weak q", lambda: check(anp.nanmedian, jnp.nanmedian, xi)),
  ])


# ---- errors ---------------------------------------------------------------------------------
def test_errors():
  x = sample("float32")
  cases = [
      ("list input", lambda: check(anp.nansum, jnp.nansum, Raw([1.0, 2.0]))),
      ("where not bool", lambda: check(anp.nanmax, jnp.nanmax, x, where=np.ones((3, 4)),
                                       initial=0)),
      ("nanmean out", lambda: check(anp.nanmean, jnp.nanmean, x, out=np.zeros(4))),
      ("nanvar out", lambda: check(anp.nanvar, jnp.nanvar, x, out=np.zeros(4))),
      ("nanargmax out", lambda: check(anp.nanargmax, jnp.nanargmax, x, out=np.zeros(4))),
      ("nancumsum out", lambda: check(anp.nancumsum, jnp.nancumsum, x, out=np.zeros(4))),
      ("axis out of range", lambda: check(anp.nansum, jnp.nansum, x, axis=2)),
      ("argmax axis out of range", lambda: check(anp.nanargmin, jnp.nanargmin, x, axis=-3)),
      ("cumsum axis out of range", lambda: check(anp.nancumsum, jnp.nancumsum, x, axis=5)),
      ("bad method", lambda: check(anp.nanquantile, jnp.nanquantile, x, 0.5, method="foo")),
      ("q rank 2", lambda: check(anp.nanquantile, jnp.nanquantile, x, np.ones((2, 2)) / 2)),
      ("complex", lambda: check(anp.nanquantile, jnp.nanquantile,
                                x.astype(np.complex64), 0.5)),
      ("overwrite_input", lambda: check(anp.nanmedian, jnp.nanmedian, x,
                                        overwrite_input=True)),
      ("repeated axis", lambda: check(anp.nanmedian, jnp.nanmedian, x, axis=(1, -1))),
      ("std dtype", lambda: check(anp.nanstd, jnp.nanstd, x, dtype="not a dtype")),
  ]
  check_all(cases)
  # axis must be static (operator.index on a tracer), as in JAX
  with pytest.raises(jax.errors.TracerIntegerConversionError):
    jax.jit(lambda x, a: jnp.nanargmax(x, axis=a))(x, 0)
  with pytest.raises(arrax.errors.TracerIntegerConversionError):
    arrax.jit(lambda x, a: anp.nanargmax(x, axis=a))(x, 0)


# ---- jaxprs ---------------------------------------------------------------------------------
JAXPR_CASES = {
    "nansum": lambda np_: lambda x: np_.nansum(x, axis=0),
    "nanmin": lambda np_: lambda x: np_.nanmin(x, axis=1, keepdims=True),
    "nanmean": lambda np_: lambda x: np_.nanmean(x),
    "nanvar": lambda np_: lambda x: np_.nanvar(x, axis=0, ddof=1),
    "nanargmax": lambda np_: lambda x: np_.nanargmax(x, axis=0),
    "nancumprod": lambda np_: lambda x: np_.nancumprod(x, dtype=np_.float32),
    "nanmedian": lambda np_: lambda x: np_.nanmedian(x, axis=0),
    "nanpercentile": lambda np_: lambda x: np_.nanpercentile(x, np_.array([10., 50.]),
                                                            axis=1),
    "nanquantile_cdf": lambda np_: lambda x: np_.nanquantile(x, 0.3, axis=1,
                                                             method="inverted_cdf"),
}


@pytest.mark.parametrize("name", list(JAXPR_CASES))
def test_jaxpr_matches(name):
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  mk = JAXPR_CASES[name]
  assert str(arrax.make_jaxpr(mk(anp))(x)) == str(jax.make_jaxpr(mk(jnp))(x))


def test_signatures():
  import inspect
  for name in ["nanargmax", "nanargmin", "nancumprod", "nancumsum", "nanmax", "nanmean",
               "nanmedian", "nanmin", "nanpercentile", "nanprod", "nanquantile", "nanstd",
               "nansum", "nanvar"]:
    a, j = inspect.signature(getattr(anp, name)), inspect.signature(getattr(jnp, name))
    assert [(p.name, p.kind, p.default) for p in a.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in j.parameters.values()], name
    assert getattr(anp, name).__doc__, name
