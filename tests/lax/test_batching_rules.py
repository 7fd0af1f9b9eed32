"""Batching rules of the structural, reduction, dot, sort and gather/scatter lax primitives.

Each case is one lax call `fn(lax_module, *args)` on per-example arguments. For every choice of
batch axes (every axis of each operand, with unbatched operands mixed in) the test compares
`arrax.vmap` with `jax.vmap` (values, dtype, shape, weak type) and with a Python loop of arrax
calls over the examples (values).
"""
import itertools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax as jlax

import arrax
import arrax.numpy as anp
from arrax import lax as alax
from arrax._src import core
from arrax._src.lax import dot, reductions, shape_ops, slicing, sort
from oracle import BF16, assert_same, call_with, check_vmap, rand

B = 3   # the mapped size


# ---- helpers ----------------------------------------------------------------------------------
def stack(examples, axis):
  """B examples stacked along `axis` (None: the single unbatched value)."""
  return examples[0] if axis is None else np.stack(examples, axis)


def axis_choices(ranks, full=False):
  """in_axes tuples covering every batch axis of every operand.

  Operand j batched at axis a comes once with the other operands unbatched (even a) or batched
  at their last axis (odd a); all operands batched at axis 0 is added. `full` gives every
  combination instead.
  """
  per_arg = [[None] + list(range(r + 1)) for r in ranks]
  if full:
    combos = list(itertools.product(*per_arg))
  else:
    combos = [(0,) * len(ranks)]
    for j, r in enumerate(ranks):
      for a in range(r + 1):
        combos.append(tuple(a if i == j else (None if a % 2 == 0 else ranks[i])
                            for i in range(len(ranks))))
  return sorted({c for c in combos if any(a is not None for a in c)},
                key=lambda c: [-1 if a is None else a for a in c])


def loop_reference(fn, examples, in_axes):
  """Per-example arrax calls, stacked along a leading axis."""
  outs = []
  for b in range(B):
    args = [anp.asarray(ex[b] if ax is not None else ex[0]) for ex, ax in zip(examples, in_axes)]
    outs.append(fn(alax, *args))
  if isinstance(outs[0], (tuple, list)):
    return [np.stack([np.asarray(o[k]) for o in outs]) for k in range(len(outs[0]))]
  return np.stack([np.asarray(o) for o in outs])


def check_batched(fn, examples, in_axes, loop=True):
  """Compare arrax.vmap(fn) with jax.vmap(fn) and with a loop over the examples.

  `examples[i]` is a list of B per-example values of argument i (an unbatched argument uses
  the first one).
  """
  args = [stack(ex, ax) for ex, ax in zip(examples, in_axes)]
  actual = check_vmap(fn, *args, build=call_with("lax"), convert="arrays", in_axes=in_axes,
                      strict_tree=False)
  if loop and actual is not None:   # None: JAX raised (and arrax raised alike)
    ref = loop_reference(fn, examples, in_axes)
    if isinstance(ref, list):
      for a, r in zip(actual, ref):
        assert_same(a, r, check_weak=False)
    else:
      assert_same(actual, ref, check_weak=False)


def make_examples(rng, specs):
  """specs: (shape, dtype) per argument, or a callable rng -> value."""
  return [[spec(rng) if callable(spec) else rand(*spec, rng, ints=(-6, 7)) for _ in range(B)]
          for spec in specs]


def run_all_axes(fn, specs, seed=0, full=False, loop=True):
  rng = np.random.default_rng(seed)
  examples = make_examples(rng, specs)
  ranks = [np.ndim(ex[0]) for ex in examples]
  for in_axes in axis_choices(ranks, full):
    try:
      check_batched(fn, examples, in_axes, loop)
    except AssertionError as e:
      raise AssertionError(f"in_axes={in_axes}: {e}") from e


# ---- structural ops ---------------------------------------------------------------------------
SHAPE_CASES = {
    "broadcast_in_dim": (lambda L, x: L.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
                         [((2, 3), np.float32)]),
    "broadcast_in_dim_size1": (lambda L, x: L.broadcast_in_dim(x, (2, 3), (0, 1)),
                               [((1, 3), np.int32)]),
    "broadcast_in_dim_scalar": (lambda L, x: L.broadcast_in_dim(x, (2, 3), ()),
                                [((), np.bool_)]),
    "broadcast": (lambda L, x: L.broadcast(x, (2,)), [((3,), BF16)]),
    "expand_dims": (lambda L, x: L.expand_dims(x, (0, 2)), [((2, 3), np.float32)]),
    "reshape": (lambda L, x: L.reshape(x, (3, 2)), [((2, 3), np.float32)]),
    "reshape_dimensions": (lambda L, x: L.reshape(x, (6,), (1, 0)), [((2, 3), np.int32)]),
    "reshape_scalar": (lambda L, x: L.reshape(x, (1, 1)), [((), np.complex64)]),
    "reshape_empty": (lambda L, x: L.reshape(x, (3, 0)), [((0, 3), np.float32)]),
    "squeeze": (lambda L, x: L.squeeze(x, (1,)), [((2, 1, 3), np.float32)]),
    "squeeze_neg": (lambda L, x: L.squeeze(x, (-1, 0)), [((1, 2, 1), np.int32)]),
    "transpose": (lambda L, x: L.transpose(x, (2, 0, 1)), [((2, 3, 4), np.float32)]),
    "rev": (lambda L, x: L.rev(x, (0,)), [((2, 3), np.float32)]),
    "rev2": (lambda L, x: L.rev(x, (1, 0)), [((2, 3), np.bool_)]),
    "slice": (lambda L, x: L.slice(x, (1, 0), (5, 3), (2, 2)), [((5, 4), np.float32)]),
    "slice_nostride": (lambda L, x: L.slice(x, (1,), (3,)), [((4,), np.int32)]),
    "slice_in_dim": (lambda L, x: L.slice_in_dim(x, 0, 2, axis=1), [((2, 3), BF16)]),
    "index_in_dim": (lambda L, x: L.index_in_dim(x, -1, 0, False), [((3, 2), np.float32)]),
    "concatenate": (lambda L, x, y, z: L.concatenate([x, y, z], 1),
                    [((2, 1), np.float32), ((2, 3), np.float32), ((2, 0), np.float32)]),
    "concatenate0": (lambda L, x, y: L.concatenate([x, y], 0),
                     [((1,), np.int32), ((2,), np.int32)]),
    "split": (lambda L, x: L.split(x, (2, 0, 3), 0), [((5, 2), np.float32)]),
    "split_axis1": (lambda L, x: L.split(x, (1, 2), axis=-1), [((2, 3), np.int32)]),
    "pad": (lambda L, x, v: L.pad(x, v, ((1, 2, 1), (-1, 0, 0))),
            [((3, 2), np.float32), ((), np.float32)]),
    "pad_int": (lambda L, x, v: L.pad(x, v, ((0, 1, 2),)), [((2,), np.int32), ((), np.int32)]),
    "pad_empty": (lambda L, x, v: L.pad(x, v, ((1, 1, 0),)), [((0,), np.float32),
                                                              ((), np.float32)]),
    "iota": (lambda L, x: (x, L.iota(np.int32, 4), L.broadcasted_iota(np.float32, (2, 3), 1)),
             [((2,), np.float32)]),
}


@pytest.mark.parametrize("name", sorted(SHAPE_CASES))
def test_shape_ops(name):
  fn, specs = SHAPE_CASES[name]
  run_all_axes(fn, specs)


def _idx(lo, hi):
  return lambda rng: np.asarray(rng.integers(lo, hi), np.int32)


DYNAMIC_CASES = {
    # Indices reach past both ends, so clamping (and wrapping of negatives) is exercised.
    "dynamic_slice": (lambda L, x, i, j: L.dynamic_slice(x, (i, j), (2, 3)),
                      [((4, 5), np.float32), _idx(-6, 6), _idx(-6, 6)]),
    "dynamic_slice_no_negative": (
        lambda L, x, i, j: L.dynamic_slice(x, (i, j), (2, 1), allow_negative_indices=False),
        [((4, 5), np.int32), _idx(0, 6), _idx(0, 6)]),
    "dynamic_slice_const_index": (lambda L, x, i: L.dynamic_slice(x, (i, 1), (1, 2)),
                                  [((3, 4), BF16), _idx(-1, 4)]),
    "dynamic_slice_scalar": (lambda L, x: L.dynamic_slice(x, (), ()), [((), np.float32)]),
    "dynamic_slice_in_dim": (lambda L, x, i: L.dynamic_slice_in_dim(x, i, 2, axis=1),
                             [((3, 4), np.float32), _idx(-5, 5)]),
    "dynamic_index_in_dim": (lambda L, x, i: L.dynamic_index_in_dim(x, i, 0, False),
                             [((3, 2), np.float32), _idx(-3, 3)]),
    "dynamic_update_slice": (lambda L, x, u, i, j: L.dynamic_update_slice(x, u, (i, j)),
                             [((4, 5), np.float32), ((2, 3), np.float32), _idx(-6, 6),
                              _idx(-6, 6)]),
    "dynamic_update_slice_no_negative": (
        lambda L, x, u, i: L.dynamic_update_slice(x, u, (i,), allow_negative_indices=False),
        [((5,), np.int32), ((2,), np.int32), _idx(0, 7)]),
    "dynamic_update_slice_scalar": (lambda L, x, u: L.dynamic_update_slice(x, u, ()),
                                    [((), np.float32), ((), np.float32)]),
    "dynamic_update_index_in_dim": (
        lambda L, x, u, i: L.dynamic_update_index_in_dim(x, u, i, 1),
        [((2, 3), np.float32), ((2,), np.float32), _idx(-3, 3)]),
}


@pytest.mark.parametrize("name", sorted(DYNAMIC_CASES))
def test_dynamic_slicing(name):
  fn, specs = DYNAMIC_CASES[name]
  run_all_axes(fn, specs)


# ---- reductions -------------------------------------------------------------------------------
REDUCERS = ["reduce_sum", "reduce_prod", "reduce_max", "reduce_min"]


@pytest.mark.parametrize("name", REDUCERS)
@pytest.mark.parametrize("axes", [(), (1,), (2, 0)])
def test_reductions(name, axes):
  run_all_axes(lambda L, x: getattr(L, name)(x, axes), [((2, 3, 2), np.float32)])


@pytest.mark.parametrize("name,dtype", [("reduce_sum", np.int32), ("reduce_max", BF16),
                                        ("reduce_prod", np.complex64),
                                        ("reduce_min", np.bool_),
                                        ("reduce_and", np.bool_), ("reduce_or", np.int32),
                                        ("reduce_xor", np.uint8), ("reduce_and", np.int8)])
def test_reductions_dtypes(name, dtype):
  run_all_axes(lambda L, x: getattr(L, name)(x, (1,)), [((2, 3), dtype)])


def test_reduction_scalar_and_empty():
  run_all_axes(lambda L, x: L.reduce_sum(x, ()), [((), np.float32)])
  run_all_axes(lambda L, x: L.reduce_max(x, (0,)), [((0, 2), np.float32)])


@pytest.mark.parametrize("name", ["argmax", "argmin"])
@pytest.mark.parametrize("axis,dtype", [(0, np.float32), (1, np.int32), (2, BF16),
                                        (1, np.bool_)])
def test_argminmax(name, axis, dtype):
  run_all_axes(lambda L, x: getattr(L, name)(x, axis, np.int32), [((2, 3, 2), dtype)])


def test_argmax_nan_and_ties():
  x = np.array([[1., np.nan, 3.], [2., 2., 1.], [0., 5., 5.]], np.float32)
  check_batched(lambda L, x: L.argmax(x, 0, np.int32), [[x] * B], (1,))
  check_batched(lambda L, x: L.argmin(x, 0, np.int32), [[x] * B], (0,))


@pytest.mark.parametrize("name", ["cumsum", "cumprod", "cummax", "cummin", "cumlogsumexp"])
@pytest.mark.parametrize("axis,reverse", [(0, False), (2, True)])
def test_cumulative(name, axis, reverse):
  run_all_axes(lambda L, x: getattr(L, name)(x, axis, reverse), [((2, 3, 2), np.float32)])


@pytest.mark.parametrize("name,dtype", [("cumsum", np.int32), ("cummax", BF16),
                                        ("cumprod", np.complex64), ("cummin", np.uint8)])
def test_cumulative_dtypes(name, dtype):
  run_all_axes(lambda L, x: getattr(L, name)(x, axis=0), [((4,), dtype)])


def _pair_reduce(L, x, y):
  def comp(a, b):
    return (L.max(a[0], b[0]), L.add(a[1], b[1]))
  return L.reduce((x, y), (np.float32(-np.inf), np.int32(0)), comp, (1,))


@pytest.mark.parametrize("case", ["monoid", "general", "general_two_axes"])
def test_general_reduce(case):
  if case == "monoid":
    run_all_axes(lambda L, x: L.reduce(x, np.float32(0), L.add, (0,)), [((3, 2), np.float32)])
  elif case == "general":
    run_all_axes(_pair_reduce, [((2, 3), np.float32), ((2, 3), np.int32)])
  else:
    run_all_axes(lambda L, x: L.reduce(x, np.float32(1), lambda a, b: L.mul(a, L.abs(b)),
                                       (0, 2)), [((2, 3, 2), np.float32)])


def test_general_reduce_batched_init_is_not_implemented():
  # JAX does not batch lax.reduce over mapped initial values; neither does arrax.
  fn = lambda L, x, i: L.reduce(x, i, lambda a, b: L.mul(a, L.abs(b)), (0,))  # noqa: E731
  rng = np.random.default_rng(0)
  check_batched(fn, make_examples(rng, [((3,), np.float32), ((), np.float32)]), (0, 0))
  with pytest.raises(NotImplementedError, match="init_values"):
    arrax.vmap(lambda x, i: fn(alax, x, i))(anp.ones((2, 3)), anp.ones((2,)))


# ---- dot_general ------------------------------------------------------------------------------
DOT_CASES = {
    "matmul": (lambda L, x, y: L.dot(x, y), [((2, 3), np.float32), ((3, 4), np.float32)]),
    "vecdot": (lambda L, x, y: L.dot(x, y), [((3,), np.float32), ((3,), np.float32)]),
    "matvec_int": (lambda L, x, y: L.dot(x, y), [((2, 3), np.int32), ((3,), np.int32)]),
    "batch_dims": (lambda L, x, y: L.dot_general(x, y, (((2,), (1,)), ((0,), (0,)))),
                   [((2, 3, 4), np.float32), ((2, 4, 1), np.float32)]),
    "batch_dims_permuted": (lambda L, x, y: L.dot_general(x, y, (((0,), (2,)), ((2,), (0,)))),
                            [((3, 2, 2), np.float32), ((2, 4, 3), np.float32)]),
    "outer": (lambda L, x, y: L.dot_general(x, y, (((), ()), ((), ()))),
              [((2,), np.float32), ((3,), np.float32)]),
    "scalar_operand": (lambda L, x, y: L.dot_general(x, y, (((), ()), ((), ()))),
                       [((), np.float32), ((2, 3), np.float32)]),
    "multi_contract": (lambda L, x, y: L.dot_general(x, y, (((0, 2), (1, 0)), ((), ()))),
                       [((2, 3, 4), np.float32), ((4, 2, 1), np.float32)]),
    "preferred": (lambda L, x, y: L.dot(x, y, preferred_element_type=np.float32),
                  [((2, 3), BF16), ((3,), BF16)]),
    "mixed_dtypes": (lambda L, x, y: L.dot(x, y), [((2, 3), np.int8), ((3, 2), np.float32)]),
    "complex_precision": (lambda L, x, y: L.dot(x, y, precision=L.Precision.HIGHEST),
                          [((2, 2), np.complex64), ((2,), np.complex64)]),
    "empty_contraction": (lambda L, x, y: L.dot(x, y), [((2, 0), np.float32),
                                                        ((0, 3), np.float32)]),
}


@pytest.mark.parametrize("name", sorted(DOT_CASES))
def test_dot_general(name):
  fn, specs = DOT_CASES[name]
  run_all_axes(fn, specs, full=name in ("matmul", "vecdot", "outer"))


def test_batch_matmul():
  run_all_axes(lambda L, x, y: L.batch_matmul(x, y),
               [((2, 2, 3), np.float32), ((2, 3, 1), np.float32)])


# ---- sort and top_k ---------------------------------------------------------------------------
def _with_nans(shape):
  def make(rng):
    x = rng.integers(-2, 3, shape).astype(np.float32)   # ties
    x[rng.random(shape) < 0.2] = np.nan
    return x
  return make


SORT_CASES = {
    "sort": (lambda L, x: L.sort(x, 0), [_with_nans((4, 3))]),
    "sort_last": (lambda L, x: L.sort(x), [((2, 3, 2), np.int32)]),
    "sort_bf16": (lambda L, x: L.sort(x, dimension=1, is_stable=False), [((2, 3), BF16)]),
    "sort_complex": (lambda L, x: L.sort(x, 0), [((3,), np.complex64)]),
    "sort_key_val": (lambda L, k, v: L.sort_key_val(k, v, 1),
                     [_with_nans((2, 4)), ((2, 4), np.int32)]),
    "sort_two_keys": (lambda L, a, b, c: L.sort((a, b, c), dimension=0, num_keys=2),
                      [((5,), np.int32), ((5,), np.float32), ((5,), np.bool_)]),
    "sort_empty": (lambda L, x: L.sort(x, 1), [((2, 0), np.float32)]),
    "top_k": (lambda L, x: L.top_k(x, 2), [((3, 4), np.float32)]),
    "top_k_axis0": (lambda L, x: L.top_k(x, 3, axis=0), [((3, 2), np.int32)]),
    "top_k_ties": (lambda L, x: L.top_k(x, 3), [_with_nans((5,))]),
    "top_k_zero": (lambda L, x: L.top_k(x, 0), [((2,), np.float32)]),
}


@pytest.mark.parametrize("name", sorted(SORT_CASES))
def test_sort(name):
  fn, specs = SORT_CASES[name]
  run_all_axes(fn, specs)


# ---- gather and scatter -----------------------------------------------------------------------
def _index_array(shape, bound, lo=0):
  return lambda rng: rng.integers(lo, bound, shape).astype(np.int32)


def _take_rows(mode):
  dn = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
  return lambda L, x, i: L.gather(x, i, L.GatherDimensionNumbers(**dn), (1, 3), mode=mode)


def _window_gather(L, x, i):
  dn = L.GatherDimensionNumbers(offset_dims=(1, 2), collapsed_slice_dims=(),
                                start_index_map=(1, 0))
  return L.gather(x, i, dn, (2, 2), mode="clip")


def _gather_with_batching_dims(L, x, i):
  dn = L.GatherDimensionNumbers(offset_dims=(), collapsed_slice_dims=(1,), start_index_map=(1,),
                                operand_batching_dims=(0,), start_indices_batching_dims=(0,))
  return L.gather(x, i, dn, (1, 1), mode="fill", fill_value=-1.0)


GATHER_CASES = {
    "rows_clip": (_take_rows("clip"), [((4, 3), np.float32), _index_array((2, 1), 6, -2)]),
    "rows_fill": (_take_rows("fill"), [((4, 3), np.int32), _index_array((2, 1), 6, -2)]),
    "rows_promise": (_take_rows("promise_in_bounds"),
                     [((4, 3), BF16), _index_array((2, 1), 4)]),
    "window": (_window_gather, [((4, 5), np.float32), _index_array((3, 2), 5)]),
    "batching_dims": (_gather_with_batching_dims,
                      [((2, 3), np.float32), _index_array((2, 1), 5, -1)]),
    "scalar_index": (lambda L, x, i: L.gather(
        x, i, L.GatherDimensionNumbers((), (0,), (0,)), (1,), mode="clip"),
        [((4,), np.complex64), _index_array((1,), 4)]),
}


@pytest.mark.parametrize("name", sorted(GATHER_CASES))
def test_gather(name):
  fn, specs = GATHER_CASES[name]
  run_all_axes(fn, specs, full=name in ("rows_clip", "window"))


def _unique_rows(n, bound):
  return lambda rng: rng.permutation(bound)[:n].reshape(n, 1).astype(np.int32)


def _scatter_rows(op, mode):
  dn = dict(update_window_dims=(1,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  return lambda L, x, i, u: getattr(L, op)(x, i, u, L.ScatterDimensionNumbers(**dn), mode=mode)


def _scatter_window(L, x, i, u):
  dn = L.ScatterDimensionNumbers(update_window_dims=(1,), inserted_window_dims=(1,),
                                 scatter_dims_to_operand_dims=(1, 0))
  return L.scatter_add(x, i, u, dn, mode="clip")


def _scatter_with_batching_dims(L, x, i, u):
  dn = L.ScatterDimensionNumbers(update_window_dims=(), inserted_window_dims=(1,),
                                 scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                                 scatter_indices_batching_dims=(0,))
  return L.scatter_max(x, i, u, dn)


SCATTER_CASES = {
    "scatter": (_scatter_rows("scatter", None),
                [((5, 2), np.float32), _unique_rows(3, 5), ((3, 2), np.float32)]),
    "scatter_add_dups": (_scatter_rows("scatter_add", None),
                         [((4, 2), np.int32), _index_array((5, 1), 6, -1),
                          ((5, 2), np.int32)]),
    "scatter_sub_clip": (_scatter_rows("scatter_sub", "clip"),
                         [((4, 2), np.float32), _unique_rows(2, 4), ((2, 2), np.float32)]),
    "scatter_mul": (_scatter_rows("scatter_mul", "drop"),
                    [((4, 2), np.int32), _index_array((3, 1), 6), ((3, 2), np.int32)]),
    "scatter_min": (_scatter_rows("scatter_min", None),
                    [((4, 2), BF16), _index_array((3, 1), 4), ((3, 2), BF16)]),
    "scatter_max": (_scatter_rows("scatter_max", "promise_in_bounds"),
                    [((4, 2), np.float32), _index_array((3, 1), 4), ((3, 2), np.float32)]),
    "window_clip": (_scatter_window,
                    [((3, 4), np.float32), _index_array((2, 2), 5), ((2, 2), np.float32)]),
    "batching_dims": (_scatter_with_batching_dims,
                      [((2, 3), np.int32), _index_array((2, 1), 4), ((2,), np.int32)]),
}


@pytest.mark.parametrize("name", sorted(SCATTER_CASES))
def test_scatter(name):
  fn, specs = SCATTER_CASES[name]
  run_all_axes(fn, specs)


_SQUARE = {alax: lambda v: alax.mul(v, v), jlax: lambda v: jlax.mul(v, v)}


def test_scatter_apply_scalar_update():
  dn = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  run_all_axes(lambda L, x, i: L.scatter_apply(x, i, _SQUARE[L], L.ScatterDimensionNumbers(**dn)),
               [((4,), np.float32), _index_array((1,), 5)])


def test_scatter_apply():
  dn = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  run_all_axes(lambda L, x, i: L.scatter_apply(x, i, _SQUARE[L], L.ScatterDimensionNumbers(**dn),
                                               update_shape=(2,)),
               [((4,), np.float32), _unique_rows(2, 4)])


# ---- composition ------------------------------------------------------------------------------
def test_vmap_of_vmap():
  rng = np.random.default_rng(1)
  x = rand((2, 3, 4, 5), np.float32, rng)    # outer axis 1, inner axis 0: examples (4, 5)
  y = rand((5, 2), np.float32, rng)          # outer unbatched, inner axis 1: examples (5,)
  idx = rng.integers(-2, 4, (3, 2)).astype(np.int32)

  def f(L, x, y, i):
    z = L.dot_general(x, y, (((1,), (0,)), ((), ())))
    s = L.sort(L.concatenate([z, L.rev(z, (0,))], 0), 0)
    r = L.reduce_max(L.dynamic_slice(x, (i, 0), (2, 3)), (1,))
    return L.cumsum(s, 0), r, L.argmax(x, 1, np.int32)

  def nested(L, vm):
    inner = vm(lambda x, y, i: f(L, x, y, i), in_axes=(0, 1, 0))
    return vm(inner, in_axes=(1, None, 0))

  expected = nested(jlax, jax.vmap)(jnp.asarray(x), jnp.asarray(y), jnp.asarray(idx))
  actual = nested(alax, arrax.vmap)(anp.asarray(x), anp.asarray(y), anp.asarray(idx))
  assert_same(actual, expected)


def test_vmap_of_vmap_gather_scatter():
  rng = np.random.default_rng(2)
  x = rand((2, 3, 4, 3), np.float32, rng)                 # outer axis 1, inner axis 0
  i = rng.integers(-1, 6, (3, 2, 2, 1)).astype(np.int32)  # outer axis 0, inner axis 1
  u = rand((3, 2, 3), np.float32, rng)                    # outer axis 0, inner unbatched
  take = _take_rows("fill")

  def f(L, x, i, u):
    dn = L.ScatterDimensionNumbers((1,), (0,), (0,))
    return take(L, x, i), L.scatter_add(x, i, u, dn)

  def nested(L, vm):
    return vm(vm(lambda x, i, u: f(L, x, i, u), in_axes=(0, 1, None)), in_axes=(1, 0, 0))

  expected = nested(jlax, jax.vmap)(*map(jnp.asarray, (x, i, u)))
  actual = nested(alax, arrax.vmap)(*map(anp.asarray, (x, i, u)))
  assert_same(actual, expected)


def test_jit_of_vmap_and_jaxpr():
  rng = np.random.default_rng(3)
  x = rand((3, 4, 2), np.float32, rng)
  y = rand((4, 2), np.float32, rng)

  def f(L, x, y):
    return L.reduce_sum(L.dot_general(x, y, (((1,), (0,)), ((), ()))), (0,)), L.transpose(x, (1, 0))

  fa = arrax.jit(arrax.vmap(lambda x, y: f(alax, x, y), in_axes=(2, None)))
  fj = jax.jit(jax.vmap(lambda x, y: f(jlax, x, y), in_axes=(2, None)))
  assert_same(fa(anp.asarray(x), anp.asarray(y)), fj(jnp.asarray(x), jnp.asarray(y)))


JAXPR_CASES = {
    "reshape": (lambda L, x: L.reshape(x, (4, 2)), [((2, 4), np.float32)], (1,)),
    "reduce": (lambda L, x: L.reduce_max(x, (0,)), [((2, 4), np.float32)], (1,)),
    "dot": (lambda L, x, y: L.dot(x, y), [((2, 4), np.float32), ((4,), np.float32)],
            (None, 0)),
    "sort": (lambda L, x, y: L.sort_key_val(x, y), [((3,), np.float32), ((3,), np.int32)],
             (0, None)),
    "concatenate": (lambda L, x, y: L.concatenate([x, y], 0),
                    [((2,), np.float32), ((1,), np.float32)], (None, 1)),
    "gather": (_take_rows("clip"), [((4, 3), np.float32), _index_array((2, 1), 4)], (1, 0)),
    "scatter": (_scatter_rows("scatter_add", None),
                [((4, 2), np.float32), _index_array((3, 1), 4), ((3, 2), np.float32)],
                (None, 0, 1)),
    "dynamic_slice": (lambda L, x, i: L.dynamic_slice(x, (i, 1), (2, 2),
                                                      allow_negative_indices=False),
                      [((4, 3), np.float32), _idx(0, 4)], (1, 0)),
    "dynamic_slice_operand": (lambda L, x: L.dynamic_slice(x, (2, 1), (2, 2)),
                              [((4, 3), np.float32)], (2,)),
    "dynamic_update_slice": (lambda L, x, u, i: L.dynamic_update_slice(x, u, (i, 0)),
                             [((4, 3), np.float32), ((2, 3), np.float32), _idx(-4, 4)],
                             (None, 1, 0)),
    "broadcast_in_dim": (lambda L, x: L.broadcast_in_dim(x, (4, 2, 3), (1, 2)),
                         [((2, 3), np.float32)], (2,)),
    "squeeze_transpose": (lambda L, x: L.transpose(L.squeeze(x, (1,)), (1, 0)),
                          [((2, 1, 3), np.int32)], (3,)),
    "slice_rev": (lambda L, x: L.rev(L.slice(x, (1, 0), (3, 3), (1, 2)), (0,)),
                  [((4, 3), np.float32)], (1,)),
    "pad_batched_value": (lambda L, x, v: L.pad(x, v, ((1, 0, 1),)),
                          [((3,), np.float32), ((), np.float32)], (None, 0)),
    "split_iota": (lambda L, x: (L.split(x, (1, 2), 1), L.iota(np.int32, 3)),
                   [((2, 3), np.float32)], (1,)),
    "argmax_cumsum": (lambda L, x: (L.argmax(x, 1, np.int32), L.cumsum(x, 0, True)),
                      [((2, 3), np.float32)], (1,)),
    "general_reduce": (_pair_reduce, [((2, 3), np.float32), ((2, 3), np.int32)], (2, None)),
    "top_k": (lambda L, x: L.top_k(x, 2), [((3, 4), np.float32)], (2,)),
    "dot_both": (lambda L, x, y: L.dot(x, y), [((2, 4), np.float32), ((4, 3), np.float32)],
                 (1, 2)),
}


@pytest.mark.parametrize("name", sorted(JAXPR_CASES))
def test_batched_jaxpr_matches_jax(name):
  fn, specs, in_axes = JAXPR_CASES[name]
  rng = np.random.default_rng(0)
  args = [stack(ex, ax) for ex, ax in zip(make_examples(rng, specs), in_axes)]
  got = arrax.make_jaxpr(arrax.vmap(lambda *a: fn(alax, *a), in_axes=in_axes))(*args)
  want = jax.make_jaxpr(jax.vmap(lambda *a: fn(jlax, *a), in_axes=in_axes))(*args)
  core.check_jaxpr(got.jaxpr)
  assert str(got) == str(want)


# ---- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["top_k_too_large", "dot_mismatch", "concat_dtype"])
def test_errors_under_vmap(case):
  rng = np.random.default_rng(0)
  if case == "top_k_too_large":
    check_batched(lambda L, x: L.top_k(x, 5), make_examples(rng, [((3,), np.float32)]), (0,))
  elif case == "dot_mismatch":
    check_batched(lambda L, x, y: L.dot(x, y), make_examples(
        rng, [((2, 3), np.float32), ((2,), np.float32)]), (0, 0))
  else:
    check_batched(lambda L, x, y: L.concatenate([x, y], 0), make_examples(
        rng, [((2,), np.float32), ((2,), np.int32)]), (None, 0))


# ---- edge cases and coverage ------------------------------------------------------------------
EMPTY_BATCH_CASES = {
    "reduce_sum": (lambda L, x: L.reduce_sum(x, (1,)), [(2, 3)], (0,)),
    "dot": (lambda L, x, y: L.dot(x, y), [(2, 3), (3,)], (1, 0)),
    "gather_both": (_take_rows("clip"), [(4, 3), (2, 1)], (0, 2)),
    "scatter_indices": (_scatter_rows("scatter_add", None), [(4, 2), (3, 1), (3, 2)],
                        (None, 0, None)),
    "dynamic_slice": (lambda L, x, i: L.dynamic_slice(x, (i, 0), (2, 3)), [(4, 3), ()], (1, 0)),
    "sort": (lambda L, x, y: L.sort_key_val(x, y), [(3,), (3,)], (0, None)),
}


@pytest.mark.parametrize("name", sorted(EMPTY_BATCH_CASES))
def test_empty_batch(name):
  # A mapped axis of size 0.
  fn, shapes, in_axes = EMPTY_BATCH_CASES[name]
  args = []
  for shape, ax in zip(shapes, in_axes):
    dtype = np.int32 if (name, len(args)) in {("gather_both", 1), ("scatter_indices", 1),
                                              ("dynamic_slice", 1)} else np.float32
    full = list(shape)
    if ax is not None:
      full.insert(ax, 0)
    args.append(np.zeros(full, dtype))
  expected = jax.vmap(lambda *a: fn(jlax, *a), in_axes=in_axes)(*args)
  actual = arrax.vmap(lambda *a: fn(alax, *a), in_axes=in_axes)(*args)
  assert_same(actual, expected)


@pytest.mark.parametrize("in_axes", [(-1, None), (-2, -1), (None, -3)])
def test_negative_in_axes(in_axes):
  rng = np.random.default_rng(4)
  examples = make_examples(rng, [((2, 3), np.float32), ((3, 2), np.float32)])
  check_batched(lambda L, x, y: L.dot_general(x, y, (((1,), (0,)), ((), ()))), examples, in_axes)


def _jnp_cases(np_, lib):
  return {
      "index": (lambda x, i: x[i], (0, 0)),
      "index_at_set": (lambda x, i: x.at[i].set(np_.float32(7)), (1, 0)),
      "take_along": (lambda x, i: np_.take(x, i, axis=0), (None, 0)),
      "matmul": (lambda x, i: x @ x.T, (2, None)),
      "sum_argsort": (lambda x, i: (np_.sum(x, axis=1), np_.argsort(x, axis=0)), (1, None)),
      "cumsum_pad": (lambda x, i: lib.lax.pad(np_.cumsum(x, 1), np_.float32(0),
                                              ((1, 0, 0), (0, 2, 1))), (0, None)),
      "concatenate": (lambda x, i: np_.concatenate([x, x[::-1]], axis=1), (2, None)),
      "dynamic_index": (lambda x, i: lib.lax.dynamic_index_in_dim(x, i, 1, False), (0, 0)),
  }


@pytest.mark.parametrize("name", sorted(_jnp_cases(jnp, jax)))
def test_jnp_functions_under_vmap(name):
  rng = np.random.default_rng(5)
  x = rand((B, 4, 3), np.float32, rng)
  i = rng.integers(-4, 4, (B,)).astype(np.int32)
  fa, axes = _jnp_cases(anp, arrax)[name]
  fj, _ = _jnp_cases(jnp, jax)[name]
  xa = np.moveaxis(x, 0, axes[0]) if axes[0] is not None else x[0]
  ia = i if axes[1] is not None else i[0]
  expected = jax.vmap(fj, in_axes=axes)(xa, ia)
  actual = arrax.vmap(fa, in_axes=axes)(xa, ia)
  assert_same(actual, expected)


def test_every_primitive_has_a_batching_rule():
  prims = [v for m in (shape_ops, reductions, dot, sort, slicing) for v in vars(m).values()
           if isinstance(v, core.Primitive)]
  assert len(prims) >= 37
  missing = sorted(p.name for p in prims if p.batch is None)
  assert not missing, f"primitives without a batching rule: {missing}"
