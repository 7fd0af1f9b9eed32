"""jnp.ufunc and frompyfunc, the ml_dtypes scalar types, host I/O and the completeness of
arrax.numpy, compared with jax.numpy 0.10.2.

The 14 ufunc objects of jax.numpy (add, multiply, maximum, ..., negative) are crossed with
their methods: calls with broadcasting and Python scalars, reduce (axes as ints, tuples,
negative and None; keepdims, where, initial, dtype; empty and 0-d arrays), accumulate, at
(repeated, negative and broadcast indices), reduceat (increasing and non-increasing indices)
and outer (shapes of every rank), over dtypes. ufuncs made by frompyfunc from Python functions
are checked the same way, and representative methods under jit, vmap and grad; jaxprs print as
JAX's; bad inputs raise JAX's exception classes.
"""
import inspect
import io
import warnings

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from arrax import test_util as atu
from oracle import (BF16, assert_same, check, check_all, check_jaxpr, check_raises,
                    check_vmap, make_with, rand)

UFUNCS = ["add", "bitwise_and", "bitwise_or", "bitwise_xor", "logaddexp", "logaddexp2",
          "logical_and", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
          "negative", "subtract"]
BINARY = [n for n in UFUNCS if n != "negative"]
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
# No fast reduce: a loop over the axis, which cannot reduce over a tuple of axes.
LOOPED = ("subtract",)
DTYPES = [np.dtype(t) for t in (np.bool_, np.int8, np.uint8, np.int32, np.float16)] + [
    BF16, np.dtype(np.float32), np.dtype(np.complex64)]


def _id(v):
  return getattr(v, "name", None) or repr(v).replace(" ", "")


def num_dtype(name):
  """A dtype every method of ufunc `name` accepts (integers for the bitwise ones)."""
  return np.int32 if name in BITWISE else np.float32


def values(shape, dtype, seed=0):
  """Small values (sums and products stay exact in every dtype; no NaN)."""
  return rand(shape, dtype, seed, ints=(-3, 4), step=0.5 if np.dtype(dtype).kind in "fcV"
              else None)


def method(name, meth=None, **fixed):
  """build: ufunc `name` (its method `meth`) of each library, with keyword arguments."""
  def make(np_):
    f = getattr(np_, name)
    f = getattr(f, meth) if meth else f
    return (lambda *a: f(*a, **fixed)) if fixed else f
  return make


def run(name, meth, *args, tol=None, jit=False, **fixed):
  return check(method(name, meth, **fixed), *args, build=make_with("np"), tol=tol, jit=jit)


# ---- calls -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", UFUNCS)
def test_call(name):
  cases = []
  for dt in DTYPES:
    x, y = values((3, 4), dt, 1), values((4,), dt, 2)
    args = (x,) if name == "negative" else (x, y)
    cases.append((f"{dt}", lambda a=args: run(name, None, *a)))
  if name != "negative":
    for scalar in (2, 2.5, True):
      x = values((3,), np.int8, 3)
      cases.append((f"int8 with {scalar!r}", lambda s=scalar, x=x: run(name, None, x, s)))
      cases.append((f"{scalar!r} with int8", lambda s=scalar, x=x: run(name, None, s, x)))
    cases.append(("scalars", lambda: run(name, None, 3, 1.5)))
  else:
    cases.append(("scalar", lambda: run(name, None, 2.5)))
  cases.append(("jit", lambda: run(name, None, *([values((2, 3), np.float32)] * (
      1 if name == "negative" else 2)), jit=True)))
  check_all(cases)


# ---- reduce ------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", BINARY)
def test_reduce_dtypes(name):
  cases = []
  for dt in DTYPES:
    x = values((3, 4), dt, 4)
    cases.append((f"{dt} axis=0", lambda x=x: run(name, "reduce", x)))
    cases.append((f"{dt} axis=None", lambda x=x: run(name, "reduce", x, axis=None)))
  check_all(cases)


AXES = [0, 1, -1, None, (0, 2), (-1, 0), (), (1,)]


@pytest.mark.parametrize("name", BINARY)
def test_reduce_axes_keepdims(name):
  x = values((2, 3, 4), num_dtype(name), 5)
  check_all([(f"axis={axis} keepdims={k}",
              lambda axis=axis, k=k: run(name, "reduce", x, axis=axis, keepdims=k))
             for axis in AXES for k in ((False, True) if axis in (-1, None, (0, 2), ())
                                        else (False,))])


@pytest.mark.parametrize("name", BINARY)
def test_reduce_where_initial_dtype(name):
  dt = num_dtype(name)
  x = values((3, 4), dt, 6)
  mask = np.array([[True, False, True, True], [False, False, True, False],
                   [True, True, False, True]])
  row = np.array([True, False, True, False])
  init = 2 if dt == np.int32 else 1.5
  out_dt = np.float16 if dt == np.float32 else np.int8
  check_all([
      ("where without initial", lambda: run(name, "reduce", x, where=mask)),
      ("where and initial", lambda: run(name, "reduce", x, where=mask, initial=init)),
      ("broadcast where, axis=1", lambda: run(name, "reduce", x, axis=1, where=row,
                                              initial=init)),
      ("where, axis=None, keepdims", lambda: run(name, "reduce", x, axis=None, where=mask,
                                                 initial=init, keepdims=True)),
      ("initial", lambda: run(name, "reduce", x, initial=init)),
      ("initial, axis=-1", lambda: run(name, "reduce", x, axis=-1, initial=init)),
      ("dtype", lambda: run(name, "reduce", x, dtype=out_dt)),
      ("dtype=bool", lambda: run(name, "reduce", x, dtype=np.bool_)),
      ("empty axis", lambda: run(name, "reduce", np.zeros((0, 3), dt))),
      ("empty axis with initial", lambda: run(name, "reduce", np.zeros((0, 3), dt),
                                               initial=init)),
      ("empty, other axis", lambda: run(name, "reduce", np.zeros((0, 3), dt), axis=1)),
      ("0-d, axis=None", lambda: run(name, "reduce", np.array(3, dt), axis=None)),
      ("0-d, axis=0", lambda: run(name, "reduce", np.array(3, dt))),
      ("Python scalar", lambda: run(name, "reduce", 3, axis=None)),
      ("1-d int8", lambda: run(name, "reduce", values((5,), np.int8, 7))),
  ])


@pytest.mark.parametrize("name", BINARY)
def test_reduce_x64(x64, name):
  x = values((3, 4), np.float64, 8)
  xi = values((3, 4), np.int64, 9)
  run(name, "reduce", xi if name in BITWISE else x, axis=1)


# ---- accumulate --------------------------------------------------------------------------------
@pytest.mark.parametrize("name", BINARY)
def test_accumulate(name):
  cases = []
  for dt in DTYPES:
    x = values((3, 4), dt, 10)
    cases.append((f"{dt}", lambda x=x: run(name, "accumulate", x)))
  x = values((2, 3, 4), num_dtype(name), 11)
  for axis in (1, -1, 2, None, (0,)):
    cases.append((f"axis={axis}", lambda axis=axis: run(name, "accumulate", x, axis=axis)))
  out_dt = np.int8 if name in BITWISE else np.float16
  cases += [
      ("dtype", lambda: run(name, "accumulate", x, axis=1, dtype=out_dt)),
      ("empty", lambda: run(name, "accumulate", np.zeros((0, 3), np.float32))),
      ("empty, other axis", lambda: run(name, "accumulate", np.zeros((2, 0), np.int32),
                                        axis=1)),
      ("0-d", lambda: run(name, "accumulate", np.array(2.0, np.float32))),
      ("Python scalars", lambda: run(name, "accumulate", np.array([1, 2, 3]))),
  ]
  check_all(cases)


# ---- at ----------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", UFUNCS)
def test_at(name):
  unary = name == "negative"

  def at(x, idx, *vals):
    return run(name, "at", x, idx, *vals, inplace=False)

  cases = []
  rep = np.array([0, 2, 2, 5, 0, -1])
  for dt in DTYPES:
    x = values((6,), dt, 12)
    v = () if unary else (values((6,), dt, 13),)
    cases.append((f"{dt} repeated indices", lambda x=x, v=v: at(x, rep, *v)))
  dt = num_dtype(name)
  x = values((3, 4), dt, 14)
  rows, cols = np.array([0, 2, 0, 0]), np.array([1, 3, 1, 1])
  val = lambda shape, seed: () if unary else (values(shape, dt, seed),)  # noqa: E731
  cases += [
      ("tuple of index arrays", lambda: at(x, (rows, cols), *val((4,), 15))),
      ("rows, values per row", lambda: at(x, rows, *val((4, 4), 16))),
      ("rows, broadcast values", lambda: at(x, rows, *val((4,), 17))),
      ("scalar value", lambda: at(x, (rows, cols), *([] if unary else [2]))),
      ("int index", lambda: at(x, 1, *val((4,), 18))),
      ("int pair", lambda: at(x, (2, 3), *val((), 19))),
      ("broadcast index arrays", lambda: at(x, (rows[:, None], cols[None, :2]),
                                            *val((4, 2), 20))),
      ("negative indices", lambda: at(x, (np.array([-1, -1]), np.array([-4, 0])),
                                      *val((2,), 21))),
      ("None index", lambda: at(x, None, *val((), 22))),
      ("empty tuple index", lambda: at(x, (), *val((), 23))),
      ("out-of-bounds index dropped", lambda: at(x, np.array([1, 7]), *val((2, 4), 24))),
      ("empty index array", lambda: at(x, np.zeros((0,), np.int32), *val((0, 4), 25))),
      ("NumPy index", lambda: at(x, rows, *val((4,), 26))),
      ("jit", lambda: check(method(name, "at", inplace=False), x, rows, *val((4,), 27),
                            build=make_with("np"), jit=True, eager=False)),
  ]
  if not unary:
    cases.append(("float values into int array", lambda: at(
        np.arange(5, dtype=np.int32), np.array([0, 0]), 1.5)))
  with warnings.catch_warnings():
    warnings.simplefilter("ignore", FutureWarning)   # unsafe casts of updates, in both
    check_all(cases)


# ---- reduceat ----------------------------------------------------------------------------------
@pytest.mark.parametrize("name", BINARY)
def test_reduceat(name):
  dt = num_dtype(name)
  x = values((8,), dt, 28)
  x2 = values((3, 6), dt, 29)
  cases = [(f"indices={list(i)}", lambda i=i: run(name, "reduceat", x, np.array(i)))
           for i in ([0, 2, 2, 5], [0, 3, 1], [5], [0, 1, 2, 3, 4, 5, 6, 7], [7, 0])]
  cases += [
      ("axis=1", lambda: run(name, "reduceat", x2, np.array([0, 4, 1]), axis=1)),
      ("axis=-1", lambda: run(name, "reduceat", x2, np.array([2, 3]), axis=-1)),
      ("axis=0", lambda: run(name, "reduceat", x2, np.array([0, 2]), axis=0)),
      ("dtype (unused, as in JAX)", lambda: run(name, "reduceat", x, np.array([0, 4]),
                                                dtype=np.float16)),
      ("bool", lambda: run(name, "reduceat", values((6,), np.bool_, 30), np.array([0, 3]))),
      ("int8", lambda: run(name, "reduceat", values((6,), np.int8, 31), np.array([0, 3]))),
  ]
  check_all(cases)


# ---- outer -------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", BINARY)
def test_outer(name):
  dt = num_dtype(name)
  shapes = [((3,), (4,)), ((2, 1), (3,)), ((), (3,)), ((2,), ()), ((), ()),
            ((0,), (2,)), ((2, 2), (1, 3))]
  cases = [(f"{sa} x {sb}", lambda sa=sa, sb=sb: run(name, "outer", values(sa, dt, 32),
                                                     values(sb, dt, 33)))
           for sa, sb in shapes]
  cases += [
      ("Python scalars", lambda: run(name, "outer", 2, 3)),
      ("int8 with Python int", lambda: run(name, "outer", values((3,), np.int8, 34), 2)),
      ("bool with int8", lambda: run(name, "outer", values((2,), np.bool_, 35),
                                     values((3,), np.int8, 36))),
      ("jit", lambda: check(method(name, "outer"), values((3,), dt, 37),
                            values((2,), dt, 38), build=make_with("np"), jit=True,
                            eager=False)),
  ]
  check_all(cases)


# ---- frompyfunc --------------------------------------------------------------------------------
def _affine(np_):
  return np_.frompyfunc(lambda a, b: a * b + 1, 2, 1)


def _clipped(np_):
  return np_.frompyfunc(lambda a, b: np_.where(a > b, a - b, b), 2, 1, identity=0)


def _pair(np_):
  return np_.frompyfunc(lambda a: (a, a * 2), 1, 2)


def _pyf(make, meth=None, **fixed):
  def build(np_):
    f = make(np_)
    f = getattr(f, meth) if meth else f
    return lambda *a: f(*a, **fixed)
  return build


def pyrun(make, meth, *args, jit=False, **fixed):
  return check(_pyf(make, meth, **fixed), *args, build=make_with("np"), jit=jit)


def test_frompyfunc_methods():
  x = values((3, 4), np.float32, 39)
  xi = values((3, 4), np.int32, 40)
  v = values((4,), np.float32, 41)
  idx = np.array([0, 2, 2, 0])
  check_all([
      ("call broadcast", lambda: pyrun(_affine, None, x, v)),
      ("call scalars", lambda: pyrun(_affine, None, 2, 3.0)),
      ("call int", lambda: pyrun(_affine, None, xi, 2)),
      ("call jit", lambda: pyrun(_affine, None, x, v, jit=True)),
      ("call where", lambda: pyrun(_clipped, None, x, v)),
      ("two outputs", lambda: pyrun(_pair, None, x)),
      ("reduce", lambda: pyrun(_affine, "reduce", x)),
      ("reduce axis=1 keepdims", lambda: pyrun(_affine, "reduce", x, axis=1, keepdims=True)),
      ("reduce axis=None", lambda: pyrun(_affine, "reduce", x, axis=None)),
      ("reduce initial", lambda: pyrun(_affine, "reduce", x, axis=-1, initial=0.5)),
      ("reduce where+initial", lambda: pyrun(_affine, "reduce", x, where=x > 0, initial=1.0)),
      ("reduce identity, where", lambda: pyrun(_clipped, "reduce", x, where=x > 0)),
      ("reduce identity, empty", lambda: pyrun(_clipped, "reduce", np.zeros((0, 2),
                                                                            np.float32))),
      ("reduce dtype", lambda: pyrun(_affine, "reduce", xi, dtype=np.float32)),
      ("accumulate", lambda: pyrun(_affine, "accumulate", x, axis=1)),
      ("accumulate dtype", lambda: pyrun(_clipped, "accumulate", xi, dtype=np.float16)),
      ("at", lambda: pyrun(_affine, "at", x, idx, v, inplace=False)),
      ("at unary two outputs", lambda: pyrun(_pair, "at", x, idx, inplace=False)),
      ("reduceat", lambda: pyrun(_clipped, "reduceat", x, np.array([0, 2]), axis=1)),
      ("outer", lambda: pyrun(_affine, "outer", v, x)),
      ("reduce two outputs", lambda: pyrun(_pair, "reduce", x)),
      ("outer two outputs", lambda: pyrun(_pair, "outer", x, x)),
  ])


def test_frompyfunc_attributes():
  def f(a, b):
    """Docs of f."""
    return a - b
  for np_ in (anp, jnp):
    u = np_.frompyfunc(f, 2, 1, identity=0)
    assert (u.nin, u.nout, u.nargs, u.identity, u.__name__, u.__doc__) == (
        2, 1, 2, 0, "f", "Docs of f.")
    assert repr(u) == "<jnp.ufunc 'f'>"
    assert u == np_.frompyfunc(f, 2, 1, identity=0)
    assert hash(u) == hash(np_.frompyfunc(f, 2, 1, identity=0))
    assert u != np_.frompyfunc(f, 2, 1, identity=1)
    assert isinstance(u, np_.ufunc)


# ---- attributes and signatures -----------------------------------------------------------------
@pytest.mark.parametrize("name", UFUNCS)
def test_attributes(name):
  a, j = getattr(anp, name), getattr(jnp, name)
  assert isinstance(a, anp.ufunc)
  assert (a.nin, a.nout, a.nargs, a.__name__, repr(a)) == (
      j.nin, j.nout, j.nargs, j.__name__, repr(j))
  ai, ji = a.identity, j.identity
  assert type(ai) is type(ji) and (ai == ji or (ai is None and ji is None)), (ai, ji)
  assert a == getattr(anp, name) and hash(a) == hash(getattr(anp, name))
  for attr in ("nin", "nout", "nargs", "identity"):
    with pytest.raises(AttributeError):
      setattr(a, attr, 3)
  assert a.__doc__


def _params(f):
  return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


@pytest.mark.parametrize("meth", [None, "reduce", "accumulate", "at", "reduceat", "outer"])
def test_signatures(meth):
  a = anp.add if meth is None else getattr(anp.add, meth)
  j = jnp.add if meth is None else getattr(jnp.add, meth)
  assert _params(a) == _params(j)
  assert _params(anp.ufunc) == _params(jnp.ufunc)
  assert _params(anp.frompyfunc) == _params(jnp.frompyfunc)


# ---- transformations ---------------------------------------------------------------------------
def test_vmap():
  x = values((3, 4, 5), np.float32, 42)
  xi = values((3, 4, 5), np.int32, 43)
  idx = np.array([0, 3, 3])
  check_all([
      ("add.reduce", lambda: check_vmap(lambda top: lambda a: top.numpy.add.reduce(a), x)),
      ("subtract.reduce axis=1",
       lambda: check_vmap(lambda top: lambda a: top.numpy.subtract.reduce(a, axis=1), x)),
      ("bitwise_xor.reduce",
       lambda: check_vmap(lambda top: lambda a: top.numpy.bitwise_xor.reduce(a), xi)),
      ("maximum.accumulate",
       lambda: check_vmap(lambda top: lambda a: top.numpy.maximum.accumulate(a, axis=1), x)),
      ("subtract.accumulate",
       lambda: check_vmap(lambda top: lambda a: top.numpy.subtract.accumulate(a), x)),
      ("add.at, batched values", lambda: check_vmap(
          lambda top: lambda a, v: top.numpy.add.at(a, idx, v, inplace=False), x[:, 0],
          x[:, 1, :3])),
      ("maximum.at", lambda: check_vmap(
          lambda top: lambda a, v: top.numpy.maximum.at(a, idx, v, inplace=False), x[:, 0],
          x[:, 1, :3])),
      ("multiply.outer", lambda: check_vmap(
          lambda top: lambda a, b: top.numpy.multiply.outer(a, b), x[:, 0], x[:, 1, :2])),
      ("add.reduceat", lambda: check_vmap(
          lambda top: lambda a: top.numpy.add.reduceat(a, np.array([0, 2])), x[:, 0])),
      ("logaddexp.reduce", lambda: check_vmap(
          lambda top: lambda a: top.numpy.logaddexp.reduce(a, axis=-1), x)),
      ("the ufunc itself", lambda: check_vmap(lambda top: top.numpy.maximum, x, x[0],
                                               in_axes=(0, None))),
      ("grad of the ufunc itself", lambda: check(lambda top: top.grad(top.numpy.logaddexp),
                                                 1.5, 0.5, build=make_with("top"))),
      ("ufunc as a static argument", lambda: check(
          lambda top: lambda a: top.jit(lambda u, b: u.reduce(b), static_argnums=0)(
              top.numpy.subtract, a), x, build=make_with("top"))),
      ("frompyfunc call", lambda: check_vmap(
          lambda top: lambda a, b: _affine(top.numpy)(a, b), x[:, 0], x[:, 1])),
  ])


def _grad_case(f):
  return lambda top: top.grad(lambda *a: top.numpy.sum(f(top.numpy, *a)))


def test_grad():
  x = values((3, 4), np.float32, 44) + 0.25
  v = values((3,), np.float32, 45)
  idx = np.array([0, 2, 2])
  cases = {
      "add.reduce": lambda np_, a: np_.add.reduce(a, axis=1),
      "multiply.reduce": lambda np_, a: np_.multiply.reduce(a),
      "subtract.reduce": lambda np_, a: np_.subtract.reduce(a, axis=1),
      "maximum.reduce": lambda np_, a: np_.maximum.reduce(a, axis=None),
      "logaddexp.reduce": lambda np_, a: np_.logaddexp.reduce(a, axis=0),
      "logaddexp2.reduce initial": lambda np_, a: np_.logaddexp2.reduce(a, initial=0.5),
      "add.accumulate": lambda np_, a: np_.add.accumulate(a, axis=1) ** 2,
      "subtract.accumulate": lambda np_, a: np_.subtract.accumulate(a) ** 2,
      "multiply.outer": lambda np_, a: np_.multiply.outer(a, a[0]),
      "subtract.at": lambda np_, a: np_.subtract.at(a, idx, 2.0, inplace=False) ** 2,
      "minimum.at": lambda np_, a: np_.minimum.at(a, idx, 0.0, inplace=False),
      "frompyfunc reduce": lambda np_, a: _affine(np_).reduce(a),
  }
  check_all([(label, lambda f=f: check(_grad_case(f), x, build=make_with("top"),
                                       tol=1e-5)) for label, f in cases.items()]
            + [("add.at values", lambda: check(
                lambda top: top.grad(lambda b: top.numpy.sum(
                    top.numpy.add.at(np.ones(5, np.float32), idx, b, inplace=False) ** 2)),
                v, build=make_with("top")))])


def test_numerical_gradients():
  x = anp.asarray(values((3, 4), np.float32, 46) + 0.3)
  atu.check_grads(lambda a: anp.subtract.reduce(a, axis=1), (x,), order=2,
                  modes=("fwd", "rev"), atol=1e-2, rtol=1e-2)
  atu.check_grads(lambda a: anp.logaddexp.reduce(a, axis=None), (x,), order=1,
                  atol=1e-2, rtol=1e-2)
  atu.check_grads(lambda a: anp.multiply.accumulate(a, axis=1), (x,), order=1,
                  atol=1e-2, rtol=1e-2)
  atu.check_grads(lambda a: _affine(anp).reduce(a), (x,), order=1, atol=1e-2, rtol=1e-2)


# ---- jaxprs ------------------------------------------------------------------------------------
def _jaxpr_cases():
  f32 = values((2, 3), np.float32, 47)
  i32 = values((2, 3), np.int32, 48)
  v3 = values((3,), np.float32, 49)
  idx = np.array([0, 1, 1])
  return {
      "add": (lambda np_, x, y: np_.add(x, y), (f32, v3)),
      "add scalar": (lambda np_, x: np_.add(x, 1), (i32,)),
      "negative": (lambda np_, x: np_.negative(x), (f32,)),
      "maximum": (lambda np_, x, y: np_.maximum(x, y), (f32, v3)),
      "logical_xor": (lambda np_, x, y: np_.logical_xor(x, y), (i32, v3)),
      "logaddexp": (lambda np_, x, y: np_.logaddexp(x, y), (f32, v3)),
      "add.reduce": (lambda np_, x: np_.add.reduce(x), (f32,)),
      "add.reduce keepdims": (lambda np_, x: np_.add.reduce(x, axis=None, keepdims=True),
                              (f32,)),
      "multiply.reduce where": (lambda np_, x: np_.multiply.reduce(x, where=x > 0), (f32,)),
      "maximum.reduce initial": (lambda np_, x: np_.maximum.reduce(x, axis=1, initial=0.0),
                                 (f32,)),
      "bitwise_or.reduce": (lambda np_, x: np_.bitwise_or.reduce(x, axis=1), (i32,)),
      "bitwise_and.reduce": (lambda np_, x: np_.bitwise_and.reduce(x), (i32,)),
      "logical_and.reduce": (lambda np_, x: np_.logical_and.reduce(x), (f32,)),
      "subtract.reduce": (lambda np_, x: np_.subtract.reduce(x), (f32,)),
      "logaddexp.reduce": (lambda np_, x: np_.logaddexp.reduce(x, axis=1), (f32,)),
      "add.accumulate": (lambda np_, x: np_.add.accumulate(x), (f32,)),
      "maximum.accumulate": (lambda np_, x: np_.maximum.accumulate(x, axis=1), (f32,)),
      "add.at": (lambda np_, x, v: np_.add.at(x, idx, v, inplace=False), (v3, v3)),
      "multiply.at bool": (lambda np_, x: np_.multiply.at(x > 0, idx, False, inplace=False),
                           (v3,)),
      "subtract.at": (lambda np_, x: np_.subtract.at(x, (np.int32(0), idx), 1.0,
                                                     inplace=False), (f32,)),
      "subtract.at, Python int index": (
          lambda np_, x: np_.subtract.at(x, (0, idx), 1.0, inplace=False), (f32,)),
      "minimum.at": (lambda np_, x: np_.minimum.at(x, idx, 0.0, inplace=False), (v3,)),
      "negative.at": (lambda np_, x: np_.negative.at(x, np.int32(1), inplace=False), (v3,)),
      "negative.at, Python int index": (
          lambda np_, x: np_.negative.at(x, 1, inplace=False), (v3,)),
      "add.outer": (lambda np_, x, y: np_.add.outer(x, y), (v3, v3)),
      "multiply.outer 2-d": (lambda np_, x, y: np_.multiply.outer(x, y), (f32, v3)),
      "add.reduceat": (lambda np_, x: np_.add.reduceat(x, np.array([0, 2])), (v3,)),
      "frompyfunc": (lambda np_, x, y: _affine(np_)(x, y), (f32, v3)),
      "frompyfunc.reduce": (lambda np_, x: _affine(np_).reduce(x, axis=1), (f32,)),
  }


# A Python int index passed to the jitted `at` is a weakly typed tracer: it stays weak through
# the wrap of negative values and is made strongly typed before the scatter, as in JAX.
@pytest.mark.parametrize("label", list(_jaxpr_cases()))
def test_jaxpr(label):
  f, args = _jaxpr_cases()[label]
  check_jaxpr(lambda np_: lambda *a: f(np_, *a), *args, build=make_with("np"))


# ---- errors ------------------------------------------------------------------------------------
def _raises(f, *args, match=()):
  return lambda: check_raises(lambda np_: lambda *a: f(np_, *a), *args, build=make_with("np"),
                              match=match)


def test_errors():
  x = values((2, 3), np.float32, 50)
  xi = values((2, 3), np.int32, 51)
  idx = np.array([0, 1])
  check_all([
      ("reduce over a tuple of axes (no fast path)",
       _raises(lambda np_, a: np_.subtract.reduce(a, axis=(0, 1)), x)),
      ("frompyfunc reduce over a tuple of axes",
       _raises(lambda np_, a: _affine(np_).reduce(a, axis=(0, 1)), x)),
      ("at without inplace=False", _raises(lambda np_, a: np_.add.at(a, idx, 1.0), x)),
      ("at inplace=True", _raises(lambda np_, a: np_.maximum.at(a, idx, 1.0, inplace=True), x)),
      ("at with a list index", _raises(lambda np_, a: np_.maximum.at(a, [0, 1], 1.0,
                                                                     inplace=False), x)),
      ("at with a slice", _raises(lambda np_, a: np_.add.at(a, (slice(None), 0), 1.0,
                                                            inplace=False), x)),
      ("at of a binary ufunc without values",
       _raises(lambda np_, a: np_.add.at(a, idx, inplace=False), x)),
      ("where mask without identity or initial",
       _raises(lambda np_, a: np_.maximum.reduce(a, where=a > 0), x,
               match=("does not have an identity",))),
      ("subtract where without initial",
       _raises(lambda np_, a: np_.subtract.reduce(a, where=a > 0), x)),
      ("where of non-bool dtype", _raises(lambda np_, a, w: np_.add.reduce(a, where=w), x, xi,
                                          match=("where argument must have dtype=bool",))),
      ("empty reduction without identity",
       _raises(lambda np_: np_.subtract.reduce(np_.zeros((0, 2))))),
      ("empty maximum reduction", _raises(lambda np_: np_.maximum.reduce(np_.zeros((0, 2))))),
      ("initial of rank 1", _raises(lambda np_, a: np_.add.reduce(a, initial=np_.ones(3)), x)),
      ("out=", _raises(lambda np_, a: np_.add.reduce(a, out=a), x)),
      ("call out=", _raises(lambda np_, a: np_.add(a, a, out=a), x)),
      ("call where=", _raises(lambda np_, a: np_.add(a, a, where=a > 0), x)),
      ("call with a list", _raises(lambda np_: np_.add([1, 2], 1))),
      ("reduce a list", _raises(lambda np_: np_.add.reduce([1, 2]))),
      ("outer with a list", _raises(lambda np_, a: np_.add.outer([1], a), x)),
      ("reduce of a unary ufunc", _raises(lambda np_, a: np_.negative.reduce(a), x,
                                          match=("binary ufuncs",))),
      ("accumulate of a unary ufunc", _raises(lambda np_, a: np_.negative.accumulate(a), x)),
      ("reduceat of a unary ufunc", _raises(lambda np_, a: np_.negative.reduceat(a, idx), x)),
      ("outer of a unary ufunc", _raises(lambda np_, a: np_.negative.outer(a, a), x)),
      ("reduce of two outputs", _raises(lambda np_, a: _pair(np_).reduce(a), x)),
      ("axis out of range", _raises(lambda np_, a: np_.subtract.reduce(a, axis=2), x)),
      ("fast reduce axis out of range", _raises(lambda np_, a: np_.add.reduce(a, axis=-3), x)),
      ("0-d reduce along axis 0", _raises(lambda np_: np_.add.reduce(np_.float32(1)))),
      ("accumulate axis=None", _raises(lambda np_, a: np_.subtract.accumulate(a, axis=None),
                                       x)),
      ("accumulate 0-d", _raises(lambda np_: np_.maximum.accumulate(np_.float32(1)))),
      ("bitwise reduce of floats", _raises(lambda np_, a: np_.bitwise_and.reduce(a), x)),
      ("maximum.reduce with dtype", _raises(lambda np_, a: np_.maximum.reduce(
          a, dtype=np.float16), x)),
      ("reduceat of a 0-d array", _raises(lambda np_: np_.add.reduceat(np_.float32(1),
                                                                       np_.array([0])))),
      ("reduceat with 2-d indices", _raises(lambda np_, a: np_.add.reduceat(
          a, np_.array([[0, 1]])), x)),
      ("reduceat axis=None", _raises(lambda np_, a: np_.add.reduceat(a, idx, axis=None), x)),
      ("reduceat with a list", _raises(lambda np_, a: np_.add.reduceat(a, [0, 1]), x)),
      ("subtract of booleans", _raises(lambda np_, a: np_.subtract(a > 0, a > 1), x)),
      ("frompyfunc with too many arguments", _raises(lambda np_, a: _affine(np_)(a, a, a), x)),
      ("reduce with an unhashable axis", _raises(lambda np_, a: np_.add.reduce(a, axis=[0]),
                                                 x)),
  ])


# ---- ml_dtypes scalar types ----------------------------------------------------------------------
ML_NAMES = ["float4_e2m1fn", "float6_e2m3fn", "float6_e3m2fn", "float8_e3m4", "float8_e4m3",
            "float8_e4m3b11fnuz", "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2",
            "float8_e5m2fnuz", "float8_e8m0fnu", "int2", "int4", "uint2", "uint4"] + (
    ["int1", "uint1"] if hasattr(ml_dtypes, "int1") else [])
# Arrays of these work in arrax; the others are only named, classified and promoted.
ARRAY_DTYPES = ["float4_e2m1fn", "float8_e3m4", "float8_e4m3", "float8_e4m3b11fnuz",
                "float8_e4m3fn", "float8_e4m3fnuz", "float8_e5m2", "float8_e5m2fnuz",
                "float8_e8m0fnu", "int2", "int4", "uint2", "uint4"]
UNSUPPORTED = [n for n in ML_NAMES if n not in ARRAY_DTYPES]


@pytest.mark.parametrize("name", ML_NAMES)
def test_ml_dtype_names(name):
  a, j = getattr(anp, name), getattr(jnp, name)
  assert np.dtype(a) == np.dtype(j) == np.dtype(getattr(ml_dtypes, name))
  assert a == getattr(ml_dtypes, name) and hash(a) == hash(getattr(ml_dtypes, name))
  assert a.dtype == j.dtype
  for kind in (np.floating, np.inexact, np.integer, np.signedinteger, np.unsignedinteger,
               np.number, np.generic):
    assert anp.issubdtype(a, kind) == jnp.issubdtype(j, kind), kind
  info = anp.finfo if anp.issubdtype(a, np.floating) else anp.iinfo
  assert str(info(a)) == str((jnp.finfo if info is anp.finfo else jnp.iinfo)(j))


@pytest.mark.parametrize("name", ARRAY_DTYPES)
def test_ml_dtype_arrays(name):
  a_t, j_t = getattr(anp, name), getattr(jnp, name)
  value = 1 if name == "int2" else 3 if "int" in name else 1.5

  def via_int8(x):   # sub-byte arrays reach the host through a wider type
    return x.astype(np.int8) if "int" in name else x.astype(np.float32)

  assert_same(via_int8(a_t(value)), via_int8(j_t(value)))
  assert a_t(value).dtype == j_t(value).dtype == np.dtype(getattr(ml_dtypes, name))
  z_a, z_j = anp.zeros(3, a_t), jnp.zeros(3, j_t)
  assert (z_a.shape, z_a.dtype) == (z_j.shape, z_j.dtype) == ((3,), np.dtype(a_t))
  assert_same(via_int8(z_a), via_int8(z_j))
  assert_same(via_int8(anp.ones((2, 2), a_t) + a_t(value)),
              via_int8(jnp.ones((2, 2), j_t) + j_t(value)))
  # Promotion with Python scalars keeps the type, as in JAX.
  assert (anp.ones(2, a_t) * 2).dtype == (jnp.ones(2, j_t) * 2).dtype == np.dtype(a_t)
  if "float" in name:
    assert (anp.ones(2, a_t) * 2.5).dtype == np.dtype(a_t)
    assert_same(via_int8(anp.asarray(np.array([0.5, -2.0], np.float32)).astype(a_t)),
                via_int8(jnp.asarray(np.array([0.5, -2.0], np.float32)).astype(j_t)))


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_isdtype_of_unsupported_ml_dtypes(name):
  for kind in ("signed integer", "unsigned integer", "real floating", "numeric", "integral"):
    assert anp.isdtype(getattr(anp, name), kind) == jnp.isdtype(getattr(jnp, name), kind), kind


@pytest.mark.parametrize("name", ARRAY_DTYPES)
def test_isdtype_of_ml_dtypes(name):
  for kind in ("signed integer", "unsigned integer", "real floating", "numeric", "integral"):
    assert anp.isdtype(getattr(anp, name), kind) == jnp.isdtype(getattr(jnp, name), kind), kind


@pytest.mark.parametrize("name", UNSUPPORTED)
def test_unsupported_ml_dtype_arrays_raise(name):
  with pytest.raises(TypeError, match="arrax does not support arrays of dtype"):
    anp.zeros(3, getattr(anp, name))


def _promotion_table(np_):
  names = ["bool", "int8", "uint8", "int16", "uint32", "int64", "uint64", "bfloat16",
           "float16", "float32", "float64", "complex64", "complex128"] + ML_NAMES
  types = [getattr(np_, n) for n in names] + [int, float, complex]
  out = {}
  for a in types:
    for b in types:
      try:
        out[(str(a), str(b))] = np_.promote_types(a, b)
      except Exception as e:  # noqa: BLE001
        out[(str(a), str(b))] = type(e).__name__
  return out


def _promotions_agree():
  ours, theirs = _promotion_table(anp), _promotion_table(jnp)
  assert len(ours) == len(theirs) > 900
  diffs = [(k, a, b) for (k, a), b in zip(ours.items(), theirs.values()) if a != b]
  assert not diffs, diffs[:10]


def test_promote_types():
  _promotions_agree()
  # The error JAX raises, by class (a ValueError subclass) and message.
  check_raises(lambda np_: lambda: np_.promote_types(np_.int4, np_.int8), build=make_with("np"),
               match=("1-bit, 2-bit and 4-bit integers do not support implicit promotion",))
  check_raises(lambda np_: lambda: np_.promote_types(np_.float8_e4m3fn, np_.float8_e5m2),
               build=make_with("np"), match=("8-bit floats do not support",))
  check_raises(lambda np_: lambda: np_.promote_types(np_.float4_e2m1fn, np_.float32),
               build=make_with("np"), match=("4-bit floats do not support",))
  check_raises(lambda np_: lambda: np_.ones(2, np_.int4) + np_.ones(2, np_.int8),
               build=make_with("np"))
  check_raises(lambda np_: lambda: np_.ones(2, np_.float8_e5m2) + np_.ones(2, np_.float32),
               build=make_with("np"))


def test_promote_types_x64(x64):
  _promotions_agree()


def test_result_type_with_scalars():
  for name in ("float8_e4m3fn", "float8_e5m2", "int4", "uint4"):
    for scalar in (1, 1.0, True):
      a = getattr(anp, name)
      j = getattr(jnp, name)
      try:
        want = jnp.result_type(jnp.zeros(2, j), scalar)
      except Exception as e:  # noqa: BLE001
        with pytest.raises(Exception) as info:
          anp.result_type(anp.zeros(2, a), scalar)
        assert type(info.value).__name__ == type(e).__name__
        assert isinstance(info.value, ValueError)
        continue
      assert anp.result_type(anp.zeros(2, a), scalar) == want


# ---- host I/O, NumPy's classes ---------------------------------------------------------------
@pytest.mark.parametrize("dtype", [np.float32, np.int8, np.bool_, np.complex64, BF16, np.uint32],
                         ids=_id)
def test_save_load_round_trip(tmp_path, dtype):
  x = rand((3, 4), dtype, 52)
  path_a, path_j = tmp_path / "a.npy", tmp_path / "j.npy"
  anp.save(path_a, anp.asarray(x))
  jnp.save(path_j, jnp.asarray(x))
  assert path_a.read_bytes() == path_j.read_bytes()
  assert_same(anp.load(path_a), jnp.load(path_j))
  # A file-like object, as in JAX's example.
  f = io.BytesIO()
  anp.save(f, anp.asarray(x))
  f.seek(0)
  assert_same(anp.load(f), jnp.asarray(x))


def test_savez_and_load(tmp_path):
  x, y = rand((3,), np.float32, 53), rand((2, 2), np.int32, 54)
  anp.savez(tmp_path / "a.npz", x=anp.asarray(x), y=anp.asarray(y))
  jnp.savez(tmp_path / "j.npz", x=jnp.asarray(x), y=jnp.asarray(y))
  with anp.load(tmp_path / "a.npz") as a, jnp.load(tmp_path / "j.npz") as j:
    assert sorted(a.files) == sorted(j.files) == ["x", "y"]
    for k in ("x", "y"):
      assert type(a[k]) is type(j[k]) is np.ndarray
      np.testing.assert_array_equal(a[k], j[k])


def test_load_keeps_unsupported_dtypes_in_numpy(tmp_path):
  strings = np.array(["a", "bc"])
  np.save(tmp_path / "s.npy", strings)
  a, j = anp.load(tmp_path / "s.npy"), jnp.load(tmp_path / "s.npy")
  assert type(a) is type(j) is np.ndarray
  np.testing.assert_array_equal(a, j)


def test_fromfile_and_numpy_names(tmp_path):
  np.arange(3, dtype=np.float32).tofile(tmp_path / "x.bin")
  check_raises(lambda np_: lambda: np_.fromfile(tmp_path / "x.bin", dtype=np.float32),
               build=make_with("np"))
  for name in ("ComplexWarning", "character", "flexible", "object_", "save", "savez"):
    assert getattr(anp, name) is getattr(jnp, name), name
  assert issubclass(anp.ComplexWarning, RuntimeWarning)


# ---- completeness ------------------------------------------------------------------------------
# Names of jax.numpy that arrax.numpy deliberately does not provide (name -> reason).
NOT_PROVIDED: dict = {}


def test_every_public_jax_numpy_name_is_provided():
  ours = {n for n in dir(anp) if not n.startswith("_")}
  theirs = {n for n in dir(jnp) if not n.startswith("_")}
  missing = theirs - ours - set(NOT_PROVIDED)
  assert not missing, sorted(missing)
  assert not set(NOT_PROVIDED) & ours


def test_jax_ufunc_names_are_ufuncs():
  ours = sorted(n for n in dir(anp) if isinstance(getattr(anp, n), anp.ufunc))
  theirs = sorted(n for n in dir(jnp) if isinstance(getattr(jnp, n), jnp.ufunc))
  assert ours == theirs == UFUNCS


def test_eager_call_goes_to_the_jitted_function():
  # jnp.add(x, y) eagerly is one cached executable, as before it became a ufunc.
  x = anp.arange(3.0)
  assert_same(anp.add(x, 1.0), jnp.add(jnp.arange(3.0), 1.0))
  assert anp.add._func is arrax._src.numpy.ufuncs.add
