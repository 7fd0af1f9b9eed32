"""arrax.numpy statistics (quantile, percentile, median, average, ptp, cov, corrcoef,
histogram*, diff, ediff1d, gradient, trapezoid, interp, convolve, correlate, unwrap) compared
with jax.numpy 0.10.2: values, dtypes (promotion of bool / int / float16 / complex inputs), weak
types, shapes, NaN / inf, empty and 0-d inputs, error classes, under jit, grad and vmap, and a
few jaxprs.
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
nan, inf = float("nan"), float("inf")


def values(name, shape=(3, 5), seed=0):
  """Deterministic test values of dtype `name` and `shape`."""
  dt = DTYPES[name]
  rng = np.random.default_rng(seed)
  if dt == np.bool_:
    return rng.random(shape) < 0.5
  if dt.kind in "iu":
    return rng.integers(0 if dt.kind == "u" else -5, 6, shape).astype(dt)
  x = rng.standard_normal(shape)
  if dt.kind == "c":
    x = x + 1j * rng.standard_normal(shape)
  return x.astype(dt)


def cases_for(name, arg_kw_list, tol=None):
  afn, jfn = getattr(anp, name), getattr(jnp, name)
  return [(f"{name}{i}:{kw}", lambda args=args, kw=kw: check(afn, jfn, *args, tol=tol, **kw))
          for i, (args, kw) in enumerate(arg_kw_list)]


def lowp_tol(dtype):
  return 1e-2 if dtype in ("float16", "bfloat16") else 1e-5


# ---- quantile / percentile / median ---------------------------------------------------------
METHODS = ["linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf"]


@pytest.mark.parametrize("method", METHODS)
def test_quantile_methods(method):
  x = values("float32", (2, 3, 4))
  x[1, 2, 0] = nan     # NaN anywhere in a slice makes that slice NaN
  q = np.array([0.0, 0.1, 0.5, 0.77, 1.0], np.float32)
  check_all(cases_for("quantile", [
      ((x, 0.25), {"method": method}), ((x, q), {"axis": 0, "method": method}),
      ((x, 0.25), {"axis": -1, "keepdims": True, "method": method}),
      ((x[0], q), {"axis": (0, 1), "method": method}),
      ((x, q), {"axis": (2, 0), "keepdims": True, "method": method}),
  ]) + cases_for("percentile", [((x, q * 100), {"axis": 1, "method": method})]))


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_quantile_median_dtypes(dtype):
  x = values(dtype, (4, 5))
  check_all(cases_for("median", [((x,), {}), ((x,), {"axis": -1, "keepdims": True})])
            + cases_for("quantile", [((x, np.array([0.5, 0.9])), {"axis": 1,
                                                                  "method": "lower"})])
            + cases_for("percentile", [((x, 25), {"axis": 0, "method": "nearest"})]))
  if dtype == "float32":
    check_all(cases_for("quantile", [((x, 1), {}), ((x, np.float16(0.5)), {"axis": 0}),
                                     ((x, True), {})]))


def test_quantile_special_inputs():
  inf_row = np.array([[-inf, 1.0, inf, 2.0], [0.0, -0.0, 3.0, 1.0]], np.float32)
  w = np.array([1.0, 2.0, 0.0, 1.0], np.float32)
  check_all(
      cases_for("median", [((inf_row,), {"axis": 1}), ((np.array(3.5),), {}),
                           ((2,), {}), ((np.zeros((0, 3), np.float32),), {"axis": 1}),
                           ((np.zeros((0, 3), np.float32),), {"axis": 0}),
                           ((np.array([True, False, True]),), {})])
      + cases_for("quantile", [((inf_row, 0.5), {"axis": 1, "method": "inverted_cdf",
                                                 "weights": w}),
                               ((inf_row, np.array([0.3, 0.6])),
                                {"axis": 1, "method": "inverted_cdf", "weights": w,
                                 "keepdims": True}),
                               ((inf_row, 0.5), {"method": "inverted_cdf",
                                                 "weights": np.ones((2, 4), np.float32)}),
                               ((np.array(2.0), 0.5), {}), ((inf_row, 0.5), {"axis": ()}),
                               ]))


# ---- average, ptp --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_average(dtype):
  x = values(dtype, (3, 4))
  w_full = values("float32", (3, 4)) ** 2 + 0.5
  w_axis = np.array([1, 2, 3, 4], np.int32)
  cases = [((x,), {"axis": 0}), ((x,), {"weights": w_full, "returned": True}),
           ((x,), {"axis": 1, "weights": w_axis, "keepdims": True, "returned": True})]
  if dtype == "float32":
    cases += [((x,), {}), ((x,), {"axis": -1, "keepdims": True}),
              ((x,), {"axis": (0, 1), "returned": True}), ((x,), {"returned": True}),
              ((x,), {"axis": (1, 0), "weights": w_full.T}),
              ((x.astype(np.float16),), {"axis": 1, "weights": w_axis, "returned": True})]
  check_all(cases_for("average", cases, tol=lowp_tol(dtype)))


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_ptp(dtype):
  x = values(dtype, (3, 4))
  if DTYPES[dtype].kind == "f":
    x[0, 1] = nan
  check_all(cases_for("ptp", [((x,), {"axis": 0}), ((x,), {"axis": -1, "keepdims": True})]))


def test_average_ptp_errors_and_scalars():
  x = values("float32", (3, 4))
  check_all(cases_for("average", [
      ((x,), {"weights": np.ones(4)}),                 # shapes differ, no axis
      ((x,), {"axis": 0, "weights": np.ones(4)}),      # wrong axis length
      ((Raw([1.0, 2.0]),), {}), ((2,), {}), ((np.zeros((0, 2)),), {"axis": 0}),
      ((x,), {"axis": 2}),
  ]) + cases_for("ptp", [((x,), {"out": np.zeros(4)}), ((3,), {}), ((Raw([1, 2]),), {}),
                         ((np.zeros((0, 2)),), {"axis": 1})]))


# ---- cov, corrcoef --------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "float16", "float32", "complex64"])
def test_cov_corrcoef(dtype):
  m = values(dtype, (3, 6))
  y = values(dtype, (2, 6), seed=1)
  fw = np.array([1, 2, 0, 3, 1, 1], np.int32)
  aw = np.array([0.5, 1.0, 2.0, 1.0, 0.25, 1.0], np.float32)
  tol = lowp_tol(dtype) * 10
  cov_cases = [((m,), {}), ((m, y), {"fweights": fw})]
  corr_cases = [((m,), {})]
  if dtype == "float32":
    cov_cases += [
        ((m,), {"rowvar": False}), ((m[0],), {}), ((m[0], m[1]), {}), ((m,), {"bias": True}),
        ((m,), {"ddof": 0}), ((m,), {"aweights": aw, "ddof": 2}),
        ((m,), {"fweights": fw, "aweights": aw}),
        ((m,), {"fweights": fw, "aweights": aw, "ddof": 0}), ((m,), {"dtype": np.float16}),
        ((m.T, y.T), {"rowvar": False})]
    corr_cases += [((m, y), {}), ((m,), {"rowvar": False}), ((m[0],), {}),
                   ((m,), {"dtype": np.float16})]
  check_all(cases_for("cov", cov_cases, tol=tol) + cases_for("corrcoef", corr_cases, tol=tol))


def test_cov_edge_cases():
  m = values("float32", (3, 6))
  check_all(cases_for("cov", [
      ((np.zeros((0, 4), np.float32),), {}), ((np.zeros((3, 0), np.float32),), {}),
      ((np.zeros((1, 0), np.float32),), {}), ((np.array(2.0),), {}),
      ((np.ones((2, 2, 2)),), {}), ((m, np.ones((2, 2, 6))), {}),
      ((m,), {"fweights": np.ones(6)}), ((m,), {"fweights": np.ones((2, 6), np.int32)}),
      ((m,), {"fweights": np.ones(5, np.int32)}), ((m,), {"aweights": np.ones(5)}),
      ((m,), {"dtype": np.int32}), ((Raw([[1.0, 2.0]]),), {}),
      ((np.array([[1.0, 1.0, 1.0]]),), {}),
  ]) + cases_for("corrcoef", [
      ((np.array([[1.0, 1.0, 1.0], [1.0, 2.0, 3.0]]),), {}), ((np.array([3.0, 3.0]),), {}),
      ((m,), {"dtype": np.int8}), ((np.zeros((0, 3), np.float32),), {}),
  ]))


# ---- histograms -----------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8", "int32", "float16", "float32"])
def test_histogram(dtype):
  a = values(dtype, (20,))
  w = values("float32", (20,), seed=3)
  hist = [((a,), {}), ((a,), {"bins": 3, "weights": w})]
  edges = [((a,), {"bins": 3, "range": [0, 2]})]
  if dtype == "float32":
    hist += [((a,), {"bins": np.array([-2.0, -0.5, 0.0, 1.0, 3.0])}),
             ((a,), {"bins": 3, "range": (-1, 1)}), ((a,), {"bins": 5, "density": True}),
             ((a,), {"bins": 3, "weights": w, "density": True}),
             ((a.reshape(4, 5),), {"bins": 3})]
    edges += [((a,), {}), ((a,), {"bins": np.array([0, 1, 5])})]
  check_all(cases_for("histogram", hist) + cases_for("histogram_bin_edges", edges))


def test_histogram_special():
  x = np.array([nan, 1.0, 2.0, inf, -inf, 2.0, 3.0], np.float32)
  const = np.full(5, 2.0, np.float32)
  check_all(cases_for("histogram", [
      ((x,), {"bins": 3, "range": (0, 3)}), ((const,), {"bins": 4}),
      ((np.zeros(0, np.float32),), {"bins": 2, "range": (0, 1)}),
      ((np.array([1.0, 2.0]),), {"bins": "auto"}), ((x,), {"weights": np.ones(3)}),
      ((Raw([1.0, 2.0]),), {}), ((x,), {"bins": 2, "range": (0, 1, 2)}),
      ((np.array(1.5),), {"bins": 2}),
  ]) + cases_for("histogram_bin_edges", [((const,), {"bins": 2}), ((x,), {"bins": "auto"})]))


def test_histogram2d_dd():
  x, y = values("float32", (25,)), values("float32", (25,), seed=1)
  sample = np.stack([x, y, values("int32", (25,), seed=2)], axis=1)
  w = values("float32", (25,), seed=4) ** 2
  check_all(cases_for("histogram2d", [
      ((x, y), {}), ((x, y), {"bins": 3}), ((x, y), {"bins": [2, 4]}),
      ((x, y), {"bins": np.array([-2.0, 0.0, 0.5, 2.0])}),
      ((x, y), {"bins": [np.array([-1.0, 0.0, 1.0]), 3]}),
      ((x, y), {"bins": 3, "range": [(-1, 1), (0, 2)], "weights": w}),
      ((x, y), {"bins": 2, "density": True}),
  ]) + cases_for("histogramdd", [
      ((sample,), {"bins": 2}), ((sample,), {"bins": (2, 3, 2), "weights": w}),
      ((sample,), {"bins": 2, "range": [None, (-1, 1), (0, 5)], "density": True}),
      ((sample,), {"bins": (2, 3)}), ((sample,), {"weights": np.ones(3)}),
      ((sample,), {"range": [(0, 1)]}), ((sample[:, :1].astype(np.int32),), {"bins": 3}),
  ]))


# ---- differences, gradient, trapezoid, unwrap ------------------------------------------------
@pytest.mark.parametrize("dtype", list(DTYPES))
def test_diff_ediff1d(dtype):
  x = values(dtype, (3, 5))
  diff = [((x,), {"n": 2}), ((x,), {"axis": 0, "prepend": 1, "append": x[-1:]})]
  ediff = [((x,), {"to_begin": np.array([1, 2]), "to_end": 2.5})]
  if dtype == "float32":
    diff += [((x,), {}), ((x,), {"n": 0}), ((x,), {"n": 3, "axis": -1}),
             ((x,), {"append": x[:, :2]}), ((x,), {"n": -1}), ((x[0, 0],), {}),
             ((x,), {"axis": 2}), ((x,), {"n": 7})]
    ediff += [((x,), {}), ((x[0],), {"to_begin": 0, "to_end": np.array([[7]])}),
              ((x[:0],), {})]
  check_all(cases_for("diff", diff) + cases_for("ediff1d", ediff))


@pytest.mark.parametrize("dtype", ["int32", "float16", "float32", "complex64"])
def test_gradient(dtype):
  f = values(dtype, (4, 5))
  coords = np.array([0.0, 0.5, 1.5, 2.0, 3.5], np.float32)
  cases = [((f,), {}), ((f, 0.5, coords), {})]
  if dtype == "float32":
    cases += [((f,), {"axis": 1}), ((f, 2.0), {"axis": (0, -1)}), ((f, coords), {"axis": -1}),
              ((f[0],), {}), ((f,), {"axis": ()}), ((f, coords), {"axis": 0}),
              ((f, 1.0, 2.0, 3.0), {}), ((f[:1],), {}), ((f,), {"edge_order": 1}),
              ((f, np.ones((2, 2))), {"axis": 0})]
  check_all(cases_for("gradient", cases, tol=lowp_tol(dtype) * 10))


@pytest.mark.parametrize("dtype", ["bool", "int32", "float16", "float32", "complex64"])
def test_trapezoid(dtype):
  y = values(dtype, (3, 5))
  x = np.array([0.0, 0.5, 1.5, 2.0, 3.5], np.float32)
  cases = [((y,), {}), ((y, x[:3]), {"axis": 0})]
  if dtype == "float32":
    cases += [((y,), {"dx": 0.5}), ((y, x), {}), ((y, np.tile(x, (3, 1))), {}),
              ((y,), {"dx": x[:4]}), ((y,), {"dx": np.full((3, 1), 2.0, np.float32)}),
              ((y[:, :1],), {}), ((y, x), {"axis": 2})]
  check_all(cases_for("trapezoid", cases, tol=lowp_tol(dtype) * 10))


@pytest.mark.parametrize("dtype", ["int8", "int32", "float16", "float32", "complex64"])
def test_unwrap(dtype):
  p = (values("float32", (3, 8)) * 4).astype(DTYPES[dtype])
  cases = [((p,), {}), ((p,), {"axis": 0, "period": 4})]
  if dtype == "float32":
    cases += [((p,), {"discont": 1.0}), ((p,), {"period": 5.0, "discont": 3}),
              ((p[:, :0],), {}), ((p[0, 0],), {})]
  check_all(cases_for("unwrap", cases, tol=lowp_tol(dtype) * 10))


# ---- interp ---------------------------------------------------------------------------------
@pytest.mark.parametrize("dtype", ["int32", "float16", "float32"])
def test_interp(dtype):
  xp = np.array([-2.0, -1.0, 0.0, 0.5, 2.0, 2.0, 3.0]).astype(DTYPES[dtype])
  fp = np.array([1.0, 0.0, 2.0, -1.0, 3.0, 4.0, 0.5], np.float32)
  x = np.array([-3.0, -2.0, -1.5, 0.0, 0.25, 1.9, 2.0, 2.5, 3.0, 4.0, nan, inf],
               np.float32)
  cases = [((x, xp, fp), {}), ((x, xp, fp), {"period": 2.5})]
  if dtype == "float32":
    cases += [((x, xp, fp), {"left": -5.0, "right": 7.0}),
              ((x, xp, fp), {"left": "extrapolate", "right": "extrapolate"}),
              ((x, xp, fp), {"right": "extrapolate"}), ((x.reshape(3, 4), xp, fp), {}),
              ((1.5, xp, fp), {}), ((x, xp, fp.astype(np.complex64)), {})]
  check_all(cases_for("interp", cases, tol=lowp_tol(dtype)))


def test_interp_errors():
  xp, fp = np.arange(4.0), np.arange(4.0) ** 2
  check_all(cases_for("interp", [
      ((1.0, xp, fp[:3]), {}), ((1.0, xp.reshape(2, 2), fp.reshape(2, 2)), {}),
      ((1.0, xp, fp), {"left": "foo"}), ((1.0, xp, fp), {"right": "bar"}),
      ((np.array([1j]), xp, fp), {}), ((1.0, xp, fp), {"period": np.ones(2)}),
      ((1.0, xp.astype(BF16), fp), {}),
  ]))


# ---- convolve, correlate ---------------------------------------------------------------------
@pytest.mark.parametrize("name", ["convolve", "correlate"])
def test_convolve_correlate_modes(name):
  a, v = values("float32", (9,)), values("float32", (4,), seed=1)
  cases = []
  for mode in ["full", "same", "valid"]:
    cases += cases_for(name, [((a, v), {"mode": mode}), ((v, a), {"mode": mode}),
                              ((a, v[:1]), {"mode": mode}), ((v[:3], v), {"mode": mode})])
  cases += cases_for(name, [
      ((a, v), {"precision": "highest"}), ((a, v), {"mode": "nope"}), ((a, v[:0]), {}),
      ((a.reshape(3, 3), v), {}), ((a, 2), {}),
  ])
  check_all(cases)


@pytest.mark.parametrize("dtype", ["bool", "int8", "int32", "float16", "complex64"])
def test_convolve_correlate_dtypes(dtype):
  a, v = values(dtype, (9,)), values(dtype, (4,), seed=1)
  tol = lowp_tol(dtype)
  check_all(cases_for("convolve", [((a, v), {}), ((v, np.real(a).astype(np.float32)), {"mode": "same"})],
                      tol=tol)
            + cases_for("correlate", [((v, a), {"mode": "full"}),
                                      ((a, v), {"preferred_element_type": np.float32})],
                        tol=tol))


def test_convolve_int_preferred():
  a, v = values("int8", (7,)), values("int8", (3,), seed=2)
  check_all(cases_for("convolve", [((a, v), {"preferred_element_type": np.int32}),
                                   ((a, v.astype(np.int32)), {"preferred_element_type":
                                                              np.int32, "mode": "same"})])
            + cases_for("correlate", [((a, v), {"preferred_element_type": np.int8,
                                                "mode": "full"})]))


# ---- jit, grad, vmap -------------------------------------------------------------------------
JIT_CASES = {
    "quantile": lambda np_, x: [np_.quantile(x, 0.3, axis=1),
                                np_.quantile(x, np_.array([0.2, 0.9]), method="midpoint")],
    "percentile": lambda np_, x: [np_.percentile(x, 40.0, axis=(0, 1), keepdims=True)],
    "median": lambda np_, x: [np_.median(x), np_.median(x, axis=-1)],
    "average": lambda np_, x: [np_.average(x, axis=1, weights=np_.abs(x[0])),
                               np_.average(x, returned=True), np_.ptp(x, axis=0)],
    "cov": lambda np_, x: [np_.cov(x), np_.cov(x, x[:, :1] * 2, rowvar=False)],
    "corrcoef": lambda np_, x: [np_.corrcoef(x)],
    "histogram": lambda np_, x: [*np_.histogram(x, bins=4), np_.histogram_bin_edges(x, 3),
                                 *np_.histogram2d(x[0], x[1], bins=2),
                                 np_.histogramdd(x.T, bins=2)[0]],
    "diff": lambda np_, x: [np_.diff(x), np_.diff(x, axis=0, append=0.0),
                            np_.ediff1d(x, to_begin=-1.0)],
    "gradient": lambda np_, x: np_.gradient(x, 0.5, np_.arange(6.0) ** 2),
    "trapezoid": lambda np_, x: [np_.trapezoid(x), np_.trapezoid(x, np_.arange(6.0) ** 2)],
    "interp": lambda np_, x: [np_.interp(x, np_.arange(-2.0, 2.0), np_.arange(4.0) ** 2),
                              np_.interp(x, np_.arange(4.0), np_.arange(4.0), period=3.0)],
    "convolve": lambda np_, x: [np_.convolve(x[0], x[1, :3], mode="same"),
                                np_.correlate(x[0], x[1, :3], mode="full")],
    "unwrap": lambda np_, x: [np_.unwrap(4 * x, axis=0)],
}


@pytest.mark.parametrize("name", list(JIT_CASES))
def test_under_jit(name):
  x = values("float32", (4, 6))
  fn = JIT_CASES[name]
  expected = jax.jit(lambda x: fn(jnp, x))(x)
  actual = arrax.jit(lambda x: fn(anp, x))(x)
  assert_tree_same(actual, expected, tol=1e-5)


GRAD_CASES = {
    "quantile": lambda np_, x: np_.quantile(x, np_.array([0.3, 0.8]), axis=1).sum(),
    "percentile": lambda np_, x: np_.percentile(x, 60.0, axis=0, method="nearest").sum(),
    "median": lambda np_, x: np_.median(x, axis=0).sum(),
    "average": lambda np_, x: (np_.average(x, axis=1, weights=np_.arange(1.0, 7.0)).sum()
                               + np_.average(x[0], weights=x[1] ** 2)),
    "ptp": lambda np_, x: np_.ptp(x, axis=1).sum(),
    "cov": lambda np_, x: (np_.cov(x, aweights=np_.arange(1.0, 7.0)) ** 2).sum(),
    "corrcoef": lambda np_, x: (np_.corrcoef(x) ** 2).sum(),
    "histogram_weights": lambda np_, x: (np_.histogram(x[0], 3, weights=x[1])[0] ** 2).sum(),
    "diff": lambda np_, x: (np_.diff(x, 2) ** 2).sum(),
    "gradient": lambda np_, x: (np_.gradient(x, axis=1) ** 2).sum(),
    "trapezoid": lambda np_, x: np_.trapezoid(x ** 2, np_.arange(6.0) ** 2).sum(),
    "interp_x": lambda np_, x: np_.interp(x, np_.array([-1.0, 0, 1, 2]),
                                          np_.array([0.0, 2, 1, 3])).sum(),
    "interp_fp": lambda np_, x: np_.interp(np_.array([-0.5, 0.3, 1.7]),
                                           np_.array([-1.0, 0, 1, 2]), x[0, :4]).sum(),
    "convolve": lambda np_, x: ((np_.convolve(x[0], x[1, :3]) ** 2).sum()
                                + (np_.correlate(x[0], x[1, :4], mode="same") ** 2).sum()),
    "unwrap": lambda np_, x: (np_.unwrap(4 * x) ** 2).sum(),
}


@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_grad_and_vmap(name):
  x = values("float32", (4, 6), seed=5)
  fn = GRAD_CASES[name]
  assert_close(arrax.grad(lambda x: fn(anp, x))(x), jax.grad(lambda x: fn(jnp, x))(x),
               tol=1e-4)
  xs = np.stack([x, 1.5 * x])
  assert_close(arrax.vmap(lambda x: fn(anp, x))(xs), jax.vmap(lambda x: fn(jnp, x))(xs),
               tol=1e-4)


def test_x64(x64):
  x = values("float32", (3, 6)).astype(np.float64)
  xi = values("int32", (3, 6))
  check_all(
      cases_for("quantile", [((x, 0.3), {"axis": 1}), ((xi, 0.5), {})])
      + cases_for("median", [((xi,), {"axis": 0})])
      + cases_for("average", [((xi,), {"axis": 1, "weights": np.arange(6)})])
      + cases_for("cov", [((x,), {}), ((xi,), {"fweights": np.arange(1, 7)})])
      + cases_for("histogram", [((x[0],), {"bins": 3})])
      + cases_for("interp", [((x[0], np.arange(4.0), np.arange(4.0) ** 2), {})])
      + cases_for("convolve", [((x[0], x[1, :3]), {}), ((xi[0], xi[1, :2]), {})])
      + cases_for("trapezoid", [((xi,), {})]) + cases_for("diff", [((xi,), {})]))


def test_static_arguments_must_be_concrete():
  x = values("float32", (3, 5))
  with pytest.raises(arrax.errors.ConcretizationTypeError):
    arrax.jit(lambda x, b: anp.histogram(x, bins=b))(x, 3)
  with pytest.raises(arrax.errors.ConcretizationTypeError):
    arrax.jit(lambda x, b: anp.histogram_bin_edges(x, bins=b))(x, 3)
  with pytest.raises(jax.errors.ConcretizationTypeError):
    jax.jit(lambda x, b: jnp.histogram(x, bins=b))(x, 3)


# ---- jaxprs ---------------------------------------------------------------------------------
JAXPR_CASES = {
    "median": lambda np_: lambda x: np_.median(x, axis=0),
    "quantile_tuple": lambda np_: lambda x: np_.quantile(x, 0.3, axis=(0, 1), keepdims=True),
    "quantile_cdf": lambda np_: lambda x: np_.quantile(x, 0.3, axis=1, method="inverted_cdf"),
    "percentile": lambda np_: lambda x: np_.percentile(x, 30.0, axis=0),
    "average": lambda np_: lambda x: np_.average(x, axis=1, weights=np_.ones(4)),
    "ptp": lambda np_: lambda x: np_.ptp(x, axis=1),
    "cov": lambda np_: lambda x: np_.cov(x, fweights=np_.arange(4), aweights=np_.ones(4)),
    "diff": lambda np_: lambda x: np_.diff(x, axis=0, prepend=0.0),
    "ediff1d": lambda np_: lambda x: np_.ediff1d(x),
    "gradient": lambda np_: lambda x: np_.gradient(x),
    "unwrap": lambda np_: lambda x: np_.unwrap(x),
}


@pytest.mark.parametrize("name", list(JAXPR_CASES))
def test_jaxpr_matches(name):
  x = np.arange(12.0, dtype=np.float32).reshape(3, 4)
  mk = JAXPR_CASES[name]
  assert str(arrax.make_jaxpr(mk(anp))(x)) == str(jax.make_jaxpr(mk(jnp))(x))


def test_signatures():
  import inspect
  for name in ["median", "percentile", "quantile", "average", "ptp", "cov", "corrcoef",
               "histogram", "histogram2d", "histogramdd", "histogram_bin_edges", "diff",
               "ediff1d", "gradient", "trapezoid", "interp", "convolve", "correlate",
               "unwrap"]:
    a, j = inspect.signature(getattr(anp, name)), inspect.signature(getattr(jnp, name))
    assert [(p.name, p.kind, p.default) for p in a.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in j.parameters.values()], name
    assert getattr(anp, name).__doc__, name
