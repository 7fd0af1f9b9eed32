"""Shared pieces of arrax's sparse formats: SparseInfo, the efficiency errors and warnings,
broadcasting vmap over batch dimensions, and `sparse_primitive`, which gives a primitive
whose work is written as an arrax function its rules.

`sparse_primitive(name, impl, linear=...)` makes a primitive whose
  abstract eval   traces `impl` for the operand types (memoized per types and params),
  lowering        emits the traced `impl` (XLA operations, as JAX's `mlir.lower_fun`),
  batching        vmaps `impl`,
  JVP             is the sum over the operands `impl` is (multi)linear in of the primitive
                  applied with that operand replaced by its tangent,
  transpose       is the backward pass of `impl` traced as a function of the linear operands.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import numpy as np

from arrax._src import ad, core, dtypes, tracing
from arrax._src.batching import vmap
from arrax._src.lax import broadcasting
from arrax._src.lax.control_flow import common
from arrax._src.tree_util import tree_flatten, tree_unflatten


class SparseEfficiencyError(ValueError):
  """An operation on sparse arrays would be very inefficient (e.g. densify a large array)."""


class SparseEfficiencyWarning(UserWarning):
  """An operation on sparse arrays is inefficient."""


class CuSparseEfficiencyWarning(SparseEfficiencyWarning):
  """A cuSPARSE lowering is unavailable (never raised on CPU)."""


Shape = tuple


class SparseInfo(NamedTuple):
  """The static part of a sparse array: its shape and what is known of its indices."""
  shape: tuple
  indices_sorted: bool = False
  unique_indices: bool = False


def broadcasting_vmap(fun, in_axes=0, out_axes=0):
  """vmap that treats a mapped axis of size 1 as unmapped (broadcast), as BCOO's batch
  dimensions of size 1 are."""
  @functools.wraps(fun)
  def batched(*args):
    leaves, tree = tree_flatten(args)
    axes = in_axes if isinstance(in_axes, (tuple, list)) else (in_axes,) * len(args)
    axes_leaves = []
    for a, ax in zip(args, axes):
      axes_leaves += [ax] * len(tree_flatten(a)[0])
    sizes = [x.shape[i] for x, i in zip(leaves, axes_leaves) if i is not None]
    size = max(sizes) if sizes else 1
    if size > 1:
      if any(i is not None and x.shape[i] not in (1, size) for x, i in zip(leaves, axes_leaves)):
        raise ValueError("broadcasting_vmap: mismatched input shapes")
      pairs = [(x, None) if i is None else
               (broadcasting.squeeze(x, (i,)), None) if x.shape[i] == 1 else (x, i)
               for x, i in zip(leaves, axes_leaves)]
      leaves = [p[0] for p in pairs]
      axes_leaves = [p[1] for p in pairs]
    flat_fun = lambda *ls: fun(*tree_unflatten(tree, list(ls)))
    axis_size = size if all(a is None for a in axes_leaves) else None
    return vmap(flat_fun, in_axes=tuple(axes_leaves), out_axes=out_axes,
                axis_size=axis_size)(*leaves)
  return batched


def nfold_vmap(fun, n, *, broadcasted=True, in_axes=0):
  """`fun` vmapped `n` times (broadcasting size-1 axes unless `broadcasted=False`)."""
  for _ in range(n):
    fun = broadcasting_vmap(fun, in_axes=in_axes) if broadcasted else vmap(fun, in_axes=in_axes)
  return fun


# ---- primitives written as arrax functions --------------------------------------------------
def _freeze(params):
  try:
    key = tuple(sorted(params.items()))
    hash(key)
    return key
  except TypeError:
    return None


def zero_tangent(x):
  """The symbolic zero tangent of the primal value `x`."""
  return ad.Zero(ad.tangent_aval(core.get_aval(x)))


def sparse_primitive(name, impl, *, multiple_results=False, linear=()):
  """A primitive computing `impl(*operands, **params)` with rules derived from it (see the
  module docstring). `linear`: the operand positions `impl` is jointly multilinear in (None:
  no JVP/transpose rules here)."""
  prim = core.Primitive(name)
  prim.multiple_results = multiple_results

  def flat(*args, **params):
    out = impl(*args, **params)
    return list(out) if multiple_results else [out]

  @functools.lru_cache(maxsize=512)
  def _cached_avals(avals, key):
    return _trace_avals(avals, dict(key))

  def _trace_avals(avals, params):
    jaxpr, _ = tracing.trace_to_jaxpr(lambda *xs: flat(*xs, **params), list(avals))
    return [core.ShapedArray(a.shape, a.dtype, a.weak_type) for a in jaxpr.out_avals]

  @prim.def_abstract_eval
  def _abstract_eval(*avals, **params):
    avals = tuple(core.ShapedArray(a.shape, a.dtype, a.weak_type) for a in avals)
    key = _freeze(params)
    outs = _cached_avals(avals, key) if key is not None else _trace_avals(avals, params)
    return list(outs) if multiple_results else outs[0]

  prim.def_lowering(common.lower_fun(flat))

  @prim.def_batch
  def _batch(args, dims, **params):
    outs = vmap(lambda *xs: flat(*xs, **params), in_axes=tuple(dims))(*args)
    return (outs, [0] * len(outs)) if multiple_results else (outs[0], 0)

  if linear is None:   # the caller defines JVP and transpose
    return prim

  def _out_zero(out):
    return ad.Zero(ad.tangent_aval(core.get_aval(out)))

  @prim.def_jvp
  def _jvp(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    outs = out if multiple_results else [out]
    t_outs = [_out_zero(o) for o in outs]
    for i in linear:
      if type(tangents[i]) is ad.Zero:
        continue
      args = list(primals)
      args[i] = tangents[i]
      t = prim.bind(*args, **params)
      ts = t if multiple_results else [t]
      t_outs = [tz if not dtypes.issubdtype(o.dtype, np.inexact) else ad.add_tangents(tz, ti)
                for tz, ti, o in zip(t_outs, ts, map(core.get_aval, outs))]
    return out, (t_outs if multiple_results else t_outs[0])

  @prim.def_transpose
  def _transpose(ct, *args, **params):
    cts = list(ct) if multiple_results else [ct]
    undef = [i for i, a in enumerate(args) if ad.is_undefined(a)]

    def f(*lin):
      full = list(args)
      for i, x in zip(undef, lin):
        full[i] = x
      return flat(*full, **params)
    jaxpr, consts = tracing.trace_to_jaxpr(f, [args[i].aval for i in undef])
    cts = [None if type(c) is not ad.Zero and ad.is_float0(core.get_aval(c)) else c
           for c in cts]
    res = ad.backward_pass(jaxpr, consts, [ad.UndefinedPrimal(args[i].aval) for i in undef],
                           cts)
    out = [None] * len(args)
    for i, r in zip(undef, res):
      out[i] = r
    return out

  return prim
