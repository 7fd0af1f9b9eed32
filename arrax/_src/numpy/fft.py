"""`jnp.fft`: NumPy's discrete Fourier transforms on lax's `fft` primitive, with JAX's semantics.

XLA transforms the trailing axes only, 1 to 3 at a time, so the requested axes are moved to the
end (and back after), the input is cropped or zero-padded to the requested lengths, and more
than 3 axes are transformed in groups. Integer and boolean inputs compute in float32/complex64
(float64/complex128 only with jax_enable_x64).
"""
from __future__ import annotations

import operator
from collections.abc import Sequence

import numpy as np

from arrax._src import dtypes
from arrax._src.jit import jit
from arrax._src.lax import fft as lax_fft
from arrax._src.lax import shape_ops
from arrax._src.lax.fft import FftType
from arrax._src.numpy import creation, indexing, lax_numpy, padding, reductions, ufuncs
from arrax._src.numpy.util import (aval_of, canonicalize_axis, ensure_arraylike,
                                   promote_dtypes_inexact)

__all__ = ["fft", "fft2", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifft2", "ifftn",
           "ifftshift", "ihfft", "irfft", "irfft2", "irfftn", "rfft", "rfft2", "rfftfreq",
           "rfftn"]

Shape = Sequence[int]


# ---- the shared core --------------------------------------------------------------------------
def _fft_norm(s, func_name, norm):
  """The factor a `norm` mode applies to a transform of lengths `s` (an array of its dtype)."""
  if norm == "backward":
    # JAX multiplies by an int32 one, which its tracer folds into a literal; a Python 1
    # promotes alike and stages as that same literal.
    return 1
  s, = promote_dtypes_inexact(s)   # the product of the lengths may overflow an integer
  if norm == "ortho":
    root = ufuncs.sqrt(reductions.prod(s))
    return root if func_name.startswith("i") else ufuncs.true_divide(1, root)
  if norm == "forward":
    size = reductions.prod(s)
    return size if func_name.startswith("i") else ufuncs.true_divide(1, size)
  raise ValueError(f'Invalid norm value {norm}; should be "backward", "ortho" or "forward".')


def _fft_core(func_name, fft_type, a, s, axes, norm):
  full_name = f"jax.numpy.fft.{func_name}"
  arr = ensure_arraylike(full_name, a)
  if s is not None:
    s = tuple(operator.index(d) for d in s)
    if np.any(np.less_equal(s, 0)):
      raise ValueError("Shape should be positive.")
  if s is not None and axes is not None and len(s) != len(axes):
    raise ValueError("Shape and axes have different lengths.")

  ndim = lax_numpy.ndim(arr)
  orig_axes = axes
  if axes is None:
    axes = range(ndim) if s is None else range(ndim - len(s), ndim)
  if len(axes) != len(set(axes)):
    raise ValueError(f"{full_name} does not support repeated axes. Got axes {axes}.")

  # XLA transforms the innermost axes: move the requested ones there.
  if orig_axes is not None:
    axes = tuple(range(ndim - len(axes), ndim))
    arr = lax_numpy.moveaxis(arr, orig_axes, axes)

  shape = lax_numpy.shape(arr)
  if s is not None:
    in_s = list(shape)
    for axis, d in zip(axes, s):
      in_s[axis] = d
    if fft_type == FftType.IRFFT:
      in_s[-1] = in_s[-1] // 2 + 1
    arr = indexing.getitem(arr, tuple(slice(d) for d in in_s))        # crop
    arr = padding.pad(arr, [(0, d - c) for d, c in zip(in_s, lax_numpy.shape(arr))])  # pad
  elif fft_type == FftType.IRFFT:
    s = [shape[axis] for axis in axes[:-1]]
    if axes:
      s += [max(0, 2 * (shape[axes[-1]] - 1))]
  else:
    s = [shape[axis] for axis in axes]

  out = _fft_core_nd(arr, fft_type, s)
  if norm is not None:
    lengths = creation.array(s, dtype=aval_of(out).dtype)
    out = ufuncs.multiply(out, _fft_norm(lengths, func_name, norm))
  if orig_axes is not None:
    out = lax_numpy.moveaxis(out, axes, orig_axes)
  return out


def _fft_core_nd(arr, fft_type, s):
  """The transform over the last len(s) axes, in groups of at most 3 (2 + 2 for 4 axes)."""
  if len(s) <= 3:
    return lax_fft.fft(arr, fft_type, tuple(s))
  k = 2 if len(s) == 4 else 3
  ndim = lax_numpy.ndim(arr)
  outer = tuple(range(ndim - len(s), ndim - k))
  moved = tuple(range(ndim - len(s) + k, ndim))
  if fft_type in (FftType.FFT, FftType.RFFT):
    # The real transform (if any) goes first, on the innermost axes; the rest are complex.
    arr = lax_fft.fft(arr, fft_type, tuple(s)[-k:])
    arr = lax_numpy.moveaxis(arr, outer, moved)
    arr = _fft_core_nd(arr, FftType.FFT, s[:-k])
    return lax_numpy.moveaxis(arr, moved, outer)
  # Inverse: the complex transforms of the outer axes first, the (real) innermost one last.
  arr = lax_numpy.moveaxis(arr, outer, moved)
  arr = _fft_core_nd(arr, FftType.IFFT, s[:-k])
  arr = lax_numpy.moveaxis(arr, moved, outer)
  return lax_fft.fft(arr, fft_type, tuple(s)[-k:])


def _axis_check_1d(func_name, axis):
  if isinstance(axis, (list, tuple)):
    full_name = f"jax.numpy.fft.{func_name}"
    raise ValueError(f"{full_name} does not support multiple axes. Please use {full_name}n. "
                     f"Got axis = {axis!r}.")


def _fft_core_1d(func_name, fft_type, a, n, axis, norm):
  _axis_check_1d(func_name, axis)
  return _fft_core(func_name, fft_type, a, None if n is None else [n],
                   None if axis is None else [axis], norm)


def _fft_core_2d(func_name, fft_type, a, s, axes, norm):
  if len(axes) != 2:
    raise ValueError(f"jax.numpy.fft.{func_name} only supports 2 axes. Got axes = {axes!r}.")
  return _fft_core(func_name, fft_type, a, s, axes, norm)


# ---- N-dimensional transforms ------------------------------------------------------------------
def fftn(a, s: Shape | None = None, axes: Sequence[int] | None = None, norm: str | None = None):
  """Multidimensional discrete Fourier transform (numpy.fft.fftn).

  s: the transform's length along each axis in `axes` (the input is cropped or zero-padded);
  axes: the axes transformed (all if None, the last len(s) if only `s` is given);
  norm: 'backward' (default, no scaling), 'ortho' (1/sqrt(n)) or 'forward' (1/n).
  """
  return _fft_core("fftn", FftType.FFT, a, s, axes, norm)


def ifftn(a, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
  """Multidimensional inverse discrete Fourier transform (numpy.fft.ifftn); see `fftn`."""
  return _fft_core("ifftn", FftType.IFFT, a, s, axes, norm)


def rfftn(a, s: Shape | None = None, axes: Sequence[int] | None = None,
          norm: str | None = None):
  """Multidimensional transform of a real input (numpy.fft.rfftn).

  The last transformed axis keeps only the non-negative frequencies: s[-1] // 2 + 1 terms.
  """
  return _fft_core("rfftn", FftType.RFFT, a, s, axes, norm)


def irfftn(a, s: Shape | None = None, axes: Sequence[int] | None = None,
           norm: str | None = None):
  """Inverse of `rfftn`: a real array of lengths `s` along `axes` (numpy.fft.irfftn).

  Without `s`, the last transformed axis of m terms gives 2 * (m - 1) outputs.
  """
  return _fft_core("irfftn", FftType.IRFFT, a, s, axes, norm)


# ---- one-dimensional transforms ----------------------------------------------------------------
def fft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """One-dimensional discrete Fourier transform along `axis` (numpy.fft.fft).

  n: the transform length (the input is cropped or zero-padded to it); norm: 'backward'
  (default), 'ortho' or 'forward'.
  """
  return _fft_core_1d("fft", FftType.FFT, a, n, axis, norm)


def ifft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """One-dimensional inverse discrete Fourier transform along `axis` (numpy.fft.ifft)."""
  return _fft_core_1d("ifft", FftType.IFFT, a, n, axis, norm)


def rfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """One-dimensional transform of a real input: the n // 2 + 1 non-negative frequency terms
  (numpy.fft.rfft)."""
  return _fft_core_1d("rfft", FftType.RFFT, a, n, axis, norm)


def irfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """Inverse of `rfft`: a real signal of length n (2 * (m - 1) by default for m input terms)
  along `axis` (numpy.fft.irfft)."""
  return _fft_core_1d("irfft", FftType.IRFFT, a, n, axis, norm)


def hfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """Transform of a signal with Hermitian symmetry, given by its first half: a real spectrum
  of length n (2 * (m - 1) by default) along `axis` (numpy.fft.hfft)."""
  conj_a = ufuncs.conj(a)
  _axis_check_1d("hfft", axis)
  nn = (lax_numpy.shape(conj_a)[axis] - 1) * 2 if n is None else n
  out = _fft_core_1d("hfft", FftType.IRFFT, conj_a, n, axis, norm)
  return ufuncs.multiply(out, nn)


def ihfft(a, n: int | None = None, axis: int = -1, norm: str | None = None):
  """Inverse of `hfft`: the n // 2 + 1 first terms of a Hermitian spectrum from a real signal
  along `axis` (numpy.fft.ihfft)."""
  _axis_check_1d("ihfft", axis)
  arr = creation.asarray(a)
  nn = lax_numpy.shape(arr)[axis] if n is None else n
  out = _fft_core_1d("ihfft", FftType.RFFT, arr, n, axis, norm)
  return ufuncs.multiply(ufuncs.conj(out), 1 / nn)


# ---- two-dimensional transforms ----------------------------------------------------------------
def fft2(a, s: Shape | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
  """Two-dimensional discrete Fourier transform over `axes` (numpy.fft.fft2); see `fftn`."""
  return _fft_core_2d("fft2", FftType.FFT, a, s, axes, norm)


def ifft2(a, s: Shape | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
  """Two-dimensional inverse discrete Fourier transform over `axes` (numpy.fft.ifft2)."""
  return _fft_core_2d("ifft2", FftType.IFFT, a, s, axes, norm)


def rfft2(a, s: Shape | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
  """Two-dimensional transform of a real input over `axes` (numpy.fft.rfft2); see `rfftn`."""
  return _fft_core_2d("rfft2", FftType.RFFT, a, s, axes, norm)


def irfft2(a, s: Shape | None = None, axes: Sequence[int] = (-2, -1), norm: str | None = None):
  """Inverse of `rfft2`: a real array over `axes` (numpy.fft.irfft2); see `irfftn`."""
  return _fft_core_2d("irfft2", FftType.IRFFT, a, s, axes, norm)


# ---- frequencies and shifts --------------------------------------------------------------------
def _check_freq_args(name, n, d):
  if isinstance(n, (list, tuple)):
    raise ValueError(f"The n argument of jax.numpy.fft.{name} only takes an int. "
                     f"Got n = {list(n)}.")
  if isinstance(d, (list, tuple)):
    raise ValueError(f"The d argument of jax.numpy.fft.{name} only takes a single value. "
                     f"Got d = {list(d)}.")


def fftfreq(n: int, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of an `n`-point `fft` with sample spacing `d`: [0, 1, ...,
  -(n // 2), ..., -1] / (d * n) (numpy.fft.fftfreq), of the default float `dtype` unless
  given."""
  dtype = dtype or dtypes.default_float_dtype()
  _check_freq_args("fftfreq", n, d)
  out_dtype = dtype
  dtype = dtypes.finfo(dtypes.to_inexact_dtype(dtype)).dtype
  i = creation.arange(n, dtype=dtype, device=device)
  k = ufuncs.subtract(ufuncs.remainder(ufuncs.add(i, n // 2), n), n // 2)
  result = ufuncs.true_divide(lax_numpy.astype(k, dtype),
                              creation.array(d * n, dtype=dtype, device=device))
  return lax_numpy.astype(result, out_dtype)


def rfftfreq(n: int, d=1.0, *, dtype=None, device=None):
  """The sample frequencies of an `n`-point `rfft` with sample spacing `d`: [0, 1, ...,
  n // 2] / (d * n) (numpy.fft.rfftfreq)."""
  dtype = dtype or dtypes.default_float_dtype()
  _check_freq_args("rfftfreq", n, d)
  k = creation.arange(0, n // 2 + 1, dtype=dtype)
  return ufuncs.true_divide(k, creation.array(d * n, dtype=dtype, device=device))


@jit(static_argnums=(1, 2))
def _roll_static(a, shift, axis):
  # Each rolled axis is two static slices swapped (what jnp.roll does with static shifts).
  for ax, s in zip(*np.broadcast_arrays(axis, shift)):
    size = lax_numpy.shape(a)[ax]
    if size == 0:
      continue
    i = (-s) % size
    a = shape_ops.concatenate([shape_ops.slice_in_dim(a, i, size, axis=ax),
                               shape_ops.slice_in_dim(a, 0, i, axis=ax)], dimension=ax)
  return a


def _roll(x, shift, axes):
  ndim = lax_numpy.ndim(x)
  axes = (axes,) if isinstance(axes, int) else tuple(axes)
  axes = tuple(canonicalize_axis(ax, ndim) for ax in axes)
  shift = (operator.index(shift),) if np.ndim(shift) == 0 else tuple(
      operator.index(s) for s in shift)
  return _roll_static(x, shift, axes)


def fftshift(x, axes: None | int | Sequence[int] = None):
  """Move the zero-frequency term to the centre: a roll by n // 2 along each of `axes` (all by
  default) (numpy.fft.fftshift)."""
  x = ensure_arraylike("fftshift", x)
  shape = lax_numpy.shape(x)
  if axes is None:
    axes = tuple(range(len(shape)))
    shift = [d // 2 for d in shape]
  elif isinstance(axes, int):
    shift = shape[axes] // 2
  else:
    shift = [shape[ax] // 2 for ax in axes]
  return _roll(x, shift, axes)


def ifftshift(x, axes: None | int | Sequence[int] = None):
  """Inverse of `fftshift`: a roll by -(n // 2) along each of `axes` (all by default)
  (numpy.fft.ifftshift)."""
  x = ensure_arraylike("ifftshift", x)
  shape = lax_numpy.shape(x)
  if axes is None:
    axes = tuple(range(len(shape)))
    shift = [-(d // 2) for d in shape]
  elif isinstance(axes, int):
    shift = -(shape[axes] // 2)
  else:
    shift = [-(shape[ax] // 2) for ax in axes]
  return _roll(x, shift, axes)
