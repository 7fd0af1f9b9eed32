"""Array creation: array, asarray, zeros, ones, full, empty, *_like, arange, linspace, eye."""
from __future__ import annotations

import builtins
import operator
import warnings

import numpy as np

from arrax._src import core, dtypes
from arrax._src.array import Array, device_put_value
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit
from arrax._src.lax import elementwise as ew
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax.utils import _out_sharding
from arrax._src.numpy import ufuncs as uf
from arrax._src.numpy import util


def _is_traced_or_array(x):
  return isinstance(x, (Array, core.Tracer))


def _leaves_of_nested(obj):
  if isinstance(obj, (list, tuple)):
    for o in obj:
      yield from _leaves_of_nested(o)
  else:
    yield obj


def _choose_sharding(device, out_sharding):
  """The out_sharding of a creation function as a primitive parameter (None if not given)."""
  if device is not None and out_sharding is not None:
    raise ValueError(f"Only one of `device` or `out_sharding` can be set. Got device={device} "
                     f"and out_sharding={out_sharding}")
  return _out_sharding(out_sharding)


def _resharded(x, sharding):
  """`x` converted to the type sharding `sharding` (as JAX's jnp.array, by the sharding
  parameter of convert_element_type)."""
  if sharding is None:
    return x
  aval = core.get_aval(x)
  return ew.convert_element_type_p.bind(lax.asarray_operand(x), new_dtype=aval.dtype,
                                        weak_type=aval.weak_type, sharding=sharding)


def array(object, dtype=None, *args, copy=True, order="K", ndmin=0, device=None,  # noqa: A002
          out_sharding=None):
  """Create an array from an array, scalar, or (nested) list/tuple, as numpy.array does."""
  if args:   # copy, order, ndmin given positionally: still accepted, with JAX's warning
    if len(args) > 3:
      raise TypeError(f"array() takes at most 5 positional arguments but {len(args) + 2} "
                      "were given")
    given = {"copy": copy, "order": order, "ndmin": ndmin}
    for name, default, _ in zip(("copy", "order", "ndmin"), (True, "K", 0), args):
      if given[name] != default:
        raise TypeError(f"array() got multiple values for argument '{name}'")
    given.update(zip(("copy", "order", "ndmin"), args))
    copy, order, ndmin = given["copy"], given["order"], given["ndmin"]
    warnings.warn("Passing the copy, order, and ndmin arguments to jnp.array positionally is "
                  "deprecated. Use keyword arguments instead.", DeprecationWarning,
                  stacklevel=2)
  sharding = _choose_sharding(device, out_sharding)
  if (not copy and isinstance(object, np.ndarray) and (dtype is None or dtype == object.dtype)
      and ndmin <= object.ndim and device is None):
    sharding = None   # (JAX puts a NumPy array as it is here: out_sharding is not applied)
  if order is not None and order not in ("K", "C", "A"):
    raise NotImplementedError("Only implemented for order='K'")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "array")
  if hasattr(object, "__jax_array__"):
    object = object.__jax_array__()
  if object is None:
    raise ValueError("None is not a valid value for jnp.array")
  if isinstance(object, (list, tuple)):
    leaves = list(_leaves_of_nested(object))
    if any(x is None for x in leaves):
      raise ValueError("None is not a valid value for jnp.array")
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
    if dtype is None:
      # jnp.array returns a copy (a new device buffer); asarray (copy=False) passes it through.
      out = _array_copy(object) if copy else object
    else:
      out = lax._convert_element_type(object, dtype, weak_type=False)
  elif isinstance(object, core.Literal):
    out = device_put_value(object.val, dtype=dtype or object.aval.dtype,
                           weak_type=object.aval.weak_type and dtype is None)
  elif type(object) in dtypes.python_scalar_dtypes:
    out = _python_scalar_array(object, dtype)
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
    if host.dtype not in dtypes.supported_dtypes:
      raise TypeError(f"Value {object!r} with dtype {host.dtype} is not a valid JAX array type. "
                      "Only arrays of numeric types are supported by JAX.")
    out = device_put_value(host, dtype=dtype or dtypes.canonicalize_dtype(host.dtype))
  nd = util.ndim_of(out)
  if ndmin > nd:
    out = shape_ops.expand_dims(out, tuple(range(ndmin - nd)))
  return _resharded(out, sharding)


def _python_scalar_array(x, dtype):
  """A Python scalar on the device: weakly typed by default, else converted as NumPy does."""
  if dtype is None:
    dt, weak = dtypes.dtype_and_weak_type(x)
    if type(x) is int and not dtypes.iinfo(dt).min <= x <= dtypes.iinfo(dt).max:
      raise OverflowError(f"Python int {x} too large to convert to {dt}")
    return device_put_value(x, dtype=dt, weak_type=weak)
  # np.asarray raises for a value the dtype cannot hold (OverflowError for -1 as uint8 or 2**31
  # as int32, TypeError for a complex as float), where JAX does; any in-range value is exact.
  return device_put_value(np.asarray(x, dtype), dtype=dtype, weak_type=False)


def _array_copy(x):
  """A new device buffer holding the value of the Array `x`."""
  aval = core.get_aval(x)
  return ew.convert_element_type_p.bind(x, new_dtype=aval.dtype, weak_type=aval.weak_type,
                                        sharding=None)


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


def asarray(a, dtype=None, order=None, *, copy=None, device=None, out_sharding=None):
  """Convert the input to an arrax Array (no copy of an existing Array)."""
  return array(a, dtype=dtype, copy=bool(copy), order=order, device=device,
               out_sharding=out_sharding)


def _canonical_shape(shape, name):
  if isinstance(shape, (int, np.integer)) or (hasattr(shape, "__index__")
                                              and not isinstance(shape, (tuple, list))):
    shape = (shape,)
  try:
    shape = tuple(operator.index(d) for d in shape)
  except TypeError:
    if any(isinstance(d, core.Tracer) for d in shape):
      raise util.shape_tracer_error(shape) from None
    raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                    f"{shape}.") from None
  if any(d < 0 for d in shape):
    # JAX's error comes from the broadcast_in_dim that fills the array.
    raise TypeError(f"broadcast_in_dim shape must have every element be nonnegative, got "
                    f"{shape}.")
  return shape


def _is_scalar(x):
  return type(x) in dtypes.python_scalar_dtypes or util.ndim_of(x) == 0


def _fill_scalar(fill_value, dtype, weak_type):
  """A scalar fill value converted to `dtype`.

  A Python int is converted on the host and wraps as NumPy's astype does, as in JAX, so it need
  not fit the default integer type: full((2,), 2**40, int32) is zeros.
  """
  if type(fill_value) is int and dtype != dtypes.float0:
    return lax.scalar_literal(np.asarray(fill_value).astype(dtype), dtype, weak_type)
  return lax._convert_element_type(lax.asarray_operand(fill_value), dtype, weak_type)


def full(shape, fill_value, dtype=None, *, device=None, out_sharding=None):
  """An array of `shape` filled with `fill_value`."""
  sharding = _choose_sharding(device, out_sharding)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "full")
  util.check_arraylike("full", fill_value)
  if _is_scalar(fill_value):
    shape = _canonical_shape(shape, "full")
    if dtype is None:
      dt, weak = dtypes.dtype_and_weak_type(fill_value)
    else:
      dt, weak = dtype, False
    return _broadcast_scalar(_fill_scalar(fill_value, dt, weak), shape, sharding)
  return _resharded(util._broadcast_to(asarray(fill_value, dtype=dtype), shape), sharding)


def zeros(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of zeros (float32 by default)."""
  dt = dtypes.check_user_dtype(dtype if dtype is not None else float, "zeros")
  return full(shape, 0, dt, device=device, out_sharding=out_sharding)


def ones(shape, dtype=None, *, device=None, out_sharding=None):
  """An array of ones (float32 by default)."""
  dt = dtypes.check_user_dtype(dtype if dtype is not None else float, "ones")
  return full(shape, 1, dt, device=device, out_sharding=out_sharding)


def empty(shape, dtype=None, *, device=None, out_sharding=None):
  """Like zeros (XLA arrays are always initialized)."""
  return zeros(shape, dtype, device=device, out_sharding=out_sharding)


def _like_prototype(name, a):
  if not (hasattr(a, "dtype") and hasattr(a, "shape")):   # duck-typed prototypes pass
    m = getattr(a, "__jax_array__", None)
    if m is not None:
      a = m()
    util.check_arraylike(name, a)
  return a


def _like(name, a, fill_value, dtype, shape, sharding=None):
  """`fill_value` (a scalar) in an array shaped and typed like `a` unless told otherwise."""
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, name)
  if shape is not None:
    shape = _canonical_shape(shape, name)
  aval = core.get_aval(a)
  if type(aval) is core.AbstractRef:   # (a ref as prototype: its value's type)
    aval = aval.inner_aval
  dt = aval.dtype if dtype is None else dtype
  weak = aval.weak_type if dtype is None else False
  shp = aval.shape if shape is None else shape
  if dt == dtypes.float0:   # float0 holds no values: a host array, as JAX gives
    return np.zeros(shp, dtypes.float0)
  out = _broadcast_scalar(_fill_scalar(fill_value, dt, weak), shp, sharding)
  if aval.vma and core.vma_state.axes is not None:   # (varies where `a` does, as JAX's)
    out = core.vma_hooks["cast"](out, aval.vma)
  return out


def _broadcast_scalar(x, shape, sharding=None):
  """The scalar `x` broadcast to `shape`; for shape () no equation, as in JAX (a literal)."""
  if shape:
    return shape_ops.broadcast_in_dim(x, shape, (), out_sharding=sharding)
  if isinstance(x, core.Literal):
    return device_put_value(x.val, dtype=x.aval.dtype, weak_type=x.aval.weak_type)
  return x


def full_like(a, fill_value, dtype=None, shape=None, *, device=None, out_sharding=None):
  """An array like `a` (shape and dtype) filled with `fill_value`."""
  sharding = _choose_sharding(device, out_sharding)
  if hasattr(a, "dtype") and hasattr(a, "shape"):
    util.check_arraylike("full_like", 0, fill_value)
  else:
    util.check_arraylike("full_like", a, fill_value)
    m = getattr(a, "__jax_array__", None)
    if m is not None:
      a = m()
  if _is_scalar(fill_value):
    return _like("full_like", a, fill_value, dtype, shape, sharding)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "full_like")
  shp = core.get_aval(a).shape if shape is None else _canonical_shape(shape, "full_like")
  dt = dtypes.result_type(a) if dtype is None else dtype
  return _resharded(util._broadcast_to(asarray(fill_value, dtype=dt), shp), sharding)


def zeros_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """Zeros shaped and typed like `a`."""
  return _like("zeros_like", _like_prototype("zeros_like", a), 0, dtype, shape,
               _choose_sharding(device, out_sharding))


def ones_like(a, dtype=None, shape=None, *, device=None, out_sharding=None):
  """Ones shaped and typed like `a`."""
  return _like("ones_like", _like_prototype("ones_like", a), 1, dtype, shape,
               _choose_sharding(device, out_sharding))


def empty_like(prototype, dtype=None, shape=None, *, device=None):
  """Like zeros_like (XLA arrays are always initialized)."""
  return _like("ones_like", _like_prototype("ones_like", prototype), 0, dtype, shape)


def _arange_concrete(v):
  """A concrete host value for an arange argument (arrax Arrays are read back)."""
  if isinstance(v, Array):
    return np.asarray(v)[()] if v.ndim == 0 else np.asarray(v)
  return v


def arange(start, stop=None, step=None, dtype=None, *, device=None, out_sharding=None):
  """Evenly spaced values in [start, stop), as numpy.arange (computed as JAX does, on iota)."""
  sharding = _choose_sharding(device, out_sharding)
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "arange")
  for i, v in enumerate((start, stop, step)):
    if v is not None and not util.is_arraylike(v):
      raise TypeError(f"arange requires ndarray, scalar, or None arguments, got {type(v)} at "
                      f"position {i}.")
  start_name = "stop" if stop is None and step is None else "start"
  for name, v in ((start_name, start), ("stop", stop), ("step", step)):
    if isinstance(v, core.Tracer):
      raise ConcretizationTypeError(v, f"It arose in the jnp.arange argument '{name}'\n")
  for name, v in ((start_name, start), ("stop", stop), ("step", step)):
    if v is not None and np.ndim(_arange_concrete(v)) != 0:
      raise ValueError(f"jax.numpy.arange: arguments must be scalars; got {name}={v}")
  if dtype is None:
    dtype = dtypes.result_type(start, *(x for x in (stop, step) if x is not None))
  dtype = np.dtype(dtype)
  if builtins.any(v is not None and np.iscomplexobj(_arange_concrete(v))
                  for v in (start, stop, step)):
    raise ValueError("Passing complex start/stop/step to jnp.arange is no longer supported "
                     "starting in JAX v0.10.0.")
  if stop is None:
    start, stop = 0, start
  c_start, c_stop = _arange_concrete(start), _arange_concrete(stop)
  if step is not None:
    working = (dtypes.float32 if dtypes.issubdtype(dtype, np.floating)
               and dtypes.finfo(dtype).bits < 32 else dtype)
    size = builtins.max(0, int(np.ceil((c_stop - c_start) / _arange_concrete(step))))
    out = lax.add(lax.convert_element_type(start, working),
                  lax.mul(lax.convert_element_type(step, working),
                          shape_ops.broadcasted_iota(working, (size,), 0, out_sharding=sharding)))
    return _committed(lax.convert_element_type(out, dtype))
  if c_start == 0:
    size = builtins.max(0, int(np.ceil(c_stop)))
    return _committed(shape_ops.broadcasted_iota(dtype, (size,), 0, out_sharding=sharding))
  size = builtins.max(0, int(np.ceil(c_stop - c_start)))
  return _committed(lax.add(lax.convert_element_type(start, dtype),
                            shape_ops.broadcasted_iota(dtype, (size,), 0, out_sharding=sharding)))


def _committed(x):
  """Literal constants (e.g. a 0-element result) become arrays."""
  return asarray(x) if isinstance(x, core.Literal) else x


def linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
             device=None):
  """`num` evenly spaced values over [start, stop]."""
  util.check_arraylike("linspace", start, stop)
  num = util.static_int(num, "num argument of jnp.linspace")
  axis = util.static_int(axis, "axis argument of jnp.linspace")
  return _linspace(start, stop, num, endpoint, retstep, dtype, axis, device=device)


@jit(static_argnames=("num", "endpoint", "retstep", "dtype", "axis", "device"))
def _linspace(start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, *,
              device=None):
  if num < 0:
    raise ValueError(f"Number of samples, {num}, must be non-negative.")
  start, stop = asarray(start), asarray(stop)
  if dtype is None:
    dtype = dtypes.to_inexact_dtype(dtypes.result_type(start, stop))
  else:
    dtype = dtypes.check_user_dtype(dtype, "linspace")
  cdt = dtypes.to_inexact_dtype(dtype)
  start = lax._convert_element_type(start, cdt)
  stop = lax._convert_element_type(stop, cdt)
  bshape = list(np.broadcast_shapes(util.shape_of(start), util.shape_of(stop)))
  bstart = util._broadcast_to(start, bshape)
  bstop = util._broadcast_to(stop, bshape)
  axis = len(bshape) + axis + 1 if axis < 0 else axis
  bshape.insert(axis, 1)
  div = (num - 1) if endpoint else num
  if num > 1:
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
  if not isinstance(k, int):
    offset = util.ensure_arraylike("eye", k)
    if not (np.shape(offset) == () and dtypes.issubdtype(util._dtype(offset), np.integer)):
      raise ValueError(f"k must be a scalar integer; got {k}")
  n = util.static_dim(N, (N, M))
  m = n if M is None else util.static_dim(M, (N, M))
  if n < 0 or m < 0:
    raise ValueError(f"negative dimensions are not allowed, got {N} and {M}")
  if isinstance(k, int):   # a Python int offset is clipped to the int32 range, as JAX does
    info = np.iinfo(np.int32)
    k = builtins.min(builtins.max(k, int(info.min)), int(info.max))
  offset = util.ensure_arraylike("eye", k)
  odt = core.get_aval(offset).dtype
  if not (np.shape(offset) == () and np.issubdtype(odt, np.integer)):
    raise ValueError(f"k must be a scalar integer; got {k}")
  # The iotas take the offset's dtype (the default int for a Python int, int64 under x64).
  i = shape_ops.broadcasted_iota(odt, (n, m), 0)
  j = shape_ops.broadcasted_iota(odt, (n, m), 1)
  return lax._convert_element_type(uf.equal(uf.add(i, offset), j), dt)


def identity(n, dtype=None):
  """The n x n identity matrix."""
  return eye(n, dtype=dtype)
