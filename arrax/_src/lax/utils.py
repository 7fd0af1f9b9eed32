"""Helpers shared by the lax primitive families: dtype checks, shape rules, lowering glue."""
from __future__ import annotations

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import core, dtypes, mlir
from arrax._src.core import ShapedArray

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
  if dtype.kind in "iu" or dtype in dtypes._int4_dtypes:
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
  out_t = mlir.aval_to_ir_type(ShapedArray(ctx_aval_out.shape, aval_in.dtype))
  dims = range(len(aval_in.shape)) if aval_in.shape else []
  return hlo.broadcast_in_dim(out_t, value, mlir.dense_i64(dims))


def canonicalize_axis(axis, ndim):
  axis = int(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis + ndim if axis < 0 else axis


def as_aval(x):
  return core.get_aval(x)
