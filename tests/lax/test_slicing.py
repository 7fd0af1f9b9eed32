"""Differential tests of arrax.lax gather/scatter against jax.lax."""
import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax import lax

import arrax
import arrax.numpy as anp
from arrax import lax as alax
from arrax._src.core import ShapedArray
from oracle import BF16, assert_same, raised, rand, same_exception

MODES = ["clip", "fill", "promise_in_bounds"]
A = anp.asarray   # a NumPy value as an arrax array


def indices(rng, shape, bounds, oob, dtype=np.int32):
  """Random start indices (last axis = index vector) within bounds, or 3 past them if `oob`."""
  lo, extra = (-3, 3) if oob else (0, 0)
  cols = [rng.integers(lo, b + extra, shape[:-1]) for b in bounds]
  out = np.stack(cols, -1) if cols else np.zeros(shape, np.int64)
  if np.dtype(dtype).kind == "u":
    out = np.abs(out)
  return out.astype(dtype)


def _gdn(mod, d):
  return mod.GatherDimensionNumbers(**d)


def _sdn(mod, d):
  return mod.ScatterDimensionNumbers(**d)


# ---- gather ----------------------------------------------------------------------------------
# (operand shape, indices shape, dimension numbers, slice sizes, index bounds)
GATHER_CASES = {
    "take_axis0": ((5, 3), (4, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                        start_index_map=(0,)), (1, 3), [5]),
    "take_axis1": ((3, 5), (4, 1), dict(offset_dims=(0,), collapsed_slice_dims=(1,),
                                        start_index_map=(1,)), (3, 1), [5]),
    "points": ((4, 5), (6, 2), dict(offset_dims=(), collapsed_slice_dims=(0, 1),
                                    start_index_map=(0, 1)), (1, 1), [4, 5]),
    "points_swapped": ((4, 5), (3, 2), dict(offset_dims=(), collapsed_slice_dims=(0, 1),
                                            start_index_map=(1, 0)), (1, 1), [5, 4]),
    "windows": ((6, 7), (3, 2), dict(offset_dims=(1, 2), collapsed_slice_dims=(),
                                     start_index_map=(0, 1)), (2, 3), [5, 5]),
    "window_partial_index": ((6, 7), (3, 1), dict(offset_dims=(1, 2), collapsed_slice_dims=(),
                                                  start_index_map=(1,)), (6, 3), [5]),
    "batch2d_indices": ((5,), (2, 3, 1), dict(offset_dims=(), collapsed_slice_dims=(0,),
                                              start_index_map=(0,)), (1,), [5]),
    "offset_in_middle": ((4, 6), (2, 3, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,),
                                                 start_index_map=(0,)), (1, 6), [4]),
    "batching_dims": ((3, 5, 4), (3, 2, 1), dict(offset_dims=(2,), collapsed_slice_dims=(1,),
                                                 start_index_map=(1,), operand_batching_dims=(0,),
                                                 start_indices_batching_dims=(0,)),
                      (1, 1, 4), [5]),
    "batching_dims_trailing": ((5, 3), (4, 3, 1), dict(offset_dims=(), collapsed_slice_dims=(0,),
                                                       start_index_map=(0,),
                                                       operand_batching_dims=(1,),
                                                       start_indices_batching_dims=(1,)),
                               (1, 1), [5]),
}


def run_gather(case, dtype, mode, *, idx_dtype=np.int32, oob=True, jit=False, fill_value=None,
               seed=0):
  op_shape, idx_shape, dn, sizes, bounds = GATHER_CASES[case]
  rng = np.random.default_rng(seed)
  x = rand(op_shape, dtype, rng, ints=(-50, 50))
  i = indices(rng, idx_shape, bounds, oob, idx_dtype)
  kw = dict(mode=mode, fill_value=fill_value)
  want = lax.gather(jnp.asarray(x), jnp.asarray(i), _gdn(lax, dn), sizes, **kw)
  f = lambda x, i: alax.gather(x, i, _gdn(alax, dn), sizes, **kw)
  got = (arrax.jit(f) if jit else f)(A(x), A(i))
  assert_same(got, want, exact=True, check_weak=False)


@pytest.mark.parametrize("case", list(GATHER_CASES))
@pytest.mark.parametrize("mode", MODES)
def test_gather_cases_modes(case, mode):
  run_gather(case, np.float32, mode)


@pytest.mark.parametrize("case", ["take_axis0", "windows", "batching_dims"])
@pytest.mark.parametrize("mode", MODES)
def test_gather_jit(case, mode):
  run_gather(case, np.float32, mode, jit=True, seed=1)


@pytest.mark.parametrize("dtype", [np.int32, np.uint8, np.int8, BF16, np.bool_, np.complex64,
                                   np.float16])
@pytest.mark.parametrize("mode", ["fill", "clip"])
def test_gather_dtypes(dtype, mode):
  run_gather("take_axis0", dtype, mode)


@pytest.mark.parametrize("idx_dtype", [np.int8, np.int16, np.uint8, np.uint32])
@pytest.mark.parametrize("mode", MODES)
def test_gather_index_dtypes(idx_dtype, mode):
  run_gather("points", np.float32, mode, idx_dtype=idx_dtype)


@pytest.mark.parametrize("fill_value", [0, -1.5, 7])
def test_gather_explicit_fill_value(fill_value):
  run_gather("windows", np.float32, "fill", fill_value=fill_value)
  run_gather("take_axis1", np.int32, "fill", fill_value=int(fill_value))


def test_gather_default_mode():
  run_gather("take_axis0", np.float32, None)


def test_gather_enum_mode_object():
  x = np.arange(5, dtype=np.float32)
  i = np.array([[1], [9]], np.int32)
  dn = dict(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
  got = alax.gather(A(x), A(i), _gdn(alax, dn), (1,), mode=alax.GatherScatterMode.FILL_OR_DROP)
  want = lax.gather(x, i, _gdn(lax, dn), (1,), mode=lax.GatherScatterMode.FILL_OR_DROP)
  assert_same(got, want, exact=True, check_weak=False)


@pytest.mark.parametrize("jit", [False, True])
def test_gather_empty_indices(jit):
  x = np.arange(15, dtype=np.float32).reshape(5, 3)
  i = np.zeros((0, 1), np.int32)
  dn = GATHER_CASES["take_axis0"][2]
  for mode in MODES:
    f = lambda x, i: alax.gather(x, i, _gdn(alax, dn), (1, 3), mode=mode)
    got = (arrax.jit(f) if jit else f)(A(x), A(i))
    assert_same(got, lax.gather(x, i, _gdn(lax, dn), (1, 3), mode=mode), exact=True,
                check_weak=False)


def test_gather_empty_complex():
  x = np.ones((5, 3), np.complex64)
  i = np.zeros((0, 1), np.int32)
  dn = GATHER_CASES["take_axis0"][2]
  got = alax.gather(A(x), A(i), _gdn(alax, dn), (1, 3), mode="fill")
  assert_same(got, lax.gather(x, i, _gdn(lax, dn), (1, 3), mode="fill"), exact=True,
              check_weak=False)


def test_gather_zero_slice():
  x = np.arange(15, dtype=np.float32).reshape(5, 3)
  i = np.array([[1], [2]], np.int32)
  dn = dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,))
  got = alax.gather(A(x), A(i), _gdn(alax, dn), (1, 0))
  assert_same(got, lax.gather(x, i, _gdn(lax, dn), (1, 0)), exact=True, check_weak=False)


def test_gather_int64_indices_x64():
  x = np.arange(15, dtype=np.float32).reshape(5, 3)
  i = np.array([[1], [7], [-2], [4]])
  dn = GATHER_CASES["take_axis0"][2]
  want = lax.gather(x, i.astype(np.int32), _gdn(lax, dn), (1, 3), mode="fill")
  with arrax.enable_x64():
    ii = A(i)
    assert ii.dtype == np.int64
    got = alax.gather(A(x), ii, _gdn(alax, dn), (1, 3), mode="fill")
    assert_same(got, want, exact=True, check_weak=False)


def test_gather_weak_type_and_shape():
  dn = alax.GatherDimensionNumbers((1,), (0,), (0,))
  out = alax.gather_p.abstract_eval(
      ShapedArray((5, 3), np.float32, weak_type=True), ShapedArray((4, 1), np.int32),
      dimension_numbers=dn, slice_sizes=(1, 3), unique_indices=False, indices_are_sorted=False,
      mode=alax.GatherScatterMode.CLIP, fill_value=None)
  assert out == ShapedArray((4, 3), np.float32, weak_type=True)


def test_gather_default_fill_values():
  cases = [np.float32, BF16, np.complex64, np.int8, np.int32, np.uint8, np.uint32, np.bool_]
  for dt in cases:
    x = np.zeros((3,), dt)
    i = np.array([[5]], np.int32)
    dn = dict(offset_dims=(), collapsed_slice_dims=(0,), start_index_map=(0,))
    got = alax.gather(A(x), A(i), _gdn(alax, dn), (1,), mode="fill")
    want = lax.gather(x, i, _gdn(lax, dn), (1,), mode="fill")
    assert_same(got, want, exact=True, check_weak=False)


# ---- scatter ---------------------------------------------------------------------------------
# (operand shape, indices shape, updates shape, dimension numbers, index bounds)
SCATTER_CASES = {
    "rows": ((5, 3), (4, 1), (4, 3), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                          scatter_dims_to_operand_dims=(0,)), [5]),
    "points": ((4, 5), (6, 2), (6,), dict(update_window_dims=(), inserted_window_dims=(0, 1),
                                          scatter_dims_to_operand_dims=(0, 1)), [4, 5]),
    "windows": ((6, 7), (3, 2), (3, 2, 3), dict(update_window_dims=(1, 2),
                                                inserted_window_dims=(),
                                                scatter_dims_to_operand_dims=(0, 1)), [5, 5]),
    "dups_1d": ((5,), (8, 1), (8,), dict(update_window_dims=(), inserted_window_dims=(0,),
                                         scatter_dims_to_operand_dims=(0,)), [5]),
    "batch2d_indices": ((5,), (2, 3, 1), (2, 3), dict(update_window_dims=(),
                                                      inserted_window_dims=(0,),
                                                      scatter_dims_to_operand_dims=(0,)), [5]),
    "batching_dims": ((3, 5, 4), (3, 2, 1), (3, 2, 4),
                      dict(update_window_dims=(2,), inserted_window_dims=(1,),
                           scatter_dims_to_operand_dims=(1,), operand_batching_dims=(0,),
                           scatter_indices_batching_dims=(0,)), [5]),
}

SCATTER_OPS = ["scatter", "scatter_add", "scatter_sub", "scatter_mul", "scatter_min",
               "scatter_max"]


def run_scatter(op, case, dtype, mode, *, idx_dtype=np.int32, oob=True, jit=False, seed=0,
                **kw):
  op_shape, idx_shape, upd_shape, dn, bounds = SCATTER_CASES[case]
  rng = np.random.default_rng(seed)
  x = rand(op_shape, dtype, rng, ints=(-50, 50))
  u = rand(upd_shape, dtype, rng, ints=(-50, 50))
  i = indices(rng, idx_shape, bounds, oob, idx_dtype)
  kw = dict(mode=mode, **kw)
  want = getattr(lax, op)(jnp.asarray(x), jnp.asarray(i), jnp.asarray(u), _sdn(lax, dn), **kw)
  f = lambda x, i, u: getattr(alax, op)(x, i, u, _sdn(alax, dn), **kw)
  got = (arrax.jit(f) if jit else f)(A(x), A(i), A(u))
  assert_same(got, want, exact=True, check_weak=False)


@pytest.mark.parametrize("case", list(SCATTER_CASES))
@pytest.mark.parametrize("op", SCATTER_OPS)
def test_scatter_ops_cases(op, case):
  run_scatter(op, case, np.float32, None)


@pytest.mark.parametrize("case", ["rows", "windows", "batching_dims"])
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
def test_scatter_modes(op, case, mode):
  run_scatter(op, case, np.float32, mode, seed=2)


@pytest.mark.parametrize("op", SCATTER_OPS)
@pytest.mark.parametrize("mode", ["clip", "fill"])
def test_scatter_jit(op, mode):
  run_scatter(op, "windows", np.float32, mode, jit=True, seed=3)


@pytest.mark.parametrize("dtype", [np.int32, BF16, np.complex64, np.uint8])
@pytest.mark.parametrize("op", ["scatter", "scatter_add", "scatter_mul"])
def test_scatter_dtypes(op, dtype):
  run_scatter(op, "dups_1d", dtype, "clip")


@pytest.mark.parametrize("dtype", [np.int32, BF16, np.bool_, np.int8])
@pytest.mark.parametrize("op", ["scatter", "scatter_min", "scatter_max"])
def test_scatter_ordered_dtypes(op, dtype):
  run_scatter(op, "points", dtype, "fill")


@pytest.mark.parametrize("idx_dtype", [np.int8, np.uint8, np.uint32])
@pytest.mark.parametrize("mode", MODES)
def test_scatter_index_dtypes(idx_dtype, mode):
  run_scatter("scatter_add", "points", np.float32, mode, idx_dtype=idx_dtype)


def test_scatter_add_duplicates():
  x = np.zeros((4,), np.float32)
  i = np.array([[0], [1], [0], [0], [3], [1]], np.int32)
  rng = np.random.default_rng(7)
  u = rng.standard_normal(6).astype(np.float32)
  dn = SCATTER_CASES["dups_1d"][3]
  for jit in (False, True):
    f = lambda x, i, u: alax.scatter_add(x, i, u, _sdn(alax, dn))
    got = (arrax.jit(f) if jit else f)(A(x), A(i), A(u))
    assert_same(got, lax.scatter_add(x, i, u, _sdn(lax, dn)), exact=True, check_weak=False)


def test_scatter_clip_narrow_index_dtype():
  # Index dtype narrower than the operand's extent: the clamp bound saturates at 255.
  x = np.zeros((300,), np.float32)
  i = np.array([[0], [255], [7], [200]], np.uint8)
  u = np.arange(1, 5, dtype=np.float32)
  dn = SCATTER_CASES["dups_1d"][3]
  for mode in MODES:
    got = alax.scatter_add(A(x), A(i), A(u), _sdn(alax, dn), mode=mode)
    assert_same(got, lax.scatter_add(x, i, u, _sdn(lax, dn), mode=mode), exact=True,
                check_weak=False)


def test_scatter_int64_indices_x64():
  x = np.zeros((5, 3), np.float32)
  i = np.array([[1], [7], [-2], [4]])
  u = np.ones((4, 3), np.float32)
  dn = SCATTER_CASES["rows"][3]
  for mode in MODES:
    want = lax.scatter_add(x, i.astype(np.int32), u, _sdn(lax, dn), mode=mode)
    with arrax.enable_x64():
      ii = A(i)
      assert ii.dtype == np.int64
      f = arrax.jit(lambda x, i, u: alax.scatter_add(x, i, u, _sdn(alax, dn), mode=mode))
      assert_same(f(A(x), ii, A(u)), want, exact=True, check_weak=False)


def test_scatter_flags():
  run_scatter("scatter_add", "points", np.float32, "promise_in_bounds", oob=False,
              indices_are_sorted=True, unique_indices=True)


@pytest.mark.parametrize("jit", [False, True])
def test_scatter_empty_indices(jit):
  x = np.arange(15, dtype=np.float32).reshape(5, 3)
  i = np.zeros((0, 1), np.int32)
  u = np.zeros((0, 3), np.float32)
  dn = SCATTER_CASES["rows"][3]
  for op in ["scatter", "scatter_add"]:
    f = lambda x, i, u: getattr(alax, op)(x, i, u, _sdn(alax, dn))
    got = (arrax.jit(f) if jit else f)(A(x), A(i), A(u))
    assert_same(got, getattr(lax, op)(x, i, u, _sdn(lax, dn)), exact=True, check_weak=False)


def test_scatter_scalar_updates_literal():
  x = np.arange(6, dtype=np.float32).reshape(2, 3)
  i = np.array([0, 1], np.int32)
  dn = dict(update_window_dims=(), inserted_window_dims=(0, 1),
            scatter_dims_to_operand_dims=(0, 1))
  want = lax.scatter_add(x, i, 1.0, _sdn(lax, dn))
  assert_same(alax.scatter_add(A(x), A(i), 1.0, _sdn(alax, dn)), want, exact=True, check_weak=False)
  f = arrax.jit(lambda x, i: alax.scatter_add(x, i, 1.0, _sdn(alax, dn)))
  assert_same(f(A(x), A(i)), want, exact=True, check_weak=False)


@pytest.mark.parametrize("jit", [False, True])
def test_scatter_apply(jit):
  x = np.arange(15, dtype=np.float32).reshape(5, 3)
  i = np.array([[0], [3], [0], [9]], np.int32)
  dn = SCATTER_CASES["rows"][3]
  want = lax.scatter_apply(x, i, jnp.sin, _sdn(lax, dn), update_shape=(4, 3))
  f = lambda x, i: alax.scatter_apply(x, i, alax.sin, _sdn(alax, dn), update_shape=(4, 3))
  got = (arrax.jit(f) if jit else f)(A(x), A(i))
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)


def test_scatter_apply_scalar_update_shape():
  x = np.arange(5, dtype=np.float32)
  i = np.array([2], np.int32)
  dn = dict(update_window_dims=(), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,))
  want = lax.scatter_apply(x, i, lambda v: v * 2, _sdn(lax, dn))
  got = alax.scatter_apply(A(x), A(i), lambda v: alax.mul(v, 2.0), _sdn(alax, dn))
  assert_same(got, want, exact=True, check_weak=False)


def test_scatter_weak_type():
  dn = alax.ScatterDimensionNumbers((1,), (0,), (0,))
  out = alax.scatter_add_p.abstract_eval(
      ShapedArray((5, 3), np.float32, weak_type=True), ShapedArray((4, 1), np.int32),
      ShapedArray((4, 3), np.float32), dimension_numbers=dn, indices_are_sorted=False,
      unique_indices=False, mode=alax.GatherScatterMode.CLIP, update_jaxpr=None,
      update_consts=())
  assert out == ShapedArray((5, 3), np.float32, weak_type=True)


# ---- the API's small types ------------------------------------------------------------------
def test_dimension_numbers_repr():
  g = dict(offset_dims=(0,), collapsed_slice_dims=(1,), start_index_map=(1,))
  assert repr(alax.GatherDimensionNumbers(**g)) == repr(lax.GatherDimensionNumbers(**g))
  s = dict(update_window_dims=(0,), inserted_window_dims=(0,), scatter_dims_to_operand_dims=(0,),
           operand_batching_dims=(1,), scatter_indices_batching_dims=(0,))
  assert repr(alax.ScatterDimensionNumbers(**s)) == repr(lax.ScatterDimensionNumbers(**s))
  assert alax.GatherDimensionNumbers._fields == lax.GatherDimensionNumbers._fields
  assert alax.ScatterDimensionNumbers._fields == lax.ScatterDimensionNumbers._fields


def test_gather_scatter_mode():
  assert [m.name for m in alax.GatherScatterMode] == [m.name for m in lax.GatherScatterMode]
  for s in ["clip", "fill", "drop", "promise_in_bounds", None,
            alax.GatherScatterMode.CLIP]:
    js = getattr(lax.GatherScatterMode, s.name) if isinstance(s, alax.GatherScatterMode) else s
    assert alax.GatherScatterMode.from_any(s).name == lax.GatherScatterMode.from_any(js).name
  assert str(alax.GatherScatterMode.FILL_OR_DROP) == str(lax.GatherScatterMode.FILL_OR_DROP)
  with pytest.raises(ValueError):
    alax.GatherScatterMode.from_any("wrap")


def test_primitive_names():
  for ours, theirs in [(alax.gather_p, lax.gather_p), (alax.scatter_p, lax.scatter_p),
                       (alax.scatter_add_p, lax.scatter_add_p),
                       (alax.scatter_sub_p, lax.scatter_sub_p),
                       (alax.scatter_mul_p, lax.scatter_mul_p),
                       (alax.scatter_min_p, lax.scatter_min_p),
                       (alax.scatter_max_p, lax.scatter_max_p)]:
    assert ours.name == theirs.name


# ---- errors ----------------------------------------------------------------------------------
BAD_GATHERS = [
    # (operand shape, indices shape, dimension numbers, slice sizes, index dtype)
    ((5, 3), (4, 1), dict(offset_dims=(1, 0), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 3), np.int32),
    ((5, 3), (4, 1), dict(offset_dims=(2,), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 3), np.int32),
    ((5, 3), (4, 2), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 3), np.int32),
    ((5, 3), (4, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(2,)),
     (1, 3), np.int32),
    ((5, 3), (4, 2), dict(offset_dims=(), collapsed_slice_dims=(0, 1), start_index_map=(0, 0)),
     (1, 1), np.int32),
    ((5, 3), (4, 2), dict(offset_dims=(), collapsed_slice_dims=(1, 0), start_index_map=(0, 1)),
     (1, 1), np.int32),
    ((5, 3), (4, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (2, 3), np.int32),
    ((5, 3), (4, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 4), np.int32),
    ((5, 3), (4, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 3, 1), np.int32),
    ((5, 3), (4, 1), dict(offset_dims=(0, 1), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 3), np.int32),
    ((3, 5, 4), (3, 2, 1), dict(offset_dims=(2,), collapsed_slice_dims=(1,),
                                start_index_map=(1,), operand_batching_dims=(0,),
                                start_indices_batching_dims=()), (1, 1, 4), np.int32),
    ((3, 5, 4), (2, 2, 1), dict(offset_dims=(2,), collapsed_slice_dims=(1,),
                                start_index_map=(1,), operand_batching_dims=(0,),
                                start_indices_batching_dims=(0,)), (1, 1, 4), np.int32),
    ((3, 5, 4), (3, 2, 1), dict(offset_dims=(2,), collapsed_slice_dims=(1,),
                                start_index_map=(1,), operand_batching_dims=(0,),
                                start_indices_batching_dims=(2,)), (1, 1, 4), np.int32),
    ((3, 5, 4), (3, 2, 1), dict(offset_dims=(2,), collapsed_slice_dims=(0, 1),
                                start_index_map=(1,), operand_batching_dims=(0,),
                                start_indices_batching_dims=(0,)), (1, 1, 4), np.int32),
    ((5, 3), (4, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 3), np.float32),
    ((5, 3), (4, 1), dict(offset_dims=(1,), collapsed_slice_dims=(0,), start_index_map=(0,)),
     (1, 3), np.bool_),
]


@pytest.mark.parametrize("case", range(len(BAD_GATHERS)))
def test_gather_errors(case):
  op_shape, idx_shape, dn, sizes, idt = BAD_GATHERS[case]
  x, i = np.zeros(op_shape, np.float32), np.zeros(idx_shape, idt)
  same_exception(lambda: alax.gather(A(x), A(i), _gdn(alax, dn), sizes),
                 raised(lambda: jax.eval_shape(
                     lambda x, i: lax.gather(x, i, _gdn(lax, dn), sizes), x, i)))


BAD_SCATTERS = [
    # (operand shape, indices shape, updates shape, dimension numbers, index dtype, upd dtype)
    ((5, 3), (4, 1), (4, 3, 1), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                     scatter_dims_to_operand_dims=(0,)), np.int32, np.float32),
    ((5, 3), (4, 1), (4, 3), dict(update_window_dims=(2,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,)), np.int32, np.float32),
    ((5, 3), (4, 1), (4, 3), dict(update_window_dims=(1,), inserted_window_dims=(),
                                  scatter_dims_to_operand_dims=(0,)), np.int32, np.float32),
    ((5, 3), (4, 2), (4, 3), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,)), np.int32, np.float32),
    ((5, 3), (4, 1), (4, 3), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(3,)), np.int32, np.float32),
    ((5, 3), (4, 1), (4, 4), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,)), np.int32, np.float32),
    ((5, 3), (4, 1), (3, 3), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,)), np.int32, np.float32),
    ((5, 3), (4, 2), (4,), dict(update_window_dims=(), inserted_window_dims=(1, 0),
                                scatter_dims_to_operand_dims=(0, 1)), np.int32, np.float32),
    ((5, 3), (4, 2), (4,), dict(update_window_dims=(), inserted_window_dims=(0, 1),
                                scatter_dims_to_operand_dims=(1, 1)), np.int32, np.float32),
    ((3, 5, 4), (3, 2, 1), (3, 2, 4), dict(update_window_dims=(2,), inserted_window_dims=(1,),
                                           scatter_dims_to_operand_dims=(1,),
                                           operand_batching_dims=(0,),
                                           scatter_indices_batching_dims=(1,)),
     np.int32, np.float32),
    ((3, 5, 4), (3, 2, 1), (2, 2, 4), dict(update_window_dims=(2,), inserted_window_dims=(1,),
                                           scatter_dims_to_operand_dims=(1,),
                                           operand_batching_dims=(0,),
                                           scatter_indices_batching_dims=(0,)),
     np.int32, np.float32),
    ((5, 3), (4, 1), (4, 3), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,)), np.float32, np.float32),
    ((5, 3), (4, 1), (4, 3), dict(update_window_dims=(1,), inserted_window_dims=(0,),
                                  scatter_dims_to_operand_dims=(0,)), np.int32, np.int32),
]


@pytest.mark.parametrize("op", ["scatter", "scatter_add"])
@pytest.mark.parametrize("case", range(len(BAD_SCATTERS)))
def test_scatter_errors(case, op):
  op_shape, idx_shape, upd_shape, dn, idt, udt = BAD_SCATTERS[case]
  x = np.zeros(op_shape, np.float32)
  i, u = np.zeros(idx_shape, idt), np.zeros(upd_shape, udt)
  same_exception(lambda: getattr(alax, op)(A(x), A(i), A(u), _sdn(alax, dn)),
                 raised(lambda: jax.eval_shape(
                     lambda x, i, u: getattr(lax, op)(x, i, u, _sdn(lax, dn)), x, i, u)))


def test_scatter_add_bool_rejected():
  dn = SCATTER_CASES["dups_1d"][3]
  x, i, u = np.zeros(5, bool), np.zeros((2, 1), np.int32), np.ones(2, bool)
  same_exception(lambda: alax.scatter_add(A(x), A(i), A(u), _sdn(alax, dn)),
                 raised(lambda: lax.scatter_add(x, i, u, _sdn(lax, dn))))


def test_unknown_mode_rejected():
  dn = GATHER_CASES["take_axis0"][2]
  x, i = np.zeros((5, 3), np.float32), np.zeros((2, 1), np.int32)
  with pytest.raises(ValueError):
    alax.gather(A(x), A(i), _gdn(alax, dn), (1, 3), mode="wrap")


# ---- jaxpr text ------------------------------------------------------------------------------
def test_jaxpr_text():
  x, u = np.zeros((3, 4), np.float32), np.zeros((4, 4), np.float32)
  i = np.zeros((4, 1), np.int32)
  gdn, sdn = GATHER_CASES["take_axis0"][2], SCATTER_CASES["rows"][3]
  fns = [
      lambda m: lambda x, i, u: m.gather(x, i, _gdn(m, gdn), (1, 4), mode="fill"),
      lambda m: lambda x, i, u: m.gather(x, i, _gdn(m, gdn), (1, 4), mode="clip",
                                         indices_are_sorted=True),
      lambda m: lambda x, i, u: m.scatter(x, i, u, _sdn(m, sdn)),
      lambda m: lambda x, i, u: m.scatter_add(x, i, u, _sdn(m, sdn), mode="clip"),
      lambda m: lambda x, i, u: m.scatter_max(x, i, u, _sdn(m, sdn), unique_indices=True),
  ]
  for make in fns:
    want = str(jax.make_jaxpr(make(lax))(x, i, u))
    assert str(arrax.make_jaxpr(make(alax))(A(x), A(i), A(u))) == want
  pdn = dict(update_window_dims=(), inserted_window_dims=(0, 1),
             scatter_dims_to_operand_dims=(0, 1))
  i2 = np.zeros(2, np.int32)
  want = str(jax.make_jaxpr(lambda x, i: lax.scatter_add(x, i, 1.0, _sdn(lax, pdn)))(x, i2))
  got = str(arrax.make_jaxpr(lambda x, i: alax.scatter_add(x, i, 1.0, _sdn(alax, pdn)))(
      A(x), A(i2)))
  assert got == want
