"""arrax.numpy elementwise functions and Python operators, compared with jax.numpy 0.10.2.

Every function is an `OpRecord` (name, arrax fn, jax fn, arity, dtypes, input generator,
tolerance) and is crossed with dtypes (special values included: NaN, +-inf, -0.0, integer
min/max for wrap-around, integer division by zero), shapes and broadcasting, Python scalar
operands on either side (weak types), and once under `jit`. When JAX raises for an input, arrax
must raise the same exception class.
"""
import functools
import math
import operator
from collections import namedtuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
import arrax._src.numpy.ufuncs as arrax_ufuncs
from oracle import BF16, Raw, check, check_all

# ---- dtypes and inputs -------------------------------------------------------------------------
DTYPES = {
    "bool": np.dtype(np.bool_), "int8": np.dtype(np.int8), "int32": np.dtype(np.int32),
    "uint8": np.dtype(np.uint8), "uint32": np.dtype(np.uint32), "float16": np.dtype(np.float16),
    "bfloat16": BF16, "float32": np.dtype(np.float32), "complex64": np.dtype(np.complex64),
}
ALL = tuple(DTYPES)
INTS = ("int8", "int32", "uint8", "uint32")
FLOATS = ("float16", "bfloat16", "float32")

nan, inf = float("nan"), float("inf")
# Twelve values per kind and operand (the main test uses shape (4, 3)). Paired positionally:
# x1[i] op x2[i] hits NaN/inf combinations, -0.0, division by zero, MIN // -1, MAX * 2, ...
FLOAT_VALUES = (
    [nan, inf, -inf, -0.0, 0.0, 0.5, -1.5, 2.5, -3.0, 7.0, -7.25, 100.0],
    [2.0, nan, inf, 0.0, -0.0, 0.0, 2.0, -inf, -2.0, -0.0, 3.0, -1e-3],
)
UNIT_VALUES = (  # for arcsin / arccos / arctanh: mostly inside [-1, 1]
    [nan, inf, -inf, -0.0, 0.0, 0.5, -0.5, 0.25, -0.9, 0.99, 1.0, -1.0],
    [0.5, nan, 1.0, -0.0, 0.0, -0.5, 0.25, -1.0, 0.5, -0.25, 0.75, 1e-3],
)
INT_VALUES = (
    [0, 1, -1, 7, -7, 2, -3, 5, "min", "max", 100, -100],
    [1, 0, 2, -3, 3, -1, 7, 0, -1, 2, 40, -7],
)
BOOL_VALUES = (
    [True, False, True, False, True, True, False, False, True, False, True, False],
    [True, True, False, False, False, True, True, False, True, False, False, True],
)
COMPLEX_VALUES = (
    [complex(nan, 0), complex(inf, 1), complex(-inf, -1), complex(-0.0, 0.0), 0j, 0.5 + 0.5j,
     -1.5 + 2j, 2.5 - 1j, -3 + 0j, 7 + 3j, -7.25 - 0.5j, 1 + 20j],
    [2 + 0j, complex(0, nan), complex(0, inf), complex(-0.0, -0.0), 0j, -2 + 1j, 3 - 1j,
     complex(-inf, 0), 0.5 + 0j, -3 - 3j, 2 + 2j, 1e-3 + 0j],
)


def make_values(dtype_name, shape, which=0, kind="default"):
  """Deterministic inputs of a dtype and shape; shape (4, 3) gets all the special values."""
  dt = DTYPES[dtype_name]
  n = math.prod(shape)
  if dt == np.bool_:
    base = BOOL_VALUES[which]
  elif dt.kind in "iu":
    info = np.iinfo(dt)
    base = [info.min if v == "min" else info.max if v == "max" else v for v in INT_VALUES[which]]
  elif dt.kind == "c":
    base = COMPLEX_VALUES[which]
  else:
    base = (UNIT_VALUES if kind == "unit" else FLOAT_VALUES)[which]
  offset = 0 if n >= len(base) else 5
  vals = [base[(offset + i) % len(base)] for i in range(n)]
  if dt.kind in "iu":
    host = np.array(vals, dtype=np.int64).astype(dt)  # wraps (e.g. -1 -> 255 for uint8)
  elif dt.kind == "c":
    host = np.array(vals, dtype=np.complex128).astype(dt)
  else:
    host = np.array(vals, dtype=np.float64 if dt != np.bool_ else np.bool_).astype(dt)
  return host.reshape(shape)


# ---- op records --------------------------------------------------------------------------------
OpRecord = namedtuple("OpRecord", "name afn jfn arity dtypes kind tol alias")

# Names that are aliases of another record in arrax (and in NumPy): checked on fewer dtypes.
ALIASES = {"asin", "acos", "atan", "asinh", "acosh", "atanh", "abs", "around", "radians",
           "degrees", "conjugate", "invert", "bitwise_invert", "fix", "mod", "pow", "atan2",
           "true_divide", "bitwise_left_shift", "bitwise_right_shift"}
ALIAS_DTYPES = ("int32", "float32")
# Functions that promote integers (and bool) to float: int8 stands in for all of them.
INEXACT_DTYPES = ("int8", "bfloat16", "float32", "complex64")
PROMOTE_TO_FLOAT = {"sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh",
                    "arcsinh", "arccosh", "arctanh", "exp", "exp2", "expm1", "log", "log1p",
                    "log2", "log10", "sqrt", "cbrt", "deg2rad", "rad2deg", "sinc", "arctan2",
                    "hypot", "logaddexp", "logaddexp2", "nextafter", "float_power", "copysign", "heaviside",
                    "divide"}
# Unary functions that keep integer types: one signed and one unsigned width suffice.
UNARY_DTYPES = ("bool", "int8", "uint8", "bfloat16", "float32", "complex64")
# Binary functions on two operands of one dtype: one width per integer kind besides int32 (the
# dtype of the shape and jit tests); mixed widths are in test_binary_mixed_dtypes.
BINARY_DTYPES = ("bool", "int8", "uint32", "float16", "bfloat16", "float32", "complex64")
# Comparisons and logical functions: one dtype per kind.
COMPARE_DTYPES = ("bool", "int8", "uint32", "bfloat16", "float32", "complex64")
COMPARISONS = {"equal", "not_equal", "less", "less_equal", "greater", "greater_equal",
               "logical_and", "logical_or", "logical_xor"}
ROUND_DTYPES = ("int32", "float16", "bfloat16", "float32", "complex64")


def _lookup(module, name, kwargs):
  fn = getattr(module, name)
  return functools.partial(fn, **kwargs) if kwargs else fn


def rec(name, arity, dtypes=None, kind="default", tol=None, jax_name=None, label=None,
        **kwargs):
  """A record; the functions are looked up lazily so a missing one fails only its own tests."""
  afn = lambda *a: _lookup(anp, name, kwargs)(*a)  # noqa: E731
  jfn = lambda *a: _lookup(jnp, jax_name or name, kwargs)(*a)  # noqa: E731
  alias = name in ALIASES
  if dtypes is None:
    dtypes = (ALIAS_DTYPES if alias else INEXACT_DTYPES if name in PROMOTE_TO_FLOAT else
              COMPARE_DTYPES if name in COMPARISONS else UNARY_DTYPES if arity == 1 else
              BINARY_DTYPES)
  return OpRecord(label or name, afn, jfn, arity, dtypes, kind, tol, alias)


UNARY = [
    rec("sin", 1), rec("cos", 1), rec("tan", 1),
    rec("arcsin", 1, kind="unit"), rec("arccos", 1, kind="unit"), rec("arctan", 1),
    rec("asin", 1, kind="unit"), rec("acos", 1, kind="unit"), rec("atan", 1),
    rec("sinh", 1), rec("cosh", 1), rec("tanh", 1),
    rec("arcsinh", 1), rec("arccosh", 1), rec("arctanh", 1, kind="unit"),
    rec("asinh", 1), rec("acosh", 1), rec("atanh", 1, kind="unit"),
    rec("exp", 1), rec("exp2", 1), rec("expm1", 1),
    rec("log", 1), rec("log1p", 1), rec("log2", 1), rec("log10", 1),
    rec("sqrt", 1), rec("cbrt", 1),
    rec("negative", 1), rec("positive", 1),
    rec("abs", 1), rec("absolute", 1), rec("fabs", 1),
    rec("sign", 1), rec("floor", 1), rec("ceil", 1), rec("rint", 1), rec("trunc", 1),
    # jnp.fix was removed in JAX 0.10 in favour of trunc; arrax keeps it as an alias of trunc.
    rec("fix", 1, jax_name="trunc"),
    rec("round", 1), rec("around", 1),
    rec("round", 1, label="round[decimals=1]", dtypes=ROUND_DTYPES, decimals=1),
    rec("round", 1, label="round[decimals=2]", dtypes=ROUND_DTYPES, decimals=2),
    rec("round", 1, label="round[decimals=-1]", dtypes=ROUND_DTYPES, decimals=-1),
    rec("square", 1), rec("reciprocal", 1),
    rec("real", 1), rec("imag", 1), rec("conj", 1),
    rec("conjugate", 1, dtypes=("float32", "complex64")),
    rec("angle", 1),
    rec("angle", 1, label="angle[deg=True]", dtypes=("int8", "float32", "complex64"), deg=True),
    rec("deg2rad", 1), rec("rad2deg", 1), rec("radians", 1), rec("degrees", 1),
    rec("isfinite", 1), rec("isinf", 1), rec("isnan", 1), rec("signbit", 1),
    rec("bitwise_not", 1), rec("invert", 1, dtypes=("bool", "int32")),
    rec("bitwise_invert", 1, dtypes=("bool", "uint8")), rec("logical_not", 1),
    rec("sinc", 1),
]

BINARY = [
    rec("add", 2), rec("subtract", 2), rec("multiply", 2),
    rec("divide", 2), rec("true_divide", 2),
    rec("floor_divide", 2), rec("remainder", 2), rec("mod", 2), rec("fmod", 2),
    rec("divmod", 2),
    rec("power", 2), rec("pow", 2), rec("float_power", 2),
    rec("arctan2", 2), rec("atan2", 2), rec("hypot", 2), rec("logaddexp", 2), rec("logaddexp2", 2),
    rec("copysign", 2), rec("heaviside", 2), rec("nextafter", 2),
    rec("maximum", 2), rec("minimum", 2), rec("fmax", 2), rec("fmin", 2),
    rec("equal", 2), rec("not_equal", 2), rec("less", 2), rec("less_equal", 2),
    rec("greater", 2), rec("greater_equal", 2),
    rec("logical_and", 2), rec("logical_or", 2), rec("logical_xor", 2),
    rec("bitwise_and", 2), rec("bitwise_or", 2), rec("bitwise_xor", 2),
    rec("left_shift", 2), rec("right_shift", 2),
    rec("bitwise_left_shift", 2), rec("bitwise_right_shift", 2),
]

# Names that are not ufuncs but are elementwise and exported next to them.
TERNARY_NAMES = ("where", "clip")
ALL_RECORDS = UNARY + BINARY
PRIMARY_UNARY = [r for r in UNARY if not r.alias]
PRIMARY_BINARY = [r for r in BINARY if not r.alias]

# The Python operator that calls each function (checked in the same test, sharing compiles).
BINARY_OPERATOR_OF = {
    "add": operator.add, "subtract": operator.sub, "multiply": operator.mul,
    "divide": operator.truediv, "floor_divide": operator.floordiv, "remainder": operator.mod,
    "power": operator.pow, "bitwise_and": operator.and_, "bitwise_or": operator.or_,
    "bitwise_xor": operator.xor, "left_shift": operator.lshift, "right_shift": operator.rshift,
    "less": operator.lt, "less_equal": operator.le, "equal": operator.eq,
    "not_equal": operator.ne, "greater": operator.gt, "greater_equal": operator.ge,
    "divmod": divmod,
}
UNARY_OPERATOR_OF = {"negative": operator.neg, "positive": operator.pos, "absolute": abs,
                     "bitwise_not": operator.invert}


def _with_operator(r, op_table, args):
  """(label, thunk) pairs: the function, and its Python operator if it has one."""
  cases = [(r.name, lambda: check(r.afn, r.jfn, *args, tol=r.tol))]
  op = op_table.get(r.name)
  if op is not None:
    cases.append((f"operator {op.__name__}", lambda: check(op, op, *args, tol=r.tol)))
  return cases


def _primary_dtype(r):
  for d in ("float32", "int32", "bool"):
    if d in r.dtypes:
      return d
  return r.dtypes[0]


def _inputs(r, dtype_names, shapes):
  return [make_values(d, s, which=i, kind=r.kind)
          for i, (d, s) in enumerate(zip(dtype_names, shapes))]


def test_every_exported_elementwise_function_has_a_record():
  exported = {n for n in dir(anp) if not n.startswith("_")
              and getattr(arrax_ufuncs, n, None) is getattr(anp, n)
              and callable(getattr(anp, n))}
  covered = {r.name.split("[")[0] for r in ALL_RECORDS} | set(TERNARY_NAMES)
  assert exported - covered == set()


# ---- dtype x op, with special values, shape (4, 3) ---------------------------------------------
def _op_dtype_params(records):
  return [pytest.param(r, d, id=f"{r.name}-{d}") for r in records for d in r.dtypes]


@pytest.mark.parametrize("r,dtype", _op_dtype_params(UNARY))
def test_unary_dtypes(r, dtype):
  (x,) = _inputs(r, [dtype], [(4, 3)])
  check_all(_with_operator(r, UNARY_OPERATOR_OF, (x,)))


@pytest.mark.parametrize("r,dtype", _op_dtype_params(BINARY))
def test_binary_dtypes(r, dtype):
  x, y = _inputs(r, [dtype, dtype], [(4, 3), (4, 3)])
  check_all(_with_operator(r, BINARY_OPERATOR_OF, (x, y)))


# Mixed dtypes exercise the promotion lattice (including bf16/f16 -> f32, i8/u8 -> i16, u32/i8
# -> int64 canonicalised to int32, bool with everything).
MIXED = [("int8", "uint8"), ("uint32", "int8"), ("bfloat16", "float16"), ("int32", "bfloat16"),
         ("bool", "uint8"), ("uint8", "complex64")]
MIXED_OPS = [r for r in BINARY if r.name in (
    "add", "divide", "floor_divide", "power", "maximum", "less", "bitwise_or", "logaddexp")]


@pytest.mark.parametrize("dtypes", MIXED, ids=lambda p: "-".join(p))
@pytest.mark.parametrize("r", MIXED_OPS, ids=lambda r: r.name)
def test_binary_mixed_dtypes(r, dtypes):
  x, y = _inputs(r, dtypes, [(4, 3), (4, 3)])
  check(r.afn, r.jfn, x, y, tol=r.tol)


# ---- shapes and broadcasting -------------------------------------------------------------------
UNARY_SHAPES = [(), (0,)]
BINARY_SHAPES = [((0,), (0,)), ((3, 1), (1, 4)), ((), (2, 3))]
# Functions built from several lax ops with constants (select/broadcast logic) get more shapes.
COMPOSITE = {"floor_divide", "remainder", "fmod", "divmod", "power", "float_power", "hypot",
             "logaddexp", "logaddexp2", "copysign", "heaviside", "nextafter", "fmax", "fmin", "right_shift",
             "arctan2", "logical_and"}
EXTRA_BINARY_SHAPES = [((), ()), ((4,), (2, 4))]


def _shape_id(s):
  return "x".join(str(d) for d in s) if s else "scalar"


@pytest.mark.parametrize("shape", UNARY_SHAPES, ids=_shape_id)
@pytest.mark.parametrize("r", PRIMARY_UNARY, ids=lambda r: r.name)
def test_unary_shapes(r, shape):
  (x,) = _inputs(r, [_primary_dtype(r)], [shape])
  check(r.afn, r.jfn, x, tol=r.tol)


def _binary_shape_params():
  return [pytest.param(r, s, id=f"{r.name}-{_shape_id(s[0])}-{_shape_id(s[1])}")
          for r in PRIMARY_BINARY
          for s in BINARY_SHAPES + (EXTRA_BINARY_SHAPES if r.name in COMPOSITE else [])]


@pytest.mark.parametrize("r,shapes", _binary_shape_params())
def test_binary_shapes(r, shapes):
  d = _primary_dtype(r)
  x, y = _inputs(r, [d, d], shapes)
  check_all(_with_operator(r, BINARY_OPERATOR_OF, (x, y)))


def test_binary_incompatible_shapes_raise_like_jax():
  x, y = make_values("float32", (3,)), make_values("float32", (4,), 1)
  check(anp.add, jnp.add, x, y)
  check(anp.hypot, jnp.hypot, x, y)
  check(operator.mul, operator.mul, x, y)


# ---- Python scalar operands (weak types) -------------------------------------------------------
SCALAR_CASES = [("int8", 3), ("int8", 2.5)]


@pytest.mark.parametrize("side", ["array_scalar", "scalar_array"])
@pytest.mark.parametrize("case", SCALAR_CASES, ids=lambda c: f"{c[0]}-{type(c[1]).__name__}")
@pytest.mark.parametrize("r", PRIMARY_BINARY, ids=lambda r: r.name)
def test_binary_python_scalar(r, case, side):
  """Weak typing of Python scalars; `x + 3` and reflected `3 + x` are checked alongside."""
  dtype, scalar = case
  x = make_values(dtype, (4, 3), kind=r.kind)
  args = (x, scalar) if side == "array_scalar" else (scalar, x)
  check_all(_with_operator(r, BINARY_OPERATOR_OF, args))


SCALAR_ONLY = [(2, 3), (2.5, 3), (True, 2), (1j, 2.0)]


@pytest.mark.parametrize("args", SCALAR_ONLY, ids=lambda a: f"{a[0]!r}-{a[1]!r}")
@pytest.mark.parametrize("r", [r for r in BINARY if r.name in (
    "add", "subtract", "multiply", "divide", "floor_divide", "remainder", "power", "maximum",
    "equal", "arctan2")], ids=lambda r: r.name)
def test_binary_both_python_scalars(r, args):
  check(r.afn, r.jfn, *args, tol=r.tol)


@pytest.mark.parametrize("value", [3, 2.5, True, 1 + 2j], ids=repr)
@pytest.mark.parametrize("r", [r for r in UNARY if r.name in (
    "sin", "sqrt", "negative", "abs", "floor", "square", "sign", "isnan", "real", "imag",
    "signbit", "round[decimals=1]")], ids=lambda r: r.name)
def test_unary_python_scalar(r, value):
  check(r.afn, r.jfn, value, tol=r.tol)


def test_python_int_out_of_range_for_weak_int_raises_like_jax():
  x = make_values("uint8", (3,))
  check_all([("uint8 + -1", lambda: check(anp.add, jnp.add, x, -1)),
             ("uint8 + 300", lambda: check(anp.add, jnp.add, x, 300)),
             ("int8 * 2**40", lambda: check(anp.multiply, jnp.multiply,
                                            make_values("int8", (3,)), 2**40))])


# ---- power: integer / float / negative / Python int exponents ----------------------------------
POWER_CASES = [
    ("int32**int32", "int32", "int32"), ("int8**uint8", "int8", "uint8"),
    ("uint32**uint32", "uint32", "uint32"), ("float32**int32", "float32", "int32"),
    ("int32**float32", "int32", "float32"), ("bfloat16**bfloat16", "bfloat16", "bfloat16"),
    ("complex64**float32", "complex64", "float32"), ("bool**bool", "bool", "bool"),
]


@pytest.mark.parametrize("name,d1,d2", POWER_CASES, ids=[c[0] for c in POWER_CASES])
def test_power_dtype_pairs(name, d1, d2):
  x = make_values(d1, (4, 3))
  y = make_values(d2, (4, 3), 1)
  check(anp.power, jnp.power, x, y)
  check(operator.pow, operator.pow, x, y)


POWER_EXPONENTS = [0, 2, 3, -1, -2, 0.5, 2.0, True, np.int32(3)]


@pytest.mark.parametrize("exponent", POWER_EXPONENTS, ids=lambda e: f"{type(e).__name__}({e})")
@pytest.mark.parametrize("dtype", ["int8", "uint8", "float32", "complex64"])
def test_power_python_exponent(dtype, exponent):
  x = make_values(dtype, (4, 3))
  check(anp.power, jnp.power, x, exponent)
  check(operator.pow, operator.pow, x, exponent)


@pytest.mark.parametrize("base", [2, 2.0, -3, 0.5], ids=repr)
@pytest.mark.parametrize("dtype", ["int32", "uint8", "float32"])
def test_power_python_base(dtype, base):
  x = make_values(dtype, (4, 3))
  check(anp.power, jnp.power, base, x)
  check(operator.pow, operator.pow, base, x)


def test_integer_power_with_negative_array_exponent():
  x = np.array([2, -2, 1, -1, 0, 3], np.int32)
  y = np.array([-1, -1, -3, -3, -2, 0], np.int32)
  check(anp.power, jnp.power, x, y)


# ---- clip and where ----------------------------------------------------------------------------
CLIP_CASES = [
    ("scalars", lambda x: ((x,), dict(min=-1, max=2))),
    ("float_scalars", lambda x: ((x,), dict(min=-1.5, max=2.5))),
    ("min_only", lambda x: ((x,), dict(min=0))),
    ("max_only", lambda x: ((x,), dict(max=0))),
    ("positional", lambda x: ((x, -2, 3), {})),
    ("array_bounds", lambda x: ((x, np.zeros(3, x.dtype), np.full((4, 1), 5, x.dtype)), {})),
    ("lo_gt_hi", lambda x: ((x, 3, 1), {})),
    ("none", lambda x: ((x,), {})),
    ("deprecated_a_min", lambda x: ((x,), dict(a_min=0))),
]


@pytest.mark.parametrize("dtype", ["int8", "uint8", "bfloat16", "float32", "complex64"])
@pytest.mark.parametrize("case", CLIP_CASES, ids=lambda c: c[0])
def test_clip(case, dtype):
  args, kwargs = case[1](make_values(dtype, (4, 3)))
  check(anp.clip, jnp.clip, *args, **kwargs)


def test_clip_method():
  x = make_values("float32", (4, 3))
  check(lambda a: a.clip(0, 2), lambda a: a.clip(0, 2), x)
  check(lambda a: a.clip(max=1), lambda a: a.clip(max=1), x)


WHERE_CASES = [
    ("same_dtype", lambda: (BOOL_VALUES[0], make_values("float32", (4, 3)),
                            make_values("float32", (4, 3), 1))),
    ("mixed_dtype", lambda: (BOOL_VALUES[0], make_values("int8", (4, 3)),
                             make_values("bfloat16", (4, 3), 1))),
    ("int_u8", lambda: (BOOL_VALUES[1], make_values("int8", (4, 3)),
                        make_values("uint8", (4, 3), 1))),
    ("broadcast", lambda: (np.array([True, False, True]), make_values("float32", (4, 1)), 0.0)),
    ("python_scalars", lambda: (BOOL_VALUES[0], 1, 2.5)),
    ("python_int_scalars", lambda: (BOOL_VALUES[0], 1, 2)),
    ("scalar_x_array_y", lambda: (BOOL_VALUES[0], 1, make_values("uint8", (4, 3)))),
    ("float_scalar_int_array", lambda: (BOOL_VALUES[0], make_values("int32", (4, 3)), 0.5)),
    ("int_condition", lambda: (make_values("int32", (4, 3)), make_values("float16", (4, 3)),
                               -1)),
    ("float_condition_nan", lambda: (make_values("float32", (4, 3)), 1, 0)),
    ("scalar_condition", lambda: (True, make_values("complex64", (4, 3)), 0j)),
    ("bool_values", lambda: (BOOL_VALUES[0], make_values("bool", (4, 3)), False)),
    ("empty", lambda: (np.zeros((0,), bool), make_values("float32", (0,)), 1.0)),
    ("bad_broadcast", lambda: (np.array([True, False]), make_values("float32", (3,)), 1.0)),
]


@pytest.mark.parametrize("case", WHERE_CASES, ids=lambda c: c[0])
def test_where(case):
  cond, x, y = case[1]()
  if isinstance(cond, list):
    cond = np.array(cond).reshape(4, 3)
  check(anp.where, jnp.where, cond, x, y)


def test_where_one_argument_is_nonzero():
  cond = make_values("int32", (4, 3))
  check(anp.where, jnp.where, cond)
  check(lambda c: anp.where(c, 1), lambda c: jnp.where(c, 1), cond)


# ---- Python operators --------------------------------------------------------------------------
BINARY_OPERATORS = [
    ("add", operator.add), ("sub", operator.sub), ("mul", operator.mul),
    ("truediv", operator.truediv), ("floordiv", operator.floordiv), ("mod", operator.mod),
    ("pow", operator.pow), ("and", operator.and_), ("or", operator.or_),
    ("xor", operator.xor), ("lshift", operator.lshift), ("rshift", operator.rshift),
    ("lt", operator.lt), ("le", operator.le), ("eq", operator.eq), ("ne", operator.ne),
    ("gt", operator.gt), ("ge", operator.ge), ("divmod", divmod),
]
UNARY_OPERATORS = [("neg", operator.neg), ("pos", operator.pos), ("abs", abs),
                   ("invert", operator.invert)]


# Operators on two arrays, on one array and on a Python scalar (either side) are checked together
# with their functions above (test_*_dtypes, test_binary_shapes, test_binary_python_scalar).
# Here: the remaining scalar kinds (negative ints for shifts/powers, complex, weak float on
# bfloat16).
OPERATOR_SCALAR_CASES = [("int8", -1), ("float32", 1j), ("bfloat16", 2.5)]


@pytest.mark.parametrize("case", OPERATOR_SCALAR_CASES,
                         ids=lambda c: f"{c[0]}-{c[1]!r}")
@pytest.mark.parametrize("name,op", BINARY_OPERATORS, ids=[o[0] for o in BINARY_OPERATORS])
def test_binary_operator_python_scalar_both_sides(name, op, case):
  dtype, scalar = case
  x = make_values(dtype, (4, 3))
  check_all([("x op scalar", lambda: check(op, op, x, scalar)),      # x.__op__(scalar)
             ("scalar op x", lambda: check(op, op, scalar, x))])     # x.__rop__(scalar)


NUMPY_OPERANDS = [
    ("np_float32_scalar", lambda: np.float32(2.5)), ("np_int8_scalar", lambda: np.int8(3)),
    ("np_int64_scalar", lambda: np.int64(3)), ("np_float64_array", lambda: np.ones(3)),
    ("np_int32_array", lambda: np.arange(3, dtype=np.int32)),
    ("np_bool_array", lambda: np.array([True, False, True])),
]


@pytest.mark.parametrize("name,make", NUMPY_OPERANDS, ids=[o[0] for o in NUMPY_OPERANDS])
@pytest.mark.parametrize("opname,op", [("add", operator.add), ("lt", operator.lt)],
                         ids=lambda v: v if isinstance(v, str) else "")
def test_binary_operator_numpy_operand_both_sides(opname, op, name, make):
  x = make_values("bfloat16", (2, 3))
  check(op, op, x, Raw(make()))
  check(op, op, Raw(make()), x)


def test_operator_on_unsupported_operand_returns_notimplemented_like_jax():
  x = make_values("float32", (3,))
  check(lambda a: a + "s", lambda a: a + "s", x)
  check(lambda a: a * [1, 2, 3], lambda a: a * [1, 2, 3], x)
  check(lambda a: a == None, lambda a: a == None, x)  # noqa: E711
  check(lambda a: (1, 2, 3) + a, lambda a: (1, 2, 3) + a, x)


def test_bool_of_comparison_and_chained_ops():
  x = make_values("int32", (4, 3))
  check(lambda a: ((a + 1) * 2 - a // 3) % 5 ** 2, lambda a: ((a + 1) * 2 - a // 3) % 5 ** 2, x)
  check(lambda a: -(~a) & 0xF0 | a >> 2 ^ a << 1, lambda a: -(~a) & 0xF0 | a >> 2 ^ a << 1, x)


MATMUL_SHAPES = [((3,), (3,)), ((2, 3), (3,)), ((3,), (3, 4)), ((2, 3), (3, 4)),
                 ((5, 2, 3), (3, 4)), ((1, 2, 3), (5, 3, 4)), ((2, 3), ())]


@pytest.mark.parametrize("shapes", MATMUL_SHAPES,
                         ids=lambda p: f"{_shape_id(p[0])}@{_shape_id(p[1])}")
def test_matmul_operator(shapes):
  x = np.arange(math.prod(shapes[0]), dtype=np.float32).reshape(shapes[0]) - 2
  y = np.arange(math.prod(shapes[1]), dtype=np.float32).reshape(shapes[1]) * 0.5
  check(operator.matmul, operator.matmul, x, y)
  check(operator.matmul, operator.matmul, Raw(x), y)   # numpy array on the left


# ---- under jit ---------------------------------------------------------------------------------
@pytest.mark.parametrize("r", PRIMARY_UNARY + PRIMARY_BINARY, ids=lambda r: r.name)
def test_under_jit(r):
  d = _primary_dtype(r)
  args = _inputs(r, [d] * r.arity, [(4, 3)] * r.arity)
  check(arrax.jit(r.afn), jax.jit(r.jfn), *args, tol=r.tol)


@pytest.mark.parametrize("r", [r for r in BINARY if r.name in (
    "add", "multiply", "divide", "power", "floor_divide", "maximum", "less", "right_shift")],
    ids=lambda r: r.name)
def test_under_jit_with_closed_over_python_scalar(r):
  x = make_values("int8", (4, 3))
  check(arrax.jit(lambda a: r.afn(a, 2)), jax.jit(lambda a: r.jfn(a, 2)), x)
  check(arrax.jit(lambda a: r.afn(2.5, a)), jax.jit(lambda a: r.jfn(2.5, a)), x)


@pytest.mark.parametrize("name,op", BINARY_OPERATORS + [("matmul", operator.matmul)],
                         ids=[o[0] for o in BINARY_OPERATORS] + ["matmul"])
def test_operators_under_jit(name, op):
  x = make_values("float32", (3, 3))
  y = make_values("float32", (3, 3), 1)
  check(arrax.jit(op), jax.jit(op), x, y)
  check(arrax.jit(lambda a: op(a, 2)), jax.jit(lambda a: op(a, 2)), x)
  check(arrax.jit(lambda a: op(2, a)), jax.jit(lambda a: op(2, a)), x)


@pytest.mark.parametrize("name,op", UNARY_OPERATORS, ids=[o[0] for o in UNARY_OPERATORS])
def test_unary_operators_under_jit(name, op):
  check(arrax.jit(op), jax.jit(op), make_values("int8", (4, 3)))


def test_jit_weak_scalar_argument():
  for fn_a, fn_j in [(anp.sin, jnp.sin), (anp.negative, jnp.negative), (anp.sign, jnp.sign)]:
    check(arrax.jit(fn_a), jax.jit(fn_j), 3)
    check(arrax.jit(fn_a), jax.jit(fn_j), 2.5)
  check(arrax.jit(anp.add), jax.jit(jnp.add), 2, 3.5)
  check(arrax.jit(lambda a, b: anp.where(a > 0, a, b)),
        jax.jit(lambda a, b: jnp.where(a > 0, a, b)), make_values("bfloat16", (4, 3)), 1)
  check(arrax.jit(lambda a: anp.clip(a, 0, 1)), jax.jit(lambda a: jnp.clip(a, 0, 1)),
        make_values("float16", (4, 3)))
