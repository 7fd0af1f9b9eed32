"""arrax.numpy reductions (sum ... cumprod) compared with jax.numpy 0.10.2.

Each reduction is crossed with dtypes (special values: NaN, +-inf, -0.0, integer extremes), axis
forms (None, int, negative, tuple, empty tuple), keepdims, dtype=, where=/initial=, ddof, empty
and 0-d inputs, and is checked as a function, as an Array method and under jit.
"""
import math
from collections import namedtuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from oracle import BF16, Raw, check, check_all

DTYPES = {
    "bool": np.dtype(np.bool_), "int8": np.dtype(np.int8), "uint8": np.dtype(np.uint8),
    "int32": np.dtype(np.int32), "float16": np.dtype(np.float16), "bfloat16": BF16,
    "float32": np.dtype(np.float32), "complex64": np.dtype(np.complex64),
}

nan, inf = float("nan"), float("inf")
# (3, 4) inputs with the special values; reducing over axis 0 keeps NaN to one column.
SPECIAL = {
    "f": [[nan, 1.5, -2.0, 0.0], [inf, -0.0, 3.0, 0.5], [1.0, 2.5, -inf, -0.0]],
    "i": [["max", "min", 3, 0], [1, 2, -3, 100], [-1, 5, 7, -7]],
    "b": [[True, False, True, True], [True, True, False, True], [False, True, False, True]],
    "c": [[complex(nan, 1), 1.5 + 1j, -2 - 1j, 0j], [complex(1, inf), -0.5j, 3 + 0j, 0.5 - 2j],
          [1 + 1j, 2.5 - 1j, complex(-inf, 0), complex(-0.0, -0.0)]],
}


def special(dtype_name):
  dt = DTYPES[dtype_name]
  kind = "b" if dt == np.bool_ else dt.kind if dt.kind in "iuc" else "f"
  if kind == "u":
    kind = "i"
  if kind == "i":
    info = np.iinfo(dt)
    rows = [[info.max if v == "max" else info.min if v == "min" else v for v in row]
            for row in SPECIAL["i"]]
    return np.array(rows, np.int64).astype(dt)
  return np.array(SPECIAL[kind]).astype(dt)


def finite(dtype_name, shape):
  """Finite, deterministic values (mixed signs, some zeros) of a dtype and shape."""
  dt = DTYPES[dtype_name]
  n = math.prod(shape)
  base = (np.arange(n) * 7) % 11 - 5
  if dt == np.bool_:
    return (base > -2).reshape(shape)
  if dt.kind in "iu":
    return base.astype(np.int64).astype(dt).reshape(shape)
  vals = base * 0.5
  if dt.kind == "c":
    vals = vals + 1j * (((np.arange(n) * 3) % 5) - 2) * 0.25
  return vals.astype(dt).reshape(shape)


# ---- records -----------------------------------------------------------------------------------
Red = namedtuple("Red", "name keepdims dtype_arg where initial tuple_axis tol")
REDUCTIONS = [
    Red("sum", True, True, True, True, True, None),
    Red("prod", True, True, True, True, True, None),
    Red("mean", True, True, True, False, True, None),
    Red("var", True, True, True, False, True, None),
    Red("std", True, True, True, False, True, None),
    Red("max", True, False, True, True, True, None),
    Red("min", True, False, True, True, True, None),
    Red("amax", True, False, True, True, True, None),
    Red("amin", True, False, True, True, True, None),
    Red("argmax", True, False, False, False, False, None),
    Red("argmin", True, False, False, False, False, None),
    Red("all", True, False, True, False, True, None),
    Red("any", True, False, True, False, True, None),
    Red("cumsum", False, True, False, False, False, None),
    Red("cumprod", False, True, False, False, False, None),
]
BY_NAME = {r.name: r for r in REDUCTIONS}
PRIMARY = [r for r in REDUCTIONS if r.name not in ("amax", "amin")]


def fns(name):
  """Lazily looked-up arrax and JAX functions (a missing one fails only its own tests)."""
  return (lambda *a, **k: getattr(anp, name)(*a, **k),
          lambda *a, **k: getattr(jnp, name)(*a, **k))


def run(name, x, tol=None, **kwargs):
  fa, fj = fns(name)
  check(fa, fj, x, tol=tol or BY_NAME[name].tol, **kwargs)


def _id(v):
  return repr(v).replace(" ", "")


# ---- dtypes x reductions (with special values) -------------------------------------------------
@pytest.mark.parametrize("dtype,axis", [(d, 0) for d in DTYPES] + [
    (d, None) for d in ("bool", "float16")],
    ids=lambda v: v if isinstance(v, str) else f"axis={v}")
@pytest.mark.parametrize("r", PRIMARY, ids=lambda r: r.name)
def test_dtypes_special_values(r, dtype, axis):
  run(r.name, special(dtype), axis=axis)


@pytest.mark.parametrize("name", ["amax", "amin"])
def test_aliases(name):
  x = special("float32")
  check_all([("axis=0", lambda: run(name, x, axis=0)),
             ("keepdims", lambda: run(name, finite("int8", (2, 3)), keepdims=True)),
             ("where+initial", lambda: run(name, x, axis=1, where=MASK, initial=0.0))])


# ---- axis forms and keepdims -------------------------------------------------------------------
AXES = [None, -1, (0, -1), ()]


def _axis_params():
  out = []
  for r in PRIMARY:
    for axis in AXES:
      for keepdims in ([False, True] if r.keepdims else [None]):
        out.append(pytest.param(r, axis, keepdims,
                                id=f"{r.name}-axis={_id(axis)}-keepdims={keepdims}"))
  return out


@pytest.mark.parametrize("r,axis,keepdims", _axis_params())
def test_axis_and_keepdims(r, axis, keepdims):
  x = finite("float32", (2, 3, 4))
  kwargs = {"axis": axis}
  if keepdims is not None:
    kwargs["keepdims"] = keepdims
  run(r.name, x, **kwargs)


@pytest.mark.parametrize("axis", [3, -4, (0, 0), (1, -2)], ids=_id)
@pytest.mark.parametrize("r", PRIMARY, ids=lambda r: r.name)
def test_bad_axis_raises_like_jax(r, axis):
  run(r.name, finite("float32", (2, 3, 4)), axis=axis)


@pytest.mark.parametrize("axis", [1, (0, 2)], ids=_id)
@pytest.mark.parametrize("dtype", ["int8", "bfloat16", "complex64"])
@pytest.mark.parametrize("r", [BY_NAME[n] for n in ("sum", "prod", "max", "argmin", "cumsum",
                                                     "var")], ids=lambda r: r.name)
def test_axis_on_other_dtypes(r, dtype, axis):
  run(r.name, finite(dtype, (2, 3, 4)), axis=axis)


# ---- dtype= ------------------------------------------------------------------------------------
DTYPE_ARG_CASES = [("int8", "float32"), ("float32", "int32"), ("bool", "int8"),
                   ("float16", "float32"), ("complex64", "float32")]


@pytest.mark.parametrize("case", DTYPE_ARG_CASES, ids=lambda c: f"{c[0]}-to-{c[1]}")
@pytest.mark.parametrize("r", [r for r in PRIMARY if r.dtype_arg], ids=lambda r: r.name)
def test_dtype_argument(r, case):
  src, dst = case
  run(r.name, finite(src, (3, 4)), axis=0, dtype=DTYPES[dst])


@pytest.mark.parametrize("name", ["sum", "prod", "cumsum", "cumprod"])
@pytest.mark.parametrize("dtype", ["bool", "int8", "uint8"])
def test_promote_integers_false(name, dtype):
  if name.startswith("cum"):
    run(name, finite(dtype, (3, 4)), axis=1)   # cum* always promote small ints
  else:
    run(name, finite(dtype, (3, 4)), axis=1, promote_integers=False)


# ---- where= and initial= -----------------------------------------------------------------------
MASK = np.array([[True, False, True, True], [False, False, False, True],
                 [True, True, False, False]])
COLUMN_MASK = np.array([True, False, True, True])   # broadcast against (3, 4)


@pytest.mark.parametrize("axis,mask", [(None, MASK), (1, MASK), (1, COLUMN_MASK)],
                         ids=["axis=None-mask(3,4)", "axis=1-mask(3,4)", "axis=1-mask(4,)"])
@pytest.mark.parametrize("r", [r for r in PRIMARY if r.where], ids=lambda r: r.name)
def test_where_mask(r, axis, mask):
  x = special("float32") if r.name not in ("all", "any") else finite("int8", (3, 4))
  run(r.name, x, axis=axis, where=mask)


@pytest.mark.parametrize("name", ["max", "min"])
def test_where_needs_initial_for_max_min(name):
  x = finite("int32", (3, 4))
  check_all([
      ("no initial", lambda: run(name, x, axis=1, where=Raw(MASK))),
      ("with initial", lambda: run(name, x, axis=1, where=Raw(MASK), initial=3)),
      ("initial, keepdims", lambda: run(name, x, axis=0, where=Raw(MASK), initial=-2,
                                        keepdims=True)),
  ])


@pytest.mark.parametrize("initial", [0, 2, -1.5, 100], ids=_id)
@pytest.mark.parametrize("dtype", ["int8", "float32", "bfloat16"])
@pytest.mark.parametrize("r", [r for r in PRIMARY if r.initial], ids=lambda r: r.name)
def test_initial(r, dtype, initial):
  run(r.name, finite(dtype, (3, 4)), axis=0, initial=initial)


def test_where_with_keepdims_for_mean_var():
  x = finite("float32", (3, 4))
  check_all([(f"{n} keepdims", lambda n=n: run(n, x, axis=1, where=Raw(MASK), keepdims=True))
             for n in ("mean", "var", "std", "sum")])


# ---- var / std ddof and correction -------------------------------------------------------------
@pytest.mark.parametrize("ddof", [0, 1, 4, 5], ids=lambda d: f"ddof={d}")
@pytest.mark.parametrize("dtype", ["int8", "float16", "float32", "complex64"])
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_ddof(name, dtype, ddof):
  run(name, finite(dtype, (3, 4)), axis=1, ddof=ddof)


def test_var_std_correction_keyword():
  x = finite("float32", (3, 4))
  check_all([(f"{n} correction={c}", lambda n=n, c=c: run(n, x, correction=c))
             for n in ("var", "std") for c in (0, 1, 1.5)])


# ---- empty and 0-d inputs ----------------------------------------------------------------------
EMPTY_CASES = [((0,), None), ((2, 0), 0), ((2, 0), 1), ((0, 3), (0, 1))]


@pytest.mark.parametrize("case", EMPTY_CASES, ids=lambda c: f"shape={_id(c[0])}-axis={_id(c[1])}")
@pytest.mark.parametrize("r", PRIMARY, ids=lambda r: r.name)
def test_empty(r, case):
  shape, axis = case
  run(r.name, finite("float32", shape), axis=axis)


@pytest.mark.parametrize("name", ["max", "min", "argmax", "prod", "mean"])
@pytest.mark.parametrize("dtype", ["int8", "bool"])
def test_empty_other_dtypes(name, dtype):
  run(name, finite(dtype, (0,)))


@pytest.mark.parametrize("name", ["max", "min"])
def test_empty_max_min_with_initial_or_where(name):
  x = finite("float32", (0, 3))
  check_all([
      ("initial", lambda: run(name, x, axis=0, initial=1.0)),
      ("initial axis=None", lambda: run(name, x, initial=-1.0)),
      ("where+initial", lambda: run(name, x, where=Raw(np.zeros((0, 3), bool)), initial=0.0)),
  ])


@pytest.mark.parametrize("axis", [None, 0, ()], ids=_id)
@pytest.mark.parametrize("r", PRIMARY, ids=lambda r: r.name)
def test_zero_dim(r, axis):
  run(r.name, np.array(-2.5, np.float32), axis=axis)


@pytest.mark.parametrize("value", [3, -2.5, True], ids=repr)
@pytest.mark.parametrize("r", PRIMARY, ids=lambda r: r.name)
def test_python_and_numpy_scalars(r, value):
  run(r.name, value)


@pytest.mark.parametrize("name", ["sum", "max", "argmax", "all", "cumsum", "mean"])
def test_lists_rejected_like_jax(name):
  run(name, Raw([1, 2, 3]))
  run(name, Raw((1.0, 2.0)))


def test_numpy_array_input():
  x = finite("float32", (3, 4))
  check_all([(n, lambda n=n: run(n, Raw(x), axis=0)) for n in ("sum", "max", "mean", "cumsum")]
            + [("float64 numpy", lambda: run("sum", Raw(x.astype(np.float64))))]
            + [("int64 numpy", lambda: run("prod", Raw(x.astype(np.int64)), axis=1))])


# ---- NaN handling ------------------------------------------------------------------------------
NAN_INPUTS = {
    "nan_first": [nan, 1.0, 2.0, nan], "nan_last": [1.0, 5.0, -1.0, nan],
    "inf_and_nan": [inf, nan, -inf, 0.0], "all_nan": [nan, nan, nan, nan],
    "signed_zeros": [-0.0, 0.0, -0.0, 0.0], "inf_minus_inf": [inf, -inf, 1.0, 2.0],
}


@pytest.mark.parametrize("values", list(NAN_INPUTS), ids=str)
@pytest.mark.parametrize("dtype", ["float32"])
@pytest.mark.parametrize("r", PRIMARY, ids=lambda r: r.name)
def test_nan_inputs(r, dtype, values):
  run(r.name, np.array(NAN_INPUTS[values]).astype(DTYPES[dtype]))


# ---- Array methods -----------------------------------------------------------------------------
METHOD_CASES = [
    ("sum", dict(axis=0)), ("sum", dict()), ("sum", dict(axis=(0, 1), keepdims=True)),
    ("prod", dict(axis=-1, dtype=np.float32)), ("max", dict(axis=1, keepdims=True)),
    ("min", dict(initial=-3.0)), ("mean", dict(axis=0, dtype=np.float16)),
    ("var", dict(ddof=1)), ("std", dict(axis=(0, 1))), ("argmax", dict(axis=1, keepdims=True)),
    ("argmin", dict()), ("all", dict(axis=0)), ("any", dict(keepdims=True)),
    ("cumsum", dict(axis=1)), ("cumprod", dict(dtype=np.float32)),
    ("sum", dict(where=Raw(MASK[0]))), ("max", dict(where=Raw(MASK[0]), initial=0)),
]


@pytest.mark.parametrize("dtype", ["int8", "float32"])
@pytest.mark.parametrize("name,kwargs", METHOD_CASES,
                         ids=[f"{n}-{','.join(f'{k}={_id(v)}' for k, v in kw.items())}"
                              for n, kw in METHOD_CASES])
def test_array_methods(name, kwargs, dtype):
  x = finite(dtype, (3, 4))
  check(lambda a, **k: getattr(a, name)(**k), lambda a, **k: getattr(a, name)(**k), x,
        **kwargs)


def test_method_positional_axis():
  x = finite("float32", (3, 4))
  check_all([(n, lambda n=n: check(lambda a: getattr(a, n)(1), lambda a: getattr(a, n)(1), x))
             for n in ("sum", "max", "argmax", "cumsum", "mean")])


# ---- cumulative_sum / cumulative_prod (array API spelling) -------------------------------------
@pytest.mark.parametrize("kwargs", [dict(), dict(axis=0), dict(axis=1),
                                    dict(axis=1, include_initial=True), dict(dtype=np.float32)],
                         ids=lambda k: ",".join(f"{a}={_id(b)}" for a, b in k.items()) or "none")
@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod"])
def test_cumulative_array_api(name, kwargs):
  check_all([
      ("2-D", lambda: run_any(name, finite("int8", (3, 4)), **kwargs)),
      ("1-D", lambda: run_any(name, finite("float32", (5,)),
                              **{k: v for k, v in kwargs.items() if k != "axis"})),
  ])


def run_any(name, x, **kwargs):
  fa, fj = fns(name)
  check(fa, fj, x, **kwargs)


# ---- under jit ---------------------------------------------------------------------------------
JIT_CASES = [("sum", dict(axis=1)), ("prod", dict()), ("mean", dict(axis=0, keepdims=True)),
             ("var", dict(ddof=1)), ("std", dict(axis=1)), ("max", dict(axis=0)),
             ("min", dict(initial=0.0, where=True)), ("argmax", dict(axis=1)),
             ("argmin", dict()), ("all", dict(axis=1)), ("any", dict()),
             ("cumsum", dict(axis=0)), ("cumprod", dict(axis=-1))]


@pytest.mark.parametrize("name,kwargs", JIT_CASES, ids=[c[0] for c in JIT_CASES])
def test_under_jit(name, kwargs):
  fa, fj = fns(name)
  x = special("float32")
  check(arrax.jit(lambda a: fa(a, **kwargs)), jax.jit(lambda a: fj(a, **kwargs)), x)
  # traced where= mask
  if BY_NAME[name].where:
    init = {"initial": 0.0} if name in ("max", "min") else {}
    check(arrax.jit(lambda a, m: fa(a, where=m, **init)),
          jax.jit(lambda a, m: fj(a, where=m, **init)), x, MASK)


def test_jit_weak_scalar_reductions():
  for name in ("sum", "mean", "max", "cumsum"):
    fa, fj = fns(name)
    check(arrax.jit(fa), jax.jit(fj), 2.5)
    check(arrax.jit(fa), jax.jit(fj), 3)


def test_axis_must_be_static_under_jit():
  fa, fj = fns("sum")
  x = finite("float32", (3, 4))
  check(arrax.jit(lambda a, ax: fa(a, axis=ax)), jax.jit(lambda a, ax: fj(a, axis=ax)), x, 1)
