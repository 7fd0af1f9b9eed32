"""NumPy-style indexing (`x[idx]`), `jnp.take` and `x.at[idx]` updates, against jax.numpy 0.10.2.

Index expressions are written once as specs: `A(v)` marks an index that is a library array
eagerly (NumPy value `v` put on each library's device, or the Python int `v` itself) and a traced
argument under jit; bare NumPy arrays stay NumPy arrays in both libraries. When JAX raises,
arrax must raise the same exception class.
"""
import warnings

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.numpy as anp
from arrax._src.numpy import indexing
from oracle import (BF16, assert_all_same, check, check_all, no_unroll_warning,
                    same_exception, to_arrax, to_jax)

pytestmark = [pytest.mark.filterwarnings("ignore::FutureWarning"),
              pytest.mark.filterwarnings("ignore::numpy.exceptions.ComplexWarning")]


class A:
  """An index leaf that is a library array eagerly and a traced argument under jit."""

  def __init__(self, value):
    self.value = value

  def __repr__(self):
    return f"A({self.value!r})"


def _markers(spec):
  if isinstance(spec, A):
    return [spec]
  if isinstance(spec, (tuple, list)):
    return [m for s in spec for m in _markers(s)]
  return []


def _fill(spec, leaf):
  if isinstance(spec, A):
    return leaf(spec)
  if isinstance(spec, tuple):
    return tuple(_fill(s, leaf) for s in spec)
  if isinstance(spec, list):
    return [_fill(s, leaf) for s in spec]
  return spec


def _eager_index(spec, lib):
  return _fill(spec, lambda a: lib.asarray(a.value) if isinstance(a.value, np.ndarray)
               else a.value)


def _traced_fn(spec, body):
  """f(x, *leaves) that rebuilds the index from traced leaves and applies body(x, idx)."""
  marks = _markers(spec)

  def f(x, *leaves):
    table = dict(zip(map(id, marks), leaves))
    return body(x, _fill(spec, lambda a: table[id(a)]))
  return f


def _leaf_args(spec):
  return [m.value for m in _markers(spec)]


def check_eager(spec, x, body):
  """body(x, idx) with the index's array leaves concrete."""
  check(lambda x: body(x, _eager_index(spec, anp)), lambda x: body(x, _eager_index(spec, jnp)),
        x)


def _compare_jitted(cases, x, failures):
  """Compare the cases computed by one jitted function per library (with earlier failures)."""
  marks = [_markers(spec) for spec, _ in cases]
  leaves = [m.value for ms in marks for m in ms]

  def batch(x, *args):
    it = iter(args)
    outs = []
    for (spec, body), ms in zip(cases, marks):
      table = {id(m): next(it) for m in ms}
      outs.append(body(x, _fill(spec, lambda a: table[id(a)])))
    return tuple(outs)
  with no_unroll_warning():
    actual = arrax.jit(batch)(to_arrax(x), *map(to_arrax, leaves))
  expected = jax.jit(batch)(to_jax(x), *map(to_jax, leaves))
  assert_all_same([repr(spec) for spec, _ in cases], actual, expected, failures=failures)


def check_jit_batch(cases, x):
  """Every (spec, body) case under jit, with x and the index's array leaves traced.

  Cases that JAX rejects while tracing must be rejected by arrax with the same exception class;
  the others are computed by one jitted function per library (one compile for all of them).
  """
  kept, failures = [], []
  for spec, body in cases:
    f = _traced_fn(spec, body)
    args = [x, *_leaf_args(spec)]
    try:
      jax.eval_shape(f, *[to_jax(a) for a in args])
    except Exception as e:  # noqa: BLE001
      try:
        same_exception(lambda: arrax.eval_shape(f, *[to_arrax(a) for a in args]), e)
      except (Exception, pytest.fail.Exception) as err:  # noqa: BLE001
        failures.append(f"--- {spec!r}: {err}")
      continue
    kept.append((spec, body))
  _compare_jitted(kept, x, failures)


def _arange(shape, dtype=np.float32):
  n = int(np.prod(shape))
  values = np.arange(n) - n // 3
  if np.dtype(dtype) == np.bool_:
    return (values % 3 == 0).reshape(shape)
  if np.dtype(dtype).kind == "c":
    return (values + 1j * values[::-1]).astype(dtype).reshape(shape)
  return values.astype(dtype).reshape(shape)


# ---- getitem ------------------------------------------------------------------------------------
S = slice
E = Ellipsis
M3 = np.array([True, False, True])
M4 = np.array([True, False, True, True])
M34 = _arange((3, 4), np.bool_)
M345 = _arange((3, 4, 5), np.bool_)

BASIC = [
    0, 1, 2, -1, -3, (1, 2), (1, -1, 3), (-1, -1, -1), (2, 3, 4), (0, 0),
    S(None), S(1, 3), S(None, None, 2), S(None, None, -1), S(None, None, -2), S(3, 0, -1),
    S(-1, None, -2), S(10, None), S(-10, 2), S(2, 1), S(0, 0), S(None, 2, -1), S(1, -1, 3),
    (S(None), 1), (S(None), S(None), -2), (S(None), S(1, 4, 2), S(None, None, -3)),
    (E, 0), (0, E), (E, 1, 2), (1, E, 2), (S(1, None, 2), E, S(None, None, -3)),
    (None,), (None, 0, None), (E, None), (1, None, S(None, None, -1), None), (None, None, None),
    (S(None), None, 2, None), (), E, (E,), (None, E, None),
    np.int32(1), np.uint8(2), np.int64(-1), (np.int16(1), np.uint32(3)),
    # Out-of-bounds static ints clamp in JAX 0.10.2 (no IndexError).
    3, 10, -4, -10, (0, 7), (1, -9), (5, S(None), 9),
]

ADVANCED = [
    np.array([0, 2]), np.array([[0, 1], [2, 0]]), ([0, 2],), ([[0, 1]],), ((0, 1),),
    np.array([-1, -3]), np.array([2, -1, 0, 2]), np.array(1), np.array(-2),
    (np.array([0, 1]), np.array([1, 2])), (np.array([[0], [1]]), np.array([1, 2, 3])),
    (np.array([0, 2]), np.array([[1], [3]]), np.array([4])),
    (S(None), np.array([0, 3])), (S(None), S(None), np.array([[4, 0]])),
    (np.array([0, 1]), S(None), np.array([1, 2])),        # separated: advanced axes go first
    (np.array([0, 1]), None, np.array([1, 2])),
    (1, S(None), np.array([0, 2])), (np.array([0, 2]), S(1, 3), 1),
    (S(None), np.array([0, 2]), np.array([1, 3])), (None, np.array([0, 1]), E),
    (E, np.array([0, 1])), (np.array([0, 1]), E, 1), (1, E, np.array([0, 2])),
    (np.array([0, 1]), S(None, None, -1)), (S(None, None, 2), np.array([1])),
    (S(None, None, -2), np.array([1, 2]), S(1, None, 2)), (None, np.array([[0], [2]]), None),
    (np.array(1), np.array([0, 2])), (np.array(1), S(None), np.array(2)),
    np.array([], np.int32), (np.array([], np.int32), S(None)), (S(None), np.array([], np.int32)),
    np.array([5, -7, 100]), (np.array([0, 9]), np.array([-20, 3])),    # out of bounds: clamp
    np.array([1, 2], np.uint8), np.array([1, -1], np.int8), np.array([0, 2], np.int16),
    np.array([1, 3], np.uint32),
    (A(np.array([0, 2])),), (A(np.array([[1], [2]])), S(None), A(np.array([0, 4]))),
    (S(1, None), A(np.array([-1, 0]))), A(np.array([1, -3], np.int8)),
    A(np.array([0, 1], np.uint8)), (A(np.array([0, 5, -9])),), (A(np.array(2)), 1),
]

DYNAMIC = [
    A(1), A(-1), (A(2), A(3)), (A(1), S(1, 3)), (A(1), S(None, None, -1)), (S(None), A(-2)),
    (A(1), None, A(0)), (A(5),), (A(-7), 2), (E, A(3)), (A(1), S(None, None, 2)),
    (A(np.int32(1)),), (A(np.uint8(2)), A(np.int16(-1))), (A(np.array(2)), S(None), 1),
]

BOOLEAN = [
    M3, (M3,), M34, M345, ~M345, np.zeros(3, bool), np.zeros((3, 4), bool),
    (S(None), M4), (0, M4), (M3, S(None), 1), (S(None), M34), (M3, np.array([0, 1])),
    True, False, (True,), (True, 0), (E, True), (0, True, np.array([1, 2])), (S(None), False),
    (True, [0, 2]), (True, np.array([0, 2]), 1), (True, None), (False, E),
    ([True, False, True],), (S(None), [True, False, True, False]),
    np.ones((3, 0), bool),
    (A(M3),), A(M34), (S(None), A(M4)),                     # traced masks: jit raises
]

ERRORS = [
    1.0, np.float32(1), "a", {}, (E, E), (0, 0, 0, 0), np.array([1.0]), [0, 1], [0, 1.5],
    [True, False, True], (S(None), [0, 1.5]), S(1, 2.0), S(0, 3, 0), np.array([True, False]),
    (S(None), M3), np.zeros((2, 2), bool), (A(np.array([1.0])),), (0.5, 1),
]


GETITEM_3D = BASIC + ADVANCED + DYNAMIC + BOOLEAN + ERRORS


def _getitem(x, idx):
  return x[idx]


@pytest.mark.parametrize("spec", GETITEM_3D, ids=repr)
def test_getitem_3d(spec):
  check_eager(spec, _arange((3, 4, 5)), _getitem)


def test_getitem_3d_jit():
  check_jit_batch([(spec, _getitem) for spec in GETITEM_3D], _arange((3, 4, 5)))


OTHER_SHAPES = {
    "1d": (_arange((5,)), [
        0, -1, 4, 7, -9, S(1, 4), S(None, None, -1), S(4, 0, -2), None, E, (), True, False,
        np.array([0, 4, -1]), np.array([[1, 2]]), np.array([True, False, True, False, True]),
        A(3), A(-2), A(np.array([0, 9])), [3, 1], (np.array([], np.int32),), S(10, 20)]),
    "0d": (np.float32(3.5), [(), E, None, (None, None), True, False, (E, None), 0,
                             np.array(0), (None, np.array([0, 0]))]),
    "empty": (np.zeros((0, 3), np.float32), [
        0, -1, (S(None), 1), (0, S(None)), S(None, None, -1), np.array([0]),
        (S(None), np.array([0, 2])), (S(None), np.array([], np.int32)), np.zeros(0, bool),
        (np.array([], np.int32), 1)]),
}


@pytest.mark.parametrize("name,spec", [(k, s) for k, (_, specs) in OTHER_SHAPES.items()
                                       for s in specs], ids=repr)
def test_getitem_other_shapes(name, spec):
  check_eager(spec, OTHER_SHAPES[name][0], _getitem)


@pytest.mark.parametrize("name", list(OTHER_SHAPES))
def test_getitem_other_shapes_jit(name):
  x, specs = OTHER_SHAPES[name]
  check_jit_batch([(spec, _getitem) for spec in specs], x)


DTYPE_SPECS = [1, (S(None), S(None, None, -2)), np.array([2, 0]), (M3, 1), (A(1), S(1, 3)),
               (None, np.array([[0], [1]]), E), np.array([9, -9])]


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.bool_, BF16, np.complex64,
                                   np.uint8, np.float16], ids=lambda d: np.dtype(d).name)
def test_getitem_dtypes(dtype):
  x = _arange((3, 4), dtype)
  check_all([(repr(spec), lambda spec=spec: check_eager(spec, x, _getitem))
             for spec in DTYPE_SPECS])
  check_jit_batch([(spec, _getitem) for spec in DTYPE_SPECS], x)


def test_getitem_weak_type_is_kept():
  check(lambda: anp.asarray(2.0)[None], lambda: jnp.asarray(2.0)[None])
  check(lambda: anp.full((3,), 2.0, dtype=None)[np.array([0, 1])] * 1,
        lambda: jnp.full((3,), 2.0, dtype=None)[np.array([0, 1])] * 1)
  check(arrax.jit(lambda v: anp.broadcast_to(v, (3,))[1:]),
        jax.jit(lambda v: jnp.broadcast_to(v, (3,))[1:]), 2.0)


def test_traced_slice_bounds_raise_index_error():
  x = _arange((4,))
  check(arrax.jit(lambda x, i: x[i:i + 2]), jax.jit(lambda x, i: x[i:i + 2]), x, 1)
  with pytest.raises(IndexError, match="slice bounds must be static"):
    arrax.jit(lambda x, i: x[i:])(anp.asarray(x), 1)


def test_traced_boolean_mask_raises_nonconcrete_error():
  f = arrax.jit(lambda x, m: x[m])
  with pytest.raises(arrax.errors.NonConcreteBooleanIndexError) as info:
    f(anp.arange(3.0), anp.array([True, False, True]))
  assert isinstance(info.value, IndexError)
  assert "bool[3]" in str(info.value)
  with pytest.raises(arrax.errors.NonConcreteBooleanIndexError):
    arrax.jit(lambda x, m: x.at[m].set(0.0))(anp.arange(3.0), anp.array([True, False, True]))


def test_item_assignment_is_a_type_error():
  x = anp.arange(3.0)
  with pytest.raises(TypeError, match="does not support item assignment|immutable"):
    x[0] = 1.0

  def f(x):
    x[0] = 1.0
    return x
  with pytest.raises(TypeError, match="does not support item assignment|immutable"):
    arrax.jit(f)(x)
  with pytest.raises(TypeError):
    jax.jit(f)(jnp.arange(3.0))


def test_float_index_is_a_type_error():
  for idx in (1.0, np.float32(1), np.array([1.0]), anp.asarray(1.0)):
    with pytest.raises(TypeError, match="must be integers or booleans"):
      anp.arange(3.0)[idx]


def test_static_out_of_bounds_int_clamps_like_jax():
  # The brief expected IndexError here; JAX 0.10.2 clamps instead (only a size-0 axis raises).
  np.testing.assert_array_equal(anp.arange(3.0)[5], jnp.arange(3.0)[5])
  with pytest.raises(IndexError):
    anp.zeros(0)[0]


# ---- .at[].get -----------------------------------------------------------------------------------
GET_SPECS = [1, 7, -1, -9, np.array([0, 7, -1, -9]), (S(None), np.array([1, 5])), S(1, 3),
             (A(np.array([2, 6])), S(None)), (A(8), 1), M3, True, (S(None), None, 3),
             (np.array([0, 2]), S(None, None, -1))]


def _get(**kwargs):
  return lambda x, idx: x.at[idx].get(**kwargs)


@pytest.mark.parametrize("mode", [None, "clip", "fill", "drop", "promise_in_bounds"])
def test_at_get_modes(mode):
  x = _arange((3, 4), np.float32)
  check_all([(repr(spec), lambda spec=spec: check_eager(spec, x, _get(mode=mode)))
             for spec in GET_SPECS])
  check_jit_batch([(spec, _get(mode=mode)) for spec in GET_SPECS], x)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, BF16, np.complex64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fill_value", [None, 3, np.array(1)])
def test_at_get_fill_values(dtype, fill_value):
  x = _arange((3, 4), dtype)
  spec = (np.array([0, 5, -1, -4]), S(None))
  check_eager(spec, x, _get(mode="fill", fill_value=fill_value))
  check_jit_batch([(spec, _get(mode="fill", fill_value=fill_value))], x)


NOWRAP_SPECS = [-1, np.array([-1, 1]), (A(-1), 0), (A(np.array([-2])),), (S(None), -2)]


@pytest.mark.parametrize("mode", [None, "clip", "fill"])
def test_at_get_without_wrapping_negative_indices(mode):
  body = _get(mode=mode, wrap_negative_indices=False)
  check_all([(repr(spec), lambda spec=spec: check_eager(spec, _arange((3, 4)), body))
             for spec in NOWRAP_SPECS])
  check_jit_batch([(spec, body) for spec in NOWRAP_SPECS], _arange((3, 4)))


@pytest.mark.parametrize("kwargs", [dict(mode="wrap"), dict(mode="bogus"),
                                    dict(mode="fill", fill_value=np.array([1.0]))], ids=repr)
def test_at_get_errors(kwargs):
  check(lambda x: x.at[np.array([0, 9])].get(**kwargs),
        lambda x: x.at[np.array([0, 9])].get(**kwargs), _arange((3,)))


def test_at_get_sorted_unique_flags():
  spec = np.array([0, 1])
  check(lambda x: x.at[spec].get(unique_indices=True, indices_are_sorted=True),
        lambda x: x.at[spec].get(unique_indices=True, indices_are_sorted=True), _arange((3,)))


# ---- .at[] updates -------------------------------------------------------------------------------
METHODS = ["set", "add", "subtract", "multiply", "mul", "divide", "power", "min", "max",
           "apply"]


def _update(method, values, **kwargs):
  def body(x, idx):
    ref = x.at[idx]
    if method == "apply":
      fn = (lambda v: ~v) if x.dtype == np.bool_ else (lambda v: v * 2 + 1)
      return ref.apply(fn, **kwargs)
    return getattr(ref, method)(values, **kwargs)
  return body


UPDATE_SPECS = [
    (0, 2.0), (-1, 3.0), ((1, 2), 4.0), (S(None), 2.0), (S(None, None, -1), np.arange(4.0)),
    (S(1, None, 2), np.array([5.0, 6.0])), (np.array([0, 0, 1]), 2.0),           # duplicates
    (np.array([0, 0, 1]), np.array([[1.0], [2.0], [3.0]])),
    (np.array([-1, 1, -1]), np.array([3.0, 4.0, 5.0])[:, None]),
    ((np.array([0, 2]), S(None), ), np.arange(8.0).reshape(2, 4)),
    ((S(None), np.array([1, 1])), np.array([1.0, 2.0])),
    ((np.array([0, 1]), np.array([3, 3])), np.array([7.0, 8.0])),
    ((np.array([[0], [2]]), np.array([1, 3])), 9.0),
    ((np.array([0, 1]), S(None, None, -2), ), np.arange(4.0).reshape(2, 2)),
    (M3, np.array([1.0, 2.0, 3.0, 4.0])), ((S(None), M4[:4]), 2.0), (M34, 7.0),
    (True, 1.0), (False, 1.0), ((None, 1), np.array([[1.0, 2.0, 3.0, 4.0]])),
    ((1, None, S(None)), 5.0), (E, 1.0), ((E, 2), np.array([1.0, 2.0, 3.0])),
    ((A(np.array([2, 2, 0])),), 3.0), ((A(1), A(-1)), 4.0), ((S(None), A(np.array([0, 3]))), 2.0),
    (S(2, 2), 1.0),                                                    # empty: unchanged
    ((np.array([0, 1]), S(None)), np.array([1.0, 2.0, 3.0])),         # bad broadcast
    (S(0, 2), np.ones((1, 2, 4))),                                     # too many dims
]


# set and add see every index spec; the other methods (which differ only in the scatter's
# combiner) see every fifth one.
UPDATE_CASES = [(m, spec, v) for m in METHODS for n, (spec, v) in enumerate(UPDATE_SPECS)
                if m in ("set", "add") or n % 5 == METHODS.index(m) % 5]


@pytest.mark.parametrize("method,spec,values", UPDATE_CASES, ids=repr)
def test_at_update(method, spec, values):
  check_eager(spec, _arange((3, 4)) + 5, _update(method, values))


def test_at_update_jit():
  check_jit_batch([(spec, _update(m, values)) for m, spec, values in UPDATE_CASES],
                  _arange((3, 4)) + 5)


UPDATE_VALUES = [1, 2.5, True, np.array([1, 2], np.int32), 300, -1, 1j]
UPDATE_DTYPES = [np.int32, np.float32, np.bool_, BF16, np.complex64, np.int8]
BATCH_METHODS = [m for m in METHODS if m != "mul"]   # mul is multiply
DTYPE_SPEC = (np.array([0, 2]), np.array([1, 1]))


def _known_ufunc_mismatch(method, dtype, values):
  # arrax's integer jnp.power differs from JAX when the result overflows or the exponent is
  # negative (a ufuncs issue, not an indexing one).
  return (method == "power" and np.dtype(dtype).kind in "iu" and isinstance(values, int)
          and values in (300, -1))


@pytest.mark.parametrize("dtype", UPDATE_DTYPES, ids=lambda d: np.dtype(d).name)
def test_at_update_dtypes(dtype):
  x = _arange((3, 4), dtype)
  cases = [(m, v) for m in BATCH_METHODS for v in UPDATE_VALUES
           if not _known_ufunc_mismatch(m, dtype, v)
           and (m in ("set", "add") or not isinstance(v, np.ndarray))]
  # Eagerly for a few methods (each eager case costs compiles in both libraries), all jitted.
  check_all([(f"{m} {v!r}", lambda m=m, v=v: check_eager(DTYPE_SPEC, x, _update(m, v)))
             for m, v in cases if m in ("set", "add", "divide")])
  check_jit_batch([(DTYPE_SPEC, _update(m, v)) for m, v in cases], x)


OOB_SPECS = [7, np.array([0, 5, -1, -7]), (A(np.array([9, 1])),),
             (S(None), np.array([4, -5])), (A(6), 1)]


@pytest.mark.parametrize("mode", [None, "clip", "drop", "fill", "promise_in_bounds"])
def test_at_update_out_of_bounds(mode):
  x = _arange((3, 4)) + 5
  cases = [(m, spec, _update(m, 2.0, mode=mode)) for m in BATCH_METHODS for spec in OOB_SPECS]
  check_all([(f"{m} {spec!r}", lambda spec=spec, body=body: check_eager(spec, x, body))
             for m, spec, body in cases if m in ("set", "add", "max")])
  check_jit_batch([(spec, body) for _, spec, body in cases], x)


@pytest.mark.parametrize("mode", [None, "clip", "drop"])
def test_at_update_without_wrapping_negative_indices(mode):
  cases = [(spec, _update(m, 9.0, mode=mode, wrap_negative_indices=False))
           for m in ("set", "add", "max") for spec in NOWRAP_SPECS]
  check_all([(repr(spec), lambda spec=spec, body=body: check_eager(spec, _arange((3, 4)), body))
             for spec, body in cases])
  check_jit_batch(cases, _arange((3, 4)))


@pytest.mark.parametrize("method", ["set", "add", "min"])
def test_at_update_flags_and_traced_values(method):
  spec = (A(np.array([0, 1, 2])),)
  values = np.array([1.0, -2.0, 3.0], np.float32)

  def body(x, idx, v):
    return getattr(x.at[idx], method)(v, indices_are_sorted=True, unique_indices=True)
  check(lambda x, v: body(x, _eager_index(spec, anp), v),
        lambda x, v: body(x, _eager_index(spec, jnp), v), _arange((3, 2)), values[:, None])
  f = lambda x, v, i: body(x, (i,), v)  # noqa: E731
  check(arrax.jit(f), jax.jit(f), _arange((3, 2)), values[:, None], np.array([2, 0, 1]))


def test_at_update_weak_type_is_kept():
  check(lambda: anp.asarray(3.0).at[()].set(1), lambda: jnp.asarray(3.0).at[()].set(1))
  check(arrax.jit(lambda v: v.at[()].add(1)), jax.jit(lambda v: v.at[()].add(1)), 2.0)


def test_at_update_warns_on_unsafe_cast_like_jax():
  with warnings.catch_warnings(record=True) as jw:
    warnings.simplefilter("always")
    jnp.arange(3).at[0].add(1.5)
  with warnings.catch_warnings(record=True) as aw:
    warnings.simplefilter("always")
    out = anp.arange(3).at[0].add(1.5)
  assert [w.category for w in aw] == [w.category for w in jw] == [FutureWarning]
  np.testing.assert_array_equal(out, [1, 1, 2])
  with warnings.catch_warnings():
    warnings.simplefilter("error")
    anp.arange(3.0).at[0].add(1)


def test_at_update_overflowing_python_int():
  check(lambda x: x.at[0].set(2 ** 40), lambda x: x.at[0].set(2 ** 40),
        np.arange(3, dtype=np.int32))


def test_at_update_list_values_and_indices():
  check(lambda x: x.at[1:3].set([7, 8]), lambda x: x.at[1:3].set([7, 8]), _arange((5,)))
  check(lambda x: x.at[[1, 2]].set(0.0), lambda x: x.at[[1, 2]].set(0.0), _arange((5,)))


def test_at_repr_and_types():
  x = anp.arange(3.0)
  assert repr(x.at) == f"_IndexUpdateHelper({x!r})"
  assert repr(x.at[1:]) == f"_IndexUpdateRef({x!r}, slice(1, None, None))"
  assert isinstance(x.at, indexing.IndexUpdateHelper)
  assert type(x.at[0]).mul is type(x.at[0]).multiply


def test_at_out_sharding_needs_a_mesh():
  """A PartitionSpec out_sharding without a mesh set raises JAX's ValueError (shardings in
  types: tests/test_sharding_in_types.py)."""
  for np_, P in ((anp, arrax.P), (jnp, jax.P)):
    with pytest.raises(ValueError, match="not under a mesh context"):
      np_.arange(3.0).at[0].set(1.0, out_sharding=P("x"))
    with pytest.raises(ValueError, match="not under a mesh context"):
      np_.arange(3.0).at[0].get(out_sharding=P("x"))


# ---- take ----------------------------------------------------------------------------------------
TAKE_INDICES = [np.array([[1, -1], [3, 0]]), np.array([7, -1, -7, 2]), np.array(2),
                np.array([], np.int32), np.array([1, 200], np.uint8)]


@pytest.mark.parametrize("mode", [None, "fill", "clip", "wrap"])
@pytest.mark.parametrize("axis", [None, 0, -1, 2])
def test_take(axis, mode):
  x = _arange((3, 4))
  check_all([(repr(i), lambda i=i: check(lambda x, i: anp.take(x, i, axis=axis, mode=mode),
                                         lambda x, i: jnp.take(x, i, axis=axis, mode=mode),
                                         x, i))
             for i in TAKE_INDICES])


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.bool_, BF16, np.complex64],
                         ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("fill_value", [None, 2])
def test_take_fill_dtypes(dtype, fill_value):
  x = _arange((3, 4), dtype)
  idx = np.array([5, 0, -9])
  check(lambda x, i: anp.take(x, i, axis=0, fill_value=fill_value),
        lambda x, i: jnp.take(x, i, axis=0, fill_value=fill_value), x, idx)
  check(arrax.jit(lambda x, i: x.take(i, axis=1, mode="clip")),
        jax.jit(lambda x, i: x.take(i, axis=1, mode="clip")), x, idx)


@pytest.mark.parametrize("case", ["empty_axis", "empty_axis_empty_idx", "float_idx", "list",
                                  "scalar", "out", "flags", "raise", "promise_in_bounds",
                                  "bad_mode"])
def test_take_edge_cases(case):
  x = _arange((3, 4))
  cases = {
      "empty_axis": (np.zeros((0, 3), np.float32), np.array([0]), dict(axis=0)),
      "empty_axis_empty_idx": (np.zeros((0, 3), np.float32), np.zeros(0, np.int32),
                               dict(axis=0)),
      "float_idx": (x, np.array([1.0]), {}),
      "list": (x, [1, 2], {}),
      "scalar": (x, 2, dict(axis=1)),
      "out": (x, np.array([1]), dict(out=np.zeros(1))),
      "flags": (x, np.array([0, 1]), dict(unique_indices=True, indices_are_sorted=True)),
      "raise": (x, np.array([0, 1]), dict(mode="raise")),
      "promise_in_bounds": (x, np.array([0, 1]), dict(mode="promise_in_bounds")),
      "bad_mode": (x, np.array([0, 1]), dict(mode="foo")),
  }
  a, i, kw = cases[case]
  check(lambda a: anp.take(a, i, **kw), lambda a: jnp.take(a, i, **kw), a)


# ---- jaxprs --------------------------------------------------------------------------------------
X2 = _arange((3, 4))
X3 = _arange((2, 3, 4))
I2 = np.array([0, 2], np.int32)

JAXPR_CASES = {
    "x[1:3]": (lambda np_: lambda x: x[1:3], [X2]),
    "x[0]": (lambda np_: lambda x: x[0], [X2]),
    "x[-1]": (lambda np_: lambda x: x[-1], [X2]),
    "x[0, 1]": (lambda np_: lambda x: x[0, 1], [X2]),
    "x[::-1]": (lambda np_: lambda x: x[::-1], [X2]),
    "x[::-2]": (lambda np_: lambda x: x[::-2], [X2]),
    "x[:, None]": (lambda np_: lambda x: x[:, None], [X2]),
    "x[...]": (lambda np_: lambda x: x[...], [X2]),
    "x[10]": (lambda np_: lambda x: x[10], [X2]),
    "x[1:3, None, ::-1]": (lambda np_: lambda x: x[1:3, None, ::-1], [X2]),
    "y[0, :, None, 1]": (lambda np_: lambda x: x[0, :, None, 1], [X3]),
    "x[i]": (lambda np_: lambda x, i: x[i], [X2, 1]),
    "x[i] int32": (lambda np_: lambda x, i: x[i], [X2, np.int32(1)]),
    "x[i] uint8": (lambda np_: lambda x, i: x[i], [X2, np.uint8(1)]),
    "v[i]": (lambda np_: lambda x, i: x[i], [X2[0], 1]),
    "v[i] int8": (lambda np_: lambda x, i: x[i], [X2[0], np.int8(1)]),
    "x[i, 1:3]": (lambda np_: lambda x, i: x[i, 1:3], [X2, 1]),
    "x[i, j]": (lambda np_: lambda x, i, j: x[i, j], [X2, 1, 2]),
    "x[jnp.array([0, 2])]": (lambda np_: lambda x: x[np_.array([0, 2])], [X2]),
    "x[np.array([0, 2])]": (lambda np_: lambda x: x[np.array([0, 2])], [X2]),
    "x[:, [0, 2]]": (lambda np_: lambda x: x[:, [0, 2]], [X2]),
    "x[1, [0, 2]]": (lambda np_: lambda x: x[1, [0, 2]], [X2]),
    "x[mask]": (lambda np_: lambda x: x[np.array([True, False, True])], [X2]),
    "x[True]": (lambda np_: lambda x: x[True], [X2]),
    "x[idx]": (lambda np_: lambda x, i: x[i], [X2, I2]),
    "x[idx int16]": (lambda np_: lambda x, i: x[i], [X2, I2.astype(np.int16)]),
    "x[idx uint32]": (lambda np_: lambda x, i: x[i], [X2, I2.astype(np.uint32)]),
    "x[::2, idx]": (lambda np_: lambda x, i: x[::2, i], [X2, I2]),
    "x[i, ::2]": (lambda np_: lambda x, i: x[i, ::2], [X2, np.int32(1)]),
    "y[i, :, j]": (lambda np_: lambda x, i, j: x[i, :, j], [X3, I2 // 2, I2]),
    "y[:, i, None, j]": (lambda np_: lambda x, i, j: x[:, i, None, j], [X3, I2, I2]),
    "y[None, i, ::-1]": (lambda np_: lambda x, i: x[None, i, ::-1], [X3, I2[:, None] // 2]),
    "take": (lambda np_: lambda x, i: np_.take(x, i, axis=1), [X2, I2]),
    "take clip": (lambda np_: lambda x, i: np_.take(x, i, mode="clip"), [X2, I2]),
    "at set": (lambda np_: lambda x: x.at[0].set(1.0), [X2]),
    "at add idx": (lambda np_: lambda x, i: x.at[i].add(1.0), [X2, I2]),
    "at int add 1.5": (lambda np_: lambda x: x.at[0].add(1.5), [np.arange(4, dtype=np.int32)]),
    "at mul slice": (lambda np_: lambda x, v: x.at[1:3, ::2].multiply(v),
                     [X2, np.ones(2, np.float32)]),
    "at min clip": (lambda np_: lambda x, i: x.at[i].min(1.0, mode="clip"), [X2[0], I2]),
    "at divide": (lambda np_: lambda x: x.at[1].divide(2.0), [X2[0]]),
    "at get fill": (lambda np_: lambda x, i: x.at[i].get(mode="fill", fill_value=-1),
                    [X2[0], I2]),
    "at apply": (lambda np_: lambda x, i: x.at[i].apply(lambda v: v * 2), [X2[0], I2]),
}


@pytest.mark.parametrize("name", list(JAXPR_CASES))
def test_jaxpr_matches_jax(name):
  make, args = JAXPR_CASES[name]
  a_args = [anp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
  j_args = [jnp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
  assert str(arrax.make_jaxpr(make(anp))(*a_args)) == str(jax.make_jaxpr(make(jnp))(*j_args))


@pytest.mark.parametrize("spec", [1, -1, (A(1), S(None, None, -1)), np.array([0, -1]),
                                  (A(np.array([2, 0])), 1), M3, True], ids=repr)
def test_x64(x64, spec):
  x = _arange((3, 4), np.float64)
  check_eager(spec, x, _getitem)
  check_eager(spec, x, _update("add", 1))
  check_jit_batch([(spec, _getitem), (spec, _update("add", 1))], x)
  check(lambda x, i: anp.take(x, i, axis=1), lambda x, i: jnp.take(x, i, axis=1), x,
        np.array([0, 7, -2]))
