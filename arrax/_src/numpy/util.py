"""Argument handling shared by arrax.numpy: array-like checks, dtype promotion, rank promotion,
and the broadcasting `_where` that the elementwise functions and the reductions build on."""
from __future__ import annotations

import operator
import warnings

import numpy as np

from arrax._src import core, dtypes, mlir
from arrax._src.array import Array
from arrax._src.config import config
from arrax._src.errors import ConcretizationTypeError
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax
from arrax._src.lax import shape_ops
from arrax._src.sharding_types import broadcast_shardings



# `jax.sharding.auto_axes` (set by `_src/spmd.py`, a higher layer), for the jnp functions that
# run part of their work with the mesh axes Auto, as JAX's do.
auto_axes_hook: list = []


def maybe_auto_axes(f, out_sharding):
  """`f` itself when `out_sharding` (canonical: None or a NamedSharding) is None; else `f` run
  with the Explicit axes of its mesh Auto and the results resharded to it (JAX's
  `maybe_auto_axes` of its samplers and scatter-based functions)."""
  if out_sharding is None:
    return f
  return auto_axes_hook[0](f, out_sharding=out_sharding, axes=out_sharding.mesh.explicit_axes)


def inline_jit(fun=None, **kwargs):
  """jit that inlines into an enclosing trace (JAX's `@jit(inline=True)` on jnp functions)."""
  if fun is None:
    return lambda f: jit(f, inline=True, **kwargs)
  return jit(fun, inline=True, **kwargs)


def is_arraylike(x) -> bool:
  if isinstance(x, core.Tracer):
    return type(x.aval) is not core.AbstractRef   # (a traced mutable ref is not an array)
  return (isinstance(x, (Array, np.ndarray, np.generic, core.Literal))
          or type(x) in dtypes.python_scalar_dtypes or hasattr(x, "__jax_array__"))


def check_arraylike(fun_name, *args):
  for i, a in enumerate(args):
    if not is_arraylike(a):
      msg = f"{fun_name} requires ndarray or scalar arguments, got {type(a)} at position {i}."
      if isinstance(a, (list, tuple)):
        msg += " Use jnp.array() to convert lists and tuples to arrays first."
      raise TypeError(msg)


def promote_dtypes(*args):
  """Convert arguments to their common dtype (JAX's promotion lattice, weak types honoured)."""
  if len(args) < 2:
    return [lax.asarray_operand(a) for a in args]
  to_dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
  return [lax._convert_element_type(x, to_dtype, weak) for x in args]


def promote_dtypes_inexact(*args):
  """Like promote_dtypes, then to the default float type if the common type is not inexact."""
  to_dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
  to_dtype = dtypes.to_inexact_dtype(to_dtype)
  return [lax._convert_element_type(x, to_dtype, weak) for x in args]


def promote_dtypes_numeric(*args):
  """Like promote_dtypes, then bool becomes int32 (as in JAX, whatever jax_enable_x64 says)."""
  to_dtype, weak = dtypes.result_type(*args, return_weak_type_flag=True)
  if to_dtype == np.bool_:
    to_dtype = dtypes.int32
  return [lax._convert_element_type(x, to_dtype, weak) for x in args]


def _aval(x):
  return core.get_aval(x)


def _shape(x):
  return core.get_aval(x).shape


def _ndim(x):
  return len(core.get_aval(x).shape)


def _dtype(x):
  return core.get_aval(x).dtype


def _as_operand(x):
  m = getattr(x, "__jax_array__", None)
  if m is not None and not isinstance(x, (Array, core.Tracer)):
    x = m()
  return lax.asarray_operand(x)


def ensure_arraylike(fun_name, *args):
  """check_arraylike, then Python scalars become (weakly typed) operands.

  One argument gives one value, several give a tuple (as JAX's helper of the same name).
  """
  check_arraylike(fun_name, *args)
  if len(args) == 1:
    return _as_operand(args[0])
  return tuple(_as_operand(a) for a in args)


_rank_promotion = config.flag("jax_numpy_rank_promotion")


def _rank_promotion_warning_or_error(fun_name, shapes):
  shapes_str = " ".join(map(str, shapes))
  if _rank_promotion.value == "warn":
    warnings.warn(f"Following NumPy automatic rank promotion for {fun_name} on shapes "
                  f"{shapes_str}. Set the jax_numpy_rank_promotion config option to 'allow' "
                  "to disable this warning; for more information, see "
                  "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")
  elif _rank_promotion.value == "raise":
    raise ValueError(f"Operands could not be broadcast together for {fun_name} on shapes "
                     f"{shapes_str} and with the config option "
                     "jax_numpy_rank_promotion='raise'. For more information, see "
                     "https://docs.jax.dev/en/latest/rank_promotion_warning.html.")


def promote_shapes(fun_name, *args):
  """NumPy rank promotion: lower-rank non-scalar operands get leading size-1 axes.

  Operands of equal rank, and rank-0 operands, are left to lax's elementwise shape rule (which
  raises TypeError for incompatible shapes, as in JAX); operands of different non-zero ranks
  must broadcast (ValueError otherwise).
  """
  if len(args) < 2:
    return [lax.asarray_operand(a) for a in args]
  shapes = [shape_of(a) for a in args]
  if all(len(s) == len(shapes[0]) for s in shapes[1:]):
    return [lax.asarray_operand(a) for a in args]
  ranks = {len(s) for s in shapes if s}
  if len(ranks) < 2:
    return [lax.asarray_operand(a) for a in args]
  if _rank_promotion.value != "allow":
    _rank_promotion_warning_or_error(fun_name, shapes)
  _check_broadcastable(fun_name, shapes)
  rank = max(ranks)
  out = []
  for a, s in zip(args, shapes):
    a = lax.asarray_operand(a)
    if len(s) < rank:
      a = shape_ops.broadcast_in_dim(a, (1,) * (rank - len(s)) + tuple(s),
                                     tuple(range(rank - len(s), rank)))
    out.append(a)
  return out


def _check_broadcastable(fun_name, shapes):
  try:
    broadcast_shapes(*shapes)
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: shapes="
                     f"{[tuple(s) for s in shapes]}") from None


def promote_args(fun_name, *args):
  """Check, promote dtypes and promote ranks, as NumPy-style binary functions do."""
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes(*args))


def promote_args_inexact(fun_name, *args):
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_inexact(*args))


def promote_args_numeric(fun_name, *args):
  check_arraylike(fun_name, *args)
  return promote_shapes(fun_name, *promote_dtypes_numeric(*args))


def aval_of(x):
  return core.get_aval(x)


def shape_of(x):
  return core.get_aval(x).shape if not isinstance(x, (list, tuple)) else np.shape(x)


def ndim_of(x):
  return len(shape_of(x))


def canonicalize_axis(axis, ndim):
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim if ndim else axis


def shape_tracer_error(shape):
  """JAX's error for a shape holding a traced value: a TypeError saying how to fix it."""
  return TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                   f"{shape}.\nIf using `jit`, try using `static_argnums` or applying `jit` to "
                   "smaller subfunctions.")


def static_dim(d, shape):
  """One dimension of `shape` as an int; a traced one raises shape_tracer_error."""
  if isinstance(d, core.Tracer):
    raise shape_tracer_error(shape)
  return operator.index(d)


def static_int(x, what):
  """An int from a value that must be known at trace time."""
  if isinstance(x, core.Tracer):
    raise ConcretizationTypeError(x, f"The problem arose with the {what}.\n")
  return operator.index(x)


# ---- broadcasting and `where` on operands ------------------------------------------------------
def broadcast_shapes(*shapes):
  """The broadcast shape of several shapes."""
  try:
    if any(mlir.is_symbolic(d) for s in shapes for d in s):
      return _broadcast_symbolic(shapes)
    return tuple(int(d) for d in np.broadcast_shapes(*shapes))
  except ValueError:
    raise ValueError(f"Incompatible shapes for broadcasting: shapes={list(shapes)}") from None


def _broadcast_symbolic(shapes):
  """NumPy's broadcasting of shapes holding symbolic dimensions (jax.export): on each axis
  the sizes other than 1 must be equal."""
  rank = max(len(s) for s in shapes)
  out = []
  for i in range(rank):
    sizes = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
    sizes.discard(1)
    if len(sizes) > 1:
      raise ValueError("incompatible shapes")
    out.append(sizes.pop() if sizes else 1)
  return tuple(out)


def _broadcast_to(arr, shape, out_sharding=None):
  """broadcast_to for an operand (an Array, tracer or Literal): NumPy's rules, one
  broadcast_in_dim (none if the shape already agrees)."""
  if isinstance(shape, int):
    shape = (shape,)
  shape = tuple(d if mlir.is_symbolic(d) else static_dim(d, shape) for d in shape)
  s = shape_of(arr)
  if s == shape and (out_sharding is None or
                    getattr(core.get_aval(arr), "sharding", None) == out_sharding):
    return arr
  nlead = len(shape) - len(s)
  if nlead < 0 or any(d != 1 and d != t for d, t in zip(s, shape[nlead:])):
    raise ValueError(f"Incompatible shapes for broadcasting: {s} and requested shape {shape}")
  # One broadcast_in_dim, size-1 axes expanding in place (as JAX's lax.broadcast_to emits).
  return shape_ops.broadcast_in_dim(arr, shape, tuple(range(nlead, len(shape))),
                                    out_sharding=out_sharding)


def _broadcast_all(*args):
  """Broadcast operands to a common shape (those already of that shape are passed through)."""
  shapes = [shape_of(a) for a in args]
  if all(s == shapes[0] for s in shapes[1:]):
    return list(args)
  result = broadcast_shapes(*shapes)
  sharding = None
  if core.sharding_typing.on:   # (shardings in types: the broadcast's, as JAX's)
    sharding = broadcast_shardings([core.get_aval(a) for a in args])
  return [_broadcast_to(a, result, out_sharding=sharding) for a in args]


@jit
def _where(condition, x, y):
  """jnp.where's three-argument form (a `jit` equation named `_where` in jaxprs, as in JAX)."""
  condition, x, y = ensure_arraylike("where", condition, x, y)
  if x is None or y is None:
    raise ValueError(f"where takes both x and y or neither of them; got x={x}, y={y}.")
  caval = core.get_aval(condition)
  if caval.dtype != np.bool_:
    condition = lax.ne(condition, lax.scalar_literal(0, caval.dtype, caval.weak_type))
  x, y = promote_dtypes(x, y)
  if not caval.shape:
    x, y = _broadcast_all(x, y)
  else:
    condition, x, y = _broadcast_all(condition, x, y)
  if 0 in shape_of(x):
    return x   # nothing to select
  return lax.select(condition, x, y)
