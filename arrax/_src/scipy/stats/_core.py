"""Statistics of samples: mode, rankdata and sem (the standard error of the mean)."""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from arrax._src import dtypes
from arrax._src.batching import vmap
from arrax._src.jit import jit
from arrax._src.lax import sort as lax_sort
from arrax._src.lax.control_flow import conditionals
from arrax._src.numpy import (assembly, creation, lax_numpy, nanreductions, reductions,
                              searching, setops, ufuncs)
from arrax._src.numpy.util import canonicalize_axis, check_arraylike
from arrax._src.scipy.special import promote_args_inexact


class ModeResult(NamedTuple):
  mode: object
  count: object


def _check_nan_policy(nan_policy, name):
  if nan_policy not in ["propagate", "omit", "raise"]:
    raise ValueError(f"Illegal nan_policy value {nan_policy!r}; expected one of "
                     "{'propagate', 'omit', 'raise'}")
  if nan_policy == "omit":
    raise NotImplementedError(f"Logic for `nan_policy` of {nan_policy} is not implemented")
  if nan_policy == "raise":
    raise NotImplementedError(
        f"In order to best JIT compile `{name}`, we cannot know whether `x` contains nans. "
        f"Please check if nans exist in `x` outside of the `{name}` function.")


@jit(static_argnames=["axis", "nan_policy", "keepdims"])
def mode(a, axis=0, nan_policy="propagate", keepdims=False):
  """The most common value along `axis` (the smallest on ties) and how often it occurs."""
  check_arraylike("mode", a)
  x = lax_numpy.atleast_1d(a)
  _check_nan_policy(nan_policy, "mode")
  if axis is not None:
    axis = canonicalize_axis(axis, x.ndim)
  shape = x.shape
  if keepdims:
    out_shape = (tuple(1 for _ in shape) if axis is None
                 else tuple(1 if i == axis else s for i, s in enumerate(shape)))
  else:
    out_shape = () if axis is None else tuple(s for i, s in enumerate(shape) if i != axis)
  if axis is None:
    axis, x = 0, x.ravel()

  def one(v):
    if v.size == 0:
      float_ = dtypes.default_float_dtype()
      return creation.array(np.nan, dtype=float_), creation.array(0, dtype=float_)
    vals, counts = setops.unique(v, return_counts=True, size=v.size)
    return vals[reductions.argmax(counts)], counts.max()

  x = lax_numpy.moveaxis(x, axis, 0)
  x = x.reshape(x.shape[0], math.prod(x.shape[1:]))
  vals, counts = vmap(one, in_axes=1)(x)
  return ModeResult(vals.reshape(out_shape), counts.reshape(out_shape))


@jit(static_argnames=["method", "axis", "nan_policy"])
def rankdata(a, method="average", *, axis=None, nan_policy="propagate"):
  """Ranks (from 1) of the data, ties resolved by `method` ('average', 'min', 'max', 'dense',
  'ordinal'); all nan if any value is nan. Flattened unless `axis` is given."""
  check_arraylike("rankdata", a)
  _check_nan_policy(nan_policy, "rankdata")
  if method not in ("average", "min", "max", "dense", "ordinal"):
    raise ValueError(f"unknown method '{method}'")
  if axis is not None:
    return assembly.apply_along_axis(rankdata, axis, a, method)
  a = lax_numpy.ravel(a)
  out_dtype = dtypes.default_float_dtype()

  def ranks(a):
    arr, order = lax_sort.sort_key_val(a, creation.arange(a.size))
    inverse = creation.empty_like(order).at[order].set(creation.arange(order.size,
                                                                       dtype=order.dtype))
    if method == "ordinal":
      return (inverse + 1).astype(out_dtype)
    new = lax_numpy.concatenate([creation.array([True]), arr[1:] != arr[:-1]])
    dense = new.cumsum()[inverse]
    if method == "dense":
      return dense.astype(out_dtype)
    starts = searching.nonzero(new, size=arr.size + 1, fill_value=new.size)[0].astype(out_dtype)
    if method == "max":
      return starts[dense]
    if method == "min":
      return starts[dense - 1] + 1
    return .5 * (starts[dense] + starts[dense - 1] + 1)

  return conditionals.cond(reductions.any(ufuncs.isnan(a)),
                           lambda a: creation.full_like(a, np.nan, out_dtype), ranks, a)


@jit(static_argnames=["axis", "nan_policy", "keepdims"])
def sem(a, axis=0, ddof=1, nan_policy="propagate", *, keepdims=False):
  """The standard error of the mean along `axis` (nan_policy 'propagate' or 'omit')."""
  b, = promote_args_inexact("sem", a)
  if nan_policy == "propagate":
    size = b.size if axis is None else b.shape[axis]
    return b.std(axis, ddof=ddof, keepdims=keepdims) / ufuncs.sqrt(size).astype(b.dtype)
  if nan_policy == "omit":
    count = (~ufuncs.isnan(b)).sum(axis, keepdims=keepdims)
    return (nanreductions.nanstd(b, axis, ddof=ddof, keepdims=keepdims)
            / ufuncs.sqrt(count).astype(b.dtype))
  raise ValueError(f"{nan_policy} is not supported")
