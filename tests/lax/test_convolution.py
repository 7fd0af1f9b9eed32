"""Differential tests of arrax.lax convolutions against jax.lax (JAX 0.10.2).

conv_general_dilated over 1-D/2-D/3-D shapes, dimension numbers, strides, paddings, dilations,
feature and batch groups and dtypes: values, dtypes, weak types, jit, vjp in both operands
(with feature/batch groups), vmap over lhs, rhs or both, printed jaxprs, numerical gradients and
error classes; the wrappers (conv, conv_with_general_padding, conv_transpose,
conv_general_dilated_patches, conv_general_dilated_local) and the shape/dimension-number
helpers.
"""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import warnings  # noqa: E402

import jax  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax as jlax  # noqa: E402

import arrax  # noqa: E402
from arrax import lax as alax  # noqa: E402
from arrax import test_util as atu  # noqa: E402
from arrax._src.array import device_put_value  # noqa: E402
from oracle import assert_same, assert_tree_same, raised, same_exception  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


def make(shape, dtype=np.float32, seed=0):
  """Random values of `dtype`: small integers for integer/bool dtypes, halves for floats (so
  low-precision sums stay exact)."""
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind == "u":
    return rng.integers(0, 4, shape).astype(dtype)
  if dtype.kind == "i":
    return rng.integers(-3, 4, shape).astype(dtype)
  vals = rng.integers(-4, 5, shape) / 2
  if dtype.kind == "c":
    return (vals + 1j * rng.integers(-4, 5, shape) / 2).astype(dtype)
  return vals.astype(dtype)


def to_arrax(x):
  return device_put_value(np.asarray(x))


def lax_of(lib):
  return jlax if lib is jax else alax


# ---- configurations --------------------------------------------------------------------------
# (lhs shape, rhs shape, keyword arguments of conv_general_dilated)
CONFIGS = {
    "1d_valid": ((2, 3, 9), (4, 3, 3), dict(window_strides=(1,), padding="VALID")),
    "1d_same_stride": ((2, 3, 10), (4, 3, 4), dict(window_strides=(2,), padding="SAME")),
    "2d_valid": ((2, 3, 7, 6), (5, 3, 3, 2), dict(window_strides=(1, 1), padding="VALID")),
    "2d_same_strides": ((2, 3, 7, 8), (4, 3, 3, 2), dict(window_strides=(2, 3), padding="SAME")),
    "2d_same_lower": ((1, 2, 6, 7), (3, 2, 2, 4),
                      dict(window_strides=(1, 2), padding="SAME_LOWER")),
    "2d_explicit_pad": ((2, 2, 5, 6), (3, 2, 3, 3),
                        dict(window_strides=(1, 2), padding=((1, 2), (0, 3)))),
    "2d_negative_pad": ((2, 2, 7, 6), (3, 2, 2, 2),
                        dict(window_strides=(1, 1), padding=((-1, 2), (1, -1)))),
    "2d_lhs_dilation": ((2, 3, 4, 5), (2, 3, 3, 2),
                        dict(window_strides=(1, 1), padding=((2, 2), (1, 0)),
                             lhs_dilation=(2, 3))),
    "2d_rhs_dilation": ((1, 3, 8, 9), (2, 3, 3, 2),
                        dict(window_strides=(1, 1), padding="SAME", rhs_dilation=(2, 3))),
    "2d_all_dilations": ((2, 2, 5, 6), (3, 2, 2, 3),
                         dict(window_strides=(2, 1), padding=((1, 1), (2, 0)),
                              lhs_dilation=(2, 1), rhs_dilation=(1, 2))),
    "2d_nhwc": ((2, 7, 6, 3), (3, 2, 3, 4),
                dict(window_strides=(2, 1), padding="SAME",
                     dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "2d_mixed_dnums": ((2, 3, 6, 7), (4, 3, 2, 3),
                       dict(window_strides=(1, 2), padding="VALID",
                            dimension_numbers=("NCHW", "OIHW", "NHWC"))),
    "2d_odd_dnums": ((6, 2, 3, 7), (3, 3, 4, 2),
                     dict(window_strides=(1, 2), padding=((1, 0), (0, 1)), rhs_dilation=(2, 1),
                          dimension_numbers=("HNCW", "WIOH", "CHWN"))),
    "2d_feature_groups": ((2, 6, 5, 5), (9, 2, 2, 2),
                          dict(window_strides=(1, 1), padding="SAME", feature_group_count=3)),
    "2d_depthwise_nhwc": ((2, 6, 6, 4), (3, 3, 1, 8),
                          dict(window_strides=(2, 2), padding="SAME", feature_group_count=4,
                               dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "2d_batch_groups": ((4, 3, 5, 5), (6, 3, 2, 2),
                        dict(window_strides=(1, 1), padding="VALID", batch_group_count=2)),
    "2d_batch_groups_nhwc": ((6, 5, 4, 2), (2, 3, 2, 6),
                             dict(window_strides=(1, 2), padding="SAME", batch_group_count=3,
                                  dimension_numbers=("NHWC", "HWIO", "NHWC"))),
    "3d_same": ((1, 2, 4, 5, 6), (3, 2, 2, 2, 3),
                dict(window_strides=(1, 2, 1), padding="SAME")),
    "3d_ndhwc_dilated": ((2, 4, 5, 4, 2), (2, 2, 2, 2, 3),
                         dict(window_strides=(1, 1, 2), padding="VALID", rhs_dilation=(2, 1, 1),
                              dimension_numbers=("NDHWC", "DHWIO", "NDHWC"))),
    "window_too_big": ((1, 2, 3, 3), (2, 2, 4, 2), dict(window_strides=(1, 1),
                                                        padding="VALID")),
    "zero_batch": ((0, 2, 4, 4), (3, 2, 2, 2), dict(window_strides=(1, 1), padding="SAME")),
    "no_spatial": ((3, 4), (5, 4), dict(window_strides=(), padding=())),
    "1x1_strided": ((2, 3, 5, 5), (4, 3, 1, 1), dict(window_strides=(2, 2), padding="VALID")),
}
# Configurations whose gradient and vmap are checked (all but the degenerate ones).
GRAD_CONFIGS = [k for k in CONFIGS if k not in ("zero_batch", "window_too_big")]


def conv_fn(lib, name):
  _, _, kw = CONFIGS[name]
  L = lax_of(lib)
  return lambda x, w: L.conv_general_dilated(x, w, **kw)


def operands(name, dtype=np.float32):
  lshape, rshape, _ = CONFIGS[name]
  return make(lshape, dtype, 0), make(rshape, dtype, 1)


# ---- values -----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", list(CONFIGS))
def test_values(name):
  x, w = operands(name)
  expected = conv_fn(jax, name)(x, w)
  assert_same(conv_fn(arrax, name)(to_arrax(x), to_arrax(w)), expected)


def test_jit_values_and_numpy_operands():
  for name in ["2d_nhwc", "2d_feature_groups", "2d_batch_groups", "3d_same"]:
    x, w = operands(name)
    expected = jax.jit(conv_fn(jax, name))(x, w)
    assert_same(arrax.jit(conv_fn(arrax, name))(x, w), expected)
    assert_same(conv_fn(arrax, name)(x, w), expected)     # NumPy operands, eagerly


@pytest.mark.parametrize("dtype", [np.float16, BF16, np.complex64, np.int32, np.int8, np.uint8,
                                   np.bool_], ids=lambda d: np.dtype(d).name)
def test_dtypes(dtype):
  f = lambda L, x, w: L.conv_general_dilated(  # noqa: E731
      x, w, (1, 2), "SAME", rhs_dilation=(1, 2), feature_group_count=2)
  x, w = make((2, 4, 5, 6), dtype), make((4, 2, 3, 2), dtype, 1)
  assert_same(f(alax, to_arrax(x), to_arrax(w)), f(jlax, x, w))


def test_complex_values_non_integer():
  # The complex lowering (three real convolutions) matches JAX's also for general values.
  rng = np.random.default_rng(3)
  x = (rng.standard_normal((2, 3, 6, 5)) + 1j * rng.standard_normal((2, 3, 6, 5)))
  w = (rng.standard_normal((4, 3, 3, 2)) + 1j * rng.standard_normal((4, 3, 3, 2)))
  x, w = x.astype(np.complex64), w.astype(np.complex64)
  f = lambda L, x, w: L.conv_general_dilated(x, w, (2, 1), "SAME",  # noqa: E731
                                             dimension_numbers=("NCHW", "OIHW", "NHWC"))
  assert_same(f(alax, to_arrax(x), to_arrax(w)), f(jlax, x, w), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("dtype,pet", [
    (np.int8, np.int32), (np.int8, np.float32), (np.float16, np.float32), (BF16, np.float32),
    (np.uint8, np.int32), (np.bool_, np.int32), (np.float32, np.float32),
    (np.complex64, np.complex64),
], ids=lambda d: np.dtype(d).name)
def test_preferred_element_type(dtype, pet):
  f = lambda L, x, w: L.conv_general_dilated(  # noqa: E731
      x, w, (1, 1), "VALID", preferred_element_type=pet)
  x, w = make((1, 2, 5, 4), dtype), make((3, 2, 2, 2), dtype, 1)
  assert_same(f(alax, to_arrax(x), to_arrax(w)), f(jlax, x, w))


def test_weak_type_and_precision():
  xw, ww = alax.broadcast(1.5, (1, 2, 4, 4)), alax.broadcast(0.5, (3, 2, 2, 2))
  jxw, jww = jlax.broadcast(1.5, (1, 2, 4, 4)), jlax.broadcast(0.5, (3, 2, 2, 2))
  assert_same(alax.conv(xw, ww, (1, 1), "SAME"), jlax.conv(jxw, jww, (1, 1), "SAME"))
  strong = make((3, 2, 2, 2))
  assert_same(alax.conv(xw, to_arrax(strong), (1, 1), "VALID"),
              jlax.conv(jxw, strong, (1, 1), "VALID"))
  x, w = make((1, 2, 4, 4)), make((3, 2, 2, 2))
  for p in [None, "highest", "bfloat16", ("high", "default")]:
    assert_same(alax.conv(to_arrax(x), to_arrax(w), (1, 1), "SAME", precision=p),
                jlax.conv(x, w, (1, 1), "SAME", precision=p))
  assert_same(alax.conv(to_arrax(x), to_arrax(w), (1, 1), "SAME",
                        precision=alax.Precision.HIGHEST),
              jlax.conv(x, w, (1, 1), "SAME", precision=jlax.Precision.HIGHEST))


def test_float64_x64(x64):
  x, w = operands("2d_all_dilations", np.float64)
  assert_same(conv_fn(arrax, "2d_all_dilations")(to_arrax(x), to_arrax(w)),
              conv_fn(jax, "2d_all_dilations")(x, w))


# ---- differentiation --------------------------------------------------------------------------
def _vjp_both(lib, name):
  f = conv_fn(lib, name)

  def run(x, w, ct):
    out, pullback = lib.vjp(f, x, w)
    return out, pullback(ct)
  return lib.jit(run)


@pytest.mark.parametrize("name", GRAD_CONFIGS)
def test_vjp_lhs_and_rhs(name):
  x, w = operands(name)
  out_shape = jax.eval_shape(conv_fn(jax, name), x, w).shape
  ct = make(out_shape, np.float32, 2)
  expected = _vjp_both(jax, name)(x, w, ct)
  assert_tree_same(_vjp_both(arrax, name)(x, w, ct), expected)


def test_vjp_degenerate_shapes():
  # Empty outputs: the kernel cotangent is a symbolic zero in JAX (materialized by vjp).
  for name in ["zero_batch", "window_too_big"]:
    x, w = operands(name)
    out_shape = jax.eval_shape(conv_fn(jax, name), x, w).shape
    ct = np.zeros(out_shape, np.float32)
    assert_tree_same(_vjp_both(arrax, name)(x, w, ct), _vjp_both(jax, name)(x, w, ct))


def test_jvp_bilinear():
  for name in ["2d_feature_groups", "2d_batch_groups_nhwc", "2d_all_dilations"]:
    x, w = operands(name)
    tx, tw = make(x.shape, np.float32, 5), make(w.shape, np.float32, 6)
    got = arrax.jit(lambda *a: arrax.jvp(conv_fn(arrax, name), a[:2], a[2:]))(x, w, tx, tw)
    want = jax.jit(lambda *a: jax.jvp(conv_fn(jax, name), a[:2], a[2:]))(x, w, tx, tw)
    assert_tree_same(got, want)


def test_grad_mixed_precision_preferred_element_type():
  # bfloat16 operands accumulated in float32: cotangents come back in bfloat16.
  f = lambda L, x, w: L.conv_general_dilated(  # noqa: E731
      x, w, (1, 1), "SAME", preferred_element_type=np.float32).sum()
  x, w = make((1, 2, 4, 4), BF16), make((3, 2, 2, 2), BF16, 1)
  got = arrax.grad(lambda x, w: f(alax, x, w), (0, 1))(x, w)
  want = jax.grad(lambda x, w: f(jlax, x, w), (0, 1))(x, w)
  assert_tree_same(got, want)


def test_complex_grad():
  rng = np.random.default_rng(0)
  x = (rng.standard_normal((1, 2, 5, 4)) + 1j * rng.standard_normal((1, 2, 5, 4))).astype(
      np.complex64)
  w = (rng.standard_normal((3, 2, 2, 2)) + 1j * rng.standard_normal((3, 2, 2, 2))).astype(
      np.complex64)
  f = lambda L, x, w: L.conv_general_dilated(x, w, (1, 2), "SAME")  # noqa: E731
  ct = np.ones((1, 3, 5, 2), np.complex64)

  def run(lib, L):
    out, pullback = lib.vjp(lambda x, w: f(L, x, w), x, w)
    return out, pullback(ct)
  assert_tree_same(run(arrax, alax), run(jax, jlax), tol=1e-4)


@pytest.mark.parametrize("lshape,rshape,kw", [
    ((1, 4, 4, 3), (2, 2, 2, 4), dict(window_strides=(2, 1), padding="SAME",
                                      rhs_dilation=(1, 2), feature_group_count=2)),
    ((4, 2, 5), (4, 2, 2), dict(window_strides=(2,), padding=((1, 0),), lhs_dilation=(2,),
                                batch_group_count=2)),
], ids=["feature_groups", "batch_groups"])
def test_numerical_gradients(x64, lshape, rshape, kw):
  rng = np.random.default_rng(1)
  x, w = rng.standard_normal(lshape), rng.standard_normal(rshape)
  f = arrax.jit(lambda x, w: alax.conv_general_dilated(x, w, **kw))
  atu.check_grads(f, (x, w), order=2, modes=["fwd", "rev"])


def test_second_order_matches_jax():
  name = "2d_same_strides"
  x, w = operands(name)

  def hess_vec(lib):
    f = conv_fn(lib, name)
    g = lib.grad(lambda x, w: (f(x, w) ** 2).sum(), (0, 1))
    return lib.jit(lambda x, w: lib.jvp(lambda a: g(a, w)[1], (x,), (x,)))
  assert_tree_same(hess_vec(arrax)(x, w), hess_vec(jax)(x, w))


# ---- batching ---------------------------------------------------------------------------------
def _moved(a, axis):
  return np.moveaxis(np.stack([a, a * 0.5 + 1, -a]), 0, axis)


@pytest.mark.parametrize("name", GRAD_CONFIGS)
def test_vmap(name):
  x, w = operands(name)
  xb, wb = _moved(x, 1 if x.ndim > 1 else 0), _moved(w, w.ndim)
  f_a, f_j = conv_fn(arrax, name), conv_fn(jax, name)
  for in_axes, args in [((1, None), (xb, w)), ((None, w.ndim), (x, wb)),
                        ((1, w.ndim), (xb, wb))]:
    want = jax.jit(jax.vmap(f_j, in_axes))(*args)
    assert_same(arrax.jit(arrax.vmap(arrax.jit(f_a), in_axes))(*args), want)


def test_vmap_size_zero_and_nested():
  x, w = operands("2d_feature_groups")
  f_a, f_j = conv_fn(arrax, "2d_feature_groups"), conv_fn(jax, "2d_feature_groups")
  xb = np.zeros((0,) + x.shape, np.float32)
  assert_same(arrax.vmap(f_a, (0, None))(xb, w), jax.vmap(f_j, (0, None))(xb, w))
  xbb, wbb = np.stack([_moved(x, 0)] * 2), np.stack([_moved(w, 0)] * 2)
  want = jax.vmap(jax.vmap(f_j))(xbb, wbb)
  assert_same(arrax.vmap(arrax.vmap(f_a))(xbb, wbb), want)


def test_vmap_of_grad():
  name = "2d_batch_groups"
  x, w = operands(name)
  xb = _moved(x, 0)

  def make_g(lib):
    f = conv_fn(lib, name)
    return lib.jit(lib.vmap(lib.grad(lambda x, w: (f(x, w) ** 2).sum(), (0, 1)), (0, None)))
  assert_tree_same(make_g(arrax)(xb, w), make_g(jax)(xb, w))


# ---- printed jaxprs ---------------------------------------------------------------------------
def _jaxprs_equal(make_fn, *args):
  want = str(jax.make_jaxpr(make_fn(jax))(*args))
  got = str(arrax.make_jaxpr(make_fn(arrax))(*args))
  assert got == want, f"\narrax:\n{got}\njax:\n{want}"


@pytest.mark.parametrize("name", ["2d_odd_dnums", "2d_feature_groups", "2d_batch_groups_nhwc",
                                  "2d_all_dilations", "no_spatial"])
def test_jaxpr_forward_and_grad(name):
  x, w = operands(name)
  _jaxprs_equal(lambda lib: conv_fn(lib, name), x, w)
  _jaxprs_equal(lambda lib: lib.grad(lambda x, w: conv_fn(lib, name)(x, w).sum(), (0, 1)),
                x, w)


def test_jaxpr_params():
  x, w = make((2, 3, 5, 5)), make((4, 3, 2, 2))
  _jaxprs_equal(lambda lib: lambda x, w: lax_of(lib).conv_general_dilated(
      x, w, (1, 1), "SAME", dimension_numbers=("NCHW", "OIHW", "NHWC"), precision="highest",
      preferred_element_type=np.float32), x, w)
  xi, wi = make((2, 3, 5, 5), np.int8), make((4, 3, 2, 2), np.int8)
  _jaxprs_equal(lambda lib: lambda x, w: lax_of(lib).conv(
      x, w, (2, 1), "VALID", preferred_element_type=np.int32), xi, wi)


@pytest.mark.parametrize("name", ["2d_feature_groups", "2d_batch_groups", "2d_nhwc"])
def test_jaxpr_vmap(name):
  x, w = operands(name)
  xb, wb = _moved(x, 1), _moved(w, w.ndim)
  for in_axes, args in [((1, None), (xb, w)), ((None, w.ndim), (x, wb)),
                        ((1, w.ndim), (xb, wb))]:
    _jaxprs_equal(lambda lib: lib.vmap(conv_fn(lib, name), in_axes), *args)


def test_jaxpr_wrappers():
  x = make((2, 5, 6, 3))
  for tk, w in ((False, make((3, 2, 3, 4))), (True, make((3, 2, 4, 3)))):
    _jaxprs_equal(lambda lib: lambda x, w: lax_of(lib).conv_transpose(
        x, w, (2, 1), "SAME", transpose_kernel=tk), x, w)
  _jaxprs_equal(lambda lib: lambda x: lax_of(lib).conv_general_dilated_patches(
      x, (2, 3), (1, 2), "SAME", dimension_numbers=("NHWC", "OIHW", "NHWC")), x)
  rl = make((5, 12, 4, 4))
  _jaxprs_equal(lambda lib: lambda x, w: lax_of(lib).conv_general_dilated_local(
      x, w, (1, 1), "VALID", (2, 2), dimension_numbers=("NCHW", "OIHW", "NCHW")),
      make((2, 3, 5, 5)), rl)


# ---- wrappers ---------------------------------------------------------------------------------
def _check_both(fn, *args, tol=None):
  """fn(lax module, *args) in arrax and JAX agree, or raise the same error class."""
  try:
    want = fn(jlax, *args)
  except Exception as e:  # noqa: BLE001
    with pytest.raises(type(e)):
      fn(alax, *args)
    return
  got = fn(alax, *args)
  if isinstance(want, (tuple, list)) and not hasattr(want, "shape"):
    assert type(got) is type(want) and tuple(map(tuple, got) if got and isinstance(
        got[0], tuple) else got) == tuple(map(tuple, want) if want and isinstance(
            want[0], tuple) else want), (got, want)
    return
  if tol is None:
    assert_same(got, want)
  else:
    assert_same(got, want, rtol=tol, atol=tol)


def test_conv_and_conv_with_general_padding():
  x, w = make((2, 3, 7, 6)), make((4, 3, 3, 2), seed=1)
  for padding in ["SAME", "VALID"]:
    _check_both(lambda L, x, w: L.conv(x, w, (2, 1), padding), x, w)
  for padding, ld, rd in [(((1, 1), (0, 2)), (1, 2), (2, 1)), ("SAME", None, (2, 1)),
                          ("VALID", None, None), (((0, 0), (1, 1)), (2, 2), None)]:
    _check_both(lambda L, x, w: L.conv_with_general_padding(x, w, (2, 1), padding, ld, rd),
                x, w)


@pytest.mark.parametrize("padding", ["SAME", "VALID", ((1, 0), (0, 2)), ((0, 0), (0, 0))],
                         ids=str)
def test_conv_transpose(padding):
  x = make((2, 5, 6, 3))
  for tk in (False, True):
    for consistent in (False, True):
      dn = ("NHWC", "HWOI", "NHWC") if tk else ("NHWC", "HWIO", "NHWC")
      w = make((3, 2, 3, 4) if not tk else (3, 2, 4, 3), seed=1)
      _check_both(lambda L, x, w: L.conv_transpose(
          x, w, (2, 1), padding, dimension_numbers=dn, transpose_kernel=tk,
          use_consistent_padding=consistent), x, w)
  # Default layouts by rank, dilation, NumPy kernels flipped with transpose_kernel.
  _check_both(lambda L, x, w: L.conv_transpose(x, w, (2, 1), padding, rhs_dilation=(2, 1)),
              x, make((3, 2, 3, 4), seed=1))
  _check_both(lambda L, x, w: L.conv_transpose(x, w, (2, 1), padding, transpose_kernel=True),
              x, make((3, 2, 4, 3), seed=1))


def test_conv_transpose_ranks_and_grad():
  _check_both(lambda L, x, w: L.conv_transpose(x, w, (2,), "SAME"), make((2, 5, 3)),
              make((3, 3, 4)))
  _check_both(lambda L, x, w: L.conv_transpose(x, w, (1, 2, 1), "VALID"), make((1, 3, 4, 2, 2)),
              make((2, 2, 2, 2, 3)))
  _check_both(lambda L, x, w: L.conv_transpose(x, w, (), "VALID"), make((3, 2)), make((2, 4)))
  _check_both(lambda L, x, w: L.conv_transpose(x, w, (2,), "SAME"),
              make((1, 1, 2, 5, 3)), make((1, 1, 3, 3, 4)))       # no default layout
  x, w = make((2, 5, 6, 3)), make((3, 2, 3, 4), seed=1)
  grads = [lib.grad(lambda x, w, L=lax_of(lib): (L.conv_transpose(x, w, (2, 2), "SAME") ** 2)
                    .sum(), (0, 1))(x, w) for lib in (jax, arrax)]
  assert_tree_same(grads[1], grads[0])


def test_conv_general_dilated_patches():
  x = make((2, 5, 6, 3))
  cases = [
      dict(filter_shape=(2, 3), window_strides=(1, 2), padding="SAME",
           dimension_numbers=("NHWC", "OIHW", "NHWC")),
      dict(filter_shape=(3, 2), window_strides=(1, 1), padding="VALID", rhs_dilation=(1, 2),
           lhs_dilation=(2, 1), dimension_numbers=("NHWC", "HWIO", "CNHW")),
      dict(filter_shape=(2, 2), window_strides=(2, 1), padding=((1, 0), (0, 1)),
           precision=None),
  ]
  for kw in cases:
    _check_both(lambda L, x: L.conv_general_dilated_patches(x, **kw), x)
  _check_both(lambda L, x: L.conv_general_dilated_patches(
      x, (2, 2), (1, 1), "VALID", precision=L.Precision.HIGHEST,
      preferred_element_type=np.float32), make((1, 2, 4, 4), np.int32))
  _check_both(lambda L, x: L.conv_general_dilated_patches(x, (2, 2), (1, 1), "VALID"),
              x.tolist())     # not an array: TypeError in both


def test_conv_general_dilated_local():
  x = make((2, 3, 5, 6))
  # out spatial (4, 5) for a (2, 2) window; rhs: I = 3 * 2 * 2 = 12.
  _check_both(lambda L, x, w: L.conv_general_dilated_local(
      x, w, (1, 1), "VALID", (2, 2)), x, make((4, 12, 4, 5), seed=1), tol=1e-5)
  _check_both(lambda L, x, w: L.conv_general_dilated_local(
      x, w, (2, 1), "SAME", (3, 2), rhs_dilation=(1, 2), precision="highest",
      dimension_numbers=("NCHW", "HWIO", "NHWC")), x, make((3, 6, 18, 4), seed=1), tol=1e-5)
  _check_both(lambda L, x, w: L.conv_general_dilated_local(
      x, w, (1, 1), "VALID", (2, 2), precision=3), x, make((4, 12, 4, 5), seed=1))
  grads = [lib.grad(lambda x, w, L=lax_of(lib): L.conv_general_dilated_local(
      x, w, (1, 1), "VALID", (2, 2)).sum(), (0, 1))(x, make((4, 12, 4, 5), seed=1))
      for lib in (jax, arrax)]
  assert_tree_same(grads[1], grads[0])


def test_shape_and_dimension_number_helpers():
  dn = ("NHWC", "HWIO", "NHWC")
  for pad in ["SAME", "VALID", ((1, 2), (0, 0))]:
    _check_both(lambda L: L.conv_general_shape_tuple((2, 5, 6, 3), (3, 2, 3, 4), (2, 1), pad,
                                                     dn))
    _check_both(lambda L: L.conv_transpose_shape_tuple((2, 5, 6, 3), (3, 2, 3, 4), (2, 1), pad,
                                                       dn))
  _check_both(lambda L: L.conv_shape_tuple((2, 3, 5, 6), (4, 3, 2, 3), (2, 1), "VALID"))
  _check_both(lambda L: L.conv_shape_tuple((4, 3, 5, 6), (4, 3, 2, 3), (2, 1),
                                           [(1, 1), (0, 1)], 2))
  _check_both(lambda L: L.conv_shape_tuple((4, 3, 5, 6), (4, 3, 2, 3), (2, 1), [(1, 1)]))
  _check_both(lambda L: L.conv_shape_tuple((4, 3, 5, 6), (4, 3, 2, 3), (2, 1),
                                           [(-9, 1), (0, 0)]))
  for spec in [("NHWC", "HWIO", "NHWC"), ("CWNH", "IOWH", "HNCW"), ("NCH", "OIH", "NHC")]:
    _check_both(lambda L: L.conv_general_permutations(spec))
    shape = tuple(range(1, len(spec[0]) + 1))
    assert (tuple(alax.conv_dimension_numbers(shape, shape, spec))
            == tuple(jlax.conv_dimension_numbers(shape, shape, spec)))
  assert (alax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None)
          == tuple(jlax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), None)))
  ours = alax.ConvDimensionNumbers((0, 1, 2), (1, 0, 2), (0, 2, 1))
  assert alax.conv_dimension_numbers((1, 2, 3), (1, 2, 3), ours) is ours
  assert repr(ours) == repr(jlax.ConvDimensionNumbers((0, 1, 2), (1, 0, 2), (0, 2, 1)))
  assert alax.ConvDimensionNumbers._fields == jlax.ConvDimensionNumbers._fields


@pytest.mark.parametrize("padding", ["SAME", "SAME_LOWER", "VALID", "same", "valid", "foo", 3])
def test_padtype_to_pads(padding):
  _check_both(lambda L: L.padtype_to_pads((5, 6, 7), (2, 3, 4), (2, 1, 3), padding))
  _check_both(lambda L: L.padtype_to_pads(np.array((5, 6)), np.array((2, 3)), np.array((2, 1)),
                                          padding if padding != 3 else "SAME"))
  got = alax.padtype_to_pads((5, 6), (2, 3), (2, 1), "SAME")
  assert all(type(v) is int for pair in got for v in pair)


# ---- errors -----------------------------------------------------------------------------------
X, W = make((1, 2, 4, 4)), make((3, 2, 2, 2))
ERRORS = {
    "mixed_dtypes": lambda L: L.conv_general_dilated(X, W.astype(np.int32), (1, 1), "VALID"),
    "ranks": lambda L: L.conv_general_dilated(X, W[0], (1, 1), "VALID"),
    "feature_groups": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                       feature_group_count=2),
    "feature_groups_0": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                         feature_group_count=0),
    "feature_groups_out": lambda L: L.conv_general_dilated(
        make((1, 4, 4, 4)), make((3, 2, 2, 2)), (1, 1), "VALID", feature_group_count=2),
    "batch_groups": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                     batch_group_count=2),
    "batch_groups_0": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                       batch_group_count=0),
    "batch_groups_out": lambda L: L.conv_general_dilated(
        make((2, 2, 4, 4)), W, (1, 1), "VALID", batch_group_count=2),
    "both_groups": lambda L: L.conv_general_dilated(
        make((2, 2, 4, 4)), make((2, 1, 2, 2)), (1, 1), "VALID", batch_group_count=2,
        feature_group_count=2),
    "strides_rank": lambda L: L.conv_general_dilated(X, W, (1,), "VALID"),
    "pads_rank": lambda L: L.conv_general_dilated(X, W, (1, 1), [(0, 0)]),
    "pads_triples": lambda L: L.conv_general_dilated(X, W, (1, 1), [(0, 0, 0), (0, 0, 1)]),
    "pads_int": lambda L: L.conv_general_dilated(X, W, (1, 1), 3),
    "pads_name": lambda L: L.conv_general_dilated(X, W, (1, 1), "FULL"),
    "pads_too_negative": lambda L: L.conv_general_dilated(X, W, (1, 1), [(-3, -3), (0, 0)]),
    "string_pad_lhs_dilation": lambda L: L.conv_general_dilated(X, W, (1, 1), "SAME",
                                                                lhs_dilation=(2, 1)),
    "zero_dilation": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                      rhs_dilation=(0, 1)),
    "zero_stride": lambda L: L.conv_general_dilated(X, W, (0, 1), "VALID"),
    "dnums_len": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                  dimension_numbers=("NCH", "OIHW", "NCHW")),
    "dnums_chars": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                    dimension_numbers=("NCHW", "OIHW", "NXHW")),
    "dnums_dup": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                  dimension_numbers=("NCHH", "OIHW", "NCHW")),
    "dnums_spatial": lambda L: L.conv_general_dilated(
        X, W, (1, 1), "VALID", dimension_numbers=("NCHW", "OIHW", "NCHX")),
    "dnums_type": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                   dimension_numbers="NCHW"),
    "dnums_two": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                  dimension_numbers=("NCHW", "OIHW")),
    "dnums_ints": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                   dimension_numbers=((0, 1, 2, 3),) * 3),
    "list_operand": lambda L: L.conv_general_dilated(X.tolist(), W, (1, 1), "VALID"),
    "pet_name": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                 preferred_element_type="foo"),
    "pet_narrower": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                     preferred_element_type=np.float16),
    "pet_sign": lambda L: L.conv_general_dilated(X.astype(np.int32), W.astype(np.int32), (1, 1),
                                                 "VALID", preferred_element_type=np.uint32),
    "pet_kind": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID",
                                                 preferred_element_type=np.complex64),
    "precision": lambda L: L.conv_general_dilated(X, W, (1, 1), "VALID", precision="foo"),
    "transpose_6d": lambda L: L.conv_transpose(make((1, 1, 1, 2, 3, 3)),
                                               make((1, 1, 1, 2, 3, 3)), (1,), "SAME"),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
  fn = ERRORS[name]
  with pytest.raises(Exception) as jax_err:
    fn(jlax)
  with pytest.raises(jax_err.type):
    fn(alax)


_OBJ = object()


@pytest.mark.parametrize("bad", [lambda lib: _OBJ, lambda lib: "x", lambda lib: lib.P("x")])
def test_out_sharding_errors(bad):
  """(out_sharding over a mesh: tests/sharding_in_types_cases.py) Not a sharding, or a
  PartitionSpec outside set_mesh: JAX's errors."""
  jax_exc = raised(lambda: jlax.conv_general_dilated(X, W, (1, 1), "VALID",
                                                     out_sharding=bad(jax)))
  err = same_exception(lambda: alax.conv_general_dilated(X, W, (1, 1), "VALID",
                                                         out_sharding=bad(arrax)), jax_exc)
  assert str(err) == str(jax_exc)


def test_signatures_match_jax():
  import inspect
  for name in ["conv_general_dilated", "conv", "conv_with_general_padding", "conv_transpose",
               "conv_general_dilated_patches", "conv_general_dilated_local",
               "conv_dimension_numbers", "conv_general_permutations",
               "conv_general_shape_tuple", "conv_shape_tuple", "conv_transpose_shape_tuple",
               "padtype_to_pads"]:
    ours = inspect.signature(getattr(alax, name))
    theirs = inspect.signature(getattr(jlax, name))
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in theirs.parameters.values()], name


def test_no_warnings_in_plain_use():
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    alax.conv(to_arrax(X), to_arrax(W), (1, 1), "SAME")
