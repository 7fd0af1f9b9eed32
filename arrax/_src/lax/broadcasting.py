"""The shape primitives every other family's rules stand on: broadcast_in_dim, reshape, squeeze,
transpose, iota, and reduce_sum (broadcast_in_dim's transpose), with lax's wrappers over them.

They sit below the other lax families (elementwise, slicing, shape_ops, reductions, ...), whose
differentiation and batching rules broadcast, reshape and sum; and they register themselves with
the transformations (ad's zeros, batching's axis moves), which sit below lax and never import it.
"""
from __future__ import annotations

import builtins
import math
import operator

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, core, dtypes, mlir
from arrax._src.config import config
from arrax._src.core import ShapedArray
from arrax._src.lax import utils
from arrax._src.lax.utils import (_asarray, _aval, _axes, _canonicalize_shape, _check_shapelike,
                                  _fixed, _index_tuple, _is_array, _number_check,
                                  _out_type, _prim, _reduced_shape, _reducer_batch, _reduction,
                                  _staging, _zero, asarray_operand, scalar_literal)

__all__ = [
    "broadcast", "broadcast_in_dim", "broadcast_to_rank", "broadcasted_iota", "collapse",
    "expand_dims", "iota", "reduce_sum", "reshape", "squeeze", "transpose",
]


def _broadcast_in_dim_abstract_eval(x, *, shape, broadcast_dimensions, sharding):
  _check_shapelike("broadcast_in_dim", "shape", shape)
  _check_shapelike("broadcast_in_dim", "broadcast_dimensions", broadcast_dimensions)
  dims = tuple(broadcast_dimensions)
  if len(dims) != x.ndim:
    raise TypeError(f"broadcast_in_dim needs one broadcast dimension per operand axis; got "
                    f"broadcast_dimensions {dims} for an operand of shape {x.shape}.")
  if len(shape) < x.ndim:
    raise TypeError(f"broadcast_in_dim cannot lower the rank: operand shape {x.shape}, target "
                    f"shape {tuple(shape)}.")
  if not all(d < len(shape) for d in dims):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions {dims} name axes outside the "
                    f"target shape {tuple(shape)} (operand shape {x.shape}).")
  if not all(x.shape[i] in (1, shape[d]) for i, d in enumerate(dims)):
    raise TypeError(f"broadcast_in_dim: every operand axis must have size 1 or the size of its "
                    f"target axis; got operand shape {x.shape}, target shape {tuple(shape)}, "
                    f"broadcast_dimensions {dims}.")
  if len(set(dims)) != len(dims):
    raise TypeError(f"broadcast_in_dim broadcast_dimensions must be distinct, got {dims}.")
  return ShapedArray(shape, x.dtype, x.weak_type)


def _broadcast_in_dim_lower(ctx, x, *, shape, broadcast_dimensions, sharding):
  return [mlir.broadcast_in_dim(ctx.avals_out[0], x, broadcast_dimensions)]


def _broadcast_in_dim_pp(params):
  # The shape and sharding are implied by the result type; empty dimensions are not shown.
  return {"broadcast_dimensions": params["broadcast_dimensions"]} \
      if params["broadcast_dimensions"] else {}


broadcast_in_dim_p = _prim("broadcast_in_dim", _broadcast_in_dim_abstract_eval,
                           _broadcast_in_dim_lower, _broadcast_in_dim_pp)


def _broadcast_in_dim_batch(args, dims, *, shape, broadcast_dimensions, sharding):
  (x,), (bd,) = args, dims
  x = batching.moveaxis(x, bd, 0)
  aval = _aval(x)
  shape = aval.shape[:1] + tuple(shape)
  # NumPy integers in the shifted dimensions, as JAX's rule makes them (jaxprs print alike).
  bdims = (0,) + tuple(np.add(1, broadcast_dimensions))
  if _staging(x) and aval.shape == shape and list(bdims) == list(range(len(shape))):
    return x, 0
  return broadcast_in_dim_p.bind(x, shape=shape, broadcast_dimensions=bdims, sharding=None), 0


broadcast_in_dim_p.def_batch(_broadcast_in_dim_batch)


def _broadcast_in_dim_jvp(primals, tangents, *, shape, broadcast_dimensions, sharding):
  (x,), (t,) = primals, tangents
  params = dict(shape=shape, broadcast_dimensions=broadcast_dimensions, sharding=sharding)
  out = broadcast_in_dim_p.bind(x, **params)
  if type(t) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(_aval(out)))
  return out, broadcast_in_dim_p.bind(t, **params)


def _broadcast_in_dim_transpose(ct, x, *, shape, broadcast_dimensions, sharding):
  if not ad.is_undefined(x):
    return [None]
  # Sum over the new axes and the axes broadcast from size 1 (which are put back).
  unit_dims = [i for i, d in enumerate(x.aval.shape) if d == 1]
  kept = tuple(d for i, d in enumerate(broadcast_dimensions) if i not in unit_dims)
  axes = tuple(i for i in range(len(shape)) if i not in kept)
  return [expand_dims(reduce_sum(ct, axes), unit_dims)]


broadcast_in_dim_p.def_jvp(_broadcast_in_dim_jvp)
broadcast_in_dim_p.def_transpose(_broadcast_in_dim_transpose)


def broadcast_in_dim(operand, shape, broadcast_dimensions, *, out_sharding=None):
  """Broadcast `operand` to `shape`; operand axis i becomes result axis broadcast_dimensions[i]."""
  sharding = utils._out_sharding(out_sharding)
  shape = _canonicalize_shape(shape)
  dims = _index_tuple(broadcast_dimensions)
  if not isinstance(broadcast_dimensions, int):
    dims = tuple(broadcast_dimensions)   # NumPy integers are kept (and print) as in JAX
  operand = asarray_operand(operand)
  aval = _aval(operand)
  if aval.ndim == len(shape) and not dims and _is_array(operand) and sharding is None:
    return operand
  if (_staging(operand) and _is_array(operand) and aval.shape == shape
      and dims == tuple(range(len(shape))) and sharding is None):
    return operand   # an identity broadcast is forwarded while staging, as JAX does
  return broadcast_in_dim_p.bind(operand, shape=shape, broadcast_dimensions=dims,
                                 sharding=sharding)


def broadcast(operand, sizes, *, out_sharding=None):
  """Add leading axes of the given `sizes` to `operand`."""
  sizes = _canonicalize_shape(sizes)
  if not sizes and out_sharding is None:
    return _asarray(operand)
  shape = _aval(operand).shape
  dims = tuple(range(len(sizes), len(sizes) + len(shape)))
  return broadcast_in_dim(operand, sizes + shape, dims, out_sharding=out_sharding)


def broadcast_to_rank(x, rank):
  """Add leading axes of size 1 until `x` has `rank` axes."""
  ndim = _aval(x).ndim
  if ndim == rank:
    return _asarray(x)
  return broadcast(x, (1,) * (rank - ndim))


def expand_dims(array, dimensions):
  """Insert axes of size 1 at `dimensions` (positions in the result)."""
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"lax.expand_dims got a repeated axis: {dimensions}")
  shape = list(_aval(array).shape)
  ndim_out = len(shape) + len(dimensions)
  dims = [utils.canonicalize_axis(d, ndim_out) for d in dimensions]
  if len(set(dims)) != len(dims):
    raise ValueError(f"lax.expand_dims got a repeated axis: {dims}")
  for d in sorted(dims):
    shape.insert(d, 1)
  kept = [i for i in range(ndim_out) if i not in set(dims)]
  return broadcast_in_dim(array, shape, kept)


def _reshape_abstract_eval(x, *, new_sizes, dimensions, sharding):
  if not all(d >= 0 for d in new_sizes):
    raise TypeError(f"reshape new_sizes must be nonnegative, got {new_sizes}.")
  if dimensions is not None and sorted(dimensions) != list(range(x.ndim)):
    raise TypeError(f"reshape dimensions {dimensions} are not a permutation of the axes of "
                    f"an operand of shape {x.shape}.")
  if math.prod(new_sizes) != x.size:
    raise ValueError(f"reshape cannot change the number of elements: operand shape {x.shape} "
                     f"({x.size} elements), new_sizes {new_sizes} "
                     f"({math.prod(new_sizes)} elements).")
  return ShapedArray(new_sizes, x.dtype, x.weak_type)


def _reshape_lower(ctx, x, *, new_sizes, dimensions, sharding):
  if dimensions is not None:
    x = hlo.transpose(x, mlir.dense_i64(dimensions))
  return [mlir.reshape(ctx.avals_out[0], x)]


reshape_p = _prim("reshape", _reshape_abstract_eval, _reshape_lower)


def _reshape_batch(args, dims, *, new_sizes, dimensions, sharding):
  (x,), (bd,) = args, dims
  x = batching.moveaxis(x, bd, 0)
  if dimensions is not None:
    dimensions = (0,) + tuple(d + 1 for d in dimensions)
  return reshape(x, _aval(x).shape[:1] + tuple(new_sizes), dimensions), 0


reshape_p.def_batch(_reshape_batch)


def _reshape_transpose(ct, x, *, new_sizes, dimensions, sharding):
  if dimensions is None:
    return [reshape(ct, x.aval.shape)]
  out = reshape(ct, tuple(x.aval.shape[d] for d in dimensions))
  return [transpose(out, np.argsort(dimensions))]


ad.deflinear(reshape_p, _reshape_transpose)


def reshape(operand, new_sizes, dimensions=None, *, out_sharding=None):
  """Reshape `operand` to `new_sizes`, first transposing its axes by `dimensions` if given."""
  sharding = utils._out_sharding(out_sharding)
  new_sizes = _canonicalize_shape(new_sizes)
  operand = asarray_operand(operand)
  shape = _aval(operand).shape
  if dimensions is None:
    dims, same_dims = None, True
  else:
    dims = _index_tuple(dimensions)
    same_dims = dims == tuple(range(len(shape)))
  if shape and shape == new_sizes and same_dims and _is_array(operand) and sharding is None:
    return operand
  return reshape_p.bind(operand, new_sizes=new_sizes, dimensions=None if same_dims else dims,
                        sharding=sharding)


def collapse(operand, start_dimension, stop_dimension=None):
  """Merge axes [start_dimension, stop_dimension) of `operand` into one axis."""
  shape = _aval(operand).shape
  lo, hi, _ = builtins.slice(start_dimension, stop_dimension).indices(len(shape))
  if hi < lo:
    raise ValueError(f"collapse got an empty or reversed axis range "
                     f"[{start_dimension}:{stop_dimension}] for shape {shape}")
  return reshape(operand, shape[:lo] + (math.prod(shape[lo:hi]),) + shape[hi:])


def _squeeze_abstract_eval(x, *, dimensions):
  if len(set(dimensions)) != len(dimensions):
    raise ValueError(f"squeeze dimensions must be distinct, got {dimensions}")
  if not all(0 <= d < x.ndim for d in dimensions):
    raise ValueError(f"squeeze dimensions {dimensions} are out of range for shape {x.shape}")
  if any(x.shape[d] != 1 for d in dimensions):
    raise ValueError(f"squeeze can only remove axes of size 1; got shape {x.shape} and "
                     f"dimensions {dimensions}")
  shape = tuple(s for i, s in enumerate(x.shape) if i not in set(dimensions))
  return ShapedArray(shape, x.dtype, x.weak_type)


squeeze_p = _prim("squeeze", _squeeze_abstract_eval,
                  lambda ctx, x, *, dimensions: [mlir.reshape(ctx.avals_out[0], x)])


def _squeeze_batch(args, dims, *, dimensions):
  (x,), (bd,) = args, dims
  x = batching.moveaxis(x, bd, 0)
  return squeeze(x, tuple(d + 1 for d in dimensions)), 0


squeeze_p.def_batch(_squeeze_batch)


ad.deflinear(squeeze_p, lambda ct, x, *, dimensions: [expand_dims(ct, dimensions)])


def squeeze(array, dimensions):
  """Remove the axes `dimensions` (each of size 1) from `array`."""
  array = asarray_operand(array)
  ndim = _aval(array).ndim
  dims = tuple(sorted(utils.canonicalize_axis(d, ndim) for d in dimensions))
  if not dims and _is_array(array):
    return array
  return squeeze_p.bind(array, dimensions=dims)


def _transpose_abstract_eval(x, *, permutation):
  if not isinstance(permutation, (tuple, list, np.ndarray)):
    raise TypeError(f"transpose permutation must be a tuple, list or ndarray, got "
                    f"{type(permutation)}.")
  if tuple(sorted(permutation)) != tuple(range(x.ndim)):
    raise TypeError(f"transpose permutation {permutation} is not a permutation of the axes of "
                    f"an operand of shape {x.shape}.")
  return ShapedArray(tuple(x.shape[i] for i in permutation), x.dtype, x.weak_type)


transpose_p = _prim("transpose", _transpose_abstract_eval,
                    lambda ctx, x, *, permutation: [hlo.transpose(x, mlir.dense_i64(permutation))])


def _transpose_batch(args, dims, *, permutation):
  (x,), (bd,) = args, dims
  perm = (bd,) + tuple(p if p < bd else p + 1 for p in permutation)
  return transpose(x, perm), 0


transpose_p.def_batch(_transpose_batch)


ad.deflinear(transpose_p,
             lambda ct, x, *, permutation: [transpose(ct, np.argsort(permutation))])


def transpose(operand, permutation):
  """Permute the axes of `operand`: result axis i is operand axis permutation[i]."""
  permutation = tuple(operator.index(d) for d in permutation)
  operand = asarray_operand(operand)
  if permutation == tuple(range(_aval(operand).ndim)) and _is_array(operand):
    return operand
  return transpose_p.bind(operand, permutation=permutation)


def _iota_abstract_eval(*, dtype, shape, dimension, sharding):
  _check_shapelike("iota", "shape", shape)
  if utils.dtype_class(dtype) not in utils.NUM:
    raise TypeError(f"iota does not accept dtype {np.dtype(dtype).name}; it needs an integer, "
                    "floating or complex dtype.")
  if not 0 <= dimension < len(shape):
    raise ValueError(f"iota dimension {dimension} is out of range for shape {shape}")
  return ShapedArray(shape, dtype, False)


iota_p = _prim("iota", _iota_abstract_eval,
               lambda ctx, *, dtype, shape, dimension, sharding:
               [hlo.iota(_out_type(ctx), mlir.i64_attr(dimension))])


def _iota_batch(args, dims, **params):
  # iota has no operands, so it is never batched; vmap binds it unchanged.
  return iota_p.bind(**params), None


iota_p.def_batch(_iota_batch)


def broadcasted_iota(dtype, shape, dimension, *, out_sharding=None):
  """An array of `shape` whose values count 0, 1, ... along axis `dimension`."""
  dtype = dtypes.check_user_dtype(dtype, "broadcasted_iota")
  return iota_p.bind(dtype=dtype, shape=_canonicalize_shape(shape),
                     dimension=operator.index(dimension),
                     sharding=utils._out_sharding(out_sharding))


def iota(dtype, size):
  """The vector [0, 1, ..., size - 1] of `dtype`."""
  return broadcasted_iota(dtype, (size,), 0)


def _full(shape, value, dtype, weak_type=False):
  """`value` broadcast to `shape` (a literal when rank 0), like JAX's lax.full."""
  fill = scalar_literal(value, dtype, weak_type)
  if not shape:
    return fill
  return broadcast_in_dim_p.bind(fill, shape=tuple(shape), broadcast_dimensions=(),
                                 sharding=None)


def _full_like(x, value, shape=None, dtype=None):
  """`value` with the dtype (and weak type, unless `dtype` is given) and shape of `x`."""
  aval = _aval(x)
  weak = dtype is None and aval.weak_type
  return _full(aval.shape if shape is None else shape, value,
               aval.dtype if dtype is None else dtype, weak)


def _zero_scalar(x):
  """A strongly typed rank-0 zero of `x`'s dtype (JAX's `_const(x, 0)`)."""
  return scalar_literal(0, _aval(x).dtype)


def _broadcast_in_dim_keep(x, shape, dims, sharding=None):
  """broadcast_in_dim as lax's wrapper does it, keeping `dims` as given (JAX's transposes pass
  NumPy integers, which its jaxprs print as such)."""
  aval = _aval(x)
  if sharding is None:
    if aval.ndim == len(shape) and not len(dims) and (_is_array(x) or type(x) is core.Literal):
      return x
    if _staging(x) and _is_array(x) and aval.shape == tuple(shape) and \
        list(dims) == list(range(len(shape))):
      return x
  return broadcast_in_dim_p.bind(x, shape=tuple(shape), broadcast_dimensions=tuple(dims),
                                 sharding=sharding)


_allow_f16_reductions = config.flag("jax_allow_f16_reductions")


def _check_f16_sum(aval, axes):
  """With jax_allow_f16_reductions=False, a sum of float16/bfloat16 over a non-unit axis
  raises (as JAX's reduce_sum dtype rule)."""
  if (not _allow_f16_reductions.value and aval.dtype in (np.float16, dtypes.bfloat16)
      and not all(aval.shape[a] == 1 for a in axes)):
    raise ValueError(f"reduce_sum on operand {aval.str_short(True)} is not allowed when "
                     "jax_allow_f16_reductions=False.")


reduce_sum_p = _reduction("reduce_sum", _number_check, _reduced_shape, _fixed(hlo.add), _zero,
                          axes_check=_check_f16_sum)


def reduce_sum(operand, axes, *, out_sharding=None):
  """Sum of `operand` over `axes` (no upcasting of narrow dtypes)."""
  return reduce_sum_p.bind(asarray_operand(operand), axes=_axes(axes),
                           out_sharding=utils._out_sharding(out_sharding))


def _reduce_sum_transpose(ct, x, *, axes, out_sharding):
  shape = x.aval.shape
  dims = tuple(np.delete(np.arange(len(shape)), axes))
  # (the cotangent typed as the operand, as JAX's transpose asks)
  return [_broadcast_in_dim_keep(ct, shape, dims, x.aval.sharding)]


ad.deflinear(reduce_sum_p, _reduce_sum_transpose)


reduce_sum_p.def_batch(_reducer_batch(reduce_sum_p))

ad.register_zero_maker(broadcast_in_dim_p, scalar_literal)
batching.register_shape_ops(transpose_p, broadcast_in_dim_p)
