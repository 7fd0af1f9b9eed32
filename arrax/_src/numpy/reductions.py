"""Reductions: sum, prod, max, min, all, any, mean, var, std, argmax, argmin, cumsum, cumprod."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from arrax._src import core, dtypes
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax, parallel, reductions as lax_red, shape_ops
from arrax._src.numpy import lax_numpy, util
from arrax._src.numpy.util import _where, inline_jit
from arrax._src.numpy.util import _aval


def _operand(name, a):
  """An arrax operand for `a` (Python scalars stay weakly typed); lists are rejected."""
  return util.ensure_arraylike(name, a)


def _static_axes(axis):
  """Axis argument made static: None, an int or a tuple of ints (tracers are rejected)."""
  def force(x):
    if x is None:
      return None
    try:
      return operator.index(x)
    except TypeError:
      # a string names a mapped axis: the reduction runs psum/pmax/pmin over it
      return tuple(i if isinstance(i, str) else operator.index(i) for i in x)
  if isinstance(axis, core.Tracer) or (isinstance(axis, (tuple, list)) and
                                       builtins.any(isinstance(i, core.Tracer) for i in axis)):
    tracer = axis if isinstance(axis, core.Tracer) else next(
        i for i in axis if isinstance(i, core.Tracer))
    raise ConcretizationTypeError(tracer, "The axis argument must be known statically.\n")
  return force(axis)


def _int_or_name(x):
  """An axis as an int, or as it is when it is not an integer (a mapped axis's name)."""
  try:
    return operator.index(x)
  except TypeError:
    return x


def _reduction_dims(nd, axis):
  """The canonical axes of a reduction: ints in [0, nd), or names of mapped axes."""
  if axis is None:
    return tuple(range(nd))
  axes = tuple(axis) if isinstance(axis, (tuple, list, np.ndarray)) else (axis,)
  canon = tuple(util.canonicalize_axis(i, nd) if isinstance(i, int) else i
                for i in map(_int_or_name, axes))
  if len(set(canon)) != len(canon):
    raise ValueError(f"duplicate value in 'axis': {axis}")
  return canon


def _positional(dims):
  return tuple(d for d in dims if isinstance(d, int))


def _promote_integer_dtype(dt):
  """Small integer dtypes widen to the default integer of their signedness; bool -> int."""
  dt = np.dtype(dt)
  if dt == np.bool_:
    return dtypes.default_int_dtype()
  if dt.kind == "u":
    default = dtypes.canonicalize_dtype(dtypes.uint64)
    return default if dt.itemsize < default.itemsize else dt
  if dt.kind == "i":
    default = dtypes.default_int_dtype()
    return default if dt.itemsize < default.itemsize else dt
  return dt


def _upcast_f16(dt):
  dt = np.dtype(dt)
  return dtypes.float32 if dt in (dtypes.float16, dtypes.bfloat16) else dt


def _is_inexact(dt):
  return dtypes.issubdtype(dt, np.inexact)


def _check_where(name, where):
  if where is None:
    return None
  where = util.ensure_arraylike(name, where)
  if _aval(where).dtype != np.bool_:
    raise ValueError(f"jnp.{name}: where must be None or a boolean array; "
                     f"got where.dtype={_aval(where).dtype}.")
  return where


def _init_value(dt, value):
  """The reduction's identity as a constant of dtype `dt` (infinities clipped for integers)."""
  dt = np.dtype(dt)
  if dt == np.bool_:
    return lax.scalar_literal(value > 0, dt)
  if dt.kind in "iu" and isinstance(value, float) and np.isinf(value):
    info = dtypes.iinfo(dt)
    value = info.min if value < 0 else info.max
  return lax.scalar_literal(value, dt)


def _cast_to_bool(a):
  if _aval(a).dtype.kind == "c":
    a = lax.real(a)
  return lax.convert_element_type(a, np.bool_)


def _cast_to_numeric(a):
  return util.promote_dtypes_numeric(a)[0]


def _reduction(a, name, reduce_fn, op, init_val, *, bool_reduce=None, bool_op=None,
               has_identity=True, preproc=None, upcast_f16_for_computation=False, axis=None,
               dtype=None, keepdims=False, initial=None, where=None, promote_integers=False,
               parallel_reduce=None):
  a = _operand(name, a)
  where = _check_where(name, where)
  if initial is None and not has_identity and where is not None:
    raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                     "where mask one has to specify 'initial'")
  a = preproc(a) if preproc else a
  shape = _aval(a).shape
  dims = _reduction_dims(len(shape), axis)
  pos_dims = _positional(dims)
  if initial is None and not has_identity:
    if not builtins.all(shape[d] >= 1 for d in pos_dims):
      raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
  if dtype is None:
    result_dtype = _aval(a).dtype
    if promote_integers:
      result_dtype = _promote_integer_dtype(result_dtype)
  else:
    result_dtype = dtypes.check_user_dtype(dtype, name)
  if upcast_f16_for_computation and _is_inexact(result_dtype):
    computation_dtype = _upcast_f16(result_dtype)
  else:
    computation_dtype = result_dtype
  a = lax.convert_element_type(a, computation_dtype)
  if computation_dtype == np.bool_:
    reduce_fn = bool_reduce or reduce_fn
    op = bool_op or op
  init = _init_value(computation_dtype, init_val)
  if where is not None:
    a = _where(where, a, init)
  if len(pos_dims) != len(dims):
    if parallel_reduce is None:
      raise NotImplementedError(f"Named reductions not implemented for jnp.{name}()")
    result = parallel_reduce(a, dims)
  else:
    result = reduce_fn(a, dims)
  if initial is not None:
    initial_arr = lax.convert_element_type(initial, computation_dtype)
    if _aval(initial_arr).shape != ():
      raise ValueError("initial value must be a scalar. "
                       f"Got array of shape {_aval(initial_arr).shape}")
    result = op(initial_arr, result)
  if keepdims:
    result = shape_ops.expand_dims(result, pos_dims)
  return lax.convert_element_type(result, result_dtype)


def _no_out(out, name):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


@inline_jit(static_argnames=("axis", "dtype", "keepdims", "promote_integers"))
def _reduce_sum(a, axis=None, dtype=None, keepdims=False, initial=None, where=None,
                promote_integers=True):
  return _reduction(a, "sum", lax_red.reduce_sum, lax.add, 0, preproc=_cast_to_numeric,
                    bool_reduce=lax_red.reduce_or, bool_op=lax.bitwise_or,
                    upcast_f16_for_computation=dtype is None, axis=axis, dtype=dtype,
                    keepdims=keepdims, initial=initial, where=where,
                    promote_integers=promote_integers, parallel_reduce=parallel.psum)


def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,  # noqa: A001
        promote_integers=True):
  """Sum of elements over the given axes."""
  _no_out(out, "sum")
  return _reduce_sum(a, axis=_static_axes(axis), dtype=dtype, keepdims=keepdims,
                     initial=initial, where=where, promote_integers=promote_integers)


@inline_jit(static_argnames=("axis", "dtype", "keepdims", "promote_integers"))
def _reduce_prod(a, axis=None, dtype=None, keepdims=False, initial=None, where=None,
                 promote_integers=True):
  return _reduction(a, "prod", lax_red.reduce_prod, lax.mul, 1, preproc=_cast_to_numeric,
                    bool_reduce=lax_red.reduce_and, bool_op=lax.bitwise_and,
                    upcast_f16_for_computation=dtype is None, axis=axis, dtype=dtype,
                    keepdims=keepdims, initial=initial, where=where,
                    promote_integers=promote_integers)


def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
  """Product of elements over the given axes."""
  _no_out(out, "prod")
  return _reduce_prod(a, axis=_static_axes(axis), dtype=dtype, keepdims=keepdims,
                      initial=initial, where=where, promote_integers=promote_integers)


@inline_jit(static_argnames=("axis", "keepdims"))
def _reduce_max(a, axis=None, keepdims=False, initial=None, where=None):
  return _reduction(a, "max", lax_red.reduce_max, lax.max, -np.inf, has_identity=False,
                    axis=axis, keepdims=keepdims, initial=initial, where=where,
                    parallel_reduce=parallel.pmax)


def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
  """Maximum over the given axes."""
  _no_out(out, "max")
  return _reduce_max(a, axis=_static_axes(axis), keepdims=keepdims, initial=initial,
                     where=where)


@inline_jit(static_argnames=("axis", "keepdims"))
def _reduce_min(a, axis=None, keepdims=False, initial=None, where=None):
  return _reduction(a, "min", lax_red.reduce_min, lax.min, np.inf, has_identity=False,
                    axis=axis, keepdims=keepdims, initial=initial, where=where,
                    parallel_reduce=parallel.pmin)


def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
  """Minimum over the given axes."""
  _no_out(out, "min")
  return _reduce_min(a, axis=_static_axes(axis), keepdims=keepdims, initial=initial,
                     where=where)


amax, amin = max, min


@inline_jit(static_argnames=("axis", "keepdims"))
def _reduce_all(a, axis=None, keepdims=False, where=None):
  return _reduction(a, "all", lax_red.reduce_and, lax.bitwise_and, True, preproc=_cast_to_bool,
                    axis=axis, keepdims=keepdims, where=where)


def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
  """True where all elements along the axes are nonzero."""
  _no_out(out, "all")
  return _reduce_all(a, axis=_static_axes(axis), keepdims=keepdims, where=where)


@inline_jit(static_argnames=("axis", "keepdims"))
def _reduce_any(a, axis=None, keepdims=False, where=None):
  return _reduction(a, "any", lax_red.reduce_or, lax.bitwise_or, False, preproc=_cast_to_bool,
                    axis=axis, keepdims=keepdims, where=where)


def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
  """True where any element along the axes is nonzero."""
  _no_out(out, "any")
  return _reduce_any(a, axis=_static_axes(axis), keepdims=keepdims, where=where)


def _axis_size(shape, axis):
  axes = axis if isinstance(axis, (tuple, list)) else (axis,)
  n = 1
  for i in axes:
    # an out-of-range axis raises IndexError here, as in JAX; a name is a mapped axis
    n *= shape[i] if isinstance(i, int) else parallel.axis_size(i)
  return n


def _count(a, axis, keepdims, where, dt):
  shape = _aval(a).shape
  if where is None:
    n = _axis_size(shape, tuple(range(len(shape))) if axis is None else axis)
    return lax.convert_element_type(n, dt)
  return sum(lax_numpy.broadcast_to(where, shape), axis, dtype=dt, keepdims=keepdims)


@inline_jit(static_argnames=("axis", "dtype", "keepdims", "upcast_f16_for_computation"))
def _mean(a, axis=None, dtype=None, keepdims=False, *, upcast_f16_for_computation=True,
          where=None):
  a = _operand("mean", a)
  where = _check_where("mean", where)
  if dtype is None:
    result_dtype = dtypes.to_inexact_dtype(_aval(a).dtype)
  else:
    result_dtype = dtypes.check_user_dtype(dtype, "mean")
  if upcast_f16_for_computation and _is_inexact(result_dtype):
    computation_dtype = _upcast_f16(result_dtype)
  else:
    computation_dtype = result_dtype
  normalizer = _count(a, axis, keepdims, where, computation_dtype)
  total = sum(a, axis, dtype=computation_dtype, keepdims=keepdims, where=where)
  return lax.convert_element_type(lax.div(total, normalizer), result_dtype)


def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
  """Arithmetic mean over the given axes."""
  _no_out(out, "mean")
  return _mean(a, _static_axes(axis), dtype, keepdims, where=where,
               upcast_f16_for_computation=dtype is None)


def _var_promote_types(a_dtype, dtype):
  if dtype is not None:
    if not dtypes.issubdtype(dtype, np.complexfloating) and \
        dtypes.issubdtype(a_dtype, np.complexfloating):
      raise ValueError("jax.numpy.var does not yet support real dtype parameters when "
                       "computing the variance of an array of complex values. The semantics "
                       "of numpy.var seem unclear in this case. Please comment on "
                       "https://github.com/jax-ml/jax/issues/2283 if this behavior is "
                       "important to you.")
    computation_dtype = dtype
  elif not _is_inexact(a_dtype):
    dtype = computation_dtype = dtypes.to_inexact_dtype(a_dtype)
  else:
    dtype = np.dtype(a_dtype)
    if dtype.kind == "c":
      dtype = np.dtype(np.float32) if dtype == np.complex64 else np.dtype(np.float64)
    computation_dtype = a_dtype
  return _upcast_f16(computation_dtype), np.dtype(dtype)


@jit(static_argnames=("axis", "dtype", "keepdims"))
def _var(a, *, axis=None, dtype=None, correction=0, keepdims=False, where=None, a_mean=None):
  where = _check_where("var", where)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "var")
  computation_dtype, dtype = _var_promote_types(_aval(a).dtype, dtype)
  a = lax.convert_element_type(a, computation_dtype)
  if a_mean is None:
    a_mean = mean(a, axis, dtype=computation_dtype, keepdims=True, where=where)
  else:
    a_mean = lax.convert_element_type(_operand("var", a_mean), computation_dtype)
  centered = lax.sub(a, a_mean)
  if computation_dtype.kind == "c":
    centered = lax.real(lax.mul(centered, lax.conj(centered)))
    computation_dtype = _aval(centered).dtype
  else:
    centered = lax.square(centered)
  normalizer = _count(a, axis, keepdims, where, computation_dtype)
  normalizer = lax.sub(normalizer, lax.convert_element_type(correction, computation_dtype))
  result = sum(centered, axis, dtype=computation_dtype, keepdims=keepdims, where=where)
  result = lax.convert_element_type(lax.div(result, normalizer), dtype)
  return _where(lax.gt(normalizer, lax.scalar_literal(0, _aval(normalizer).dtype)), result,
                np.nan)


def _ddof(ddof, correction):
  if correction is None:
    return ddof
  if not isinstance(ddof, int) or ddof != 0:
    raise ValueError("ddof and correction can't be provided simultaneously.")
  return correction


def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
  """Variance over the given axes (divided by N - correction)."""
  _no_out(out, "var")
  correction = _ddof(ddof, correction)
  a = _operand("var", a)
  return _var(a, axis=_static_axes(axis), dtype=dtype, correction=correction,
              keepdims=keepdims, where=where, a_mean=mean)


def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None, mean=None,
        correction=None):
  """Standard deviation over the given axes."""
  _no_out(out, "std")
  correction = _ddof(ddof, correction)
  a = _operand("std", a)
  return _std(a, axis=_static_axes(axis), dtype=dtype, correction=correction,
              keepdims=keepdims, where=where, mean=mean)


@jit(static_argnames=("axis", "dtype", "keepdims"))
def _std(a, *, axis=None, dtype=None, correction=0, keepdims=False, where=None, mean=None):
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "std")
    if not _is_inexact(dtype):
      raise ValueError(f"dtype argument to jnp.std must be inexact; got {dtype}")
  return lax.sqrt(var(a, axis=axis, dtype=dtype, correction=correction, keepdims=keepdims,
                      where=where, mean=mean))


@inline_jit(static_argnames=("name", "axis", "keepdims"))
def _arg_reduce(a, name, axis, keepdims):
  lax_fn = lax_red.argmax if name == "argmax" else lax_red.argmin
  if axis is None:
    dims = tuple(range(len(_aval(a).shape)))
    a = lax_numpy.ravel(a)
    axis = 0
  else:
    dims = (axis,)
  shape = _aval(a).shape
  if shape[axis] == 0:   # IndexError for an out-of-range axis, as in JAX
    raise ValueError(f"attempt to get {name} of an empty sequence")
  result = lax_fn(a, util.canonicalize_axis(axis, len(shape)), dtypes.default_int_dtype())
  if keepdims:
    result = lax_numpy.expand_dims(result, dims)
  return result


def argmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum (first occurrence; NaN counts as the maximum)."""
  a = _operand("argmax", a)
  _no_out(out, "argmax")
  return _arg_reduce(a, "argmax", None if axis is None else operator.index(axis),
                     bool(keepdims))


def argmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum (first occurrence; NaN counts as the minimum)."""
  a = _operand("argmin", a)
  _no_out(out, "argmin")
  return _arg_reduce(a, "argmin", None if axis is None else operator.index(axis),
                     bool(keepdims))


def _cumulative(name, lax_fn, a, axis, dtype, promote_integers=False):
  a = _operand(name, a)
  if axis is None:
    a = shape_ops.reshape(a, (int(np.prod(_aval(a).shape, dtype=np.int64)),))
  if axis is None:
    axis = 0
  nd = len(_aval(a).shape)
  axis = util.canonicalize_axis(axis, nd)
  in_dtype = _aval(a).dtype
  if dtype is None:
    result_dtype = (_promote_integer_dtype(in_dtype)
                    if promote_integers or in_dtype == np.bool_ else in_dtype)
    computation_dtype = result_dtype
  elif np.dtype(dtype) == np.bool_:
    result_dtype = np.dtype(np.bool_)
    if in_dtype != np.bool_:
      a = lax.ne(a, lax.scalar_literal(0, in_dtype, _aval(a).weak_type))
    computation_dtype = _promote_integer_dtype(result_dtype)
  else:
    result_dtype = dtypes.check_user_dtype(dtype, name)
    computation_dtype = result_dtype
  a = lax.convert_element_type(a, computation_dtype)
  return lax.convert_element_type(lax_fn(a, axis), result_dtype)


# Not inlined, as in JAX: a `jit[name=cumsum]` equation in jaxprs, one executable eagerly.
@jit(static_argnames=("axis", "dtype"))
def cumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum along an axis (the flattened array if axis is None)."""
  _no_out(out, "cumsum")
  return _cumulative("cumsum", lax_red.cumsum, a, axis, dtype)


@jit(static_argnames=("axis", "dtype"))
def cumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product along an axis (the flattened array if axis is None)."""
  _no_out(out, "cumprod")
  return _cumulative("cumprod", lax_red.cumprod, a, axis, dtype)


@jit(static_argnames=("axis", "dtype"))
def _cumsum_with_promotion(a, axis=None, dtype=None):
  return _cumulative("cumulative_sum", lax_red.cumsum, a, axis, dtype, promote_integers=True)


def _cumulative_api(name, cumulative, identity, x, axis, dtype, include_initial):
  x = _operand(name, x)
  nd = len(_aval(x).shape)
  what = "sum" if name == "cumulative_sum" else "product"
  if nd == 0:
    raise ValueError(f"The input must be non-scalar to take a cumulative {what}, however a "
                     "scalar value or scalar array was given.")
  if axis is None:
    axis = 0
    if nd > 1:
      raise ValueError(f"The input array has rank {nd}, however axis was not set to an "
                       "explicit value. The axis argument is only optional for "
                       "one-dimensional arrays.")
  axis = util.canonicalize_axis(axis, nd)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, name)
  out = cumulative(x, axis, dtype)
  if include_initial:
    init_shape = list(_aval(x).shape)
    init_shape[axis] = 1
    init = shape_ops.broadcast_in_dim(lax.scalar_literal(identity, _aval(out).dtype),
                                      tuple(init_shape), ())
    out = shape_ops.concatenate([init, out], axis)
  return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial=False):
  """Cumulative sum along an axis (array API; `axis` is required for rank > 1)."""
  return _cumulative_api("cumulative_sum", lambda a, ax, dt: _cumsum_with_promotion(a, ax, dt),
                         0, x, axis, dtype, include_initial)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial=False):
  """Cumulative product along an axis (array API; `axis` is required for rank > 1)."""
  return _cumulative_api(
      "cumulative_prod",
      lambda a, ax, dt: _cumulative("cumulative_prod", lax_red.cumprod, a, ax, dt),
      1, x, axis, dtype, include_initial)
