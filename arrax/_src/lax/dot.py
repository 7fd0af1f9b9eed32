"""dot_general: tensor contraction with batch dimensions, and lax's dot wrappers over it.

dimension_numbers are ((lhs_contracting, rhs_contracting), (lhs_batch, rhs_batch)) as tuples
of ints. The result's axes are the batch axes, then lhs's free axes, then rhs's free axes.
Mixed input dtypes are allowed where XLA allows them: the result takes the "wider" dtype.

dot_general is bilinear: its JVP is dot(t_lhs, rhs) + dot(lhs, t_rhs); the transpose in one
operand contracts the cotangent with the other operand, with the dimension numbers JAX computes,
then permutes the axes back (and converts to the operand's dtype if needed).
"""
from __future__ import annotations

import enum
import operator

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, core, dtypes, mlir
from arrax._src.config import config
from arrax._src.core import ShapedArray
from arrax._src.lax import elementwise as lax_api
from arrax._src.lax import shape_ops, utils
from arrax._src.lax.utils import asarray_operand

__all__ = ["Precision", "batch_matmul", "dot", "dot_general"]


class Precision(enum.Enum):
  """How precisely matrix products are computed on accelerators (no effect on CPU)."""
  DEFAULT = 0
  HIGH = 1
  HIGHEST = 2

  @classmethod
  def _missing_(cls, value):
    return _PRECISION_NAMES.get(value)

  def __repr__(self):
    return f"Precision.{self.name}"

  def __str__(self):
    return self.name


_PRECISION_NAMES = {
    "highest": Precision.HIGHEST, "float32": Precision.HIGHEST,
    "high": Precision.HIGH, "bfloat16_3x": Precision.HIGH, "tensorfloat32": Precision.HIGH,
    "default": Precision.DEFAULT, "bfloat16": Precision.DEFAULT, "fastest": Precision.DEFAULT,
    None: Precision.DEFAULT,
}


def canonicalize_precision(precision):
  """None, or a pair of Precisions, from the forms lax accepts (a name, a Precision, pairs)."""
  if precision is None:
    default = config.jax_default_matmul_precision
    if default is None:
      return None
    try:
      return canonicalize_precision(default)
    except ValueError:
      raise ValueError(f"jax_default_matmul_precision must be None or one of "
                       f"{list(_PRECISION_NAMES)}, got {default!r}") from None
  if isinstance(precision, str) and precision in _PRECISION_NAMES:
    return Precision(precision), Precision(precision)
  if isinstance(precision, Precision):
    return precision, precision
  if isinstance(precision, (list, tuple)) and len(precision) == 2:
    if all(isinstance(p, Precision) for p in precision):
      return tuple(precision)
    if all(isinstance(p, str) for p in precision):
      return tuple(canonicalize_precision(p)[0] for p in precision)
  raise ValueError(f"precision must be None, a name in {list(_PRECISION_NAMES)}, a "
                   f"lax.Precision, or a pair of Precisions or names; got {precision!r}")


# ---- the primitive ----------------------------------------------------------------------------
def _check_dims(side, dims, ndim):
  contracting, batch = dims
  if not all(0 <= d < ndim for d in (*contracting, *batch)):
    raise TypeError(f"dot_general {side} dimension numbers must lie in [0, {ndim}) for the "
                    f"{side} of rank {ndim}; got {side}_batch {batch} and {side}_contracting "
                    f"{contracting}")
  if len(set(batch)) != len(batch) or len(set(contracting)) != len(contracting):
    raise TypeError(f"dot_general {side} batch and contracting dimensions must each be "
                    f"distinct, got {side}_batch {batch} and {side}_contracting {contracting}.")
  if set(batch) & set(contracting):
    raise TypeError(f"dot_general {side} batch dimensions {batch} overlap its contracting "
                    f"dimensions {contracting}.")


def _dot_general_shape(lhs, rhs, dimension_numbers):
  (lc, rc), (lb, rb) = dimension_numbers
  _check_dims("lhs", (lc, lb), lhs.ndim)
  _check_dims("rhs", (rc, rb), rhs.ndim)
  if len(lb) != len(rb):
    raise TypeError(f"dot_general needs as many lhs batch dimensions as rhs ones, got "
                    f"lhs_batch {lb} and rhs_batch {rb}.")
  lb_shape, rb_shape = tuple(lhs.shape[i] for i in lb), tuple(rhs.shape[i] for i in rb)
  if lb_shape != rb_shape:
    raise TypeError(f"dot_general batch dimensions differ in size: lhs {lb_shape} and rhs "
                    f"{rb_shape} (shapes {lhs.shape} and {rhs.shape}).")
  lc_shape, rc_shape = tuple(lhs.shape[i] for i in lc), tuple(rhs.shape[i] for i in rc)
  if lc_shape != rc_shape:
    raise TypeError(f"dot_general contracting dimensions differ in size: lhs {lc_shape} and "
                    f"rhs {rc_shape} (shapes {lhs.shape} and {rhs.shape}).")
  return lb_shape + _free(lhs.shape, lc + lb) + _free(rhs.shape, rc + rb)


def _free(shape, used):
  """The sizes of the axes not in `used`."""
  return tuple(d for i, d in enumerate(shape) if i not in set(used))


def _bit_width(dt):
  return 1 if dt == np.bool_ else 8 * dt.itemsize


def _rank(dt):
  """How XLA orders dtypes when a dot mixes them: complex, exponent and mantissa range, width,
  signedness (the larger tuple wins)."""
  real = np.dtype(np.float32 if dt == dtypes.complex64 else np.float64) if dt.kind == "c" else dt
  is_float = dtypes.is_float(real)
  return (dt.kind == "c", dtypes.finfo(real).maxexp if is_float else -1,
          dtypes.finfo(real).nmant if is_float else -1, _bit_width(real), real.kind != "u")


def _dot_general_dtype(lhs, rhs, preferred_element_type):
  lr, rr = _rank(lhs.dtype), _rank(rhs.dtype)
  if lr == rr and lhs.dtype != rhs.dtype:
    raise TypeError(f"lax.dot_general cannot mix dtypes {lhs.dtype.name} and "
                    f"{rhs.dtype.name}")
  dt = lhs.dtype if lr >= rr else rhs.dtype
  pet = preferred_element_type
  if pet is None or pet == dt:
    return dt
  if not dtypes.is_float(dt) and _bit_width(np.dtype(pet)) < _bit_width(dt):
    raise TypeError(f"preferred_element_type {np.dtype(pet).name} is narrower than the "
                    f"result dtype {dt.name} of the dot.")
  return np.dtype(pet)


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision,
                               preferred_element_type, out_sharding):
  shape = _dot_general_shape(lhs, rhs, dimension_numbers)
  dt = _dot_general_dtype(lhs, rhs, preferred_element_type)
  return ShapedArray(shape, dt, utils.weak_of([lhs, rhs]))


def _precision_attr(precision):
  pair = (Precision.DEFAULT, Precision.DEFAULT) if precision is None else precision
  return ir.ArrayAttr.get([hlo.PrecisionAttr.get(p.name) for p in pair])


def _dot_general_lower(ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type,
                       out_sharding):
  lhs_aval, rhs_aval = ctx.avals_in
  out = ctx.avals_out[0]
  if lhs_aval.dtype != rhs_aval.dtype:
    # CPU and GPU codegen want one input dtype: compute in the result dtype.
    lhs = hlo.convert(mlir.aval_to_ir_type(lhs_aval.update(dtype=out.dtype)), lhs)
    rhs = hlo.convert(mlir.aval_to_ir_type(rhs_aval.update(dtype=out.dtype)), rhs)
  (lc, rc), (lb, rb) = dimension_numbers
  dnums = hlo.DotDimensionNumbers.get(
      lhs_batching_dimensions=list(lb), rhs_batching_dimensions=list(rb),
      lhs_contracting_dimensions=list(lc), rhs_contracting_dimensions=list(rc))
  return [hlo.dot_general(mlir.aval_to_ir_type(out), lhs, rhs, dnums,
                          precision_config=_precision_attr(precision))]


def _dot_general_pp(params):
  # None-valued params are not shown; dimension numbers print as lists.
  shown = {k: v for k, v in params.items() if v is not None and k != "out_sharding"}
  (lc, rc), (lb, rb) = params["dimension_numbers"]
  shown["dimension_numbers"] = ((list(lc), list(rc)), (list(lb), list(rb)))
  return shown


dot_general_p = core.Primitive("dot_general")
dot_general_p.def_abstract_eval(_dot_general_abstract_eval)
dot_general_p.def_lowering(_dot_general_lower)
dot_general_p.def_pp_params(_dot_general_pp)


def _bump(dims, bd):
  """Axis numbers after inserting an axis at `bd`."""
  return tuple(d + (d >= bd) for d in dims)


def _dot_general_batch(args, dims, *, dimension_numbers, precision, preferred_element_type,
                       out_sharding):
  (lhs, rhs), (lbd, rbd) = args, dims
  (lc, rc), (lb, rb) = dimension_numbers
  if lbd is not None and rbd is not None:
    # Both mapped: the mapped axes become a leading dot batch dimension.
    lb, rb = (lbd,) + _bump(lb, lbd), (rbd,) + _bump(rb, rbd)
    lc, rc = _bump(lc, lbd), _bump(rc, rbd)
    out_bd = 0
  elif lbd is not None:
    # Only lhs mapped: its mapped axis is a free axis of lhs, kept in place among them.
    lhs_free = [d for d in range(core.get_aval(lhs).ndim - 1) if d not in lb and d not in lc]
    out_bd = len(lb) + sum(d < lbd for d in lhs_free)
    lb, lc = _bump(lb, lbd), _bump(lc, lbd)
  else:
    rhs_free = [d for d in range(core.get_aval(rhs).ndim - 1) if d not in rb and d not in rc]
    out_bd = core.get_aval(lhs).ndim - len(lc) + sum(d < rbd for d in rhs_free)
    rb, rc = _bump(rb, rbd), _bump(rc, rbd)
  out = dot_general_p.bind(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)), precision=precision,
                           preferred_element_type=preferred_element_type,
                           out_sharding=out_sharding)
  return out, out_bd


dot_general_p.def_batch(_dot_general_batch)


def _dot_jvp_lhs(t, lhs, rhs, **params):
  return dot_general_p.bind(t, rhs, **params)


def _dot_jvp_rhs(t, lhs, rhs, **params):
  return dot_general_p.bind(lhs, t, **params)


ad.defjvp(dot_general_p, _dot_jvp_lhs, _dot_jvp_rhs)


def _ranges_like(*xs):
  start = 0
  for x in xs:
    yield range(start, start + len(x))
    start += len(x)


def _dot_transpose_lhs(ct, x_aval, y, *, dimension_numbers, precision,
                       preferred_element_type, swap_ans=False):
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  x_kept = [i for i in range(x_aval.ndim) if i not in x_contract and i not in x_batch]
  y_kept = [i for i in range(core.get_aval(y).ndim) if i not in y_contract and i not in y_batch]
  if swap_ans:
    ans_batch, ans_y, _ = _ranges_like(x_batch, y_kept, x_kept)
  else:
    ans_batch, _, ans_y = _ranges_like(x_batch, x_kept, y_kept)
  dims = ((ans_y, y_kept), (ans_batch, y_batch))
  x_contract_sorted_by_y = list(np.take(x_contract, np.argsort(y_contract)))
  out_axes = np.argsort(list(x_batch) + x_kept + x_contract_sorted_by_y)
  out = dot_general(ct, y, dims, precision=precision,
                    preferred_element_type=preferred_element_type)
  x_bar = shape_ops.transpose(out, tuple(out_axes))
  if core.get_aval(x_bar).dtype != x_aval.dtype:
    x_bar = lax_api._convert_element_type(x_bar, x_aval.dtype, x_aval.weak_type)
  return x_bar


def _dot_general_transpose(ct, lhs, rhs, *, dimension_numbers, precision,
                           preferred_element_type, out_sharding):
  if ad.is_undefined(lhs) and ad.is_undefined(rhs):
    raise NotImplementedError("dot_general is bilinear: it can be transposed in one operand "
                              "only")
  if ad.is_undefined(lhs):
    return [_dot_transpose_lhs(ct, lhs.aval, rhs, dimension_numbers=dimension_numbers,
                               precision=precision,
                               preferred_element_type=preferred_element_type), None]
  (x_contract, y_contract), (x_batch, y_batch) = dimension_numbers
  swapped = ((y_contract, x_contract), (y_batch, x_batch))
  return [None, _dot_transpose_lhs(ct, rhs.aval, lhs, dimension_numbers=swapped,
                                   precision=precision,
                                   preferred_element_type=preferred_element_type,
                                   swap_ans=True)]


dot_general_p.def_transpose(_dot_general_transpose)


# ---- wrappers ---------------------------------------------------------------------------------
def _index_tuple(xs):
  return (operator.index(xs),) if isinstance(xs, int) else tuple(operator.index(x) for x in xs)


def dot(lhs, rhs, *, dimension_numbers=None, precision=None, preferred_element_type=None,
        out_sharding=None):
  """Contract `lhs` with `rhs`: a vector/matrix product unless `dimension_numbers` is given."""
  if out_sharding is not None:
    raise NotImplementedError("dot: explicit output shardings are not supported by arrax.")
  lhs, rhs = asarray_operand(lhs), asarray_operand(rhs)
  lshape, rshape = core.get_aval(lhs).shape, core.get_aval(rhs).shape
  if dimension_numbers is None:
    if 1 <= len(lshape) <= 2 and 1 <= len(rshape) <= 2 and lshape[-1] == rshape[0]:
      dimension_numbers = (((len(lshape) - 1,), (0,)), ((), ()))
    else:
      raise ValueError("lax.dot needs dimension_numbers unless it is an unbatched vector or "
                       f"matrix product; got lhs_shape={lshape} rhs_shape={rshape}")
  (lc, rc), (lb, rb) = dimension_numbers
  dnums = ((_index_tuple(lc), _index_tuple(rc)), (_index_tuple(lb), _index_tuple(rb)))
  if preferred_element_type is not None:
    preferred_element_type = dtypes.check_user_dtype(preferred_element_type, "dot")
  return dot_general_p.bind(lhs, rhs, dimension_numbers=dnums,
                            precision=canonicalize_precision(precision),
                            preferred_element_type=preferred_element_type, out_sharding=None)


def dot_general(lhs, rhs, dimension_numbers, precision=None, preferred_element_type=None, *,
                out_sharding=None):
  """Contract `lhs` and `rhs` over ((lhs_contract, rhs_contract), (lhs_batch, rhs_batch))."""
  return dot(lhs, rhs, dimension_numbers=dimension_numbers, precision=precision,
             preferred_element_type=preferred_element_type, out_sharding=out_sharding)


def batch_matmul(lhs, rhs, precision=None):
  """Matrix products of the last two axes, batched over all leading axes."""
  lnd, rnd = core.get_aval(lhs).ndim, core.get_aval(rhs).ndim
  if min(lnd, rnd) < 2:
    raise ValueError(f"batch_matmul needs arguments of rank at least 2, got {lnd}, {rnd}")
  if lnd != rnd:
    raise ValueError(f"batch_matmul needs arguments of one rank, got {lnd}, {rnd}")
  batch = tuple(range(lnd - 2))
  return dot_general(lhs, rhs, (((lnd - 1,), (rnd - 2,)), (batch, batch)), precision=precision)
