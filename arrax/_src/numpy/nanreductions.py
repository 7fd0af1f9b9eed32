"""Reductions that ignore NaNs: nansum, nanprod, nanmin, nanmax, nanmean, nanvar, nanstd,
nanargmin, nanargmax, nancumsum, nancumprod, nanmedian, nanquantile, nanpercentile.

Each replaces NaNs by the reduction's identity (or masks them out of the count) and then runs the
ordinary reduction, as JAX does; integer and boolean inputs, which cannot hold NaN, go straight to
the ordinary reduction.
"""
from __future__ import annotations

import operator

import numpy as np

from arrax._src import core, dtypes
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import reductions as lax_red
from arrax._src.lax import shape_ops
from arrax._src.numpy import lax_numpy, reductions, ufuncs, util
from arrax._src.numpy.statistics import _quantile, _quantile_args
from arrax._src.numpy.util import ensure_arraylike, promote_dtypes_inexact
from arrax._src.numpy.util import _dtype

_where = lax_numpy._where


def _is_inexact(dt):
  return dtypes.issubdtype(dt, np.inexact)


def _isnan(x):
  return lax_ew.ne(x, x)


def _identity_constant(dt, value):
  """The reduction identity `value` as a host constant of the inexact dtype `dt`."""
  return np.array(value, dtype=dt)


def _nan_reduction(a, name, reduction, init_val, nan_if_all_nan, axis=None, keepdims=False,
                   where=None, **kwargs):
  a = ensure_arraylike(name, a)
  where = reductions._check_where(name, where)
  if not _is_inexact(_dtype(a)):
    return reduction(a, axis=axis, keepdims=keepdims, where=where, **kwargs)
  filled = _where(_isnan(a), _identity_constant(_dtype(a), init_val), a)
  out = reduction(filled, axis=axis, keepdims=keepdims, where=where, **kwargs)
  if nan_if_all_nan:
    all_nan = reductions.all(_isnan(a), axis=axis, keepdims=keepdims)
    return _where(all_nan, lax_ew._const(a, np.nan), out)
  return out


@jit(static_argnames=("axis", "keepdims"))
def nanmin(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Minimum along `axis`, ignoring NaNs (NaN where a slice is all NaN and no `initial`)."""
  return _nan_reduction(a, "nanmin", reductions.min, np.inf, nan_if_all_nan=initial is None,
                        axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)


@jit(static_argnames=("axis", "keepdims"))
def nanmax(a, axis=None, out=None, keepdims=False, initial=None, where=None):
  """Maximum along `axis`, ignoring NaNs (NaN where a slice is all NaN and no `initial`)."""
  return _nan_reduction(a, "nanmax", reductions.max, -np.inf, nan_if_all_nan=initial is None,
                        axis=axis, out=out, keepdims=keepdims, initial=initial, where=where)


@jit(static_argnames=("axis", "dtype", "keepdims"))
def nansum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """Sum along `axis`, treating NaNs as zero."""
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "nanprod")
  return _nan_reduction(a, "nansum", reductions.sum, 0, nan_if_all_nan=False, axis=axis,
                        dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)


@jit(static_argnames=("axis", "dtype", "keepdims"))
def nanprod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """Product along `axis`, treating NaNs as one."""
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "nanprod")
  return _nan_reduction(a, "nanprod", reductions.prod, 1, nan_if_all_nan=False, axis=axis,
                        dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where)


@jit(static_argnames=("axis", "dtype", "keepdims"))
def nanmean(a, axis=None, dtype=None, out=None, keepdims=False, where=None):
  """Mean along `axis` over the non-NaN elements (NaN where there are none)."""
  a = ensure_arraylike("nanmean", a)
  where = reductions._check_where("nanmean", where)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanmean is not supported.")
  if not _is_inexact(_dtype(a)):
    return reductions.mean(a, axis, dtype, out, keepdims, where=where)
  if dtype is None:
    dtype = dtypes.to_inexact_dtype(_dtype(a))
  else:
    dtype = dtypes.check_user_dtype(dtype, "mean")
  not_nan = lax_ew.bitwise_not(_isnan(a))
  count = reductions.sum(not_nan, axis=axis, dtype=dtype, keepdims=keepdims, where=where)
  total = nansum(a, axis, dtype=dtype, keepdims=keepdims, where=where)
  return lax_ew.div(total, count)


@jit(static_argnames=("axis", "dtype", "keepdims"))
def nanvar(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
  """Variance along `axis` over the non-NaN elements, divided by (count - ddof)."""
  a = ensure_arraylike("nanvar", a)
  where = reductions._check_where("nanvar", where)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "nanvar")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanvar is not supported.")
  return _nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims, where=where,
                 a_mean=mean)


def _nanvar(a, *, axis, dtype, ddof, keepdims, where, a_mean):
  computation_dtype, dtype = reductions._var_promote_types(_dtype(a), dtype)
  a = lax_numpy.astype(a, computation_dtype)
  if a_mean is None:
    a_mean = nanmean(a, axis, dtype=computation_dtype, keepdims=True, where=where)
  else:
    a_mean = lax_numpy.astype(ensure_arraylike("nanvar", a_mean), computation_dtype)
  # NaN entries are zeroed after the subtraction, so they get no gradient either.
  centered = _where(_isnan(a), 0, lax_ew.sub(a, a_mean))
  if dtypes.issubdtype(_dtype(centered), np.complexfloating):
    centered = lax_ew.real(lax_ew.mul(centered, lax_ew.conj(centered)))
  else:
    centered = lax_ew.square(centered)
  count = reductions.sum(lax_ew.bitwise_not(_isnan(a)), axis=axis, keepdims=keepdims,
                         where=where)
  count = ufuncs.subtract(count, ddof)
  empty = lax_ew.le(count, lax_ew._const(count, 0))
  result = reductions.sum(centered, axis, keepdims=keepdims, where=where)
  result = _where(empty, np.nan, result)
  divisor = _where(empty, 1, count)
  result = lax_ew.div(result, lax_ew.convert_element_type(divisor, _dtype(result)))
  return lax_ew.convert_element_type(result, dtype)


@jit(static_argnames=("axis", "dtype", "keepdims"))
def nanstd(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, where=None, mean=None):
  """Standard deviation along `axis` over the non-NaN elements."""
  a = ensure_arraylike("nanstd", a)
  where = reductions._check_where("nanstd", where)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "nanstd")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanstd is not supported.")
  return lax_ew.sqrt(nanvar(a, axis=axis, dtype=dtype, ddof=ddof, keepdims=keepdims,
                            where=where, mean=mean))


def _nan_cumulative(name, lax_fn, a, axis, dtype, out, fill_value):
  a = ensure_arraylike(name, a)
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported")
  if axis is None or core.get_aval(a).shape == ():
    a = shape_ops.reshape(a, (int(np.prod(core.get_aval(a).shape, dtype=np.int64)),))
  if axis is None:
    axis = 0
  axis = util.canonicalize_axis(axis, len(core.get_aval(a).shape))
  a = _where(_isnan(a), lax_ew._const(a, fill_value), a)
  in_dtype = _dtype(a)
  if dtype is None:
    result_dtype = (reductions._promote_integer_dtype(in_dtype) if in_dtype == np.bool_
                    else in_dtype)
    computation_dtype = result_dtype
  elif np.dtype(dtype) == np.bool_:
    result_dtype = np.dtype(np.bool_)
    if in_dtype != result_dtype:
      a = ufuncs.not_equal(a, 0)
    computation_dtype = reductions._promote_integer_dtype(result_dtype)
  else:
    result_dtype = dtypes.check_user_dtype(dtype, name)
    computation_dtype = result_dtype
  a = lax_ew.convert_element_type(a, computation_dtype)
  return lax_ew.convert_element_type(lax_fn(a, axis), result_dtype)


@jit(static_argnames=("axis", "dtype"))
def nancumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum along `axis` (flattened if None), treating NaNs as zero."""
  return _nan_cumulative("nancumsum", lax_red.cumsum, a, axis, dtype, out, 0)


@jit(static_argnames=("axis", "dtype"))
def nancumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product along `axis` (flattened if None), treating NaNs as one."""
  return _nan_cumulative("nancumprod", lax_red.cumprod, a, axis, dtype, out, 1)


def nanargmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum along `axis` ignoring NaNs (-1 where a slice is all NaN)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanargmax is not supported.")
  a = ensure_arraylike("nanargmax", a)
  return _nanargmax(a, None if axis is None else operator.index(axis), keepdims=bool(keepdims))


@jit(static_argnames=("axis", "keepdims"))
def _nanargmax(a, axis=None, keepdims=False):
  if not _is_inexact(_dtype(a)):
    return reductions.argmax(a, axis=axis, keepdims=keepdims)
  nan_mask = ufuncs.isnan(a)
  res = reductions.argmax(lax_numpy.where(nan_mask, -np.inf, a), axis=axis, keepdims=keepdims)
  return lax_numpy.where(reductions.all(nan_mask, axis=axis, keepdims=keepdims), -1, res)


def nanargmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum along `axis` ignoring NaNs (-1 where a slice is all NaN)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.nanargmin is not supported.")
  a = ensure_arraylike("nanargmin", a)
  return _nanargmin(a, None if axis is None else operator.index(axis), keepdims=bool(keepdims))


@jit(static_argnames=("axis", "keepdims"))
def _nanargmin(a, axis=None, keepdims=False):
  if not _is_inexact(_dtype(a)):
    return reductions.argmin(a, axis=axis, keepdims=keepdims)
  nan_mask = ufuncs.isnan(a)
  res = reductions.argmin(lax_numpy.where(nan_mask, np.inf, a), axis=axis, keepdims=keepdims)
  return lax_numpy.where(reductions.all(nan_mask, axis=axis, keepdims=keepdims), -1, res)


@jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def nanquantile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                keepdims=False, *, weights=None):
  """The q-th quantiles (q in [0, 1]) along `axis` of the non-NaN elements; see quantile."""
  a, q, weights = _quantile_args("nanquantile", a, q, weights, overwrite_input, out)
  return _quantile(a, q, axis, method, keepdims, True, weights)


@jit(static_argnames=("axis", "overwrite_input", "keepdims", "method"))
def nanpercentile(a, q, axis=None, out=None, overwrite_input=False, method="linear",
                  keepdims=False, *, weights=None):
  """The q-th percentiles (q in [0, 100]) along `axis` of the non-NaN elements."""
  a, q = ensure_arraylike("nanpercentile", a, q)
  if weights is not None:
    weights = ensure_arraylike("nanpercentile", weights)
  q, = promote_dtypes_inexact(q)
  q = ufuncs.true_divide(q, 100)
  return nanquantile(a, q, axis=axis, out=out, overwrite_input=overwrite_input, method=method,
                     weights=weights, keepdims=keepdims)


@jit(static_argnames=("axis", "overwrite_input", "keepdims"))
def nanmedian(a, axis=None, out=None, overwrite_input=False, keepdims=False):
  """The median along `axis` of the non-NaN elements."""
  a = ensure_arraylike("nanmedian", a)
  return nanquantile(a, 0.5, axis=axis, out=out, overwrite_input=overwrite_input,
                     keepdims=keepdims, method="midpoint")
