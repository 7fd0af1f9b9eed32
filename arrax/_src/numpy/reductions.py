"""Reductions: sum, prod, max, min, all, any, mean, var, std, argmax, argmin, cumsum, cumprod."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from arrax._src import core, dtypes
from arrax._src.lax import lax, reductions as lax_red, shape_ops
from arrax._src.numpy import util
from arrax._src.numpy.util import check_arraylike, inline_jit


def _aval(x):
  return core.get_aval(x)


def _axes(axis, nd):
  if axis is None:
    return tuple(range(nd))
  if isinstance(axis, (tuple, list)):
    axes = tuple(util.canonicalize_axis(a, nd) for a in axis)
    if len(set(axes)) != len(axes):
      raise ValueError(f"duplicate value in 'axis': {axis}")
    return axes
  return (util.canonicalize_axis(axis, nd),)


def _keepdims_shape(shape, axes):
  return tuple(1 if i in axes else d for i, d in enumerate(shape))


def _upcast_int(dt, promote_integers=True):
  if dt == np.bool_:
    return dtypes.default_int_dtype()
  if promote_integers and dt.kind in "iu":
    default = dtypes.default_int_dtype()
    if dt.itemsize < default.itemsize:
      return dtypes.canonicalize_dtype(np.dtype(f"{dt.kind}int{default.itemsize * 8}")
                                       if dt.kind == "i" else
                                       np.dtype(f"uint{default.itemsize * 8}"))
  return dt


def _reduction(a, name, lax_reduce, identity, axis, dtype, keepdims, initial, where, *,
               upcast_f16=False, promote_integers=True, bool_op=None, init_op=None,
               has_identity=True):
  check_arraylike(name, a)
  a = lax.asarray_operand(a)
  if isinstance(a, core.Literal) or not hasattr(a, "aval") and not isinstance(a, core.Tracer):
    from arrax._src.numpy.creation import asarray
    a = asarray(a)
  aval = _aval(a)
  nd = len(aval.shape)
  axes = _axes(axis, nd)
  if dtype is not None:
    result_dtype = dtypes.check_user_dtype(dtype, name)
  elif promote_integers is not None:
    result_dtype = _upcast_int(aval.dtype, promote_integers) if name in ("sum", "prod") else \
        aval.dtype
  else:
    result_dtype = aval.dtype
  if bool_op is not None and aval.dtype == np.bool_ and result_dtype == np.bool_:
    lax_reduce = bool_op
  compute_dtype = result_dtype
  if upcast_f16 and compute_dtype in (dtypes.float16, dtypes.bfloat16):
    compute_dtype = dtypes.float32
  if not has_identity and where is None and initial is None:
    for i in axes:
      if aval.shape[i] == 0:
        raise ValueError(f"zero-size array to reduction operation {name} which has no identity")
  a = lax._convert_element_type(a, compute_dtype, aval.weak_type and dtype is None)
  if where is not None:
    from arrax._src.numpy.lax_numpy import broadcast_to, _where
    ident = identity(compute_dtype) if callable(identity) else identity
    if ident is None:
      if initial is None:
        raise ValueError(f"reduction operation {name} does not have an identity, so to use a "
                         "where mask one has to specify 'initial'")
      ident = initial
    a = _where(broadcast_to(where, aval.shape), a,
               lax._convert_element_type(ident, compute_dtype, False))
  out = lax_reduce(a, axes) if axes else a
  if initial is not None:
    out = init_op(out, lax._convert_element_type(initial, compute_dtype, False))
  if keepdims:
    out = shape_ops.reshape(out, _keepdims_shape(aval.shape, axes))
  return lax._convert_element_type(out, result_dtype, _aval(out).weak_type)


def _identity_min(dt):
  dt = np.dtype(dt)
  if dt == np.bool_:
    return False
  if dt.kind in "iu":
    return dtypes.iinfo(dt).min
  return -np.inf


def _identity_max(dt):
  dt = np.dtype(dt)
  if dt == np.bool_:
    return True
  if dt.kind in "iu":
    return dtypes.iinfo(dt).max
  return np.inf


@inline_jit(static_argnames=("axis", "dtype", "keepdims", "promote_integers"))
def sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,  # noqa: A001
        promote_integers=True):
  """Sum of elements over the given axes."""
  _no_out(out, "sum")
  return _reduction(a, "sum", lax_red.reduce_sum, 0, axis, dtype, keepdims, initial, where,
                    upcast_f16=True, promote_integers=promote_integers,
                    bool_op=lax_red.reduce_or, init_op=lax.add)


@inline_jit(static_argnames=("axis", "dtype", "keepdims", "promote_integers"))
def prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None,
         promote_integers=True):
  """Product of elements over the given axes."""
  _no_out(out, "prod")
  return _reduction(a, "prod", lax_red.reduce_prod, 1, axis, dtype, keepdims, initial, where,
                    upcast_f16=True, promote_integers=promote_integers,
                    bool_op=lax_red.reduce_and, init_op=lax.mul)


@inline_jit(static_argnames=("axis", "keepdims"))
def max(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
  """Maximum over the given axes."""
  _no_out(out, "max")
  return _reduction(a, "max", lax_red.reduce_max, _identity_min, axis, None, keepdims,
                    initial, where, promote_integers=None, init_op=lax.max,
                    has_identity=False, bool_op=lax_red.reduce_or)


@inline_jit(static_argnames=("axis", "keepdims"))
def min(a, axis=None, out=None, keepdims=False, initial=None, where=None):  # noqa: A001
  """Minimum over the given axes."""
  _no_out(out, "min")
  return _reduction(a, "min", lax_red.reduce_min, _identity_max, axis, None, keepdims,
                    initial, where, promote_integers=None, init_op=lax.min,
                    has_identity=False, bool_op=lax_red.reduce_and)


amax, amin = max, min


@inline_jit(static_argnames=("axis", "keepdims"))
def all(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
  """True where all elements along the axes are nonzero."""
  _no_out(out, "all")
  a = lax._convert_element_type(_as_array(a), np.bool_, False)
  return _reduction(a, "all", lax_red.reduce_and, True, axis, None, keepdims, None, where,
                    promote_integers=None)


@inline_jit(static_argnames=("axis", "keepdims"))
def any(a, axis=None, out=None, keepdims=False, *, where=None):  # noqa: A001
  """True where any element along the axes is nonzero."""
  _no_out(out, "any")
  a = lax._convert_element_type(_as_array(a), np.bool_, False)
  return _reduction(a, "any", lax_red.reduce_or, False, axis, None, keepdims, None, where,
                    promote_integers=None)


def _as_array(a):
  check_arraylike("reduction", a)
  if isinstance(a, (list, tuple)):
    from arrax._src.numpy.creation import asarray
    return asarray(a)
  return a


def _no_out(out, name):
  if out is not None:
    raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")


def _count(shape, axes, where, dtype):
  if where is None:
    n = 1
    for i in axes:
      n *= shape[i]
    return lax._convert_element_type(n, dtype, False) if True else n
  from arrax._src.numpy.lax_numpy import broadcast_to
  w = lax._convert_element_type(broadcast_to(where, shape), dtype, False)
  return lax_red.reduce_sum(w, axes) if axes else w


@inline_jit(static_argnames=("axis", "dtype", "keepdims"))
def mean(a, axis=None, dtype=None, out=None, keepdims=False, *, where=None):
  """Arithmetic mean over the given axes."""
  _no_out(out, "mean")
  a = _as_array(a)
  aval = _aval(lax.asarray_operand(a))
  nd = len(aval.shape)
  axes = _axes(axis, nd)
  if dtype is None:
    result_dtype = dtypes.to_inexact_dtype(aval.dtype if aval.dtype != np.bool_ else
                                           dtypes.default_float_dtype())
  else:
    result_dtype = dtypes.check_user_dtype(dtype, "mean")
  compute = dtypes.float32 if result_dtype in (dtypes.float16, dtypes.bfloat16) else result_dtype
  total = sum(a, axis, dtype=compute, keepdims=keepdims, where=where)
  count = _count(aval.shape, axes, where, compute)
  if keepdims and where is not None:
    count = shape_ops.reshape(count, _keepdims_shape(aval.shape, axes))
  out = lax.div(total, count)
  return lax._convert_element_type(out, result_dtype, aval.weak_type and dtype is None)


@inline_jit(static_argnames=("axis", "dtype", "keepdims", "ddof", "correction"))
def var(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
  """Variance over the given axes (divided by N - ddof)."""
  _no_out(out, "var")
  if correction is not None:
    ddof = correction
  a = _as_array(a)
  aval = _aval(lax.asarray_operand(a))
  axes = _axes(axis, len(aval.shape))
  if dtype is None:
    result_dtype = dtypes.to_inexact_dtype(aval.dtype if aval.dtype != np.bool_ else
                                           dtypes.default_float_dtype())
  else:
    result_dtype = dtypes.check_user_dtype(dtype, "var")
  compute = dtypes.float32 if result_dtype in (dtypes.float16, dtypes.bfloat16) else (
      dtypes.to_inexact_dtype(aval.dtype) if aval.dtype.kind != "c" else aval.dtype)
  a = lax._convert_element_type(a, compute, False)
  a_mean = mean(a, axis, keepdims=True, where=where)
  centered = lax.sub(a, a_mean)
  if centered is not None and _aval(centered).dtype.kind == "c":
    sq = lax.real(lax.mul(centered, lax.conj(centered)))
  else:
    sq = lax.mul(centered, centered)
  real_dt = _aval(sq).dtype
  n = _count(aval.shape, axes, where, real_dt)
  if keepdims and where is not None:
    n = shape_ops.reshape(n, _keepdims_shape(aval.shape, axes))
  normalizer = lax.sub(n, lax._convert_element_type(ddof, real_dt, False))
  out = lax.div(sum(sq, axis, keepdims=keepdims, where=where), normalizer)
  if result_dtype.kind != "c":
    return lax._convert_element_type(out, result_dtype, False)
  return out


@inline_jit(static_argnames=("axis", "dtype", "keepdims", "ddof", "correction"))
def std(a, axis=None, dtype=None, out=None, ddof=0, keepdims=False, *, where=None,
        correction=None):
  """Standard deviation over the given axes."""
  _no_out(out, "std")
  return lax.sqrt(var(a, axis, dtype, None, ddof, keepdims, where=where, correction=correction))


def _arg_reduce(name, lax_fn, a, axis, keepdims):
  check_arraylike(name, a)
  a = _as_array(a)
  a = lax.asarray_operand(a)
  aval = _aval(a)
  if axis is None:
    from arrax._src.numpy.lax_numpy import ravel
    if aval.size == 0:
      raise ValueError(f"attempt to get {name} of an empty sequence")
    out = lax_fn(ravel(a), 0, dtypes.default_int_dtype())
    if keepdims:
      out = shape_ops.reshape(out, (1,) * len(aval.shape))
    return out
  ax = util.canonicalize_axis(axis, len(aval.shape))
  if aval.shape[ax] == 0:
    raise ValueError(f"attempt to get {name} of an empty sequence")
  out = lax_fn(a, ax, dtypes.default_int_dtype())
  if keepdims:
    out = shape_ops.expand_dims(out, (ax,))
  return out


@inline_jit(static_argnames=("axis", "keepdims"))
def argmax(a, axis=None, out=None, keepdims=None):
  """Index of the maximum (first occurrence; NaN counts as the maximum)."""
  _no_out(out, "argmax")
  return _arg_reduce("argmax", lax_red.argmax, a, axis, keepdims)


@inline_jit(static_argnames=("axis", "keepdims"))
def argmin(a, axis=None, out=None, keepdims=None):
  """Index of the minimum (first occurrence; NaN counts as the minimum)."""
  _no_out(out, "argmin")
  return _arg_reduce("argmin", lax_red.argmin, a, axis, keepdims)


def _cumulative(name, lax_fn, a, axis, dtype):
  check_arraylike(name, a)
  a = lax.asarray_operand(_as_array(a))
  aval = _aval(a)
  if axis is None:
    from arrax._src.numpy.lax_numpy import ravel
    a = ravel(a)
    axis = 0
    aval = _aval(a)
  ax = util.canonicalize_axis(axis, len(aval.shape))
  if dtype is not None:
    dt = dtypes.check_user_dtype(dtype, name)
  else:
    dt = _upcast_int(aval.dtype)
  a = lax._convert_element_type(a, dt, False)
  return lax_fn(a, ax)


@inline_jit(static_argnames=("axis", "dtype"))
def cumsum(a, axis=None, dtype=None, out=None):
  """Cumulative sum along an axis (the flattened array if axis is None)."""
  _no_out(out, "cumsum")
  return _cumulative("cumsum", lax_red.cumsum, a, axis, dtype)


@inline_jit(static_argnames=("axis", "dtype"))
def cumprod(a, axis=None, dtype=None, out=None):
  """Cumulative product along an axis (the flattened array if axis is None)."""
  _no_out(out, "cumprod")
  return _cumulative("cumprod", lax_red.cumprod, a, axis, dtype)


cumulative_sum = cumsum
cumulative_prod = cumprod
del builtins, operator
