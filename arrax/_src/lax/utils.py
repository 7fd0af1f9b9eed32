"""Helpers shared by the lax primitive families: dtype checks, shape rules, lowering glue."""
from __future__ import annotations

import operator

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import core, dtypes, mlir
from arrax._src.array import Array, device_put_value
from arrax._src.core import Literal, ShapedArray, Tracer
from arrax._src.sharding_impls import out_sharding_of
from arrax._src.tracing import JaxprTrace

# Dtype classes used in primitive signatures.
BOOL = "bool"
INT = "int"          # signed and unsigned integers
SIGNED = "signed"
FLOAT = "float"
COMPLEX = "complex"
NUM = (INT, FLOAT, COMPLEX)
ANY = (BOOL, INT, FLOAT, COMPLEX)
BOOL_OR_INT = (BOOL, INT)
ORDERED = (BOOL, INT, FLOAT)
INEXACT = (FLOAT, COMPLEX)


def dtype_class(dtype) -> str:
  dtype = np.dtype(dtype)
  if dtype == np.bool_:
    return BOOL
  if dtypes.is_float(dtype):
    return FLOAT
  if dtype.kind == "c":
    return COMPLEX
  if dtype.kind in "iu" or dtype in dtypes._intn_dtypes:
    return INT
  return "other"


def _class_names(classes):
  names = {BOOL: "bool", INT: "integer", SIGNED: "signed integer", FLOAT: "floating-point",
           COMPLEX: "complex"}
  return ", ".join(names[c] for c in classes)


def check_dtype(name, aval, classes, position=None):
  classes = (classes,) if isinstance(classes, str) else classes
  cls = dtype_class(aval.dtype)
  ok = cls in classes or (SIGNED in classes and cls == INT and aval.dtype.kind == "i")
  if not ok:
    where = f" at position {position}" if position is not None else ""
    raise TypeError(f"{name} does not accept dtype {aval.dtype.name}{where}. Accepted dtypes "
                    f"{'at position ' + str(position) + ' ' if position is not None else ''}"
                    f"are subtypes of {_class_names(classes)}.")


def broadcasting_shape(name, *avals):
  """The common shape of elementwise operands.

  Ranks must match, except that rank-0 operands broadcast; along each axis sizes must be equal
  or 1 (as JAX's lax allows).
  """
  shapes = [a.shape for a in avals if a.shape != ()]
  if not shapes:
    return ()
  ranks = {len(s) for s in shapes}
  if len(ranks) != 1:
    raise TypeError(f"{name}: arrays must have the same number of dimensions, got {ranks}")
  out = []
  for sizes in zip(*shapes):
    non_one = {d for d in sizes if d != 1}
    if len(non_one) > 1:
      raise TypeError(f"{name} got incompatible shapes for broadcasting: "
                      f"{', '.join(map(str, [a.shape for a in avals]))}.")
    out.append(non_one.pop() if non_one else 1)
  return tuple(out)


def same_dtypes(name, avals):
  dts = [a.dtype for a in avals]
  if any(d != dts[0] for d in dts[1:]):
    raise TypeError(f"lax.{name} requires arguments to have the same dtypes, got "
                    f"{', '.join(d.name for d in dts)}. (Tip: jnp.{name} is a similar function "
                    "that does automatic type promotion on inputs).")


def weak_of(avals):
  return all(a.weak_type for a in avals)


def broadcast_operand(ctx_aval_out, value, aval_in):
  """Broadcast an operand (rank 0, or with size-1 axes) to the output shape in a lowering."""
  if aval_in.shape == ctx_aval_out.shape:
    return value
  dims = range(len(aval_in.shape)) if aval_in.shape else []
  return mlir.broadcast_in_dim(ShapedArray(ctx_aval_out.shape, aval_in.dtype), value, dims)


def canonicalize_axis(axis, ndim):
  axis = operator.index(axis)   # (int() would truncate 1.5 and parse "1", as JAX does not)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis + ndim if axis < 0 else axis


def as_aval(x):
  return core.get_aval(x)


# ---- operands: Python scalars become literals -------------------------------------------------
def asarray_operand(x):
  """Python scalars -> weakly typed literal constants; arrays and tracers unchanged."""
  t = type(x)
  if t in dtypes.python_scalar_dtypes:
    dtypes.check_python_int(x)
    dt, weak = dtypes.dtype_and_weak_type(x)
    # The Python value is kept (JAX prints weak literals from it: `0.1:f32[]`).
    return Literal(x, ShapedArray((), dt, weak))
  if isinstance(x, (list, tuple)):
    raise TypeError(f"lax operations do not accept {t.__name__}s; use jnp.asarray first.")
  if getattr(t, "_symbolic_dim", False):   # a symbolic size (jax.export) used as a value
    return x.__jax_array__()
  return x


def scalar_literal(value, dtype, weak_type=False):
  """A rank-0 constant of `dtype` (no device transfer; becomes a jaxpr literal when traced)."""
  dtype = np.dtype(dtype)
  val = np.asarray(value, dtype)[()]
  # Weak literals hold Python scalars, so evaluating a jaxpr again keeps them weak.
  return Literal(val.item() if weak_type else val, ShapedArray((), dtype, weak_type))


def _host_cast(value, dtype):
  v = np.asarray(value)
  if v.dtype.kind == "c" and dtype.kind != "c":
    v = v.real
  return v.astype(dtype)


# ---- shape-argument helpers ------------------------------------------------------------------
def _is_array(x) -> bool:
  """Whether `x` is an arrax array or tracer (what JAX's `isinstance(x, Array)` accepts)."""
  return isinstance(x, (Array, Tracer))


def _aval(x) -> ShapedArray:
  return core.get_aval(x)


def _asarray(x):
  """`x` as an arrax array (host values and literals are copied to the device)."""
  if _is_array(x):
    return x
  if isinstance(x, Literal):
    return device_put_value(x.val, dtype=x.aval.dtype, weak_type=x.aval.weak_type)
  return device_put_value(x)


def _staging(x=None) -> bool:
  """Tracing into a jaxpr, where an identity broadcast of `x` is forwarded rather than recorded
  (a trace made with forward_identities=False records those of its own tracers)."""
  trace = core.current_trace()
  if isinstance(trace, JaxprTrace):
    return trace.forward_identities or getattr(x, "_trace", None) is not trace
  # Under another transformation, a value it does not carry (an unbatched value under vmap, a
  # primal without tangent under jvp) is bound at the jaxpr trace it belongs to, as in JAX.
  owner = getattr(x, "_trace", None)
  return isinstance(owner, JaxprTrace) and owner.forward_identities


def _canonicalize_shape(shape):
  """A tuple of Python ints from a shape-like value (an int counts as a 1-d shape)."""
  if isinstance(shape, int):
    shape = (shape,)
  try:
    return tuple(d if mlir.is_symbolic(d) else operator.index(d) for d in shape)
  except TypeError:
    raise TypeError(f"Shapes must be 1-d sequences of concrete integers, got {shape}.") from None


def _index_tuple(xs):
  return (operator.index(xs),) if isinstance(xs, int) else tuple(operator.index(x) for x in xs)


def _check_shapelike(fun, arg, obj):
  """`obj` must be a tuple/list/ndarray of nonnegative integers."""
  if not isinstance(obj, (tuple, list, np.ndarray)):
    raise TypeError(f"{fun} {arg} must be a tuple, list or ndarray, got {type(obj)}.")
  if np.ndim(obj) != 1 and len(obj):
    raise TypeError(f"{fun} {arg} must be one-dimensional, got {obj}.")
  for d in obj:
    if mlir.is_symbolic(d):   # a symbolic dimension (jax.export), >= 1 by assumption
      continue
    try:
      operator.index(d)
    except TypeError:
      raise TypeError(f"{fun} {arg} must contain only integers, got {tuple(obj)} with "
                      f"element types {tuple(type(e).__name__ for e in obj)}.") from None
  if any(d < 0 for d in obj):
    raise TypeError(f"{fun} {arg} must contain only nonnegative integers, got {tuple(obj)}.")


def _out_sharding(sharding, name="out_sharding"):
  """A user's out_sharding (None, a PartitionSpec over the context mesh or a NamedSharding)
  as the NamedSharding over an abstract mesh a primitive's `sharding` parameter holds."""
  return None if sharding is None else out_sharding_of(sharding, name)


def _prim(name, abstract_eval, lowering, pp_params=None, multiple_results=False):
  prim = core.Primitive(name)
  prim.def_abstract_eval(abstract_eval)
  prim.def_lowering(lowering)
  prim.def_pp_params(pp_params)
  prim.multiple_results = multiple_results
  return prim


def _out_type(ctx, i=0):
  return mlir.aval_to_ir_type(ctx.avals_out[i])


# ---- monoid reductions over axes (reduce_sum ... reduce_xor) ----------------------------------
def _supports_inf(dtype):
  return bool(np.isinf(np.asarray(np.inf, dtype).astype(np.float32)))


def _const_identity(value):
  return lambda dtype: np.asarray(value).astype(dtype)


_zero = _const_identity(0)


_one = _const_identity(1)


_all_ones = _const_identity(-1)    # bitwise-and identity: every bit set (True for bool)


def _scalar_type(dtype):
  return ir.RankedTensorType.get([], mlir.dtype_to_ir_type(dtype))


def _scalar_const(value, dtype):
  return mlir.ir_constant(np.asarray(value).astype(dtype))


def _number_check(name, aval):
  if aval.dtype == np.bool_ or not dtypes.issubdtype(aval.dtype, np.number):
    raise TypeError(f"{name} does not accept dtype {aval.dtype.name}. Accepted dtypes are "
                    "subtypes of number.")


def _reduced_shape(aval, axes):
  if len(axes) != len(set(axes)):
    raise ValueError(f"duplicate value in 'axes' of reduction: {axes}")
  if not all(0 <= a < aval.ndim for a in axes):
    raise ValueError(f"reduction axes {axes} contains out-of-bounds indices for {aval}.")
  return tuple(d for i, d in enumerate(aval.shape) if i not in axes)


def _reduction(name, check, shape_rule, body_for, identity, keep_weak=True, axes_check=None):
  prim = core.Primitive(name)

  def abstract_eval(aval, *, axes, **_):
    shape = shape_rule(aval, axes)
    check(name, aval)
    if axes_check is not None:
      axes_check(aval, axes)
    return ShapedArray(shape, aval.dtype, aval.weak_type and keep_weak)

  def lowering(ctx, x, *, axes, **_):
    out = ctx.avals_out[0]
    op = hlo.ReduceOp([mlir.aval_to_ir_type(out)], [x],
                      [_scalar_const(identity(out.dtype), out.dtype)], mlir.dense_i64(axes))
    body = body_for(out.dtype)
    mlir.make_reducer_region(op, out.dtype, lambda acc, xs: [body(acc[0], xs[0])])
    return [op.result]

  prim.def_abstract_eval(abstract_eval)
  prim.def_lowering(lowering)
  return prim


_fixed = lambda op: lambda dtype: op  # noqa: E731


def _reducer_batch(prim):
  """The batching rule of a reduction over `axes`: reduce the same axes of the batched operand;
  the batch axis keeps its place among the remaining axes."""
  def rule(args, dims, *, axes, **params):
    (x,), (bd,) = args, dims
    out_bd = bd - sum(a < bd for a in axes)
    # NumPy integers, as JAX's rule makes them (jaxprs print alike).
    axes = np.asarray(axes, np.int64)
    axes = tuple(np.where(axes < bd, axes, axes + 1))
    return prim.bind(x, axes=axes, **params), out_bd
  return rule


def _axes(axes):
  return tuple(operator.index(a) for a in axes)


def concrete_scalar(x):
  """The host value of a concrete rank-0 value, or None."""
  if isinstance(x, core.Tracer):
    return None
  if isinstance(x, core.Literal):
    return np.asarray(x.val)
  try:
    aval = core.get_aval(x)
  except TypeError:
    return None
  if aval.shape != ():
    return None
  return np.asarray(x._value if hasattr(x, "_value") else x)
