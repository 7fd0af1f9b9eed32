"""jnp.ufunc: NumPy-style universal functions with `reduce`, `accumulate`, `at`, `reduceat` and
`outer`, the 14 ufunc objects of jax.numpy, and `frompyfunc`.

A ufunc wraps a function of `nin` arrays. Its methods have generic implementations (loops over
the reduced axis, built with fori_loop/scan, as JAX's are) and may be given faster ones: the
jnp ufuncs call their elementwise function from ufuncs.py directly (so `jnp.add(x, y)` traces
exactly as before), `add.reduce` is `jnp.sum`, `add.accumulate` is `jnp.cumsum`, `add.at` is
`.at[].add`, and so on, as in JAX. The methods are `jit`ted with the ufunc static, so they
show up as `jit[name=reduce]`, `jit[name=at]`, ... equations in jaxprs like JAX's.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from arrax._src import batching, core, dtypes
from arrax._src.api import ShapeDtypeStruct, eval_shape
from arrax._src.array import Array
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax import reductions as lax_red
from arrax._src.lax.control_flow import fori_loop, scan
from arrax._src.numpy import assembly, indexing, lax_numpy, reductions, ufuncs, util
from arrax._src.numpy.util import _broadcast_to, _where, check_arraylike
from arrax._src.numpy.vectorize import vectorize

_AT_INPLACE_MESSAGE = (
    "jnp.ufunc.at() cannot update its argument in place as numpy.ufunc.at() does: arrays are "
    "immutable. Pass inplace=False and use the result instead, e.g.\n"
    "  arr = jnp.add.at(arr, ind, val, inplace=False)")


# ---- small helpers ---------------------------------------------------------------------------
_PLAIN_ARGS = frozenset({Array, float, int, bool, complex})   # array-like without more checks


def _operand(x):
  """An arrax value for x (Arrays and tracers as they are; scalars and NumPy arrays converted)."""
  return x if isinstance(x, (Array, core.Tracer)) else lax_numpy._asarray(x)


def _one_like(x):
  """The abstract value of a rank-0 element of x (its dtype and weak type)."""
  aval = core.get_aval(x)
  return ShapeDtypeStruct((), aval.dtype, weak_type=aval.weak_type)


def _full(shape, fill, dtype):
  """`fill` converted to `dtype` and broadcast to `shape` (fill may be a tracer)."""
  value = lax.convert_element_type(fill, dtype)
  return shape_ops.broadcast_in_dim(value, tuple(shape), ()) if shape else value


def _moveaxis(a, source, destination):
  """One transpose moving axis `source` to `destination`."""
  nd = util.ndim_of(a)
  source = util.canonicalize_axis(source, nd)
  destination = util.canonicalize_axis(destination, nd)
  perm = [i for i in range(nd) if i != source]
  perm.insert(destination, source)
  return shape_ops.transpose(a, tuple(perm))


def _index_tuple(idx):
  """The index as a tuple; a list (or other non-tuple sequence) is an error, as in JAX."""
  if isinstance(idx, tuple):
    return idx
  if isinstance(idx, Sequence) and not isinstance(idx, (Array, np.ndarray, str)):
    raise TypeError("A list (or other non-tuple sequence) cannot index an array: write "
                    "`arr[tuple(seq)]` to index several axes, or `arr[jnp.array(seq)]` for an "
                    "integer array index (https://github.com/jax-ml/jax/issues/4564).")
  return (idx,)


# ---- the ufunc class -------------------------------------------------------------------------
class ufunc:
  """A universal function: elementwise over broadcast arrays, with NumPy's ufunc methods.

  `func` takes `nin` arrays and returns `nout` results. `identity` is the value of an empty
  reduction (None if there is none). `call`, `reduce`, `accumulate`, `at` and `reduceat`
  optionally replace the generic implementations of those operations. Most programs use the
  ufuncs jax.numpy defines (`jnp.add`, `jnp.maximum`, ...) or make one with `frompyfunc`.

  Example:
    >>> jnp.add.reduce(jnp.arange(5))
    Array(10, dtype=int32)
    >>> jnp.multiply.outer(jnp.arange(1, 3), jnp.arange(1, 4))
    Array([[1, 2, 3],
           [2, 4, 6]], dtype=int32)
  """

  def __init__(self, func, /, nin, nout, *, name=None, nargs=None, identity=None, call=None,
               reduce=None, accumulate=None, at=None, reduceat=None):
    self.__doc__ = func.__doc__
    self.__name__ = name or func.__name__
    # Read-only through properties: a ufunc is hashed as a static argument of its methods.
    self.__static_props = {
        "func": func, "nin": operator.index(nin), "nout": operator.index(nout),
        "nargs": operator.index(nargs or nin), "identity": identity, "call": call,
        "reduce": reduce, "accumulate": accumulate, "at": at, "reduceat": reduceat}
    self.__call_fn = call or self._call_vectorized

  _func = property(lambda self: self.__static_props["func"])
  nin = property(lambda self: self.__static_props["nin"])
  nout = property(lambda self: self.__static_props["nout"])
  nargs = property(lambda self: self.__static_props["nargs"])
  identity = property(lambda self: self.__static_props["identity"])

  def _key(self):
    # The implementations (call, reduce, ...) are not part of a ufunc's identity.
    return (self._func, self.__name__, self.identity, self.nin, self.nout, self.nargs)

  def __hash__(self):
    return hash(self._key())

  def __eq__(self, other):
    return isinstance(other, ufunc) and self._key() == other._key()

  def __repr__(self):
    return f"<jnp.ufunc '{self.__name__}'>"

  def __call__(self, *args, out=None, where=None):
    # The hot path of jnp.add(x, y): check_arraylike inlined for the common argument types.
    for a in args:
      if type(a) not in _PLAIN_ARGS and not util.is_arraylike(a):
        check_arraylike(self.__name__, *args)
    if out is not None:
      raise NotImplementedError(f"out argument of {self}")
    if where is not None:
      raise NotImplementedError(f"where argument of {self}")
    return self.__call_fn(*args)

  @jit(static_argnames=("self",))
  def _call_vectorized(self, *args):
    return vectorize(self._func)(*args)

  # -- reduce ----------------------------------------------------------------------------------
  @jit(static_argnames=("self", "axis", "dtype", "out", "keepdims"))
  def reduce(self, a, axis=0, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """Reduce `a` along `axis` (an int, a tuple of ints, or None for all axes) by applying the
    binary ufunc repeatedly, as numpy.ufunc.reduce: `jnp.add.reduce` is `jnp.sum`.

    `initial` starts the reduction; `where` (a boolean mask) selects the elements reduced and
    needs `initial` when the ufunc has no identity. `out` is not supported.

    Example:
      >>> jnp.bitwise_or.reduce(jnp.array([[1, 2], [4, 4]]), axis=1)
      Array([3, 4], dtype=int32)
    """
    check_arraylike(f"{self.__name__}.reduce", a)
    if self.nin != 2:
      raise ValueError("reduce only supported for binary ufuncs")
    if self.nout != 1:
      raise ValueError("reduce only supported for functions returning a single value")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduce()")
    if initial is not None:
      check_arraylike(f"{self.__name__}.reduce", initial)
    if where is not None:
      check_arraylike(f"{self.__name__}.reduce", where)
      if self.identity is None and initial is None:
        raise ValueError(f"reduction operation {self.__name__!r} does not have an identity, "
                         "so to use a where mask one has to specify 'initial'.")
      where_dtype = core.get_aval(where).dtype
      if where_dtype != np.bool_:
        raise ValueError(f"where argument must have dtype=bool; got dtype={where_dtype}")
    reduce = self.__static_props["reduce"] or self._reduce_via_scan
    return reduce(a, axis=axis, dtype=dtype, keepdims=keepdims, initial=initial, where=where)

  def _reduce_via_scan(self, arr, axis=0, dtype=None, keepdims=False, initial=None,
                       where=None):
    assert self.nin == 2 and self.nout == 1
    arr = _operand(arr)
    if initial is None:
      initial = self.identity
    if dtype is None:
      dtype = eval_shape(self._func, _one_like(arr), _one_like(arr)).dtype
    shape = util.shape_of(arr)
    if where is not None:
      where = _broadcast_to(where, shape)
    if isinstance(axis, tuple):
      for ax in axis:
        util.canonicalize_axis(ax, len(shape))
      raise NotImplementedError(
          f"{self.__name__}.reduce over a tuple of axes: the ufunc is reduced by a loop along "
          "one axis; reduce one axis at a time, or use axis=None")
    if axis is None:
      final_shape = (1,) * len(shape) if keepdims else ()
      arr = lax_numpy.ravel(arr)
      if where is not None:
        where = lax_numpy.ravel(where)
      axis = 0
    else:
      axis = util.canonicalize_axis(axis, len(shape))
      final_shape = shape[:axis] + ((1,) if keepdims else ()) + shape[axis + 1:]
    if axis != 0:
      arr = _moveaxis(arr, axis, 0)
      if where is not None:
        where = _moveaxis(where, axis, 0)
    n = util.shape_of(arr)[0]
    if n == 0:
      if initial is None:
        raise ValueError(f"zero-size array to reduction operation {self.__name__} which has "
                         "no identity")
      return _full(final_shape, initial, dtype)

    def body(i, acc):
      step = self(acc, arr[i].astype(dtype))
      return step if where is None else _where(where[i], step, acc)

    if initial is None:
      start, first = 1, arr[0]
    else:
      start, first = 0, initial
    first = _broadcast_to(_operand(first).astype(dtype), util.shape_of(arr)[1:])
    result = fori_loop(start, n, body, first)
    if keepdims:
      result = result.reshape(final_shape)
    return result

  # -- accumulate ------------------------------------------------------------------------------
  @jit(static_argnames=("self", "axis", "dtype"))
  def accumulate(self, a, axis=0, dtype=None, out=None):
    """Running reduction along `axis` (numpy.ufunc.accumulate): `jnp.add.accumulate` is
    `jnp.cumsum`. `out` is not supported.

    Example:
      >>> jnp.maximum.accumulate(jnp.array([1, 3, 2, 5]))
      Array([1, 3, 3, 5], dtype=int32)
    """
    if self.nin != 2:
      raise ValueError("accumulate only supported for binary ufuncs")
    if self.nout != 1:
      raise ValueError("accumulate only supported for functions returning a single value")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.accumulate()")
    accumulate = self.__static_props["accumulate"] or self._accumulate_via_scan
    return accumulate(a, axis=axis, dtype=dtype)

  def _accumulate_via_scan(self, arr, axis=0, dtype=None):
    assert self.nin == 2 and self.nout == 1
    check_arraylike(f"{self.__name__}.accumulate", arr)
    arr = _operand(arr)
    if dtype is None:
      dtype = eval_shape(self._func, _one_like(arr), _one_like(arr)).dtype
    if axis is None or isinstance(axis, tuple):
      raise ValueError("accumulate does not allow multiple axes")
    shape = util.shape_of(arr)
    axis = util.canonicalize_axis(axis, len(shape))
    if math.prod(shape) == 0:
      return _full(shape, 0, dtype)
    arr = _moveaxis(arr, axis, 0)

    def step(carry, _):
      i, acc = carry
      nxt = _where(i == 0, arr[0].astype(dtype), self(acc.astype(dtype), arr[i].astype(dtype)))
      return (i + 1, nxt), nxt

    _, result = scan(step, (0, arr[0].astype(dtype)), None, length=shape[axis])
    return _moveaxis(result, 0, axis)

  # -- at --------------------------------------------------------------------------------------
  @jit(static_argnums=(0,), static_argnames=("inplace",))
  def at(self, a, indices, b=None, /, *, inplace=True):
    """`a` with the ufunc applied at `indices` (with `b` as its second operand for a binary
    ufunc), repeated indices applying it repeatedly: numpy.ufunc.at, out of place.
    `inplace=False` is required, as a reminder that `a` itself is not changed.

    Example:
      >>> jnp.add.at(jnp.zeros(3), jnp.array([0, 0, 2]), 1.0, inplace=False)
      Array([2., 0., 1.], dtype=float32)
    """
    if inplace:
      raise NotImplementedError(_AT_INPLACE_MESSAGE)
    at = self.__static_props["at"] or self._at_via_scan
    return at(a, indices) if b is None else at(a, indices, b)

  def _at_via_scan(self, a, indices, *args):
    assert len(args) in {0, 1}
    check_arraylike(f"{self.__name__}.at", a, *args)
    dtype = eval_shape(self._func, _one_like(a), *(_one_like(arg) for arg in args)).dtype
    a = _operand(a).astype(dtype)
    args = tuple(_operand(arg).astype(dtype) for arg in args)
    indices = _index_tuple(indices)
    if not indices:
      return a
    shapes = [np.shape(i) for i in indices if not isinstance(i, slice)]
    shape = shapes and util.broadcast_shapes(*shapes)
    if not shape:
      return a.at[indices].set(self(a.at[indices].get(), *args))
    if args:
      arg, = args
      tail = util.shape_of(arg)[len(shape):]
      arg = _broadcast_to(arg, (*shape, *tail))
      args = (arg.reshape(math.prod(shape), *tail),)
    flat = [i if isinstance(i, slice) else lax_numpy.ravel(_broadcast_to(_operand(i), shape))
            for i in indices]

    def step(carry, x):
      k, acc = carry
      idx = tuple(i if isinstance(i, slice) else i[k] for i in flat)
      acc = acc.at[idx].set(self(acc.at[idx].get(), *(arg[k] for arg in args)))
      return (k + 1, acc), x

    carry, _ = scan(step, (0, a), None, len(flat[0]))
    return carry[1]

  # -- reduceat --------------------------------------------------------------------------------
  @jit(static_argnames=("self", "axis", "dtype"))
  def reduceat(self, a, indices, axis=0, dtype=None, out=None):
    """Reductions of `a` over the segments [indices[i], indices[i+1]) along `axis` (the last
    to the end; a non-increasing pair gives a[indices[i]]), as numpy.ufunc.reduceat.

    Example:
      >>> jnp.add.reduceat(jnp.arange(6), jnp.array([0, 2, 5]))
      Array([1, 9, 5], dtype=int32)
    """
    if self.nin != 2:
      raise ValueError("reduceat only supported for binary ufuncs")
    if self.nout != 1:
      raise ValueError("reduceat only supported for functions returning a single value")
    if out is not None:
      raise NotImplementedError(f"out argument of {self.__name__}.reduceat()")
    reduceat = self.__static_props["reduceat"] or self._reduceat_via_scan
    return reduceat(a, indices, axis=axis, dtype=dtype)

  def _reduceat_via_scan(self, a, indices, axis=0, dtype=None):
    check_arraylike(f"{self.__name__}.reduceat", a, indices)
    a = _operand(a)
    idx_tuple = _index_tuple(indices)
    assert len(idx_tuple) == 1, "reduceat: indices must be a single array"
    idx, = idx_tuple
    a_shape, idx_shape = util.shape_of(a), util.shape_of(idx)
    if not a_shape:
      raise ValueError(f"reduceat: a must have 1 or more dimension, got a.shape={a_shape}")
    if len(idx_shape) != 1:
      raise ValueError(f"reduceat: indices must be one-dimensional, got "
                       f"indices.shape={idx_shape}")
    del dtype   # the result has a's dtype whatever `dtype` says, as in JAX
    if axis is None or isinstance(axis, (tuple, list)):
      raise ValueError("reduceat requires a single integer axis.")
    axis = util.canonicalize_axis(axis, len(a_shape))
    out = indexing.take(a, idx, axis=axis)
    nd = util.ndim_of(out)
    bounds = shape_ops.expand_dims(assembly.append(idx, a_shape[axis]),
                                   tuple(d for d in range(nd) if d != axis))
    m = util.shape_of(bounds)[axis]
    starts = shape_ops.slice_in_dim(bounds, 0, m - 1, axis=axis)
    ends = shape_ops.slice_in_dim(bounds, 1, m, axis=axis)

    def body(i, acc):
      inside = (i > starts) & (i < ends)
      return _where(inside, self(acc, indexing.take(a, shape_ops.expand_dims(i, (0,)),
                                                    axis=axis)), acc)

    return fori_loop(0, a_shape[axis], body, out)

  # -- outer -----------------------------------------------------------------------------------
  @jit(static_argnums=(0,))
  def outer(self, A, B, /):
    """The ufunc applied to every pair (a, b) of elements of A and B: a result of shape
    A.shape + B.shape (numpy.ufunc.outer).

    Example:
      >>> jnp.subtract.outer(jnp.arange(2), jnp.arange(3))
      Array([[ 0, -1, -2],
             [ 1,  0, -1]], dtype=int32)
    """
    if self.nin != 2:
      raise ValueError("outer only supported for binary ufuncs")
    if self.nout != 1:
      raise ValueError("outer only supported for functions returning a single value")
    check_arraylike(f"{self.__name__}.outer", A, B)
    a_shape, b_shape = np.shape(A), np.shape(B)
    flat_a = shape_ops.reshape(_operand(A), (math.prod(a_shape),))
    flat_b = shape_ops.reshape(_operand(B), (math.prod(b_shape),))
    result = batching.vmap(batching.vmap(self, (None, 0)), (0, None))(flat_a, flat_b)
    return lax_numpy.reshape(result, (*a_shape, *b_shape))


ufunc.__module__ = "arrax.numpy"


def frompyfunc(func, /, nin, nout, *, identity=None):
  """A ufunc from a function of `nin` scalars returning `nout` values: calls are vectorized
  over the broadcast inputs, and reduce/accumulate/at/reduceat/outer loop over `func`.

  Example:
    >>> hypot = jnp.frompyfunc(lambda a, b: jnp.sqrt(a * a + b * b), 2, 1)
    >>> hypot(jnp.array([3.0, 5.0]), 4.0)
    Array([5.      , 6.403124], dtype=float32)
  """
  return ufunc(func, nin, nout, identity=identity)


# ---- the fast paths of the jnp ufuncs -----------------------------------------------------------
def _bool_to_int_update(name):
  """`.at[].add`/`.multiply` for a boolean array: computed in int32 (an OR / AND of the
  updates), as JAX does."""
  def update(a, indices, b):
    if core.get_aval(a).dtype == np.bool_:
      a_int = lax.convert_element_type(a, np.int32)
      b_int = lax.convert_element_type(lax.convert_element_type(b, np.bool_), np.int32)
      return getattr(a_int.at[indices], name)(b_int).astype(np.bool_)
    return getattr(a.at[indices], name)(b)
  update.__name__ = update.__qualname__ = f"_{name}_at"
  return update


_add_at = _bool_to_int_update("add")
_multiply_at = _bool_to_int_update("multiply")


def _subtract_at(a, indices, b):
  return a.at[indices].subtract(b)


def _require_integer(a):
  dt = core.get_aval(a).dtype
  if not (dt == np.bool_ or dtypes.issubdtype(dt, np.integer)):
    raise ValueError(f"integer argument required; got dtype={dt}")
  return a


def _bitwise_reduction(name, lax_reduce, lax_op, identity, preproc):
  @util.inline_jit(static_argnames=("axis", "keepdims", "dtype"))
  def reduce(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    if out is not None:
      raise NotImplementedError(f"The 'out' argument to jnp.{name} is not supported.")
    a = util.ensure_arraylike(name, a)
    # The identity in the computation's dtype (all bits set, for bitwise_and).
    init = np.array(identity).astype(dtype or core.get_aval(a).dtype)
    return reductions._reduction(a, name, lax_reduce, lax_op, init, preproc=preproc,
                                 axis=reductions._static_axes(axis), dtype=dtype,
                                 keepdims=keepdims, initial=initial, where=where)
  reduce.__name__ = f"_{name}"
  return reduce


_reduce_bitwise_and = _bitwise_reduction("reduce_bitwise_and", lax_red.reduce_and,
                                         lax.bitwise_and, -1, _require_integer)
_reduce_bitwise_or = _bitwise_reduction("reduce_bitwise_or", lax_red.reduce_or,
                                        lax.bitwise_or, 0, _require_integer)
_reduce_bitwise_xor = _bitwise_reduction("reduce_bitwise_xor", lax_red.reduce_xor,
                                         lax.bitwise_xor, 0, _require_integer)
_reduce_logical_and = _bitwise_reduction("reduce_logical_and", lax_red.reduce_and,
                                         lax.bitwise_and, True, reductions._cast_to_bool)
_reduce_logical_or = _bitwise_reduction("reduce_logical_or", lax_red.reduce_or,
                                        lax.bitwise_or, False, reductions._cast_to_bool)
_reduce_logical_xor = _bitwise_reduction("reduce_logical_xor", lax_red.reduce_xor,
                                         lax.bitwise_xor, False, reductions._cast_to_bool)


def _reduce_max(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """maximum.reduce: jnp.max, which takes no dtype."""
  if dtype is not None:
    # JAX passes `dtype` on to a jitted function as an array argument, which a dtype is not.
    raise TypeError(f"maximum.reduce: a dtype ({dtype!r}) is not accepted, as in JAX; cast "
                    "the input (or the result) instead.")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.max is not supported.")
  return reductions._reduce_max(a, axis=axis, keepdims=keepdims, initial=initial, where=where)


@util.inline_jit(static_argnames=("axis", "keepdims", "dtype"))
def _reduce_min(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """minimum.reduce: jnp.min, computed in `dtype` if one is given."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.min is not supported.")
  return reductions._reduction(a, "min", lax_red.reduce_min, lax.min, np.inf,
                               has_identity=False, axis=axis, dtype=dtype, keepdims=keepdims,
                               initial=initial, where=where)


def _logaddexp_pair(x1, x2):
  """The lax-level logaddexp of two operands of one dtype."""
  x1, x2 = lax.asarray_operand(x1), lax.asarray_operand(x2)
  assert core.get_aval(x1).dtype == core.get_aval(x2).dtype, (
      "logaddexp.reduce: `initial` must have the dtype of the reduction")
  return ufuncs._lax_logaddexp(x1, x2)


def _logsumexp(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """log(sum(exp(a))) computed stably: logaddexp.reduce (`dtype` is checked, then unused, as
  in JAX)."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.logaddexp.reduce is not supported.")
  if dtype is not None:
    dtypes.check_user_dtype(dtype, "jnp.logaddexp.reduce")
  a = util.ensure_arraylike("logsumexp", a)
  where = reductions._check_where("logsumexp", where)
  a, = util.promote_dtypes_inexact(a)
  nd = util.ndim_of(a)
  dims = reductions._reduction_dims(nd, axis)
  amax = reductions.max(ufuncs.real(a), axis=dims, keepdims=keepdims, where=where,
                        initial=-np.inf)
  amax = lax.stop_gradient(lax.select(lax.is_finite(amax), amax,
                                      ufuncs._full_like(amax, 0)))
  amax_with_dims = amax if keepdims else shape_ops.expand_dims(amax, dims)
  exp_a = lax.exp(lax.sub(a, amax_with_dims.astype(core.get_aval(a).dtype)))
  sumexp = reductions.sum(exp_a, axis=dims, keepdims=keepdims, where=where)
  result = lax.add(lax.log(sumexp), amax.astype(core.get_aval(sumexp).dtype))
  return result if initial is None else _logaddexp_pair(initial, result)


def _logsumexp2(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
  """log2(sum(2 ** a)) through _logsumexp: logaddexp2.reduce."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.logaddexp2.reduce is not supported.")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "jnp.logaddexp2.reduce")
  a = util.ensure_arraylike("logsumexp2", a)
  where = reductions._check_where("logsumexp2", where)
  ln2 = float(np.log(2))
  if initial is not None:
    initial = initial * ln2
  return _logsumexp(a * ln2, axis=axis, dtype=dtype, keepdims=keepdims, where=where,
                    initial=initial) / ln2


# ---- the jnp ufuncs ------------------------------------------------------------------------------
def _jnp_ufunc(func, nin, identity=None, **methods):
  return ufunc(func, name=func.__name__, nin=nin, nout=1, call=func, identity=identity,
               **methods)


negative = _jnp_ufunc(ufuncs.negative, 1)
add = _jnp_ufunc(ufuncs.add, 2, 0, reduce=reductions.sum, accumulate=reductions.cumsum,
                 at=_add_at)
multiply = _jnp_ufunc(ufuncs.multiply, 2, 1, reduce=reductions.prod,
                      accumulate=reductions.cumprod, at=_multiply_at)
subtract = _jnp_ufunc(ufuncs.subtract, 2, None, at=_subtract_at)
bitwise_and = _jnp_ufunc(ufuncs.bitwise_and, 2, -1, reduce=_reduce_bitwise_and)
bitwise_or = _jnp_ufunc(ufuncs.bitwise_or, 2, 0, reduce=_reduce_bitwise_or)
bitwise_xor = _jnp_ufunc(ufuncs.bitwise_xor, 2, 0, reduce=_reduce_bitwise_xor)
logical_and = _jnp_ufunc(ufuncs.logical_and, 2, True, reduce=_reduce_logical_and)
logical_or = _jnp_ufunc(ufuncs.logical_or, 2, False, reduce=_reduce_logical_or)
logical_xor = _jnp_ufunc(ufuncs.logical_xor, 2, False, reduce=_reduce_logical_xor)
maximum = _jnp_ufunc(ufuncs.maximum, 2, None, reduce=_reduce_max)
minimum = _jnp_ufunc(ufuncs.minimum, 2, None, reduce=_reduce_min)
logaddexp = _jnp_ufunc(ufuncs.logaddexp, 2, -np.inf, reduce=_logsumexp)
logaddexp2 = _jnp_ufunc(ufuncs.logaddexp2, 2, -np.inf, reduce=_logsumexp2)
