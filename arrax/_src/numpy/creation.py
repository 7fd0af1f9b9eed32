"""Array creation: array, asarray, zeros, ones, full, empty, *_like, arange, linspace, eye."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from arrax._src import core, dtypes
from arrax._src.array import Array, device_put_value
from arrax._src.lax import lax, shape_ops
from arrax._src.numpy import util


def _is_traced_or_array(x):
  return isinstance(x, (Array, core.Tracer))


def _leaves_of_nested(obj):
  if isinstance(obj, (list, tuple)):
    for o in obj:
      yield from _leaves_of_nested(o)
  else:
    yield obj


def array(object, dtype=None, copy=True, order="K", ndmin=0, *, device=None):  # noqa: A002
  """Create an array from an array, scalar, or (nested) list/tuple, as numpy.array does."""
  if order is not None and order not in ("K", "C", "A"):
    raise NotImplementedError("Only implemented for order='K'")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "array")
  if hasattr(object, "__jax_array__"):
    object = object.__jax_array__()
  if isinstance(object, (list, tuple)):
    leaves = list(_leaves_of_nested(object))
    if any(_is_traced_or_array(x) for x in leaves):
      out = _stack_nested(object, dtype)
    else:
      if dtype is None:
        dtype = (dtypes.result_type(*leaves) if leaves else dtypes.default_float_dtype())
      host = np.array(object, dtype=dtype) if leaves else np.array(object, dtype=dtype)
      out = device_put_value(host, dtype=dtype, weak_type=False)
  elif isinstance(object, core.Tracer):
    out = object if dtype is None else lax._convert_element_type(object, dtype,
                                                                   weak_type=False)
  elif isinstance(object, Array):
    out = object if dtype is None else lax._convert_element_type(object, dtype, weak_type=False)
  elif isinstance(object, core.Literal):
    out = device_put_value(object.val, dtype=dtype or object.aval.dtype,
                           weak_type=object.aval.weak_type and dtype is None)
  elif type(object) in dtypes.python_scalar_dtypes:
    dt, weak = dtypes.dtype_and_weak_type(object)
    out = device_put_value(object, dtype=dtype or dt, weak_type=weak and dtype is None)
  elif isinstance(object, (np.ndarray, np.generic)):
    target = dtype or dtypes.canonicalize_dtype(object.dtype)
    if object.dtype not in dtypes.supported_dtypes:
      raise TypeError(f"JAX only supports number and bool dtypes, got dtype {object.dtype} "
                      "in array")
    out = device_put_value(object, dtype=target)
  else:
    try:
      host = np.asarray(object)
    except Exception:
      raise TypeError(f"Unexpected input type for array: {type(object)}") from None
    if host.dtype == object or host.dtype.kind == "O":
      raise TypeError(f"Unexpected input type for array: {type(object)}")
    out = device_put_value(host, dtype=dtype or dtypes.canonicalize_dtype(host.dtype))
  nd = util.ndim_of(out)
  if ndmin > nd:
    shape = (1,) * (ndmin - nd) + util.shape_of(out)
    out = shape_ops.reshape(out, shape)
  return out


def _stack_nested(obj, dtype):
  if isinstance(obj, (list, tuple)):
    parts = [_stack_nested(o, dtype) for o in obj]
    if not parts:
      return device_put_value(np.zeros((0,), dtype or dtypes.default_float_dtype()))
    parts = util.promote_dtypes(*parts)
    parts = [lax._convert_element_type(p, None, weak_type=False) for p in parts]
    expanded = [shape_ops.broadcast_in_dim(p, (1,) + util.shape_of(p),
                                           tuple(range(1, 1 + util.ndim_of(p))))
                for p in parts]
    return shape_ops.concatenate(expanded, 0)
  x = lax.asarray_operand(obj)
  if dtype is not None:
    x = lax._convert_element_type(x, dtype, weak_type=False)
  return x


def asarray(a, dtype=None, order=None, *, copy=None, device=None):
  """Convert the input to an arrax Array (no copy of an existing Array)."""
  return array(a, dtype=dtype, copy=bool(copy), order=order, device=device)


def _canonical_shape(shape, name):
  if isinstance(shape, (int, np.integer)) or (hasattr(shape, "__index__")
                                              and not isinstance(shape, (tuple, list))):
    shape = (shape,)
  try:
    shape = tuple(operator.index(d) for d in shape)
  except TypeError:
    if any(isinstance(d, core.Tracer) for d in shape):
      raise util_concretization(shape, name) from None
    raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                    f"{shape}.") from None
  if any(d < 0 for d in shape):
    raise ValueError(f"{name}: negative dimensions are not allowed, got {shape}")
  return shape


def util_concretization(shape, name):
  from arrax._src.errors import ConcretizationTypeError
  tracer = next(d for d in shape if isinstance(d, core.Tracer))
  return ConcretizationTypeError(tracer, f"The problem arose with the shape argument of {name}.\n")


def full(shape, fill_value, dtype=None, *, device=None):
  """An array of `shape` filled with `fill_value`."""
  shape = _canonical_shape(shape, "full")
  if util.ndim_of(fill_value) == 0:
    if dtype is None:
      dt, weak = dtypes.dtype_and_weak_type(fill_value)
    else:
      dt, weak = dtypes.check_user_dtype(dtype, "full"), False
    value = lax._convert_element_type(lax.asarray_operand(fill_value), dt, weak)
    return shape_ops.broadcast_in_dim(value, shape, ())
  fill = asarray(fill_value, dtype=dtype)
  from arrax._src.numpy.lax_numpy import broadcast_to
  return broadcast_to(fill, shape)


def zeros(shape, dtype=None, *, device=None):
  """An array of zeros (float32 by default)."""
  dt = dtypes.check_user_dtype(dtype if dtype is not None else float, "zeros")
  return full(shape, 0, dt)


def ones(shape, dtype=None, *, device=None):
  """An array of ones (float32 by default)."""
  dt = dtypes.check_user_dtype(dtype if dtype is not None else float, "ones")
  return full(shape, 1, dt)


def empty(shape, dtype=None, *, device=None):
  """Like zeros (XLA arrays are always initialized)."""
  return zeros(shape, dtype)


def _like_shape_dtype(a, dtype, shape):
  aval = core.get_aval(a) if not isinstance(a, (list, tuple)) else core.get_aval(np.asarray(a))
  dt = aval.dtype if dtype is None else dtypes.check_user_dtype(dtype)
  weak = aval.weak_type if dtype is None else False
  return (aval.shape if shape is None else shape), dt, weak


def full_like(a, fill_value, dtype=None, shape=None, *, device=None):
  """An array like `a` (shape and dtype) filled with `fill_value`."""
  shp, dt, weak = _like_shape_dtype(a, dtype, shape)
  if util.ndim_of(fill_value) == 0:
    value = lax._convert_element_type(lax.asarray_operand(fill_value), dt, weak)
    return shape_ops.broadcast_in_dim(value, _canonical_shape(shp, "full_like"), ())
  return full(shp, asarray(fill_value, dt), dt)


def zeros_like(a, dtype=None, shape=None, *, device=None):
  return full_like(a, 0, dtype, shape)


def ones_like(a, dtype=None, shape=None, *, device=None):
  return full_like(a, 1, dtype, shape)


def empty_like(prototype, dtype=None, shape=None, *, device=None):
  return zeros_like(prototype, dtype, shape)


def arange(start, stop=None, step=None, dtype=None, *, device=None):
  """Evenly spaced values in [start, stop), as numpy.arange."""
  for name, v in (("start", start), ("stop", stop), ("step", step)):
    if isinstance(v, core.Tracer):
      from arrax._src.errors import ConcretizationTypeError
      raise ConcretizationTypeError(
          v, f"It arose in the jnp.arange argument '{name}'. arange's output shape depends "
          "on its arguments, so they must be static (use static_argnums, or jnp.linspace).\n")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "arange")
  args = [a for a in (start, stop, step) if a is not None]
  concrete = [np.asarray(a._value if isinstance(a, Array) else a) for a in args]
  if stop is None and step is None:
    stop_v = concrete[0]
    if dtype is None:
      dtype = dtypes.result_type(*args)
      if dtypes.dtype_and_weak_type(args[0])[0].kind in "iub":
        dtype = dtypes.default_int_dtype() if dtype.kind == "b" else dtype
    if np.ndim(stop_v) != 0:
      raise ValueError("jax.numpy.arange: arguments must be scalars; got "
                       f"stop with shape {np.shape(stop_v)}")
    if np.dtype(dtype).kind in "iu" and np.asarray(stop_v).dtype.kind in "iub":
      n = builtins.max(int(stop_v), 0)
      return shape_ops.iota(dtype, n)
    values = np.arange(stop_v, dtype=None)
  else:
    if dtype is None:
      dtype = dtypes.result_type(*args)
    values = np.arange(*[c[()] for c in concrete])
  return device_put_value(values.astype(dtype), dtype=dtype)


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
  """`num` evenly spaced values over [start, stop]."""
  num = util.static_int(num, "num argument of jnp.linspace")
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  from arrax._src.numpy import lax_numpy as lnp
  start, stop = asarray(start), asarray(stop)
  if dtype is None:
    dtype = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    dtype = dtypes.check_user_dtype(dtype, "linspace")
  cdt = dtypes.to_inexact_dtype(dtype)
  start = lax._convert_element_type(start, cdt)
  stop = lax._convert_element_type(stop, cdt)
  bshape = list(np.broadcast_shapes(util.shape_of(start), util.shape_of(stop)))
  bstart = lnp.broadcast_to(start, bshape)
  bstop = lnp.broadcast_to(stop, bshape)
  axis = len(bshape) + axis + 1 if axis < 0 else axis
  bshape.insert(axis, 1)
  div = (num - 1) if endpoint else num
  if num > 1:
    from arrax._src.numpy import ufuncs as uf
    delta = uf.true_divide(lax._convert_element_type(uf.subtract(stop, start), cdt),
                           asarray(div, dtype=cdt))
    iota_shape = [1] * len(bshape)
    iota_shape[axis] = div
    real_dt = dtypes.finfo(cdt).dtype if cdt.kind == "c" else cdt
    step = uf.true_divide(shape_ops.reshape(shape_ops.iota(real_dt, div), tuple(iota_shape)),
                          asarray(div, real_dt))
    step = lax._convert_element_type(step, cdt)
    out = uf.add(uf.multiply(shape_ops.reshape(bstart, tuple(bshape)), uf.subtract(1, step)),
                 uf.multiply(shape_ops.reshape(bstop, tuple(bshape)), step))
    if endpoint:
      out = shape_ops.concatenate([out, shape_ops.expand_dims(bstop, (axis,))],
                                  util.canonicalize_axis(axis, util.ndim_of(out)))
  elif num == 1:
    delta = asarray(np.nan if endpoint else 0, dtype=cdt) if endpoint else asarray(
        stop, dtype=cdt) - start
    out = shape_ops.reshape(bstart, tuple(bshape))
  else:
    shp = list(np.broadcast_shapes(util.shape_of(start), util.shape_of(stop)))
    shp.insert(axis, 0)
    delta = full((), np.nan, cdt)
    out = empty(shp, dtype)
  if np.dtype(dtype).kind in "iu" and core.get_aval(out).dtype.kind not in "iu":
    out = lax.floor(out)
  result = lax._convert_element_type(out, dtype)
  return (result, delta) if retstep else result


def eye(N, M=None, k=0, dtype=None, *, device=None):
  """A 2-D array with ones on the k-th diagonal."""
  dt = dtypes.check_user_dtype(float if dtype is None else dtype, "eye")
  n = operator.index(N)
  m = n if M is None else operator.index(M)
  if n < 0 or m < 0:
    raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
  i = shape_ops.broadcasted_iota(np.int32, (n, m), 0)
  j = shape_ops.broadcasted_iota(np.int32, (n, m), 1)
  from arrax._src.numpy import ufuncs as uf
  return lax._convert_element_type(uf.equal(uf.add(i, k), j), dt)


def identity(n, dtype=None):
  """The n x n identity matrix."""
  return eye(n, dtype=dtype)
