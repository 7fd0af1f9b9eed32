"""NumPy's set operations (unique and the unique_* functions, isin, union1d, intersect1d,
setdiff1d, setxor1d) and its comparison/testing functions (isclose, allclose, array_equal,
array_equiv, isposinf, isneginf, isreal, iscomplex, isdtype, iterable, nan_to_num, spacing).

Set operations sort (with lax's sort: NaNs last) and return sorted results. Their output size
depends on the values, so under jit and other transformations they need a static `size=`; the
missing entries are then filled with `fill_value` (by default the smallest result value).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from arrax._src import dtypes
from arrax._src.array import Array
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import shape_ops
from arrax._src.lax import sort as lax_sort
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs, util
from arrax._src.numpy.searching import (
  _arrays,
  _concrete,
  _concrete_index,
  _const_zero,
  lexsort,
  nonzero,
  searchsorted,
  where,
)
from arrax._src.numpy.util import _aval

__all__ = [
  "allclose",
  "array_equal",
  "array_equiv",
  "intersect1d",
  "isclose",
  "iscomplex",
  "isdtype",
  "isin",
  "isneginf",
  "isposinf",
  "isreal",
  "iterable",
  "nan_to_num",
  "setdiff1d",
  "setxor1d",
  "spacing",
  "union1d",
  "unique",
  "unique_all",
  "unique_counts",
  "unique_inverse",
  "unique_values",
]


def _size(x):
  return _aval(x).size


def _arange(n):
  return creation.arange(n)


def _append(arr, values):
  """jnp.append(arr, values) with axis=None: both flattened and joined."""
  return lax_numpy.concatenate([lax_numpy.ravel(arr), lax_numpy.ravel(values)], 0)


def _diff(a):
  """First differences of the 1-D `a` (jnp.diff(a))."""
  return a[1:] - a[:-1]


_append.__name__ = "append"
_append = jit(_append)
_diff.__name__ = "diff"
_diff = jit(_diff)


# ---- isin ---------------------------------------------------------------------------------------
@jit(static_argnames=("assume_unique", "invert", "method"))
def _in1d(ar1, ar2, invert, method="auto", assume_unique=False):
  ar1, ar2 = _arrays("in1d", ar1, ar2)
  arr1, arr2 = util.promote_dtypes(ar1, ar2)
  arr1, arr2 = lax_numpy.ravel(arr1), lax_numpy.ravel(arr2)
  if _size(arr1) == 0 or _size(arr2) == 0:
    return (creation.ones if invert else creation.zeros)(_aval(arr1).shape, dtype=bool)
  if method in ("auto", "compare_all"):
    if invert:
      return (arr1[:, None] != arr2[None, :]).all(-1)
    return (arr1[:, None] == arr2[None, :]).any(-1)
  if method == "binary_search":
    arr2 = lax_sort.sort(arr2)
    ind = searchsorted(arr2, arr1)
    return arr1 != arr2[ind] if invert else arr1 == arr2[ind]
  if method == "sort":
    if assume_unique:
      back = slice(None)
    else:
      arr1, back = unique(arr1, size=_size(arr1), return_inverse=True, fill_value=arr2.max())
    aux, ind = lax_sort.sort_key_val(lax_numpy.concatenate([arr1, arr2]),
                                     _arange(_size(arr1) + _size(arr2)))
    if invert:
      flags = creation.ones(_aval(arr1).shape, bool).at[ind[:-1]].set(aux[1:] != aux[:-1],
                                                                      mode="drop")
    else:
      flags = creation.zeros(_aval(arr1).shape, bool).at[ind[:-1]].set(aux[1:] == aux[:-1],
                                                                       mode="drop")
    return flags[back]
  raise ValueError(f"method={method!r} is not implemented; options are 'compare_all', "
                   "'binary_search', 'sort', and 'auto'")


def isin(element, test_elements, assume_unique=False, invert=False, *, method="auto"):
  """Whether each element of `element` occurs in `test_elements` (elementwise, same shape).

  Args:
    element: the values to look up.
    test_elements: the values to look for (flattened).
    assume_unique: whether the inputs have no repeated values (a hint for method='sort').
    invert: return the negated result (not in `test_elements`).
    method: 'auto' or 'compare_all' (compare every pair), 'binary_search' or 'sort'.
  """
  element, test_elements = _arrays("isin", element, test_elements)
  result = _in1d(element, test_elements, invert=invert, method=method,
                 assume_unique=assume_unique)
  return result.reshape(np.shape(element))


# ---- unique -------------------------------------------------------------------------------------
_UNIQUE_SIZE_HINT = ("To make jnp.unique() compatible with JIT and other transforms, you can "
                     "specify a concrete value for the size argument, which will determine the "
                     "output size.")


@jit(static_argnames=["axis", "equal_nan"])
def _unique_sorted_mask(ar, axis, equal_nan):
  """The slices of `ar` along `axis` sorted (moved to the front), a mask of the first of each
  run of equal slices, and the sorting permutation."""
  aux = lax_numpy.moveaxis(ar, axis, 0)
  if dtypes.issubdtype(_aval(aux).dtype, np.complexfloating):
    # Any NaN part makes the whole value the canonical NaN, so that such values sort together.
    aux = where(ufuncs.isnan(aux), lax_ew.scalar_literal(np.nan, _aval(aux).dtype), aux)
  size, *rest = _aval(aux).shape
  if math.prod(rest) == 0:
    size = 1
    perm = creation.zeros(1, dtype=int)
  else:
    perm = lexsort(aux.reshape(size, math.prod(rest)).T[::-1])
  aux = aux[perm]
  if _size(aux):
    if dtypes.issubdtype(_aval(aux).dtype, np.inexact) and equal_nan:
      def differ(x, y):
        return lax_ew.ne(x, y) & ~(ufuncs.isnan(x) & ufuncs.isnan(y))
    else:
      differ = lax_ew.ne
    first = creation.ones(size, dtype=bool).at[1:]
    mask = first.set(reductions.any(differ(aux[1:], aux[:-1]), tuple(range(1, _aval(aux).ndim))))
  else:
    mask = creation.zeros(size, dtype=bool)
  return aux, mask, perm


def _cast_fill(fill_value, dt):
  """A (strongly typed) `fill_value` of dtype `dt`: Python scalars become literals."""
  if type(fill_value) in dtypes.python_scalar_dtypes:
    return lax_ew._convert_element_type(fill_value, dt)
  return creation.asarray(fill_value).astype(dt)


def _unique(ar, axis, return_index=False, return_inverse=False, return_counts=False,
            equal_nan=True, size=None, fill_value=None, return_true_size=False):
  axis = util.canonicalize_axis(axis, _aval(ar).ndim)
  if _aval(ar).shape[axis] == 0 and size and fill_value is None:
    raise ValueError("jnp.unique: for zero-sized input with nonzero size argument, fill_value "
                     "must be specified")
  aux, mask, perm = _unique_sorted_mask(ar, axis, equal_nan)
  if size is None:
    ind = _concrete(mask, "The error arose in jnp.unique(). " + _UNIQUE_SIZE_HINT)
  else:
    ind = nonzero(mask, size=size)[0]
  result = aux[ind] if _size(aux) else aux
  if size is not None and fill_value is not None:
    fill_value = _cast_fill(fill_value, _aval(result).dtype)
    if _aval(result).shape[0]:
      valid = shape_ops.expand_dims(_arange(size) < mask.sum(),
                                    tuple(range(1, _aval(result).ndim)))
      result = where(valid, result, fill_value)
    else:
      result = creation.full_like(result, fill_value, shape=(size, *_aval(result).shape[1:]))
  result = lax_numpy.moveaxis(result, 0, axis)

  ret = (result,)
  if return_index:
    ret += (perm[ind] if _size(aux) else perm,)
  if return_inverse:
    if _size(aux):
      run_index = reductions.cumsum(mask) - 1
      inverse = creation.zeros(_aval(mask).shape, dtype=int).at[perm].set(run_index)
    else:
      inverse = creation.zeros(_aval(ar).shape[axis], dtype=int)
    ret += (inverse,)
  if return_counts:
    if _size(aux):
      if size is None:
        starts = _append(nonzero(mask)[0], _size(mask))
      else:
        starts = nonzero(mask, size=size + 1)[0]
        starts = starts.at[1:].set(where(starts[1:], starts[1:], _size(mask)))
      ret += (_diff(starts),)
    elif _aval(ar).shape[axis]:
      ret += (creation.full((1,), _aval(ar).shape[axis], dtype=int),)
    else:
      ret += (creation.empty(0, dtype=int),)
  if return_true_size:
    ret += (mask.sum(),)
  return ret[0] if len(ret) == 1 else ret


def unique(ar, return_index=False, return_inverse=False, return_counts=False, axis=None, *,
           equal_nan=True, size=None, fill_value=None, sorted=True):
  """The sorted unique elements of `ar` (or unique slices along `axis`).

  Args:
    ar: the input array (flattened when `axis` is None).
    return_index: also return the index of the first occurrence of each unique value.
    return_inverse: also return, for each input element, the index of its unique value.
    return_counts: also return how often each unique value occurs.
    axis: the axis along which to find unique slices.
    equal_nan: whether NaNs count as equal to each other (one NaN in the result).
    size: static number of unique values to return (required under jit): extra ones are
      dropped, missing ones filled with `fill_value`.
    fill_value: the padding for `size`; by default the smallest unique value.
    sorted: unused (the result is always sorted).

  Returns:
    The unique values, and the requested index/inverse/count arrays after them.
  """
  del sorted   # the result is sorted either way
  arr = _arrays("unique", ar)
  if size is None:
    arr = _concrete(arr, "The error arose for the first argument of jnp.unique(). "
                    + _UNIQUE_SIZE_HINT)
  else:
    size = _concrete_index(size, "The error arose for the size argument of jnp.unique(). "
                           + _UNIQUE_SIZE_HINT)
  shape = _aval(arr).shape
  if axis is None:
    axis_int = 0
    arr = lax_numpy.ravel(arr)
  else:
    axis_int = util.canonicalize_axis(axis, len(shape))
  result = _unique(arr, axis_int, return_index, return_inverse, return_counts,
                   equal_nan=equal_nan, size=size, fill_value=fill_value)
  if return_inverse and axis is None:
    k = 2 if return_index else 1
    result = (*result[:k], result[k].reshape(shape), *result[k + 1:])
  return result


class _UniqueAllResult(NamedTuple):
  """The values, first indices, inverse indices and counts of unique_all."""
  values: Array
  indices: Array
  inverse_indices: Array
  counts: Array


class _UniqueCountsResult(NamedTuple):
  """The values and counts of unique_counts."""
  values: Array
  counts: Array


class _UniqueInverseResult(NamedTuple):
  """The values and inverse indices of unique_inverse."""
  values: Array
  inverse_indices: Array


def unique_all(x, /, *, size=None, fill_value=None):
  """Unique values of `x` with first indices, inverse indices and counts (NaNs distinct)."""
  x = _arrays("unique_all", x)
  values, indices, inverse, counts = unique(x, return_index=True, return_inverse=True,
                                            return_counts=True, equal_nan=False, size=size,
                                            fill_value=fill_value)
  return _UniqueAllResult(values=values, indices=indices, inverse_indices=inverse,
                          counts=counts)


def unique_counts(x, /, *, size=None, fill_value=None):
  """Unique values of `x` and their counts (NaNs distinct)."""
  x = _arrays("unique_counts", x)
  values, counts = unique(x, return_counts=True, equal_nan=False, size=size,
                          fill_value=fill_value)
  return _UniqueCountsResult(values=values, counts=counts)


def unique_inverse(x, /, *, size=None, fill_value=None):
  """Unique values of `x` and, shaped like `x`, the index of each element's value in them."""
  x = _arrays("unique_inverse", x)
  values, inverse = unique(x, return_inverse=True, equal_nan=False, size=size,
                           fill_value=fill_value)
  return _UniqueInverseResult(values=values, inverse_indices=inverse)


def unique_values(x, /, *, size=None, fill_value=None):
  """The unique values of `x`, sorted (NaNs distinct)."""
  x = _arrays("unique_values", x)
  return unique(x, equal_nan=False, size=size, fill_value=fill_value)


# ---- union, intersection, differences -----------------------------------------------------------
def _concat_unique(arr1, arr2):
  """The unique values of each array, packed at the front of one array, and their total."""
  arr1, arr2 = lax_numpy.ravel(arr1), lax_numpy.ravel(arr2)
  arr1, n1 = _unique(arr1, axis=0, size=_size(arr1), return_true_size=True)
  arr2, n2 = _unique(arr2, axis=0, size=_size(arr2), return_true_size=True)
  out = creation.zeros(_size(arr1) + _size(arr2), dtype=dtypes.result_type(arr1, arr2))
  out = shape_ops.dynamic_update_slice(out, arr1, (0,))
  out = shape_ops.dynamic_update_slice(out, arr2, (n1,))
  return out, n1 + n2


def union1d(ar1, ar2, *, size=None, fill_value=None):
  """The sorted unique values found in either array (flattened).

  `size` (static, required under jit) and `fill_value` are as in `unique`.
  """
  ar1, ar2 = _arrays("union1d", ar1, ar2)
  if size is None:
    ar1 = _concrete(ar1, "The error arose in union1d()")
    ar2 = _concrete(ar2, "The error arose in union1d()")
  else:
    size = _concrete_index(size, "The error arose in union1d()")
  return unique(lax_numpy.concatenate((ar1, ar2), axis=None), size=size, fill_value=fill_value)


def setdiff1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values of `ar1` that are not in `ar2` (both flattened).

  Args:
    assume_unique: whether `ar1` has no repeated values (then it is not sorted either).
    size: static length of the result (required under jit), padded with `fill_value`
      (default 0).
  """
  arr1, arr2 = _arrays("setdiff1d", ar1, ar2)
  arr1, arr2 = lax_numpy.ravel(arr1), lax_numpy.ravel(arr2)
  if size is None:
    _concrete(ar1, "The error arose in setdiff1d()")
  else:
    size = _concrete_index(size, "The error arose in setdiff1d()")
  fill = creation.full_like(arr1, fill_value=0 if fill_value is None else fill_value, shape=())
  if _size(arr1) == 0:
    return creation.full_like(arr1, fill, shape=size or 0)
  if not assume_unique:
    arr1 = unique(arr1, size=size and _size(arr1))
  mask = _in1d(arr1, arr2, invert=True, assume_unique=assume_unique)
  if size is None:
    return arr1[mask]
  if not assume_unique:
    # The padding of unique() (repeats of its first value) is not part of the difference.
    n_unique = _size(arr1) + 1 - (arr1 == arr1[0]).sum()
    mask = where(_arange(_size(arr1)) < n_unique, mask, False)
  return where(_arange(size) < mask.sum(), arr1[where(mask, size=size)], fill)


@jit(static_argnames=["assume_unique", "size"])
def _setxor1d_size(arr1, arr2, fill_value, *, assume_unique, size):
  if assume_unique:
    arr = lax_numpy.concatenate([arr1, arr2])
    aux = lax_numpy.sort(lax_numpy.concatenate([arr1, arr2]))
    flag = lax_numpy.concatenate((bool(_size(aux)), aux[1:] != aux[:-1], True), axis=None)
  else:
    arr, n_unique = _concat_unique(arr1, arr2)
    mask = _arange(_size(arr) + 1) < n_unique + 1
    _, aux = lax_sort.sort([~mask[1:], arr], is_stable=True, num_keys=2)
    flag = mask & lax_numpy.concatenate((bool(_size(aux)), aux[1:] != aux[:-1], False),
                                        axis=None).at[n_unique].set(True)
  lone = flag[1:] & flag[:-1]
  count = lone.sum()
  if _size(aux):
    idx = nonzero(lone, size=size, fill_value=_aval(aux).shape[0])[0]
    vals = aux.at[idx].get(mode="fill", fill_value=0)
  else:
    vals = creation.zeros(size, _aval(aux).dtype)
  n = _aval(vals).shape[0]
  if fill_value is None:
    vals = where(_arange(n) < count, vals, vals.max())
    return where(_arange(n) < count, vals, vals.min())
  return where(_arange(n) < count, vals, fill_value)


def setxor1d(ar1, ar2, assume_unique=False, *, size=None, fill_value=None):
  """The sorted unique values that are in exactly one of the arrays (flattened).

  `size` (static, required under jit) and `fill_value` are as in `unique`.
  """
  ar1, ar2 = _arrays("setxor1d", ar1, ar2)
  arr1, arr2 = util.promote_dtypes(lax_numpy.ravel(ar1), lax_numpy.ravel(ar2))
  del ar1, ar2
  if size is not None:
    return _setxor1d_size(arr1, arr2, fill_value=fill_value, assume_unique=assume_unique,
                          size=size)
  if not assume_unique:
    arr1 = unique(arr1)
    arr2 = unique(arr2)
  aux = lax_numpy.concatenate((arr1, arr2))
  if _size(aux) == 0:
    return aux
  aux = lax_numpy.sort(aux)
  flag = lax_numpy.concatenate((True, aux[1:] != aux[:-1], True), axis=None)
  return aux[flag[1:] & flag[:-1]]


@jit(static_argnames=["return_indices"])
def _intersect1d_sorted_mask(arr1, arr2, return_indices):
  arr = lax_numpy.concatenate((arr1, arr2))
  if return_indices:
    n = _aval(arr).shape[0]
    idx_dt = np.dtype(np.int64) if n > np.iinfo(np.int32).max else np.dtype(np.int32)
    aux, indices = lax_sort.sort_key_val(arr, shape_ops.broadcasted_iota(idx_dt, (n,), 0))
  else:
    aux = lax_numpy.sort(arr)
    indices = None
  return aux, aux[1:] == aux[:-1], indices


@jit(static_argnames=["fill_value", "assume_unique", "size", "return_indices"])
def _intersect1d_size(arr1, arr2, fill_value, assume_unique, size, return_indices):
  # 1. The unique values of both arrays, sorted together (with where they came from).
  if assume_unique:
    ind1, n1 = _arange(_size(arr1)), creation.full((), _size(arr1))
    ind2, n2 = _arange(_size(arr2)), creation.full((), _size(arr2))
    arr = lax_numpy.concatenate([arr1, arr2])
    aux, aux_idx = lax_sort.sort([arr, _arange(_size(arr))], is_stable=True, num_keys=1)
    mask = creation.ones(_size(arr), dtype=bool)
  else:
    arr1, ind1, n1 = _unique(arr1, 0, size=_size(arr1), return_index=True,
                             return_true_size=True, fill_value=0)
    arr2, ind2, n2 = _unique(arr2, 0, size=_size(arr2), return_index=True,
                             return_true_size=True, fill_value=0)
    arr = creation.zeros(_size(arr1) + _size(arr2), dtype=dtypes.result_type(arr1, arr2))
    arr = shape_ops.dynamic_update_slice(arr, arr1, (0,))
    arr = shape_ops.dynamic_update_slice(arr, arr2, (n1,))
    mask = _arange(_size(arr)) < n1 + n2
    _, aux, aux_idx = lax_sort.sort([~mask, arr, _arange(_size(arr))], is_stable=True,
                                    num_keys=2)
  # 2. Values equal to their successor are in both arrays.
  both = (aux[1:] == aux[:-1]) & mask[1:]
  count = both.sum()
  if _size(aux):
    val_idx = nonzero(both, size=size, fill_value=_size(aux))[0]
    vals = aux.at[val_idx].get(mode="fill", fill_value=0)
  else:
    val_idx = _arange(0)
    vals = creation.zeros(size, _aval(aux).dtype)
  n = _aval(vals).shape[0]
  if fill_value is None:
    vals = where(_arange(n) < count, vals, vals.max())
    vals = where(_arange(n) < count, vals, vals.min())
  else:
    vals = where(_arange(n) < count, vals, fill_value)
  if not return_indices:
    return vals
  # 3. Back through the sort (and the unique step) to positions in the inputs.
  idx1 = aux_idx.at[val_idx].get(mode="fill", fill_value=_size(arr1))
  idx1 = where(_arange(_aval(idx1).shape[0]) < count, idx1, _size(arr1))
  idx2 = aux_idx.at[val_idx + 1].get(mode="fill", fill_value=_size(arr2)) - n1
  idx2 = where(_arange(_aval(idx2).shape[0]) < count, idx2, _size(arr2))
  if not assume_unique:
    idx1 = ind1.at[idx1].get(mode="fill", fill_value=_size(ind1))
    idx2 = ind2.at[idx2].get(mode="fill", fill_value=_size(ind2))
  return vals, idx1, idx2


def intersect1d(ar1, ar2, assume_unique=False, return_indices=False, *, size=None,
                fill_value=None):
  """The sorted unique values found in both arrays (flattened).

  Args:
    assume_unique: whether each input has no repeated values.
    return_indices: also return the index in each (flattened) input of each common value
      (its first occurrence).
    size: static length of the result (required under jit); padded with `fill_value`
      (default: the smallest common value), and the indices with the input sizes.
  """
  ar1, ar2 = _arrays("intersect1d", ar1, ar2)
  arr1, arr2 = util.promote_dtypes(ar1, ar2)
  del ar1, ar2
  arr1, arr2 = lax_numpy.ravel(arr1), lax_numpy.ravel(arr2)
  if size is not None:
    return _intersect1d_size(arr1, arr2, return_indices=return_indices, size=size,
                             fill_value=fill_value, assume_unique=assume_unique)
  ind1 = ind2 = _arange(0)
  if not assume_unique:
    if return_indices:
      arr1, ind1 = unique(arr1, return_index=True)
      arr2, ind2 = unique(arr2, return_index=True)
    else:
      arr1, arr2 = unique(arr1), unique(arr2)
  aux, mask, aux_idx = _intersect1d_sorted_mask(arr1, arr2, return_indices)
  common = aux[:-1][mask]
  if not return_indices:
    return common
  idx1 = aux_idx[:-1][mask]
  idx2 = aux_idx[1:][mask] - np.size(arr1)
  if not assume_unique:
    idx1, idx2 = ind1[idx1], ind2[idx2]
  return common, idx1, idx2


# ---- comparison and testing ---------------------------------------------------------------------
@jit(static_argnames=("equal_nan",))
def isclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """Elementwise |a - b| <= atol + rtol * |b| (infinities equal only to themselves; NaNs equal
  to each other only with `equal_nan`)."""
  a, b = util.promote_args("isclose", a, b)
  a, b = util.promote_args_inexact("isclose", a, b)
  dt = _aval(a).dtype
  if dt.kind == "c":
    dt = np.zeros((), dt).real.dtype
  rtol = lax_ew.convert_element_type(rtol, dt)
  atol = lax_ew.convert_element_type(atol, dt)
  both_nan = ufuncs.logical_and(ufuncs.isnan(a), ufuncs.isnan(b))
  finite_b = ufuncs.isfinite(b)
  near = lax_ew.le(lax_ew.abs(lax_ew.sub(a, b)), lax_ew.add(atol, lax_ew.mul(rtol, lax_ew.abs(b))))
  out = ufuncs.logical_or(lax_ew.eq(a, b), ufuncs.logical_and(finite_b, near))
  return ufuncs.logical_or(out, both_nan) if equal_nan else out


@jit(static_argnames=("equal_nan",))
def allclose(a, b, rtol=1e-05, atol=1e-08, equal_nan=False):
  """Whether `isclose(a, b, rtol, atol, equal_nan)` holds everywhere."""
  util.check_arraylike("allclose", a, b)
  return reductions.all(isclose(a, b, rtol, atol, equal_nan))


def array_equal(a1, a2, equal_nan=False):
  """Whether the arrays have the same shape and elements (NaNs equal with `equal_nan`)."""
  a1, a2 = creation.asarray(a1), creation.asarray(a2)
  if np.shape(a1) != np.shape(a2):
    return creation.array(False, dtype=bool)
  eq = creation.asarray(a1 == a2)
  if equal_nan:
    eq = ufuncs.logical_or(eq, ufuncs.logical_and(ufuncs.isnan(a1), ufuncs.isnan(a2)))
  return reductions.all(eq)


def array_equiv(a1, a2):
  """Whether the arrays are equal after broadcasting (False if they do not broadcast)."""
  a1, a2 = creation.asarray(a1), creation.asarray(a2)
  try:
    eq = ufuncs.equal(a1, a2)
  except ValueError:
    return creation.array(False)
  return reductions.all(eq)


def _isposneginf(infinity, x, out):
  if out is not None:
    raise NotImplementedError("The 'out' argument to isneginf/isposinf is not supported.")
  dt = _aval(x).dtype
  if dtypes.issubdtype(dt, np.floating):
    return lax_ew.eq(x, lax_ew.scalar_literal(infinity, dt))
  if dtypes.issubdtype(dt, np.complexfloating):
    raise ValueError("isposinf/isneginf are not well defined for complex types")
  return creation.full_like(x, False, dtype=np.bool_)


def isposinf(x, /, out=None):
  """Elementwise x == +inf (False for integers and booleans; complex input is an error)."""
  x = _arrays("isposinf", x, scalars=True)
  return _isposneginf(np.inf, x, out)


def isneginf(x, /, out=None):
  """Elementwise x == -inf (False for integers and booleans; complex input is an error)."""
  x = _arrays("isneginf", x, scalars=True)
  return _isposneginf(-np.inf, x, out)


@jit
def iscomplex(x):
  """Elementwise: whether the imaginary part is nonzero."""
  i = ufuncs.imag(x)
  return lax_ew.ne(i, _const_zero(i))


@jit
def isreal(x):
  """Elementwise: whether the imaginary part is zero."""
  i = ufuncs.imag(x)
  return lax_ew.eq(i, _const_zero(i))


_DTYPE_KINDS = {
    "bool": (np.dtype(np.bool_),),
    "signed integer": tuple(np.dtype(t) for t in (np.int8, np.int16, np.int32, np.int64))
    + tuple(d for d in dtypes._intn_dtypes if d not in dtypes._unsigned_intn),
    "unsigned integer": tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
    + tuple(d for d in dtypes._intn_dtypes if d in dtypes._unsigned_intn),
    "real floating": tuple(np.dtype(t) for t in (np.float16, np.float32, np.float64))
    + dtypes._all_custom_float_dtypes,
    "complex floating": (np.dtype(np.complex64), np.dtype(np.complex128)),
}
_DTYPE_KINDS["integral"] = _DTYPE_KINDS["signed integer"] + _DTYPE_KINDS["unsigned integer"]
_DTYPE_KINDS["numeric"] = (_DTYPE_KINDS["integral"] + _DTYPE_KINDS["real floating"]
                           + _DTYPE_KINDS["complex floating"])


def isdtype(dtype, kind):
  """Whether `dtype` is of `kind`: a dtype, one of the names 'bool', 'signed integer',
  'unsigned integer', 'integral', 'real floating', 'complex floating', 'numeric', or a tuple
  of these (any may match)."""
  the_dtype = np.dtype(dtype)
  options = set()
  for k in kind if isinstance(kind, tuple) else (kind,):
    if isinstance(k, str) and k in _DTYPE_KINDS:
      options.update(_DTYPE_KINDS[k])
      continue
    try:
      options.add(np.dtype(k))
    except TypeError as e:
      if isinstance(k, str):
        raise ValueError(f"Unrecognized kind={k!r} expected one of {list(_DTYPE_KINDS)}, or a "  # noqa: TRY004
                         "compatible input for jnp.dtype()") from None
      raise TypeError(f"Expected kind to be a dtype, string, or tuple; got kind={k!r}") from e
  return the_dtype in options


def iterable(y):
  """Whether `iter(y)` works (NumPy's iterable; 0-d arrays are not iterable)."""
  return np.iterable(y)


@jit
def nan_to_num(x, copy=True, nan=0.0, posinf=None, neginf=None):
  """`x` with NaN replaced by `nan` and infinities by `posinf`/`neginf` (by default the
  largest and smallest finite values of the dtype); complex parts are treated separately."""
  del copy
  x = _arrays("nan_to_num", x)
  dt = _aval(x).dtype
  if not dtypes.issubdtype(dt, np.inexact):
    return x
  if dt.kind == "c":
    return lax_ew.complex(nan_to_num(lax_ew.real(x), nan=nan, posinf=posinf, neginf=neginf),
                          nan_to_num(lax_ew.imag(x), nan=nan, posinf=posinf, neginf=neginf))
  info = dtypes.finfo(dt)
  posinf = info.max if posinf is None else posinf
  neginf = info.min if neginf is None else neginf
  out = where(ufuncs.isnan(x), creation.asarray(nan, dtype=dt), x)
  out = where(isposinf(out), creation.asarray(posinf, dtype=dt), out)
  return where(isneginf(out), creation.asarray(neginf, dtype=dt), out)


@jit(inline=True)
def spacing(x, /):
  """The distance from `x` to the next representable value away from zero (towards +inf for
  float16); the smallest subnormal at zero."""
  arr, = util.promote_args_inexact("spacing", x)
  dt = _aval(arr).dtype
  if dt.kind == "c":
    raise ValueError("jnp.spacing is not defined for complex inputs.")
  inf = lax_ew.scalar_literal(np.inf, dt)
  if dt == np.float16:
    return lax_ew.nextafter(arr, inf) - arr
  tiny = dtypes.finfo(dt).smallest_subnormal
  step = lax_ew.nextafter(arr, ufuncs.copysign(inf, arr)) - arr
  return lax_numpy._where(step == 0, ufuncs.copysign(tiny, arr), step)
