"""jnp.tile, repeat, roll, rollaxis, rot90, append, insert, delete, resize, array_split, hsplit,
vsplit, dsplit, column_stack, dstack, block, atleast_3d, unstack, trim_zeros, copy,
fromfunction, apply_along_axis and apply_over_axes (arrax/_src/numpy/assembly.py), and the
Array methods copy and repeat, differentially against JAX 0.10.2: values, dtypes, shapes, weak
types and exception classes, eagerly and under jit, grad and vmap, plus jaxpr texts.

To keep compile counts low, cases under jit are batched: one jitted function per library
returns the results of every case of a batch.
"""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from oracle import (BF16, Raw, api_of, assert_tree_same, check_cases,
                    check_jit_batch, distinct_data)

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning"),
              pytest.mark.filterwarnings("ignore:Explicitly requested dtype")]

DTYPES = [np.bool_, np.int8, np.uint8, np.int32, np.float16, BF16, np.float32, np.complex64]


# ---- values over dtypes, under jit -----------------------------------------------------------
def _dtype_cases(i):
  """Cases reading array i (a (2, 3, 4) array) and i + 1 (a (5,) vector) of one dtype."""
  def c(label, f):
    return (label, lambda lib, *xs: f(lib, xs[i], xs[i + 1]))
  return [
      c("tile 2", lambda m, x, v: m.tile(v, 2)),
      c("tile more reps", lambda m, x, v: m.tile(x, (2, 1, 1, 3))),
      c("tile fewer reps", lambda m, x, v: m.tile(x, (2, 1))),
      c("tile zero", lambda m, x, v: m.tile(x, (1, 0, 2))),
      c("repeat flat", lambda m, x, v: m.repeat(x, 2)),
      c("repeat axis -1", lambda m, x, v: m.repeat(x, 3, axis=-1)),
      c("repeat counts", lambda m, x, v: m.repeat(x, np.array([2, 0, 1]), axis=1)),
      c("repeat counts np", lambda m, x, v: m.repeat(v, np.array([1, 2, 0, 3, 1]))),
      c("repeat total", lambda m, x, v: m.repeat(x, np.array([1, 2]), axis=0,
                                                 total_repeat_length=4)),
      c("repeat zero", lambda m, x, v: m.repeat(x, 0, axis=2)),
      c("roll flat", lambda m, x, v: m.roll(x, 5)),
      c("roll negative", lambda m, x, v: m.roll(x, -7, axis=-1)),
      c("roll multi", lambda m, x, v: m.roll(x, (1, -2), axis=(0, 2))),
      c("roll broadcast", lambda m, x, v: m.roll(x, 2, axis=(1, 2))),
      c("rollaxis", lambda m, x, v: m.rollaxis(x, -1, 1)),
      c("rot90", lambda m, x, v: m.rot90(x)),
      c("rot90 k=-1", lambda m, x, v: m.rot90(x, -1, axes=(2, 0))),
      c("rot90 k=2", lambda m, x, v: m.rot90(x, 2, axes=(1, 2))),
      c("append", lambda m, x, v: m.append(x, v)),
      c("append axis", lambda m, x, v: m.append(x, x[:, :1], axis=1)),
      c("insert", lambda m, x, v: m.insert(v, 2, v[0])),
      c("insert axis", lambda m, x, v: m.insert(x, np.array([0, 3, 1]), x[:, :, :1], axis=2)),
      c("delete", lambda m, x, v: m.delete(x, 1, axis=1)),
      c("delete mask", lambda m, x, v: m.delete(v, np.array([True, False, True, False, False]))),
      c("delete slice", lambda m, x, v: m.delete(x, slice(None, None, 3), axis=-1)),
      c("resize", lambda m, x, v: m.resize(v, (3, 4))),
      c("array_split", lambda m, x, v: m.array_split(x, 3, axis=2)),
      c("hsplit", lambda m, x, v: m.hsplit(x, [1, 2])),
      c("vsplit", lambda m, x, v: m.vsplit(x, 2)),
      c("dsplit", lambda m, x, v: m.dsplit(x, 2)),
      c("column_stack", lambda m, x, v: m.column_stack([v, v, x[0, 0, :1].repeat(5)])),
      c("dstack", lambda m, x, v: m.dstack([x, x])),
      c("block", lambda m, x, v: m.block([[x[0], x[1]], [x[1], x[0]]])),
      c("atleast_3d", lambda m, x, v: m.atleast_3d(v, x[0], x[0, 0, 0])),
      c("unstack", lambda m, x, v: m.unstack(x, axis=-1)),
      c("copy", lambda m, x, v: m.copy(x)),
      c("apply_along_axis", lambda m, x, v: m.apply_along_axis(lambda r: r[::-1], 1, x)),
      c("apply_over_axes", lambda m, x, v: m.apply_over_axes(m.max, x, [0, 2])),
  ]


# Every case for float32; for the other dtypes, the cases that compute (repeat's and insert's
# index arithmetic, roll's slicing, delete's masks) or convert, plus one of each movement.
_PER_DTYPE = {"tile more reps", "repeat flat", "repeat counts", "repeat total", "roll multi",
              "rot90 k=-1", "append", "insert axis", "delete mask", "resize", "array_split",
              "column_stack", "block", "atleast_3d", "unstack", "copy", "apply_over_axes"}


def test_values_over_dtypes_under_jit():
  arrays = [a for dt in DTYPES for a in (distinct_data((2, 3, 4), dt), distinct_data((5,), dt))]
  cases = []
  for k, dt in enumerate(DTYPES):
    cases += [(f"{np.dtype(dt).name} {label}", f) for label, f in _dtype_cases(2 * k)
              if dt == np.float32 or label in _PER_DTYPE]
  check_jit_batch(cases, arrays)


# ---- shapes (0-d, empty), edge cases and NaN/inf, under jit -----------------------------------
def test_shapes_and_edge_cases_under_jit():
  x = distinct_data((2, 3, 4))
  v = distinct_data((5,), np.int32)
  e = np.zeros((0, 3), np.float32)
  s = np.float32(2.5)
  n = np.array([[np.nan, -np.inf, 0.0], [-0.0, np.inf, 1.0]], np.float32)
  check_jit_batch([
      ("tile 0-d reps ()", lambda m, x, v, e, s, n: m.tile(s, ())),
      ("tile 0-d", lambda m, x, v, e, s, n: m.tile(s, (2, 1))),
      ("tile empty", lambda m, x, v, e, s, n: m.tile(e, (2, 3))),
      ("tile np reps", lambda m, x, v, e, s, n: m.tile(e, np.array([2, 1]))),
      ("repeat 0-d counts", lambda m, x, v, e, s, n: m.repeat(e, np.int32(2), axis=0)),
      ("repeat empty", lambda m, x, v, e, s, n: m.repeat(e, 2, axis=0)),
      ("repeat empty axis 1", lambda m, x, v, e, s, n: m.repeat(e, np.array([1, 2, 0]), axis=1)),
      ("repeat total long", lambda m, x, v, e, s, n: m.repeat(v, 2, total_repeat_length=13)),
      ("repeat 0-d a", lambda m, x, v, e, s, n: m.repeat(s, 3)),
      ("roll 0-d", lambda m, x, v, e, s, n: m.roll(s, 3)),
      ("roll empty", lambda m, x, v, e, s, n: m.roll(e, 2, 0)),
      ("roll empty flat", lambda m, x, v, e, s, n: m.roll(e, 2)),
      ("roll np int shift", lambda m, x, v, e, s, n: m.roll(v, np.int64(-3))),
      ("roll float shift", lambda m, x, v, e, s, n: m.roll(v, 1.7)),
      ("rollaxis start=ndim", lambda m, x, v, e, s, n: m.rollaxis(x, 0, 3)),
      ("rollaxis start<0", lambda m, x, v, e, s, n: m.rollaxis(x, 2, -2)),
      ("rot90 k=4", lambda m, x, v, e, s, n: m.rot90(x, 4)),
      ("rot90 k=3", lambda m, x, v, e, s, n: m.rot90(x, 3, (-1, 0))),
      ("rot90 empty", lambda m, x, v, e, s, n: m.rot90(e)),
      ("append empty", lambda m, x, v, e, s, n: m.append(e, e, axis=0)),
      ("insert scalar", lambda m, x, v, e, s, n: m.insert(v, 1, 5.5)),
      ("insert end", lambda m, x, v, e, s, n: m.insert(v, 5, 9)),
      ("insert negative", lambda m, x, v, e, s, n: m.insert(v, -1, np.array([7, 8]))),
      ("insert clipped", lambda m, x, v, e, s, n: m.insert(v, np.array([-9, 20]), 0)),
      ("insert slice", lambda m, x, v, e, s, n: m.insert(x, slice(0, None, 2), 9, axis=1)),
      ("insert rows", lambda m, x, v, e, s, n: m.insert(x[0, :, :2], 1, np.array([5, 6.]), axis=0)),
      ("insert empty obj", lambda m, x, v, e, s, n: m.insert(v, np.array([]), 5)),
      ("insert into empty", lambda m, x, v, e, s, n: m.insert(e, 0, 1.0, axis=0)),
      ("insert column values", lambda m, x, v, e, s, n: m.insert(
          x[0, :2, :3], np.array([1]), np.array([[5], [6]]), axis=1)),
      ("delete negative", lambda m, x, v, e, s, n: m.delete(v, -1)),
      ("delete repeated", lambda m, x, v, e, s, n: m.delete(v, np.array([0, 2, 2, -1]))),
      ("delete empty obj", lambda m, x, v, e, s, n: m.delete(v, np.array([], np.int32))),
      ("delete empty", lambda m, x, v, e, s, n: m.delete(e, 1, axis=1)),
      ("resize int", lambda m, x, v, e, s, n: m.resize(v, 7)),
      ("resize shrink", lambda m, x, v, e, s, n: m.resize(x, (2, 2))),
      ("resize empty", lambda m, x, v, e, s, n: m.resize(e, (2, 2))),
      ("resize to empty", lambda m, x, v, e, s, n: m.resize(v, (0, 2))),
      ("array_split more", lambda m, x, v, e, s, n: m.array_split(v, 7)),
      ("array_split indices", lambda m, x, v, e, s, n: m.array_split(v, [1, 1, 4])),
      ("array_split np idx", lambda m, x, v, e, s, n: m.array_split(x, np.array([2]), axis=-1)),
      ("array_split empty", lambda m, x, v, e, s, n: m.array_split(e, 2)),
      ("hsplit 1-d", lambda m, x, v, e, s, n: m.hsplit(v, 5)),
      ("vsplit 1-d", lambda m, x, v, e, s, n: m.vsplit(v, [2])),
      ("column_stack array", lambda m, x, v, e, s, n: m.column_stack(x[0])),
      ("column_stack 3-d array", lambda m, x, v, e, s, n: m.column_stack(x)),
      ("column_stack mixed", lambda m, x, v, e, s, n: m.column_stack([x[0, :, 0], x[0]])),
      ("dstack array", lambda m, x, v, e, s, n: m.dstack(x[0])),
      ("dstack dtype", lambda m, x, v, e, s, n: m.dstack([v, v], dtype=np.int8)),
      ("block mixed ranks", lambda m, x, v, e, s, n: m.block([[x[0], x[0, :, :1]],
                                                                [x[1, :1], 7]])),
      ("block 3 levels", lambda m, x, v, e, s, n: m.block([[[x[0]]], [[x[0]]]])),
      ("block ranks", lambda m, x, v, e, s, n: m.block([[x[0, 0]], [x[0, 1, :2], x[0, 2, :2]]])),
      ("atleast_3d 4-d", lambda m, x, v, e, s, n: m.atleast_3d(x[None])),
      ("unstack empty axis", lambda m, x, v, e, s, n: m.unstack(e)),
      ("unstack other axis", lambda m, x, v, e, s, n: m.unstack(e, axis=1)),
      ("copy empty", lambda m, x, v, e, s, n: m.copy(e)),
      ("apply_along_axis reduce", lambda m, x, v, e, s, n: m.apply_along_axis(m.sum, -1, x)),
      ("apply_along_axis args", lambda m, x, v, e, s, n: m.apply_along_axis(
          lambda r, c, t=0: r * c + t, 0, x, 2.0, t=1)),
      ("apply_along_axis grows", lambda m, x, v, e, s, n: m.apply_along_axis(
          lambda r: m.outer(r, r), 1, x)),
      ("apply_along_axis 1-d", lambda m, x, v, e, s, n: m.apply_along_axis(m.cumsum, 0, v)),
      ("apply_over_axes keep", lambda m, x, v, e, s, n: m.apply_over_axes(
          lambda y, ax: m.cumsum(y, ax), x, (1, -1))),
      ("apply_over_axes none", lambda m, x, v, e, s, n: m.apply_over_axes(m.sum, x, [])),
      ("nan tile", lambda m, x, v, e, s, n: m.tile(n, (2, 1))),
      ("nan repeat", lambda m, x, v, e, s, n: m.repeat(n, np.array([1, 0, 2]), axis=1)),
      ("nan roll", lambda m, x, v, e, s, n: m.roll(n, 1)),
      ("nan rot90", lambda m, x, v, e, s, n: m.rot90(n)),
      ("nan insert", lambda m, x, v, e, s, n: m.insert(n, 1, np.nan, axis=1)),
      ("nan delete", lambda m, x, v, e, s, n: m.delete(n, 0, axis=1)),
      ("nan resize", lambda m, x, v, e, s, n: m.resize(n, (4, 2))),
  ], [x, v, e, s, n])


# ---- eager: Python scalars, weak types, concrete-only arguments, methods -----------------------
def test_eager_cases():
  x = distinct_data((2, 3, 4))
  v = distinct_data((5,), np.int32)
  e = np.zeros((0, 3), np.float32)
  trimmed = np.pad(np.eye(2), ((1, 0), (0, 2)))
  check_cases([
      ("tile python scalar", lambda m: m.tile(3, 2), ()),
      ("tile weak", lambda m: m.tile(m.full((2,), 1.5), 2), ()),
      ("repeat scalar", lambda m: m.repeat(3.0, 4), ()),
      ("repeat scalar total", lambda m: m.repeat(3, 4, total_repeat_length=4), ()),
      ("repeat array counts", lambda m, a: m.repeat(a, m.array([1, 0, 2, 1, 3])), (v,)),
      ("repeat total short", lambda m, a: m.repeat(a, m.array([1, 0, 2, 1, 3]),
                                                   total_repeat_length=4), (v,)),
      ("repeat method", lambda m, a: m.asarray(a).repeat(2, axis=1), (x,)),
      ("repeat method total", lambda m, a: m.asarray(a).repeat(
          np.array([2, 1]), 0, total_repeat_length=3), (x,)),
      ("roll array shift", lambda m, a: m.roll(a, m.array([1, 2]), (0, 2)), (x,)),
      ("roll 0-d array shift", lambda m, a: m.roll(a, m.array(4)), (v,)),
      ("append scalars", lambda m: m.append(1, 2.5), ()),
      ("append lists", lambda m: m.append([1, 2], [[3]]), ()),
      ("insert 0-d", lambda m: m.insert(3.0, 0, 1.0), ()),
      ("delete unique", lambda m, a: m.delete(a, m.array([3, 0, -1]), assume_unique_indices=True),
       (v,)),
      ("delete unique axis", lambda m, a: m.delete(a, m.array([1]), axis=1,
                                                   assume_unique_indices=True), (x,)),
      ("delete 0-d", lambda m: m.delete(m.asarray(2.0), 0), ()),
      ("resize scalar", lambda m: m.resize(4, (3, 2)), ()),
      ("array_split arr idx", lambda m, a: m.array_split(a, m.array([2, 3])), (v,)),
      ("column_stack scalars", lambda m: m.column_stack([1, 2.0]), ()),
      ("dstack scalars", lambda m: m.dstack([1, 2]), ()),
      ("block scalars", lambda m: m.block([1, 2.0]), ()),
      ("block scalar", lambda m: m.block(3), ()),
      ("atleast_3d none", lambda m: m.atleast_3d(), ()),
      ("atleast_3d weak", lambda m: m.atleast_3d(2.5), ()),
      ("trim_zeros", lambda m, a: m.trim_zeros(a), (np.array([0, 0, 1, 0, 2, 0.]),)),
      ("trim_zeros f", lambda m, a: m.trim_zeros(a, "f"), (np.array([0, 0, 1, 0, 2, 0]),)),
      ("trim_zeros B", lambda m, a: m.trim_zeros(a, "B"), (np.array([0, 0, 1, 0, 2, 0]),)),
      ("trim_zeros none", lambda m, a: m.trim_zeros(a, "x"), (np.array([0, 1, 0]),)),
      ("trim_zeros all zero", lambda m, a: m.trim_zeros(a), (np.zeros(4),)),
      ("trim_zeros empty", lambda m, a: m.trim_zeros(a), (e,)),
      ("trim_zeros 0-d", lambda m: m.trim_zeros(m.asarray(0.0)), ()),
      ("trim_zeros 2-d", lambda m, a: m.trim_zeros(a), (trimmed,)),
      ("trim_zeros axis", lambda m, a: m.trim_zeros(a, "b", axis=-1), (trimmed,)),
      ("trim_zeros axes", lambda m, a: m.trim_zeros(a, axis=(0, 1)),
       (np.pad(np.eye(2, dtype=bool), 1),)),
      ("trim_zeros nan", lambda m, a: m.trim_zeros(a), (np.array([0, np.nan, 1, 0]),)),
      ("trim_zeros complex", lambda m, a: m.trim_zeros(a),
       (np.array([0, 1j, 2, 0], np.complex64),)),
      ("copy scalar", lambda m: m.copy(3), ()),
      ("copy weak", lambda m: m.copy(m.full((2,), 1.5)), ()),
      ("copy numpy", lambda m, a: m.copy(Raw(a).value), (Raw(v),)),
      ("copy method", lambda m, a: m.asarray(a).copy(), (x,)),
      ("fromfunction", lambda m: m.fromfunction(lambda i, j: i * 10 + j, (2, 3)), ()),
      ("fromfunction int", lambda m: m.fromfunction(lambda i, j: i - j, (2, 3), dtype=int), ()),
      ("fromfunction kwargs", lambda m: m.fromfunction(lambda i, c=0: i + c, (3,), c=2), ()),
      ("fromfunction int shape", lambda m: m.fromfunction(lambda i: i, 3), ()),
      ("fromfunction empty", lambda m: m.fromfunction(lambda i, j: i + j, (0, 2)), ()),
      ("fromfunction negative", lambda m: m.fromfunction(lambda i: i, (-1,)), ()),
      ("fromfunction tuple out", lambda m: m.fromfunction(lambda i: (i, 2 * i), (3,)), ()),
      ("apply_over_axes", lambda m, a: m.apply_over_axes(m.sum, a, [0, 2]), (x,)),
  ])


def test_trim_zeros_of_concrete_array_inside_jit():
  # arrax keeps arrays made inside a jit from constants concrete (JAX stages them and raises
  # ConcretizationTypeError here); their zeros are trimmed and the slice is staged.
  f = arrax.jit(lambda: anp.trim_zeros(anp.array([0, 3, 0, 4, 0])))
  assert_tree_same(f(), jnp.array([3, 0, 4]))


# ---- errors -----------------------------------------------------------------------------------
def test_errors():
  x = distinct_data((2, 3))
  v = distinct_data((3,))
  i3 = np.array([1, 2, 2], np.int32)
  check_cases([
      ("tile list", lambda m: m.tile([1, 2], 2), ()),
      ("tile float reps", lambda m, a: m.tile(a, 2.5), (v,)),
      ("tile negative reps", lambda m, a: m.tile(a, -1), (v,)),
      ("tile traced reps", lambda m, a: api_of(m).jit(lambda r: m.tile(a, r))(2), (v,)),
      ("repeat list a", lambda m: m.repeat([1, 2], 2), ()),
      ("repeat traced", lambda m, a: api_of(m).jit(lambda r: m.repeat(a, r))(2), (v,)),
      ("repeat traced counts", lambda m, a: api_of(m).jit(lambda r: m.repeat(a, r))(i3), (v,)),
      ("repeat wrong count len", lambda m, a: m.repeat(a, np.array([1, 2]), axis=1), (x,)),
      ("repeat negative", lambda m, a: m.repeat(a, -1), (v,)),
      ("repeat scalar a, counts", lambda m: m.repeat(3.0, np.array([1, 2])), ()),
      ("repeat axis out of range", lambda m, a: m.repeat(a, 2, axis=2), (x,)),
      ("repeat float count", lambda m, a: m.repeat(a, 1.5), (v,)),
      ("repeat traced axis", lambda m, a: api_of(m).jit(lambda ax: m.repeat(a, 2, ax))(0), (v,)),
      ("roll bad axis", lambda m, a: m.roll(a, 1, axis=2), (x,)),
      ("roll shift/axis mismatch", lambda m, a: m.roll(a, (1, 2, 3), axis=(0, 1)), (x,)),
      ("roll traced 2-d shift", lambda m, a: api_of(m).jit(lambda s: m.roll(a, s, axis=(0, 1)))(
          np.ones((2, 2), np.int32)), (x,)),
      ("roll list", lambda m: m.roll([1, 2], 1), ()),
      ("rollaxis bad start", lambda m, a: m.rollaxis(a, 0, 5), (x,)),
      ("rollaxis bad axis", lambda m, a: m.rollaxis(a, 4), (x,)),
      ("rollaxis traced start", lambda m, a: api_of(m).jit(
          lambda s: m.rollaxis(a, 0, s), static_argnums=())(1), (x,)),
      ("rot90 1-d", lambda m, a: m.rot90(a), (v,)),
      ("rot90 same axes", lambda m, a: m.rot90(a, axes=(0, -2)), (x,)),
      ("rot90 three axes", lambda m, a: m.rot90(a, axes=(0, 1, 2)), (x,)),
      ("rot90 bad axis", lambda m, a: m.rot90(a, axes=(0, 2)), (x,)),
      ("append shapes", lambda m, a: m.append(a, a[0], axis=0), (x,)),
      ("append 0-d axis", lambda m: m.append(1, 2, axis=0), ()),
      ("insert 2-d obj", lambda m, a: m.insert(a, np.array([[1]]), 5), (x,)),
      ("insert float obj", lambda m, a: m.insert(a, 1.5, 5), (x,)),
      ("insert float array obj", lambda m, a: m.insert(a, m.array([1.0]), 5), (x,)),
      ("insert list obj", lambda m, a: m.insert(a, [1, 2], 5), (x,)),
      ("insert list arr", lambda m: m.insert([1, 2], 1, 5), ()),
      ("insert bad values", lambda m, a: m.insert(a, 1, np.ones((2, 2)), axis=1), (x,)),
      ("insert axis", lambda m, a: m.insert(a, 1, 5, axis=2), (x,)),
      ("delete out of range", lambda m, a: m.delete(a, 5), (v,)),
      ("delete list", lambda m, a: m.delete(a, [0, 1]), (v,)),
      ("delete float obj", lambda m, a: m.delete(a, np.array([0.5])), (v,)),
      ("delete short mask", lambda m, a: m.delete(a, np.array([True])), (v,)),
      ("delete traced", lambda m, a: api_of(m).jit(lambda i: m.delete(a, i))(np.array([0])), (v,)),
      ("delete array out of range", lambda m, a: m.delete(a, np.array([5])), (v,)),
      ("delete bad axis", lambda m, a: m.delete(a, 0, axis=2), (x,)),
      ("resize negative", lambda m, a: m.resize(a, (-1, 2)), (v,)),
      ("resize list shape", lambda m, a: m.resize(a, [2, 2]), (v,)),
      ("resize list a", lambda m: m.resize([1, 2], 3), ()),
      ("array_split 0 sections", lambda m, a: m.array_split(a, 0), (v,)),
      ("array_split decreasing", lambda m, a: m.array_split(a, [2, 1]), (v,)),
      ("array_split past end", lambda m, a: m.array_split(a, [1, 5]), (v,)),
      ("array_split traced n", lambda m, a: api_of(m).jit(lambda n: m.array_split(a, n))(2), (v,)),
      ("array_split traced idx", lambda m, a: api_of(m).jit(lambda n: m.array_split(a, n))(
          np.array([1])), (v,)),
      ("array_split bad axis", lambda m, a: m.array_split(a, 2, axis=3), (x,)),
      ("array_split list", lambda m: m.array_split([1, 2], 2), ()),
      ("hsplit 0-d", lambda m: m.hsplit(m.asarray(1.0), 1), ()),
      ("hsplit unequal", lambda m, a: m.hsplit(a, 2), (x,)),
      ("vsplit unequal", lambda m, a: m.vsplit(a, 2), (v,)),
      ("dsplit 2-d", lambda m, a: m.dsplit(a, 3), (x,)),
      ("column_stack empty", lambda m: m.column_stack([]), ()),
      ("column_stack mismatch", lambda m, a: m.column_stack([a, a[:2]]), (v,)),
      ("dstack empty", lambda m: m.dstack([]), ()),
      ("dstack list", lambda m: m.dstack([[1, 2]]), ()),
      ("block tuple", lambda m, a: m.block((a, a)), (v,)),
      ("block empty", lambda m: m.block([]), ()),
      ("block depths", lambda m, a: m.block([[a], a]), (v,)),
      ("block shapes", lambda m, a: m.block([[a, a], [a]]), (x,)),
      ("unstack 0-d", lambda m: m.unstack(m.asarray(1.0)), ()),
      ("unstack bad axis", lambda m, a: m.unstack(a, axis=3), (x,)),
      ("unstack list", lambda m: m.unstack([1, 2]), ()),
      ("trim_zeros traced", lambda m, a: api_of(m).jit(m.trim_zeros)(a), (v,)),
      ("trim_zeros list", lambda m: m.trim_zeros([0, 1]), ()),
      ("trim_zeros repeated axis", lambda m, a: m.trim_zeros(a, axis=(0, 0)), (x,)),
      ("trim_zeros bad axis", lambda m, a: m.trim_zeros(a, axis=2), (x,)),
      ("copy list", lambda m: m.copy([1, 2]), ()),
      ("copy order C", lambda m, a: m.copy(a, order="C"), (v,)),
      ("copy order F", lambda m, a: m.copy(a, order="F"), (v,)),
      ("fromfunction float shape", lambda m: m.fromfunction(lambda i: i, (1.5,)), ()),
      ("fromfunction traced shape", lambda m: api_of(m).jit(
          lambda n: m.fromfunction(lambda i: i, (n,)))(3), ()),
      ("apply_along_axis bad axis", lambda m, a: m.apply_along_axis(m.sum, 3, a), (x,)),
      ("apply_along_axis list", lambda m: m.apply_along_axis(m.sum, 0, [1, 2]), ()),
      ("apply_along_axis 0-d", lambda m: m.apply_along_axis(m.sum, 0, 1.0), ()),
      ("apply_over_axes bad result", lambda m, a: m.apply_over_axes(
          lambda y, ax: y.sum(), a, [0]), (x[None],)),
      ("apply_over_axes list", lambda m: m.apply_over_axes(m.sum, [1.0, 2.0], [0]), ()),
  ])


# ---- traced arguments under jit ---------------------------------------------------------------
def test_traced_arguments_under_jit():
  x = distinct_data((2, 3, 4))
  v = distinct_data((5,), np.int32)
  counts = np.array([2, 0, 1], np.int32)
  shifts = np.array([3, -5], np.int32)
  check_jit_batch([
      ("repeat total", lambda m, a, c, s, w: m.repeat(a, c, axis=1, total_repeat_length=3)),
      ("repeat total longer", lambda m, a, c, s, w: m.repeat(a, c, axis=1,
                                                             total_repeat_length=6)),
      ("repeat total shorter", lambda m, a, c, s, w: m.repeat(a, c, axis=1,
                                                              total_repeat_length=2)),
      ("repeat scalar count", lambda m, a, c, s, w: m.repeat(w, c[0], total_repeat_length=9)),
      ("repeat total zero", lambda m, a, c, s, w: m.repeat(w, c[0], total_repeat_length=0)),
      ("roll traced", lambda m, a, c, s, w: m.roll(a, s[0], axis=-1)),
      ("roll traced pair", lambda m, a, c, s, w: m.roll(a, s, axis=(0, 2))),
      ("roll traced bcast", lambda m, a, c, s, w: m.roll(a, s[1], axis=(1, 2))),
      ("roll traced flat", lambda m, a, c, s, w: m.roll(a, s[1])),
      ("roll traced empty", lambda m, a, c, s, w: m.roll(a[:, :0], s[0], axis=1)),
      ("insert traced index", lambda m, a, c, s, w: m.insert(w, c[0], 99)),
      ("insert traced indices", lambda m, a, c, s, w: m.insert(a, c, a[:, :1], axis=1)),
      ("insert traced values", lambda m, a, c, s, w: m.insert(w, 1, c)),
      ("delete unique traced", lambda m, a, c, s, w: m.delete(
          a, c[:2], axis=2, assume_unique_indices=True)),
      ("tile", lambda m, a, c, s, w: m.tile(a, (2, 1, 1))),
      ("unstack", lambda m, a, c, s, w: m.unstack(a)),
      ("fromfunction", lambda m, a, c, s, w: m.fromfunction(lambda i, j: i * a[0, 0, 1] + j,
                                                            (3, 2))),
  ], [x, counts, shifts, v])


# ---- grad and vmap ----------------------------------------------------------------------------
_GRAD_CASES = [
    ("tile", lambda m, x: m.tile(x, (2, 1, 3))),
    ("repeat", lambda m, x: m.repeat(x, 2, axis=-1)),
    ("repeat counts", lambda m, x: m.repeat(x, np.array([3, 0, 1]), axis=1)),
    ("repeat total", lambda m, x: m.repeat(x, np.array([1, 2]), axis=0, total_repeat_length=4)),
    ("roll", lambda m, x: m.roll(x, (1, -3), axis=(0, 2))),
    ("roll flat", lambda m, x: m.roll(x, 7)),
    ("rollaxis", lambda m, x: m.rollaxis(x, 2)),
    ("rot90", lambda m, x: m.rot90(x, 3, (1, 2))),
    ("append", lambda m, x: m.append(x, 2 * x[:1], axis=0)),
    ("insert", lambda m, x: m.insert(x, np.array([1, 1]), x[:, :1] * 3, axis=1)),
    ("delete", lambda m, x: m.delete(x, np.array([0, 2]), axis=2)),
    ("resize", lambda m, x: m.resize(x, (5, 7))),
    ("array_split", lambda m, x: m.array_split(x, 3, axis=2)[0] * 2),
    ("dstack", lambda m, x: m.dstack([x, 2 * x])),
    ("column_stack", lambda m, x: m.column_stack([x[0, 0], x[1, 1]])),
    ("block", lambda m, x: m.block([[x[0], x[1] ** 2]])),
    ("atleast_3d", lambda m, x: m.atleast_3d(x[0, 0]) * 3),
    ("unstack", lambda m, x: m.unstack(x, axis=1)[2] * 5),
    ("copy", lambda m, x: m.copy(x) * x),
    ("apply_along_axis", lambda m, x: m.apply_along_axis(lambda r: r * r.sum(), 1, x)),
]


def _scalar_loss(api_numpy, f):
  return lambda x: api_numpy.sum(api_numpy.sin(f(x)) ** 2)


def test_grad():
  def transform(api, g):
    lib = anp if api is arrax else jnp
    return api.grad(lambda x: lib.sum(lib.sin(g(x)) ** 2))
  check_jit_batch(_GRAD_CASES, [distinct_data((2, 3, 4))], transform)


def test_vmap():
  def transform(api, g):
    return api.vmap(g, in_axes=2)
  check_jit_batch(_GRAD_CASES + [
      ("roll traced shift", lambda m, x: m.roll(x, x[0, 0].astype(int), axis=0)),
      ("repeat traced counts", lambda m, x: m.repeat(
          x, m.abs(x[0, :, 0]).astype(int), axis=1, total_repeat_length=5)),
      ("tile sum", lambda m, x: m.tile(x, 2).sum()),
  ], [distinct_data((2, 3, 5, 4))], transform)


def test_grad_eager_matches():
  # Outside jit too (each primitive's rules run eagerly).
  x = distinct_data((2, 3))
  for f in [lambda m, a: m.tile(a, (2, 2)), lambda m, a: m.unstack(a)[1]]:
    got = arrax.grad(lambda a: anp.sum(f(anp, a) ** 3))(anp.asarray(x))
    want = jax.grad(lambda a: jnp.sum(f(jnp, a) ** 3))(jnp.asarray(x))
    assert_tree_same(got, want)


# ---- jaxprs -----------------------------------------------------------------------------------
F32 = np.arange(6, dtype=np.float32).reshape(2, 3) / 4 - 0.3
COUNTS = np.array([1, 2, 0], np.int32)


def _same_jaxpr(f, *args):
  got = str(arrax.make_jaxpr(lambda *a: f(anp, *a))(*args))
  want = str(jax.make_jaxpr(lambda *a: f(jnp, *a))(*args))
  assert got == want, f"arrax:\n{got}\njax:\n{want}"


@pytest.mark.parametrize("name,f,args", [
    ("tile", lambda m, x: m.tile(x, (2, 1, 3)), (F32,)),
    ("tile int", lambda m, x: m.tile(x, 2), (F32,)),
    ("repeat", lambda m, x: m.repeat(x, 2, axis=1), (F32,)),
    ("repeat flat", lambda m, x: m.repeat(x, 3), (F32,)),
    ("repeat counts", lambda m, x: m.repeat(x, np.array([1, 0, 3]), axis=1), (F32,)),
    ("repeat total", lambda m, x, r: m.repeat(x, r, axis=1, total_repeat_length=4),
     (F32, COUNTS)),
    ("roll", lambda m, x: m.roll(x, 1, axis=1), (F32,)),
    ("roll flat", lambda m, x: m.roll(x, (1, -2)), (F32,)),
    ("roll traced", lambda m, x, s: m.roll(x, s, axis=1), (F32, np.int32(2))),
    ("roll traced pair", lambda m, x, s: m.roll(x, s[:2], axis=(0, 1)), (F32, COUNTS)),
    ("rollaxis", lambda m, x: m.rollaxis(x, 1), (F32,)),
    ("rot90", lambda m, x: m.rot90(x), (F32,)),
    ("append", lambda m, x: m.append(x, x), (F32,)),
    ("insert", lambda m, x: m.insert(x, 1, 5.0), (F32[0],)),
    ("delete", lambda m, x: m.delete(x, 1, axis=1), (F32,)),
    ("delete unique", lambda m, x, i: m.delete(x, i[:1], axis=1, assume_unique_indices=True),
     (F32, COUNTS)),
    ("resize", lambda m, x: m.resize(x, (4, 4)), (F32,)),
    ("dstack", lambda m, x: m.dstack([x, x]), (F32,)),
    ("column_stack", lambda m, x: m.column_stack([x[0], x[1]]), (F32,)),
    ("atleast_3d", lambda m, x: m.atleast_3d(x), (F32,)),
    ("block", lambda m, x: m.block([[x, x]]), (F32,)),
    ("unstack", lambda m, x: m.unstack(x, axis=1), (F32,)),
    ("copy", lambda m, x: m.copy(x), (F32,)),
    ("fromfunction", lambda m, x: m.fromfunction(lambda i, j: i + j, (2, 3)), (F32,)),
    ("apply_along_axis", lambda m, x: m.apply_along_axis(m.sum, 1, x), (F32,)),
    ("apply_over_axes", lambda m, x: m.apply_over_axes(m.sum, x, [0]), (F32,)),
    ("grad tile", lambda m, x: api_of(m).grad(lambda a: m.tile(a, (2, 2)).sum())(x), (F32,)),
    ("grad repeat", lambda m, x: api_of(m).grad(lambda a: (m.repeat(a, 2) ** 2).sum())(x), (F32,)),
    ("grad roll", lambda m, x: api_of(m).grad(lambda a: (m.roll(a, 1) * a).sum())(x), (F32,)),
    ("grad unstack", lambda m, x: api_of(m).grad(lambda a: m.unstack(a)[1].sum())(x), (F32,)),
    ("array_split", lambda m, x: m.array_split(x, 2, axis=1), (F32,)),
    ("split", lambda m, x: m.split(x, [1, 3], axis=1), (F32,)),
    ("split sections", lambda m, x: m.split(x, 2, axis=0), (F32,)),
], ids=lambda p: p if isinstance(p, str) else "")
def test_jaxpr(name, f, args):
  _same_jaxpr(f, *args)


# ---- x64 --------------------------------------------------------------------------------------
def test_x64(x64):
  x = distinct_data((2, 3), np.float64)
  v = distinct_data((5,), np.int64)
  check_cases([
      ("repeat total", lambda m, a: m.repeat(a, m.array([1, 0, 2]), axis=1,
                                             total_repeat_length=5), (x,)),
      ("delete unique", lambda m, a: m.delete(a, m.array([1, 3]), assume_unique_indices=True),
       (v,)),
      ("fromfunction int", lambda m: m.fromfunction(lambda i: i, (3,), dtype=int), ()),
      ("copy scalar", lambda m: m.copy(2**40), ()),
  ])
  check_jit_batch([
      ("tile", lambda m, a, w: m.tile(a, 2)),
      ("repeat counts", lambda m, a, w: m.repeat(a, np.array([1, 0, 2]), axis=1)),
      ("repeat total traced", lambda m, a, w: m.repeat(a, w[:3], axis=1, total_repeat_length=4)),
      ("roll traced", lambda m, a, w: m.roll(a, w[0], axis=1)),
      ("insert", lambda m, a, w: m.insert(w, np.array([0, 5]), 9)),
      ("insert traced", lambda m, a, w: m.insert(w, w[1], 7)),
      ("resize", lambda m, a, w: m.resize(w, (3, 3))),
      ("fromfunction", lambda m, a, w: m.fromfunction(lambda i, j: i * j, (2, 3))),
  ], [x, np.abs(v)])
