"""arrax.scipy.signal: convolutions, detrending and windowed-FFT spectral estimates.

Direct convolutions are one `lax.conv_general_dilated` (batch and feature axes of size 1);
`fftconvolve` multiplies (r)fftn spectra; `stft`, `csd` and `welch` share one spectral helper
that cuts the signal into overlapping windowed segments; `istft` overlaps and adds them back.
"""
from __future__ import annotations

import importlib
import math
import operator
import warnings
from functools import partial

import numpy as np

from arrax._src.batching import vmap
from arrax._src.lax import convolution as lax_conv
from arrax._src.lax import shape_ops
from arrax._src.lax import linalg as lax_linalg
from arrax._src.numpy import (assembly, creation, lax_numpy, padding, reductions, statistics,
                              ufuncs)
from arrax._src.numpy import fft as jnp_fft
from arrax._src.numpy import linalg as jnp_linalg
from arrax._src.numpy.util import (canonicalize_axis, check_arraylike, ensure_arraylike,
                                   promote_dtypes_inexact)
from arrax._src.lax.dot import Precision
from arrax._src.scipy.linalg import _promote_complex
from arrax._src.scipy.special import _static_int


def _index_tuple(axes):
  return tuple(axes) if isinstance(axes, (tuple, list)) else (operator.index(axes),)


# ---- convolution -------------------------------------------------------------------------------
def fftconvolve(in1, in2, mode="full", axes=None):
  """N-dimensional convolution by FFTs (over `axes` only, the others mapped, if given)."""
  check_arraylike("fftconvolve", in1, in2)
  in1, in2 = promote_dtypes_inexact(in1, in2)
  if in1.ndim != in2.ndim:
    raise ValueError("in1 and in2 should have the same dimensionality")
  if mode not in ["same", "full", "valid"]:
    raise ValueError("mode must be one of ['same', 'full', 'valid']")
  conv = partial(_fftconvolve_unbatched, mode=mode)
  if axes is None:
    return conv(in1, in2)
  axes = tuple(canonicalize_axis(ax, in1.ndim) for ax in _index_tuple(axes))
  mapped = set(range(in1.ndim)) - set(axes)
  if any(in1.shape[i] != in2.shape[i] for i in mapped):
    raise ValueError(f"mapped axes must have same shape; got in1.shape={in1.shape} "
                     f"in2.shape={in2.shape} axes={axes}")
  for ax in sorted(mapped):
    conv = vmap(conv, in_axes=ax, out_axes=ax)
  return conv(in1, in2)


def _fftconvolve_unbatched(in1, in2, mode):
  full_shape = tuple(s1 + s2 - 1 for s1, s2 in zip(in1.shape, in2.shape))
  if mode == "valid":
    no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
    swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
    if not (no_swap or swap):
      raise ValueError("For 'valid' mode, One input must be at least as large as the other in "
                       "every dimension.")
    if swap:
      in1, in2 = in2, in1
  if all(s1 == 1 or s2 == 1 for s1, s2 in zip(in1.shape, in2.shape)):
    conv = in1 * in2
  else:
    if lax_numpy.iscomplexobj(in1):
      fwd, inv = jnp_fft.fftn, jnp_fft.ifftn
    else:
      fwd, inv = jnp_fft.rfftn, jnp_fft.irfftn
    conv = inv(fwd(in1, full_shape) * fwd(in2, full_shape), full_shape)
  if mode == "full":
    out_shape = full_shape
  elif mode == "same":
    out_shape = in1.shape
  else:
    out_shape = tuple(s1 - s2 + 1 for s1, s2 in zip(in1.shape, in2.shape))
  starts = tuple((f - o) // 2 for f, o in zip(full_shape, out_shape))
  return shape_ops.dynamic_slice(conv, starts, out_shape)


def _convolve_nd(in1, in2, mode, *, precision):
  if mode not in ["full", "same", "valid"]:
    raise ValueError("mode must be one of ['full', 'same', 'valid']")
  if in1.ndim != in2.ndim:
    raise ValueError("in1 and in2 must have the same number of dimensions")
  if in1.size == 0 or in2.size == 0:
    raise ValueError(f"zero-size arrays not supported in convolutions, got shapes {in1.shape} "
                     f"and {in2.shape}.")
  in1, in2 = promote_dtypes_inexact(in1, in2)
  no_swap = all(s1 >= s2 for s1, s2 in zip(in1.shape, in2.shape))
  swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
  if not (no_swap or swap):
    raise ValueError("One input must be smaller than the other in every dimension.")
  shape_o = in2.shape
  if swap:
    in1, in2 = in2, in1
  shape = in2.shape
  in2 = lax_numpy.flip(in2)
  if mode == "valid":
    pads = [(0, 0) for _ in shape]
  elif mode == "same":
    pads = [(s - 1 - (so - 1) // 2, s - so + (so - 1) // 2) for s, so in zip(shape, shape_o)]
  else:
    pads = [(s - 1, s - 1) for s in shape]
  out = lax_conv.conv_general_dilated(in1[None, None], in2[None, None], (1,) * len(shape),
                                      pads, precision=precision)
  return out[0, 0]


def convolve(in1, in2, mode="full", method="auto", precision=None):
  """N-dimensional convolution of in1 and in2 ('direct'/'auto': one XLA convolution)."""
  if method == "fft":
    return fftconvolve(in1, in2, mode=mode)
  if method in ["direct", "auto"]:
    return _convolve_nd(in1, in2, mode, precision=precision)
  raise ValueError(f"Got method={method!r}; expected 'auto', 'fft', or 'direct'.")


def _check_2d(name, in1, in2, boundary, fillvalue):
  if boundary != "fill" or fillvalue != 0:
    raise NotImplementedError(f"{name}() only supports boundary='fill', fillvalue=0")
  if np.ndim(in1) != 2 or np.ndim(in2) != 2:
    raise ValueError(f"{name}() only supports 2-dimensional inputs.")


def convolve2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """2-D convolution (zero fill at the boundary only)."""
  _check_2d("convolve2d", in1, in2, boundary, fillvalue)
  return _convolve_nd(in1, in2, mode, precision=precision)


def correlate(in1, in2, mode="full", method="auto", precision=None):
  """N-dimensional cross-correlation: convolution with in2 flipped and conjugated."""
  return convolve(in1, lax_numpy.flip(in2.conj()), mode, precision=precision, method=method)


def correlate2d(in1, in2, mode="full", boundary="fill", fillvalue=0, precision=None):
  """2-D cross-correlation (zero fill at the boundary only)."""
  _check_2d("correlate2d", in1, in2, boundary, fillvalue)
  swap = all(s1 <= s2 for s1, s2 in zip(in1.shape, in2.shape))
  same_shape = all(s1 == s2 for s1, s2 in zip(in1.shape, in2.shape))
  flip = lax_numpy.flip
  conv = partial(_convolve_nd, mode=mode, precision=precision)
  if mode == "same":
    return flip(conv(flip(in1), in2.conj()))
  if mode == "valid":
    if swap and not same_shape:
      return conv(flip(in2), in1.conj())
    return flip(conv(flip(in1), in2.conj()))
  if swap:
    return conv(flip(in2), in1.conj()).conj()
  return flip(conv(flip(in1), in2.conj()))


# ---- detrend -----------------------------------------------------------------------------------
def detrend(data, axis=-1, type="linear", bp=0, overwrite_data=None):  # noqa: A002
  """data minus its mean ('constant') or its least-squares line per segment ('linear')."""
  if overwrite_data is not None:
    raise NotImplementedError("overwrite_data argument not implemented.")
  if type not in ["constant", "linear"]:
    raise ValueError("Trend type must be 'linear' or 'constant'.")
  data, = promote_dtypes_inexact(creation.asarray(data))
  if type == "constant":
    return data - data.mean(axis, keepdims=True)
  n = data.shape[axis]
  bps = np.sort(np.unique(np.r_[0, bp, n]))
  if bps[0] < 0 or bps[-1] > n:
    raise ValueError("Breakpoints must be non-negative and less than length of data along "
                     "given axis.")
  data = lax_numpy.moveaxis(data, axis, 0)
  shape = data.shape
  data = data.reshape(n, -1)
  for m in range(len(bps) - 1):
    npts = bps[m + 1] - bps[m]
    a = lax_numpy.vstack([creation.ones(npts, dtype=data.dtype),
                          creation.arange(1, npts + 1, dtype=data.dtype)
                          / npts.astype(data.dtype)]).T
    sl = slice(bps[m], bps[m + 1])
    coef, *_ = jnp_linalg.lstsq(a, data[sl])
    data = data.at[sl].add(-lax_numpy.matmul(a, coef, precision=Precision.HIGHEST))
  return lax_numpy.moveaxis(data.reshape(shape), 0, axis)


# ---- windows and segments ------------------------------------------------------------------------
def _hann(n):
  if n == 1:
    return creation.array([1.0])
  return ufuncs.sin(creation.linspace(0, np.pi, n, endpoint=False)) ** 2


def _named_window(window, n):
  """A window by SciPy's name (only 'hann' without SciPy installed)."""
  if isinstance(window, str) and window == "hann":
    return _hann(n)
  try:
    sp_signal = importlib.import_module("scipy.signal")
  except ImportError as err:
    raise ImportError(f"scipy must be available to use window={window!r}") from err
  return sp_signal.get_window(window, n)


def _triage_segments(window, nperseg, input_length, dtype):
  if isinstance(window, (str, tuple)):
    n = input_length if nperseg is None else int(nperseg)
    if n > input_length:
      warnings.warn(f"nperseg={n} is greater than input_length={input_length}, using "
                    f"nperseg={input_length}")
      n = input_length
    return creation.array(_named_window(window, n), dtype=dtype), n
  win = creation.asarray(window, dtype=dtype)
  n = win.size if nperseg is None else int(nperseg)
  if win.ndim != 1:
    raise ValueError("window must be 1-D")
  if input_length < win.size:
    raise ValueError("window is longer than input signal")
  if n != win.size:
    raise ValueError("value specified for nperseg is different from length of window")
  return win, n


def _fft_segments(x, win, detrend_func, nperseg, noverlap, nfft, sides):
  """The windowed FFTs of x's overlapping segments along its last axis: [..., segs, freqs]."""
  if x.dtype.kind == "i":
    x = x.astype(win.dtype)
  *batch, length = x.shape
  if nperseg == 1 and noverlap == 0:
    segs = x[..., np.newaxis]
  else:
    starts = creation.arange(length - nperseg + 1, step=nperseg - noverlap)
    cut = partial(shape_ops.dynamic_slice_in_dim, x, slice_size=nperseg, axis=x.ndim - 1)
    segs = vmap(lambda s: cut(s), out_axes=-2)(starts)
  segs = detrend_func(segs)
  if lax_numpy.iscomplexobj(win):
    segs, = _promote_complex(segs)
  segs = win.reshape((1,) * len(batch) + (1, nperseg)) * segs
  if sides == "twosided":
    return jnp_fft.fft(segs, n=nfft)
  return jnp_fft.rfft(segs.real, n=nfft)


def _odd_ext(x, n, axis=-1):
  if n < 1:
    return x
  if n > x.shape[axis] - 1:
    raise ValueError(f"The extension length n ({n}) is too big. It must not exceed "
                     f"x.shape[axis]-1, which is {x.shape[axis] - 1}.")
  ax = canonicalize_axis(axis, x.ndim)
  sl = partial(shape_ops.slice_in_dim, x, axis=ax)
  size = x.shape[ax]
  left_end, right_end = sl(0, 1), sl(size - 1, size)
  left_ext = lax_numpy.flip(sl(1, n + 1), axis=ax)
  right_ext = lax_numpy.flip(sl(size - n - 1, size - 1), axis=ax)
  return lax_numpy.concatenate((2 * left_end - left_ext, x, 2 * right_end - right_ext), axis=ax)


def _edge_pad(mode, **kw):
  def pad(x, n, axis=-1):
    widths = [(0, 0)] * x.ndim
    widths[axis] = (n, n)
    return padding.pad(x, widths, mode, **kw)
  return pad


_BOUNDARIES = {"even": _edge_pad("reflect"), "odd": _odd_ext, "constant": _edge_pad("edge"),
               "zeros": _edge_pad("constant", constant_values=0.0),
               None: lambda x, *args, **kwargs: x}


def _delete(t, i):
  return t[:i] + t[i + 1:]


def _pad_end(x, n):
  """x with n zeros appended along its last axis."""
  return lax_numpy.concatenate((x, creation.zeros((*x.shape[:-1], n), x.dtype)), axis=-1)


def _spectral_helper(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
                     detrend_type="constant", return_onesided=True, scaling="density",
                     axis=-1, mode="psd", boundary=None, padded=False):
  if mode not in ("psd", "stft"):
    raise ValueError(f"Unknown value for mode {mode}, must be one of: ('psd', 'stft')")
  if boundary not in _BOUNDARIES:
    raise ValueError(f"Unknown boundary option '{boundary}', must be one of: "
                     f"{list(_BOUNDARIES.keys())}")
  axis = canonicalize_axis(_static_int(axis, "axis of windowed-FFT"), np.ndim(x))
  if y is None:
    check_arraylike("spectral_helper", x)
    x, = promote_dtypes_inexact(x)
    y_arr = x
    outershape = _delete(x.shape, axis)
  else:
    if mode != "psd":
      raise ValueError("two-argument mode is available only when mode=='psd'")
    check_arraylike("spectral_helper", x, y)
    x, y_arr = promote_dtypes_inexact(x, y)
    if x.ndim != y_arr.ndim:
      raise ValueError("two-arguments must have the same rank ({x.ndim} vs {y.ndim}).")
    try:
      outershape = lax_numpy.broadcast_shapes(_delete(x.shape, axis), _delete(y_arr.shape, axis))
    except ValueError as err:
      raise ValueError("x and y cannot be broadcast together.") from err
  result_dtype = lax_linalg._complex_dtype(x.dtype)
  freq_dtype = np.finfo(result_dtype).dtype
  if nperseg is not None:
    nperseg = _static_int(nperseg, "nperseg of windowed-FFT")
    if nperseg < 1:
      raise ValueError("nperseg must be a positive integer")
  win, nperseg = _triage_segments(window, nperseg, input_length=x.shape[axis], dtype=x.dtype)
  noverlap = nperseg // 2 if noverlap is None else _static_int(noverlap,
                                                                 "noverlap of windowed-FFT")
  nfft = nperseg if nfft is None else _static_int(nfft, "nfft of windowed-FFT")
  if y is None:
    if x.size == 0:
      return (creation.zeros(x.shape, freq_dtype), creation.zeros(x.shape, freq_dtype),
              creation.zeros(x.shape, result_dtype))
  elif x.size == 0 or y_arr.size == 0:
    shape = outershape[:axis] + (min(x.shape[axis], y_arr.shape[axis]),) + outershape[axis:]
    return (creation.zeros(shape, freq_dtype), creation.zeros(shape, freq_dtype),
            creation.zeros(shape, result_dtype))
  x = lax_numpy.moveaxis(x, axis, -1)
  if y is not None and y_arr.ndim > 1:
    y_arr = lax_numpy.moveaxis(y_arr, axis, -1)
  if y is not None and x.shape[-1] != y_arr.shape[-1]:
    if x.shape[-1] < y_arr.shape[-1]:
      x = _pad_end(x, y_arr.shape[-1] - x.shape[-1])
    else:
      y_arr = _pad_end(y_arr, x.shape[-1] - y_arr.shape[-1])
  if nfft < nperseg:
    raise ValueError("nfft must be greater than or equal to nperseg.")
  if noverlap >= nperseg:
    raise ValueError("noverlap must be less than nperseg.")
  nstep = nperseg - noverlap
  if boundary is not None:
    ext = _BOUNDARIES[boundary]
    x = ext(x, nperseg // 2, axis=-1)
    if y is not None:
      y_arr = ext(y_arr, nperseg // 2, axis=-1)
  if padded:
    nadd = (-(x.shape[-1] - nperseg) % nstep) % nperseg
    x = _pad_end(x, nadd)
    if y is not None:
      y_arr = _pad_end(y_arr, nadd)
  if isinstance(detrend_type, str):
    detrend_func = partial(detrend, type=detrend_type, axis=-1)
  elif callable(detrend_type):
    if axis != -1:
      def detrend_func(d):
        return lax_numpy.moveaxis(detrend_type(lax_numpy.moveaxis(d, axis, -1)), -1, axis)
    else:
      detrend_func = detrend_type
  elif not detrend_type:
    def detrend_func(d):
      return d
  else:
    raise ValueError(f"Unsupported detrend type: {detrend_type}")
  if scaling == "density":
    scale = 1.0 / (fs * (win * win).sum())
  elif scaling == "spectrum":
    scale = 1.0 / win.sum() ** 2
  else:
    raise ValueError(f"Unknown scaling: {scaling}")
  if mode == "stft":
    scale = ufuncs.sqrt(scale)
  scale, = _promote_complex(scale)
  sides = "onesided" if return_onesided else "twosided"
  if return_onesided and (lax_numpy.iscomplexobj(x) or lax_numpy.iscomplexobj(y)):
    sides = "twosided"
    warnings.warn("Input data is complex, switching to return_onesided=False")
  if sides == "twosided":
    freqs = jnp_fft.fftfreq(nfft, 1 / fs, dtype=freq_dtype)
  else:
    freqs = jnp_fft.rfftfreq(nfft, 1 / fs, dtype=freq_dtype)
  result = _fft_segments(x, win, detrend_func, nperseg, noverlap, nfft, sides)
  if y is not None:
    result = ufuncs.conjugate(result) * _fft_segments(y_arr, win, detrend_func, nperseg,
                                                      noverlap, nfft, sides)
  elif mode == "psd":
    result = ufuncs.conjugate(result) * result
  result = result * scale
  if sides == "onesided" and mode == "psd":
    end = None if nfft % 2 else -1
    result = result.at[..., 1:end].mul(2)
  time = creation.arange(nperseg / 2, x.shape[-1] - nperseg / 2 + 1, nperseg - noverlap,
                         dtype=freq_dtype) / fs
  if boundary is not None:
    time = time - (nperseg / 2) / fs
  result = result.astype(result_dtype)
  if y is None and mode != "stft":
    result = result.real
  return freqs, time, lax_numpy.moveaxis(result, -1, axis)


def stft(x, fs=1.0, window="hann", nperseg=256, noverlap=None, nfft=None, detrend=False,
         return_onesided=True, boundary="zeros", padded=True, axis=-1):
  """The short-time Fourier transform: (frequencies, segment times, Zxx)."""
  return _spectral_helper(x, None, fs, window, nperseg, noverlap, nfft, detrend,
                          return_onesided, scaling="spectrum", axis=axis, mode="stft",
                          boundary=boundary, padded=padded)


def _median_bias(n):
  ii_2 = creation.arange(2., n, 2)
  return 1 + reductions.sum(1. / (ii_2 + 1) - 1. / ii_2)


def csd(x, y, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
        detrend="constant", return_onesided=True, scaling="density", axis=-1,
        average="mean"):
  """The cross power spectral density of x and y by Welch's method: (frequencies, Pxy)."""
  freqs, _, pxy = _spectral_helper(x, y, fs, window, nperseg, noverlap, nfft, detrend,
                                   return_onesided, scaling, axis, mode="psd")
  if y is not None:
    pxy = pxy + 0j
  if pxy.ndim >= 2 and pxy.size > 0:
    if pxy.shape[-1] > 1:
      if average == "median":
        bias = _median_bias(pxy.shape[-1]).astype(pxy.dtype)
        if lax_numpy.iscomplexobj(pxy):
          pxy = (statistics.median(ufuncs.real(pxy), axis=-1)
                 + 1j * statistics.median(ufuncs.imag(pxy), axis=-1))
        else:
          pxy = statistics.median(pxy, axis=-1)
        pxy = pxy / bias
      elif average == "mean":
        pxy = pxy.mean(axis=-1)
      else:
        raise ValueError(f'average must be "median" or "mean", got {average}')
    else:
      pxy = pxy.reshape(pxy.shape[:-1])
  return freqs, pxy


def welch(x, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,
          detrend="constant", return_onesided=True, scaling="density", axis=-1,
          average="mean"):
  """The power spectral density of x by Welch's method: (frequencies, Pxx)."""
  freqs, pxx = csd(x, None, fs=fs, window=window, nperseg=nperseg, noverlap=noverlap,
                   nfft=nfft, detrend=detrend, return_onesided=return_onesided,
                   scaling=scaling, axis=axis, average=average)
  return freqs, pxx.real


def _overlap_and_add(x, step):
  """Sum frames x [..., frames, length] placed every `step` samples."""
  check_arraylike("_overlap_and_add", x)
  step = _static_int(step, "step_size for overlap_and_add")
  if x.ndim < 2:
    raise ValueError("Input must have (..., frames, frame_length) shape.")
  *batch, nframes, seg_len = x.shape
  flat = math.prod(batch)
  x = x.reshape((flat, nframes, seg_len))
  out_size = step * (nframes - 1) + seg_len
  nsteps = 1 + (seg_len - 1) // step
  x = padding.pad(x, ((0, 0), (0, 0), (0, nsteps * step - seg_len)))
  x = x.reshape((flat, nframes, nsteps, step)).transpose((0, 2, 1, 3))
  x = padding.pad(x, ((0, 0), (0, 0), (0, nframes), (0, 0)))
  shrunk = x.shape[2] - 1
  x = x.reshape((flat, -1))[:, :nsteps * shrunk * step]
  x = x.reshape((flat, nsteps, shrunk * step)).sum(axis=1)[:, :out_size]
  return x.reshape(tuple(batch) + (-1,))


def istft(Zxx, fs=1.0, window="hann", nperseg=None, noverlap=None, nfft=None,  # noqa: N803
          input_onesided=True, boundary=True, time_axis=-1, freq_axis=-2):
  """The inverse short-time Fourier transform: (times, x)."""
  z = ensure_arraylike("istft", Zxx)
  if z.ndim < 2:
    raise ValueError("Input stft must be at least 2d!")
  freq_axis = canonicalize_axis(freq_axis, z.ndim)
  time_axis = canonicalize_axis(time_axis, z.ndim)
  if freq_axis == time_axis:
    raise ValueError("Must specify differing time and frequency axes!")
  z = creation.asarray(z, dtype=lax_linalg._complex_dtype(z.dtype))
  n_default = 2 * (z.shape[freq_axis] - 1) if input_onesided else z.shape[freq_axis]
  nperseg = _static_int(nperseg or n_default, "nperseg: segment length of STFT")
  if nperseg < 1:
    raise ValueError("nperseg must be a positive integer")
  if nfft is None:
    nfft_int = n_default + (1 if input_onesided and nperseg == n_default + 1 else 0)
  else:
    nfft_int = _static_int(nfft, "nfft of STFT")
  if nfft_int < nperseg:
    raise ValueError(f"FFT length ({nfft_int}) must be longer than nperseg ({nperseg}).")
  noverlap = _static_int(noverlap or nperseg // 2, "noverlap of STFT")
  if noverlap >= nperseg:
    raise ValueError("noverlap must be less than nperseg.")
  nstep = nperseg - noverlap
  if time_axis != z.ndim - 1 or freq_axis != z.ndim - 2:
    outer = tuple(i for i in range(z.ndim) if i not in {time_axis, freq_axis})
    z = lax_numpy.transpose(z, outer + (freq_axis, time_axis))
  ifunc = jnp_fft.irfft if input_onesided else jnp_fft.ifft
  xsubs = ifunc(z, axis=-2, n=nfft)[..., :nperseg, :]
  if isinstance(window, (str, tuple)):
    win = creation.array(_named_window(window, nperseg)).astype(xsubs.dtype)
  else:
    win = creation.asarray(window)
    if len(win.shape) != 1:
      raise ValueError("window must be 1-D")
    if win.shape[0] != nperseg:
      raise ValueError(f"window must have length of {nperseg}")
  xsubs = xsubs * win.sum()
  win = shape_ops.expand_dims(win, (*range(xsubs.ndim - 2), xsubs.ndim - 1))
  x = _overlap_and_add((xsubs * win).swapaxes(-2, -1), nstep)
  win_sq = assembly.repeat(win * win, xsubs.shape[-1], axis=-1)
  norm = _overlap_and_add(win_sq.swapaxes(-2, -1), nstep)
  if boundary:
    x = x[..., nperseg // 2:-(nperseg // 2)]
    norm = norm[..., nperseg // 2:-(nperseg // 2)]
  x = x / lax_numpy.where(norm > 1e-10, norm, 1.0)
  if x.ndim > 1 and time_axis != z.ndim - 1:
    if freq_axis < time_axis:
      time_axis -= 1
    x = lax_numpy.moveaxis(x, -1, time_axis)
  time = creation.arange(x.shape[0], dtype=np.finfo(x.dtype).dtype) / fs
  return time, x

