"""Convolutions: the conv_general_dilated primitive, its rules and lax's convolution wrappers.

Dimension numbers are kept in the canonical form `ConvDimensionNumbers(lhs_spec, rhs_spec,
out_spec)`: for each operand, the axis numbers of (batch or output-feature, feature or
input-feature, spatial...), spatial axes listed in the kernel's order.

The primitive is bilinear. Its transposes are convolutions again (JAX's rules): the cotangent
of the input convolves the output cotangent with the spatially reversed kernel (strides become
input dilation); the cotangent of the kernel convolves the input with the output cotangent
(strides become kernel dilation). Feature groups in the forward direction become batch groups
for the kernel gradient and vice versa. On CPU, complex convolutions are computed with three
real ones, as JAX lowers them.
"""
from __future__ import annotations

import enum
import math
import operator
from collections.abc import Sequence
from typing import NamedTuple, Union

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, core, dtypes, mlir
from arrax._src.core import ShapedArray
from arrax._src.lax import broadcasting, shape_ops, utils
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax.utils import asarray_operand
from arrax._src.sharding_impls import NamedSharding, PartitionSpec, canonicalize_sharding

__all__ = [
    "ConvDimensionNumbers", "ConvGeneralDilatedDimensionNumbers", "conv", "conv_dimension_numbers",
    "conv_general_dilated", "conv_general_dilated_local", "conv_general_dilated_p",
    "conv_general_dilated_patches", "conv_general_permutations", "conv_general_shape_tuple",
    "conv_shape_tuple", "conv_transpose", "conv_transpose_shape_tuple",
    "conv_with_general_padding", "padtype_to_pads",
]


class ConvDimensionNumbers(NamedTuple):
  """The axes of a convolution's operands and result.

  lhs_spec: (batch axis, feature axis, spatial axes...) of the input;
  rhs_spec: (output-feature axis, input-feature axis, spatial axes...) of the kernel;
  out_spec: (batch axis, feature axis, spatial axes...) of the result.
  """
  lhs_spec: Sequence[int]
  rhs_spec: Sequence[int]
  out_spec: Sequence[int]


ConvGeneralDilatedDimensionNumbers = Union[tuple[str, str, str], ConvDimensionNumbers, None]


# ---- padding and shape arithmetic (host side) ------------------------------------------------
class PaddingType(enum.Enum):
  VALID = 1
  SAME = 2
  SAME_LOWER = 3


def padtype_to_pads(in_shape, window_shape, window_strides, padding):
  """(low, high) padding pairs per dimension for 'VALID', 'SAME' or 'SAME_LOWER'.

  'SAME' pads so that the output has ceil(in / stride) elements, the odd element going to the
  high side; 'SAME_LOWER' puts it on the low side; 'VALID' does not pad.
  """
  if isinstance(padding, str):
    try:
      padding = PaddingType[padding.upper()]
    except KeyError:
      raise RuntimeError("Unrecognized padding type: expected 'VALID', 'SAME', or "
                         f"'SAME_LOWER', got {padding}.") from None
  if padding in (PaddingType.SAME, PaddingType.SAME_LOWER):
    out = -np.floor_divide(np.negative(in_shape), window_strides)
    totals = [max(int(t), 0) for t in (out - 1) * window_strides + window_shape - in_shape]
    if padding is PaddingType.SAME:
      return [(t // 2, t - t // 2) for t in totals]
    return [(t - t // 2, t // 2) for t in totals]
  if padding is PaddingType.VALID:
    return [(0, 0)] * len(in_shape)
  raise TypeError(f"Unknown padding type: {padding}.")


def _dilate_dim(d, dilation):
  return d if dilation == 1 else max(1 + dilation * (d - 1), 0)


def _stride_dim(d, window, stride):
  return max((d - window) // stride + 1, 0)


def _dilate_shape(shape, dilation):
  if not np.all(np.greater(dilation, 0)):
    raise TypeError(f"All dilations must be positive, got {dilation}.")
  dilation = (1,) * (len(shape) - len(dilation)) + tuple(dilation)
  return tuple(map(_dilate_dim, shape, dilation))


def conv_shape_tuple(lhs_shape, rhs_shape, strides, pads, batch_group_count=1):
  """The result shape of a convolution with operands in the canonical (N, C, spatial...) and
  (O, I, spatial...) layouts."""
  if isinstance(pads, str):
    pads = padtype_to_pads(lhs_shape[2:], rhs_shape[2:], strides, pads)
  if len(pads) != len(lhs_shape) - 2:
    raise TypeError(f"Wrong number of explicit pads for convolution: expected "
                    f"{len(lhs_shape) - 2}, got {len(pads)}.")
  padded = np.add(lhs_shape[2:], np.sum(np.array(pads).reshape(-1, 2), axis=1))
  if np.any(padded < 0):
    raise ValueError("Negative padding is larger than the size of the corresponding dimension: "
                     f"got padding={pads} for lhs_shape[2:]={lhs_shape[2:]}")
  out_space = tuple(map(_stride_dim, padded, rhs_shape[2:], strides))
  if batch_group_count > 1:
    assert lhs_shape[0] % batch_group_count == 0
    batch = lhs_shape[0] // batch_group_count
  else:
    batch = lhs_shape[0]
  return (batch, rhs_shape[0]) + out_space


def conv_general_shape_tuple(lhs_shape, rhs_shape, window_strides, padding, dimension_numbers):
  """The result shape of a convolution with the given (string) dimension numbers."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  out = conv_shape_tuple(np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm),
                         window_strides, padding)
  return tuple(np.take(out, np.argsort(out_perm)))


def _conv_transpose_padding(k, s, padding):
  """(before, after) padding of one spatial axis of a transposed convolution, for a kernel of
  (dilated) size `k`, stride `s` and the forward convolution's `padding`."""
  if padding == "SAME":
    total = k + s - 2
    before = k - 1 if s > k - 1 else int(np.ceil(total / 2))
  elif padding == "VALID":
    total = k + s - 2 + max(k - s, 0)
    before = k - 1
  elif isinstance(padding, tuple):
    pads = tuple(k - p - 1 for p in padding)
    before, total = pads[0], sum(pads)
  else:
    raise ValueError(f"Invalid padding mode: {padding}")
  return before, total - before


def conv_transpose_shape_tuple(lhs_shape, rhs_shape, window_strides, padding,
                               dimension_numbers):
  """The result shape of `conv_transpose` with the given (string) dimension numbers."""
  lhs_perm, rhs_perm, out_perm = conv_general_permutations(dimension_numbers)
  lhs_t, rhs_t = np.take(lhs_shape, lhs_perm), np.take(rhs_shape, rhs_perm)
  if isinstance(padding, str):
    padding = [_conv_transpose_padding(k, s, padding)
               for k, s in zip(rhs_t[2:], window_strides)]
  padding = list(map(np.sum, padding))
  unpadded = [(i - 1) * s - k + 2 for i, k, s in zip(lhs_t[2:], rhs_t[2:], window_strides)]
  space = np.sum([unpadded, padding], axis=0).tolist()
  out = (lhs_t[0], rhs_t[0]) + tuple(space)
  return tuple(np.take(out, np.argsort(out_perm)))


# ---- dimension numbers -----------------------------------------------------------------------
def conv_dimension_numbers(lhs_shape, rhs_shape, dimension_numbers) -> ConvDimensionNumbers:
  """`dimension_numbers` (None, a triple of strings or ConvDimensionNumbers) in canonical form."""
  if isinstance(dimension_numbers, ConvDimensionNumbers):
    return dimension_numbers
  if len(lhs_shape) != len(rhs_shape):
    raise TypeError(f"convolution requires lhs and rhs ndim to be equal, got {len(lhs_shape)} "
                    f"and {len(rhs_shape)}.")
  if dimension_numbers is None:
    iota = tuple(range(len(lhs_shape)))
    return ConvDimensionNumbers(iota, iota, iota)
  if not isinstance(dimension_numbers, (list, tuple)):
    raise TypeError("convolution dimension_numbers must be tuple/list or None, got "
                    f"{type(dimension_numbers)}.")
  if len(dimension_numbers) != 3:
    raise TypeError("convolution dimension_numbers list/tuple must be length 3, got "
                    f"{len(dimension_numbers)}.")
  if not all(isinstance(s, str) for s in dimension_numbers):
    raise TypeError("convolution dimension_numbers elements must be strings, got "
                    f"{tuple(map(type, dimension_numbers))}.")
  for i, spec in enumerate(dimension_numbers):
    if len(spec) != len(lhs_shape):
      raise TypeError(f"convolution dimension_numbers[{i}] must have len equal to the ndim of "
                      f"lhs and rhs, got {len(spec)} for lhs and rhs shapes {lhs_shape} and "
                      f"{rhs_shape}.")
  return ConvDimensionNumbers(*conv_general_permutations(dimension_numbers))


def conv_general_permutations(dimension_numbers):
  """The (lhs, rhs, out) axis permutations into the canonical layouts for string specs."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  pairs = (("N", "C"), ("O", "I"), ("N", "C"))
  for i, (a, b) in enumerate(pairs):
    spec = dimension_numbers[i]
    if not spec.count(a) == spec.count(b) == 1:
      raise TypeError(f"convolution dimension_numbers[{i}] must contain the characters '{a}' "
                      f"and '{b}' exactly once, got {spec}.")
    if len(spec) != len(set(spec)):
      raise TypeError(f"convolution dimension_numbers[{i}] cannot have duplicate characters, "
                      f"got {spec}.")
  spatial = [set(spec) - set(pair) for spec, pair in zip(dimension_numbers, pairs)]
  if not spatial[0] == spatial[1] == spatial[2]:
    raise TypeError("convolution dimension_numbers elements must each have the same set of "
                    f"spatial characters, got {dimension_numbers}.")

  def perm(spec, pair):
    axes = [i for i, c in enumerate(spec) if c not in pair]
    if spec is not rhs_spec:   # spatial axes follow the kernel's order
      axes = sorted(axes, key=lambda i: rhs_spec.index(spec[i]))
    return (spec.index(pair[0]), spec.index(pair[1])) + tuple(axes)

  return tuple(perm(spec, pair) for spec, pair in zip(dimension_numbers, pairs))


# ---- the primitive ---------------------------------------------------------------------------
def _conv_shape(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count):
  dn = dimension_numbers
  if len(lhs.shape) != len(rhs.shape):
    raise ValueError("conv_general_dilated lhs and rhs must have the same number of dimensions, "
                     f"but got {lhs.shape} and {rhs.shape}.")
  if not feature_group_count > 0:
    raise ValueError("conv_general_dilated feature_group_count must be a positive integer, got "
                     f"{feature_group_count}.")
  lhs_features = lhs.shape[dn.lhs_spec[1]]
  quot, rem = divmod(lhs_features, feature_group_count)
  if rem:
    raise ValueError("conv_general_dilated feature_group_count must divide lhs feature "
                     f"dimension size, but {feature_group_count} does not divide "
                     f"{lhs_features}.")
  if quot != rhs.shape[dn.rhs_spec[1]]:
    raise ValueError("conv_general_dilated lhs feature dimension size divided by "
                     "feature_group_count must equal the rhs input feature dimension size, but "
                     f"{lhs_features} // {feature_group_count} != {rhs.shape[dn.rhs_spec[1]]}.")
  out_features = rhs.shape[dn.rhs_spec[0]]
  if out_features % feature_group_count:
    raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of feature_group_count, but {out_features} is not a multiple "
                     f"of {feature_group_count}.")
  if not batch_group_count > 0:
    raise ValueError("conv_general_dilated batch_group_count must be a positive integer, got "
                     f"{batch_group_count}.")
  lhs_batch = lhs.shape[dn.lhs_spec[0]]
  if batch_group_count > 1 and lhs_batch % batch_group_count:
    raise ValueError("conv_general_dilated batch_group_count must divide lhs batch dimension "
                     f"size, but {batch_group_count} does not divide {lhs_batch}.")
  if out_features % batch_group_count:
    raise ValueError("conv_general_dilated rhs output feature dimension size must be a "
                     f"multiple of batch_group_count, but {out_features} is not a multiple of "
                     f"{batch_group_count}.")
  if batch_group_count > 1 and feature_group_count > 1:
    raise ValueError("At most one of batch_group_count and feature_group_count may be > 1, got "
                     f"batch_group_count={batch_group_count} and "
                     f"feature_group_count={feature_group_count}")
  if len(dn.rhs_spec) - 2 != len(window_strides):
    raise ValueError("conv_general_dilated window and window_strides must have the same number "
                     f"of dimensions, but got {len(dn.rhs_spec) - 2} and "
                     f"{len(window_strides)}")
  lhs_t = _dilate_shape(np.take(lhs.shape, dn.lhs_spec), lhs_dilation)
  rhs_t = _dilate_shape(np.take(rhs.shape, dn.rhs_spec), rhs_dilation)
  out_t = conv_shape_tuple(lhs_t, rhs_t, window_strides, padding, batch_group_count)
  return tuple(int(d) for d in np.take(out_t, np.argsort(dn.out_spec)))


def _validate_preferred_element_type(input_dtype, preferred):
  """The (input dtype, preferred_element_type) pairs a convolution may accumulate in."""
  inp, pref = np.dtype(input_dtype), np.dtype(preferred)
  if not (dtypes.issubdtype(inp, np.integer) and dtypes.issubdtype(pref, np.floating)):
    for kind in (np.integer, np.floating, np.complexfloating):
      if dtypes.issubdtype(inp, kind) and not dtypes.issubdtype(pref, kind):
        raise TypeError("Input type is incompatible with `preferred_element_type`. The "
                        "compatible combinations of (input_type, preferred_element_type) are "
                        "(integral, integral), (integral, floating), (floating, floating), "
                        "(complex, complex.")
    if (dtypes.issubdtype(inp, np.signedinteger)
        and not dtypes.issubdtype(pref, np.signedinteger)):
      raise TypeError("`preferred_element_type` must have the same signedness as the original "
                      "type.")
  if pref.itemsize < inp.itemsize:
    raise TypeError("`preferred_element_type` must not be narrower than the original type.")


def _conv_dtype(lhs, rhs, preferred_element_type):
  for i, aval in enumerate((lhs, rhs)):
    if aval.dtype == dtypes.float0:
      raise TypeError(f"Called conv_general_dilated with a float0 at position {i}. float0s do "
                      "not support any operations by design, because they are not compatible "
                      "with non-trivial vector spaces.")
    if utils.dtype_class(aval.dtype) == "other":
      raise TypeError(f"conv_general_dilated does not accept dtype {aval.dtype.name} at "
                      f"position {i}. Accepted dtypes at position {i} are subtypes of integer, "
                      "floating, complexfloating, bool_.")
  if lhs.dtype != rhs.dtype:
    raise TypeError("lax.conv_general_dilated requires arguments to have the same dtypes, got "
                    f"{lhs.dtype.name}, {rhs.dtype.name}.")
  if preferred_element_type is None:
    return lhs.dtype
  _validate_preferred_element_type(lhs.dtype, preferred_element_type)
  return np.dtype(preferred_element_type)


def _conv_abstract_eval(lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                        dimension_numbers, feature_group_count, batch_group_count, precision,
                        preferred_element_type, out_sharding):
  shape = _conv_shape(lhs, rhs, window_strides=window_strides, padding=padding,
                      lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                      dimension_numbers=dimension_numbers,
                      feature_group_count=feature_group_count,
                      batch_group_count=batch_group_count)
  dtype = _conv_dtype(lhs, rhs, preferred_element_type)
  return ShapedArray(shape, dtype, utils.weak_of([lhs, rhs]))


def _real_dtype(dtype):
  return np.dtype(np.float32 if np.dtype(dtype) == dtypes.complex64 else np.float64)


def _conv_lower(ctx, lhs, rhs, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision,
                preferred_element_type, out_sharding):
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  dnums = hlo.ConvDimensionNumbers.get(
      input_batch_dimension=lhs_spec[0], input_feature_dimension=lhs_spec[1],
      input_spatial_dimensions=list(lhs_spec[2:]),
      kernel_output_feature_dimension=rhs_spec[0], kernel_input_feature_dimension=rhs_spec[1],
      kernel_spatial_dimensions=list(rhs_spec[2:]),
      output_batch_dimension=out_spec[0], output_feature_dimension=out_spec[1],
      output_spatial_dimensions=list(out_spec[2:]))
  nspatial = len(rhs_spec) - 2
  pads = np.asarray(padding, np.int64).reshape(nspatial, 2)
  for i, s in enumerate(window_strides):
    if s <= 0:   # what XLA's verifier says when JAX lowers it
      raise ValueError("Cannot lower jaxpr with verifier errors:\n\texpects window to have "
                       f"positive stride for {i}-th window dimension, but got {s}.")

  def emit(out_aval, x, y):
    return hlo.convolution(
        mlir.aval_to_ir_type(out_aval), x, y, dnums, mlir.i64_attr(feature_group_count),
        mlir.i64_attr(batch_group_count), window_strides=mlir.dense_i64(window_strides),
        padding=ir.DenseIntElementsAttr.get(pads), lhs_dilation=mlir.dense_i64(lhs_dilation),
        rhs_dilation=mlir.dense_i64(rhs_dilation),
        window_reversal=mlir.dense_bool([False] * nspatial),
        precision_config=lax_dot._precision_attr(precision))

  out = ctx.avals_out[0]
  if ctx.avals_in[0].dtype.kind != "c":
    return [emit(out, lhs, rhs)]
  # XLA's CPU convolution has no fast complex path: three real convolutions (Gauss's trick),
  # as JAX lowers it.

  x_re, x_im = hlo.real(lhs), hlo.imag(lhs)
  y_re, y_im = hlo.real(rhs), hlo.imag(rhs)
  real_out = out.update(dtype=_real_dtype(out.dtype))
  k1 = emit(real_out, hlo.add(x_re, x_im), y_re)
  k2 = emit(real_out, x_re, hlo.subtract(y_im, y_re))
  k3 = emit(real_out, x_im, hlo.add(y_re, y_im))
  return [hlo.complex(hlo.subtract(k1, k3), hlo.add(k1, k2))]


conv_general_dilated_p = core.Primitive("conv_general_dilated")
conv_general_dilated_p.def_abstract_eval(_conv_abstract_eval)
conv_general_dilated_p.def_lowering(_conv_lower)


# ---- the wrapper -----------------------------------------------------------------------------
def conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=None,
                         rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                         batch_group_count=1, precision=None, preferred_element_type=None,
                         out_sharding=None):
  """General N-d convolution of `lhs` (input) with `rhs` (kernel), with optional dilations.

  `padding` is 'SAME', 'SAME_LOWER', 'VALID' or a sequence of (low, high) pairs per spatial
  axis. `dimension_numbers` is None (NCHW/OIHW/NCHW-like), a ConvDimensionNumbers or a triple
  of strings such as ('NHWC', 'HWIO', 'NHWC'). `lhs_dilation` inserts zeros between input
  elements (transposed convolution), `rhs_dilation` between kernel elements (atrous
  convolution). `feature_group_count` and `batch_group_count` give grouped convolutions.
  """
  dnums = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
  out_sharding = canonicalize_sharding(out_sharding, "dot_general")   # (JAX's name)
  if lhs_dilation is None:
    lhs_dilation = (1,) * (lhs.ndim - 2)
  elif isinstance(padding, str) and not len(lhs_dilation) == list(lhs_dilation).count(1):
    raise ValueError("String padding is not implemented for transposed convolution using this "
                     "op. Please either exactly specify the required padding or use "
                     "conv_transpose.")
  if rhs_dilation is None:
    rhs_dilation = (1,) * (rhs.ndim - 2)
  if isinstance(padding, str):
    kernel = np.take(rhs.shape, dnums.rhs_spec)[2:]
    window = [_dilate_dim(k, r) for k, r in zip(kernel, rhs_dilation)]
    padding = padtype_to_pads(np.take(lhs.shape, dnums.lhs_spec)[2:], window, window_strides,
                              padding)
  else:
    try:
      padding = tuple((operator.index(lo), operator.index(hi)) for lo, hi in padding)
    except (ValueError, TypeError) as e:
      raise ValueError("padding argument to conv_general_dilated should be a string or a "
                       f"sequence of (low, high) pairs, got {padding}") from e
  if preferred_element_type is not None:
    preferred_element_type = dtypes.check_user_dtype(preferred_element_type,
                                                     "conv_general_dilated")
  return conv_general_dilated_p.bind(
      asarray_operand(lhs), asarray_operand(rhs), window_strides=tuple(window_strides),
      padding=tuple(padding), lhs_dilation=tuple(lhs_dilation),
      rhs_dilation=tuple(rhs_dilation), dimension_numbers=dnums,
      feature_group_count=feature_group_count, batch_group_count=batch_group_count,
      precision=lax_dot.canonicalize_precision(precision),
      preferred_element_type=preferred_element_type, out_sharding=out_sharding)


def conv(lhs, rhs, window_strides, padding, precision=None, preferred_element_type=None):
  """N-d convolution in the (N, C, spatial...) / (O, I, spatial...) layouts with 'SAME' or
  'VALID' padding."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_with_general_padding(lhs, rhs, window_strides, padding, lhs_dilation, rhs_dilation,
                              precision=None, preferred_element_type=None):
  """N-d convolution in the default layouts with explicit padding and dilations."""
  return conv_general_dilated(lhs, rhs, window_strides, padding, lhs_dilation=lhs_dilation,
                              rhs_dilation=rhs_dilation, precision=precision,
                              preferred_element_type=preferred_element_type)


def conv_transpose(lhs, rhs, strides, padding, rhs_dilation=None, dimension_numbers=None,
                   transpose_kernel=False, precision=None, preferred_element_type=None,
                   use_consistent_padding=False):
  """The N-d transposed ("fractionally strided") convolution, computed directly.

  `padding` ('SAME', 'VALID' or pairs) describes the forward convolution when a string or when
  `use_consistent_padding` is set (pairs are then the forward padding, as in PyTorch);
  otherwise pairs pad the dilated input directly. `transpose_kernel` flips the kernel's
  spatial axes and swaps its feature axes (the gradient of a forward convolution, as Keras'
  Conv2DTranspose). Default layouts are NHWC-like ('NC', 'NHC', 'NHWC', 'NHWDC').
  """
  assert len(lhs.shape) == len(rhs.shape) and len(lhs.shape) >= 2
  ndims = len(lhs.shape)
  one = (1,) * (ndims - 2)
  if dimension_numbers is None:
    defaults = {2: ("NC", "IO", "NC"), 3: ("NHC", "HIO", "NHC"), 4: ("NHWC", "HWIO", "NHWC"),
                5: ("NHWDC", "HWDIO", "NHWDC")}
    if ndims not in defaults:
      raise ValueError("No 4+ dimensional dimension_number defaults.")
    dimension_numbers = defaults[ndims]
  dn = conv_dimension_numbers(lhs.shape, rhs.shape, dimension_numbers)
  kernel = np.take(rhs.shape, dn.rhs_spec)[2:]
  if rhs_dilation is None:
    rhs_dilation = (1,) * (rhs.ndim - 2)
  if use_consistent_padding or (isinstance(padding, str) and padding in {"SAME", "VALID"}):
    sizes = [_dilate_dim(k, r) for k, r in zip(kernel, rhs_dilation)]
    per_axis = [padding] * len(strides) if isinstance(padding, str) else padding
    pads = tuple(_conv_transpose_padding(k, s, p) for k, s, p in zip(sizes, strides, per_axis))
  else:
    pads = padding
  if transpose_kernel:
    rhs = _flip_axes(rhs, np.array(dn.rhs_spec)[2:])
    rhs = _swapaxes(rhs, dn.rhs_spec[0], dn.rhs_spec[1])
  return conv_general_dilated(lhs, rhs, one, pads, strides, rhs_dilation, dn,
                              precision=precision, preferred_element_type=preferred_element_type)


def _flip_axes(x, axes):
  # Like JAX: NumPy's flip for NumPy kernels, lax's rev otherwise (one rev per axis).
  for axis in axes:
    x = np.flip(x, axis) if isinstance(x, np.ndarray) else shape_ops.rev(x, (int(axis),))
  return x


def _swapaxes(x, a, b):
  if isinstance(x, np.ndarray):
    return x.swapaxes(a, b)
  perm = list(range(core.get_aval(x).ndim))
  perm[a], perm[b] = perm[b], perm[a]
  return broadcasting.transpose(x, perm)


# ---- patches and unshared (local) convolutions ------------------------------------------------
def _lax_asarray(x):
  if isinstance(x, (list, tuple)) or not (utils._is_array(x) or np.isscalar(x)
                                         or isinstance(x, (np.ndarray, np.generic))):
    raise TypeError(f"asarray: expected ArrayLike, got {x} of type {type(x)}.")
  return utils._asarray(x)


def _eye(dtype, n):
  """The n x n identity of `dtype` (built from iotas, as JAX's lax does)."""
  shape = (n, n)
  rows = lax_ew.add(broadcasting.broadcasted_iota(np.int32, shape, 0), np.int32(0))
  same = lax_ew.eq(rows, broadcasting.broadcasted_iota(np.int32, shape, 1))
  return lax_ew.convert_element_type_p.bind(same, new_dtype=np.dtype(dtype), weak_type=False,
                                            sharding=None)


def _moveaxis(x, src, dst):
  """Move axes `src` of `x` to positions `dst` (one transpose)."""
  if src == dst:
    return x
  ndim = core.get_aval(x).ndim
  perm = [i for i in range(ndim) if i not in src]
  for d, s in sorted(zip(dst, src)):
    perm.insert(d, s)
  return broadcasting.transpose(x, perm)


def conv_general_dilated_patches(lhs, filter_shape, window_strides, padding, lhs_dilation=None,
                                 rhs_dilation=None, dimension_numbers=None, precision=None,
                                 preferred_element_type=None):
  """The patches a convolution with a kernel of spatial shape `filter_shape` would see.

  The result has the layout of the convolution's output, its feature axis holding each
  flattened patch (input features first, then the spatial axes in the kernel spec's order).
  """
  x = _lax_asarray(lhs)
  filter_shape = tuple(filter_shape)
  shape = core.get_aval(x).shape
  dn = conv_dimension_numbers(shape, (1, 1) + filter_shape, dimension_numbers)
  lhs_spec, rhs_spec, _ = dn
  window = math.prod(filter_shape)
  channels = shape[lhs_spec[1]]
  # One output feature per (input feature, window position).
  rhs = _eye(core.get_aval(x).dtype, window)
  rhs = broadcasting.broadcast_in_dim(rhs, (channels, window, window), (1, 2))
  rhs = broadcasting.reshape(rhs, (channels * window, 1, *filter_shape))
  rhs = _moveaxis(rhs, (0, 1), (rhs_spec[0], rhs_spec[1]))
  return conv_general_dilated(
      x, rhs, window_strides, padding, lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
      dimension_numbers=dn,
      precision=None if precision is None else (precision, lax_dot.Precision.DEFAULT),
      feature_group_count=channels, preferred_element_type=preferred_element_type)


def conv_general_dilated_local(lhs, rhs, window_strides, padding, filter_shape,
                               lhs_dilation=None, rhs_dilation=None, dimension_numbers=None,
                               precision=None):
  """Unshared ("locally connected") convolution: a separate kernel at every output position.

  `rhs` has the kernel layout with its spatial axes indexing output positions and its input
  feature axis holding (input feature, window position...) flattened, as the patches of
  `conv_general_dilated_patches`.
  """
  x = _lax_asarray(lhs)
  c_precision = lax_dot.canonicalize_precision(precision)
  if c_precision is None:
    lhs_precision = None
  elif isinstance(c_precision, tuple) and len(c_precision) == 2:
    lhs_precision = c_precision[0]
  else:
    raise ValueError(f"Unsupported precision for conv_general_dilated_local: {precision}")
  patches = conv_general_dilated_patches(
      x, filter_shape, window_strides, padding, lhs_dilation=lhs_dilation,
      rhs_dilation=rhs_dilation, dimension_numbers=dimension_numbers, precision=lhs_precision)
  _, rhs_spec, out_spec = conv_dimension_numbers(core.get_aval(x).shape,
                                                 (1, 1) + tuple(filter_shape),
                                                 dimension_numbers)
  out_b, rhs_b = out_spec[2:], rhs_spec[2:]
  rhs_b = [rhs_b[i] for i in sorted(range(len(rhs_b)), key=lambda k: out_b[k])]
  out_b = sorted(out_b)
  dn = (([out_spec[1]], [rhs_spec[1]]), (out_b, rhs_b))
  out = lax_dot.dot_general(patches, rhs, dimension_numbers=dn, precision=precision)
  return _moveaxis(out, (-2 % core.get_aval(out).ndim, -1 % core.get_aval(out).ndim),
                   (out_spec[0], out_spec[1]))


# ---- batching --------------------------------------------------------------------------------
def _reshape_axis_into(src, dst, x):
  """Merge axis `src` of `x` into axis `dst` (numbered without `src`), `src` as the major part."""
  shape = core.get_aval(x).shape
  perm = [i for i in range(len(shape)) if i != src]
  perm.insert(dst, src)
  new_shape = [d for i, d in enumerate(shape) if i != src]
  new_shape[dst] *= shape[src]
  return broadcasting.reshape(x, new_shape, perm)


def _reshape_axis_out_of(src, size1, x):
  """Split axis `src` of `x` into (size1, rest)."""
  shape = list(core.get_aval(x).shape)
  size2, ragged = divmod(shape[src], size1)
  assert not ragged
  shape[src:src + 1] = [size1, size2]
  return broadcasting.reshape(x, shape)


def _conv_batch(args, dims, *, window_strides, padding, lhs_dilation, rhs_dilation,
                dimension_numbers, feature_group_count, batch_group_count, precision,
                preferred_element_type, out_sharding, mesh_axis=None):
  (lhs, rhs), (lhs_bd, rhs_bd) = args, dims
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_aval, rhs_aval = core.get_aval(lhs), core.get_aval(rhs)
  assert batch_group_count == 1 or feature_group_count == 1

  def conv(l, r, fgc, bgc, axis=None):
    # (a per-example out_sharding, as JAX's rule: the mapped axis merges into result axis
    # `axis`, which then is split over the vmapped mesh axes)
    s = out_sharding
    if s is not None and mesh_axis:
      if axis is None or s.spec.partitions[axis] is not None:
        raise NotImplementedError
      parts = list(s.spec.partitions)
      parts[axis] = mesh_axis[0] if len(mesh_axis) == 1 else tuple(mesh_axis)
      s = NamedSharding(s.mesh, PartitionSpec(*parts))
    return conv_general_dilated(
        l, r, window_strides, padding, lhs_dilation, rhs_dilation, dimension_numbers,
        feature_group_count=fgc, batch_group_count=bgc, precision=precision,
        preferred_element_type=preferred_element_type, out_sharding=s)

  if ((lhs_bd is not None and lhs_aval.shape[lhs_bd] == 0)
      or (rhs_bd is not None and rhs_aval.shape[rhs_bd] == 0)):
    # Reshaping a size-0 batch axis into the batch or feature axes would lose it.
    unbatched = [ShapedArray(tuple(d for i, d in enumerate(a.shape) if i != bd), a.dtype)
                 for a, bd in ((lhs_aval, lhs_bd), (rhs_aval, rhs_bd))]
    shape = _conv_shape(*unbatched, window_strides=window_strides, padding=padding,
                        lhs_dilation=lhs_dilation, rhs_dilation=rhs_dilation,
                        dimension_numbers=dimension_numbers,
                        feature_group_count=feature_group_count,
                        batch_group_count=batch_group_count)
    dtype = lhs_aval.dtype if preferred_element_type is None else preferred_element_type
    return broadcasting._full((0,) + shape, 0, dtype), 0

  if lhs_bd is not None and rhs_bd is not None:
    size = lhs_aval.shape[lhs_bd]
    assert size == rhs_aval.shape[rhs_bd]
    if batch_group_count > 1:
      new_lhs = _reshape_axis_into(lhs_bd, lhs_spec[0], lhs)
      batch_group_count *= size
    else:
      new_lhs = _reshape_axis_into(lhs_bd, lhs_spec[1], lhs)
      feature_group_count *= size
    new_rhs = _reshape_axis_into(rhs_bd, rhs_spec[0], rhs)
    out = conv(new_lhs, new_rhs, feature_group_count, batch_group_count, out_spec[1])
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]

  if lhs_bd is not None:
    size = lhs_aval.shape[lhs_bd]
    if batch_group_count == 1:
      new_lhs = _reshape_axis_into(lhs_bd, lhs_spec[0], lhs)
    else:
      # The batch groups must stay outermost in the batch axis: split them off, merge the
      # vmapped axis into the rest, then merge the groups back in.
      new_lhs = _reshape_axis_out_of(lhs_spec[0] + int(lhs_bd <= lhs_spec[0]),
                                     batch_group_count, lhs)
      new_lhs = _reshape_axis_into(lhs_bd + int(lhs_spec[0] < lhs_bd), lhs_spec[0] + 1,
                                   new_lhs)
      new_lhs = _reshape_axis_into(lhs_spec[0], lhs_spec[0], new_lhs)
    out = conv(new_lhs, rhs, feature_group_count, batch_group_count, out_spec[0])
    return _reshape_axis_out_of(out_spec[0], size, out), out_spec[0]

  size = rhs_aval.shape[rhs_bd]
  if feature_group_count == 1 and batch_group_count == 1:
    new_rhs = _reshape_axis_into(rhs_bd, rhs_spec[0], rhs)
    out = conv(lhs, new_rhs, feature_group_count, batch_group_count, out_spec[1])
    return _reshape_axis_out_of(out_spec[1], size, out), out_spec[1]
  if out_sharding is not None:
    raise NotImplementedError
  # Groups must stay outermost in the kernel's output features (and in the result's).
  groups = feature_group_count if feature_group_count > 1 else batch_group_count
  new_rhs = _reshape_axis_out_of(rhs_spec[0] + int(rhs_bd <= rhs_spec[0]), groups, rhs)
  new_rhs = _reshape_axis_into(rhs_bd + int(rhs_spec[0] < rhs_bd), rhs_spec[0] + 1, new_rhs)
  new_rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[0], new_rhs)
  out = conv(lhs, new_rhs, feature_group_count, batch_group_count)
  out = _reshape_axis_out_of(out_spec[1], groups, out)
  out = _reshape_axis_out_of(out_spec[1] + 1, size, out)
  out = _reshape_axis_into(out_spec[1], out_spec[1] + 1, out)
  return out, out_spec[1]


conv_general_dilated_p.def_batch(_conv_batch)


@conv_general_dilated_p.def_batch_axis
def _conv_batch_axis(axis_data, args, dims, **params):
  if dims[0] is None and dims[1] is None:
    return conv_general_dilated_p.bind(*args, **params), None
  return _conv_batch(args, dims, mesh_axis=axis_data.explicit_mesh_axis, **params)


# ---- differentiation -------------------------------------------------------------------------
def _conv_jvp_lhs(t, lhs, rhs, **params):
  return conv_general_dilated_p.bind(t, rhs, **params)


def _conv_jvp_rhs(t, lhs, rhs, **params):
  return conv_general_dilated_p.bind(lhs, t, **params)


ad.defjvp(conv_general_dilated_p, _conv_jvp_lhs, _conv_jvp_rhs)


def _spec_transpose(spec):
  return (spec[1], spec[0]) + tuple(spec[2:])


def conv_general_vjp_lhs_padding(in_shape, window_dimensions, window_strides, out_shape,
                                 padding, lhs_dilation, rhs_dilation):
  """The padding of the convolution computing an input cotangent (also used by the transpose
  of reduce_window_sum)."""
  lhs_d = _dilate_shape(in_shape, lhs_dilation)
  rhs_d = _dilate_shape(window_dimensions, rhs_dilation)
  out_d = _dilate_shape(out_shape, window_strides)
  before = np.subtract(rhs_d, [lo for lo, _ in padding]) - 1
  after = np.add(lhs_d, rhs_d) - 1 - out_d - before
  return list(zip(before, after))


def _conv_vjp_rhs_padding(in_shape, window_dimensions, window_strides, out_shape, padding,
                          lhs_dilation, rhs_dilation):
  if len(in_shape) == 0:
    return []
  lhs_d = _dilate_shape(in_shape, lhs_dilation)
  rhs_d = _dilate_shape(window_dimensions, rhs_dilation)
  out_d = _dilate_shape(out_shape, window_strides)
  lows = [lo for lo, _ in padding]
  highs = [(o - i) + (r - lo - 1) for o, i, r, lo in zip(out_d, lhs_d, rhs_d, lows)]
  return list(zip(lows, highs))


def _primal_sharding(aval, *operands):
  """The out_sharding of a transposed convolution: the primal operand's type sharding, or when
  it has none but an operand of the transpose has one, unsplit over that mesh (JAX passes the
  primal's sharding, which names the mesh even when nothing is split)."""
  if aval.sharding is not None:
    return aval.sharding
  for v in operands:
    s = getattr(core.get_aval(v), "sharding", None)
    if s is not None:
      return NamedSharding(s.mesh, PartitionSpec(*[None] * aval.ndim))
  return None


def _conv_transpose_lhs(g, lhs_aval, rhs, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
                        precision, preferred_element_type):
  rhs_shape = core.get_aval(rhs).shape
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_sdims, rhs_sdims, out_sdims = lhs_spec[2:], rhs_spec[2:], out_spec[2:]
  if feature_group_count > 1:
    # Move the groups from the kernel's output features into its input features.
    rhs = _reshape_axis_out_of(rhs_spec[0], feature_group_count, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
  elif batch_group_count > 1:
    rhs = _reshape_axis_out_of(rhs_spec[0], batch_group_count, rhs)
    rhs = _reshape_axis_into(rhs_spec[0], rhs_spec[1], rhs)
    feature_group_count = batch_group_count
  trans_dn = ConvDimensionNumbers(out_spec, _spec_transpose(rhs_spec), lhs_spec)
  g_shape = core.get_aval(g).shape
  pads = conv_general_vjp_lhs_padding(
      np.take(lhs_aval.shape, lhs_sdims), np.take(rhs_shape, rhs_sdims), window_strides,
      np.take(g_shape, out_sdims), padding, lhs_dilation, rhs_dilation)
  kernel = shape_ops.rev(rhs, rhs_sdims)
  g_dtype = core.get_aval(g).dtype
  if g_dtype != core.get_aval(kernel).dtype:
    kernel = lax_ew.convert_element_type(kernel, g_dtype)
  out = conv_general_dilated(g, kernel, window_strides=lhs_dilation, padding=pads,
                             lhs_dilation=window_strides, rhs_dilation=rhs_dilation,
                             dimension_numbers=trans_dn, feature_group_count=feature_group_count,
                             batch_group_count=1, precision=precision,
                             preferred_element_type=preferred_element_type,
                             out_sharding=_primal_sharding(lhs_aval, g, kernel))
  if core.get_aval(out).dtype != lhs_aval.dtype:
    out = lax_ew.convert_element_type(out, lhs_aval.dtype)
  if batch_group_count > 1:
    out = _reshape_axis_out_of(lhs_spec[1], batch_group_count, out)
    out = _reshape_axis_into(lhs_spec[1], lhs_spec[0], out)
  return out


def _conv_transpose_rhs(g, lhs, rhs_aval, *, window_strides, padding, lhs_dilation,
                        rhs_dilation, dimension_numbers, feature_group_count, batch_group_count,
                        precision, preferred_element_type):
  g_aval = core.get_aval(g)
  if g_aval.size == 0:
    # A degenerate convolution whose kernel would have spatial size 0.
    return ad.Zero(rhs_aval)
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  lhs_sdims, rhs_sdims, out_sdims = lhs_spec[2:], rhs_spec[2:], out_spec[2:]
  if batch_group_count > 1:
    feature_group_count, batch_group_count = batch_group_count, 1
  elif feature_group_count > 1:
    feature_group_count, batch_group_count = 1, feature_group_count
  trans_dn = ConvDimensionNumbers(_spec_transpose(lhs_spec), _spec_transpose(out_spec),
                                  _spec_transpose(rhs_spec))
  pads = _conv_vjp_rhs_padding(
      np.take(core.get_aval(lhs).shape, lhs_sdims), np.take(rhs_aval.shape, rhs_sdims),
      window_strides, np.take(g_aval.shape, out_sdims), padding, lhs_dilation, rhs_dilation)
  if core.get_aval(lhs).dtype != g_aval.dtype:
    lhs = lax_ew.convert_element_type(lhs, g_aval.dtype)
  out = conv_general_dilated(lhs, g, window_strides=rhs_dilation, padding=pads,
                             lhs_dilation=lhs_dilation, rhs_dilation=window_strides,
                             dimension_numbers=trans_dn, feature_group_count=feature_group_count,
                             batch_group_count=batch_group_count, precision=precision,
                             preferred_element_type=preferred_element_type,
                             out_sharding=_primal_sharding(rhs_aval, lhs, g))
  if core.get_aval(out).dtype != rhs_aval.dtype:
    out = lax_ew.convert_element_type(out, rhs_aval.dtype)
  return out


@conv_general_dilated_p.def_transpose
def _conv_transpose_rule(ct, lhs, rhs, *, out_sharding, **params):
  lhs_undef, rhs_undef = ad.is_undefined(lhs), ad.is_undefined(rhs)
  if lhs_undef and rhs_undef:
    raise NotImplementedError("conv_general_dilated is bilinear: it can be transposed in one "
                              "operand only")
  if type(ct) is ad.Zero:
    return [ad.Zero(lhs.aval) if lhs_undef else None, ad.Zero(rhs.aval) if rhs_undef else None]
  if lhs_undef:
    return [_conv_transpose_lhs(ct, lhs.aval, rhs, **params), None]
  return [None, _conv_transpose_rhs(ct, lhs, rhs.aval, **params)]
