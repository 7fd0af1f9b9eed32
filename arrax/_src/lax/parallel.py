"""Collective primitives over named axes: psum, pmax, pmin, ppermute, all_gather, reduce_scatter
(psum_scatter), all_to_all, axis_index, and psend/precv and ragged_all_to_all (which XLA:CPU
cannot run: they lower as JAX's, and fail on CPU as JAX's do).

A named axis is introduced by `vmap(..., axis_name=...)` or by `pmap`. Under vmap each
collective is batched away by its axis-aware rule (`prim.batch_axis`): when the trace's
axis is one of the collective's names the rule computes the collective across the batch axis;
otherwise it passes the collective on to the parent trace, adjusting its positional parameters
for the batch axis, so an outer vmap (or pmap) handles it. What remains over a pmap axis
lowers to XLA's cross-replica collectives (all_reduce, all_gather, reduce_scatter, all_to_all,
collective_permute, replica_id) with one replica per device; reductions over positional axes
(what a psum becomes under vmap) lower to ordinary reductions.
"""
from __future__ import annotations

import itertools
import math
import operator

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, core, dtypes, mlir
from arrax._src.core import ShapedArray, Tracer
from arrax._src.lax import elementwise as lax_api
from arrax._src.lax import creation, reductions, shape_ops, utils
from arrax._src.lax.utils import asarray_operand
from arrax._src.numpy import indexing, lax_numpy, ufuncs  # helpers of the vmap rules
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = [
    "all_gather", "all_to_all", "axis_index", "axis_size", "pcast", "pmax", "pmean", "pmin",
    "ppermute",
    "precv", "psend", "pshuffle", "psum", "psum_scatter", "pswapaxes", "ragged_all_to_all",
]


# ---- helpers --------------------------------------------------------------------------------
def _names(axis_name) -> tuple:
  names = tuple(axis_name) if isinstance(axis_name, (tuple, list)) else (axis_name,)
  for name in names:
    hash(name)   # an array or dict is no axis name: TypeError (unhashable), as in JAX
  return names


def _check_axis_names(axes, api_name):
  for name in axes:
    if not isinstance(name, int) and not batching.axis_exists(name):
      raise NameError(f"Found an unbound axis name: {name}. To fix this, call {api_name} "
                      "inside a function mapped with `vmap(..., axis_name=...)` that names "
                      "this axis.")


class ManualAxisEnv(dict):
  """The axis environment of a shard_map body lowered for XLA's SPMD partitioner: every mesh
  axis name -> size, in mesh order. The program runs as one partition per device (numbered
  row-major over the mesh), so collectives name partitions (global device ids) in their groups
  and carry a channel handle."""
  spmd = True


_channels = itertools.count(1)


def _spmd_args(ctx, global_ids=True):
  """The extra attributes of a collective in an SPMD program (none under pmap)."""
  if not getattr(ctx.module_context.axis_env, "spmd", False):
    return {}
  out = {"channel_handle": hlo.ChannelHandle.get(next(_channels), 1)}
  if global_ids:
    out["use_global_device_ids"] = ir.UnitAttr.get()
  return out


def _axis_groups(env, names):
  """The device groups of a collective over the axes `names` of `env` (name -> size, devices
  numbered row-major): devices agreeing on every other axis, ordered by their index along
  `names` (the first varying slowest)."""
  all_names = list(env)
  shape = [env[n] for n in all_names]
  ids = np.arange(math.prod(shape)).reshape(shape)
  named = [all_names.index(n) for n in names]
  rest = [i for i in range(len(shape)) if i not in named]
  return ids.transpose(rest + named).reshape(-1, math.prod(shape[i] for i in named))


def _groups(ctx, name, axis_names, axis_index_groups):
  """The device groups (a 2-d int array) of a collective over the mapped axes `axis_names`
  (raises when they are not all axes of the pmap or shard_map being lowered)."""
  env = ctx.module_context.axis_env
  names = _names(axis_names)
  if not names or any(n not in env for n in names):
    raise NotImplementedError(
        f"{name} over a named axis can be lowered only inside pmap or shard_map over that "
        "axis; under vmap(..., axis_name=...) it is batched away instead.")
  if len(names) > 1 and not getattr(env, "spmd", False):
    raise NotImplementedError(f"{name} over several pmap axes {names} is not supported.")
  groups = _axis_groups(env, names)
  if axis_index_groups is not None:
    groups = np.array([[g[i] for i in idx] for g in groups for idx in axis_index_groups])
  return np.asarray(groups, np.int64)


def _replica_groups(ctx, name, axis_names, axis_index_groups):
  """The replica groups attribute of a collective over the mapped axes `axis_names`."""
  return ir.DenseIntElementsAttr.get(
      np.ascontiguousarray(_groups(ctx, name, axis_names, axis_index_groups)))


def _replica_id():
  """This replica's index (one replica per device of the pmap axis) as an int32 scalar."""
  return hlo.convert(mlir.aval_to_ir_type(ShapedArray((), np.int32)), hlo.ReplicaIdOp().result)


def _axis_index_value(ctx, name):
  """The index of this device along the mapped axis `name` (int32)."""
  env = ctx.module_context.axis_env
  if not getattr(env, "spmd", False):
    return _replica_id()
  names = list(env)
  pos = names.index(name)
  stride = math.prod(env[n] for n in names[pos + 1:])
  pid = hlo.PartitionIdOp().result
  q = hlo.divide(pid, mlir.ir_constant(np.array(stride, np.uint32)))
  r = hlo.remainder(q, mlir.ir_constant(np.array(env[name], np.uint32)))
  return hlo.convert(mlir.aval_to_ir_type(ShapedArray((), np.int32)), r)


def _group_size(ctx, axis_names, axis_index_groups):
  if axis_index_groups is not None:
    return len(axis_index_groups[0])
  return math.prod(ctx.module_context.axis_env[n] for n in _names(axis_names))


_COMBINE = {
    "psum": lambda dt: hlo.or_ if dt == np.bool_ else hlo.add,
    "pmax": lambda dt: hlo.or_ if dt == np.bool_ else hlo.maximum,
    "pmin": lambda dt: hlo.and_ if dt == np.bool_ else hlo.minimum,
}


def _fill_region(op, name, dtype):
  combine = _COMBINE[name](np.dtype(dtype))
  mlir.make_reducer_region(op, dtype, lambda acc, xs: [combine(acc[0], xs[0])])


def _all_reduce(ctx, name, x, aval, groups):
  """The cross-replica psum/pmax/pmin (`name`) of `x` (of `aval`) over the replica `groups`."""
  op = hlo.AllReduceOp([mlir.aval_to_ir_type(aval)], [x], groups, **_spmd_args(ctx))
  _fill_region(op, name, aval.dtype)
  return op.results[0]


def _validate_groups(axis_index_groups):
  if axis_index_groups is None:
    return None
  space = range(sum(len(g) for g in axis_index_groups))
  if {i for g in axis_index_groups for i in g} != set(space):
    raise ValueError("axis_index_groups must cover all indices exactly once")
  return tuple(map(tuple, axis_index_groups))


def _no_groups_under_vmap(axis_index_groups):
  if axis_index_groups is not None:
    raise NotImplementedError("axis_index_groups is not supported by collectives under vmap.")


def _moveaxis(x, src, dst):
  return batching.moveaxis(x, src, dst)


def _split_axis(x, axis, factor):
  """Split axis `axis` of `x` into (factor, size // factor)."""
  shape = list(core.get_aval(x).shape)
  shape[axis:axis + 1] = [factor, shape[axis] // factor]
  return shape_ops.reshape(x, tuple(shape))


def _fold_axis(x, axis):
  """Merge axes `axis` and `axis + 1` of `x`."""
  shape = list(core.get_aval(x).shape)
  shape[axis:axis + 2] = [shape[axis] * shape[axis + 1]]
  return shape_ops.reshape(x, tuple(shape))


def _expand(x, axis):
  """Insert an axis of size 1 at `axis` (a broadcast_in_dim, as lax.expand_dims)."""
  shape = list(core.get_aval(x).shape)
  shape.insert(axis, 1)
  dims = tuple(i for i in range(len(shape)) if i != axis)
  return shape_ops.broadcast_in_dim(x, tuple(shape), dims)


def _mul_by_size(x, size):
  """`size * x` with x's dtype (an unbatched value summed over `size` examples)."""
  aval = core.get_aval(x)
  return lax_api.mul(x, lax_api.scalar_literal(size, aval.dtype, aval.weak_type))


# ---- psum, pmax, pmin -------------------------------------------------------------------------
def _allreduce_abstract_eval(name):
  def abstract_eval(aval, *, axes, axis_index_groups):
    _check_axis_names(axes, name)
    pos = [a for a in axes if isinstance(a, int)]
    if pos and axis_index_groups is not None:
      raise ValueError(f"axis_index_groups can only be used with reductions over named axes, "
                       f"but got: {axes}")
    for a in pos:
      if not 0 <= a < aval.ndim:
        raise ValueError(f"axis {a} is out of bounds for array of dimension {aval.ndim}")
    shape = tuple(d for i, d in enumerate(aval.shape) if i not in pos)
    return ShapedArray(shape, aval.dtype, aval.weak_type)
  return abstract_eval


def _allreduce_lowering(name, reduce_prim):
  def lowering(ctx, x, *, axes, axis_index_groups):
    named = tuple(a for a in axes if not isinstance(a, int))
    pos = tuple(a for a in axes if isinstance(a, int))
    if pos:   # the positional part first (its result has the final shape)
      x, = reduce_prim.lowering(ctx, x, axes=pos)
    if not named:
      return [x]
    groups = _replica_groups(ctx, name, named, axis_index_groups)
    return [_all_reduce(ctx, name, x, ctx.avals_out[0], groups)]
  return lowering


def _bind_reduce(prim, v, axes, groups):
  if prim is psum_invariant_p:   # (no axis_index_groups parameter)
    return prim.bind(v, axes=axes)
  return prim.bind(v, axes=axes, axis_index_groups=groups)


def _reduction_collective(prim, if_unmapped):
  """The batching rule of psum/pmax/pmin; `if_unmapped(v, size)` reduces an unbatched value."""
  def rule(axis_data, args, dims, *, axes, axis_index_groups):
    (v,), (d,) = args, dims
    name = axis_data.name
    if d is None:
      if name not in axes:
        return _bind_reduce(prim, v, axes, axis_index_groups), None
      _no_groups_under_vmap(axis_index_groups)
      rest = tuple(a for a in axes if a != name)
      if rest:
        v = _bind_reduce(prim, v, rest, None)
      return if_unmapped(v, axis_data.size), None
    if name not in axes:
      if not any(isinstance(a, int) for a in axes):
        return _bind_reduce(prim, v, axes, axis_index_groups), d
      _no_groups_under_vmap(axis_index_groups)
      v = _moveaxis(v, d, 0)
      new = tuple(a + 1 if isinstance(a, int) else a for a in axes)
      return _bind_reduce(prim, v, new, None), 0
    # Reduce over the batch axis (as a positional axis) together with the other axes.
    _no_groups_under_vmap(axis_index_groups)
    v = _moveaxis(v, d, 0)
    new = tuple(a + 1 if isinstance(a, int) else 0 if a == name else a for a in axes)
    return _bind_reduce(prim, v, new, None), None
  return rule


def _make_allreduce(name, reduce_prim, if_unmapped):
  prim = core.Primitive(name)
  prim.def_abstract_eval(_allreduce_abstract_eval(name))
  prim.def_lowering(_allreduce_lowering(name, reduce_prim))
  prim.def_batch_axis(_reduction_collective(prim, if_unmapped))
  return prim


psum_p = _make_allreduce("psum", reductions.reduce_sum_p, _mul_by_size)
pmax_p = _make_allreduce("pmax", reductions.reduce_max_p, lambda v, size: v)
pmin_p = _make_allreduce("pmin", reductions.reduce_min_p, lambda v, size: v)


def _psum_transpose(ct, x, *, axes, axis_index_groups):
  named = tuple(a for a in axes if not isinstance(a, int))
  pos = tuple(a for a in axes if isinstance(a, int))
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  if pos:   # a positional reduction transposes to a broadcast
    shape = x.aval.shape
    kept = tuple(i for i in range(len(shape)) if i not in pos)
    ct = shape_ops.broadcast_in_dim(ct, shape, kept)
  if not named:
    return [ct]
  return [psum_p.bind(ct, axes=named, axis_index_groups=axis_index_groups)]


ad.deflinear2(psum_p, _psum_transpose)


# ---- varying manual axes (shard_map with check_vma=True) ---------------------------------------
# Inside such a body every value's type names the mesh axes it varies over (`aval.vma`). pvary
# casts an invariant value to varying (a no-op at run time; its transpose is a psum);
# psum_invariant is the psum of a varying value, invariant afterwards (its transpose a pvary).
pvary_p = core.Primitive("pvary")


def _check_vma_state():
  return core.vma_state.axes is not None


@pvary_p.def_abstract_eval
def _pvary_abstract_eval(aval, *, axes):
  for name in axes:
    if not batching.axis_exists(name):
      raise NameError(f"Found an unbound axis name: {name}. To fix this, please call pvary "
                      "under `jax.shard_map`.")
  _check_unreduced_args([aval], axes, "pvary")
  if _check_vma_state() and set(axes) & aval.vma:
    raise ValueError("pvary is a invariant->variant collective. This means that the axis names "
                     "mentioned in `axes` passed to `pvary` must not be present in "
                     f"`jax.typeof(inp).mat.varying`. Got axes={axes} and "
                     f"jax.typeof(inp)={aval}")
  return aval.update(vma=aval.vma | frozenset(axes))


pvary_p.def_lowering(lambda ctx, x, *, axes: [x])


@pvary_p.def_impl
def _pvary_impl(x, *, axes):
  raise ValueError("pvary should be called under jax.shard_map.")


pvary_p.def_batch(lambda args, dims, *, axes: (pvary_p.bind(args[0], axes=axes), dims[0]))


def _pvary_transpose(ct, x, *, axes):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  return [psum_invariant_p.bind(ct, axes=axes)]


ad.deflinear2(pvary_p, _pvary_transpose)


psum_invariant_p = core.Primitive("psum_invariant")


@psum_invariant_p.def_abstract_eval
def _psum_invariant_abstract_eval(aval, *, axes):
  _check_axis_names(axes, "psum")
  if _check_vma_state() and not set(axes) & aval.vma:
    raise ValueError("psum is a variant->invariant collective. This means that the axis names "
                     "mentioned in `axes` passed to `psum` must be present in "
                     f"`jax.typeof(inp).mat.varying`. Got axes={axes} and "
                     f"jax.typeof(inp).mat.varying={aval.vma}")
  if any(isinstance(a, int) for a in axes):
    raise ValueError(f"psum_invariant does not accept integer axes. Got {axes}")
  _check_unreduced_args([aval], axes, "psum_invariant")
  return aval.update(vma=aval.vma - frozenset(axes))


_psum_lowering = _allreduce_lowering("psum", reductions.reduce_sum_p)
psum_invariant_p.def_lowering(
    lambda ctx, x, *, axes: _psum_lowering(ctx, x, axes=axes, axis_index_groups=None))
_psum_invariant_batch = _reduction_collective(psum_invariant_p, _mul_by_size)
psum_invariant_p.def_batch_axis(
    lambda axis_data, args, dims, *, axes: _psum_invariant_batch(axis_data, args, dims,
                                                                 axes=axes,
                                                                 axis_index_groups=None))


def _psum_invariant_transpose(ct, x, *, axes):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  return [pvary_p.bind(ct, axes=axes)]


ad.deflinear2(psum_invariant_p, _psum_invariant_transpose)


def _pvary(x, axes):
  """Cast `x` to vary over `axes` too (no-op without check_vma)."""
  if not axes or not _check_vma_state():
    return x
  return pvary_p.bind(x, axes=core.order_axes(axes))


def _check_unreduced_args(avals, axes, name):
  """JAX's error for a collective over axes its operand is unreduced or reduced over."""
  axes = set(axes) if isinstance(axes, (set, frozenset, tuple, list)) else {axes}
  for a in avals:
    if type(a) is not ShapedArray:
      continue
    if a.ur[0] & axes:
      raise ValueError(f"{name} cannot accept args which are unreduced. Got "
                       f"{a.str_short(True)} and axes={axes}")
    if a.ur[1] & axes:
      raise ValueError(f"{name} cannot accept args which are reduced. Got "
                       f"{a.str_short(True)} and axes={axes}")


# ---- unreduced and reduced manual axes ---------------------------------------------------------
# Inside a check_vma body a value can also be *unreduced* over an axis (each device holds one
# summand of the value; unreduced_psum adds them up) or *reduced* over it (the same on every
# device, but its cotangent is unreduced there). The casts between the states are no-ops at run
# time; each transposes to the cast in the other direction (varying->unreduced to
# reduced->varying, invariant->reduced to unreduced->invariant, which is an all-reduce).
def _ur_cast(name, check, out_type):
  """A no-op cast primitive: `check(aval, axes)` raises JAX's errors, `out_type(aval, axes)`
  is the result type."""
  prim = core.Primitive(name)
  short = name.removesuffix("_p")

  @prim.def_abstract_eval
  def _abstract_eval(aval, *, axes):
    _check_axis_names(axes, short)
    check(aval, set(axes))
    return out_type(aval, frozenset(axes))

  @prim.def_impl
  def _impl(x, *, axes):
    raise ValueError(f"{short} should be called under jax.shard_map.")

  prim.def_lowering(lambda ctx, x, *, axes: [x])

  prim.def_batch(batching.no_batching_rule(name, ""))
  return prim


def _vary_unreduced_check(aval, axes):
  _check_unreduced_args([aval], axes, "vary_unreduced_cast")
  if not aval.vma:
    raise ValueError("vary_unreduced_cast only accepts inputs that are varying. Got "
                     f"{aval.str_short(True)}")
  if not aval.vma & axes:
    raise ValueError("vary_unreduced_cast is a Varying->Unreduced collective. This means that "
                     "the axis names mentioned in `axes` passed to `vary_unreduced_cast` must "
                     f"be present in `jax.typeof(x).mat.varying`. Got axes={tuple(axes)} and "
                     f"jax.typeof(x).mat.varying={aval.vma}")


vary_unreduced_cast_p = _ur_cast(
    "vary_unreduced_cast_p", _vary_unreduced_check,
    lambda aval, axes: aval.update(vma=aval.vma - axes, ur=(aval.ur[0] | axes, aval.ur[1])))


def _reduced_vary_check(aval, axes):
  if not aval.ur[1]:
    raise ValueError("reduced_vary_cast only accepts inputs that are reduced. Got "
                     f"{aval.str_short(True)}")
  if not aval.ur[1] & axes:
    raise ValueError("reduced_vary_cast is a Reduced->Varying collective. This means that the "
                     "axis names mentioned in `axes` passed to `reduced_vary_cast` must be "
                     f"present in `jax.typeof(x).mat.reduced`. Got axes={tuple(axes)} and "
                     f"jax.typeof(x).mat.reduced={aval.ur[1]}")
  if aval.vma & axes:
    raise ValueError("reduced_vary_cast input cannot be varying across the axis_name provided. "
                     f"Got x={aval.str_short(True)} and axis_name={tuple(axes)}")


reduced_vary_cast_p = _ur_cast(
    "reduced_vary_cast_p", _reduced_vary_check,
    lambda aval, axes: aval.update(vma=aval.vma | axes, ur=(aval.ur[0], aval.ur[1] - axes)))


def _preduced_check(aval, axes):
  if aval.vma & axes:
    raise ValueError("preduced is a Invariant->Reduced collective. This means that the axis "
                     "names mentioned in `axes` passed to `preduced` must not be present in "
                     f"`jax.typeof(inp).mat.varying`. Got axes={tuple(axes)} and "
                     f"jax.typeof(inp).mat.varying={aval.vma}")
  if aval.ur[1] & axes:
    raise ValueError("preduced input cannot be reduced across the axis_name provided. Got "
                     f"x={aval.str_short(True)} and axis_name={tuple(axes)}")


preduced_p = _ur_cast(
    "preduced", _preduced_check,
    lambda aval, axes: aval.update(ur=(aval.ur[0], aval.ur[1] | axes)))


# unreduced_psum: the sum of an unreduced value's summands (unreduced -> invariant).
unreduced_psum_p = core.Primitive("unreduced_psum")


@unreduced_psum_p.def_abstract_eval
def _unreduced_psum_abstract_eval(aval, *, axes):
  _check_axis_names(axes, "psum")
  if not aval.ur[0]:
    raise ValueError(f"unreduced_psum only accepts inputs that are unreduced. Got "
                     f"{aval.str_short(True)}")
  if not aval.ur[0] & frozenset(axes):
    raise ValueError("unreduced_psum is a Unreduced -> Invariant collective. This means that "
                     f"the axes={axes} passed to `unreduced_psum` must be present in "
                     f"jax.typeof(x).mat.unreduced={aval.ur[0]}")
  if aval.vma & set(axes):
    raise ValueError("unreduced_psum's input cannot be varying across the  axis_name "
                     f"provided. Got x={aval.str_short(True)} and axes={axes}")
  if any(isinstance(a, int) for a in axes):
    raise ValueError(f"unreduced_psum does not accept integer axis_name. Got axis_name={axes}")
  return aval.update(ur=(aval.ur[0] - frozenset(axes), aval.ur[1]))


unreduced_psum_p.def_lowering(
    lambda ctx, x, *, axes: _psum_lowering(ctx, x, axes=axes, axis_index_groups=None))


unreduced_psum_p.def_batch(batching.no_batching_rule("unreduced_psum", ""))


def _ct_zero(x):
  return ad.Zero(x.aval.to_ct_aval())


def _cast_transpose(back):
  def transpose(ct, x, *, axes):
    if type(ct) is ad.Zero:
      return [_ct_zero(x)]
    return [back.bind(ct, axes=axes)]
  return transpose


ad.deflinear2(vary_unreduced_cast_p, _cast_transpose(reduced_vary_cast_p))
ad.deflinear2(reduced_vary_cast_p, _cast_transpose(vary_unreduced_cast_p))
ad.deflinear2(preduced_p, _cast_transpose(unreduced_psum_p))
ad.deflinear2(unreduced_psum_p, _cast_transpose(preduced_p))


def _get_from(aval, axes, name):
  unreduced, reduced = aval.ur if type(aval) is ShapedArray else core.NO_UR
  states = {"varying" if a in aval.vma else "unreduced" if a in unreduced else
            "reduced" if a in reduced else "invarying" for a in axes}
  if len(states) > 1:
    raise ValueError(f"{name} can only accept axis_name which corresponds to one of varying, "
                     "unreduced, reduced or invarying state of the input. Got input type: "
                     f"{aval}, axes: {axes} and input state: {states}")
  return states.pop()


_allowed_pcast_to = {"unreduced", "reduced", "varying"}
_pcast_prims = {("invarying", "varying"): pvary_p, ("invarying", "reduced"): preduced_p,
                ("varying", "unreduced"): vary_unreduced_cast_p,
                ("reduced", "varying"): reduced_vary_cast_p}


def pcast(x, axis_name, *, to):
  """Change how `x` (a pytree) is typed over the manual mesh axes `axis_name` inside a
  shard_map with check_vma=True (no-ops at run time): invariant -> varying (a pvary; its
  transpose is a psum), invariant -> reduced, varying -> unreduced (then `psum` adds the
  summands up), reduced -> varying."""
  if isinstance(axis_name, (set, frozenset)):
    raise TypeError(f"axis_name={axis_name!r} must be a tuple or a str. Got {axis_name}")
  axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)
  if not axis_name:
    return x
  if to not in _allowed_pcast_to:
    raise ValueError(f"Got unexpected `to` value. Allowed `to` values are: {_allowed_pcast_to}")

  def cast(leaf):
    leaf = asarray_operand(leaf)
    source = _get_from(core.get_aval(leaf), axes, "jax.lax.pcast")
    prim = _pcast_prims.get((source, to))
    if prim is None:
      raise ValueError(f"Unsupported pcast from={source}, to={to!r}")
    if not _check_vma_state() and all(batching.axis_exists(a) for a in axes):
      return leaf   # (check_vma=False: nothing to cast)
    return prim.bind(leaf, axes=core.order_axes(axes))
  return tree_map(cast, x)


# JAX's unreduced/reduced rules of standard primitives: name -> fn(in_avals, params) ->
# (unreduced, reduced) of the result. Elementwise ops not named here follow `_nary_ur`; other
# primitives not named give a result neither unreduced nor reduced.
def _u(a):
  return a.ur[0] if type(a) is ShapedArray else frozenset()


def _r(a):
  return a.ur[1] if type(a) is ShapedArray else frozenset()


def _nary_reduced(avals):
  reduced = {_r(a) for a in avals if _r(a)}
  if len(reduced) > 1:
    raise core.ShardingTypeError("All inputs should be reduced across the same mesh axes. Got "
                                 f"specs: {reduced}")
  if not reduced:
    return frozenset()
  red, = reduced
  manual = core.vma_state.axes or frozenset()
  for a in avals:
    if type(a) is not ShapedArray:
      continue
    if (manual - (a.vma | a.ur[0] | a.ur[1])) & red:
      raise core.ShardingTypeError("Inputs cannot be replicated on the same axes that another "
                                   f"input is reduced on. Got input type: {a} and reduced "
                                   f"spec: {red}")
    if a.vma & red:
      raise core.ShardingTypeError(
          "Inputs cannot be sharded/varying on the same axes that another input is reduced "
          "on. Reshard the input which is reduced to be sharded on the mesh axes it is "
          "reduced on via `jax.sharding.reshard(inp, jax.P(...))`. Got input type: "
          f"{a} and reduced spec: {red}")
  return red


def _nary_ur(name, avals):
  if len(avals) == 1:
    if _u(avals[0]):
      raise NotImplementedError(f"unreduced rule for {name} is not implemented. Please file an "
                                "issue at https://github.com/jax-ml/jax/issues")
    return frozenset(), _r(avals[0])
  reduced = _nary_reduced(avals)
  if any(_u(a) for a in avals):
    raise NotImplementedError(f"unreduced rule for {name} is not implemented. Please file an "
                              "issue at https://github.com/jax-ml/jax/issues")
  return frozenset(), reduced


def _add_ur(avals, params):
  x, y = avals
  reduced = _nary_reduced(avals)
  xu, yu = _u(x), _u(y)
  if xu and yu:
    if xu != yu:
      raise core.ShardingTypeError("lhs and rhs to `add` must be unreduced along the same mesh "
                                   f"axes. Got lhs={xu}, rhs={yu}")
    return xu, reduced
  if xu or yu:
    lhs, rhs = ("lhs", "rhs") if xu else ("rhs", "lhs")
    raise core.ShardingTypeError(
        f"{lhs} is unreduced while {rhs} is not. `add` operation does not allow this because "
        f"there will be implicit communication. Please reduce {lhs} via `reshard` before "
        f"calling `add`.")
  return frozenset(), reduced


def _mul_ur(avals, params):
  x, y = avals
  reduced = _nary_reduced(avals)
  xu, yu = _u(x), _u(y)
  if xu and yu:
    raise core.ShardingTypeError("lhs and rhs to `mul` cannot be unreduced since mul is "
                                 f"bilinear. Got lhs={xu}, rhs={yu}")
  if xu and xu != _r(y):
    raise core.ShardingTypeError("RHS should be reduced along the same axes LHS is unreduced "
                                 f"on. Got lhs={x} and rhs={y}")
  if yu and yu != _r(x):
    raise core.ShardingTypeError("LHS should be reduced along the same axes RHS is unreduced "
                                 f"on. Got lhs={x} and rhs={y}")
  unreduced = xu or yu
  return unreduced, (frozenset() if unreduced else reduced)


def _dot_ur(avals, params):
  lhs, rhs = avals
  if _u(lhs) or _u(rhs):
    raise core.ShardingTypeError(f"lhs or rhs passed to dot_general cannot be unreduced. Got "
                                 f"lhs={lhs} and rhs={rhs}")
  return frozenset(), frozenset()


def _first_operand_ur(avals, params):
  return _u(avals[0]), _r(avals[0])


def _concatenate_ur(avals, params):
  unreduced = {_u(a) for a in avals if _u(a)}
  if len(unreduced) > 1:
    raise core.ShardingTypeError("All operands should be unreduced along the same mesh axes. "
                                 f"Got unreduced specs: {unreduced}")
  return (unreduced.pop() if unreduced else frozenset()), _nary_reduced(avals)


_UR_RULES = {
    "add": _add_ur, "mul": _mul_ur, "dot_general": _dot_ur, "concatenate": _concatenate_ur,
    "add_any": _first_operand_ur, "select_n": lambda avals, params: _first_operand_ur(
        avals[1:], params),
    **{n: _first_operand_ur for n in (
        "convert_element_type", "reduce_sum", "reshape", "transpose", "squeeze", "pad",
        "reduce_precision", "slice", "dynamic_slice", "dynamic_update_slice")},
}


def _ur_of(prim, in_avals, params):
  if all(type(a) is not ShapedArray or a.ur is core.NO_UR for a in in_avals):
    return core.NO_UR
  rule = _UR_RULES.get(prim.name)
  if rule is not None:
    return rule(in_avals, params)
  if prim.name in lax_api.NARY_ARITY:
    return _nary_ur(prim.name, in_avals)
  return core.NO_UR


# How staging types values inside a check_vma body (the hooks tracing.py calls).
_REDUCING = frozenset({"psum", "pmax", "pmin"})
_GATHERING = frozenset({"all_gather", "reduce_scatter", "all_to_all", "ppermute",
                        "ragged_all_to_all", "psend", "pbroadcast", "psum_invariant",
                        "all_gather_invariant"})
_OWN_TYPE = frozenset({"pvary", "axis_index", "vary_unreduced_cast_p", "reduced_vary_cast_p",
                       "preduced", "unreduced_psum", "all_gather_reduced",
                       "unreduced_reduce_scatter"})
_SELF_TYPED = frozenset({"pvary", "psum_invariant", "all_gather_invariant",
                         "vary_unreduced_cast_p", "reduced_vary_cast_p", "preduced",
                         "unreduced_psum", "all_gather_reduced", "unreduced_reduce_scatter"})


def _named_axes(params):
  names = params.get("axes", params.get("axis_name", ()))
  return tuple(a for a in _names(names) if not isinstance(a, int))


def _vma_of(x):
  aval = core.get_aval(x)
  return aval.vma if type(aval) is ShapedArray else None


def _vma_bind(prim, args, params):
  return _vma_stage(None, prim, args, params)


def _vma_stage(trace, prim, args, params):
  """Cast invariant operands to varying where `prim` needs it, as JAX does (pvary equations
  before `prim`; bound, or with `trace` staged into it): operands of standard primitives to
  the union of their operands' axes, operands of collectives to the axes they act over."""
  name = prim.name
  if name in _OWN_TYPE or core.jaxprs_in_params(params):
    return args
  vmas = [_vma_of(a) for a in args]
  want = frozenset().union(*[v for v in vmas if v is not None])
  if name in _REDUCING or name in _GATHERING:
    want = want | frozenset(_named_axes(params))
  if not want:
    return args
  collective = name in _REDUCING or name in _GATHERING
  out = []
  for a, v in zip(args, vmas):
    if v is not None and want - v:
      axes = core.order_axes(want - v)
      # (a value reduced over exactly the missing axes is cast from reduced to varying)
      cast = (reduced_vary_cast_p if not collective and _r(core.get_aval(a)) == want - v
              else pvary_p)
      a = (cast.bind(a, axes=axes) if trace is None else
           trace.process_primitive(cast, [a], {"axes": axes}))
    out.append(a)
  return out


def _vma_type(prim, in_avals, params, out_avals):
  name = prim.name
  if name in _OWN_TYPE or name in _SELF_TYPED or core.jaxprs_in_params(params):
    if name == "axis_index":
      vma = frozenset(_names(params["axis_name"])) & core.vma_state.axes
      return [a.update(vma=vma) for a in out_avals]
    return out_avals
  vma = frozenset().union(*[a.vma for a in in_avals if type(a) is ShapedArray])
  if name in _REDUCING:
    vma = vma - frozenset(_named_axes(params))
  ur = _ur_of(prim, in_avals, params)
  return [a.update(vma=vma, ur=ur) if type(a) is ShapedArray else a for a in out_avals]


core.vma_hooks.update(bind=_vma_bind, stage=_vma_stage, type=_vma_type, cast=_pvary)


def _psum_leaves(x, axes, axis_index_groups):
  leaves, treedef = tree_flatten(x)
  leaves = [asarray_operand(v) for v in leaves]
  leaves = [_to_int32(v) if core.get_aval(v).dtype == np.bool_ else v for v in leaves]
  if not any(isinstance(v, Tracer) for v in leaves):
    # Constants are the same in every example: the sum is `size` times the value.
    named = [a for a in axes if not isinstance(a, int)]
    pos = [a for a in axes if isinstance(a, int)]
    if axis_index_groups is not None:
      size = len(axis_index_groups[0])
    else:
      size = math.prod(batching.axis_size(n) for n in named)
    out = []
    for v in leaves:
      if pos:
        v = reductions.reduce_sum(v, [utils.canonicalize_axis(a, core.get_aval(v).ndim)
                                      for a in pos])
      out.append(_const_times(v, size))
    return tree_unflatten(treedef, out)
  if core.vma_state.axes is not None:   # check_vma: JAX's variant->invariant psum
    if axis_index_groups is not None:
      raise NotImplementedError
    return tree_unflatten(treedef, [psum_invariant_p.bind(v, axes=axes) for v in leaves])
  return tree_unflatten(treedef, [psum_p.bind(v, axes=axes, axis_index_groups=axis_index_groups)
                                  for v in leaves])


def _to_int32(v):
  return lax_api.convert_element_type(v, np.int32)


def _const_times(v, size):
  if isinstance(v, core.Literal):
    v = v.val
  if type(v) in (int, float, complex, bool):
    return type(v)(size) * v
  return ufuncs.multiply(np.array(size, core.get_aval(v).dtype), v)


def psum(x, axis_name, *, axis_index_groups=None):
  """Sum `x` (a pytree) over the mapped axis (or axes) `axis_name`; bools count as int32."""
  axes = _names(axis_name)
  if not axes:
    return x
  if any(isinstance(a, int) for a in axes) and axis_index_groups is not None:
    raise ValueError("axis_index_groups only supported for sums over just named axes")
  groups = _validate_groups(axis_index_groups)
  if core.vma_state.axes is None:
    return _psum_leaves(x, axes, groups)

  def one(leaf):   # (an unreduced value's psum adds its summands up: unreduced_psum)
    if _get_from(core.get_aval(leaf), axes, "jax.lax.psum") != "unreduced":
      return _psum_leaves(leaf, axes, groups)
    if groups is not None:
      raise NotImplementedError
    return unreduced_psum_p.bind(leaf, axes=axes)
  return tree_map(one, x)


def pmean(x, axis_name, *, axis_index_groups=None):
  """The mean of `x` over the mapped axis `axis_name`."""
  x = psum(x, axis_name, axis_index_groups=axis_index_groups)
  n = psum(1, axis_name, axis_index_groups=axis_index_groups)
  return tree_map(lambda v: v / n, x)


def _pminmax(prim, x, axis_name, axis_index_groups):
  axes = _names(axis_name)
  if any(isinstance(a, int) for a in axes) and axis_index_groups is not None:
    raise ValueError("axis_index_groups only supported for sums over just named axes")
  groups = _validate_groups(axis_index_groups)
  return tree_map(lambda v: prim.bind(asarray_operand(v), axes=axes, axis_index_groups=groups),
                  x)


def pmax(x, axis_name, *, axis_index_groups=None):
  """The maximum of `x` over the mapped axis `axis_name`."""
  return _pminmax(pmax_p, x, axis_name, axis_index_groups)


def pmin(x, axis_name, *, axis_index_groups=None):
  """The minimum of `x` over the mapped axis `axis_name`."""
  return _pminmax(pmin_p, x, axis_name, axis_index_groups)


def axis_size(axis_name):
  """The size of the mapped axis `axis_name` (the product of sizes for a tuple of names)."""
  return psum(1, axis_name)


# ---- axis_index -------------------------------------------------------------------------------
axis_index_p = core.Primitive("axis_index")


def _axis_index_abstract_eval(*, axis_name):
  _check_axis_names(_names(axis_name), "axis_index")
  return ShapedArray((), np.int32)


def _axis_index_batch(axis_data, args, dims, *, axis_name):
  if axis_data.name not in _names(axis_name):
    return axis_index_p.bind(axis_name=axis_name), None
  return shape_ops.iota(np.int32, axis_data.size), 0


axis_index_p.def_abstract_eval(_axis_index_abstract_eval)
@axis_index_p.def_lowering
def _axis_index_lower(ctx, *, axis_name):
  _replica_groups(ctx, "axis_index", axis_name, None)
  return [_axis_index_value(ctx, axis_name)]
axis_index_p.def_batch_axis(_axis_index_batch)
ad.defjvp_zero(axis_index_p)


def axis_index(axis_name):
  """The index of the current example along the mapped axis `axis_name` (int32)."""
  if not isinstance(axis_name, (tuple, list)):
    return axis_index_p.bind(axis_name=axis_name)
  index, inner = 0, 1
  for name in reversed(axis_name):
    index = axis_index(name) * inner + index
    inner *= axis_size(name)
  return index


# ---- ppermute ---------------------------------------------------------------------------------
ppermute_p = core.Primitive("ppermute")


def _ppermute_abstract_eval(x, *, axis_name, perm):
  _check_axis_names(axis_name, "ppermute")
  return x


def _check_perm(perm, size):
  srcs = [s for s, _ in perm]
  dsts = [d for _, d in perm]
  if len(set(srcs)) != len(srcs) or len(set(dsts)) != len(dsts):
    raise ValueError(f"ppermute sources and destinations must be unique, got {perm}.")
  if any(not 0 <= i < size for i in srcs + dsts):
    raise ValueError(f"ppermute indices must lie in [0, {size}) for an axis of size {size}, "
                     f"got {perm}.")


def _ppermute_batch(axis_data, args, dims, *, axis_name, perm):
  (v,), (d,) = args, dims
  name, size = axis_data.name, axis_data.size
  if name not in axis_name:
    return ppermute_p.bind(v, axis_name=axis_name, perm=perm), d
  rest = tuple(a for a in axis_name if a != name)
  if rest:
    return ppermute_p.bind(v, axis_name=rest, perm=perm), d
  _check_perm(perm, size)
  if d is None:
    v, d = batching.broadcast(v, size, 0), 0
  src_of = dict((dst, src) for src, dst in perm)
  indices = np.array([src_of.get(i, 0) for i in range(size)], np.int32)
  out = indexing.take(v, indices, axis=d)
  if len(src_of) < size:   # examples that receive nothing get zeros
    mask_shape = [1] * core.get_aval(out).ndim
    mask_shape[d] = size
    mask = np.array([i in src_of for i in range(size)]).reshape(mask_shape)
    out = lax_numpy.where(mask, out, np.zeros((), core.get_aval(out).dtype))
  return out, d


def _ppermute_transpose(ct, x, *, axis_name, perm):
  inverse = tuple((dst, src) for src, dst in perm)
  return [ppermute_p.bind(ct, axis_name=axis_name, perm=inverse)]


ppermute_p.def_abstract_eval(_ppermute_abstract_eval)
@ppermute_p.def_lowering
def _ppermute_lower(ctx, x, *, axis_name, perm):
  groups = _groups(ctx, "ppermute", axis_name, None)
  _check_perm(perm, _group_size(ctx, axis_name, None))
  full = [(g[src], g[dst]) for g in groups for src, dst in perm]
  pairs = ir.DenseIntElementsAttr.get(np.asarray(full, np.int64).reshape(len(full), 2))
  op = hlo.CollectivePermuteOp(x, pairs, results=[mlir.aval_to_ir_type(ctx.avals_out[0])],
                               **_spmd_args(ctx, global_ids=False))
  return [op.result]
ppermute_p.def_batch_axis(_ppermute_batch)
ad.deflinear2(ppermute_p, _ppermute_transpose)


def ppermute(x, axis_name, perm):
  """Send `x` from example `src` to example `dst` for each (src, dst) in `perm` along the mapped
  axis `axis_name`; examples that are no destination receive zeros."""
  names = _names(axis_name)
  perm = tuple(tuple(map(operator.index, p)) for p in perm)
  return tree_map(lambda v: ppermute_p.bind(asarray_operand(v), axis_name=names, perm=perm), x)


def pshuffle(x, axis_name, perm):
  """Example i receives x from example perm[i] along `axis_name`."""
  if set(perm) != set(range(len(perm))):
    raise ValueError(f"`perm` does not represent a permutation: {perm}")
  return ppermute(x, axis_name, list(zip(perm, range(len(perm)))))


# ---- all_gather -------------------------------------------------------------------------------
all_gather_p = core.Primitive("all_gather")


def _all_gather_abstract_eval(x, *, all_gather_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
  _check_axis_names(_names(axis_name), "all_gather")
  shape = list(x.shape)
  if tiled:
    shape[all_gather_dimension] *= axis_size
  else:
    shape.insert(all_gather_dimension, axis_size)
  return ShapedArray(shape, x.dtype, x.weak_type)


def _all_gather_batch(axis_data, args, dims, *, all_gather_dimension, axis_name,
                      axis_index_groups, axis_size, tiled, _prim=None):
  (x,), (d,) = args, dims
  prim = _prim or all_gather_p
  params = dict(axis_name=axis_name, axis_size=axis_size, tiled=tiled)
  if prim is all_gather_p:
    params["axis_index_groups"] = axis_index_groups
  names = _names(axis_name)
  if axis_data.name not in names:
    if d is None:
      return prim.bind(x, all_gather_dimension=all_gather_dimension, **params), None
    dim = all_gather_dimension
    if d <= dim:
      dim += 1
    elif not tiled:
      d += 1
    return prim.bind(x, all_gather_dimension=dim, **params), d
  _no_groups_under_vmap(axis_index_groups)
  if len(names) > 1:
    raise NotImplementedError("all_gather over several axis names is not supported under vmap.")
  dim = all_gather_dimension
  if d is None:
    y = batching.broadcast(x, axis_data.size, dim)
  else:
    y = _moveaxis(x, d, dim)
  if tiled:
    y = _fold_axis(y, dim)
  return y, None


def _all_gather_transpose(ct, x, *, all_gather_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
  return [reduce_scatter_p.bind(ct, scatter_dimension=all_gather_dimension, axis_name=axis_name,
                                axis_index_groups=axis_index_groups, axis_size=axis_size,
                                tiled=tiled)]


all_gather_p.def_abstract_eval(_all_gather_abstract_eval)
@all_gather_p.def_lowering
def _all_gather_lower(ctx, x, *, all_gather_dimension, axis_name, axis_index_groups,
                      axis_size, tiled):
  groups = _replica_groups(ctx, "all_gather", axis_name, axis_index_groups)
  if not tiled:   # gather along a new axis of size 1
    aval = ctx.avals_in[0]
    shape = list(aval.shape)
    shape.insert(all_gather_dimension, 1)
    dims = [i for i in range(len(shape)) if i != all_gather_dimension]
    x = hlo.broadcast_in_dim(mlir.aval_to_ir_type(aval.update(shape=tuple(shape))), x,
                             mlir.dense_i64(dims))
  op = hlo.AllGatherOp([mlir.aval_to_ir_type(ctx.avals_out[0])], [x], all_gather_dimension,
                       groups, **_spmd_args(ctx))
  return [op.results[0]]
all_gather_p.def_batch_axis(_all_gather_batch)
ad.deflinear2(all_gather_p, _all_gather_transpose)


# all_gather(..., to='invarying'): the gathered value is the same on every device of the axes
# (varying -> invariant under check_vma); it transposes to each device's slice.
all_gather_invariant_p = core.Primitive("all_gather_invariant")


@all_gather_invariant_p.def_abstract_eval
def _all_gather_invariant_abstract_eval(x, *, all_gather_dimension, axis_name, axis_size,
                                        tiled):
  out = _all_gather_abstract_eval(x, all_gather_dimension=all_gather_dimension,
                                  axis_name=axis_name, axis_index_groups=None,
                                  axis_size=axis_size, tiled=tiled)
  return out.update(vma=x.vma - frozenset(_names(axis_name)))


all_gather_invariant_p.def_lowering(
    lambda ctx, x, **params: _all_gather_lower(ctx, x, axis_index_groups=None, **params))
all_gather_invariant_p.def_batch_axis(
    lambda axis_data, args, dims, **params: _all_gather_batch(
        axis_data, args, dims, axis_index_groups=None, _prim=all_gather_invariant_p, **params))


def _all_gather_invariant_transpose(ct, x, *, all_gather_dimension, axis_name, axis_size,
                                    tiled):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  size = core.get_aval(ct).shape[all_gather_dimension] // axis_size
  start = lax_api.mul(axis_index(axis_name), np.int32(size))
  out = shape_ops.dynamic_slice_in_dim(ct, start, size, all_gather_dimension)
  return [out if tiled else shape_ops.squeeze(out, (all_gather_dimension,))]


ad.deflinear2(all_gather_invariant_p, _all_gather_invariant_transpose)


def all_gather(x, axis_name, *, axis_index_groups=None, axis=0, tiled=False, to="varying"):
  """Gather `x` from every example along `axis_name`: stacked in a new axis `axis`, or
  concatenated along the existing axis `axis` when `tiled`."""
  allowed = {"varying", "reduced", "invarying"}
  if to not in allowed:
    raise ValueError(f"Got unexpected `to` value for `jax.lax.all_gather`. Allowed `to` values "
                     f"are: {allowed}")
  names = _names(axis_name)
  if not names:
    return x
  groups = _validate_groups(axis_index_groups)
  if to in ("invarying", "reduced") and groups is not None:
    raise NotImplementedError
  size = psum(1, names, axis_index_groups=groups)

  def bind(v):
    v = asarray_operand(v)
    nd = core.get_aval(v).ndim
    dim = utils.canonicalize_axis(axis, nd if tiled else nd + 1)
    if to == "invarying":
      return all_gather_invariant_p.bind(v, all_gather_dimension=dim, axis_name=names,
                                         axis_size=size, tiled=tiled)
    if to == "reduced":
      return all_gather_reduced_p.bind(v, all_gather_dimension=dim, axis_name=names,
                                       axis_size=size, tiled=tiled)
    return all_gather_p.bind(v, all_gather_dimension=dim, axis_name=names,
                             axis_index_groups=groups, axis_size=size, tiled=tiled)
  return tree_map(bind, x)


# ---- psum_scatter (reduce_scatter) -------------------------------------------------------------
reduce_scatter_p = core.Primitive("reduce_scatter")


def _reduce_scatter_abstract_eval(x, *, scatter_dimension, axis_name, axis_index_groups,
                                  axis_size, tiled):
  _check_axis_names(_names(axis_name), "reduce_scatter")
  shape = list(x.shape)
  n = shape[scatter_dimension]
  if tiled:
    if n % axis_size:
      raise ValueError(f"tiled reduce_scatter operand scatter dimension size {n} must be "
                       f"divisible by shard_count {axis_size}")
    shape[scatter_dimension] = n // axis_size
  else:
    if n != axis_size:
      raise ValueError(f"reduce_scatter operand scatter dimension size {n} must match shard "
                       f"count {axis_size}")
    del shape[scatter_dimension]
  return ShapedArray(shape, x.dtype, x.weak_type)


def _reduce_scatter_batch(axis_data, args, dims, *, scatter_dimension, axis_name,
                          axis_index_groups, axis_size, tiled):
  (x,), (d,) = args, dims
  params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups, axis_size=axis_size,
                tiled=tiled)
  names = _names(axis_name)
  if axis_data.name not in names:
    if d is None:
      return reduce_scatter_p.bind(x, scatter_dimension=scatter_dimension, **params), None
    dim = scatter_dimension
    if d <= dim:
      dim += 1
    elif not tiled:
      d -= 1
    return reduce_scatter_p.bind(x, scatter_dimension=dim, **params), d
  _no_groups_under_vmap(axis_index_groups)
  if len(names) > 1:
    raise NotImplementedError("psum_scatter over several axis names is not supported under "
                              "vmap.")
  n = core.get_aval(x).shape[scatter_dimension + (d is not None and d <= scatter_dimension)]
  _reduce_scatter_abstract_eval(ShapedArray((n,), np.float32), scatter_dimension=0,
                                axis_name=(), axis_index_groups=None, axis_size=axis_data.size,
                                tiled=tiled)   # the size checks
  # The sum over examples, whose scatter axis becomes the batch axis (example i keeps piece i).
  y = _mul_by_size(x, axis_data.size) if d is None else reductions.reduce_sum(x, (d,))
  if tiled:
    y = _split_axis(y, scatter_dimension, axis_data.size)
  return y, scatter_dimension


def _reduce_scatter_transpose(ct, x, *, scatter_dimension, axis_name, axis_index_groups,
                              axis_size, tiled):
  return [all_gather_p.bind(ct, all_gather_dimension=scatter_dimension, axis_name=axis_name,
                            axis_index_groups=axis_index_groups, axis_size=axis_size,
                            tiled=tiled)]


reduce_scatter_p.def_abstract_eval(_reduce_scatter_abstract_eval)
@reduce_scatter_p.def_lowering
def _reduce_scatter_lower(ctx, x, *, scatter_dimension, axis_name, axis_index_groups,
                          axis_size, tiled):
  groups = _replica_groups(ctx, "psum_scatter", axis_name, axis_index_groups)
  aval_in, aval_out = ctx.avals_in[0], ctx.avals_out[0]
  shape = list(aval_in.shape)
  shape[scatter_dimension] //= axis_size
  piece = aval_in.update(shape=tuple(shape))
  op = hlo.ReduceScatterOp(mlir.aval_to_ir_type(piece), x, scatter_dimension, groups,
                           **_spmd_args(ctx))
  _fill_region(op, "psum", aval_in.dtype)
  out = op.result
  if not tiled:   # drop the scattered axis (of size 1 now)
    out = hlo.reshape(mlir.aval_to_ir_type(aval_out), out)
  return [out]
reduce_scatter_p.def_batch_axis(_reduce_scatter_batch)
ad.deflinear2(reduce_scatter_p, _reduce_scatter_transpose)


def psum_scatter(x, axis_name, *, scatter_dimension=0, axis_index_groups=None, tiled=False):
  """psum(x, axis_name), of which example i keeps only piece i along `scatter_dimension`."""
  names = _names(axis_name)
  if not names:
    return x
  groups = _validate_groups(axis_index_groups)
  size = psum(1, names, axis_index_groups=groups)

  def bind(v):
    v = asarray_operand(v)
    if (core.vma_state.axes is not None and
        _get_from(core.get_aval(v), names, "jax.lax.psum_scatter") == "unreduced"):
      if groups is not None:
        raise NotImplementedError
      return unreduced_reduce_scatter_p.bind(v, axis_name=names,
                                             scatter_dimension=scatter_dimension,
                                             axis_size=size, tiled=tiled)
    return reduce_scatter_p.bind(v, scatter_dimension=scatter_dimension, axis_name=names,
                                 axis_index_groups=groups, axis_size=size, tiled=tiled)
  return tree_map(bind, x)


# unreduced_reduce_scatter: psum_scatter of an unreduced value (unreduced -> varying); its
# transpose is all_gather_reduced (varying -> reduced), and the other way round.
unreduced_reduce_scatter_p = core.Primitive("unreduced_reduce_scatter")


@unreduced_reduce_scatter_p.def_abstract_eval
def _unreduced_reduce_scatter_abstract_eval(x, *, axis_name, scatter_dimension, axis_size,
                                            tiled):
  _check_axis_names(axis_name, "reduce_scatter")
  axes = frozenset(axis_name)
  if not x.ur[0]:
    raise ValueError("unreduced_psum_scatter only accepts inputs that are unreduced. Got "
                     f"{x.str_short(True)}")
  if not x.ur[0] & axes:
    raise ValueError("unreduced_psum_scatter is a Unreduced -> Varying collective. This means "
                     f"that the axis_name={axis_name} passed to `unreduced_psum_scatter` must "
                     f"be present in jax.typeof(x).mat.unreduced={x.ur[0]}")
  if x.vma & axes:
    raise ValueError("unreduced_psum_scatter's input cannot be varying across the axis_name "
                     f"provided. Got x={x.str_short(True)} and axis_name={axis_name}")
  out = _reduce_scatter_abstract_eval(x, scatter_dimension=scatter_dimension,
                                      axis_name=axis_name, axis_index_groups=None,
                                      axis_size=axis_size, tiled=tiled)
  return out.update(vma=x.vma | axes, ur=(x.ur[0] - axes, x.ur[1]))


unreduced_reduce_scatter_p.def_lowering(
    lambda ctx, x, **params: _reduce_scatter_lower(ctx, x, axis_index_groups=None, **params))


# (JAX's batching rules of unreduced_reduce_scatter and all_gather_reduced raise this.)
_FILE_AN_ISSUE = "Please file an issue at https://github.com/jax-ml/jax/issues"
unreduced_reduce_scatter_p.def_batch(
    batching.no_batching_rule("unreduced_reduce_scatter", _FILE_AN_ISSUE))


all_gather_reduced_p = core.Primitive("all_gather_reduced")


@all_gather_reduced_p.def_abstract_eval
def _all_gather_reduced_abstract_eval(x, *, all_gather_dimension, axis_name, axis_size, tiled):
  _check_axis_names(axis_name, "all_gather_reduced")
  axes = frozenset(axis_name)
  if not x.vma:
    raise ValueError("all_gather_reduced only accepts inputs that are varying. Got "
                     f"{x.str_short(True)}")
  if not x.vma & axes:
    raise ValueError("all_gather_reduced is a Varying -> Reduced collective. This means that "
                     f"the axis_name={axis_name} passed to `all_gather_reduced` must be present "
                     f"in jax.typeof(x).mat.varying={x.vma}")
  if x.ur[1] & axes:
    raise ValueError("all_gather_reduced's input cannot be reduced across the axis_name "
                     f"provided. Got x={x.str_short(True)} and axis_name={axis_name}")
  out = _all_gather_abstract_eval(x, all_gather_dimension=all_gather_dimension,
                                  axis_name=axis_name, axis_index_groups=None,
                                  axis_size=axis_size, tiled=tiled)
  return out.update(vma=x.vma - axes, ur=(x.ur[0], x.ur[1] | axes))


all_gather_reduced_p.def_lowering(
    lambda ctx, x, **params: _all_gather_lower(ctx, x, axis_index_groups=None, **params))


all_gather_reduced_p.def_batch(batching.no_batching_rule("all_gather_reduced", _FILE_AN_ISSUE))


@all_gather_reduced_p.def_impl
def _all_gather_reduced_impl(x, **params):
  raise NotImplementedError


def _gather_scatter_transpose(ct, x, *, axis_name, axis_size, tiled, **dims):
  if type(ct) is ad.Zero:
    return [_ct_zero(x)]
  if "all_gather_dimension" in dims:   # (all_gather_reduced's transpose)
    return [unreduced_reduce_scatter_p.bind(ct, axis_name=axis_name,
                                            scatter_dimension=dims["all_gather_dimension"],
                                            axis_size=axis_size, tiled=tiled)]
  return [all_gather_reduced_p.bind(ct, all_gather_dimension=dims["scatter_dimension"],
                                    axis_name=axis_name, axis_size=axis_size, tiled=tiled)]


ad.deflinear2(all_gather_reduced_p, _gather_scatter_transpose)
ad.deflinear2(unreduced_reduce_scatter_p, _gather_scatter_transpose)


# ---- all_to_all -------------------------------------------------------------------------------
all_to_all_p = core.Primitive("all_to_all")


def _all_to_all_abstract_eval(x, *, axis_name, split_axis, concat_axis, axis_index_groups,
                              tiled):
  names = _names(axis_name)
  _check_axis_names(names, "all_to_all")
  size = len(axis_index_groups[0]) if axis_index_groups is not None else math.prod(
      batching.axis_size(n) for n in names)
  shape = list(x.shape)
  if shape[split_axis] % size:
    raise ValueError(f"all_to_all split_axis size {shape[split_axis]} must be divisible by the "
                     f"size {size} of the axis {axis_name}")
  shape[split_axis] //= size
  shape[concat_axis] *= size
  return ShapedArray(shape, x.dtype, False)


def _all_to_all_batch(axis_data, args, dims, *, axis_name, split_axis, concat_axis,
                      axis_index_groups, tiled):
  (x,), (d,) = args, dims
  names = _names(axis_name)
  size = axis_data.size
  params = dict(axis_name=axis_name, axis_index_groups=axis_index_groups, tiled=tiled)
  if axis_data.name not in names:
    if d is None:
      return all_to_all_p.bind(x, split_axis=split_axis, concat_axis=concat_axis,
                               **params), None
    return all_to_all_p.bind(x, split_axis=split_axis + (d <= split_axis),
                             concat_axis=concat_axis + (d <= concat_axis), **params), d
  _no_groups_under_vmap(axis_index_groups)
  if len(names) > 1:
    raise NotImplementedError("all_to_all over several axis names is not supported under vmap.")
  if d is None:
    x, d = batching.broadcast(x, size, 0), 0
  if split_axis == concat_axis:
    axis = split_axis + (d <= split_axis)
    d_before = d
    x = _split_axis(x, axis, size)
    d += axis <= d
    perm = list(range(core.get_aval(x).ndim))
    perm[d], perm[axis] = perm[axis], perm[d]
    x = shape_ops.transpose(x, perm)
    return _fold_axis(x, axis), d_before
  x = _fold_axis(_moveaxis(x, d, concat_axis), concat_axis)
  return _split_axis(x, split_axis, size), split_axis


def _all_to_all_transpose(ct, x, *, axis_name, split_axis, concat_axis, axis_index_groups,
                          tiled):
  return [all_to_all_p.bind(ct, axis_name=axis_name, split_axis=concat_axis,
                            concat_axis=split_axis, axis_index_groups=axis_index_groups,
                            tiled=tiled)]


all_to_all_p.def_abstract_eval(_all_to_all_abstract_eval)
@all_to_all_p.def_lowering
def _all_to_all_lower(ctx, x, *, axis_name, split_axis, concat_axis, axis_index_groups, tiled):
  groups = _replica_groups(ctx, "all_to_all", axis_name, axis_index_groups)
  count = _group_size(ctx, axis_name, axis_index_groups)
  op = hlo.AllToAllOp([x], split_axis, concat_axis, count, groups,
                      results=[mlir.aval_to_ir_type(ctx.avals_out[0])],
                      **_spmd_args(ctx, global_ids=False))
  return [op.results[0]]
all_to_all_p.def_batch_axis(_all_to_all_batch)
ad.deflinear2(all_to_all_p, _all_to_all_transpose)


def all_to_all(x, axis_name, split_axis, concat_axis, *, axis_index_groups=None, tiled=False):
  """Split axis `split_axis` of `x` into pieces sent one to each example along `axis_name`;
  the pieces received are stacked (or, when `tiled`, concatenated) at `concat_axis`."""
  groups = _validate_groups(axis_index_groups)

  def bind(v, split_axis=split_axis, concat_axis=concat_axis):
    v = asarray_operand(v)
    group = psum(1, axis_name, axis_index_groups=groups)
    shape = core.get_aval(v).shape
    if tiled:
      if shape[split_axis] % group != 0:
        raise ValueError(f"The size of all_to_all split_axis ({shape[split_axis]}) has to be "
                         f"divisible by the size of the named axis {axis_name} ({group})")
    else:
      if group != shape[split_axis]:
        raise ValueError("all_to_all requires the size of the mapped axis axis_name to equal "
                         f"x.shape[split_axis], but they are {group} and {shape[split_axis]} "
                         "respectively.")
      if split_axis < concat_axis:
        concat_axis += 1   # a position after split_axis is removed
        v = _expand(v, concat_axis)
      elif concat_axis < split_axis:
        v = _expand(v, concat_axis)
        split_axis += 1
    out = all_to_all_p.bind(v, split_axis=split_axis, concat_axis=concat_axis,
                            axis_name=axis_name, axis_index_groups=groups, tiled=tiled)
    if not tiled and split_axis != concat_axis:
      out = shape_ops.squeeze(out, (split_axis,))
    return out
  return tree_map(bind, x)


def pswapaxes(x, axis_name, axis, *, axis_index_groups=None):
  """Swap the mapped axis `axis_name` with the positional axis `axis` (an all_to_all)."""
  return all_to_all(x, axis_name, axis, axis, axis_index_groups=axis_index_groups)



# ---- psend / precv ----------------------------------------------------------------------------
# One-sided halves of a ppermute (XLA's Send and Recv): psend sends `x` to the destinations of
# `perm` and returns a token; precv, given a token (from psend or create_token), receives a
# value of `out_shape`. Both are side effects (never dropped). XLA implements them on GPU only:
# on CPU, as with JAX, lowering them raises NotImplementedError.
psend_p = core.Primitive("psend")
psend_p.effectful = True


@psend_p.def_abstract_eval
def _psend_abstract_eval(x, *, axis_name, perm):
  _check_axis_names(axis_name, "psend")
  return core.abstract_token


@psend_p.def_lowering
def _psend_lower(ctx, x, *, axis_name, perm):
  raise NotImplementedError("psend is currently only implemented on GPU")


@psend_p.def_batch_axis
def _psend_batch(axis_data, args, dims, *, axis_name, perm):
  if axis_data.name not in axis_name:
    return psend_p.bind(args[0], axis_name=axis_name, perm=perm), None
  # Over the vmapped axis, JAX batches psend as the ppermute it stands for: the result is the
  # permuted value (not a token).
  return _ppermute_batch(axis_data, args, dims, axis_name=axis_name, perm=perm)


def psend(x, axis_name, perm):
  """Send `x` (each leaf of a pytree) along the mapped axis `axis_name` from `src` to `dst` for
  each pair of `perm`; returns a token for a matching `precv` (GPU only)."""
  names = _names(axis_name)
  perm = tuple(tuple(p) for p in perm)
  return tree_map(lambda v: psend_p.bind(asarray_operand(v), axis_name=names, perm=perm), x)


precv_p = core.Primitive("precv")
precv_p.effectful = True


@precv_p.def_abstract_eval
def _precv_abstract_eval(token, *, out_shape, axis_name, perm):
  return out_shape


@precv_p.def_lowering
def _precv_lower(ctx, token, *, out_shape, axis_name, perm):
  raise NotImplementedError("precv is currently only implemented on GPU")


precv_p.def_batch_axis(batching.no_batching_rule(
    "precv", "precv cannot be batched (vmap): it has no batching rule for `out_shape`.",
    TypeError))


def precv(token, out_shape, axis_name, perm):
  """Receive a value shaped like `out_shape` (a ShapeDtypeStruct) along the mapped axis
  `axis_name` from the sources of `perm`, after `token` (from psend or create_token); GPU
  only."""
  return precv_p.bind(token, out_shape=ShapedArray(out_shape.shape, out_shape.dtype),
                      axis_name=_names(axis_name), perm=tuple(tuple(p) for p in perm))


# ---- ragged_all_to_all ------------------------------------------------------------------------
# Every device sends the slices operand[input_offsets[i]:+send_sizes[i]] to the device
# i // (K / axis size) (K = len(input_offsets)), where they are written into its `output` at
# output_offsets[i]; the result is `output` with what this device received written in. It
# lowers to XLA's ragged_all_to_all custom call (JAX's text); XLA:CPU has no ragged-all-to-all,
# so compiling it on CPU fails as with JAX.
ragged_all_to_all_p = core.Primitive("ragged_all_to_all")
_RAGGED_ARGS = ("input_offsets", "send_sizes", "output_offsets", "recv_sizes")


@ragged_all_to_all_p.def_abstract_eval
def _ragged_all_to_all_abstract_eval(operand, output, *offsets_and_sizes, axis_name,
                                     axis_index_groups):
  for name, aval in zip(_RAGGED_ARGS, offsets_and_sizes):
    if not dtypes.issubdtype(aval.dtype, np.integer):
      raise ValueError(f"ragged_all_to_all {name} must be integer type.")
  for name, aval in zip(_RAGGED_ARGS, offsets_and_sizes):
    if aval.ndim != 1 or aval.shape[0] < 1:
      raise ValueError(f"ragged_all_to_all {name} must be rank 1 with positive dimension "
                       f"size, but got shape {aval.shape}")
  _check_axis_names(axis_name, "ragged_all_to_all")
  return output.update(weak_type=False)


@ragged_all_to_all_p.def_impl
def _ragged_all_to_all_impl(*args, **params):
  raise RuntimeError("ragged_all_to_all must be used within a mapped context like vmap or "
                     "shard_map.")


@ragged_all_to_all_p.def_lowering
def _ragged_all_to_all_lower(ctx, *args, axis_name, axis_index_groups):
  groups = _groups(ctx, "ragged_all_to_all", axis_name, axis_index_groups)
  if axis_index_groups is not None and len({len(g) for g in axis_index_groups}) > 1:
    raise ValueError("Replica groups must be equally sized")
  # A channel id also under pmap (cross-replica-and-partition mode with one partition: the
  # groups are replica ids), as JAX 0.10.2's pmap (a shard_map) emits it; without one, XLA:CPU
  # crashes compiling the replicated program instead of reporting that it has no such op.
  config = {"replica_groups": ir.DenseIntElementsAttr.get(np.ascontiguousarray(groups)),
            "channel_id": ir.IntegerAttr.get(ir.IntegerType.get_signless(64), 1)}
  op = hlo.CustomCallOp([mlir.aval_to_ir_type(ctx.avals_out[0])], list(args),
                        call_target_name=ir.StringAttr.get("ragged_all_to_all"),
                        backend_config=ir.DictAttr.get(config),
                        api_version=ir.IntegerAttr.get(ir.IntegerType.get_signless(32), 4))
  return op.results


@ragged_all_to_all_p.def_jvp
def _ragged_all_to_all_jvp(primals, tangents, **params):
  operand, output, *offsets_and_sizes = primals
  d_operand, d_output = tangents[:2]
  out = ragged_all_to_all_p.bind(operand, output, *offsets_and_sizes, **params)
  if type(d_operand) is ad.Zero and type(d_output) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
  # Linear in (operand, output): the tangents travel the same way.
  d_out = ragged_all_to_all_p.bind(ad.instantiate(d_operand), ad.instantiate(d_output),
                                   *offsets_and_sizes, **params)
  return out, d_out


@ragged_all_to_all_p.def_transpose
def _ragged_all_to_all_transpose(ct, operand, output, input_offsets, send_sizes, output_offsets,
                                 recv_sizes, *, axis_name, axis_index_groups):
  if type(ct) is ad.Zero:
    return [None] * 6
  # operand: the reverse exchange brings each received slice's cotangent back to its sender.
  # output: the cotangent of what was not overwritten by received slices.
  zero = ad.zeros_like_aval(operand.aval)
  out_offsets = all_to_all(output_offsets, axis_name, 0, 0, tiled=True)
  in_offsets = all_to_all(input_offsets, axis_name, 0, 0, tiled=True)
  operand_ct = ragged_all_to_all_p.bind(ct, zero, out_offsets, recv_sizes, in_offsets,
                                        send_sizes, axis_name=axis_name,
                                        axis_index_groups=axis_index_groups)
  ct_aval = core.get_aval(ct)
  marks = creation.full(ct_aval.shape[0], 0, dtype="int32")
  marks = indexing._IndexUpdateHelper(marks)[out_offsets].set(1)
  marks = indexing._IndexUpdateHelper(marks)[ufuncs.add(out_offsets, recv_sizes)].add(-1)
  mask = reductions.cumsum(marks)
  mask = shape_ops.expand_dims(mask, tuple(range(1, ct_aval.ndim)))
  mask = shape_ops.broadcast_in_dim(mask, ct_aval.shape, tuple(range(ct_aval.ndim)))
  output_ct = lax_api.select(mask, lax_api._zeros(ct), ct)
  return [operand_ct if ad.is_undefined(operand) else None,
          output_ct if ad.is_undefined(output) else None, None, None, None, None]


@ragged_all_to_all_p.def_batch_axis
def _ragged_all_to_all_batch(axis_data, args, dims, *, axis_name, axis_index_groups):
  if all(d is None for d in dims) and axis_data.name not in axis_name:
    return ragged_all_to_all_p.bind(*args, axis_name=axis_name,
                                    axis_index_groups=axis_index_groups), None
  if axis_data.name in axis_name:
    raise NotImplementedError("ragged_all_to_all over a vmapped axis is not supported (nor by "
                              "JAX).")
  if axis_index_groups:
    raise NotImplementedError("ragged_all_to_all with axis_index_groups under vmap is not "
                              "supported (nor by JAX).")
  # Batched over another axis: the examples' ragged arrays are laid end to end (offsets
  # shifted by each example's start), exchanged once, and split again.
  size = axis_data.size

  def example_minor(x, d):   # (K, size)
    return batching.broadcast(x, size, 1) if d is None else x if d == 1 else \
        shape_ops.transpose(x, (1, 0))

  def merge(x):
    shape = core.get_aval(x).shape
    return shape_ops.reshape(x, (shape[0] * shape[1],) + shape[2:])

  operand, output = (batching.bdim_at_front(x, d, size) for x, d in zip(args[:2], dims[:2]))
  n, m = core.get_aval(operand).shape[1], core.get_aval(output).shape[1]
  input_offsets, send_sizes, output_offsets, recv_sizes = (
      example_minor(x, d) for x, d in zip(args[2:], dims[2:]))

  def shift(offsets, step):
    dt = core.get_aval(offsets).dtype
    starts = shape_ops.broadcast_in_dim(shape_ops.iota(dt, size), (1, size), (1,))
    return lax_api.add(offsets, lax_api.mul(starts, lax_api.scalar_literal(step, dt, True)))
  input_offsets, output_offsets = shift(input_offsets, n), shift(output_offsets, m)
  merged = [merge(x) for x in (operand, output, input_offsets, send_sizes, output_offsets,
                                recv_sizes)]
  out = ragged_all_to_all(*merged, axis_name=axis_name)
  out_shape = core.get_aval(out).shape
  return shape_ops.reshape(out, (size, out_shape[0] // size) + out_shape[1:]), 0


def ragged_all_to_all(operand, output, input_offsets, send_sizes, output_offsets, recv_sizes, *,
                      axis_name, axis_index_groups=None):
  """all_to_all of ragged arrays along the mapped axis `axis_name`: slice i of `operand`
  (input_offsets[i], send_sizes[i] long along axis 0) goes to device i // (K / axis size)
  (K = len(input_offsets)), which writes it into its `output` at output_offsets[i]. Returns
  `output` with the slices this device received (recv_sizes long) written in."""
  names = _names(axis_name)
  groups = None if axis_index_groups is None else tuple(map(tuple, axis_index_groups))
  args = [asarray_operand(a) for a in (operand, output, input_offsets, send_sizes,
                                       output_offsets, recv_sizes)]
  return ragged_all_to_all_p.bind(*args, axis_name=names, axis_index_groups=groups)
