"""jnp.pad, jnp.take_along_axis, jnp.put_along_axis, lax.bitcast_convert_type's shape errors,
Python-int range checks in jnp.array/asarray/full, and lax.expand_dims, differentially against
JAX 0.10.2 (values, dtypes, shapes, weak types, exception classes), eagerly and under jit, grad
and vmap.

To keep compile counts low, value cases are computed in batches: one jitted function per
library returns the results of every case of a batch.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import arrax
import arrax.numpy as anp
from arrax import lax as alax
from arrax.test_util import check_grads
from oracle import BF16, assert_same, check, check_cases, check_jit_batch, distinct_data

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning"),
              pytest.mark.filterwarnings("ignore:Explicitly requested dtype")]


# ---- jnp.pad ----------------------------------------------------------------------------------
_MODES = ["constant", "edge", "reflect", "symmetric", "wrap", "linear_ramp", "maximum",
          "minimum", "mean", "median", "empty"]


def _pad_case(mode, pw, **kw):
  return (f"{mode} {pw} {kw}", lambda lib, x: lib.pad(x, pw, mode, **kw))


def _pad_cases(nd, widths, extras=True):
  cases = [_pad_case(m, pw) for m in _MODES for pw in widths]
  if not extras:
    return cases
  return cases + [
      _pad_case("constant", 2, constant_values=-3.5),
      _pad_case("constant", (1, 2), constant_values=(7, -2)),
      _pad_case("constant", 1, constant_values=[[9]]),
      _pad_case("constant", 2, constant_values=[[i, -i - 1] for i in range(nd)]),
      _pad_case("reflect", (9, 11), reflect_type="odd"),
      _pad_case("symmetric", (9, 11), reflect_type="odd"),
      _pad_case("reflect", (9, 11)),
      _pad_case("symmetric", (1, 12)),
      _pad_case("wrap", (9, 13)),
      _pad_case("linear_ramp", (3, 4), end_values=(5, -2)),
      _pad_case("linear_ramp", 3, end_values=tuple((i, 2 * i) for i in range(nd))),
      _pad_case("mean", (3, 4), stat_length=2),
      _pad_case("median", 2, stat_length=(1, 3)),
      _pad_case("maximum", 2, stat_length=tuple((1, i + 2) for i in range(nd))),
      _pad_case("minimum", 3, stat_length=50),
      _pad_case("mean", 1, stat_length=-1),   # (JAX slices [0:-1] and [1:], as it wraps)
  ]


@pytest.mark.parametrize("shape,widths,extras", [
    ((5,), [(2, 3)], True),
    ((3, 4), [0, 1, [(0, 4), (2, 1)]], True),
    ((2, 1, 3), [[(1, 0), (2, 3), (0, 2)]], False),
])
def test_pad_modes_float32_under_jit(shape, widths, extras):
  check_jit_batch(_pad_cases(len(shape), widths, extras), [distinct_data(shape)])


_PAD_DTYPES = [np.int32, np.uint8, np.int8, np.bool_, np.complex64, BF16, np.float16]
# The modes that compute (the others only move elements, whatever their dtype).
_DTYPE_MODES = [("constant", {"constant_values": ((-1, 2.5), (300, 1))}),
                ("reflect", {"reflect_type": "odd"}), ("linear_ramp", {"end_values": (9, -3)}),
                ("maximum", {}), ("mean", {}), ("median", {})]


def test_pad_modes_dtypes_under_jit():
  cases = []
  for i, dt in enumerate(_PAD_DTYPES):
    for mode, kw in _DTYPE_MODES:
      if np.dtype(dt) == np.bool_ and mode == "reflect":
        mode, kw = "edge", {}   # an odd reflection of booleans is an error (test_pad_errors)
      if np.dtype(dt).kind == "c" and mode == "median":
        mode, kw = "wrap", {}   # a complex median is an error (test_pad_errors)
      cases.append((f"{np.dtype(dt).name} {mode} {kw}",
                    lambda lib, *xs, i=i, mode=mode, kw=kw: lib.pad(xs[i], (2, 3), mode, **kw)))
  check_jit_batch(cases, [distinct_data((3, 4), dt) for dt in _PAD_DTYPES])


def test_pad_eager_and_edge_cases():
  x = distinct_data((3, 4))
  check_cases([
      ("default mode", lambda lib, x: lib.pad(x, 2), (x,)),
      ("np int width", lambda lib, x: lib.pad(x, np.int8(1)), (x,)),
      ("array width", lambda lib, x: lib.pad(x, lib.array([[1, 2], [0, 3]])), (x,)),
      ("width as np array", lambda lib, x: lib.pad(x, np.array([1, 2])), (x,)),
      ("python float scalar", lambda lib: lib.pad(3.0, 2), ()),
      ("0-d array", lambda lib, x: lib.pad(x, 2, "reflect"), (np.float32(2.5),)),
      ("0-d int", lambda lib: lib.pad(lib.asarray(4, lib.int32), 3, "edge"), ()),
      ("weak array", lambda lib: lib.pad(lib.full(3, 2.0), 1, constant_values=7), ()),
      ("weak array edge", lambda lib: lib.pad(lib.full(3, 2), (1, 2), "edge"), ()),
      ("weak reflect odd", lambda lib: lib.pad(lib.full(2, 2.0), 3, "reflect",
                                               reflect_type="odd"), ()),
      ("uint8 negative constant", lambda lib, x: lib.pad(x, 1, constant_values=-1),
       (distinct_data((2, 2), np.uint8),)),
      ("float constant into int", lambda lib, x: lib.pad(x, 1, constant_values=2.7),
       (distinct_data((2, 2), np.int32),)),
      ("empty constant", lambda lib, x: lib.pad(x, 1), (np.zeros((0, 2), np.float32),)),
      ("empty mode empty", lambda lib, x: lib.pad(x, 1, "empty"), (np.zeros((0, 2), np.int32),)),
      ("empty axis unpadded edge", lambda lib, x: lib.pad(x, ((0, 0), (1, 1)), "edge"),
       (np.zeros((0, 2), np.float32),)),
      ("empty axis mean", lambda lib, x: lib.pad(x, 1, "mean"), (np.zeros((0, 2), np.float32),)),
      ("size-1 reflect", lambda lib, x: lib.pad(x, 3, "reflect"), (np.ones(1, np.float32),)),
      ("size-1 reflect odd", lambda lib, x: lib.pad(x, 3, "reflect", reflect_type="odd"),
       (np.ones(1, np.float32),)),
      ("nan median", lambda lib, x: lib.pad(x, 1, "median"),
       (np.array([1, np.nan, 3], np.float32),)),
      ("int median rounds half to even", lambda lib, x: lib.pad(x, 1, "median"),
       (np.array([[1, 2], [3, 6]], np.int32),)),
      ("int mean rounds", lambda lib, x: lib.pad(x, 1, "mean"),
       (np.array([1, 2, 2, 2], np.int32),)),
  ])


def _custom_pad(row, width, axis, kwargs):
  before, after = width
  row = row.at[:before].set(kwargs.get("lo", -1) * (axis + 1))
  return row.at[row.shape[0] - after:].set(kwargs.get("hi", 1))


def test_pad_callable_mode():
  x = distinct_data((3, 4))
  check_cases([
      ("custom", lambda lib, x: lib.pad(x, (1, 2), _custom_pad), (x,)),
      ("custom kwargs", lambda lib, x: lib.pad(x, [(2, 0), (1, 3)], _custom_pad, lo=5, hi=-6),
       (x,)),
      ("custom 3d", lambda lib, x: lib.pad(x, 1, _custom_pad), (distinct_data((2, 3, 2), np.int32),)),
      ("dtype change", lambda lib, x: lib.pad(x, 2, lambda r, w, a, k: r.astype(lib.int32)),
       (x,)),
      ("0-d", lambda lib: lib.pad(lib.float32(3.0), 2, lambda r, w, a, k: r), ()),
  ])
  f = lambda lib: lambda x: lib.pad(x, 2, _custom_pad, lo=3)  # noqa: E731
  assert_same(arrax.jit(f(anp))(anp.asarray(x)), jax.jit(f(jnp))(jnp.asarray(x)))


def test_pad_errors():
  x = distinct_data((2, 3), np.int32)
  check_cases([
      ("list array", lambda lib: lib.pad([1, 2], 1), ()),
      ("bool width", lambda lib, x: lib.pad(x, True), (x,)),
      ("float width", lambda lib, x: lib.pad(x, 1.0), (x,)),
      ("ragged width", lambda lib, x: lib.pad(x, [[1, 2], [1]]), (x,)),
      ("width of wrong shape", lambda lib, x: lib.pad(x, [1, 2, 3]), (x,)),
      ("width of rank 3", lambda lib, x: lib.pad(x, [[[1]]]), (x,)),
      ("negative width", lambda lib, x: lib.pad(x, ((0, 1), (-1, 2))), (x,)),
      ("unknown mode", lambda lib, x: lib.pad(x, 1, "foo"), (x,)),
      ("non-string mode", lambda lib, x: lib.pad(x, 1, 3), (x,)),
      ("kwarg for other mode", lambda lib, x: lib.pad(x, 1, "edge", constant_values=3), (x,)),
      ("unknown kwarg", lambda lib, x: lib.pad(x, 1, foo=3), (x,)),
      ("constant_values of size 3", lambda lib, x: lib.pad(x, 1, constant_values=[1, 2, 3]),
       (x,)),
      ("constant_values (3, 2)", lambda lib, x: lib.pad(x, 1, constant_values=[[1, 2]] * 3),
       (x,)),
      ("constant_values rank 3", lambda lib, x: lib.pad(x, 1, constant_values=np.ones((1, 1, 1))),
       (x,)),
      ("constant_values overflow", lambda lib, x: lib.pad(x, 1, constant_values=2**40), (x,)),
      ("stat_length 0", lambda lib, x: lib.pad(x, 1, "mean", stat_length=0), (x,)),
      ("stat_length float", lambda lib, x: lib.pad(x, 1, "mean", stat_length=1.5), (x,)),
      ("stat_length list (unhashable)", lambda lib, x: lib.pad(x, 1, "maximum",
                                                               stat_length=[1, 2]), (x,)),
      ("end_values list (unhashable)", lambda lib, x: lib.pad(x, 1, "linear_ramp",
                                                              end_values=[1, 2]), (x,)),
      ("end_values of wrong shape", lambda lib, x: lib.pad(x, 1, "linear_ramp",
                                                           end_values=(1, 2, 3)), (x,)),
      ("complex median", lambda lib, x: lib.pad(x, 1, "median"),
       (distinct_data((2, 2), np.complex64),)),
      ("bool odd reflection", lambda lib, x: lib.pad(x, 1, "reflect", reflect_type="odd"),
       (distinct_data((3,), np.bool_),)),
      ("empty axis edge", lambda lib, x: lib.pad(x, 1, "edge"), (np.zeros((0, 2)),)),
      ("empty axis wrap", lambda lib, x: lib.pad(x, 1, "wrap"), (np.zeros((0, 2)),)),
      ("empty axis reflect", lambda lib, x: lib.pad(x, 1, "reflect"), (np.zeros((0, 2)),)),
      ("empty axis symmetric", lambda lib, x: lib.pad(x, 1, "symmetric"), (np.zeros((0, 2)),)),
      ("empty axis maximum", lambda lib, x: lib.pad(x, 1, "maximum"), (np.zeros((0, 2)),)),
      ("empty axis median", lambda lib, x: lib.pad(x, 1, "median"), (np.zeros((0, 2)),)),
      ("empty axis linear_ramp", lambda lib, x: lib.pad(x, 1, "linear_ramp"),
       (np.zeros((0, 2)),)),
  ])
  # A reflect_type other than 'even'/'odd' fails an assertion in JAX; arrax says what is wrong.
  with pytest.raises(ValueError, match="reflect_type"):
    anp.pad(anp.ones(3), 1, "reflect", reflect_type="foo")


def test_pad_traced_width_is_an_error():
  for lib, api in ((anp, arrax), (jnp, jax)):
    with pytest.raises(api.errors.ConcretizationTypeError):
      api.jit(lambda x, p: lib.pad(x, p))(lib.ones(3), 1)


def test_pad_traced_constant_values():
  f = lambda lib: lambda x, c: lib.pad(x, ((1, 2), (0, 1)), constant_values=c)  # noqa: E731
  x, c = distinct_data((2, 3)), np.array([[1.5, -2], [3, 4]], np.float32)
  assert_same(arrax.jit(f(anp))(anp.asarray(x), anp.asarray(c)),
                   jax.jit(f(jnp))(jnp.asarray(x), jnp.asarray(c)))
  assert_same(arrax.jit(f(anp))(anp.asarray(x), 7),
                   jax.jit(f(jnp))(jnp.asarray(x), 7))


_GRAD_MODES = [("constant", {"constant_values": 2.0}), ("edge", {}), ("wrap", {}),
               ("reflect", {}), ("symmetric", {"reflect_type": "odd"}),
               ("reflect", {"reflect_type": "odd"}), ("linear_ramp", {"end_values": 1.5}),
               ("maximum", {}), ("minimum", {"stat_length": 2}), ("mean", {}),
               ("median", {"stat_length": 3}), ("empty", {})]


def test_pad_grad():
  w = distinct_data((9, 10)) + 0.5

  def case(mode, kw):
    def f(lib, x):
      api = arrax if lib is anp else jax
      return api.grad(lambda x: lib.sum(lib.pad(x, ((2, 4), (3, 3)), mode, **kw)
                                        * lib.asarray(w)))(x)
    return (f"{mode} {kw}", f)
  check_jit_batch([case(m, kw) for m, kw in _GRAD_MODES], [distinct_data((3, 4))])


def test_pad_check_grads():
  x = anp.asarray(distinct_data((3, 4)))
  # One jitted function through several modes, so the finite differences need one compile.
  f = arrax.jit(lambda x: (anp.pad(x, 2, "reflect", reflect_type="odd") ** 2).sum()
                + (anp.pad(x, (1, 3), "linear_ramp", end_values=1.0) ** 2).sum()
                + (anp.pad(x, 2, "symmetric") * anp.pad(x, 2, "wrap")).sum()
                + anp.pad(x, 3, "mean", stat_length=2).sum()
                + (anp.pad(x, 1, constant_values=2.0) ** 3).sum())
  check_grads(f, (x,), order=1, modes=("fwd", "rev"), eps=1e-2)


def test_pad_grad_of_constant_values():
  # (JAX cannot transpose pad in the padding value alone, so x is differentiated too.)
  f = lambda lib, api: api.grad(  # noqa: E731
      lambda x, c: lib.sum(lib.pad(x, (1, 2), constant_values=c) ** 2), (0, 1))
  x = distinct_data((2, 3))
  for c in (3.0, np.array([1.0, -2.0], np.float32)):
    assert_same(f(anp, arrax)(anp.asarray(x), anp.asarray(c)),
                     f(jnp, jax)(jnp.asarray(x), jnp.asarray(c)))


def test_pad_vmap():
  xs = distinct_data((3, 4, 5))

  def case(mode, kw, in_axes):
    def f(lib, x):
      api = arrax if lib is anp else jax
      return api.vmap(lambda r: lib.pad(r, (2, 3), mode, **kw), in_axes)(x)
    return (f"{mode} {kw} in_axes={in_axes}", f)
  cases = [case(m, kw, 0) for m, kw in _GRAD_MODES] + [case("reflect", {}, 1),
                                                        case("median", {}, 2),
                                                        case("constant", {}, -1)]
  check_jit_batch(cases, [xs])


def test_pad_vmap_over_constant_values():
  f = lambda lib, api: api.vmap(  # noqa: E731
      lambda x, c: lib.pad(x, (1, 2), constant_values=c), in_axes=(None, 0))
  x, c = distinct_data((2, 3)), np.array([1.5, -2.0, 7.0], np.float32)
  assert_same(f(anp, arrax)(anp.asarray(x), anp.asarray(c)),
                   f(jnp, jax)(jnp.asarray(x), jnp.asarray(c)))


def test_pad_callable_mode_under_vmap_and_grad():
  g = lambda lib, api: api.vmap(api.grad(  # noqa: E731
      lambda x: lib.sum(lib.pad(x, (1, 2), _custom_pad, lo=2.0) ** 2)))
  xs = distinct_data((3, 4))
  assert_same(g(anp, arrax)(anp.asarray(xs)), g(jnp, jax)(jnp.asarray(xs)))


# ---- take_along_axis ----------------------------------------------------------------------------
def _take_cases():
  """(label, f(lib, a2, a3, a1)) over a (3, 4), a (2, 3, 4) and a (5,) array."""
  cases = []

  def add(label, which, idx, **kw):
    def f(lib, *arrays):
      return lib.take_along_axis(arrays[which], lib.asarray(idx), **kw)
    cases.append((f"{label} {kw}", f))

  oob2 = np.array([[0, 7], [3, -5], [-1, 4]])
  for kw in ({}, {"mode": "fill"}, {"mode": "clip"}, {"mode": "fill", "fill_value": -3},
             {"mode": "one_hot"}, {"wrap_negative_indices": False},
             {"mode": "clip", "wrap_negative_indices": False}):
    add("2d out of bounds", 0, oob2, axis=1, **kw)
  for kw in ({"mode": "promise_in_bounds"}, {"mode": "promise_in_bounds",
                                             "wrap_negative_indices": True}):
    add("2d in bounds", 0, np.array([[0, 3], [3, -1], [-4, 2]]), axis=-1, **kw)
  add("argsort-like axis 0", 0, np.array([[2, 0, 1, 1], [0, 1, 2, 0]]), axis=0)
  add("axis -2", 0, np.array([[2, 0, -1, 1]]), axis=-2)
  add("broadcast index axis", 0, np.array([[0, 1]]), axis=1)
  add("broadcast arr axis", 0, np.array([[0], [1], [2]]), axis=1)
  add("axis None", 0, np.array([0, 11, -1, 12, -13]), axis=None)
  add("axis None clip", 0, np.array([0, 11, -1, 12, -13]), axis=None, mode="clip")
  add("1d", 2, np.array([4, -5, 2, 2, 9, 0]), axis=0)
  add("1d one_hot", 2, np.array([4, -5, 2, 9]), axis=0, mode="one_hot")
  add("empty index", 0, np.zeros((3, 0), np.int32), axis=1)
  add("3d axis 1", 1, np.array([[[0, 1, 2, -1]], [[2, 2, 0, 5]]]), axis=1)
  add("3d axis 2 mixed broadcast", 1, np.array([[[1, 3]], [[0, -2]]]), axis=2)
  add("3d axis 0", 1, np.array([[[1, 0, 1, 0], [0, 1, -1, 2], [1, 1, 0, 0]]]), axis=0)
  add("3d one_hot", 1, np.array([[[1, 3]], [[0, -2]]]), axis=2, mode="one_hot")
  for dt in (np.int8, np.uint8, np.int16, np.uint32, np.int64):
    add(f"index dtype {np.dtype(dt).name}", 0, np.array([[0, 1], [3, 2], [1, 0]], dt), axis=1)
  add("uint8 out of bounds", 0, np.array([[0, 255]], np.uint8), axis=1)
  add("int8 negative", 0, np.array([[0, -1]], np.int8), axis=1)
  return cases


def test_take_along_axis_under_jit():
  check_jit_batch(_take_cases(), [distinct_data((3, 4)), distinct_data((2, 3, 4)), distinct_data((5,))])


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, np.complex64, BF16,
                                   np.float16])
def test_take_along_axis_dtypes(dtype):
  x = distinct_data((3, 4), dtype)
  idx = np.array([[0, 7], [3, -5], [-1, 2]], np.int32)
  check_cases([(f"mode {m}", lambda lib, x, i, m=m: lib.take_along_axis(x, i, axis=1, mode=m),
            (x, idx)) for m in (None, "clip")] +
          [("fill_value", lambda lib, x, i: lib.take_along_axis(x, i, 1, "fill", 1), (x, idx))])


def test_take_along_axis_eager_and_errors():
  a, i = distinct_data((3, 4)), np.array([[0], [3], [-1]])
  check_cases([
      ("eager", lambda lib, a, i: lib.take_along_axis(a, i, axis=1), (a, i)),
      ("default axis", lambda lib, a, i: lib.take_along_axis(a, i), (a, i)),
      ("empty axis", lambda lib, a: lib.take_along_axis(a, lib.array([[0, 1]]), axis=1),
       (np.zeros((3, 0), np.float32),)),
      ("weak arr", lambda lib: lib.take_along_axis(lib.full(3, 2.0), lib.array([2, 0]), 0), ()),
      ("float indices", lambda lib, a: lib.take_along_axis(a, lib.array([[0.]]), axis=1), (a,)),
      ("axis None 2d indices", lambda lib, a, i: lib.take_along_axis(a, i, axis=None), (a, i)),
      ("0-d with axis None", lambda lib: lib.take_along_axis(3.0, lib.array(0), axis=None), ()),
      ("rank mismatch", lambda lib, a: lib.take_along_axis(a, lib.array([0]), axis=1), (a,)),
      ("shape mismatch", lambda lib, a: lib.take_along_axis(a, lib.array([[0], [1]]), axis=1),
       (a,)),
      ("axis out of range", lambda lib, a, i: lib.take_along_axis(a, i, axis=2), (a, i)),
      ("unknown mode", lambda lib, a, i: lib.take_along_axis(a, i, axis=1, mode="foo"), (a, i)),
      ("list arr", lambda lib: lib.take_along_axis([1, 2], lib.array([0]), axis=0), ()),
  ])


def test_take_along_axis_grad():
  a = distinct_data((3, 4))
  idx = np.array([[0, 7, 1], [3, -5, 3], [-1, 2, 2]])

  def case(mode):
    def f(lib, a):
      api = arrax if lib is anp else jax
      return api.grad(lambda a: lib.sum(lib.take_along_axis(a, lib.asarray(idx), 1, mode) ** 2
                                        * lib.arange(9.).reshape(3, 3)))(a)
    return (f"mode {mode}", f)
  check_jit_batch([case(m) for m in ("clip", "one_hot", "promise_in_bounds")], [a])
  # 'fill' reads NaN out of bounds; with in-bounds indices its gradient is defined.
  f = lambda lib, api: api.grad(  # noqa: E731
      lambda a: lib.sum(lib.take_along_axis(a, lib.asarray(idx % 4), axis=1, mode="fill")))
  assert_same(f(anp, arrax)(anp.asarray(a)), f(jnp, jax)(jnp.asarray(a)))
  check_grads(arrax.jit(lambda a: anp.take_along_axis(a, anp.asarray(idx % 4), axis=1) ** 2),
              (anp.asarray(a),), order=2, modes=("fwd", "rev"), eps=1e-2)


def test_take_along_axis_vmap():
  a, idx = distinct_data((2, 3, 4)), np.array([[[0, 5, -1]], [[3, 2, 1]]])

  def case(label, in_axes, mode=None):
    def f(lib, a, i):
      api = arrax if lib is anp else jax
      return api.vmap(lambda a, i: lib.take_along_axis(a, i, axis=-1, mode=mode), in_axes)(a, i)
    return (label, f)
  cases = [case("both", 0), case("both clip", 0, "clip"), case("one_hot", 0, "one_hot"),
           case("arr only", (0, None)), case("indices only", (None, 0)),
           case("arr axis 1", (1, None))]
  arrays = [a, idx]
  # The index array used when only the array (or only the indices) is mapped.
  check_jit_batch(cases[:3], arrays)
  check_jit_batch(cases[3:4], [a, idx[0]])
  check_jit_batch(cases[4:5], [a[0], idx])
  check_jit_batch(cases[5:], [np.swapaxes(a, 0, 1), idx[0]])


# ---- put_along_axis -----------------------------------------------------------------------------
def test_put_along_axis_under_jit():
  def case(label, idx, values, **kw):
    def f(lib, a, a3):
      arr = a3 if np.ndim(idx) == 3 else a
      return lib.put_along_axis(arr, lib.asarray(idx), lib.asarray(values), inplace=False, **kw)
    return (f"{label} {kw}", f)
  cases = [
      case("basic", np.array([[0], [3], [-1]]), 99.0, axis=1),
      case("repeated", np.array([[0, 0], [1, 1], [2, 2]]), np.array([[1., 2.]] * 3), axis=1),
      case("broadcast index", np.array([[0, 2]]), np.array([[5., 6.]]), axis=1),
      case("axis 0", np.array([[2, 0, 1, -1]]), np.array([[1., 2., 3., 4.]]), axis=0),
      case("axis None", np.array([0, 11, -1]), np.array([5., 6., 7.]), axis=None),
      case("out of bounds dropped", np.array([[0, 9], [4, -5], [1, 1]]), 7.0, axis=1),
      case("out of bounds clipped", np.array([[0, 9], [4, -5], [1, 1]]), 7.0, axis=1,
           mode="clip"),
      case("3d", np.array([[[0, 3]], [[1, -1]]]), np.array([[[8., 9.]], [[-8., -9.]]]), axis=2),
      case("int values into float", np.array([[1], [2], [0]]), 3, axis=-1),
  ]
  check_jit_batch(cases, [distinct_data((3, 4)), distinct_data((2, 3, 4))])


def test_put_along_axis_eager_and_errors():
  a, i = distinct_data((3, 4)), np.array([[0], [3], [-1]])
  x = distinct_data((3, 4), np.int32)
  check_cases([
      ("eager", lambda lib, a, i: lib.put_along_axis(a, i, 1.5, 1, inplace=False), (a, i)),
      ("float into int", lambda lib, x, i: lib.put_along_axis(x, i, 2.7, 1, inplace=False),
       (x, i)),
      ("bool", lambda lib, x, i: lib.put_along_axis(x > 0, i, False, 1, inplace=False), (x, i)),
      ("inplace", lambda lib, a, i: lib.put_along_axis(a, i, 1.0, 1), (a, i)),
      ("rank mismatch", lambda lib, a: lib.put_along_axis(a, lib.array([0, 2]), 1., 1,
                                                         inplace=False), (a,)),
      ("values too big", lambda lib, a: lib.put_along_axis(
          a, lib.array([[0, 2]]), lib.array([5., 6., 7.]), 1, inplace=False), (a,)),
      ("float indices", lambda lib, a: lib.put_along_axis(a, lib.array([[0.]]), 1., 1,
                                                         inplace=False), (a,)),
      ("list arr", lambda lib: lib.put_along_axis([1., 2.], lib.array([0]), 1., 0,
                                                  inplace=False), ()),
  ])


def test_put_along_axis_grad_and_vmap():
  a, v = distinct_data((3, 4)), distinct_data((3, 2)) + 0.25
  idx = np.array([[0, 2], [3, 1], [1, -4]])

  def grads(lib, a, v):
    api = arrax if lib is anp else jax
    f = lambda a, v: lib.sum(  # noqa: E731
        lib.put_along_axis(a, lib.asarray(idx), v, axis=1, inplace=False) ** 2)
    return api.grad(f, (0, 1))(a, v)

  def mapped(lib, a, v):
    api = arrax if lib is anp else jax
    return api.vmap(lambda r, i, w: lib.put_along_axis(r, i, w, axis=0, inplace=False))(
        a, lib.asarray(idx), v)
  check_jit_batch([("grad", grads), ("vmap", mapped)], [a, v])
  check_grads(arrax.jit(lambda a, v: anp.put_along_axis(a, anp.asarray(idx), v, axis=1,
                                                        inplace=False) ** 2),
              (anp.asarray(a), anp.asarray(v)), order=1, modes=("fwd", "rev"), eps=1e-2)


# ---- lax.bitcast_convert_type shape and dtype errors ---------------------------------------
def _lax(lib):
  return alax if lib is anp else jlax


@pytest.mark.parametrize("shape,src,dst", [
    ((3,), np.float32, np.int8), ((3,), np.int8, np.float32), ((4,), np.int8, np.float32),
    ((), np.int8, np.float32), ((), np.float32, np.int16), ((2, 2), np.int16, np.float32),
    ((2, 3), np.int16, np.float32), ((2, 4), np.uint8, np.int32), ((5, 2), np.float16, np.int8),
    ((2,), np.bool_, np.int8), ((2,), np.int8, np.bool_), ((2,), np.complex64, np.float32),
    ((2,), np.float32, np.complex64), ((3,), np.bool_, np.complex64),
    ((2,), np.uint32, np.float32), ((2, 2), BF16, np.int8), ((0, 4), np.int8, np.float32),
    ((2,), np.bool_, np.bool_), ((2,), np.complex64, np.complex64),
])
def test_bitcast_convert_type_shapes(shape, src, dst):
  x = distinct_data(shape, src) if np.prod(shape) else np.zeros(shape, src)
  f = lambda lib: lambda x: _lax(lib).bitcast_convert_type(x, dst)  # noqa: E731
  # Eagerly, under jit (the errors come from the abstract evaluation) and under vmap.
  check(f(anp), f(jnp), x)
  check(arrax.jit(f(anp)), jax.jit(f(jnp)), x)
  check(arrax.vmap(f(anp)), jax.vmap(f(jnp)), np.stack([x, x]))


def test_bitcast_error_messages():
  with pytest.raises(ValueError, match=r"from int8 of size 8 bits to float32 of size 32"):
    alax.bitcast_convert_type(anp.ones(3, anp.int8), anp.float32)
  with pytest.raises(TypeError, match="does not support bool or complex"):
    alax.bitcast_convert_type(anp.ones(2, anp.bool_), anp.int8)


# ---- Python ints that do (not) fit the requested dtype ------------------------------------------
_INT_CASES = [
    ("uint32 max", lambda lib: lib.asarray(2**32 - 1, lib.uint32)),
    ("uint32 max by name", lambda lib: lib.asarray(2**32 - 1, "uint32")),
    ("uint32 2**32", lambda lib: lib.asarray(2**32, lib.uint32)),
    ("uint8 -1", lambda lib: lib.array(-1, lib.uint8)),
    ("uint8 256", lambda lib: lib.array(256, lib.uint8)),
    ("uint8 255", lambda lib: lib.array(255, lib.uint8)),
    ("int32 2**31", lambda lib: lib.array(2**31, lib.int32)),
    ("int32 max", lambda lib: lib.array(2**31 - 1, lib.int32)),
    ("int32 min", lambda lib: lib.array(-2**31, lib.int32)),
    ("int8 -129", lambda lib: lib.array(-129, lib.int8)),
    ("uint16 70000", lambda lib: lib.array(70000, lib.uint16)),
    ("int16 2**31-1", lambda lib: lib.array(2**31 - 1, lib.int16)),
    ("int64 2**40 (no x64)", lambda lib: lib.array(2**40, lib.int64)),
    ("int64 2**63", lambda lib: lib.array(2**63, lib.int64)),
    ("uint64 2**63", lambda lib: lib.array(2**63, lib.uint64)),
    ("uint32 2**31", lambda lib: lib.array(2**31, lib.uint32)),
    ("default int 2**40", lambda lib: lib.array(2**40)),
    ("default int -2**31-1", lambda lib: lib.asarray(-2**31 - 1)),
    ("default int 2**100", lambda lib: lib.asarray(2**100)),
    ("float32 2**100", lambda lib: lib.array(2**100, lib.float32)),
    ("float16 2**40", lambda lib: lib.array(2**40, lib.float16)),
    ("bfloat16 2**40", lambda lib: lib.array(2**40, lib.bfloat16)),
    ("complex64 2**40", lambda lib: lib.array(2**40, lib.complex64)),
    ("bool 2**40", lambda lib: lib.array(2**40, lib.bool_)),
    ("bool -1", lambda lib: lib.array(-1, lib.bool_)),
    ("float 300. as uint8", lambda lib: lib.array(300.0, lib.uint8)),
    ("float -3.7 as uint8", lambda lib: lib.array(-3.7, lib.uint8)),
    ("float 3.7 as uint8", lambda lib: lib.array(3.7, lib.uint8)),
    ("float 1e10 as int32", lambda lib: lib.asarray(1e10, lib.int32)),
    ("nan as int32", lambda lib: lib.asarray(float("nan"), lib.int32)),
    ("inf as int32", lambda lib: lib.asarray(float("inf"), lib.int32)),
    ("complex as float32", lambda lib: lib.array(1 + 2j, lib.float32)),
    ("True as int8", lambda lib: lib.asarray(True, lib.int8)),
    ("list out of range", lambda lib: lib.array([1, 300], lib.uint8)),
    ("list in range uint32", lambda lib: lib.array([1, 2**32 - 1], lib.uint32)),
    ("nested tuple uint32", lambda lib: lib.array(((2**32 - 1,),), "uint32")),
    ("ndmin", lambda lib: lib.array(2**32 - 1, "uint32", ndmin=2)),
    ("full wraps", lambda lib: lib.full((2,), 2**40, lib.int32)),
    ("full wraps default dtype", lambda lib: lib.full((2,), 2**40)),
    ("full 2**63 wraps", lambda lib: lib.full((2,), 2**63, lib.int32)),
    ("full 2**64", lambda lib: lib.full((2,), 2**64, lib.int32)),
    ("full uint32 max", lambda lib: lib.full((2,), 2**32 - 1, lib.uint32)),
    ("full -1 as uint32", lambda lib: lib.full((2,), -1, lib.uint32)),
    ("full_like wraps", lambda lib: lib.full_like(lib.ones(2, lib.int32), 2**40)),
    ("full_like uint8", lambda lib: lib.full_like(lib.ones(2, lib.uint8), 300)),
    ("weak op in range", lambda lib: lib.ones(2, lib.uint8) + 300),
    ("weak op negative into uint8", lambda lib: lib.ones(2, lib.uint8) + (-1)),
    ("weak op overflow", lambda lib: lib.ones(2, lib.int32) + 2**40),
    ("weak op 2**31", lambda lib: lib.ones(2, lib.int32) * 2**31),
    ("weak op 2**63", lambda lib: lib.ones(2, lib.int32) - 2**63),
    ("weak op into float", lambda lib: lib.ones(2, lib.float32) + 2**31),
]


@pytest.mark.parametrize("label,f", _INT_CASES, ids=[c[0] for c in _INT_CASES])
def test_python_int_range(label, f):
  check(lambda: f(anp), lambda: f(jnp))


@pytest.mark.parametrize("label,f", [c for c in _INT_CASES if "weak op" not in c[0]],
                         ids=[c[0] for c in _INT_CASES if "weak op" not in c[0]])
def test_python_int_range_under_jit(label, f):
  check(lambda: arrax.jit(lambda: f(anp))(), lambda: jax.jit(lambda: f(jnp))())


def test_python_int_overflow_messages():
  # jnp.array's own checks (the op-level message is the jit argument check's, see the report).
  for f in (lambda lib: lib.array(-1, lib.uint8), lambda lib: lib.asarray(2**32, lib.uint32),
            lambda lib: lib.array(2**31, lib.int32), lambda lib: lib.array(2**40),
            lambda lib: lib.array(2**63, lib.int64)):
    with pytest.raises(OverflowError) as jax_err:
      f(jnp)
    with pytest.raises(OverflowError) as arrax_err:
      f(anp)
    assert str(arrax_err.value) == str(jax_err.value)


# ---- lax.expand_dims ---------------------------------------------------------------------------
_EXPAND_DIMS = [(0,), (1,), (2,), (-1,), (-3,), (0, 2), (-1, -2), (0, -1), (1, 3), (0, 1, 2, 3),
                (), (3,), (-4,), (0, 0), (0, -4), (4,), (5, 0)]


def test_lax_expand_dims():
  x = distinct_data((2, 3))
  check_cases([(f"dims {d}", lambda lib, x, d=d: _lax(lib).expand_dims(x, d), (x,))
           for d in _EXPAND_DIMS] +
          [("scalar", lambda lib: _lax(lib).expand_dims(2.0, (0, -1)), ()),
           ("list dims", lambda lib, x: _lax(lib).expand_dims(x, [0, -1]), (x,)),
           ("int8", lambda lib, x: _lax(lib).expand_dims(x, (1,)), (distinct_data((4,), np.int8),))])


def test_lax_expand_dims_jit_vmap_grad():
  x = distinct_data((2, 3))

  def case(d):
    def f(lib, x):
      api = arrax if lib is anp else jax
      lx = _lax(lib)
      return (lx.expand_dims(x, d), api.vmap(lambda r: lx.expand_dims(r, d))(x),
              api.grad(lambda x: lib.sum(lx.expand_dims(x, d) * 2.0))(x))
    return (f"dims {d}", f)
  check_jit_batch([case(d) for d in [(0,), (-1,), (0, 2), (-1, -2), (1,)]], [x])


# ---- with jax_enable_x64 ------------------------------------------------------------------------
def test_x64(x64):
  a = distinct_data((3, 4), np.float64)
  i64 = np.array([[0, -1], [5, 2], [3, -4]], np.int64)
  check_cases([
      ("take int64 indices", lambda lib, a, i: lib.take_along_axis(a, i, axis=1), (a, i64)),
      ("take clip", lambda lib, a, i: lib.take_along_axis(a, i, 1, "clip"), (a, i64)),
      ("put", lambda lib, a, i: lib.put_along_axis(a, i, -1.0, 1, inplace=False), (a, i64)),
      ("pad ramp", lambda lib, a: lib.pad(a, 2, "linear_ramp", end_values=(1, -1)), (a,)),
      ("pad int64 mean", lambda lib, a: lib.pad(a, 2, "mean"), (distinct_data((3,), np.int64),)),
      ("int64 2**40", lambda lib: lib.array(2**40, lib.int64), ()),
      ("default int 2**40", lambda lib: lib.array(2**40), ()),
      ("int64 2**63", lambda lib: lib.array(2**63, lib.int64), ()),
      ("uint64 2**63", lambda lib: lib.array(2**63, lib.uint64), ()),
      ("full int32 wraps", lambda lib: lib.full(2, 2**40, lib.int32), ()),
  ])
