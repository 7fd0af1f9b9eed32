"""NumPy's searching, counting and selection functions: nonzero and where(cond), searchsorted,
digitize, bincount, count_nonzero, argwhere, flatnonzero, extract, compress, select, piecewise,
choose, lexsort, partition, argpartition, sort_complex, place, put, ravel_multi_index and
unravel_index.

Functions whose result size depends on the values (nonzero, argwhere, ...) need a concrete array,
or a static `size=` (with `fill_value=` for the padding) under jit and other transformations.
"""
from __future__ import annotations

import builtins
import functools
import math
import operator

import numpy as np

from arrax._src import batching, core, dtypes
from arrax._src.array import Array
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import shape_ops, stacking, total_order
from arrax._src.lax import sort as lax_sort
from arrax._src.lax.control_flow import scan, switch
from arrax._src.numpy import assembly, creation, lax_numpy, reductions, ufuncs, util
from arrax._src.numpy.vectorize import vectorize
from arrax._src.numpy.util import _aval
from arrax._src.sharding_impls import canonicalize_sharding

__all__ = ["argpartition", "argwhere", "bincount", "choose", "compress", "count_nonzero",
           "digitize", "extract", "flatnonzero", "lexsort", "nonzero", "partition", "piecewise",
           "place", "put", "ravel_multi_index", "searchsorted", "select", "sort_complex",
           "unravel_index", "where"]


# ---- helpers -----------------------------------------------------------------------------------
def _const_zero(x):
  """A rank-0 zero like `x` (JAX's lax._const(x, 0)): weakly typed when `x` is a weakly typed
  scalar, else of `x`'s dtype."""
  aval = core.get_aval(x)
  return lax_ew.scalar_literal(0, aval.dtype, aval.weak_type and aval.ndim == 0)


def _concrete(x, context):
  """`x` itself when its value is known at trace time; ConcretizationTypeError otherwise."""
  if isinstance(x, core.Tracer):
    raise ConcretizationTypeError(x, context + "\n")
  return x


def _concrete_index(x, context):
  """A static int (JAX's concrete_or_error(operator.index, ...))."""
  return operator.index(_concrete(x, context))


def _index_dtype_for_dim(n):
  """int32, or int64 for an axis longer than int32 can count (JAX's int_dtype_for_dim)."""
  return np.dtype(np.int64) if n > np.iinfo(np.int32).max else np.dtype(np.int32)


def _unstack(x):
  """The rows of the array `x` (what iterating over a JAX array traces to)."""
  shape = _aval(x).shape
  if not shape:
    raise TypeError("iteration over a 0-d array")
  nd = len(shape)
  return [shape_ops.squeeze(shape_ops.slice(x, (i,) + (0,) * (nd - 1), (i + 1,) + shape[1:],
                                            (1,) * nd), (0,)) for i in range(shape[0])]


def _as_sequence(xs):
  """A list of the entries of a sequence, or of the rows of an array."""
  if isinstance(xs, (core.Tracer, Array)):
    return _unstack(xs)
  return list(xs)


def _as_array(x, scalars=False):
  """NumPy arrays and scalars (and Python scalars if `scalars`) as arrax arrays; arrays and
  tracers unchanged."""
  if isinstance(x, (Array, core.Tracer)):
    return x
  if isinstance(x, core.Literal) and not scalars:
    return x
  return creation.asarray(x)


def _arrays(name, *args, scalars=False):
  """JAX's ensure_arraylike: check the arguments, then make them arrays (Python scalars stay
  weakly typed literals unless `scalars`). One argument gives one value, several a tuple."""
  util.check_arraylike(name, *args)
  out = tuple(_as_array(util.ensure_arraylike(name, a), scalars) for a in args)
  return out[0] if len(args) == 1 else out


def _ensure_arraylike_tuple(name, seq):
  util.check_arraylike(name, *seq)
  return tuple(_as_array(util.ensure_arraylike(name, x), True) for x in seq)


def _sparse_indices(shape):
  """Broadcastable iotas along each axis of `shape` (jnp.indices(shape, sparse=True))."""
  dt = dtypes.default_int_dtype()
  n = len(shape)
  return tuple(shape_ops.broadcast_in_dim(shape_ops.iota(dt, d), (1,) * i + (d,) + (1,) *
                                          (n - i - 1), (i,)) for i, d in enumerate(shape))


def _tile_to_size(arr, size):
  """The 1-D `arr` repeated (whole) as often as needed, cut to `size` elements."""
  n = _aval(arr).shape[0]
  if n < size:
    reps = int(np.ceil(size / n))
    arr = stacking.tile(arr, (reps,))
    n = reps * n
  return arr[:size] if n > size else arr


# ---- nonzero and where(cond) -------------------------------------------------------------------
def nonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements of `a`, one index array per axis.

  Args:
    a: array of at least one dimension.
    size: static number of indices to return. Required under jit and other transformations;
      extra nonzero elements are dropped, missing ones padded with `fill_value`.
    fill_value: padding for the indices beyond the number of nonzeros: a scalar, or a tuple
      with one scalar per axis (default 0).

  Returns:
    A tuple of `a.ndim` integer arrays.
  """
  arr = _arrays("nonzero", a)
  shape = _aval(arr).shape
  if not shape:
    raise ValueError("Calling nonzero on 0d arrays is not allowed. Use "
                     "jnp.atleast_1d(scalar).nonzero() instead.")
  mask = arr if _aval(arr).dtype == np.bool_ else (arr != 0)
  context = ("The size argument of jnp.nonzero must be statically specified to use jnp.nonzero "
             "within JAX transformations.")
  if size is None:
    count = int(_concrete(mask.sum(), context))
  else:
    count = _concrete_index(size, context)
  out = assembly._nonzero_sized(mask, count)
  if fill_value is not None:
    fills = fill_value if isinstance(fill_value, tuple) else (fill_value,) * len(shape)
    if len(fills) != len(shape) or any(np.shape(f) != () for f in fills):
      raise ValueError(f"fill_value must be a scalar or a tuple of length {len(shape)}; got "
                       f"{fill_value}")
    padding = creation.arange(count) >= mask.sum()
    out = tuple(where(padding, f, o) for f, o in zip(fills, out))
  return out


def where(condition, x=None, y=None, /, *, size=None, fill_value=None):
  """Elements of `x` where `condition` is true and of `y` elsewhere (broadcast together).

  With `condition` alone, the same as `nonzero(condition, size=size, fill_value=fill_value)`.
  """
  if x is None and y is None:
    util.check_arraylike("where", condition)
    return nonzero(condition, size=size, fill_value=fill_value)
  if size is not None or fill_value is not None:
    raise ValueError("size and fill_value arguments cannot be used in three-term where "
                     "function.")
  if lax_ew._is_key_array(x) or lax_ew._is_key_array(y):
    return _where_keys(condition, x, y)
  util.check_arraylike("where", condition, x, y)
  if x is None or y is None:
    raise ValueError("Either both or neither of the x and y arguments should be provided to "
                     f"jax.numpy.where, got {x} and {y}.")
  return lax_numpy._where(condition, x, y)


def _where_keys(condition, x, y):
  """jnp.where over typed PRNG key arrays (both of one key dtype): broadcast, then select."""
  for k in (x, y):
    if not lax_ew._is_key_array(k):
      raise ValueError(f"dtype={(y if k is x else x).dtype} is not a valid dtype for JAX type "
                       "promotion.")
  if x.dtype != y.dtype:
    raise ValueError(f"dtype={x.dtype} is not a valid dtype for JAX type promotion.")
  condition = lax_numpy.asarray(condition)
  if condition.dtype != np.bool_:
    condition = condition != 0
  shape = util.broadcast_shapes(condition.shape, x.shape, y.shape)
  key_shape = tuple(x.dtype.impl.key_shape)
  bx, by = (k._wrap(lax_numpy.broadcast_to(k._base_array, (*shape, *key_shape))) for k in (x, y))
  return lax_ew.select_n(lax_numpy.broadcast_to(condition, shape), by, bx)


def flatnonzero(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements of the flattened `a` (see `nonzero` for size/fill_value)."""
  return nonzero(lax_numpy.ravel(a), size=size, fill_value=fill_value)[0]


def argwhere(a, *, size=None, fill_value=None):
  """Indices of the nonzero elements as a (count, a.ndim) array (see `nonzero`)."""
  a = _arrays("argwhere", a)
  nd = _aval(a).ndim
  cols = nonzero(lax_numpy.atleast_1d(a), size=size, fill_value=fill_value)
  result = lax_numpy.transpose(lax_numpy.vstack(cols))
  n = _aval(result).shape[0]
  if nd == 0:
    return result[:0].reshape(n, 0)
  return result.reshape(n, nd)


# ---- counting ----------------------------------------------------------------------------------
def bincount(x, weights=None, minlength=0, *, length=None, out_sharding=None):
  """Count the occurrences of each non-negative integer in the 1-D `x`.

  Args:
    x: 1-D array of non-negative integers (negative values count as 0).
    weights: optional array shaped like `x`; its entries are summed instead of ones.
    minlength: least length of the result.
    length: static length of the result (required under jit); values >= length are dropped.

  Returns:
    An array of length `max(minlength, x.max() + 1)`, or `length`.
  """
  x = _arrays("bincount", x)
  if _aval(x).dtype == np.bool_:
    x = lax_ew.convert_element_type(x, np.int32)
  if not dtypes.issubdtype(_aval(x).dtype, np.integer):
    raise TypeError(f"x argument to bincount must have an integer type; got {_aval(x).dtype}")
  if _aval(x).ndim != 1:
    raise ValueError("only 1-dimensional input supported.")
  minlength = _concrete_index(minlength, "The error occurred because of argument 'minlength' "
                                         "of jnp.bincount.")
  if length is None:
    xv = _concrete(x, "The error occurred because of argument 'x' of jnp.bincount. To avoid "
                      "this error, pass a static `length` argument.")
    length = builtins.max(minlength, _aval(xv).size and int(builtins.max(0, xv.max())) + 1)
  else:
    length = _concrete_index(length, "The error occurred because of argument 'length' of "
                                     "jnp.bincount.")
  if weights is None:
    weights = np.array(1, dtype=dtypes.canonicalize_dtype(np.int64))
  elif not util.is_arraylike(weights):
    raise TypeError(f"Argument '{weights}' of type {type(weights)} is not a valid JAX type")
  elif np.shape(x) != np.shape(weights):
    raise ValueError(f"type of weights must match type of x. Got typeof(x)={_aval(x).str_short()}"
                     f" and typeof(weights)={core.get_aval(weights).str_short()}")
  out_sharding = canonicalize_sharding(out_sharding, "jnp.bincount")
  if out_sharding is not None and any(p is not None for p in out_sharding.spec):
    raise core.ShardingTypeError("out_sharding passed to `jnp.bincount` can only be fully "
                                 "replicated or fully unreduced along all mesh axes")
  out_dtype = dtypes.result_type(weights)
  return creation.zeros(length, out_dtype).at[lax_numpy.clip(x, 0)].add(
      weights, mode="drop", out_sharding=out_sharding)


@jit(static_argnames=("axis", "keepdims"))
def count_nonzero(a, axis=None, keepdims=False):
  """The number of nonzero elements of `a` along `axis` (all axes by default)."""
  a = _arrays("count_nonzero", a)
  nonzero_mask = lax_ew.ne(a, _const_zero(a))
  return reductions.sum(nonzero_mask, axis=axis, dtype=dtypes.default_int_dtype(),
                        keepdims=keepdims)


# ---- searchsorted and digitize -----------------------------------------------------------------
_SEARCH_METHODS = ("compare_all", "scan", "scan_unrolled", "sort")


@jit(static_argnames=("side", "dtype", "unrolled"))
def _searchsorted_scan_impl(sorted_arr, query, side, dtype, unrolled):
  """Binary search: ceil(log2(n + 1)) halvings of [low, high), run as a scan."""
  n = _aval(sorted_arr).shape[0]
  if n == 0:
    return shape_ops._full(_aval(query).shape, 0, dtype)
  if _aval(query).ndim:
    one = functools.partial(_searchsorted_scan_impl, side=side, dtype=dtype, unrolled=unrolled)
    return batching.vmap(one, in_axes=(None, 0))(sorted_arr, query)
  goes_left = (total_order.sort_le_comparator if side == "left"
               else total_order.sort_lt_comparator)
  bound_dt = np.uint64 if np.dtype(dtype).itemsize == 8 else np.uint32

  def halve(bounds, _):
    low, high = bounds
    mid = low + (high - low) // 2
    left = goes_left(query, sorted_arr[mid])
    return (lax_ew.select(left, low, mid), lax_ew.select(left, mid, high)), ()

  levels = int(np.ceil(np.log2(n + 1)))
  (_, high), _ = scan(halve, (bound_dt(0), bound_dt(n)), (), length=levels,
                      unroll=levels if unrolled else 1)
  return high.astype(dtype)


@jit(static_argnames=("side", "dtype"))
def _searchsorted_sort_impl(sorted_arr, query, side, dtype):
  """Rank of each query among the sorted values, by sorting both together."""
  total = _aval(sorted_arr).size + _aval(query).size
  work_dt = np.int32 if total <= np.iinfo(np.int32).max else np.int64

  def rank(x):
    idx = shape_ops.iota(work_dt, _aval(x).shape[0])
    zeros = shape_ops._full_like(idx, 0)
    return zeros.at[lax_sort.sort_key_val(x, idx)[1]].set(idx)

  flat_query = lax_numpy.ravel(query)
  nq = _aval(flat_query).shape[0]
  if side == "left":
    index = rank(shape_ops.concatenate([flat_query, sorted_arr], 0))[:nq]
  else:
    index = rank(shape_ops.concatenate([sorted_arr, flat_query], 0))[_aval(sorted_arr).size:]
  out = shape_ops.reshape(lax_ew.sub(index, rank(flat_query)), _aval(query).shape)
  return out.astype(dtype)


@jit(static_argnames=("side", "dtype"))
def _searchsorted_compare_all_impl(sorted_arr, query, side, dtype):
  """Count the sorted values below (or not above) each query."""
  below = (total_order.sort_lt_comparator if side == "left"
           else total_order.sort_le_comparator)
  hits = batching.vmap(below, in_axes=(0, None))(sorted_arr, query)
  return hits.sum(dtype=dtype, axis=0)


@jit(static_argnames=("side", "method"))
def searchsorted(a, v, side="left", sorter=None, *, method="scan"):
  """Where to insert the values `v` into the sorted 1-D `a` to keep it sorted.

  Args:
    a: 1-D array sorted in ascending order (or made so by `sorter`).
    v: values to look up (any shape).
    side: 'left' gives the first suitable position, 'right' the last.
    sorter: optional indices that sort `a`.
    method: 'scan' (binary search, the default), 'scan_unrolled', 'sort' or 'compare_all'.
      All give the same results; they differ in speed.

  Returns:
    int32 insertion positions, shaped like `v`.
  """
  if sorter is None:
    a, v = _arrays("searchsorted", a, v)
  else:
    a, v, sorter = _arrays("searchsorted", a, v, sorter)
  if _aval(a).ndim != 1:
    raise ValueError("a should be 1-dimensional")
  a, v = util.promote_dtypes(a, v)
  if sorter is not None:
    a = a[sorter]
  dtype = _index_dtype_for_dim(_aval(a).shape[0])
  if side not in ("left", "right"):
    raise ValueError(f"invalid argument side={side!r}, expected 'left' or 'right'")
  if method not in _SEARCH_METHODS:
    raise ValueError(f"invalid argument method={method!r}, expected one of "
                     f"{list(_SEARCH_METHODS)}")
  if method in ("scan", "scan_unrolled"):
    return _searchsorted_scan_impl(a, v, side=side, dtype=dtype,
                                   unrolled=method == "scan_unrolled")
  if method == "sort":
    return _searchsorted_sort_impl(a, v, side=side, dtype=dtype)
  return _searchsorted_compare_all_impl(a, v, side=side, dtype=dtype)


@jit(static_argnames=("right", "method"))
def digitize(x, bins, right=False, *, method=None):
  """Index of the bin of each value of `x`, for monotonic (increasing or decreasing) `bins`.

  With `right=False` a value v falls in bin i when bins[i-1] <= v < bins[i] (increasing bins);
  `right=True` closes the bins on the right instead. `method` is passed to `searchsorted`.
  """
  x, bins_arr = _arrays("digitize", x, bins)
  right = bool(_concrete(right, "right argument of jnp.digitize()"))
  if _aval(bins_arr).ndim != 1:
    raise ValueError(f"digitize: bins must be a 1-dimensional array; got bins={bins}")
  n = _aval(bins_arr).shape[0]
  if n == 0:
    return creation.zeros_like(x, dtype=np.int32)
  side = "left" if right else "right"
  kw = {} if method is None else {"method": method}
  increasing = bins_arr[-1] >= bins_arr[0]
  return where(increasing, searchsorted(bins_arr, x, side=side, **kw),
               n - searchsorted(bins_arr[::-1], x, side=side, **kw))


# ---- selection ---------------------------------------------------------------------------------
def compress(condition, a, axis=None, *, size=None, fill_value=0, out=None):
  """The slices of `a` along `axis` (the flattened `a` by default) where `condition` is true.

  Args:
    condition: 1-D boolean array; entries beyond the length of the axis must be False.
    a: the array to select from.
    axis: the axis to select along.
    size: static length of the result along `axis` (required under jit), padded with
      `fill_value`.

  Returns:
    The selected slices.
  """
  cond, arr = _arrays("compress", condition, a, scalars=True)
  fill_value = _arrays("compress", fill_value)
  cond = cond.astype(bool)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.compress is not supported.")
  if _aval(cond).ndim != 1:
    raise ValueError("condition must be a 1D array")
  if axis is None:
    axis = 0
    arr = lax_numpy.ravel(arr)
  else:
    arr = lax_numpy.moveaxis(arr, axis, 0)
  n = _aval(arr).shape[0]
  cond, extra = cond[:n], cond[n:]
  arr = arr[:_aval(cond).shape[0]]
  if size is None:
    if reductions.any(extra):
      raise ValueError("condition contains entries that are out of bounds")
    result = arr[cond]
  elif not 0 <= size <= _aval(arr).shape[0]:
    raise ValueError("size must be positive and not greater than the size of the array axis; "
                     f"got size={size} for a.shape[axis]={_aval(arr).shape[0]}")
  else:
    mask = lax_numpy.expand_dims(cond, tuple(range(1, _aval(arr).ndim)))
    arr = where(mask, arr, creation.array(fill_value, dtype=_aval(arr).dtype))
    result = arr[lax_numpy.argsort(cond, stable=True, descending=True)][:size]
  return lax_numpy.moveaxis(result, 0, axis)


def extract(condition, arr, *, size=None, fill_value=0):
  """The elements of the flattened `arr` where the flattened `condition` is true.

  `size` (static, required under jit) fixes the result length, padded with `fill_value`.
  """
  util.check_arraylike("extract", condition, arr, fill_value)
  return compress(lax_numpy.ravel(condition), lax_numpy.ravel(arr), size=size,
                  fill_value=fill_value)


def select(condlist, choicelist, default=0):
  """Elementwise, the entry of the first choice whose condition holds (`default` if none)."""
  if len(condlist) != len(choicelist):
    raise ValueError(f"condlist must have length equal to choicelist ({len(condlist)} vs "
                     f"{len(choicelist)})")
  if len(condlist) == 0:
    raise ValueError("condlist must be non-empty")
  util.check_arraylike("select", *condlist, *choicelist, default)
  condlist = [creation.asarray(c) for c in condlist]
  choicelist = [creation.asarray(c) for c in choicelist]
  default = creation.asarray(default)
  # The default goes first under an always-false condition: argmax of all-false picks it.
  choices = util.promote_dtypes(default, *choicelist)
  conds = lax_numpy.stack(lax_numpy.broadcast_arrays(False, *condlist))
  which = reductions.argmax(conds.astype(bool), axis=0)
  return lax_ew.select_n(*lax_numpy.broadcast_arrays(which, *choices))


def piecewise(x, condlist, funclist, *args, **kw):
  """Evaluate a function (or constant) per region of `x` selected by the conditions.

  Args:
    x: the input array.
    condlist: boolean arrays (or one stacked array) shaped like `x`; where several hold, the
      last one wins.
    funclist: one function or constant per condition, plus optionally one more used where no
      condition holds (0 otherwise). Functions get `x` (one element at a time), `*args`, `**kw`.

  Returns:
    An array shaped and typed like `x`.
  """
  x_arr = _arrays("piecewise", x)
  nc, nf = len(condlist), len(funclist)
  if nf == nc + 1:
    funclist = funclist[-1:] + funclist[:-1]
  elif nf == nc:
    funclist = [0] + list(funclist)
  else:
    raise ValueError(f"with {nc} condition(s), either {nc} or {nc + 1} functions are expected; "
                     f"got {nf}")
  consts = {i: c for i, c in enumerate(funclist) if not callable(c)}
  funcs = {i: f for i, f in enumerate(funclist) if callable(f)}
  return _piecewise(x_arr, creation.asarray(condlist, dtype=bool), consts,
                    frozenset(funcs.items()), *args, **kw)


@jit(static_argnames=["funcs"])
def _piecewise(x, condlist, consts, funcs, *args, **kw):
  funcdict = dict(funcs)
  branches = [consts.get(i, funcdict.get(i)) for i in range(len(condlist) + 1)]
  # Branch index: the last true condition (cumsum of the conditions after a leading zero row).
  indices = reductions.argmax(reductions.cumsum(lax_numpy.concatenate(
      [creation.zeros_like(condlist[:1]), condlist], 0), 0), 0)
  dt = _aval(x).dtype

  def call(f):
    return lambda v: f(v, *args, **kw).astype(dt)

  def const(c):
    return lambda v: creation.array(c, dtype=dt)

  branches = [call(f) if callable(f) else const(f) for f in branches]
  return vectorize(switch, excluded=(1,))(indices, branches, x)


def choose(a, choices, out=None, mode="raise"):
  """Elementwise `choices[a[i]][i]`, all arguments broadcast together.

  `mode` handles out-of-range indices: 'raise' (needs a concrete `a`), 'wrap' or 'clip'.
  """
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.choose is not supported.")
  a, *choices = _ensure_arraylike_tuple("choose", (a, *_as_sequence(choices)))
  if not dtypes.issubdtype(_aval(a).dtype, np.integer):
    raise ValueError("`a` array must be integer typed")
  n = len(choices)
  if mode == "raise":
    arr = creation.asarray(_concrete(a, "The error occurred because jnp.choose was jit-compiled "
                                        "with mode='raise'. Use mode='wrap' or mode='clip' "
                                        "instead."))
    if reductions.any((arr < 0) | (arr >= n)):
      raise ValueError("invalid entry in choice array")
  elif mode == "wrap":
    arr = creation.asarray(a) % n
  elif mode == "clip":
    arr = lax_numpy.clip(a, 0, n - 1)
  else:
    raise ValueError(f"mode={mode!r} not understood. Must be 'raise', 'wrap', or 'clip'")
  arr, *choices = lax_numpy.broadcast_arrays(arr, *choices)
  return creation.array(choices)[(arr,) + _sparse_indices(_aval(arr).shape)]


# ---- sorting-based -----------------------------------------------------------------------------
@jit(static_argnames=("axis",))
def lexsort(keys, axis=-1):
  """Indices that sort by several keys: the last key is the primary one (stable)."""
  key_arrays = _ensure_arraylike_tuple("lexsort", tuple(_as_sequence(keys)))
  if len(key_arrays) == 0:
    raise TypeError("need sequence of keys with len > 0 in lexsort")
  if len({np.shape(k) for k in key_arrays}) > 1:
    raise ValueError("all keys need to be the same shape")
  shape = _aval(key_arrays[0]).shape
  if not shape:
    return shape_ops._full((), 0, dtypes.default_int_dtype())
  axis = util.canonicalize_axis(axis, len(shape))
  idx_dt = _index_dtype_for_dim(shape[axis])
  if idx_dt == np.int32:
    idx_dt = dtypes.default_int_dtype()
  iota = shape_ops.broadcasted_iota(idx_dt, shape, axis)
  return lax_sort.sort((*key_arrays[::-1], iota), dimension=axis,
                       num_keys=len(key_arrays))[-1]


def _check_partition(name, arr, kth, axis):
  if dtypes.issubdtype(_aval(arr).dtype, np.complexfloating):
    raise NotImplementedError(f"jnp.{name} for complex dtype is not implemented.")
  axis = util.canonicalize_axis(axis, _aval(arr).ndim)
  kth = util.canonicalize_axis(kth, _aval(arr).shape[axis])
  return axis, kth


@jit(static_argnames=["kth", "axis"])
def partition(a, kth, axis=-1):
  """A copy of `a` with the kth element (along `axis`) in its sorted place, smaller elements
  before it and larger ones after it (each part in no particular order)."""
  arr = _arrays("partition", a)
  axis, kth = _check_partition("partition", arr, kth, axis)
  arr = lax_numpy.swapaxes(arr, axis, -1)
  if dtypes.issubdtype(_aval(arr).dtype, np.unsignedinteger):
    # Negation wraps unsigned zeros; shifting by one first keeps the order.
    low = -lax_sort.top_k(-(arr + 1), kth + 1)[0] - 1
  else:
    low = -lax_sort.top_k(-arr, kth + 1)[0]
  high = lax_sort.top_k(arr, _aval(arr).shape[-1] - kth - 1)[0]
  out = shape_ops.concatenate([low, high], _aval(arr).ndim - 1)
  return lax_numpy.swapaxes(out, -1, axis)


@jit(static_argnames=["kth", "axis"])
def argpartition(a, kth, axis=-1):
  """Indices that partition `a` along `axis` around its kth element (see `partition`)."""
  arr = _arrays("partition", a)
  axis, kth = _check_partition("argpartition", arr, kth, axis)
  arr = lax_numpy.swapaxes(arr, axis, -1)
  if dtypes.issubdtype(_aval(arr).dtype, np.unsignedinteger):
    low_idx = lax_sort.top_k(-(arr + 1), kth + 1)[1]
  else:
    low_idx = lax_sort.top_k(-arr, kth + 1)[1]
  # The indices of the rest: the top-k of a proxy with zeros at the chosen low positions (so
  # that repeated values are not picked twice).

  def zero_at(row, i):
    return row.at[i].set(0)

  for _ in range(_aval(arr).ndim - 1):
    zero_at = batching.vmap(zero_at)
  proxy = zero_at(shape_ops._full(_aval(arr).shape, 1.0, dtypes.default_float_dtype(), True),
                  low_idx)
  high_idx = lax_sort.top_k(proxy, _aval(arr).shape[-1] - kth - 1)[1]
  out = shape_ops.concatenate([low_idx, high_idx], _aval(arr).ndim - 1)
  return lax_numpy.swapaxes(out, -1, axis)


def _complex_dtype_for(dt):
  ft = dtypes.to_inexact_dtype(dt)
  if ft.kind == "c":
    return ft
  return dtypes.canonicalize_dtype(np.complex128 if ft == np.float64 else np.complex64)


@jit
def sort_complex(a):
  """`a` sorted along its last axis by real part, then imaginary part, as a complex array."""
  a = _arrays("sort_complex", a)
  a = lax_sort.sort(a)
  return lax_ew.convert_element_type(a, _complex_dtype_for(_aval(a).dtype))


# ---- updates -----------------------------------------------------------------------------------
_IMMUTABLE = ("jax.numpy.{} cannot modify arrays in-place, because JAX arrays are immutable. "
              "Pass inplace=False to instead return an updated array.")


def place(arr, mask, vals, *, inplace=True):
  """A copy of `arr` with the positions where `mask` is true set to `vals`, in order (`vals`
  is repeated if too short). `inplace=False` is required: arrays are immutable."""
  data, mask_arr, vals_arr = _arrays("place", arr, mask, vals)
  vals_arr = lax_numpy.ravel(vals_arr)
  if inplace:
    raise ValueError(_IMMUTABLE.format("place"))
  if _aval(data).size != _aval(mask_arr).size:
    raise ValueError("place: arr and mask must be the same size")
  if not _aval(vals_arr).size:
    raise ValueError("Cannot place values from an empty array")
  if not _aval(data).size:
    return data
  n = _aval(mask_arr).size
  indices = where(lax_numpy.ravel(mask_arr), size=n, fill_value=n)[0]
  vals_arr = _tile_to_size(vals_arr, _aval(indices).shape[0])
  flat = lax_numpy.ravel(data).at[indices].set(vals_arr, mode="drop")
  return flat.reshape(_aval(data).shape)


def put(a, ind, v, mode=None, *, inplace=True):
  """A copy of `a` with the flat positions `ind` set to the values `v` (repeated if short).

  `mode`: None drops out-of-range indices, 'clip' clips them, 'wrap' wraps them around.
  `inplace=False` is required: arrays are immutable.
  """
  if inplace:
    raise ValueError(_IMMUTABLE.format("put"))
  arr, ind_arr, _ = _arrays("put", a, ind, v, scalars=True)
  ind_arr = lax_numpy.ravel(ind_arr)
  v_arr = lax_numpy.ravel(v)
  size = _aval(arr).size
  if not size or not _aval(ind_arr).size or not _aval(v_arr).size:
    return arr
  v_arr = _tile_to_size(v_arr, _aval(ind_arr).shape[0])
  if mode is None:
    scatter_mode = "drop"
  elif mode == "clip":
    ind_arr = lax_numpy.clip(ind_arr, 0, size - 1)
    scatter_mode = "promise_in_bounds"
  elif mode == "wrap":
    ind_arr = ind_arr % size
    scatter_mode = "promise_in_bounds"
  elif mode == "raise":
    raise NotImplementedError("The 'raise' mode to jnp.put is not supported.")
  else:
    raise ValueError(f"mode should be one of 'wrap' or 'clip'; got mode={mode!r}")
  return arr.at[unravel_index(ind_arr, _aval(arr).shape)].set(v_arr, mode=scatter_mode)


# ---- index conversion --------------------------------------------------------------------------
def ravel_multi_index(multi_index, dims, mode="raise", order="C", *, dtype=None):
  """Flat indices into an array of shape `dims` from a tuple of per-axis index arrays.

  Args:
    multi_index: one integer array per axis (broadcast together).
    dims: the static shape.
    mode: 'raise' (needs concrete indices), 'wrap', 'clip' or 'ignore' for out-of-range ones.
    order: 'C' (row-major) or 'F' (column-major).
    dtype: integer dtype of the result (default: the indices' type, at least the default int).
  """
  if len(multi_index) != len(dims):
    raise AssertionError(f"len(multi_index)={len(multi_index)} != len(dims)={len(dims)}")
  dims = tuple(_concrete_index(d, "in `dims` argument of ravel_multi_index().") for d in dims)
  indices = list(_ensure_arraylike_tuple("ravel_multi_index", multi_index))
  if dtype is None:
    dtype = dtypes.result_type(int, *indices)
  else:
    dtype = dtypes.check_user_dtype(dtype, "ravel_multi_index")
  if not dtypes.issubdtype(dtype, np.integer):
    raise ValueError(f"dtype={dtype} is not an integer type.")
  if math.prod(dims) - 1 > np.iinfo(dtype).max:
    raise ValueError(f"jnp.ravel_multi_index: dtype={dtype} not large enough to hold flattened "
                     f"index for dims={dims}. Use the dtype argument to pass a suitable dtype "
                     "(e.g. dtype=np.min_scalar_type(prod(dims))).")
  for index in indices:
    if mode == "raise":
      _concrete(index, "The error occurred because ravel_multi_index was jit-compiled with "
                       "mode='raise'. Use mode='wrap' or mode='clip' instead.")
    if not dtypes.issubdtype(_aval(index).dtype, np.integer):
      raise TypeError("only int indices permitted")
  if mode == "raise":
    if builtins.any(reductions.any((i < 0) | (i >= d)) for i, d in zip(indices, dims)):
      raise ValueError("invalid entry in coordinates array")
  elif mode == "clip":
    indices = [lax_numpy.clip(i, 0, d - 1) for i, d in zip(indices, dims)]
  elif mode == "wrap":
    indices = [i % d for i, d in zip(indices, dims)]
  elif mode != "ignore":
    raise ValueError(f"invalid mode={mode!r}. Expected 'raise', 'wrap', 'clip', or 'ignore'.")
  if order == "F":
    strides = np.cumprod((1,) + dims[:-1])
  elif order == "C":
    strides = np.cumprod((1,) + dims[1:][::-1])[::-1]
  else:
    raise ValueError(f"invalid order={order!r}. Expected 'C' or 'F'")
  result = creation.array(0, dtype=dtype)
  for i, s in zip(indices, strides):
    result = result + i.astype(dtype) * int(s)
  return result


def unravel_index(indices, shape):
  """Per-axis indices into an array of `shape` from flat indices (out-of-range ones clip to
  the first or last element)."""
  idx = _arrays("unravel_index", indices)
  try:
    shape = list(shape)
  except TypeError:
    shape = [shape]
  if any(np.ndim(s) != 0 for s in shape):
    raise ValueError("unravel_index: shape should be a scalar or 1D sequence.")
  out = [0] * len(shape)
  for i in reversed(range(len(shape))):
    idx, out[i] = ufuncs.divmod(idx, shape[i])
  too_high = idx > 0
  if dtypes.issubdtype(_aval(idx).dtype, np.unsignedinteger):
    too_low = creation.asarray(False)
  else:
    too_low = idx < -1
  return tuple(where(too_high, s - 1, where(too_low, 0, i)) for s, i in zip(shape, out))
