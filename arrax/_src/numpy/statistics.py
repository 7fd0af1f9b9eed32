"""Order statistics, weighted averages, histograms, finite differences, interpolation and 1-D
convolutions: median, percentile, quantile, average, ptp, cov, corrcoef, histogram*, diff,
ediff1d, gradient, trapezoid, interp, convolve, correlate, unwrap.

As in JAX, quantiles sort along the reduced axis and read the neighbouring order statistics with
a gather; histograms locate each sample with a binary search over the bin edges and scatter-add
the weights. convolve/correlate are computed as a gather of the sliding windows of the padded
longer input followed by one dot_general (JAX uses conv_general_dilated, which arrax does not
have: values and dtypes agree, the jaxpr differs).
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np

from arrax._src import core, dtypes
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import lax as lax_ew
from arrax._src.lax import shape_ops, slicing
from arrax._src.lax import sort as lax_sort
from arrax._src.lax.control_flow import scan
from arrax._src.numpy import creation, indexing, lax_numpy, reductions, ufuncs, util
from arrax._src.numpy.util import (check_arraylike, ensure_arraylike, inline_jit,
                                   promote_dtypes, promote_dtypes_inexact)

_where = lax_numpy._where
_const = ufuncs._const


def _aval(x):
  return core.get_aval(x)


def _shape(x):
  return core.get_aval(x).shape


def _ndim(x):
  return len(core.get_aval(x).shape)


def _dtype(x):
  return core.get_aval(x).dtype


def _isnan(x):
  return lax_ew.ne(x, x)


def _int_dtype():
  return dtypes.default_int_dtype()


def _concrete_int(x, what):
  """A Python int from a value that must be known when tracing (ConcretizationTypeError if not)."""
  if isinstance(x, core.Tracer):
    raise ConcretizationTypeError(x, f"The problem arose with the {what}.\n")
  return operator.index(x)


def _axis_tuple(axis, ndim):
  """None -> (); an int or a sequence of ints -> canonical axes (duplicates rejected)."""
  if axis is None:
    return ()
  axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
  canon = tuple(util.canonicalize_axis(i, ndim) for i in axes)
  if len(set(canon)) != len(canon):
    raise ValueError(f"repeated axis: {axis}")
  return canon


# ---- quantile, percentile, median ---------------------------------------------------------------
_QUANTILE_METHODS = ("linear", "lower", "higher", "midpoint", "nearest", "inverted_cdf")


def _reduce_axes_last(a, weights, axis):
  """Move the axes of the tuple `axis` to the end and merge them into one trailing axis."""
  nd = _ndim(a)
  axis = tuple(util.canonicalize_axis(ax, nd) for ax in axis)
  if len(set(axis)) != len(axis):
    raise ValueError("repeated axis")
  keepdim = list(_shape(a))
  for ax in axis:
    keepdim[ax] = 1
  kept = [i for i in range(nd) if i not in axis]
  perm = tuple(kept) + tuple(sorted(axis))
  new_shape = tuple(_shape(a)[i] for i in kept) + (
      math.prod(_shape(a)[i] for i in axis),)
  a = shape_ops.reshape(a, new_shape, perm)
  if weights is not None:
    weights = shape_ops.reshape(weights, new_shape, perm)
  return a, weights, keepdim


def _quantile(a, q, axis, method, keepdims, squash_nans, weights=None):
  if method not in _QUANTILE_METHODS:
    raise ValueError("method can only be 'linear', 'lower', 'higher', 'midpoint', 'nearest' "
                     "or 'inverted_cdf'")
  if weights is not None:
    if dtypes.issubdtype(_dtype(weights), np.complexfloating):
      raise ValueError("Weights cannot be complex types.")
    if method != "inverted_cdf":
      raise NotImplementedError(f"{method} doesn't support weights. Only method "
                                "'inverted_cdf' supports weights.")
    a, weights = promote_dtypes_inexact(a, weights)
    if _shape(weights) != _shape(a):
      if axis is None:
        raise ValueError("Weights shape must match 'a' shape when axis is None.")
      ax_tuple = _axis_tuple(axis, _ndim(a))
      want = tuple(_shape(a)[ax] for ax in ax_tuple)
      if _shape(weights) != want:
        raise ValueError(f"Weights shape {_shape(weights)} must match reduction axes {want}")
      weights = shape_ops.broadcast_in_dim(weights, _shape(a), ax_tuple)
  else:
    a, = promote_dtypes_inexact(a)
  if dtypes.issubdtype(_dtype(a), np.complexfloating):
    raise ValueError("quantile does not support complex input, as the operation is poorly "
                     "defined.")
  keepdim = []
  if axis is None:
    if keepdims:
      keepdim = [1] * _ndim(a)
    a = lax_numpy.ravel(a)
    if weights is not None:
      weights = lax_numpy.ravel(weights)
    axis = 0
  elif isinstance(axis, tuple):
    a, weights, keepdim = _reduce_axes_last(a, weights, axis)
    axis = _ndim(a) - 1
  else:
    axis = util.canonicalize_axis(axis, _ndim(a))

  q_shape, q_ndim = _shape(q), _ndim(q)
  if q_ndim > 1:
    raise ValueError(f"q must be have rank <= 1, got shape {q_shape}")
  a_shape = _shape(a)
  q_orig = q
  int_dt = _int_dtype()

  if squash_nans:
    a = _where(_isnan(a), np.nan, a)   # NaNs (of either sign) sort last
    if weights is not None:
      a, weights = lax_sort.sort_key_val(a, weights, dimension=axis)
    else:
      a = lax_sort.sort(a, dimension=axis)
    counts = reductions.sum(lax_ew.bitwise_not(_isnan(a)), axis=axis, dtype=_dtype(q),
                            keepdims=keepdims)
    reduced_shape = _shape(counts)
    q = shape_ops.expand_dims(q, tuple(range(q_ndim, len(reduced_shape) + q_ndim)))
    counts = shape_ops.expand_dims(counts, tuple(range(q_ndim)))
    q = lax_ew.mul(q, lax_ew.sub(counts, _const(q, 1)))
    low, high = lax_ew.floor(q), lax_ew.ceil(q)
    high_weight = lax_ew.sub(q, low)
    low_weight = lax_ew.sub(_const(high_weight, 1), high_weight)
    last = ufuncs.subtract(counts, 1)
    low = lax_ew.max(_const(low, 0), lax_ew.min(low, last))
    last = ufuncs.subtract(counts, 1)
    high = lax_ew.max(_const(high, 0), lax_ew.min(high, last))
    low = lax_ew.convert_element_type(low, int_dt)
    high = lax_ew.convert_element_type(high, int_dt)
    out_shape = q_shape + reduced_shape
    index = [shape_ops.broadcasted_iota(int_dt, out_shape, d + q_ndim)
             for d in range(len(reduced_shape))]
    if keepdims:
      index[axis] = low
    else:
      index.insert(axis, low)
    low_value = a[tuple(index)]
    index[axis] = high
    high_value = a[tuple(index)]
  else:
    a = _where(reductions.any(_isnan(a), axis=axis, keepdims=True), np.nan, a)
    if weights is not None:
      a, weights = lax_sort.sort_key_val(a, weights, dimension=axis)
    else:
      a = lax_sort.sort(a, dimension=axis)
    q_dt = _dtype(q)
    n = lax_ew.convert_element_type(a_shape[axis], q_dt)
    q = lax_ew.mul(q, lax_ew.sub(n, _const(n, 1)))
    low, high = lax_ew.floor(q), lax_ew.ceil(q)
    high_weight = lax_ew.sub(q, low)
    low_weight = lax_ew.sub(_const(high_weight, 1), high_weight)
    low = lax_ew.clamp(_const(low, 0), low, lax_ew.sub(n, _const(n, 1)))
    high = lax_ew.clamp(_const(high, 0), high, lax_ew.sub(n, _const(n, 1)))
    low = lax_ew.convert_element_type(low, int_dt)
    high = lax_ew.convert_element_type(high, int_dt)
    slice_sizes = list(a_shape)
    slice_sizes[axis] = 1
    nd_out = len(a_shape) + q_ndim if keepdims else len(a_shape) + q_ndim - 1
    dnums = slicing.GatherDimensionNumbers(
        offset_dims=tuple(range(q_ndim, nd_out)),
        collapsed_slice_dims=() if keepdims else (axis,), start_index_map=(axis,))
    low_value = slicing.gather(a, shape_ops.expand_dims(low, (q_ndim,)), dnums, slice_sizes)
    high_value = slicing.gather(a, shape_ops.expand_dims(high, (q_ndim,)), dnums, slice_sizes)
    if q_ndim == 1:
      low_weight = shape_ops.broadcast_in_dim(low_weight, _shape(low_value), (0,))
      high_weight = shape_ops.broadcast_in_dim(high_weight, _shape(high_value), (0,))

  if method == "linear":
    q_dt = _dtype(q)
    result = lax_ew.add(lax_ew.mul(lax_numpy.astype(low_value, q_dt), low_weight),
                        lax_ew.mul(lax_numpy.astype(high_value, q_dt), high_weight))
  elif method == "lower":
    result = low_value
  elif method == "higher":
    result = high_value
  elif method == "nearest":
    pred = lax_ew.le(high_weight, _const(high_weight, 0.5))
    result = lax_ew.select(pred, low_value, high_value)
  elif method == "midpoint":
    result = lax_ew.mul(lax_ew.add(low_value, high_value), _const(low_value, 0.5))
  else:   # inverted_cdf
    result = _inverted_cdf(a, weights, q_orig, axis, keepdims, squash_nans, a_shape)
  if keepdims and keepdim:
    if q_ndim > 0:
      keepdim = [q_shape[0], *keepdim]
    result = shape_ops.reshape(result, tuple(keepdim))
  return lax_ew.convert_element_type(result, _dtype(a))


def _inverted_cdf(a, weights, q, axis, keepdims, squash_nans, a_shape):
  """The smallest sorted value whose cumulative weight reaches q * total weight."""
  q_ndim = _ndim(q)
  int_dt = _int_dtype()
  if weights is None:
    weights = ufuncs._full_like(a, 1.0)
  zeros = ufuncs._full_like(weights, 0)
  bad_weights = lax_ew.bitwise_or(lax_ew.lt(weights, zeros), _isnan(weights))
  nan_data = _isnan(a)
  clean = lax_ew.select(lax_ew.bitwise_or(bad_weights, nan_data), zeros, weights)
  cum = reductions.cumsum(clean, axis=axis)
  total = shape_ops.index_in_dim(cum, -1, axis=axis, keepdims=keepdims)
  total_q = shape_ops.expand_dims(total, tuple(range(q_ndim)))
  q_b = shape_ops.reshape(q, _shape(q) + (1,) * _ndim(total))
  target = lax_ew.mul(q_b, total_q)
  if not keepdims:
    target = shape_ops.expand_dims(target, (axis + q_ndim,))
  cum_q = shape_ops.expand_dims(cum, tuple(range(q_ndim)))
  below = lax_ew.convert_element_type(lax_ew.lt(cum_q, target), int_dt)
  idx = reductions.sum(below, axis=axis + q_ndim, keepdims=keepdims)
  if squash_nans:
    valid = reductions.sum(lax_ew.bitwise_not(nan_data), axis=axis, dtype=_dtype(q),
                           keepdims=keepdims)
  else:
    valid = ufuncs._full_like(total, a_shape[axis], dtype=_dtype(q))
  limit = lax_ew.sub(valid, _const(valid, 1))
  max_idx = lax_ew.convert_element_type(limit, int_dt)
  max_idx = shape_ops.expand_dims(max_idx, tuple(range(q_ndim)))
  max_idx = lax_ew.convert_element_type(max_idx, _dtype(idx))
  idx = lax_ew.max(_const(idx, 0), lax_ew.min(idx, max_idx))
  take = shape_ops.squeeze(idx, (q_ndim + axis,)) if keepdims else idx
  if q_ndim == 0:
    result = indexing.take_along_axis(a, shape_ops.expand_dims(take, (axis,)), axis=axis)
    result = shape_ops.squeeze(result, (axis,))
  else:
    perm = [*range(q_ndim, q_ndim + axis), *range(q_ndim), *range(q_ndim + axis, _ndim(take))]
    result = indexing.take_along_axis(a, shape_ops.transpose(take, perm), axis=axis)
    result = shape_ops.transpose(result, [perm.index(i) for i in range(len(perm))])
  if keepdims:
    result = shape_ops.expand_dims(result, (q_ndim + axis,))
  all_nan = lax_ew.eq(valid, ufuncs._full_like(valid, 0))
  any_bad = reductions.any(bad_weights, axis=axis, keepdims=keepdims)
  if squash_nans:
    force_nan = lax_ew.bitwise_or(any_bad, all_nan)
  else:
    force_nan = lax_ew.bitwise_or(any_bad, reductions.any(nan_data, axis=axis,
                                                          keepdims=keepdims))
  force_nan = shape_ops.expand_dims(force_nan, tuple(range(q_ndim)))
  return _where(force_nan, ufuncs._full_like(result, np.nan), result)


def _quantile_args(name, a, q, weights, overwrite_input, out):
  a, q = ensure_arraylike(name, a, q)
  if weights is not None:
    weights = ensure_arraylike(name, weights)
  if overwrite_input or out is not None:
    raise ValueError(f"jax.numpy.{name} does not support overwrite_input=True or out != None")
  return a, q, weights


@jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def quantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
             keepdims=False, *, weights=None):
  """The q-th quantiles (q in [0, 1]) of `a` along `axis`.

  `method` is one of 'linear' (default), 'lower', 'higher', 'midpoint', 'nearest' or
  'inverted_cdf' (the only one accepting `weights`). A NaN along the axis gives NaN.
  """
  a, q, weights = _quantile_args("quantile", a, q, weights, overwrite_input, out)
  return _quantile(a, q, axis, method, keepdims, False, weights)


@jit(static_argnames=("axis", "overwrite_input", "keepdims", "method", "out_sharding"))
def percentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
               keepdims=False, *, weights=None, out_sharding=None):
  """The q-th percentiles (q in [0, 100]) of `a` along `axis`; see `quantile`."""
  a, q = ensure_arraylike("percentile", a, q)
  if weights is not None:
    weights = ensure_arraylike("percentile", weights)
  if out_sharding is not None:
    raise NotImplementedError("jnp.percentile: out_sharding is not supported by arrax.")
  q, = promote_dtypes_inexact(q)
  return quantile(a, ufuncs.true_divide(q, 100), axis=axis, out=out,
                  overwrite_input=overwrite_input, method=method, keepdims=keepdims,
                  weights=weights)


@jit(static_argnames=("axis", "overwrite_input", "keepdims"))
def median(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """The median along `axis` (the mean of the two middle values for an even count)."""
  a = ensure_arraylike("median", a)
  return quantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                  keepdims=keepdims, method="midpoint")


# ---- average, ptp ------------------------------------------------------------------------------
def average(a, axis=None, weights=None, returned=False, keepdims=False):
  """Weighted average along `axis` (plain mean without weights).

  `weights` has `a`'s shape, or with `axis` given the shape of the reduced axes. With
  `returned=True` the sum of the weights is returned as well.
  """
  return _average(a, reductions._static_axes(axis), weights, returned, keepdims)


@inline_jit(static_argnames=("axis", "returned", "keepdims"))
def _average(a, axis=None, weights=None, returned=False, keepdims=False):
  axis_tuple = _axis_tuple(axis, util.ndim_of(a))
  if weights is None:
    a = ensure_arraylike("average", a)
    a, = promote_dtypes_inexact(a)
    avg = reductions.mean(a, axis=axis, keepdims=keepdims)
    n = (math.prod(_shape(a)) if axis is None
         else math.prod(_shape(a)[d] for d in axis_tuple))
    weights_sum = lax_ew.convert_element_type(n, _dtype(avg))
  else:
    a, weights = ensure_arraylike("average", a, weights)
    a, weights = promote_dtypes_inexact(a, weights)
    if _shape(a) != _shape(weights):
      if axis is None:
        raise ValueError("Axis must be specified when shapes of a and weights differ.")
      if _shape(weights) != tuple(_shape(a)[ax] for ax in axis_tuple):
        raise ValueError("Shape of weights must be consistent with shape of a along "
                         "specified axis.")
      new_shape = tuple(d if i in axis_tuple else 1 for i, d in enumerate(_shape(a)))
      weights = shape_ops.reshape(weights, new_shape,
                                  tuple(int(i) for i in np.argsort(axis_tuple)))
    weights_sum = reductions.sum(weights, axis=axis, keepdims=keepdims)
    avg = ufuncs.true_divide(
        reductions.sum(ufuncs.multiply(a, weights), axis=axis, keepdims=keepdims),
        weights_sum)
  if returned:
    if _shape(avg) != _shape(weights_sum):
      weights_sum = lax_numpy.broadcast_to(weights_sum, _shape(avg))
    return avg, weights_sum
  return avg


def ptp(a, axis=None, out=None, keepdims=False):
  """Peak to peak: max - min along `axis`."""
  a = ensure_arraylike("ptp", a)
  return _ptp(a, reductions._static_axes(axis), out, keepdims)


@jit(static_argnames=("axis", "keepdims"))
def _ptp(a, axis=None, out=None, keepdims=False):
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.ptp is not supported.")
  hi = reductions.max(a, axis=axis, keepdims=keepdims)
  lo = reductions.min(a, axis=axis, keepdims=keepdims)
  return lax_ew.sub(hi, lo)
