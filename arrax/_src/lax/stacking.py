"""The tile, stack, unstack and copy primitives, with lax's wrappers (`lax.tile`, `lax.stack`,
`lax.unstack`) over them.

JAX binds these as primitives of their own (jnp.tile, jnp.unstack, jnp.indices, jnp.copy, ...
trace to `tile[reps=...]`, `stack[axis=...]`, `unstack[axis=...]`, `copy`), so arrax does too:
jaxprs print the same. Each lowers to a few StableHLO reshapes, broadcasts, slices and
concatenations; all four are linear.
"""
from __future__ import annotations

import operator

from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, core, mlir
from arrax._src.core import ShapedArray
from arrax._src.lax import reductions, shape_ops, utils
from arrax._src.lax.utils import asarray_operand

__all__ = ["stack", "tile", "unstack"]


def _prim(name, abstract_eval, lowering, multiple_results=False):
  prim = core.Primitive(name)
  prim.def_abstract_eval(abstract_eval)
  prim.def_lowering(lowering)
  prim.multiple_results = multiple_results
  return prim


def _ir_type(shape, aval):
  return mlir.aval_to_ir_type(ShapedArray(tuple(shape), aval.dtype))


# ---- tile -------------------------------------------------------------------------------------
def _tile_abstract_eval(x, *, reps):
  if x.ndim != len(reps):
    raise TypeError(f"reps length must be equal to the ndim of x, got len(reps)={len(reps)} "
                    f"and x.ndim={x.ndim}.")
  return ShapedArray(tuple(int(d) * int(r) for d, r in zip(x.shape, reps)), x.dtype,
                     x.weak_type)


def _tile_lower(ctx, x, *, reps):
  aval = ctx.avals_in[0]
  # (d0, d1, ...) -> (1, d0, 1, d1, ...) -> broadcast to (r0, d0, r1, d1, ...) -> output.
  spread = tuple(k for d in aval.shape for k in (1, d))
  tiled = tuple(k for r, d in zip(reps, aval.shape) for k in (r, d))
  y = hlo.reshape(_ir_type(spread, aval), x)
  y = hlo.broadcast_in_dim(_ir_type(tiled, aval), y, mlir.dense_i64(range(len(tiled))))
  return [hlo.reshape(mlir.aval_to_ir_type(ctx.avals_out[0]), y)]


tile_p = _prim("tile", _tile_abstract_eval, _tile_lower)


def _tile_batch(args, dims, *, reps):
  (x,), (bd,) = args, dims
  reps = list(reps)
  reps.insert(bd, 1)
  return tile(x, reps), bd


def _tile_transpose(ct, x, *, reps):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval)]
  if not ad.is_undefined(x):
    return [None]
  shape = x.aval.shape
  ct = shape_ops.reshape(ct, tuple(k for r, d in zip(reps, shape) for k in (r, d)))
  return [reductions.reduce_sum(ct, tuple(2 * i for i in range(len(shape))))]


tile_p.def_batch(_tile_batch)
ad.deflinear2(tile_p, _tile_transpose)


def tile(operand, reps):
  """Repeat `operand` reps[i] times along each axis i (len(reps) must equal operand.ndim)."""
  return tile_p.bind(asarray_operand(operand), reps=tuple(reps))


# ---- stack ------------------------------------------------------------------------------------
def _stack_abstract_eval(*xs, axis):
  if not xs:
    raise ValueError("stack expects at least one operand, got 0.")
  if len({x.ndim for x in xs}) != 1:
    raise ValueError("Cannot stack arrays with different numbers of dimensions: got "
                     + ", ".join(str(x.shape) for x in xs) + ".")
  if len({x.shape for x in xs}) != 1:
    raise ValueError("All input arrays must have the same shape. Got "
                     + ", ".join(str(x.shape) for x in xs) + ".")
  if len({x.dtype for x in xs}) != 1:
    raise TypeError("lax.stack requires arguments to have the same dtypes, got "
                    + ", ".join(x.dtype.name for x in xs) + ".")
  shape = list(xs[0].shape)
  shape.insert(axis, len(xs))
  return ShapedArray(tuple(shape), xs[0].dtype, all(x.weak_type for x in xs))


def _stack_lower(ctx, *xs, axis):
  aval = ctx.avals_in[0]
  shape = list(aval.shape)
  shape.insert(axis, 1)
  dims = [i for i in range(aval.ndim + 1) if i != axis]
  parts = [hlo.broadcast_in_dim(_ir_type(shape, aval), x, mlir.dense_i64(dims)) for x in xs]
  return [hlo.concatenate(parts, mlir.i64_attr(axis))]


stack_p = _prim("stack", _stack_abstract_eval, _stack_lower)


def _stack_batch_rule(args, dims, *, axis):
  bd = dims[0]
  if bd is not None and all(d == bd for d in dims):
    if axis <= bd:
      return stack_p.bind(*args, axis=axis), bd + 1
    return stack_p.bind(*args, axis=axis + 1), bd
  size = next(core.get_aval(x).shape[d] for x, d in zip(args, dims) if d is not None)
  xs = [shape_ops.broadcast(x, (size,)) if d is None else batching.moveaxis(x, d, 0)
        for x, d in zip(args, dims)]
  return stack_p.bind(*xs, axis=axis + 1), 0


def _stack_transpose(ct, *xs, axis):
  if type(ct) is ad.Zero:
    return [ad.Zero(x.aval) if ad.is_undefined(x) else None for x in xs]
  return unstack_p.bind(ct, axis=axis)


stack_p.def_batch(_stack_batch_rule)
ad.deflinear2(stack_p, _stack_transpose)


def stack(operands, axis=0):
  """Join arrays of one shape and dtype along a new axis `axis`."""
  operands = [asarray_operand(x) for x in operands]
  if not operands:
    raise ValueError("stack expects at least one operand, got 0.")
  axis = utils.canonicalize_axis(axis, core.get_aval(operands[0]).ndim + 1)
  return stack_p.bind(*operands, axis=axis)


# ---- unstack ----------------------------------------------------------------------------------
def _unstack_abstract_eval(x, *, axis):
  if x.ndim == 0:
    raise ValueError(f"unstack requires arrays with rank > 0, however a scalar array of shape "
                     f"{x.shape} was passed.")
  shape = list(x.shape)
  n = shape.pop(axis)
  return [ShapedArray(tuple(shape), x.dtype, x.weak_type) for _ in range(n)]


def _unstack_lower(ctx, x, *, axis):
  aval = ctx.avals_in[0]
  starts, limits = [0] * aval.ndim, list(aval.shape)
  piece = list(aval.shape)
  piece[axis] = 1
  outs = []
  for i, out_aval in enumerate(ctx.avals_out):
    starts[axis], limits[axis] = i, i + 1
    y = hlo.slice(x, mlir.dense_i64(starts), mlir.dense_i64(limits),
                  mlir.dense_i64([1] * aval.ndim))
    outs.append(hlo.reshape(mlir.aval_to_ir_type(out_aval), y))
  return outs


unstack_p = _prim("unstack", _unstack_abstract_eval, _unstack_lower, multiple_results=True)


def _unstack_batch(args, dims, *, axis):
  (x,), (bd,) = args, dims
  n = core.get_aval(x).shape[axis if bd is None or axis < bd else axis + 1]
  if bd is None:
    return unstack_p.bind(x, axis=axis), [None] * n
  if axis < bd:
    return unstack_p.bind(x, axis=axis), [bd - 1] * n
  return unstack_p.bind(x, axis=axis + 1), [bd] * n


def _unstack_transpose(cts, x, *, axis):
  if all(type(c) is ad.Zero for c in cts):
    return [ad.Zero(x.aval)]
  return [stack_p.bind(*[ad.instantiate(c) for c in cts], axis=axis)]


unstack_p.def_batch(_unstack_batch)
ad.deflinear2(unstack_p, _unstack_transpose)


def unstack(x, axis=0):
  """The slices of `x` along `axis`, as a tuple of arrays of one rank less."""
  x = asarray_operand(x)
  axis = utils.canonicalize_axis(operator.index(axis), core.get_aval(x).ndim)
  return tuple(unstack_p.bind(x, axis=axis))


# ---- copy -------------------------------------------------------------------------------------
copy_p = _prim("copy", lambda x: x, lambda ctx, x: [x])
copy_p.def_batch(lambda args, dims: (copy_p.bind(*args), dims[0]))
ad.deflinear(copy_p, lambda ct, x: [copy_p.bind(ad.instantiate(ct))])


def copy(x):
  """A copy of the array `x` (a new buffer; under a trace, a `copy` equation)."""
  return copy_p.bind(asarray_operand(x))

