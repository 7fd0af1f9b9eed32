"""The fast Fourier transform primitive `fft` and lax's wrapper over it.

One primitive covers the four XLA transforms (`FftType`): complex-to-complex forward and
inverse, real-to-complex (the non-negative half of the spectrum along the last axis) and its
inverse. They act on the trailing `len(fft_lengths)` axes (1 to 3 of them) and lower to one
`stablehlo.fft`. The primitive is linear: its JVP applies it to the tangent, its transpose is
the inverse transform scaled as the adjoint requires (for the real transforms a mask accounts
for the half spectrum), and a batch axis is moved to the front, out of the transformed axes.
"""
from __future__ import annotations

import enum
import math
from collections.abc import Sequence

import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import ad, batching, core, dtypes, mlir
from arrax._src.core import ShapedArray
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax_api
from arrax._src.lax import shape_ops
from arrax._src.lax.utils import scalar_literal

__all__ = ["FftType", "fft", "fft_p"]


class FftType(enum.IntEnum):
  """The kind of transform `fft` computes."""

  FFT = 0
  """Forward transform, complex to complex."""

  IFFT = 1
  """Inverse transform, complex to complex."""

  RFFT = 2
  """Forward transform of a real signal (half spectrum out)."""

  IRFFT = 3
  """Inverse transform to a real signal (half spectrum in)."""


_FFT_TYPE_NAMES = {"fft": FftType.FFT, "ifft": FftType.IFFT, "rfft": FftType.RFFT,
                   "irfft": FftType.IRFFT}


def _fft_type_of(fft_type) -> FftType:
  if isinstance(fft_type, str):
    typ = _FFT_TYPE_NAMES.get(fft_type.lower())
    if typ is None or fft_type not in (typ.name, typ.name.lower()):
      raise ValueError(f"Unknown FFT type '{fft_type}'")
    return typ
  if isinstance(fft_type, FftType):
    return fft_type
  raise TypeError(f"Unknown FFT type value '{fft_type}'")


def _complex_of(dtype):
  """The complex dtype matching a real (or complex) floating dtype."""
  return np.dtype(np.complex128) if np.dtype(dtype) in (np.float64, np.complex128) \
      else np.dtype(np.complex64)


def _real_of(dtype):
  """The real dtype of a complex (or real floating) dtype's components."""
  return np.dtype(np.float64) if np.dtype(dtype) in (np.float64, np.complex128) \
      else np.dtype(np.float32)


# ---- the primitive ----------------------------------------------------------------------------
def _fft_abstract_eval(x, *, fft_type, fft_lengths):
  n = len(fft_lengths)
  if n > x.ndim:
    raise ValueError(f"fft: an input of shape {x.shape} has fewer axes than fft_lengths "
                     f"{fft_lengths} transforms.")
  minor = x.shape[x.ndim - n:]
  if fft_type == FftType.RFFT:
    if x.dtype not in (np.float32, np.float64):
      raise ValueError(f"RFFT input must be float32 or float64, got {x.dtype}")
    if minor != tuple(fft_lengths):
      raise ValueError(f"RFFT input shape {x.shape}: its last {n} axes must equal "
                       f"fft_lengths {fft_lengths}")
    shape = x.shape[:x.ndim - n] + tuple(fft_lengths[:-1]) + (fft_lengths[-1] // 2 + 1,)
    dtype = _complex_of(x.dtype)
  elif fft_type == FftType.IRFFT:
    if not dtypes.issubdtype(x.dtype, np.complexfloating):
      raise ValueError(f"IRFFT input must be complex64 or complex128, got {x.dtype}")
    if minor[:-1] != tuple(fft_lengths[:-1]):
      raise ValueError(f"IRFFT input shape {x.shape}: its last {n} axes but the innermost "
                       f"must equal fft_lengths[:-1], got fft_lengths={fft_lengths}")
    shape = x.shape[:x.ndim - n] + tuple(fft_lengths)
    dtype = _real_of(x.dtype)
  else:
    if not dtypes.issubdtype(x.dtype, np.complexfloating):
      raise ValueError(f"FFT input must be complex64 or complex128, got {x.dtype}")
    if minor != tuple(fft_lengths):
      raise ValueError(f"FFT input shape {x.shape}: its last {n} axes must equal "
                       f"fft_lengths {fft_lengths}")
    shape, dtype = x.shape, x.dtype
  return ShapedArray(tuple(shape), dtype, x.weak_type)


def _fft_lower(ctx, x, *, fft_type, fft_lengths):
  if not all(isinstance(d, (int, np.integer)) for d in fft_lengths):
    raise NotImplementedError(f"fft: fft_lengths must be constant integers, got {fft_lengths}")
  if fft_type == FftType.RFFT and fft_lengths[-1] == 0:
    # XLA gives no terms for an empty signal where the shape rule promises n // 2 + 1 = 1; the
    # module would not verify (JAX's ValueError).
    raise ValueError("Cannot lower fft: an RFFT of a signal of length 0 has no terms, but its "
                     f"result type {ctx.avals_out[0].str_short()} has one.")
  return [hlo.fft(x, hlo.FftTypeAttr.get(FftType(fft_type).name), mlir.dense_i64(fft_lengths))]


fft_p = core.Primitive("fft")
fft_p.def_abstract_eval(_fft_abstract_eval)
fft_p.def_lowering(_fft_lower)


def _fft_jvp(primals, tangents, *, fft_type, fft_lengths):
  (x,), (t,) = primals, tangents
  out = fft_p.bind(x, fft_type=fft_type, fft_lengths=fft_lengths)
  if type(t) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
  return out, fft_p.bind(t, fft_type=fft_type, fft_lengths=fft_lengths)


def _full(shape, value, dtype):
  """`value` of `dtype` broadcast to `shape` (strongly typed)."""
  return shape_ops.broadcast_in_dim(scalar_literal(value, dtype), tuple(shape), ())


def _half_spectrum_mask(size, even, dtype):
  """A vector of 2s over a half spectrum of `size` entries but 1 for the entries counted once
  in the full spectrum: the constant term and, for an even transform length, the last."""
  mask = _full((size,), 2.0, dtype)
  mask = shape_ops.dynamic_update_slice(mask, _full((1,), 1.0, dtype), (0,))
  if even:
    mask = shape_ops.dynamic_update_slice(mask, _full((1,), 1.0, dtype), (size - 1,))
  return mask


@jit(static_argnums=1)
def _rfft_transpose(t, fft_lengths):
  # The adjoint of the real transform: an inverse real transform of the conjugated cotangent,
  # with the terms the half spectrum stands for twice divided by two (and the 1/N undone).
  aval = core.get_aval(t)
  mask = _half_spectrum_mask(aval.shape[-1], fft_lengths[-1] % 2 == 0, aval.dtype)
  mask = shape_ops.expand_dims(mask, range(aval.ndim - 1))
  out = fft(lax_api.div(lax_api.conj(t), mask), FftType.IRFFT, fft_lengths)
  n = math.prod(fft_lengths)
  return lax_api.mul(scalar_literal(n, core.get_aval(out).dtype, True), out)


def _irfft_transpose(t, fft_lengths):
  # The adjoint of the inverse real transform: a real transform of the cotangent, scaled by 1/N
  # and doubled on the terms the half spectrum stands for twice; conjugated, as JAX takes
  # cotangents of complex values.
  x = fft(t, FftType.RFFT, fft_lengths)
  x_aval = core.get_aval(x)
  mask = _half_spectrum_mask(x_aval.shape[-1], fft_lengths[-1] % 2 == 0, x_aval.dtype)
  mask = shape_ops.expand_dims(mask, range(x_aval.ndim - 1))
  scale = scalar_literal(1 / math.prod(fft_lengths), x_aval.dtype, True)
  return lax_api.conj(lax_api.mul(lax_api.mul(scale, mask), x))


def _fft_transpose(ct, x, *, fft_type, fft_lengths):
  if fft_type == FftType.RFFT:
    return [_rfft_transpose(ct, fft_lengths)]
  if fft_type == FftType.IRFFT:
    return [_irfft_transpose(ct, fft_lengths)]
  # The DFT matrix is symmetric: the transpose of a transform is the same transform.
  return [fft(ct, fft_type, fft_lengths)]


def _fft_batch(args, dims, *, fft_type, fft_lengths):
  (x,), (bd,) = args, dims
  return fft(batching.moveaxis(x, bd, 0), fft_type, fft_lengths), 0


fft_p.def_jvp(_fft_jvp)
fft_p.def_transpose(_fft_transpose)
fft_p.def_batch(_fft_batch)


# ---- the lax wrapper ---------------------------------------------------------------------------
@jit(static_argnums=(1, 2))
def fft(x, fft_type: FftType | str, fft_lengths: Sequence[int]):
  """The `fft_type` transform of `x` over its last `len(fft_lengths)` axes (1 to 3 of them).

  fft_type: an `FftType` or its name ('fft', 'ifft', 'rfft', 'irfft', or in upper case).
  fft_lengths: the transform's length along each of those axes (a tuple); for IRFFT the last
  is the length of the real output, whose input axis holds `fft_lengths[-1] // 2 + 1` terms.
  Inputs are cast to complex (RFFT: to floating); empty `fft_lengths` returns `x` cast.
  """
  typ = _fft_type_of(fft_type)
  x = lax_api.asarray_operand(x)
  dtype = core.get_aval(x).dtype
  if typ == FftType.RFFT:
    if dtypes.issubdtype(dtype, np.complexfloating):
      raise ValueError("only real valued inputs supported for rfft")
    x = lax_api.convert_element_type(x, dtypes.to_inexact_dtype(dtype))
  else:
    x = lax_api.convert_element_type(x, _complex_of(dtypes.to_inexact_dtype(dtype)))
  if len(fft_lengths) == 0:
    return x
  return fft_p.bind(x, fft_type=typ, fft_lengths=tuple(fft_lengths))

