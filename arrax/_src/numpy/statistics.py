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
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import shape_ops, slicing
from arrax._src.lax import sort as lax_sort
from arrax._src.lax.control_flow import scan
from arrax._src.numpy import creation, indexing, lax_numpy, reductions, ufuncs, util
from arrax._src.numpy.util import (check_arraylike, ensure_arraylike, inline_jit,
                                   promote_dtypes, promote_dtypes_inexact)
from arrax._src.numpy.util import _dtype, _ndim, _shape
from arrax._src.sharding_impls import canonicalize_sharding

_where = lax_numpy._where


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
    q = lax_ew.mul(q, lax_ew.sub(counts, lax_ew._const(q, 1)))
    low, high = lax_ew.floor(q), lax_ew.ceil(q)
    high_weight = lax_ew.sub(q, low)
    low_weight = lax_ew.sub(lax_ew._const(high_weight, 1), high_weight)
    last = ufuncs.subtract(counts, 1)
    low = lax_ew.max(lax_ew._const(low, 0), lax_ew.min(low, last))
    last = ufuncs.subtract(counts, 1)
    high = lax_ew.max(lax_ew._const(high, 0), lax_ew.min(high, last))
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
    q = lax_ew.mul(q, lax_ew.sub(n, lax_ew._const(n, 1)))
    low, high = lax_ew.floor(q), lax_ew.ceil(q)
    high_weight = lax_ew.sub(q, low)
    low_weight = lax_ew.sub(lax_ew._const(high_weight, 1), high_weight)
    low = lax_ew.clamp(lax_ew._const(low, 0), low, lax_ew.sub(n, lax_ew._const(n, 1)))
    high = lax_ew.clamp(lax_ew._const(high, 0), high, lax_ew.sub(n, lax_ew._const(n, 1)))
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
    pred = lax_ew.le(high_weight, lax_ew._const(high_weight, 0.5))
    result = lax_ew.select(pred, low_value, high_value)
  elif method == "midpoint":
    result = lax_ew.mul(lax_ew.add(low_value, high_value), lax_ew._const(low_value, 0.5))
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
  limit = lax_ew.sub(valid, lax_ew._const(valid, 1))
  max_idx = lax_ew.convert_element_type(limit, int_dt)
  max_idx = shape_ops.expand_dims(max_idx, tuple(range(q_ndim)))
  max_idx = lax_ew.convert_element_type(max_idx, _dtype(idx))
  idx = lax_ew.max(lax_ew._const(idx, 0), lax_ew.min(idx, max_idx))
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
  q, = promote_dtypes_inexact(q)

  def run(x, qs, w):
    return quantile(x, qs, axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                    keepdims=keepdims, weights=w)
  target = canonicalize_sharding(out_sharding, "jnp.percentile")
  return util.maybe_auto_axes(run, target)(a, ufuncs.true_divide(q, 100), weights)


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


# ---- covariance and correlation -----------------------------------------------------------------
@jit(static_argnames=("rowvar", "bias", "ddof", "dtype"))
def cov(m, y=None, rowvar=True, bias=False, ddof=None, fweights=None, aweights=None,
        dtype=None):
  """Covariance matrix of the variables in the rows of `m` (columns if rowvar=False), with `y`
  as extra variables; `fweights` (integer frequencies) and `aweights` weight the observations."""
  if y is not None:
    m, y = util.promote_args_inexact("cov", m, y)
    if _ndim(y) > 2:
      raise ValueError("y has more than 2 dimensions")
  else:
    m, = util.promote_args_inexact("cov", m)
  if _ndim(m) > 2:
    raise ValueError("m has more than 2 dimensions")
  if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"cov: dtype must be a subclass of float or complex; got dtype={dtype}")
  X = lax_numpy.atleast_2d(m)
  if not rowvar and _ndim(m) != 1:
    X = lax_numpy.transpose(X)
  if _shape(X)[0] == 0:
    return lax_numpy.reshape(creation.array([]), (0, 0))
  if y is not None:
    y_arr = lax_numpy.atleast_2d(y)
    if not rowvar and _shape(y_arr)[0] != 1:
      y_arr = lax_numpy.transpose(y_arr)
    X = lax_numpy.concatenate((X, y_arr), axis=0)
  nvar, nobs = _shape(X)
  if nobs == 0:
    return creation.full(() if nvar == 1 else (nvar, nvar), np.nan, dtype=_dtype(X))
  if ddof is None:
    ddof = 1 if bias == 0 else 0
  w = None
  if fweights is not None:
    fweights = ensure_arraylike("cov", fweights)
    if _ndim(fweights) > 1:
      raise RuntimeError("cannot handle multidimensional fweights")
    if _shape(fweights)[0] != nobs:
      raise RuntimeError("incompatible numbers of samples and fweights")
    if not dtypes.issubdtype(_dtype(fweights), np.integer):
      raise TypeError("fweights must be integer.")
    w = ufuncs.absolute(fweights)   # NumPy rejects negative weights; JAX takes |w|
  if aweights is not None:
    aweights = ensure_arraylike("cov", aweights)
    if _ndim(aweights) > 1:
      raise RuntimeError("cannot handle multidimensional aweights")
    if _shape(aweights)[0] != nobs:
      raise RuntimeError("incompatible numbers of samples and aweights")
    aweights = ufuncs.absolute(aweights)
    w = aweights if w is None else ufuncs.multiply(w, aweights)
  if dtype is not None:
    X = lax_numpy.astype(X, dtype)
    w = lax_numpy.astype(w, dtype) if w is not None else w
  avg, w_sum = average(X, axis=1, weights=w, returned=True)
  w_sum = w_sum[0]
  if w is None:
    f = nobs - ddof
  elif ddof == 0:
    f = w_sum
  elif aweights is None:
    f = ufuncs.subtract(w_sum, ddof)
  else:
    f = ufuncs.subtract(w_sum, ufuncs.true_divide(
        ufuncs.multiply(ddof, reductions.sum(ufuncs.multiply(w, aweights))), w_sum))
  X = ufuncs.subtract(X, avg[:, None])
  if w is None:
    X_T = lax_numpy.transpose(X)
  else:
    X_T = lax_numpy.transpose(ufuncs.multiply(X, shape_ops.broadcast_to_rank(w, _ndim(X))))
  return lax_numpy.squeeze(ufuncs.true_divide(lax_numpy.dot(X, ufuncs.conj(X_T)), f))


def _diagonal(c):
  k = _shape(c)[0]
  i = shape_ops.iota(np.int32, k)
  return c[i, i]


@jit(static_argnames=("rowvar", "dtype"))
def corrcoef(x, y=None, rowvar=True, dtype=None):
  """Pearson correlation coefficients (the covariance normalised by the standard deviations)."""
  check_arraylike("corrcoef", x)
  if dtype is not None and not dtypes.issubdtype(dtype, np.inexact):
    raise ValueError(f"corrcoef: dtype must be a subclass of float or complex; got "
                     f"dtype={dtype}")
  c = cov(x, y, rowvar, dtype=dtype)
  if _ndim(c) == 0:
    return ufuncs.true_divide(c, c)   # NaN for 0/0, inf/inf, NaN; else 1
  std = lax_numpy.astype(ufuncs.sqrt(ufuncs.real(_diagonal(c))), _dtype(c))
  c = ufuncs.true_divide(ufuncs.true_divide(c, std[:, None]), std[None, :])
  real_part = lax_numpy.clip(ufuncs.real(c), -1, 1)
  if dtypes.issubdtype(_dtype(c), np.complexfloating):
    return lax_ew.complex(real_part, lax_numpy.clip(ufuncs.imag(c), -1, 1))
  return real_part


# ---- binary search (for histograms and interp) ---------------------------------------------------
def _total_lt(x, y):
  """x < y in the sort order: NaN above everything, -0.0 equal to 0.0, complex by (re, im)."""
  dt = _dtype(x)
  if dt.kind == "c":
    xr, yr = lax_ew.real(x), lax_ew.real(y)
    re_eq = lax_ew.bitwise_or(lax_ew.eq(xr, yr), lax_ew.bitwise_and(_isnan(xr), _isnan(yr)))
    return lax_ew.bitwise_or(_total_lt(xr, yr),
                             lax_ew.bitwise_and(re_eq, _total_lt(lax_ew.imag(x),
                                                                 lax_ew.imag(y))))
  if dtypes.issubdtype(dt, np.floating):
    return lax_ew.bitwise_or(lax_ew.lt(x, y),
                             lax_ew.bitwise_and(_isnan(y), lax_ew.bitwise_not(_isnan(x))))
  return lax_ew.lt(x, y)


def _searchsorted(sorted_arr, query, side):
  """Insertion indices (int32) of `query` into the sorted 1-D `sorted_arr`, by bisection."""
  sorted_arr, query = promote_dtypes(sorted_arr, query)
  n = _shape(sorted_arr)[0]
  if n == 0:
    return ufuncs._full_like(query, 0, dtype=np.int32)
  levels = int(np.ceil(np.log2(n + 1)))
  qshape = _shape(query)

  def step(carry, _):
    low, high = carry
    mid = lax_ew.add(low, lax_ew.div(lax_ew.sub(high, low), lax_ew.scalar_literal(2, np.uint32)))
    pivot = sorted_arr[mid]
    if side == "left":   # go left while query <= pivot
      go_left = lax_ew.bitwise_not(_total_lt(pivot, query))
    else:                # go left while query < pivot
      go_left = _total_lt(query, pivot)
    return (lax_ew.select(go_left, low, mid), lax_ew.select(go_left, mid, high)), None

  init = (shape_ops.broadcast_in_dim(lax_ew.scalar_literal(0, np.uint32), qshape, ()),
          shape_ops.broadcast_in_dim(lax_ew.scalar_literal(n, np.uint32), qshape, ()))
  (_, high), _ = scan(step, init, None, length=levels)
  return lax_ew.convert_element_type(high, np.int32)


# ---- histograms ---------------------------------------------------------------------------------
def histogram_bin_edges(a, bins=10, range=None, weights=None):  # noqa: A002
  """The edges of the bins `histogram` would use: `bins` edges as given, or an int number of
  equal bins spanning `range` (default: the data's min and max)."""
  del weights   # only needed for the string `bins` estimators, which are not supported
  if isinstance(bins, str):
    raise NotImplementedError("string values for `bins` not implemented.")
  check_arraylike("histogram_bin_edges", a, bins)
  arr = creation.asarray(a)
  dtype = dtypes.to_inexact_dtype(_dtype(arr))
  if util.ndim_of(bins) == 1:
    return creation.asarray(bins, dtype=dtype)
  nbins = _concrete_int(bins, "bins argument of histogram_bin_edges")
  if range is None:
    range = [reductions.min(arr), reductions.max(arr)]  # noqa: A001
  range = creation.asarray(range, dtype=dtype)  # noqa: A001
  if _shape(range) != (2,):
    raise ValueError(f"`range` must be either None or a sequence of scalars, got {range}")
  degenerate = ufuncs.equal(ptp(range), 0)
  lo = lax_numpy.where(degenerate, ufuncs.subtract(range[0], 0.5), range[0])
  hi = lax_numpy.where(degenerate, ufuncs.add(range[1], 0.5), range[1])
  return creation.linspace(lo, hi, nbins + 1, dtype=dtype)


def histogram(a, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """Counts (or summed `weights`) of the values of `a` in each bin, and the bin edges.

  The last bin includes its right edge; values outside the bins are not counted. With
  `density=True` the counts are normalised so that the histogram integrates to one.
  """
  if weights is None:
    a, _ = ensure_arraylike("histogram", a, bins)
    a, = promote_dtypes_inexact(a)
    weights = creation.ones_like(a)
  else:
    a, _, weights = ensure_arraylike("histogram", a, bins, weights)
    if _shape(a) != _shape(weights):
      raise ValueError("weights should have the same shape as a.")
    a, weights = promote_dtypes_inexact(a, weights)
  edges = histogram_bin_edges(a, bins, range, weights)
  nedges = _shape(edges)[0]
  idx = _searchsorted(edges, a, "right")
  idx = lax_numpy.where(ufuncs.equal(a, edges[-1]), nedges - 1, idx)
  counts = creation.zeros(nedges, _dtype(weights)).at[idx].add(weights)[1:]
  if density:
    counts = ufuncs.true_divide(ufuncs.true_divide(counts, diff(edges)),
                                reductions.sum(counts))
  return counts, edges


def histogram2d(x, y, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """2-D histogram of the points (x[i], y[i]): (counts, x edges, y edges)."""
  x, y = ensure_arraylike("histogram2d", x, y)
  try:
    nb = len(bins)
  except TypeError:
    nb = 1
  if nb != 1 and nb != 2:
    edges = creation.asarray(bins)
    bins = [edges, edges]
  sample = lax_numpy.transpose(creation.asarray([x, y]))
  hist, edges = histogramdd(sample, bins, range, weights, density)
  return hist, edges[0], edges[1]


def histogramdd(sample, bins=10, range=None, weights=None, density=None):  # noqa: A002
  """D-dimensional histogram of the N points in the rows of `sample` ([N, D])."""
  if weights is None:
    sample = ensure_arraylike("histogramdd", sample)
    sample, = promote_dtypes_inexact(sample)
  else:
    sample, weights = ensure_arraylike("histogramdd", sample, weights)
    if _shape(weights) != _shape(sample)[:1]:
      raise ValueError("should have one weight for each sample.")
    sample, weights = promote_dtypes_inexact(sample, weights)
  N, D = _shape(sample)
  if range is not None and (len(range) != D or builtins.any(
      r is not None and util.shape_of(r)[0] != 2 for r in range)):
    raise ValueError(f"For sample.shape={(N, D)}, range must be a sequence of {D} pairs or "
                     f"Nones; got range={range}")
  try:
    bins_per_dim = list(bins)
  except TypeError:
    bins_per_dim = D * [bins]
  else:
    if len(bins_per_dim) != D:
      raise ValueError("should be a bin for each dimension.")
  all_edges, bin_idx, nbins = [], [], []
  for i in builtins.range(D):
    column = sample[:, i]
    edges = histogram_bin_edges(column, bins_per_dim[i], None if range is None else range[i],
                                weights)
    idx = _searchsorted(edges, column, "right")
    idx = lax_numpy.where(ufuncs.equal(column, edges[-1]), ufuncs.subtract(idx, 1), idx)
    all_edges.append(edges)
    nbins.append(_shape(edges)[0] + 1)
    bin_idx.append(idx)
  # Bin 0 and bin len(edges) of each axis hold the values below / above the edges.
  total = math.prod(nbins)
  index_dt = dtypes.result_type(int, *bin_idx)
  if total - 1 > dtypes.iinfo(index_dt).max:
    raise ValueError(f"jnp.ravel_multi_index: dtype={index_dt} not large enough to hold "
                     f"flattened index for dims={tuple(nbins)}.")
  flat = creation.array(0, dtype=index_dt)
  for idx, d, s in zip(bin_idx, nbins, _c_strides(nbins)):
    idx = lax_numpy.clip(idx, 0, d - 1)
    flat = ufuncs.add(flat, ufuncs.multiply(lax_numpy.astype(idx, index_dt), s))
  if weights is None:
    hist = creation.zeros(total, dtypes.default_int_dtype()).at[
        lax_numpy.clip(flat, 0)].add(np.array(1, dtypes.canonicalize_dtype(np.int64)),
                                     mode="drop")
  else:
    hist = creation.zeros(total, _dtype(weights)).at[lax_numpy.clip(flat, 0)].add(
        weights, mode="drop")
  hist = lax_numpy.reshape(hist, tuple(nbins))
  hist = hist[D * (slice(1, -1),)]
  if density:
    hist = lax_numpy.astype(hist, _dtype(sample))
    hist = ufuncs.true_divide(hist, reductions.sum(hist))
    for i, edges in enumerate(all_edges):
      shape = [1] * D
      shape[i] = _shape(edges)[0] - 1
      hist = ufuncs.true_divide(hist, shape_ops.reshape(diff(edges), tuple(shape)))
  return hist, all_edges


def _c_strides(dims):
  """Row-major strides (in elements) of an array of shape `dims`."""
  out, acc = [], 1
  for d in reversed(dims):
    out.append(acc)
    acc *= d
  return out[::-1]


# ---- finite differences and integration ---------------------------------------------------------
@jit(static_argnames=("n", "axis"))
def diff(a, n=1, axis=-1, prepend=None, append=None):
  """The n-th discrete difference a[i + 1] - a[i] along `axis` (`!=` for booleans)."""
  arr = ensure_arraylike("diff", a)
  n = _concrete_int(n, "'n' argument of jnp.diff")
  axis = _concrete_int(axis, "'axis' argument of jnp.diff")
  if n == 0:
    return arr
  if n < 0:
    raise ValueError(f"order must be non-negative but got {n}")
  nd = _ndim(arr)
  if nd == 0:
    raise ValueError(f"diff requires input that is at least one dimensional; got {a}")
  axis = util.canonicalize_axis(axis, nd)
  def edge(extra):
    extra = ensure_arraylike("diff", extra)
    if _ndim(extra) == 0:
      shape = list(_shape(arr))
      shape[axis] = 1
      extra = lax_numpy.broadcast_to(extra, tuple(shape))
    return extra
  parts = [arr]
  if prepend is not None:
    parts.insert(0, edge(prepend))
  if append is not None:
    parts.append(edge(append))
  if len(parts) > 1:
    arr = lax_numpy.concatenate(parts, axis)
  hi = tuple(slice(1, None) if i == axis else slice(None) for i in range(nd))
  lo = tuple(slice(None, -1) if i == axis else slice(None) for i in range(nd))
  op = ufuncs.not_equal if _dtype(arr) == np.bool_ else ufuncs.subtract
  for _ in range(n):
    arr = op(arr[hi], arr[lo])
  return arr


@jit
def ediff1d(ary, to_end=None, to_begin=None):
  """Differences of consecutive elements of the flattened array, with optional values
  prepended (`to_begin`) and appended (`to_end`)."""
  arr = lax_numpy.ravel(ensure_arraylike("ediff1d", ary))
  result = lax_ew.sub(arr[1:], arr[:-1])
  if to_begin is not None:
    to_begin = ensure_arraylike("ediff1d", to_begin)
    result = lax_numpy.concatenate(
        (lax_numpy.ravel(lax_numpy.astype(to_begin, _dtype(arr))), result))
  if to_end is not None:
    to_end = ensure_arraylike("ediff1d", to_end)
    result = lax_numpy.concatenate(
        (result, lax_numpy.ravel(lax_numpy.astype(to_end, _dtype(arr)))))
  return result


def _gradient_along(a, h, axis):
  def part(start, stop, x=a):
    return shape_ops.slice_in_dim(x, start, stop, axis=axis)
  upper = ufuncs.subtract(part(1, 2), part(0, 1))
  lower = ufuncs.subtract(part(-1, None), part(-2, -1))
  if util.ndim_of(h) == 0:
    inner = ufuncs.true_divide(
        ufuncs.multiply(ufuncs.subtract(part(2, None), part(None, -2)), 0.5), h)
    lower = ufuncs.true_divide(lower, h)
    upper = ufuncs.true_divide(upper, h)
  elif util.ndim_of(h) == 1:
    if _shape(h)[0] != _shape(a)[axis]:
      raise ValueError("Spacing arrays must have the same length as the dimension along "
                       "which the gradient is calculated.")
    h_shape = [1] * _ndim(a)
    h_shape[axis] = _shape(h)[0]
    h = shape_ops.reshape(h, tuple(h_shape))

    def hpart(start, stop):
      return part(start, stop, h)
    upper = ufuncs.true_divide(upper, ufuncs.subtract(hpart(1, 2), hpart(0, 1)))
    lower = ufuncs.true_divide(lower, ufuncs.subtract(hpart(-1, None), hpart(-2, -1)))
    dx1 = ufuncs.subtract(hpart(1, -1), hpart(0, -2))
    dx2 = ufuncs.subtract(hpart(2, None), hpart(1, -1))
    # Second-order accurate weights for uneven spacing.
    ca = ufuncs.true_divide(ufuncs.negative(dx2),
                            ufuncs.multiply(dx1, ufuncs.add(dx1, dx2)))
    cb = ufuncs.true_divide(ufuncs.subtract(dx2, dx1), ufuncs.multiply(dx1, dx2))
    cc = ufuncs.true_divide(dx1, ufuncs.multiply(dx2, ufuncs.add(dx1, dx2)))
    inner = ufuncs.add(ufuncs.add(ufuncs.multiply(ca, part(0, -2)),
                                  ufuncs.multiply(cb, part(1, -1))),
                       ufuncs.multiply(cc, part(2, None)))
  else:
    raise ValueError("Spacing arrays must be 1D arrays or scalars.")
  return lax_numpy.concatenate((upper, inner, lower), axis=axis)


@jit(static_argnames=("axis", "edge_order"))
def gradient(f, *varargs, axis=None, edge_order=None):
  """Gradient of sampled values by central differences inside and one-sided differences at
  the edges; `varargs` give the spacing (a scalar, or the coordinates, per axis)."""
  if edge_order is not None:
    raise NotImplementedError("The 'edge_order' argument to jnp.gradient is not supported.")
  a, *spacing = promote_dtypes_inexact(f, *varargs)
  if axis is None:
    axes = tuple(range(_ndim(a)))
  else:
    axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
    axes = tuple(util.canonicalize_axis(operator.index(i), _ndim(a)) for i in axes)
  if len(axes) == 0:
    return []
  if builtins.min(s for i, s in enumerate(_shape(a)) if i in axes) < 2:
    raise ValueError("Shape of array too small to calculate a numerical gradient, at least 2 "
                     "elements are required.")
  if len(spacing) == 0:
    dx = [1.0] * len(axes)
  elif len(spacing) == 1:
    dx = list(spacing) * len(axes)
  elif len(spacing) == len(axes):
    dx = list(spacing)
  else:
    raise TypeError(f"Invalid number of spacing arguments {len(spacing)} for axis={axis}")
  grads = [_gradient_along(a, h, ax) for ax, h in zip(axes, dx)]
  return grads[0] if len(axes) == 1 else grads


@jit(static_argnames=("axis",))
def trapezoid(y, x=None, dx=1.0, axis=-1):
  """Integral of the samples `y` along `axis` by the trapezoidal rule (at points `x`, or with
  spacing `dx`)."""
  if x is None:
    y = ensure_arraylike("trapezoid", y)
    y_arr, = promote_dtypes_inexact(y)
    dx_arr = creation.asarray(dx)
    if _ndim(dx_arr) > 0:
      dx_arr = shape_ops.expand_dims(dx_arr, tuple(range(_ndim(y_arr) - _ndim(dx_arr))))
      dx_arr = lax_numpy.moveaxis(dx_arr, axis, -1)
  else:
    y, x = ensure_arraylike("trapezoid", y, x)
    y_arr, x_arr = promote_dtypes_inexact(y, x)
    if _ndim(x_arr) == 1:
      dx_arr = diff(x_arr)
    else:
      dx_arr = lax_numpy.moveaxis(diff(x_arr, axis=axis), axis, -1)
  y_arr = lax_numpy.moveaxis(y_arr, axis, -1)
  if _ndim(dx_arr) == 0 or _shape(dx_arr)[-1] == 1:
    # Constant spacing: dx * (sum - (first + last) / 2).
    step = dx_arr if _ndim(dx_arr) == 0 else dx_arr[..., 0]
    total = reductions.sum(y_arr, -1)
    ends = ufuncs.multiply(0.5, ufuncs.add(y_arr[..., 0], y_arr[..., -1]))
    return ufuncs.multiply(step, ufuncs.subtract(total, ends))
  pairs = ufuncs.add(y_arr[..., 1:], y_arr[..., :-1])
  return ufuncs.multiply(0.5, reductions.sum(ufuncs.multiply(dx_arr, pairs), -1))


# ---- interpolation -------------------------------------------------------------------------------
def _interp(x, xp, fp, left=None, right=None, period=None):
  x, xp, fp = ensure_arraylike("interp", x, xp, fp)
  if _shape(xp) != _shape(fp) or _ndim(xp) != 1:
    raise ValueError("xp and fp must be one-dimensional arrays of equal size")
  x_arr, xp_arr = promote_dtypes_inexact(x, xp)
  fp_arr, = promote_dtypes_inexact(fp)
  extrapolate = []
  for name, v in (("left", left), ("right", right)):
    if isinstance(v, str) and v != "extrapolate":
      raise ValueError(f"the only valid string value of `{name}` is 'extrapolate', but got: "
                       f"{v!r}")
    extrapolate.append(isinstance(v, str))
  if dtypes.issubdtype(_dtype(x_arr), np.complexfloating):
    raise ValueError("jnp.interp: complex x values not supported.")
  if period is not None:
    if util.ndim_of(period) != 0:
      raise ValueError(f"period must be a scalar; got {period}")
    period = ufuncs.absolute(period)
    x_arr = ufuncs.remainder(x_arr, period)
    xp_arr = ufuncs.remainder(xp_arr, period)
    xp_arr, fp_arr = lax_sort.sort_key_val(xp_arr, fp_arr)
    xp_arr = lax_numpy.concatenate([ufuncs.subtract(xp_arr[-1:], period), xp_arr,
                                    ufuncs.add(xp_arr[:1], period)])
    fp_arr = lax_numpy.concatenate([fp_arr[-1:], fp_arr, fp_arr[:1]])
  n = _shape(xp_arr)[0]
  i = lax_numpy.clip(_searchsorted(xp_arr, x_arr, "right"), 1, n - 1)
  im1 = ufuncs.subtract(i, 1)
  df = ufuncs.subtract(fp_arr[i], fp_arr[im1])
  dx = ufuncs.subtract(xp_arr[i], xp_arr[im1])
  delta = ufuncs.subtract(x_arr, xp_arr[im1])
  eps = np.spacing(np.finfo(_dtype(xp_arr)).eps)
  dx0 = ufuncs.less_equal(lax_ew.abs(dx), eps)   # equal xp: no division (and no NaN gradient)
  f = lax_numpy.where(dx0, fp_arr[im1], ufuncs.add(fp_arr[im1], ufuncs.multiply(
      ufuncs.true_divide(delta, lax_numpy.where(dx0, 1, dx)), df)))
  if not extrapolate[0] and period is None:
    f = lax_numpy.where(ufuncs.less(x_arr, xp_arr[0]), fp_arr[0] if left is None else left, f)
  if not extrapolate[1] and period is None:
    f = lax_numpy.where(ufuncs.greater(x_arr, xp_arr[-1]),
                        fp_arr[-1] if right is None else right, f)
  return f


_interp_jits = {}


def interp(x, xp, fp, left=None, right=None, period=None):
  """Piecewise-linear interpolation of the points (xp, fp) at `x`.

  Outside [xp[0], xp[-1]] the result is `left` / `right` (default fp[0] / fp[-1]), or the
  extrapolated end segment for 'extrapolate'; with `period`, x and xp are taken modulo it.
  """
  static = tuple(name for name, v in (("left", left), ("right", right), ("period", period))
                 if v is None or (name != "period" and isinstance(v, str)))
  fn = _interp_jits.get(static)
  if fn is None:
    fn = _interp_jits[static] = jit(_interp, static_argnames=static)
  return fn(x, xp, fp, left, right, period)


@jit(static_argnames=("axis",))
def unwrap(p, discont=None, axis=-1, period=2 * np.pi):
  """Unwrap a phase signal: steps larger than `discont` along `axis` are replaced by their
  complement modulo `period`."""
  p = ensure_arraylike("unwrap", p)
  p, period = promote_dtypes(p, period)
  if dtypes.issubdtype(_dtype(p), np.complexfloating):
    raise ValueError("jnp.unwrap does not support complex inputs.")
  if _shape(p)[axis] == 0:
    return p
  if discont is None:
    discont = ufuncs.true_divide(period, 2)
  if dtypes.issubdtype(_dtype(p), np.integer):
    interval = ufuncs.floor_divide(period, 2)
  else:
    interval = ufuncs.true_divide(period, 2)
  dd = diff(p, axis=axis)
  ddmod = ufuncs.subtract(ufuncs.remainder(ufuncs.add(dd, interval), period), interval)
  ddmod = lax_numpy.where(
      ufuncs.bitwise_and(ufuncs.equal(ddmod, ufuncs.negative(interval)),
                         ufuncs.greater(dd, 0)), interval, ddmod)
  correction = lax_numpy.where(ufuncs.less(ufuncs.absolute(dd), discont), 0,
                               ufuncs.subtract(ddmod, dd))
  head = shape_ops.slice_in_dim(p, 0, 1, axis=axis)
  tail = ufuncs.add(shape_ops.slice_in_dim(p, 1, None, axis=axis),
                    reductions.cumsum(correction, axis=axis))
  return lax_numpy.concatenate((head, tail), axis=axis)


# ---- 1-D convolution and correlation ------------------------------------------------------------
def _sliding_dot(x, y, lo, hi, precision, preferred_element_type):
  """out[i] = sum_j xpad[i + j] * y[j], xpad = x with `lo` / `hi` zeros at the ends."""
  n, m = _shape(x)[0], _shape(y)[0]
  zero = lax_ew.scalar_literal(0, _dtype(x))
  xpad = shape_ops.pad(x, zero, [(lo, hi, 0)])
  length = n + lo + hi - m + 1
  starts = shape_ops.broadcasted_iota(np.int32, (length, 1), 0)
  dnums = slicing.GatherDimensionNumbers(offset_dims=(1,), collapsed_slice_dims=(),
                                         start_index_map=(0,))
  windows = slicing.gather(xpad, starts, dnums, (m,), indices_are_sorted=True,
                           mode=slicing.GatherScatterMode.PROMISE_IN_BOUNDS)
  return lax_dot.dot_general(windows, y, (((1,), (0,)), ((), ())), precision=precision,
                             preferred_element_type=preferred_element_type)


@jit(static_argnames=("mode", "op", "precision", "preferred_element_type"))
def _conv(x, y, mode, op, precision, preferred_element_type=None):
  if _ndim(x) != 1 or _ndim(y) != 1:
    raise ValueError(f"{op}() only support 1-dimensional inputs.")
  if preferred_element_type is None:
    x, y = promote_dtypes_inexact(x, y)   # NumPy's default for convolutions
  else:
    x, y = promote_dtypes(x, y)
  if _shape(x)[0] == 0 or _shape(y)[0] == 0:
    raise ValueError(f"{op}: inputs cannot be empty, got shapes {_shape(x)} and {_shape(y)}.")
  reverse = False
  if op == "correlate":
    y = ufuncs.conj(y)
    if _shape(x)[0] < _shape(y)[0]:
      x, y = y, x
      reverse = True
  else:
    if _shape(x)[0] < _shape(y)[0]:
      x, y = y, x
    y = shape_ops.rev(y, (0,))
  m = _shape(y)[0]
  if mode == "valid":
    lo = hi = 0
  elif mode == "same":
    lo, hi = m // 2, m - m // 2 - 1
  elif mode == "full":
    lo = hi = m - 1
  else:
    raise ValueError("mode must be one of ['full', 'same', 'valid']")
  out = _sliding_dot(x, y, lo, hi, precision, preferred_element_type)
  return shape_ops.rev(out, (0,)) if reverse else out


@jit(static_argnames=("mode", "precision", "preferred_element_type"))
def convolve(a, v, mode="full", *, precision=None, preferred_element_type=None):
  """Discrete linear convolution of two 1-D arrays; `mode` is 'full', 'same' or 'valid'."""
  a, v = ensure_arraylike("convolve", a, v)
  return _conv(a, v, mode=mode, op="convolve", precision=precision,
               preferred_element_type=preferred_element_type)


@jit(static_argnames=("mode", "precision", "preferred_element_type"))
def correlate(a, v, mode="valid", *, precision=None, preferred_element_type=None):
  """Cross-correlation of two 1-D arrays (v conjugated); `mode` is 'valid', 'same' or 'full'."""
  a, v = ensure_arraylike("correlate", a, v)
  return _conv(a, v, mode=mode, op="correlate", precision=precision,
               preferred_element_type=preferred_element_type)
