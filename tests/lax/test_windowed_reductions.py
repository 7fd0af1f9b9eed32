"""Differential tests of arrax.lax.reduce_window (and its primitives) against jax.lax, and of
the stax convolution/pooling layers built on it against jax.example_libraries.stax.

Window sum/max/min and generic reducers (Python functions over pytrees) over shapes, strides,
paddings, base and window dilations and dtypes: values, jit, printed jaxprs, vmap, gradients
(max/min pooling through select_and_gather_add / select_and_scatter_add, second order),
numerical gradients, error classes.
"""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from jax import lax as jlax  # noqa: E402
from jax.example_libraries import stax as jstax  # noqa: E402

import arrax  # noqa: E402
import arrax.numpy as anp  # noqa: E402
from arrax import lax as alax  # noqa: E402
from arrax import test_util as atu  # noqa: E402
from arrax._src.array import device_put_value  # noqa: E402
from arrax.example_libraries import stax as astax  # noqa: E402
from oracle import assert_same, assert_tree_same  # noqa: E402

BF16 = np.dtype(ml_dtypes.bfloat16)


def make(shape, dtype=np.float32, seed=0, distinct=False):
  """Random values of `dtype` (small integers or halves, with ties unless `distinct`)."""
  rng = np.random.default_rng(seed)
  dtype = np.dtype(dtype)
  if distinct:   # no ties: gradients of max/min are then unambiguous
    vals = rng.permutation(int(np.prod(shape))).reshape(shape) / 4 - 3
    return vals.astype(dtype)
  if dtype == np.bool_:
    return rng.random(shape) < 0.5
  if dtype.kind == "u":
    return rng.integers(0, 5, shape).astype(dtype)
  if dtype.kind == "i":
    return rng.integers(-4, 5, shape).astype(dtype)
  vals = rng.integers(-6, 7, shape) / 2
  if dtype.kind == "c":
    return (vals + 1j * rng.integers(-6, 7, shape) / 2).astype(dtype)
  return vals.astype(dtype)


def to_arrax(x):
  return device_put_value(np.asarray(x))


def lax_of(lib):
  return jlax if lib is jax else alax


# (operand shape, reduce_window arguments after the reducer)
WINDOWS = {
    "1d": ((9,), dict(window_dimensions=(3,), window_strides=(2,), padding="VALID")),
    "2d_same": ((5, 7), dict(window_dimensions=(2, 3), window_strides=(1, 2), padding="SAME")),
    "2d_same_lower": ((6, 5), dict(window_dimensions=(3, 2), window_strides=(2, 1),
                                   padding="SAME_LOWER")),
    "2d_explicit": ((5, 6), dict(window_dimensions=(2, 2), window_strides=(2, 1),
                                 padding=((1, 0), (2, 1)))),
    "2d_default_strides": ((4, 5), dict(window_dimensions=(2, 3))),
    "pool_nchw": ((2, 3, 6, 5), dict(window_dimensions=(1, 1, 2, 2),
                                     window_strides=(1, 1, 2, 2), padding="SAME")),
    "pool_overlap_nhwc": ((2, 5, 6, 2), dict(window_dimensions=(1, 3, 3, 1),
                                             window_strides=(1, 2, 1, 1), padding="VALID")),
    "base_dilation": ((4, 5), dict(window_dimensions=(2, 2), window_strides=(1, 2),
                                   padding=((1, 1), (0, 1)), base_dilation=(2, 1))),
    "window_dilation": ((6, 7), dict(window_dimensions=(2, 3), window_strides=(2, 1),
                                     padding="SAME", window_dilation=(2, 2))),
    "both_dilations": ((4, 5), dict(window_dimensions=(2, 2), window_strides=(1, 1),
                                    padding=((0, 1), (1, 0)), base_dilation=(1, 2),
                                    window_dilation=(2, 1))),
    "3d": ((3, 4, 5), dict(window_dimensions=(2, 2, 3), window_strides=(1, 2, 2),
                           padding="SAME")),
    "window_too_big": ((3, 3), dict(window_dimensions=(4, 1))),
    "empty": ((0, 4), dict(window_dimensions=(1, 2))),
    "rank0": ((), dict(window_dimensions=())),
}
# Window dilation has no VJP for max/min in JAX either (select_and_gather_add's transpose).
GRAD_WINDOWS = [k for k in WINDOWS if k not in ("empty", "rank0")]
NO_MAX_VJP = ("window_dilation", "both_dilations")

def _init(kind, dtype):
  """The identity of the monoid `kind` for `dtype`, as a user writes it."""
  dtype = np.dtype(dtype)
  if kind == "sum":
    return 0. if dtype.kind in "fc" or dtype == BF16 else 0
  if dtype.kind in "fc" or dtype == BF16:
    return -jnp.inf if kind == "max" else jnp.inf
  if dtype == np.bool_:
    return np.bool_(kind == "min")
  info = np.iinfo(dtype)
  return np.array(info.min if kind == "max" else info.max, dtype)


def window_fn(lib, name, kind, dtype=np.float32):
  _, kw = WINDOWS[name]
  L = lax_of(lib)
  if kind in ("sum", "max", "min"):
    op = {"sum": L.add, "max": L.max, "min": L.min}[kind]
    return lambda x: L.reduce_window(x, _init(kind, dtype), op, **kw)
  if kind == "prod":
    return lambda x: L.reduce_window(x, np.ones((), dtype), L.mul, **kw)
  if kind == "logaddexp":   # a non-monoid reducer written in Python
    return lambda x: L.reduce_window(x, -np.inf, jnp.logaddexp if lib is jax else anp.logaddexp,
                                     **kw)
  raise ValueError(kind)


# ---- values -----------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
@pytest.mark.parametrize("name", list(WINDOWS))
def test_values(name, kind):
  shape, _ = WINDOWS[name]
  x = make(shape)
  assert_same(window_fn(arrax, name, kind)(to_arrax(x)), window_fn(jax, name, kind)(x))


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint8, np.float16, BF16, np.complex64,
                                   np.bool_], ids=lambda d: np.dtype(d).name)
def test_dtypes(dtype):
  x = make((5, 6), dtype)
  kinds = ["max", "min"] + ([] if dtype == np.bool_ else ["sum", "prod"])
  for kind in kinds:
    got = arrax.jit(window_fn(arrax, "2d_same", kind, dtype))(x)
    assert_same(got, jax.jit(window_fn(jax, "2d_same", kind, dtype))(x))


def test_float_identity_with_integer_operand():
  # As JAX: the monoid is recognized from the init value's own dtype, so an integer operand
  # with -inf reduces with reduce_window_max.
  x = make((4, 6), np.int32)
  f = lambda L, x: L.reduce_window(x, -np.inf, L.max, (2, 2), (1, 1), "SAME")  # noqa: E731
  assert_same(f(alax, to_arrax(x)), f(jlax, x))
  assert str(arrax.make_jaxpr(lambda x: f(alax, x))(x)) == str(
      jax.make_jaxpr(lambda x: f(jlax, x))(x))


def test_nan_and_inf():
  x = make((4, 6))
  x[1, 2], x[2, 4], x[0, 0] = np.nan, np.inf, -np.inf
  for kind in ["sum", "max", "min", "prod"]:
    assert_same(window_fn(arrax, "2d_same", kind)(to_arrax(x)),
                window_fn(jax, "2d_same", kind)(x))


def test_generic_reducers_and_pytrees():
  x, y = make((5, 6)), make((5, 6), seed=1)
  kw = dict(window_dimensions=(2, 3), window_strides=(1, 2), padding="SAME")
  cases = [
      (lambda L: (x,), lambda L: (0.,), lambda L: lambda a, b: a + b),     # not lax.add
      (lambda L: (x,), lambda L: (1.,), lambda L: L.add),                  # add, init 1
      (lambda L: (x,), lambda L: (0.,), lambda L: L.max),                  # max, init 0
      (lambda L: ((x, y),), lambda L: ((-np.inf, 0.),),
       lambda L: lambda a, b: (L.max(a[0], b[0]), a[1] + b[1])),
      (lambda L: ({"p": x, "q": y},), lambda L: ({"p": 1., "q": np.float32(0)},),
       lambda L: lambda a, b: {"p": a["p"] * b["q"], "q": L.sub(a["q"], b["p"])}),
  ]
  for ops, inits, comp in cases:
    want = jlax.reduce_window(*ops(jlax), *inits(jlax), comp(jlax), **kw)
    got = alax.reduce_window(*ops(alax), *inits(alax), comp(alax), **kw)
    assert (arrax.tree_util.tree_structure(got).num_leaves
            == jax.tree_util.tree_structure(want).num_leaves)
    assert_tree_same(arrax.tree_util.tree_leaves(got), jax.tree_util.tree_leaves(want))
  # Argmax-style pair reduction with integer indices, jitted.
  idx = np.arange(30, dtype=np.int32).reshape(5, 6)

  def pair(L):
    def comp(a, b):
      take = L.ge(a[0], b[0])
      return L.select(take, a[0], b[0]), L.select(take, a[1], b[1])
    return lambda x, i: L.reduce_window((x, i), (-np.inf, np.int32(0)), comp, **kw)
  assert_tree_same(arrax.jit(pair(alax))(x, idx), jax.jit(pair(jlax))(x, idx))


def test_weak_types_and_x64(x64):
  got = alax.reduce_window(alax.broadcast(1., (4, 5)), 0., alax.add, (2, 2), (1, 1), "SAME")
  want = jlax.reduce_window(jlax.broadcast(1., (4, 5)), 0., jlax.add, (2, 2), (1, 1), "SAME")
  assert_same(got, want)
  x = make((4, 5), np.float64)
  for kind in ["sum", "max", "prod"]:
    assert_same(window_fn(arrax, "2d_same", kind, np.float64)(to_arrax(x)),
                window_fn(jax, "2d_same", kind, np.float64)(x))
  xi = make((4, 5), np.int64)
  assert_same(alax.reduce_window(to_arrax(xi), 0, alax.add, (2, 2)),
              jlax.reduce_window(xi, 0, jlax.add, (2, 2)))


# ---- differentiation --------------------------------------------------------------------------
def _vjp(lib, name, kind):
  f = window_fn(lib, name, kind)

  def run(x, ct):
    out, pullback = lib.vjp(f, x)
    return out, pullback(ct)
  return lib.jit(run)


@pytest.mark.parametrize("kind", ["sum", "max", "min"])
@pytest.mark.parametrize("name", GRAD_WINDOWS)
def test_vjp(name, kind):
  shape, _ = WINDOWS[name]
  x = make(shape, distinct=True)
  out_shape = jax.eval_shape(window_fn(jax, name, kind), x).shape
  ct = make(out_shape, seed=2)
  if kind != "sum" and name in NO_MAX_VJP:
    for lib in (jax, arrax):
      with pytest.raises(NotImplementedError):
        _vjp(lib, name, kind)(x, ct)
    return
  assert_tree_same(_vjp(arrax, name, kind)(x, ct), _vjp(jax, name, kind)(x, ct))


def test_max_pool_gradient_with_ties():
  # Ties: the first maximal element of each window gets the cotangent (as XLA selects).
  x = make((2, 6, 6, 2))
  x[0, :2, :2, 0] = 1.0
  f = lambda L, x: L.reduce_window(x, -jnp.inf, L.max, (1, 2, 2, 1), (1, 1, 1, 1),  # noqa
                                   "SAME")
  got = arrax.grad(lambda x: (f(alax, x) * x.sum()).sum())(x)
  assert_tree_same(got, jax.grad(lambda x: (f(jlax, x) * x.sum()).sum())(x))


@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod", "logaddexp"])
def test_jvp(kind):
  for name in ["2d_same", "base_dilation", "window_dilation", "pool_overlap_nhwc"]:
    shape, _ = WINDOWS[name]
    x, t = make(shape, distinct=True), make(shape, seed=3)
    got = arrax.jit(lambda x, t: arrax.jvp(window_fn(arrax, name, kind), (x,), (t,)))(x, t)
    want = jax.jit(lambda x, t: jax.jvp(window_fn(jax, name, kind), (x,), (t,)))(x, t)
    assert_tree_same(got, want, tol=1e-4)


def test_generic_reduce_window_has_no_vjp():
  x = make((4, 5))
  with pytest.raises(Exception) as err:
    jax.grad(lambda x: window_fn(jax, "2d_same", "prod")(x).sum())(x)
  assert err.type is ValueError
  with pytest.raises(ValueError, match="Linearization failed"):   # JAX's class and message
    arrax.grad(lambda x: window_fn(arrax, "2d_same", "prod")(x).sum())(x)


def test_second_order_max_pool():
  # grad of grad: the JVP of select_and_scatter_add and the transpose of
  # select_and_gather_add.
  x = make((2, 5, 6, 2), distinct=True)

  def hvp(lib):
    f = window_fn(lib, "pool_overlap_nhwc", "max")
    g = lib.grad(lambda x: (f(x) ** 3).sum())
    return lib.jit(lambda x, v: lib.jvp(g, (x,), (v,)))
  v = make(x.shape, seed=4)
  assert_tree_same(hvp(arrax)(x, v), hvp(jax)(x, v))
  g2 = [lib.jit(lib.grad(lambda x, lib=lib: (lib.grad(
      lambda y: (window_fn(lib, "2d_same", "min")(y) ** 2).sum())(x) ** 2).sum()))(
          make((5, 7), distinct=True)) for lib in (jax, arrax)]
  assert_tree_same(g2[1], g2[0])


@pytest.mark.parametrize("kind", ["sum", "max"])
def test_numerical_gradients(x64, kind):
  x = make((4, 5), np.float64, distinct=True)
  f = arrax.jit(window_fn(arrax, "base_dilation", kind, np.float64))
  atu.check_grads(f, (x,), order=2, modes=["fwd", "rev"])
  g = arrax.jit(window_fn(arrax, "2d_same", "prod", np.float64))
  atu.check_grads(g, (x,), order=1, modes=["fwd"])


# ---- batching ---------------------------------------------------------------------------------
@pytest.mark.parametrize("kind", ["sum", "max", "min", "prod"])
def test_vmap(kind):
  for name in ["2d_same", "base_dilation", "3d", "1d"]:
    shape, _ = WINDOWS[name]
    x = make(shape)
    for axis in sorted({0, len(shape) // 2 + 1, len(shape)}):
      xb = np.moveaxis(np.stack([x, -x, x * 2]), 0, axis)
      got = arrax.jit(arrax.vmap(window_fn(arrax, name, kind), axis))(xb)
      assert_same(got, jax.jit(jax.vmap(window_fn(jax, name, kind), axis))(xb))


def test_vmap_pytree_operands_and_grad():
  x, y = make((4, 5)), make((4, 5), seed=1)
  kw = dict(window_dimensions=(2, 2), window_strides=(1, 1), padding="SAME")

  def f(L):
    return lambda x, y: L.reduce_window((x, y), (0., 1.),
                                        lambda a, b: (a[0] + b[1], a[1] * b[0]), **kw)
  xb = np.stack([x, x + 1])
  for in_axes in [(0, None), (None, 1), (0, 1)]:
    args = (xb if in_axes[0] == 0 else x, np.moveaxis(np.stack([y, -y]), 0, 1)
            if in_axes[1] == 1 else y)
    assert_tree_same(arrax.vmap(f(alax), in_axes)(*args), jax.vmap(f(jlax), in_axes)(*args))
  # vmap of max-pool gradients (batching select_and_scatter_add and select_and_gather_add).
  xs = np.stack([make((2, 5, 6, 2), distinct=True, seed=s) for s in range(2)])

  def vg(lib):
    pool = window_fn(lib, "pool_overlap_nhwc", "max")
    g = lib.grad(lambda x: (pool(x) ** 2).sum())
    return lib.jit(lib.vmap(lambda x, v: lib.jvp(g, (x,), (v,)), (0, 1)))
  v = np.moveaxis(xs * 0.5, 0, 1)
  assert_tree_same(vg(arrax)(xs, v), vg(jax)(xs, v))


# ---- printed jaxprs ---------------------------------------------------------------------------
def _jaxprs_equal(make_fn, *args):
  want = str(jax.make_jaxpr(make_fn(jax))(*args))
  got = str(arrax.make_jaxpr(make_fn(arrax))(*args))
  assert got == want, f"\narrax:\n{got}\njax:\n{want}"


@pytest.mark.parametrize("name", ["2d_same", "base_dilation", "pool_nchw"])
def test_jaxprs(name):
  x = make(WINDOWS[name][0])
  for kind in ["sum", "max", "min", "prod"]:
    _jaxprs_equal(lambda lib: window_fn(lib, name, kind), x)
    _jaxprs_equal(lambda lib: lambda x, t: lib.jvp(window_fn(lib, name, kind), (x,), (t,)),
                  x, x)
    _jaxprs_equal(lambda lib: lib.vmap(window_fn(lib, name, kind), 1), np.stack([x, x], 1))
  for kind in ["sum", "max", "min"]:
    _jaxprs_equal(lambda lib: lib.grad(lambda x: window_fn(lib, name, kind)(x).sum()), x)


def test_jaxprs_pytree_and_second_order():
  x = make((4, 5))
  _jaxprs_equal(lambda lib: lambda x: lax_of(lib).reduce_window(
      (x, x), (1., 0.), lambda a, b: (a[0] * b[0], a[1] + b[1]), (2, 2), (1, 1), "SAME"), x)
  _jaxprs_equal(lambda lib: lib.grad(lambda x: (lib.grad(
      lambda y: (window_fn(lib, "2d_same", "max")(y) ** 2).sum())(x) ** 2).sum()), x)
  _jaxprs_equal(lambda lib: lib.vmap(lib.grad(
      lambda y: window_fn(lib, "2d_same", "max")(y).sum())), np.stack([x, x]))


# ---- errors and helpers -----------------------------------------------------------------------
X = make((4, 6))
ERRORS = {
    "tree_mismatch": lambda L: L.reduce_window((X, X), (0.,), L.add, (2, 2)),
    "dtype_mismatch": lambda L: L.reduce_window(X, 0, lambda a, b: a * b, (2, 2)),
    "init_not_scalar": lambda L: L.reduce_window(X, np.zeros(2, np.float32),
                                                 lambda a, b: a * b, (2, 2)),
    "window_rank": lambda L: L.reduce_window(X, 0., L.add, (2, 2, 1)),
    "strides_rank": lambda L: L.reduce_window(X, 0., L.add, (2, 2), (1,)),
    "window_zero": lambda L: L.reduce_window(X, 0., L.add, (0, 2)),
    "stride_zero": lambda L: L.reduce_window(X, 0., L.add, (1, 2), (0, 1)),
    "base_dilation_rank": lambda L: L.reduce_window(X, 0., L.add, (1, 2), (1, 1), "VALID",
                                                    (1,)),
    "window_dilation_rank": lambda L: L.reduce_window(X, 0., L.add, (1, 2), (1, 1), "VALID",
                                                      None, (1,)),
    "dilation_zero": lambda L: L.reduce_window(X, 0., L.add, (1, 2), (1, 1), "VALID", (0, 1)),
    "out_tree": lambda L: L.reduce_window(X, 0., lambda a, b: (a, b), (1, 2)),
    "padding_name": lambda L: L.reduce_window(X, 0., L.add, (1, 2), (1, 1), "FOO"),
    "no_operands": lambda L: L.reduce_window((), (), L.add, (1, 2)),
    "bool_sum": lambda L: L.reduce_window(X > 0, False, L.add, (1, 2)),
    "same_without_strides": lambda L: L.reduce_window(X, 0., L.add, (2, 2), padding="SAME"),
    "window_tuple_type": lambda L: L.reduce_window(X, 0., L.add, 2),
}


@pytest.mark.parametrize("name", list(ERRORS))
def test_errors(name):
  fn = ERRORS[name]
  with pytest.raises(Exception) as jax_err:
    fn(jlax)
  with pytest.raises(jax_err.type):
    fn(alax)


def test_reduce_window_shape_tuple_and_signature():
  import inspect
  for args in [((4, 6), (2, 3), (1, 2), ((0, 1), (1, 1))),
               ((4, 6), (2, 3), (1, 2), ((0, 1), (1, 1)), (2, 1), (1, 2)),
               ((5,), (7,), (1,), ((0, 0),))]:
    assert alax.reduce_window_shape_tuple(*args) == jlax.reduce_window_shape_tuple(*args)
  for name in ["reduce_window", "reduce_window_shape_tuple"]:
    ours, theirs = (inspect.signature(getattr(m, name)) for m in (alax, jlax))
    assert [(p.name, p.kind, p.default) for p in ours.parameters.values()] == \
        [(p.name, p.kind, p.default) for p in theirs.parameters.values()]
  for prim in ["reduce_window_p", "reduce_window_sum_p", "reduce_window_max_p",
               "reduce_window_min_p", "select_and_gather_add_p", "select_and_scatter_add_p",
               "select_and_scatter_p"]:
    assert getattr(alax, prim).name == getattr(jlax, prim).name


def test_select_and_scatter_primitive():
  # The generic primitive with reducer jaxprs (JAX has no public wrapper for it).
  from arrax._src import tracing
  from arrax._src.core import ShapedArray
  s = ShapedArray((), np.float32)
  sel, _ = tracing.trace_to_jaxpr(lambda a, b: [alax.ge(a, b)], [s, s])
  sca, _ = tracing.trace_to_jaxpr(lambda a, b: [alax.add(a, b)], [s, s])
  x, src = make((4, 6), distinct=True), make((2, 3), seed=1)
  params = dict(select_jaxpr=sel, select_consts=(), scatter_jaxpr=sca, scatter_consts=(),
                window_dimensions=(2, 2), window_strides=(2, 2), padding=((0, 0), (0, 0)))
  out = alax.select_and_scatter_p.bind(to_arrax(x), to_arrax(src), np.float32(0), **params)
  want = jax.grad(lambda x: (jlax.reduce_window(x, -jnp.inf, jlax.max, (2, 2), (2, 2),
                                                "VALID") * src).sum())(x)
  assert_same(out, want)
  xb = np.stack([x, -x])
  outb = arrax.vmap(lambda x: alax.select_and_scatter_p.bind(x, to_arrax(src), np.float32(0),
                                                            **params))(xb)
  assert_same(outb[1], alax.select_and_scatter_p.bind(to_arrax(-x), to_arrax(src),
                                                      np.float32(0), **params))


# ---- stax layers against jax.example_libraries.stax -------------------------------------------
def _nets(s):
  return {
      "conv_pool": s.serial(
          s.Conv(4, (3, 3), padding="SAME"), s.Relu, s.MaxPool((2, 2), (2, 2)),
          s.Conv(3, (2, 2), strides=(1, 2)), s.AvgPool((2, 2), padding="SAME"),
          s.SumPool((1, 2)), s.Flatten, s.Dense(5), s.LogSoftmax),
      "transpose": s.serial(
          s.ConvTranspose(3, (2, 2), (2, 2), "SAME"), s.Tanh,
          s.GeneralConv(("NCHW", "OIHW", "NCHW"), 2, (3, 2), padding=((1, 1), (0, 0))),
          s.MaxPool((2, 1), spec="NCHW"), s.AvgPool((1, 2), (1, 2), spec="NCHW"),
          s.Flatten),
      "conv1d": s.serial(
          s.GeneralConv(("NHC", "HIO", "NHC"), 4, (3,), padding="SAME"), s.Relu,
          s.Conv1DTranspose(2, (2,), (2,), "VALID"),
          s.GeneralConvTranspose(("NCH", "IOH", "NCH"), 3, (3,), padding="SAME"),
          s.SumPool((2,), spec="NCH"), s.Flatten),
  }


@pytest.mark.parametrize("net", ["conv_pool", "transpose", "conv1d"])
def test_stax_networks_match_jax(net):
  in_shape = {"conv_pool": (2, 8, 8, 3), "transpose": (2, 4, 3, 3),
              "conv1d": (2, 6, 3)}[net]
  x = make(in_shape, seed=5)
  results = []
  for s, lib in ((jstax, jax), (astax, arrax)):
    init, apply = _nets(s)[net]
    out_shape, params = init(lib.random.PRNGKey(0), in_shape)
    y = lib.jit(apply)(params, x)
    grads = lib.jit(lib.grad(lambda p, x: (apply(p, x) ** 2).sum()))(params, x)
    results.append((tuple(int(d) for d in out_shape), params, y, grads))
  (js, jp, jy, jg), (as_, ap, ay, ag) = results
  assert as_ == js == jy.shape
  leaves = lambda t: jax.tree_util.tree_leaves(t)  # noqa: E731
  assert_tree_same(arrax.tree_util.tree_leaves(ap), leaves(jp))
  assert_same(ay, jy, rtol=1e-5, atol=1e-5)
  assert_tree_same(arrax.tree_util.tree_leaves(ag), leaves(jg), tol=1e-4)


def test_stax_pooling_shapes_and_eager_apply():
  x = make((2, 7, 5, 3))
  for layer in ["MaxPool", "SumPool", "AvgPool"]:
    for kw in [dict(), dict(strides=(2, 1), padding="SAME"), dict(padding="VALID")]:
      jinit, japply = getattr(jstax, layer)((3, 2), **kw)
      ainit, aapply = getattr(astax, layer)((3, 2), **kw)
      key = jax.random.PRNGKey(0)
      assert tuple(map(int, ainit(arrax.random.PRNGKey(0), x.shape)[0])) == \
          tuple(map(int, jinit(key, x.shape)[0]))
      assert_same(aapply((), to_arrax(x)), japply((), x), rtol=1e-6)
