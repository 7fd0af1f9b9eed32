"""Grouped matrix multiplication as TPU Pallas kernels
(jax.experimental.pallas.ops.tpu.megablox): the rows of `lhs` are split into consecutive
groups (`group_sizes`) and each group is multiplied by its own matrix (`gmm`); `tgmm` computes,
per group, the product of the group's columns of `lhs` with its rows of `rhs` (the weight
gradient of `gmm`); `ops.gmm` is `gmm` with that VJP.

The kernels run over tiles: `gmm` over (n tiles, m tiles, groups, k tiles), accumulating a
tile's product in a float32 scratch buffer and storing the rows of the current group; `tgmm`
over (n tiles, k tiles, groups, m tiles), masking the rows outside the group. The group
boundaries are scalar-prefetch operands. Off-TPU they run with `interpret=True`."""
from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any, Optional

import numpy as np

from arrax._src import backend, custom_derivatives, dtypes, jit
from arrax._src.api import ShapeDtypeStruct
from arrax._src.lax import broadcasting, dot as lax_dot, elementwise as lax
from arrax._src.numpy import assembly, creation, lax_numpy, reductions, statistics
from arrax._src.pallas import core as pallas_core, helpers, pallas_call, primitives, tpu

# A tiling lookup: (m, k, n) -> (tm, tk, tn), or None when no tiling is known.
LutFn = Callable[[int, int, int], Optional[tuple[int, int, int]]]
GroupMetadata = Any

_BF16 = np.dtype(dtypes.bfloat16)
_F32 = np.dtype(np.float32)


# ---- common (megablox.common) ----------------------------------------------------------------------
def is_tpu() -> bool:
  """Whether the default device is a TPU."""
  return "TPU" in backend.devices()[0].device_kind


def tpu_kind() -> str:
  """The device kind of the default device."""
  return backend.devices()[0].device_kind


def tpu_generation() -> int:
  """The TPU generation of the default device (NotImplementedError off-TPU)."""
  found = re.match(r"TPU( v)?(\d+)", tpu_kind())
  if found:
    return int(found[2])
  raise NotImplementedError("only TPU devices are supported")


def supports_bfloat16_matmul() -> bool:
  """Whether bfloat16 operands can be multiplied as they are (not on TPUs before v4)."""
  return not is_tpu() or tpu_generation() >= 4


def assert_is_supported_dtype(dtype) -> None:
  """ValueError unless `dtype` is bfloat16 or float32."""
  if np.dtype(dtype) not in (_BF16, _F32):
    raise ValueError(f"Expected bfloat16 or float32 array but got {dtype}.")


def select_input_dtype(lhs, rhs):
  """The dtype both operands are converted to before multiplying."""
  if supports_bfloat16_matmul() and np.dtype(lhs.dtype) == _BF16 == np.dtype(rhs.dtype):
    return dtypes.bfloat16
  return np.float32


# ---- shared pieces ---------------------------------------------------------------------------------
def _validate(lhs, rhs, group_sizes, rhs_ndim):
  if lhs.ndim != 2:
    raise ValueError(f"Expected 2-tensor for 'lhs' but got {lhs.ndim}-tensor.")
  assert_is_supported_dtype(lhs.dtype)
  if rhs.ndim != rhs_ndim:
    raise ValueError(f"Expected {rhs_ndim}-tensor for 'rhs' but got {rhs.ndim}-tensor.")
  assert_is_supported_dtype(rhs.dtype)
  if np.dtype(group_sizes.dtype) != np.dtype(np.int32):
    raise ValueError(f"Expected 32-bit integer 'group_sizes' but got {group_sizes.dtype}.")
  return select_input_dtype(lhs, rhs)


def _tiles(size, tile, exact=False):
  count, rem = divmod(size, tile)
  if rem and exact:
    raise ValueError(f"{size} must be divisible by x-dimension tile size ({tile}).")
  return count + (rem > 0), rem


def _resolve_tiling(tiling, m, k, n):
  if callable(tiling):
    tiling = tiling(m, k, n)
  if tiling is None:
    raise ValueError(f"No tuned tiling found for (m, k, n) = ({m}, {k}, {n})")
  return tiling


def _offsets(group_sizes):
  """[0, s0, s0 + s1, ...]: where each group's rows start (and the last one ends)."""
  return lax_numpy.concatenate([creation.zeros((1,), np.int32),
                                reductions.cumsum(group_sizes).astype(np.int32)])


def _group_offset(group_offset):
  if group_offset is None:
    return creation.zeros((1,), np.int32)
  if group_offset.shape:
    raise ValueError(f"group_offset must be a ()-shaped array. Got: {group_offset.shape}.")
  return group_offset[None]


def _in_group(shape, dim, first, offsets_ref, goff_ref):
  """The mask of the positions (along `dim`, counted from `first`) in the current group."""
  group = primitives.program_id(2) + goff_ref[0]
  pos = broadcasting.broadcasted_iota(np.int32, shape, dim) + first
  return lax.bitwise_and(pos >= offsets_ref[group], pos < offsets_ref[group + 1])


def _below(x, dim, first, limit):
  """`x` with the positions (along `dim`, counted from `first`) at or past `limit` zeroed."""
  pos = broadcasting.broadcasted_iota(np.int32, x.shape, dim) + first
  return lax_numpy.where(pos < limit, x.astype(np.float32), 0).astype(x.dtype)


def _dot(a, b, dims, input_dtype):
  return lax_dot.dot_general(a.astype(input_dtype), b.astype(input_dtype), (dims, ((), ())),
                             preferred_element_type=np.float32)


def _grouped_call(kernel, out_shape, grid, in_specs, out_spec, acc_shape, group_sizes, goff,
                  lhs, rhs, existing_out, interpret):
  """The pallas_call of a grouped kernel: group offsets and `goff` prefetched, then `lhs`,
  `rhs` (and `existing_out`, blocked like the output), a float32 accumulator `acc_shape`."""
  operands = [lhs, rhs]
  if existing_out is not None:
    in_specs = [*in_specs, out_spec]
    operands.append(existing_out)
  return pallas_call.pallas_call(
      kernel, out_shape=out_shape,
      grid_spec=tpu.PrefetchScalarGridSpec(
          num_scalar_prefetch=2, grid=grid, in_specs=in_specs, out_specs=out_spec,
          scratch_shapes=[tpu.MemorySpace.VMEM(acc_shape, np.float32)]),
      compiler_params=tpu.CompilerParams(
          dimension_semantics=("parallel", "arbitrary", "arbitrary", "arbitrary")),
      interpret=interpret)(_offsets(group_sizes), goff, *operands)


def make_group_metadata(*, group_sizes, m: int, tm: int, start_group, num_nonzero_groups: int,
                        visit_empty_groups: bool = True) -> GroupMetadata:
  """The tile schedule of a grouped matmul over `m` rows in `tm`-row tiles:
  ((group_offsets [groups + 1], group_ids and m_tile_ids [m // tm + groups - 1] per grid
  index, the ones of the groups from `start_group` first), number of tiles to run for the
  `num_nonzero_groups` groups from `start_group`). A tile shared by groups is visited once per
  group; with `visit_empty_groups` an empty group gets one tile too."""
  groups = group_sizes.shape[0]
  end_group = start_group + num_nonzero_groups - 1
  ends = reductions.cumsum(group_sizes)
  zero = creation.zeros((1,), np.int32)
  offsets = lax_numpy.concatenate([zero, ends])
  starts = lax_numpy.concatenate([zero, ends[:-1]])
  empty = group_sizes == 0
  # Tiles each group touches: its rows widened to whole tiles (none for an empty group).
  rounded = ((ends + tm - 1) // tm * tm).astype(np.int32) - starts // tm * tm
  group_tiles = lax_numpy.where(empty, 0, rounded) // tm
  if visit_empty_groups:
    group_tiles = lax_numpy.where(empty, 1, group_tiles)
  tiles_m, _ = _tiles(m, tm, exact=True)
  length = tiles_m + groups - 1
  group_ids = assembly.repeat(creation.arange(groups, dtype=np.int32), group_tiles,
                              total_repeat_length=length)
  # Each tile is visited once by the group owning its first row, and once more by every
  # (non-empty, or with `visit_empty_groups` any) group starting inside it.
  not_partial = lax.bitwise_or(offsets[:-1] % tm == 0, empty)
  if visit_empty_groups:
    not_partial = lax_numpy.where(empty, 0, not_partial)
  partial_ids = lax_numpy.where(not_partial, tiles_m, offsets[:-1] // tm)
  visits = statistics.histogram(partial_ids, bins=tiles_m, range=(0, tiles_m - 1))[0] + 1
  m_tile_ids = assembly.repeat(creation.arange(tiles_m, dtype=np.int32),
                               visits.astype(np.int32), total_repeat_length=length)
  # The tiles of this shard's groups first.
  shift = -reductions.sum(group_ids < start_group)
  group_ids = assembly.roll(group_ids, shift=shift, axis=0)
  m_tile_ids = assembly.roll(m_tile_ids, shift=shift, axis=0)
  ids = creation.arange(groups, dtype=np.int32)
  active = lax.bitwise_and(ids <= end_group, ids >= start_group)
  num_tiles = reductions.sum(lax_numpy.where(active, group_tiles, 0))
  return (offsets, group_ids, m_tile_ids), num_tiles


# ---- gmm -------------------------------------------------------------------------------------------
@functools.partial(jit.jit, static_argnames=["preferred_element_type", "tiling", "transpose_rhs",
                                             "interpret"])
def gmm(lhs, rhs, group_sizes, preferred_element_type=np.float32, tiling=(128, 128, 128),
        group_offset=None, existing_out=None, transpose_rhs: bool = False,
        interpret: bool = False):
  """For each group i of rows of `lhs` [m, k] (`group_sizes`), those rows times `rhs[i]`
  ([k, n], or [n, k] with `transpose_rhs`); `rhs` holds the groups from `group_offset` on.
  Rows of no computed group are zero (or those of `existing_out`)."""
  if existing_out is not None and np.dtype(existing_out.dtype) != np.dtype(
      preferred_element_type):
    raise ValueError("Existing output dtype must match preferred_element_type.")
  goff = _group_offset(group_offset)
  input_dtype = _validate(lhs, rhs, group_sizes, 3)
  m, k = lhs.shape
  n = rhs.shape[1] if transpose_rhs else rhs.shape[2]
  tm, tk, tn = _resolve_tiling(tiling, m, k, n)
  tiles_m, _ = _tiles(m, tm, exact=True)
  tiles_k, k_rem = _tiles(k, tk)
  tiles_n, _ = _tiles(n, tn)
  groups = rhs.shape[0]
  out_dtype = np.dtype(preferred_element_type)
  has_existing = existing_out is not None

  def kernel(offsets_ref, goff_ref, lhs_ref, rhs_ref, *refs):
    existing_ref, out_ref, acc_ref = refs if has_existing else (None, *refs)
    m_i, g, k_i = primitives.program_id(1), primitives.program_id(2), primitives.program_id(3)

    @helpers.when(lax.bitwise_and(g == 0, k_i == 0))
    def _():
      out_ref[...] = (existing_ref[...] if has_existing
                      else creation.zeros(out_ref.shape, out_ref.dtype))

    @helpers.when(k_i == 0)
    def _():
      acc_ref[...] = creation.zeros(acc_ref.shape, np.float32)

    a, b = lhs_ref[...], rhs_ref[...]
    if k_rem:
      a = _below(a, 1, k_i * tk, k)
      b = _below(b, 1 if transpose_rhs else 0, k_i * tk, k)
    acc_ref[...] = acc_ref[...] + _dot(a, b, ((1,), (1,) if transpose_rhs else (0,)),
                                       input_dtype)

    @helpers.when(k_i == tiles_k - 1)
    def _():
      rows = _in_group(acc_ref.shape, 0, m_i * tm, offsets_ref, goff_ref)
      out_ref[...] = lax_numpy.where(rows, acc_ref[...],
                                     out_ref[...].astype(np.float32)).astype(out_dtype)

  spec = pallas_core.BlockSpec
  out_spec = spec((tm, tn), lambda n_i, m_i, g, k_i, *_: (m_i, n_i))
  rhs_spec = (spec((None, tn, tk), lambda n_i, m_i, g, k_i, *_: (g, n_i, k_i)) if transpose_rhs
              else spec((None, tk, tn), lambda n_i, m_i, g, k_i, *_: (g, k_i, n_i)))
  in_specs = [spec((tm, tk), lambda n_i, m_i, g, k_i, *_: (m_i, k_i)), rhs_spec]
  return _grouped_call(kernel, ShapeDtypeStruct((m, n), out_dtype),
                       (tiles_n, tiles_m, groups, tiles_k), in_specs, out_spec, (tm, tn),
                       group_sizes, goff, lhs, rhs, existing_out, interpret)


# ---- tgmm ------------------------------------------------------------------------------------------
@functools.partial(jit.jit, static_argnames=["preferred_element_type", "tiling",
                                             "num_actual_groups", "interpret"])
def tgmm(lhs, rhs, group_sizes, preferred_element_type=np.float32, tiling=(128, 128, 128),
         group_offset=None, num_actual_groups: int | None = None, existing_out=None,
         interpret: bool = False):
  """For each group i (of `num_actual_groups` from `group_offset` on) of columns of `lhs`
  [k, m] and rows of `rhs` [m, n], their product ([num_actual_groups, k, n], plus
  `existing_out` if given)."""
  goff = _group_offset(group_offset)
  input_dtype = _validate(lhs, rhs, group_sizes, 2)
  k, m = lhs.shape
  n = rhs.shape[1]
  groups = group_sizes.shape[0] if num_actual_groups is None else num_actual_groups
  tm, tk, tn = _resolve_tiling(tiling, m, k, n)
  tiles_m, _ = _tiles(m, tm, exact=True)
  tiles_k, _ = _tiles(k, tk)
  tiles_n, _ = _tiles(n, tn)
  out_dtype = np.dtype(preferred_element_type)
  has_existing = existing_out is not None

  def kernel(offsets_ref, goff_ref, lhs_ref, rhs_ref, *refs):
    existing_ref, out_ref, acc_ref = refs if has_existing else (None, *refs)
    m_i = primitives.program_id(3)

    @helpers.when(m_i == 0)
    def _():
      acc_ref[...] = creation.zeros(acc_ref.shape, np.float32)

    first = m_i * tm
    a = lax_numpy.where(_in_group(lhs_ref.shape, 1, first, offsets_ref, goff_ref),
                        lhs_ref[...].astype(np.float32), 0)
    b = lax_numpy.where(_in_group(rhs_ref.shape, 0, first, offsets_ref, goff_ref),
                        rhs_ref[...].astype(np.float32), 0)
    acc_ref[...] = acc_ref[...] + _dot(a, b, ((1,), (0,)), input_dtype)

    @helpers.when(m_i == tiles_m - 1)
    def _():
      total = acc_ref[...]
      if has_existing:
        total = total + existing_ref[...].astype(np.float32)
      out_ref[...] = total.astype(out_dtype)

  spec = pallas_core.BlockSpec
  out_spec = spec((None, tk, tn), lambda n_i, k_i, g, m_i, *_: (g, k_i, n_i))
  in_specs = [spec((tk, tm), lambda n_i, k_i, g, m_i, *_: (k_i, m_i)),
              spec((tm, tn), lambda n_i, k_i, g, m_i, *_: (m_i, n_i))]
  return _grouped_call(kernel, ShapeDtypeStruct((groups, k, n), out_dtype),
                       (tiles_n, tiles_k, groups, tiles_m), in_specs, out_spec, (tk, tn),
                       group_sizes, goff, lhs, rhs, existing_out, interpret)


# ---- gmm with its VJP (megablox.ops) ----------------------------------------------------------------
def _gmm_fwd(lhs, rhs, group_sizes, preferred_element_type=np.float32, tiling=(128, 128, 128),
             group_offset=None, existing_out=None, transpose_rhs=False, interpret=False):
  out = gmm(lhs, rhs, group_sizes, preferred_element_type, tiling, group_offset, existing_out,
            transpose_rhs=transpose_rhs, interpret=interpret)
  return out, (lhs, rhs, group_sizes, group_offset, rhs.shape[0])


def _gmm_bwd(preferred_element_type, tiling, transpose_rhs, interpret, residual, grad):
  lhs, rhs, group_sizes, group_offset, groups = residual
  d_lhs = gmm(grad, rhs, group_sizes, lhs[0].dtype, tiling, group_offset,
              transpose_rhs=not transpose_rhs, interpret=interpret)
  d_rhs = tgmm(lhs.swapaxes(0, 1), grad, group_sizes, rhs.dtype, tiling, group_offset, groups,
               interpret=interpret)
  if transpose_rhs:
    d_rhs = d_rhs.swapaxes(1, 2)
  return d_lhs, d_rhs, None, None, grad


ops_gmm = custom_derivatives.custom_vjp(gmm, nondiff_argnums=(3, 4, 7, 8))
ops_gmm.defvjp(_gmm_fwd, _gmm_bwd)
