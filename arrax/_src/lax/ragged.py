"""Ragged matrix products: `ragged_dot` and `ragged_dot_general`.

One axis of `lhs` (its ragged dimension) is cut into consecutive groups of `group_sizes`
rows, and each group is multiplied by its own operand. Three modes, by the kind of the
ragged axis: non-contracting ([m, k] x [g, k, n] -> [m, n], rhs has a group axis), contracting
([m, k] x [k, n] -> [g, m, n], one product per group of the contraction) and batch.

On CPU the primitive lowers, as JAX's does, to a dense computation: the ragged operand is
spread over a new group axis (zeros outside each group) and contracted with `dot_general`.
Derivatives: JVP in every mode; transpose (reverse mode) in the non-contracting mode, as in
JAX. vmap needs all three operands batched at axis 0 (as in JAX).
"""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from arrax._src import ad, core, dtypes
from arrax._src.core import ShapedArray
from arrax._src.lax import broadcasting, creation, reductions, shape_ops
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import common
from arrax._src.lax.utils import _out_sharding, asarray_operand

__all__ = ["RaggedDotDimensionNumbers", "ragged_dot", "ragged_dot_general"]


@dataclasses.dataclass(frozen=True)
class RaggedDotDimensionNumbers:
  """The dimension numbers of a ragged dot: `dot_dimension_numbers` as for dot_general
  (((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch))), the lhs ragged dimension
  (one) and the rhs group dimensions (one in the non-contracting mode, none otherwise)."""
  dot_dimension_numbers: Any
  lhs_ragged_dimensions: Sequence[int]
  rhs_group_dimensions: Sequence[int]

  def __init__(self, dot_dimension_numbers, lhs_ragged_dimensions, rhs_group_dimensions):
    object.__setattr__(self, "dot_dimension_numbers",
                       tuple(tuple(map(tuple, t)) for t in dot_dimension_numbers))
    object.__setattr__(self, "lhs_ragged_dimensions", tuple(lhs_ragged_dimensions))
    object.__setattr__(self, "rhs_group_dimensions", tuple(rhs_group_dimensions))


_BASIC = RaggedDotDimensionNumbers(dot_dimension_numbers=(([1], [1]), ([], [])),
                                   lhs_ragged_dimensions=[0], rhs_group_dimensions=[0])

_NONCONTRACTING, _CONTRACTING, _BATCH = "noncontracting", "contracting", "batch"


def _others(n, *used):
  used = {d for ds in used for d in ds}
  return [d for d in range(n) if d not in used]


def _mode(lhs_ndim, dnums):
  """(mode, lhs ragged dimension)."""
  ragged = dnums.lhs_ragged_dimensions[0]
  (contract, _), (batch, _) = dnums.dot_dimension_numbers
  if ragged in _others(lhs_ndim, contract, batch):
    return _NONCONTRACTING, ragged
  if ragged in contract:
    return _CONTRACTING, ragged
  if ragged in batch:
    return _BATCH, ragged
  raise TypeError(f"lhs_ragged_dim {ragged} not found in lhs_noncontracting "
                  f"{_others(lhs_ndim, contract, batch)}, lhs_contracting {list(contract)}, or "
                  f"lhs_batch {list(batch)}.")


def _prefix(mode, ndim, ragged, batch, contract):
  """The operand axes group_sizes is indexed by, before its group axis."""
  batch, contract = list(batch), list(contract)
  if mode == _NONCONTRACTING:
    free = _others(ndim, contract, batch)
    return batch + free[:free.index(ragged)]
  if mode == _CONTRACTING:
    return batch + contract[:contract.index(ragged)]
  return batch[:batch.index(ragged)]


# ---- the primitive ----------------------------------------------------------------------------
ragged_dot_general_p = core.Primitive("ragged_dot_general")


def _in_range(dim, rank, what, arg):
  if not 0 <= dim < rank:
    raise TypeError(f"ragged_dot_general requires {what} numbers to be nonnegative and less "
                    f"than the number of axes of the {arg} value, got {dim} for {arg} of rank "
                    f"{rank}.")


@ragged_dot_general_p.def_abstract_eval
def _ragged_dot_general_abstract_eval(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers,
                                      precision, preferred_element_type, group_offset,
                                      out_sharding):
  dn = ragged_dot_dimension_numbers
  if len(dn.lhs_ragged_dimensions) != 1:
    raise TypeError("ragged_dot_general expects exactly one lhs ragged dimension.")
  ragged = dn.lhs_ragged_dimensions[0]
  _in_range(ragged, lhs.ndim, "lhs ragged dimension", "lhs")
  mode, _ = _mode(lhs.ndim, dn)
  (lc, rc), (lb, rb) = dn.dot_dimension_numbers
  if group_sizes.ndim == 0:
    raise TypeError("expected rank of group_sizes to be >=1.")
  if group_sizes.ndim != 1:
    want = tuple(lhs.shape[i] for i in _prefix(mode, lhs.ndim, ragged, lb, lc))
    want += (group_sizes.shape[-1],)
    if group_sizes.shape != want:
      raise TypeError(f"expected group_sizes to have shape {want}, got {group_sizes.shape}.")
  groups = group_sizes.shape[-1]
  group_dims = dn.rhs_group_dimensions
  if mode in (_CONTRACTING, _BATCH):
    if group_dims:
      raise TypeError("ragged_dot_general requires zero group dimensions in the rhs when lhs "
                      "ragged dimension is contracting or batch.")
  else:
    if len(group_dims) != 1:
      raise TypeError("ragged_dot_general requires exactly one rhs group dimension when lhs "
                      "ragged dimension is noncontracting.")
    _in_range(group_dims[0], rhs.ndim, "rhs group dimension", "rhs")
    if group_dims[0] in rb or group_dims[0] in rc:
      raise TypeError("ragged_dot_general requires rhs group dimension numbers to be distinct "
                      "from contracting and batch dimensions.")
    if rhs.shape[group_dims[0]] != groups:
      raise TypeError(f"expected rhs group dimension size to be {groups}, got "
                      f"{rhs.shape[group_dims[0]]}.")
  # dot_general's checks, on rhs without its group axis.
  rhs_view = ShapedArray(tuple(d for i, d in enumerate(rhs.shape) if i not in group_dims),
                         rhs.dtype)
  renumber = {d: d - sum(g < d for g in group_dims) for d in range(rhs.ndim)}
  # (an out-of-range dimension stays out of range: dot_general's check names it)
  lax_dot._dot_general_shape(lhs, rhs_view, ((lc, tuple(renumber.get(d, d) for d in rc)),
                                             (lb, tuple(renumber.get(d, d) for d in rb))))
  batch = tuple(lhs.shape[i] for i in lb)
  shape = (batch + tuple(lhs.shape[i] for i in _others(lhs.ndim, lc, lb))
           + tuple(rhs.shape[i] for i in _others(rhs.ndim, rc, rb, group_dims)))
  if mode == _CONTRACTING:
    shape = (groups,) + shape
  if not dtypes.issubdtype(group_sizes.dtype, np.integer):
    raise TypeError("ragged_dot_general requires that group_sizes.dtype is subtype of "
                    "np.integer.")
  pet = None if preferred_element_type is None else dtypes.canonicalize_dtype(
      preferred_element_type)
  return ShapedArray(shape, lax_dot._dot_general_dtype(lhs, rhs, pet,
                                                     not lax_dot._is_algorithm(precision)),
                     lhs.weak_type and rhs.weak_type)


def _spread(x, gs, dim, prefix):
  """x with a new leading group axis: group j keeps the entries of x whose index along `dim`
  lies in group j (its slice of the cumulative group sizes `gs`, shaped
  [*x.shape[prefix], g]), zeros elsewhere."""
  x_shape = core.get_aval(x).shape
  shape = (core.get_aval(gs).shape[-1],) + tuple(x_shape)
  ends = reductions.cumsum(gs, axis=core.get_aval(gs).ndim - 1)
  starts = lax.sub(ends, gs)
  # gs axes: the prefix axes of x, then the group axis.
  gs_dims = tuple(p + 1 for p in prefix) + (0,)
  starts = broadcasting.broadcast_in_dim(starts, shape, gs_dims)
  ends = broadcasting.broadcast_in_dim(ends, shape, gs_dims)
  index = broadcasting.broadcasted_iota(core.get_aval(gs).dtype, shape, dim + 1)
  inside = lax.bitwise_and(lax.le(starts, index), lax.lt(index, ends))
  x = broadcasting.broadcast_in_dim(x, shape, tuple(range(1, len(shape))))
  return lax.select(inside, x, creation.full_like(x, 0))


def _dense(lhs, rhs, group_sizes, *, ragged_dot_dimension_numbers, precision,
           preferred_element_type, group_offset, out_sharding):
  dn = ragged_dot_dimension_numbers
  lhs_nd, rhs_nd = core.get_aval(lhs).ndim, core.get_aval(rhs).ndim
  mode, ragged = _mode(lhs_nd, dn)
  (lc, rc), (lb, rb) = dn.dot_dimension_numbers
  l_prefix = _prefix(mode, lhs_nd, ragged, lb, lc)
  if core.get_aval(group_sizes).ndim == 1:
    sizes = [core.get_aval(lhs).shape[i] for i in l_prefix]
    group_sizes = broadcasting.broadcast(group_sizes, sizes)

  def dot(a, b, dims):
    return lax_dot.dot_general(a, b, dims, precision=precision,
                               preferred_element_type=preferred_element_type)

  up = lambda dims: [d + 1 for d in dims]  # noqa: E731
  if mode == _NONCONTRACTING:
    group_dim = dn.rhs_group_dimensions[0]
    return dot(_spread(lhs, group_sizes, ragged, l_prefix), rhs,
               ((up(lc) + [0], list(rc) + [group_dim]), (up(lb), list(rb))))
  if mode == _CONTRACTING:
    rhs_ragged = rc[list(lc).index(ragged)]
    r_prefix = _prefix(mode, rhs_nd, rhs_ragged, rb, rc)
    return dot(_spread(lhs, group_sizes, ragged, l_prefix),
               _spread(rhs, group_sizes, rhs_ragged, r_prefix),
               ((up(lc), up(rc)), ([0] + up(lb), [0] + up(rb))))
  return dot(lhs, rhs, dn.dot_dimension_numbers)


@ragged_dot_general_p.def_lowering
def _ragged_dot_general_lower(ctx, lhs, rhs, group_sizes, **params):
  if params["group_offset"] is not None:
    raise NotImplementedError("Unimplemented group_offset support.")
  return common.lower_fun(lambda *args: [_dense(*args, **params)])(ctx, lhs, rhs, group_sizes)


def _bind(lhs, rhs, group_sizes, dn, precision, preferred_element_type, group_offset=None):
  return ragged_dot_general_p.bind(lhs, rhs, group_sizes, ragged_dot_dimension_numbers=dn,
                                   precision=precision,
                                   preferred_element_type=preferred_element_type,
                                   group_offset=group_offset, out_sharding=None)


@ragged_dot_general_p.def_jvp
def _ragged_dot_general_jvp(primals, tangents, *, ragged_dot_dimension_numbers, precision,
                            preferred_element_type, group_offset, out_sharding):
  if group_offset is not None:
    raise NotImplementedError("Unimplemented group_offset support.")
  (x, y, gs), (dx, dy, _) = primals, tangents
  dn = ragged_dot_dimension_numbers
  out = _bind(x, y, gs, dn, precision, preferred_element_type)
  dx_out = (creation.full_like(out, 0) if type(dx) is ad.Zero
            else _bind(dx, y, gs, dn, precision, preferred_element_type))
  dy_out = (creation.full_like(out, 0) if type(dy) is ad.Zero
            else _bind(x, dy, gs, dn, precision, preferred_element_type))
  return out, lax.add(dx_out, dy_out)


@ragged_dot_general_p.def_transpose
def _ragged_dot_general_transpose(ct, x, y, group_sizes, *, ragged_dot_dimension_numbers,
                                  precision, preferred_element_type, group_offset,
                                  out_sharding):
  if group_offset is not None:
    raise NotImplementedError("Unimplemented group_offset support.")
  dn = ragged_dot_dimension_numbers
  (x_contract, y_contract), (x_batch, y_batch) = dn.dot_dimension_numbers
  x_nd = x.aval.ndim if ad.is_undefined(x) else core.get_aval(x).ndim
  y_nd = y.aval.ndim if ad.is_undefined(y) else core.get_aval(y).ndim
  x_kept = _others(x_nd, x_contract, x_batch)
  y_group = dn.rhs_group_dimensions
  y_kept = _others(y_nd, y_contract, y_batch, y_group)
  mode, ragged = _mode(x_nd, dn)
  if mode != _NONCONTRACTING:
    which = "grad_y_dims" if ad.is_undefined(y) else "grad_x_dims"
    raise NotImplementedError(f"Unimplemented {which} for ragged dot general in mode "
                              f"RAGGED_{mode.upper()}.")
  nb, nx = len(x_batch), len(x_kept)
  ans_batch = list(range(nb))
  ans_x = list(range(nb, nb + nx))
  ans_y = list(range(nb + nx, nb + nx + len(y_kept)))

  def grad(lhs, rhs, dims, unsorted, aval):
    out = _bind(lhs, rhs, group_sizes, dims, precision, preferred_element_type)
    out = shape_ops.transpose(out, tuple(np.argsort(unsorted)))
    if core.get_aval(out).dtype != aval.dtype:
      out = lax._convert_element_type(out, aval.dtype, aval.weak_type)
    return out

  x_bar = y_bar = None
  if ad.is_undefined(x):
    dims = RaggedDotDimensionNumbers(
        dot_dimension_numbers=((ans_y, y_kept), (ans_batch, y_batch)),
        lhs_ragged_dimensions=[nb + x_kept.index(ragged)], rhs_group_dimensions=y_group)
    x_contract_by_y = list(np.take(x_contract, np.argsort(y_contract)))
    x_bar = grad(ct, y, dims, list(x_batch) + x_kept + x_contract_by_y, x.aval)
  if ad.is_undefined(y):
    dims = RaggedDotDimensionNumbers(
        dot_dimension_numbers=((x_kept, ans_x), (x_batch, ans_batch)),
        lhs_ragged_dimensions=[ragged], rhs_group_dimensions=[])
    y_contract_by_x = list(np.take(y_contract, np.argsort(x_contract)))
    y_bar = grad(x, ct, dims, list(y_group) + list(y_batch) + y_contract_by_x + y_kept, y.aval)
  return [x_bar, y_bar, None]


def _bumped(dims):
  """Axis numbers after a new leading axis (NumPy integers, as JAX's batching computes)."""
  return tuple(np.int64(d) + 1 for d in dims)


@ragged_dot_general_p.def_batch
def _ragged_dot_general_batch(args, dims, *, ragged_dot_dimension_numbers, precision,
                              preferred_element_type, group_offset, out_sharding):
  if not all(d == 0 for d in dims):
    raise NotImplementedError("ragged_dot vmap over any dim but 0 - NYI")
  lhs, rhs, group_sizes = args
  dn = ragged_dot_dimension_numbers
  (lc, rc), (lb, rb) = dn.dot_dimension_numbers
  new = RaggedDotDimensionNumbers(
      dot_dimension_numbers=((_bumped(lc), _bumped(rc)), ((0,) + _bumped(lb),
                                                          (0,) + _bumped(rb))),
      lhs_ragged_dimensions=_bumped(dn.lhs_ragged_dimensions),
      rhs_group_dimensions=_bumped(dn.rhs_group_dimensions))
  out = _bind(lhs, rhs, group_sizes, new, precision, preferred_element_type)
  mode, _ = _mode(core.get_aval(lhs).ndim - 1, dn)
  return out, 1 if mode == _CONTRACTING else 0


# ---- wrappers ---------------------------------------------------------------------------------
def ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers, precision=None,
                       preferred_element_type=None, group_offset=None, out_sharding=None):
  """A dot_general whose lhs ragged dimension is split into groups of `group_sizes` (see
  `RaggedDotDimensionNumbers` and the module docstring for the three modes)."""
  out_sharding = _out_sharding(out_sharding, "ragged_dot_general")
  if not isinstance(ragged_dot_dimension_numbers, RaggedDotDimensionNumbers):
    raise TypeError("ragged_dot_general requires ragged_dot_dimension_numbers to be a "
                    "lax.RaggedDotDimensionNumbers, got "
                    f"{type(ragged_dot_dimension_numbers).__name__}.")
  return ragged_dot_general_p.bind(
      asarray_operand(lhs), asarray_operand(rhs), asarray_operand(group_sizes),
      ragged_dot_dimension_numbers=ragged_dot_dimension_numbers,
      precision=lax_dot.canonicalize_precision(precision),
      preferred_element_type=preferred_element_type, group_offset=group_offset,
      out_sharding=out_sharding)


def ragged_dot(lhs, rhs, group_sizes, precision=None, preferred_element_type=None,
               group_offset=None, out_sharding=None):
  """lhs [m, k] times rhs [g, k, n] -> [m, n], where rows of lhs in group i (consecutive,
  group_sizes [g] long) are multiplied by rhs[i]."""
  return ragged_dot_general(lhs, rhs, group_sizes, ragged_dot_dimension_numbers=_BASIC,
                            precision=lax_dot.canonicalize_precision(precision),
                            preferred_element_type=preferred_element_type,
                            group_offset=group_offset, out_sharding=out_sharding)
