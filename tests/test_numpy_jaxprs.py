"""arrax.numpy functions trace to the same jaxprs as jax.numpy 0.10.2's.

Each case is a function of the numpy module (`lambda m, x: m.cumsum(x)`), traced with
`arrax.make_jaxpr` (module arrax.numpy) and `jax.make_jaxpr` (module jax.numpy) on the same
NumPy inputs: the printed texts must be identical, `jit[name=...]` wrappers, equation order,
literals and weak types included. Where JAX raises, arrax must raise the same class. A subset
is compared under `grad` too.
"""
import functools

import numpy as np
import pytest

import oracle
from oracle import call_with, grad_of

F32 = np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.3
I32 = np.arange(6, dtype=np.int32).reshape(2, 3) - 2
BOOL = np.array([[True, False, True], [False, False, True]])
C64 = (F32 + 1j * F32[::-1]).astype(np.complex64)
F0 = np.float32(1.5)
EMPTY = np.zeros((0, 3), np.float32)
VEC = np.arange(5, dtype=np.float32) / 3
INPUTS = {"f32": F32, "i32": I32, "bool": BOOL, "c64": C64, "f0d": F0, "empty": EMPTY}

# Cases are fn(numpy_module, *args), traced on the NumPy arguments as they are.
check_jaxpr = functools.partial(oracle.check_jaxpr, build=call_with("np"), convert=None)


# Mismatches whose cause is outside arrax/_src/numpy's jnp layer.
PAD = ("*", ("arrax/_src/numpy/padding.py: edge mode uses no broadcast+reshape; reflect mode "
             "calls lax.rev instead of jnp.flip's jit"))
NO_COPY_P = ("*", "arrax's lax has no `copy` primitive: jnp.array(tracer) returns the tracer")
SORT_JVP = ("*", ("sort's JVP (arrax/_src/lax) builds scatter batching dims from Python ints; "
                  "JAX's carry np.int64"))


def _cases(table, inputs):
  out = []
  for name, fn, kinds, *marks in table:
    for kind in kinds.split():
      xfail = [m for m in marks if kind in m[0].split() or m[0] == "*"]
      ms = [pytest.mark.xfail(strict=True, reason=r) for _, r in xfail]
      out.append(pytest.param(fn, inputs[kind], id=f"{name}-{kind}", marks=ms))
  return out


# ---- elementwise ---------------------------------------------------------------------------
UNARY = [
    "abs", "absolute", "acos", "acosh", "angle", "arccos", "arccosh", "arcsin", "arcsinh", "arctan",
    "arctanh", "around", "asin", "asinh", "atan", "atanh", "bitwise_invert", "bitwise_not", "cbrt",
    "ceil", "conj", "conjugate", "cos", "cosh", "deg2rad", "degrees", "exp", "exp2", "expm1",
    "fabs", "floor", "imag", "invert", "isfinite", "isinf", "isnan", "log", "log10", "log1p",
    "log2", "logical_not", "negative", "positive", "rad2deg", "radians", "real", "reciprocal",
    "rint", "round", "sign", "signbit", "sin", "sinc", "sinh", "sqrt", "square", "tan", "tanh",
    "trunc"
]
BINARY = [
    "add", "arctan2", "atan2", "bitwise_and", "bitwise_left_shift", "bitwise_or",
    "bitwise_right_shift", "bitwise_xor", "copysign", "divide", "divmod", "equal", "float_power",
    "floor_divide", "fmax", "fmin", "fmod", "greater", "greater_equal", "heaviside", "hypot",
    "left_shift", "less", "less_equal", "logaddexp", "logaddexp2", "logical_and", "logical_or",
    "logical_xor", "maximum", "minimum", "mod", "multiply", "nextafter", "not_equal", "pow",
    "power", "remainder", "right_shift", "subtract", "true_divide"
]


def _unary(name):
  return lambda m, x: getattr(m, name)(x)


def _binary(name):
  return lambda m, x: getattr(m, name)(x, x[..., ::-1] if np.ndim(x) else x)


def _binary_scalar(name):
  return lambda m, x: getattr(m, name)(x, 2)


def _binary_mixed(name):
  """Operands of different dtypes: x and x cast to int32 (promotion inside the jit)."""
  return lambda m, x: getattr(m, name)(x, np.asarray(x).astype(np.int32) if np.ndim(x) else 2)


MIXED = [
    "add", "multiply", "subtract", "true_divide", "floor_divide", "remainder", "power", "maximum",
    "arctan2", "hypot", "logaddexp", "heaviside", "copysign", "equal", "less", "fmax", "nextafter",
    "float_power"
]
UNARY_TABLE = [(n, _unary(n), "f32 i32 bool c64 f0d empty") for n in UNARY]
BINARY_TABLE = [(n, _binary(n), "f32 i32 bool c64 f0d") for n in BINARY]
BINARY_SCALAR_TABLE = [(n, _binary_scalar(n), "f32 i32") for n in BINARY]
MIXED_TABLE = [(n, _binary_mixed(n), "f32 bool c64") for n in MIXED]


@pytest.mark.parametrize("fn,x", _cases(UNARY_TABLE, INPUTS))
def test_unary(fn, x):
  check_jaxpr(fn, x)


@pytest.mark.parametrize("fn,x", _cases(BINARY_TABLE, INPUTS))
def test_binary(fn, x):
  check_jaxpr(fn, x)


@pytest.mark.parametrize("fn,x", _cases(BINARY_SCALAR_TABLE, INPUTS))
def test_binary_with_python_scalar(fn, x):
  check_jaxpr(fn, x)


@pytest.mark.parametrize("fn,x", _cases(MIXED_TABLE, INPUTS))
def test_binary_mixed_dtypes(fn, x):
  check_jaxpr(fn, x)


def test_operators():
  for fn in (lambda m, x: x + 1, lambda m, x: 2.0 * x, lambda m, x: x / 3, lambda m, x: -x,
             lambda m, x: x ** 2, lambda m, x: x // 2, lambda m, x: x % 2, lambda m, x: x < 1,
             lambda m, x: abs(x), lambda m, x: x @ x.T, lambda m, x: 1 - x):
    check_jaxpr(fn, F32)
    check_jaxpr(fn, I32)


# ---- reductions ----------------------------------------------------------------------------
REDUCTIONS = [
    "sum", "prod", "max", "min", "amax", "amin", "all", "any", "mean", "var", "std", "argmax",
    "argmin"
]
CUMULATIVE = ["cumsum", "cumprod", "cumulative_sum", "cumulative_prod"]


def _red(name, **kw):
  return lambda m, x: getattr(m, name)(x, **kw)


REDUCTION_TABLE = (
    [(n, _red(n), "f32 i32 bool c64 f0d") for n in REDUCTIONS]
    + [(f"{n}-axis", _red(n, axis=1), "f32 i32 bool") for n in REDUCTIONS]
    + [(f"{n}-keepdims", _red(n, axis=0, keepdims=True), "f32 i32") for n in REDUCTIONS]
    + [(f"{n}-empty", _red(n, axis=1), "empty") for n in REDUCTIONS]
    + [("var-ddof", _red("var", ddof=1), "f32 i32 c64"),
       ("std-ddof", _red("std", axis=0, ddof=1), "f32"),
       ("mean-dtype", _red("mean", dtype=np.float32), "i32"),
       ("sum-dtype", _red("sum", axis=0, dtype=np.float32), "i32 bool"),
       ("sum-where", lambda m, x: m.sum(x, where=x > 0), "f32 i32"),
       ("max-initial", lambda m, x: m.max(x, axis=1, initial=0.5), "f32"),
       ("mean-where", lambda m, x: m.mean(x, where=x > 0), "f32")]
    + [(n, _red(n), "f32 i32 bool f0d") for n in ("cumsum", "cumprod")]
    + [(f"{n}-axis", _red(n, axis=1), "f32 i32 bool") for n in CUMULATIVE]
    + [("cumsum-dtype", _red("cumsum", axis=0, dtype=np.float32), "i32"),
       ("cumulative_sum-initial", _red("cumulative_sum", axis=1, include_initial=True),
        "f32 i32")]
)


@pytest.mark.parametrize("fn,x", _cases(REDUCTION_TABLE, INPUTS))
def test_reduction(fn, x):
  check_jaxpr(fn, x)


# ---- shapes, joining, selection ------------------------------------------------------------
SHAPE_TABLE = [
    ("reshape", lambda m, x: m.reshape(x, (3, 2)), "f32 i32 bool"),
    ("reshape-neg", lambda m, x: m.reshape(x, -1), "f32"),
    ("method-reshape", lambda m, x: x.reshape(3, -1), "f32"),
    ("ravel", lambda m, x: m.ravel(x), "f32 f0d"),
    ("transpose", lambda m, x: m.transpose(x), "f32 i32"),
    ("transpose-axes", lambda m, x: m.transpose(x, (1, 0)), "f32"),
    ("method-T", lambda m, x: x.T, "f32"),
    ("moveaxis", lambda m, x: m.moveaxis(x, 0, 1), "f32"),
    ("swapaxes", lambda m, x: m.swapaxes(x, 0, 1), "f32"),
    ("matrix_transpose", lambda m, x: m.matrix_transpose(x), "f32"),
    ("squeeze", lambda m, x: m.squeeze(m.expand_dims(x, 0)), "f32 f0d"),
    ("squeeze-axis", lambda m, x: m.squeeze(x[None], axis=0), "f32"),
    ("expand_dims", lambda m, x: m.expand_dims(x, (0, 2)), "f32 i32"),
    ("broadcast_to", lambda m, x: m.broadcast_to(x, (4, 2, 3)), "f32 bool"),
    ("broadcast_arrays", lambda m, x: m.broadcast_arrays(x, x[0]), "f32"),
    ("atleast_1d", lambda m, x: m.atleast_1d(x), "f32 f0d"),
    ("atleast_2d", lambda m, x: m.atleast_2d(x), "f32 f0d"),
    ("flip", lambda m, x: m.flip(x), "f32"),
    ("flip-axis", lambda m, x: m.flip(x, 1), "f32"),
    ("fliplr", lambda m, x: m.fliplr(x), "f32"),
    ("flipud", lambda m, x: m.flipud(x), "f32"),
    ("concatenate", lambda m, x: m.concatenate([x, x]), "f32 i32 empty"),
    ("concatenate-axis1", lambda m, x: m.concatenate([x, x * 2], axis=1), "f32"),
    ("concatenate-mixed", lambda m, x: m.concatenate([x, m.ones_like(x, dtype=m.int32)]),
     "f32"),
    ("concatenate-none", lambda m, x: m.concatenate([x, x], axis=None), "f32"),
    ("concat", lambda m, x: m.concat([x, x]), "f32"),
    ("stack", lambda m, x: m.stack([x, x]), "f32 i32 f0d"),
    ("stack-axis", lambda m, x: m.stack([x, x], axis=-1), "f32"),
    ("hstack", lambda m, x: m.hstack([x, x]), "f32"),
    ("vstack", lambda m, x: m.vstack([x, x]), "f32 f0d"),
    ("split", lambda m, x: m.split(x, 3, axis=1), "f32"),
    ("split-indices", lambda m, x: m.split(x, [1], axis=0), "f32"),
    ("where", lambda m, x: m.where(x > 0, x, 0), "f32 i32"),
    ("where-arrays", lambda m, x: m.where(x > 0, x, -x), "f32"),
    ("where-mixed", lambda m, x: m.where(x > 0, x, 1.5), "i32"),
    ("clip", lambda m, x: m.clip(x, 0, 1), "f32 i32"),
    ("clip-min", lambda m, x: m.clip(x, min=0.5), "f32"),
    ("clip-arrays", lambda m, x: m.clip(x, x[0], x[1]), "f32"),
    ("astype", lambda m, x: m.astype(x, m.int32), "f32 bool"),
    ("method-astype", lambda m, x: x.astype(np.float32), "i32"),
    ("sort", lambda m, x: m.sort(x), "f32 i32 bool"),
    ("sort-axis0", lambda m, x: m.sort(x, axis=0), "f32"),
    ("sort-none", lambda m, x: m.sort(x, axis=None), "f32"),
    ("sort-descending", lambda m, x: m.sort(x, descending=True), "f32"),
    ("argsort", lambda m, x: m.argsort(x), "f32 i32"),
    ("argsort-stable", lambda m, x: m.argsort(x, axis=0, stable=False), "f32"),
    ("pad", lambda m, x: m.pad(x, 1), "f32 i32"),
    ("pad-widths", lambda m, x: m.pad(x, ((0, 1), (2, 0))), "f32"),
    ("pad-constant", lambda m, x: m.pad(x, 1, constant_values=2.5), "f32"),
    ("pad-edge", lambda m, x: m.pad(x, 1, mode="edge"), "f32", PAD),
    ("pad-reflect", lambda m, x: m.pad(x, 1, mode="reflect"), "f32", PAD),
    ("pad-wrap", lambda m, x: m.pad(x, 2, mode="wrap"), "f32"),
]


@pytest.mark.parametrize("fn,x", _cases(SHAPE_TABLE, INPUTS))
def test_shape_and_selection(fn, x):
  check_jaxpr(fn, x)


# ---- array methods -------------------------------------------------------------------------
def _method(name):
  return lambda m, x: getattr(x, name)()


METHOD_TABLE = [
    (f"method-{n}", _method(n), "f32 i32")
    for n in ["sum", "prod", "max", "min", "mean", "var", "std", "all", "any", "argmax",
              "argmin", "cumsum", "cumprod", "ravel", "flatten", "round", "sort", "argsort",
              "conj"]
] + [
    ("method-sum-axis", lambda m, x: x.sum(axis=0, keepdims=True), "f32"),
    ("method-clip", lambda m, x: x.clip(0, 1), "f32"),
    ("method-dot", lambda m, x: x.dot(x.T), "f32"),
    ("method-take", lambda m, x: x.take(IDX_METHODS), "f32"),
    ("method-swapaxes", lambda m, x: x.swapaxes(0, 1), "f32"),
    ("method-mT", lambda m, x: x.mT, "f32"),
    ("method-real-imag", lambda m, x: x.real + x.imag, "c64"),
]
IDX_METHODS = np.array([0, 4], np.int32)


@pytest.mark.parametrize("fn,x", _cases(METHOD_TABLE, INPUTS))
def test_methods(fn, x):
  check_jaxpr(fn, x)


# ---- indexing ------------------------------------------------------------------------------
IDX = np.array([1, 0, 1], np.int32)
INDEXING_TABLE = [
    ("int", lambda m, x: x[1], "f32 i32 bool c64"),
    ("neg-int", lambda m, x: x[-1], "f32"),
    ("slice", lambda m, x: x[1:3], "f32"),
    ("slice-2d", lambda m, x: x[:, 1:3], "f32"),
    ("slice-step", lambda m, x: x[:, ::2], "f32"),
    ("slice-neg-step", lambda m, x: x[:, ::-1], "f32"),
    ("ellipsis", lambda m, x: x[..., 1], "f32"),
    ("newaxis", lambda m, x: x[None, :, None], "f32"),
    ("int-int", lambda m, x: x[1, 2], "f32"),
    ("array", lambda m, x: x[IDX], "f32"),
    ("array-axis1", lambda m, x: x[:, IDX], "f32"),
    ("two-arrays", lambda m, x: x[IDX[:2], IDX[1:]], "f32"),
    ("bool-scalar", lambda m, x: x[True], "f32"),
    ("empty-tuple", lambda m, x: x[()], "f32 f0d"),
    ("take", lambda m, x: m.take(x, IDX), "f32"),
    ("take-axis", lambda m, x: m.take(x, IDX, axis=1), "f32 i32"),
    ("take-clip", lambda m, x: m.take(x, IDX, axis=1, mode="clip"), "f32"),
    ("take_along_axis", lambda m, x: m.take_along_axis(x, m.argsort(x, axis=1), axis=1), "f32"),
    ("take_along_axis-none", lambda m, x: m.take_along_axis(x, IDX, axis=None), "f32"),
    ("put_along_axis", lambda m, x: m.put_along_axis(x, m.zeros((2, 1), m.int32), 9.0, axis=1,
                                                      inplace=False), "f32"),
    ("at-set", lambda m, x: x.at[1].set(2), "f32 i32"),
    ("at-set-slice", lambda m, x: x.at[:, 1:].set(0), "f32"),
    ("at-add", lambda m, x: x.at[IDX].add(1.0), "f32"),
    ("at-mul", lambda m, x: x.at[0, 1].multiply(3.0), "f32"),
    ("at-min", lambda m, x: x.at[1].min(0.0), "f32"),
    ("at-max", lambda m, x: x.at[:, 0].max(x[:, 1]), "f32"),
    ("at-get", lambda m, x: x.at[IDX].get(), "f32"),
    ("at-get-fill", lambda m, x: x.at[IDX].get(mode="fill", fill_value=0.0), "f32"),
]


@pytest.mark.parametrize("fn,x", _cases(INDEXING_TABLE, INPUTS))
def test_indexing(fn, x):
  check_jaxpr(fn, x)


def test_dynamic_index():
  check_jaxpr(lambda m, x, i: x[i], F32, np.int32(1))
  check_jaxpr(lambda m, x, i: x[:, i], F32, np.int32(1))
  check_jaxpr(lambda m, x, i: x.at[i].set(0.0), F32, np.int32(1))
  check_jaxpr(lambda m, x, i: x[i], F32, IDX)


# ---- creation ------------------------------------------------------------------------------
CREATION_TABLE = [
    ("zeros_like", lambda m, x: m.zeros_like(x), "f32 i32 bool f0d"),
    ("ones_like", lambda m, x: m.ones_like(x), "f32 i32"),
    ("ones_like-dtype", lambda m, x: m.ones_like(x, dtype=m.int32), "f32"),
    ("full_like", lambda m, x: m.full_like(x, 2), "f32 i32"),
    ("full_like-array", lambda m, x: m.full_like(x, x[0, 0]), "f32"),
    ("empty_like", lambda m, x: m.empty_like(x), "f32"),
    ("zeros", lambda m, x: m.zeros((2, 3)) + x, "f32"),
    ("ones", lambda m, x: m.ones(3, m.int32) + x, "i32"),
    ("full", lambda m, x: m.full((2, 3), 7) * x, "f32"),
    ("full-traced", lambda m, x: m.full((2, 2, 3), x), "f32 f0d"),
    ("eye", lambda m, x: m.eye(3) + x, "f32"),
    ("eye-k", lambda m, x: m.eye(3, 4, k=1, dtype=m.int32), "f32"),
    ("identity", lambda m, x: m.identity(3) + x, "f32"),
    ("arange", lambda m, x: m.arange(3) + x, "f32 i32"),
    ("arange-float", lambda m, x: m.arange(0.0, 1.5, 0.5) + x, "f32"),
    ("linspace", lambda m, x: m.linspace(0, 1, 3) + x, "f32"),
    ("linspace-endpoint", lambda m, x: m.linspace(0, 1, 4, endpoint=False), "f32"),
    ("linspace-traced", lambda m, x: m.linspace(x[0], x[1], 4), "f32"),
    ("asarray", lambda m, x: m.asarray(x), "f32"),
    ("asarray-dtype", lambda m, x: m.asarray(x, dtype=m.float32), "i32"),
    ("array-list", lambda m, x: m.array([x[0, 0], x[1, 1]]), "f32"),
    ("array-copy", lambda m, x: m.array(x), "f32", NO_COPY_P),
]


@pytest.mark.parametrize("fn,x", _cases(CREATION_TABLE, INPUTS))
def test_creation(fn, x):
  check_jaxpr(fn, x)


# ---- products ------------------------------------------------------------------------------
M33 = np.arange(9, dtype=np.float32).reshape(3, 3) / 5
PRODUCT_TABLE = [
    ("dot", lambda m, x: m.dot(x, x.T), "f32 i32 c64"),
    ("dot-vec", lambda m, x: m.dot(x[0], x[1]), "f32"),
    ("dot-scalar", lambda m, x: m.dot(x, 2.0), "f32"),
    ("matmul", lambda m, x: m.matmul(x, x.T), "f32 i32 bool"),
    ("matmul-vec", lambda m, x: m.matmul(x, x[0]), "f32"),
    ("matmul-batched", lambda m, x: m.matmul(m.stack([x, x]), x.T), "f32"),
    ("vdot", lambda m, x: m.vdot(x, x), "f32 c64"),
    ("inner", lambda m, x: m.inner(x, x), "f32"),
    ("outer", lambda m, x: m.outer(x, x[0]), "f32 i32"),
    ("tensordot", lambda m, x: m.tensordot(x, x.T, axes=1), "f32"),
    ("tensordot-2", lambda m, x: m.tensordot(x, x, axes=2), "f32"),
    ("tensordot-pairs", lambda m, x: m.tensordot(x, x, axes=([1], [1])), "f32"),
    ("dot-mixed", lambda m, x: m.dot(x, m.ones((3,), m.int32)), "f32"),
]


@pytest.mark.parametrize("fn,x", _cases(PRODUCT_TABLE, INPUTS))
def test_products(fn, x):
  check_jaxpr(fn, x)


# ---- gradients -----------------------------------------------------------------------------
GRAD_TABLE = [
    ("sin", lambda m, x: m.sin(x).sum()),
    ("logaddexp", lambda m, x: m.logaddexp(x, 2 * x).sum()),
    ("logaddexp2", lambda m, x: m.logaddexp2(x, x[::-1]).sum()),
    ("sinc", lambda m, x: m.sinc(x).sum()),
    ("mean", lambda m, x: m.mean(x ** 2)),
    ("var", lambda m, x: m.var(x)),
    ("std", lambda m, x: m.std(x, axis=0).sum()),
    ("cumsum", lambda m, x: m.cumsum(x).sum()),
    ("cumprod", lambda m, x: m.cumprod(x, axis=1)[:, -1].sum()),
    ("max", lambda m, x: m.max(x)),
    ("prod", lambda m, x: m.prod(x)),
    ("where", lambda m, x: m.where(x > 0, x, 0.0).sum()),
    ("clip", lambda m, x: m.clip(x, 0.0, 1.0).sum()),
    ("hypot", lambda m, x: m.hypot(x, 1.0).sum()),
    ("arctan2", lambda m, x: m.arctan2(x, 1.0).sum()),
    ("power", lambda m, x: m.power(x, 3).sum()),
    ("sqrt-abs", lambda m, x: m.sqrt(m.abs(x) + 1).sum()),
    ("dot", lambda m, x: m.dot(x, x.T).sum()),
    ("matmul", lambda m, x: (x @ x.T).sum()),
    ("concatenate", lambda m, x: m.concatenate([x, 2 * x]).sum()),
    ("index", lambda m, x: x[1, 1:].sum()),
    ("take", lambda m, x: m.take(x, IDX, axis=1).sum()),
    ("at-set", lambda m, x: x.at[0].set(1.0).sum()),
    ("sort", lambda m, x: m.sort(x)[:, 0].sum(), SORT_JVP),
    ("pad", lambda m, x: m.pad(x, 1).sum()),
    ("maximum", lambda m, x: m.maximum(x, 0.0).sum()),
    ("tanh-log1p", lambda m, x: m.log1p(m.tanh(x) ** 2).sum()),
    ("var-axis-keepdims", lambda m, x: m.var(x, axis=1, keepdims=True).sum()),
    ("take_along_axis", lambda m, x: m.take_along_axis(x, m.argsort(x, axis=1), axis=1)[:, 0]
     .sum()),
    ("flip-moveaxis", lambda m, x: m.moveaxis(m.flip(x, 1), 0, 1)[0].sum()),
    ("outer-vdot", lambda m, x: m.vdot(m.outer(x[0], x[1]), m.outer(x[1], x[0]))),
    ("cumulative_sum", lambda m, x: m.cumulative_sum(x, axis=1, include_initial=True).sum()),
    ("at-add", lambda m, x: x.at[IDX].add(x[0]).sum()),
    ("linspace", lambda m, x: m.linspace(x[0, 0], x[1, 1], 4).sum()),
    ("around-abs", lambda m, x: (m.around(x) + m.abs(x)).sum()),
    ("stack", lambda m, x: m.stack([x, 2 * x]).sum()),
]


@pytest.mark.parametrize("fn", [
    pytest.param(f, id=n, marks=[pytest.mark.xfail(strict=True, reason=r) for _, r in xf])
    for n, f, *xf in GRAD_TABLE])
def test_grad(fn):
  check_jaxpr(fn, F32, transform=grad_of())
