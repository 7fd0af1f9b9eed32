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
from typing import Any, NamedTuple

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, core, dtypes, mlir
from arrax._src.config import config
from arrax._src.core import ShapedArray
from arrax._src.lax import elementwise as lax_api
from arrax._src.lax import shape_ops, utils
from arrax._src.lax.utils import asarray_operand
from arrax._src.sharding_impls import NamedSharding, PartitionSpec

__all__ = ["DotAlgorithm", "DotAlgorithmPreset", "Precision", "batch_matmul", "dot",
           "dot_general"]


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
  """None, a pair of Precisions, or a dot algorithm, from the forms lax accepts (a name, a
  Precision, pairs of them, a DotAlgorithm, a DotAlgorithmPreset or a preset's name)."""
  if precision is None:
    default = config.jax_default_matmul_precision
    if default is None:
      return None
    try:
      return canonicalize_precision(default)
    except ValueError:
      raise ValueError(f"jax_default_matmul_precision must be None, one of "
                       f"{list(_PRECISION_NAMES)} or the name of a lax.DotAlgorithmPreset, "
                       f"got {default!r}") from None
  if isinstance(precision, str):
    if precision in _PRECISION_NAMES:
      return Precision(precision), Precision(precision)
    if precision in DotAlgorithmPreset.__members__:
      return DotAlgorithmPreset[precision]
  elif isinstance(precision, Precision):
    return precision, precision
  elif isinstance(precision, (DotAlgorithm, DotAlgorithmPreset)):
    return precision
  elif isinstance(precision, (list, tuple)) and len(precision) == 2:
    if all(isinstance(p, Precision) for p in precision):
      return tuple(precision)
    if all(isinstance(p, str) for p in precision):
      pair = tuple(canonicalize_precision(p) for p in precision)
      if not all(isinstance(p, tuple) for p in pair):
        raise TypeError(f"A pair of precisions takes lax.Precision names, not the names of "
                        f"dot algorithm presets; got {precision}.")
      return pair[0][0], pair[1][0]
  raise ValueError("precision must be one of:\n- None,\n"
                   f"- a string in {list(_PRECISION_NAMES)},\n"
                   "- a lax.Precision value,\n- a pair of lax.Precision values or strings,\n"
                   "- a lax.DotAlgorithmPreset or the name of one,\n- a lax.DotAlgorithm;\n"
                   f"got {precision}.")


def _is_algorithm(precision):
  return isinstance(precision, (DotAlgorithm, DotAlgorithmPreset))


# ---- dot algorithms ----------------------------------------------------------------------------
class DotAlgorithm(NamedTuple):
  """A dot-product algorithm: the types the operands are rounded to and the accumulator type,
  how many components each operand is split into and how many products are computed (to
  emulate higher precision), and whether a cheaper accumulation is allowed."""
  lhs_precision_type: Any
  rhs_precision_type: Any
  accumulation_type: Any
  lhs_component_count: int = 1
  rhs_component_count: int = 1
  num_primitive_operations: int = 1
  allow_imprecise_accumulation: bool = False

  def _convert_to_hlo_attr(self, lhs_dtype, rhs_dtype):
    del lhs_dtype, rhs_dtype
    return hlo.DotAlgorithm.get(
        mlir.dtype_to_ir_type(np.dtype(self.lhs_precision_type)),
        mlir.dtype_to_ir_type(np.dtype(self.rhs_precision_type)),
        mlir.dtype_to_ir_type(np.dtype(self.accumulation_type)),
        self.lhs_component_count, self.rhs_component_count, self.num_primitive_operations,
        self.allow_imprecise_accumulation)


_FLOAT8 = tuple(np.dtype(t) for t in dtypes._float8_dtypes)


class DotAlgorithmPreset(enum.Enum):
  """Named dot algorithms known to some platform: `LHS_RHS_ACCUMULATOR` types, with `_X3`,
  `_X6`, `_X9` for 3, 6 or 9 products emulating more precision, `FAST_ACCUM` for cheaper
  accumulation, `ANY_F8` for any float8 operands and `ANY` for the accumulator type given by
  `preferred_element_type`."""
  DEFAULT = enum.auto()
  ANY_F8_ANY_F8_F32 = enum.auto()
  ANY_F8_ANY_F8_F32_FAST_ACCUM = enum.auto()
  ANY_F8_ANY_F8_ANY = enum.auto()
  ANY_F8_ANY_F8_ANY_FAST_ACCUM = enum.auto()
  F16_F16_F16 = enum.auto()
  F16_F16_F32 = enum.auto()
  BF16_BF16_BF16 = enum.auto()
  BF16_BF16_F32 = enum.auto()
  BF16_BF16_F32_X3 = enum.auto()
  BF16_BF16_F32_X6 = enum.auto()
  BF16_BF16_F32_X9 = enum.auto()
  TF32_TF32_F32 = enum.auto()
  TF32_TF32_F32_X3 = enum.auto()
  F32_F32_F32 = enum.auto()
  F64_F64_F64 = enum.auto()

  def __repr__(self):
    return f"{type(self).__name__}.{self.name}"

  def __str__(self):
    return self.name

  @property
  def _any_input(self):
    return self.name == "DEFAULT" or self.name.startswith("ANY_F8")

  @property
  def supported_lhs_types(self):
    """The operand dtypes the algorithm takes (None: any)."""
    if self._any_input:
      return None
    first = self.name.split("_")[0]
    if first == "F16":
      return (np.float16,)
    if first == "BF16" and self.name in ("BF16_BF16_BF16", "BF16_BF16_F32"):
      return (dtypes.bfloat16, np.float32)
    if first == "F64":
      return (np.float64,)
    return (np.float32,)

  @property
  def supported_rhs_types(self):
    return self.supported_lhs_types

  @property
  def accumulation_type(self):
    """The accumulator dtype (None: chosen from the operands or preferred_element_type)."""
    if self.name in ("DEFAULT", "ANY_F8_ANY_F8_ANY", "ANY_F8_ANY_F8_ANY_FAST_ACCUM"):
      return None
    return {"F16_F16_F16": np.float16, "BF16_BF16_BF16": dtypes.bfloat16,
            "F64_F64_F64": np.float64}.get(self.name, np.float32)

  def supported_output_types(self, lhs_dtype, rhs_dtype):
    """The result dtypes the algorithm can produce for these operand dtypes (None: any)."""
    if self.name in ("ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM"):
      return (np.float32, np.float16, dtypes.bfloat16, *(np.dtype(t) for t in (
          "float8_e4m3fn", "float8_e5m2", "float8_e5m2fnuz", "float8_e4m3fnuz",
          "float8_e4m3b11fnuz")))
    narrow = {"F16_F16_F32": np.dtype(np.float16), "BF16_BF16_F32": dtypes.bfloat16}
    if self.name in narrow:
      both = dtypes.promote_types(lhs_dtype, rhs_dtype)
      return (np.float32, narrow[self.name]) if both == narrow[self.name] else (np.float32,)
    acc = self.accumulation_type
    return None if acc is None else (acc,)

  def _convert_to_hlo_attr(self, lhs_dtype, rhs_dtype):
    """The StableHLO dot algorithm attribute (None for DEFAULT)."""
    if self.name == "DEFAULT":
      return None
    if self.name.startswith("ANY_F8"):
      if np.dtype(lhs_dtype) not in _FLOAT8 or np.dtype(rhs_dtype) not in _FLOAT8:
        raise ValueError(f"The dot algorithm '{self}' requires both inputs to have float8 "
                         f"dtypes. Got {lhs_dtype} and {rhs_dtype} instead.")
      return hlo.DotAlgorithm.get(mlir.dtype_to_ir_type(np.dtype(lhs_dtype)),
                                  mlir.dtype_to_ir_type(np.dtype(rhs_dtype)),
                                  ir.F32Type.get(), 1, 1, 1,
                                  self.name == "ANY_F8_ANY_F8_F32_FAST_ACCUM")
    parts = self.name.split("_")
    ops = int(parts[3][1:]) if len(parts) == 4 else 1
    types = {"F16": ir.F16Type.get, "BF16": ir.BF16Type.get, "TF32": ir.FloatTF32Type.get,
             "F32": ir.F32Type.get, "F64": ir.F64Type.get}
    lhs, rhs, acc = (types[p]() for p in parts[:3])
    return hlo.DotAlgorithm.get(lhs, rhs, acc, 1, 1, ops, False)



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


def _dot_general_dtype(lhs, rhs, preferred_element_type, check_width=True):
  """The result dtype; `check_width` False (a dot algorithm given) allows a narrower integer
  preferred_element_type."""
  lr, rr = _rank(lhs.dtype), _rank(rhs.dtype)
  if lr == rr and lhs.dtype != rhs.dtype:
    raise TypeError(f"lax.dot_general cannot mix dtypes {lhs.dtype.name} and "
                    f"{rhs.dtype.name}")
  dt = lhs.dtype if lr >= rr else rhs.dtype
  pet = preferred_element_type
  if pet is None or pet == dt:
    return dt
  if check_width and not dtypes.is_float(dt) and _bit_width(np.dtype(pet)) < _bit_width(dt):
    raise TypeError("`preferred_element_type` must not be narrower than the original type, got "
                    f"preferred_element_type of {np.dtype(pet)} for result type of {dt}.")
  return np.dtype(pet)


def _dot_general_abstract_eval(lhs, rhs, *, dimension_numbers, precision,
                               preferred_element_type, out_sharding):
  shape = _dot_general_shape(lhs, rhs, dimension_numbers)
  dt = _dot_general_dtype(lhs, rhs, preferred_element_type, not _is_algorithm(precision))
  return ShapedArray(shape, dt, utils.weak_of([lhs, rhs]))


def _precision_attr(precision):
  """The precision_config pair (DEFAULT, DEFAULT when none or a dot algorithm is given)."""
  pair = (Precision.DEFAULT,) * 2 if precision is None or _is_algorithm(precision) else precision
  return ir.ArrayAttr.get([hlo.PrecisionAttr.get(p.name) for p in pair])


# The presets XLA:CPU computes as asked (it would silently ignore any other algorithm).
_CPU_PRESETS = ("DEFAULT", "F16_F16_F16", "F32_F32_F32", "F64_F64_F64", "BF16_BF16_F32",
                "BF16_BF16_F32_X3", "BF16_BF16_F32_X6")


def _convert_value(x, aval, dtype):
  """`x` (of `aval`) converted to `dtype` in the IR (nonzero -> True for bool)."""
  dtype = np.dtype(dtype)
  if aval.dtype == dtype:
    return x
  if dtype == np.bool_:   # (then an identity convert, as JAX emits)
    x = mlir.compare(x, mlir.full_like_aval(0, aval), "NE", aval.dtype)
  return hlo.convert(mlir.aval_to_ir_type(aval.update(dtype=dtype)), x)


def _algorithm_types(algorithm, lhs_dtype, rhs_dtype, out_dtype):
  """The (lhs, rhs, accumulation) dtypes a dot with `algorithm` computes in (None: unchanged);
  a preset keeps an input or output dtype it supports, else takes its first supported one."""
  if isinstance(algorithm, DotAlgorithm):
    return (algorithm.lhs_precision_type, algorithm.rhs_precision_type,
            algorithm.accumulation_type)

  def pick(dt, supported):
    if supported is None or np.dtype(dt) in [np.dtype(t) for t in supported]:
      return dt
    return supported[0]
  lhs_dtype = pick(lhs_dtype, algorithm.supported_lhs_types)
  rhs_dtype = pick(rhs_dtype, algorithm.supported_rhs_types)
  return lhs_dtype, rhs_dtype, pick(out_dtype, algorithm.supported_output_types(lhs_dtype,
                                                                                  rhs_dtype))


def _dot_general_lower(ctx, lhs, rhs, *, dimension_numbers, precision, preferred_element_type,
                       out_sharding):
  lhs_aval, rhs_aval = ctx.avals_in
  out = ctx.avals_out[0]
  acc = out
  extra = {}
  if _is_algorithm(precision):
    if not (isinstance(precision, DotAlgorithmPreset) and precision.name in _CPU_PRESETS):
      raise ValueError(f"The precision '{precision}' is not supported by dot_general on CPU")
    # The operands are converted to the algorithm's types, the product accumulated in its
    # accumulation type and converted to the result dtype.
    lt, rt, at = _algorithm_types(precision, lhs_aval.dtype, rhs_aval.dtype, out.dtype)
    lhs = _convert_value(lhs, lhs_aval, lt)
    rhs = _convert_value(rhs, rhs_aval, rt)
    if at is not None:
      acc = out.update(dtype=np.dtype(at))
    if precision is not DotAlgorithmPreset.DEFAULT:
      extra["algorithm"] = precision._convert_to_hlo_attr(lt, rt)
  elif lhs_aval.dtype != rhs_aval.dtype:
    # CPU and GPU codegen want one input dtype: compute in the result dtype.
    lhs = hlo.convert(mlir.aval_to_ir_type(lhs_aval.update(dtype=out.dtype)), lhs)
    rhs = hlo.convert(mlir.aval_to_ir_type(rhs_aval.update(dtype=out.dtype)), rhs)
  (lc, rc), (lb, rb) = dimension_numbers
  dnums = hlo.DotDimensionNumbers.get(
      lhs_batching_dimensions=list(lb), rhs_batching_dimensions=list(rb),
      lhs_contracting_dimensions=list(lc), rhs_contracting_dimensions=list(rc))
  result = hlo.dot_general(mlir.aval_to_ir_type(acc), lhs, rhs, dnums,
                           precision_config=_precision_attr(precision), **extra)
  return [_convert_value(result, acc, out.dtype)]


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
                       out_sharding, mesh_axis=None):
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
  if out_sharding is not None:   # (given for one example: the mapped axis goes in, as JAX's)
    ndim = core.get_aval(lhs).ndim + core.get_aval(rhs).ndim - 2 * len(lc) - len(lb) - 1
    out_sharding = batching.sharding_for_vmap(mesh_axis, out_sharding, out_bd, ndim)
  out = dot_general_p.bind(lhs, rhs, dimension_numbers=((lc, rc), (lb, rb)), precision=precision,
                           preferred_element_type=preferred_element_type,
                           out_sharding=out_sharding)
  return out, out_bd


dot_general_p.def_batch(_dot_general_batch)


@dot_general_p.def_batch_axis
def _dot_general_batch_axis(axis_data, args, dims, **params):
  if dims[0] is None and dims[1] is None:
    return dot_general_p.bind(*args, **params), None
  return _dot_general_batch(args, dims, mesh_axis=axis_data.explicit_mesh_axis, **params)


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


def _transpose_sharding(x_aval, ct, y, unsorted):
  """The out_sharding of a transposed dot_general: the primal operand's type sharding with its
  axes in the order the dot produces them (unsplit when it has none), as JAX's; None when no
  type is sharded."""
  xs = getattr(x_aval, "sharding", None)
  if xs is not None:
    return NamedSharding(xs.mesh, PartitionSpec(*(xs.spec[i] for i in unsorted)))
  for v in (ct, y):
    s = getattr(core.get_aval(v), "sharding", None) if not isinstance(v, ad.Zero) else None
    if s is not None:
      return NamedSharding(s.mesh, PartitionSpec(*[None] * x_aval.ndim))
  return None


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
  unsorted = list(x_batch) + x_kept + x_contract_sorted_by_y
  out_axes = np.argsort(unsorted)
  out = dot_general(ct, y, dims, precision=precision,
                    preferred_element_type=preferred_element_type,
                    out_sharding=_transpose_sharding(x_aval, ct, y, unsorted))
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
  out_sharding = utils._out_sharding(out_sharding)
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
                            preferred_element_type=preferred_element_type,
                            out_sharding=out_sharding)


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
