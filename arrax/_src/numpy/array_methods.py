"""Python operators and NumPy-style methods of Array and of tracers (both get the same set)."""
from __future__ import annotations

import numpy as np

from arrax._src import api, core, dtypes
from arrax._src.array import Array
from arrax._src.lax import elementwise as lax
from arrax._src.lax import shape_ops
from arrax._src.numpy import array_api_metadata, assembly, index_tricks, indexing, lax_numpy as lnp
from arrax._src.numpy import reductions as red, searching, statistics, ufuncs as uf


def _accepted(other):
  return isinstance(other, (Array, core.Tracer, np.ndarray, np.generic, core.Literal)) or (
      type(other) in dtypes.python_scalar_dtypes)


def _binop(fn, swap=False):
  if swap:
    def op(self, other):
      if type(other) is not Array and not _accepted(other):
        return NotImplemented
      return fn(other, self)
  else:
    def op(self, other):
      if type(other) is not Array and not _accepted(other):
        return NotImplemented
      return fn(self, other)
  return op


def _pow(x, y):
  return uf.power(x, y)


def _matmul(a, b):
  return lnp.matmul(a, b)


_OPERATORS = {
    "add": uf.add, "sub": uf.subtract, "mul": uf.multiply, "truediv": uf.true_divide,
    "floordiv": uf.floor_divide, "mod": uf.remainder, "pow": _pow, "matmul": _matmul,
    "and": uf.bitwise_and, "or": uf.bitwise_or, "xor": uf.bitwise_xor,
    "lshift": uf.left_shift, "rshift": uf.right_shift, "divmod": uf.divmod,
}
_COMPARISONS = {"eq": uf.equal, "ne": uf.not_equal, "lt": uf.less, "le": uf.less_equal,
                "gt": uf.greater, "ge": uf.greater_equal}


def _getitem(self, idx):
  if type(self.aval) is core.AbstractRef:   # a traced mutable array reference
    return self.aval._getitem(self, idx)
  return indexing.getitem(self, idx)


def _astype(self, dtype, copy=False, device=None):
  return lnp.astype(self, dtype)


def _reshape(self, *args, order="C", out_sharding=None, **kwargs):
  shape = kwargs.pop("shape", None)
  if shape is None:
    shape = args[0] if len(args) == 1 else args
  return lnp.reshape(self, shape, order=order, out_sharding=out_sharding)


def _transpose(self, *args):
  axes = None if not args else (args[0] if len(args) == 1 else args)
  if isinstance(axes, (int, np.integer)):   # x.transpose(0): one axis, as NumPy
    axes = (axes,)
  return lnp.transpose(self, axes)


def _at(self):
  if core.is_ref_aval(getattr(self, "aval", None)):   # a traced ref: views (`ref.at[...]`)
    return core._ref_ops["at"](self)
  return indexing.IndexUpdateHelper(self)


def _view(self, dtype=None, type=None):  # noqa: A002
  if dtype is None:
    return self
  dt = np.dtype(dtype)
  src = self.dtype
  if self.ndim == 0 and dt.itemsize == src.itemsize:   # (through a 1-d view, as JAX does)
    return lnp.squeeze(_view(lnp.expand_dims(self, 0), dt), 0)
  if dt == src:
    return self
  if dt.itemsize == src.itemsize:
    return lax.bitcast_convert_type(self, dt)
  raise NotImplementedError("view with a different itemsize is not implemented yet")


def _to_device(self, device, *, stream=None):
  if stream is not None:
    raise NotImplementedError("stream argument of array.to_device()")
  return api.device_put(self, device)


def _copy(self):
  return assembly.copy(self)


def _diagonal(self, offset=0, axis1=0, axis2=1):
  return index_tricks.diagonal(self, offset=offset, axis1=axis1, axis2=axis2)


def _repeat(self, repeats, axis=None, *, total_repeat_length=None, out_sharding=None):
  return assembly.repeat(self, repeats=repeats, axis=axis,
                         total_repeat_length=total_repeat_length, out_sharding=out_sharding)


def _trace(self, offset=0, axis1=0, axis2=1, dtype=None, out=None):
  return index_tricks.trace(self, offset=offset, axis1=axis1, axis2=axis2, dtype=dtype, out=out)


def _clip(self, min=None, max=None):
  # Bounds by keyword, as JAX's method passes them: the jit's arguments are (x, max, min).
  return lnp.clip(self, min=min, max=max)


def _argpartition(self, kth, axis=-1):
  return searching.argpartition(self, kth=kth, axis=axis)


def _byteswap(self):
  """The array with the bytes of each element reversed (same dtype)."""
  if np.issubdtype(self.dtype, np.complexfloating):
    return lax.complex(_byteswap(uf.real(self)), _byteswap(uf.imag(self)))
  if self.dtype.itemsize == 1:
    return _copy(self)
  as_bytes = lax.bitcast_convert_type(self, np.dtype(np.uint8))
  return lax.bitcast_convert_type(shape_ops.rev(as_bytes, (self.ndim,)), self.dtype)


def _choose(self, choices, out=None, mode="raise"):
  return searching.choose(self, choices=choices, out=out, mode=mode)


def _compress(self, condition, axis=None, *, out=None, size=None, fill_value=0):
  return searching.compress(condition, self, axis=axis, out=out, size=size,
                            fill_value=fill_value)


def _nonzero(self, *, fill_value=None, size=None):
  return searching.nonzero(self, size=size, fill_value=fill_value)


def _ptp(self, axis=None, out=None, keepdims=False):
  return statistics.ptp(self, axis=axis, out=out, keepdims=keepdims)


def _searchsorted(self, v, side="left", sorter=None, *, method="scan"):
  return searching.searchsorted(self, v, side=side, sorter=sorter, method=method)


_METHODS = {
    "astype": _astype, "reshape": _reshape, "transpose": _transpose,
    "sum": red.sum, "prod": red.prod, "max": red.max, "min": red.min, "mean": red.mean,
    "var": red.var, "std": red.std, "all": red.all, "any": red.any, "argmax": red.argmax,
    "argmin": red.argmin, "cumsum": red.cumsum, "cumprod": red.cumprod,
    "ravel": lnp.ravel, "flatten": lnp.ravel, "squeeze": lnp.squeeze,
    "swapaxes": lnp.swapaxes, "clip": _clip, "round": uf.round, "dot": lnp.dot,
    "sort": lnp.sort, "argsort": lnp.argsort, "take": indexing.take, "conj": uf.conjugate,
    "conjugate": uf.conjugate, "view": _view,
    "copy": _copy, "diagonal": _diagonal, "repeat": _repeat, "trace": _trace,
    "argpartition": _argpartition, "byteswap": _byteswap, "choose": _choose,
    "compress": _compress, "nonzero": _nonzero, "ptp": _ptp, "searchsorted": _searchsorted,
    "__array_namespace__": array_api_metadata.__array_namespace__, "to_device": _to_device,
}


def _ndarray_property(fn):
  return property(fn)


_PROPERTIES = {
    "T": lambda self: lnp.transpose(self),
    "mT": lambda self: lnp.matrix_transpose(self),
    "real": lambda self: uf.real(self),
    "imag": lambda self: uf.imag(self),
    "at": _at,
    "flat": lambda self: _no_flat(),
}


def _no_flat():
  raise NotImplementedError("JAX Arrays do not implement the arr.flat property: consider "
                            "arr.flatten() instead.")


def _install(cls):
  for name, fn in _OPERATORS.items():
    setattr(cls, f"__{name}__", _binop(fn))
    setattr(cls, f"__r{name}__", _binop(fn, swap=True))
  for name, fn in _COMPARISONS.items():
    setattr(cls, f"__{name}__", _binop(fn))
  cls.__neg__ = lambda self: uf.negative(self)
  cls.__pos__ = lambda self: uf.positive(self)
  cls.__abs__ = lambda self: uf.absolute(self)
  cls.__invert__ = lambda self: uf.bitwise_not(self)
  cls.__round__ = lambda self, ndigits=None: (uf.round(self, ndigits or 0) if ndigits
                                              else uf.round(self))
  cls.__getitem__ = _getitem
  for name, fn in _METHODS.items():
    setattr(cls, name, fn)
  for name, fn in _PROPERTIES.items():
    setattr(cls, name, property(fn))
  # Arrays are unhashable; defining __eq__ would otherwise drop __hash__ silently.
  cls.__hash__ = Array.__hash__ if cls is Array else core.Tracer.__hash__


def _defer_to_hi_aval(cls, dunders):
  """A tracer of a hi type (hijax) whose aval defines `_add`, `_getitem`, ... answers those
  operators with them (as JAX's tracers defer to their aval)."""
  for dunder in dunders:
    def method(self, *args, _fn=getattr(cls, dunder), _hook="_" + dunder[2:-2]):
      aval = self.aval
      if type(aval) is not core.ShapedArray and getattr(aval, "is_high", False):
        rule = getattr(aval, _hook, None)
        if rule is not None:
          return rule(self, *args)
      return _fn(self, *args)
    setattr(cls, dunder, method)


_tracer_hash = core.Tracer.__hash__
_install(Array)
_install(core.Tracer)
core.Tracer.__hash__ = _tracer_hash
_defer_to_hi_aval(core.Tracer, [f"__{n}__" for n in _OPERATORS] + [
    f"__r{n}__" for n in _OPERATORS] + [f"__{n}__" for n in _COMPARISONS] + [
        "__neg__", "__pos__", "__abs__", "__invert__", "__getitem__"])
