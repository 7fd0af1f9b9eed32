"""arrax.scipy.fft: the type-2 discrete cosine transform and its inverse, by FFTs.

The DCT of length N reorders x (even samples, then the odd ones reversed), takes one complex
FFT and rotates bin k by exp(-i pi k / 2N); two axes at once use one 2-D FFT. The inverse undoes
each step. 'ortho' scales bin 0 by sqrt(1 / 4N) and the others by sqrt(1 / 2N).
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from arrax._src import dtypes
from arrax._src.lax import elementwise as lax
from arrax._src.lax import linalg as lax_linalg
from arrax._src.lax import shape_ops
from arrax._src.numpy import assembly, creation, lax_numpy, ufuncs
from arrax._src.numpy import fft as jnp_fft
from arrax._src.numpy.util import canonicalize_axis, ensure_arraylike, promote_dtypes_inexact


def _w4(n, k):
  """exp(-i pi k / 2n), complex."""
  dt = lax_linalg._complex_dtype(k.dtype)
  return ufuncs.exp(-.5j * np.pi * k.astype(dt) / creation.asarray(n, dt))


def _others(ndim, axis):
  return tuple(a for a in range(ndim) if a != axis)


def _interleave(x, axis):
  size = x.shape[axis]
  evens = shape_ops.slice_in_dim(x, 0, size, 2, axis)
  odds = shape_ops.rev(shape_ops.slice_in_dim(x, 1, size, 2, axis), (axis,))
  return shape_ops.concatenate([evens, odds], axis)


def _deinterleave(x, axis):
  size = x.shape[axis]
  half = math.ceil(size / 2)
  v0 = shape_ops.slice_in_dim(x, 0, half, 1, axis)
  v1 = shape_ops.rev(shape_ops.slice_in_dim(x, half, size, 1, axis), (axis,))
  full = tuple(slice(None) for _ in range(x.ndim))
  at = lambda sl: full[:axis] + (sl,) + full[axis + 1:]  # noqa: E731
  out = creation.zeros(x.shape, dtype=x.dtype)
  return out.at[at(slice(None, None, 2))].set(v0).at[at(slice(1, None, 2))].set(v1)


def _ortho(out, axis):
  n = out.shape[axis]
  factor = shape_ops.concatenate([creation.full((1,), 4, out.dtype),
                                  creation.full((n - 1,), 2, out.dtype)], 0)
  factor = shape_ops.expand_dims(factor, _others(out.ndim, axis))
  return out / lax.sqrt(factor * n)


def _checked(name, x, type, norm):  # noqa: A002
  """x as an array, after the argument checks the four transforms share."""
  x = ensure_arraylike(name, x)
  if type != 2:
    raise NotImplementedError("Only DCT type 2 is implemented.")
  if norm is not None and norm not in ["backward", "ortho"]:
    raise ValueError(f"jax.scipy.fft.{name}: norm={norm!r} is not implemented")
  return x


def _is_complex(x):
  return dtypes.issubdtype(x.dtype, np.complexfloating)


def _complex_parts(fn, x, **kw):
  return lax.complex(fn(x.real, **kw), fn(x.imag, **kw))


def _resized_1d(x, n, axis):
  """(x zero-padded or cut to length n along axis (unless n is None), the axis as an index)."""
  axis = canonicalize_axis(axis, x.ndim)
  return (x if n is None else _resize_all(x, [n], [axis])), axis


def dct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
  """The type-2 DCT of x along `axis` (zero-padded or cut to n)."""
  x = _checked("dct", x, type, norm)
  if _is_complex(x):
    return _complex_parts(dct, x, type=type, n=n, norm=norm, axis=axis)
  x, axis = _resized_1d(x, n, axis)
  size = x.shape[axis]
  spec = jnp_fft.fft(_interleave(x, axis), axis=axis)
  k = shape_ops.expand_dims(creation.arange(size, dtype=spec.real.dtype), _others(x.ndim, axis))
  out = 2 * (spec * _w4(size, k)).real
  return _ortho(out, axis) if norm == "ortho" else out


def _dct2(x, axes, norm):
  a1, a2 = (canonicalize_axis(a, x.ndim) for a in axes)
  n1, n2 = x.shape[a1], x.shape[a2]
  spec = jnp_fft.fftn(_interleave(_interleave(x, a1), a2), axes=axes)
  k1 = shape_ops.expand_dims(creation.arange(n1, dtype=spec.dtype), _others(x.ndim, a1))
  k2 = shape_ops.expand_dims(creation.arange(n2, dtype=spec.dtype), _others(x.ndim, a2))
  mirrored = assembly.roll(lax_numpy.flip(spec, axis=a2), shift=1, axis=a2)
  out = 2 * (_w4(n1, k1) * (_w4(n2, k2) * spec + _w4(n2, -k2) * mirrored)).real
  return _ortho(_ortho(out, a1), a2) if norm == "ortho" else out


def _axes_and_sizes(x, s, axes):
  if s is not None:
    try:
      s = list(s)
    except TypeError:
      s = [operator.index(s)]
    if len(s) > x.ndim:
      raise ValueError(f"s must have at most x.ndim ({x.ndim}) elements, got {len(s)}")
  if axes is None:
    axes = tuple(range(x.ndim - len(s), x.ndim)) if s is not None else tuple(range(x.ndim))
  else:
    axes = tuple(canonicalize_axis(a, x.ndim) for a in
                 (axes if isinstance(axes, Sequence) else (axes,)))
    if len(set(axes)) != len(axes):
      raise ValueError(f"repeated axis: {axes}")
  return s, axes


def _resize_all(x, s, axes):
  """Zero-pad (or cut) x to the sizes s along axes (x itself when s is None)."""
  if s is None:
    return x
  sizes = dict(zip(axes, s))
  return shape_ops.pad(x, creation.array(0, x.dtype),
                       [(0, sizes[a] - x.shape[a] if a in sizes else 0, 0)
                        for a in range(x.ndim)])


def dctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
  """The multidimensional type-2 DCT over `axes` (sizes `s`)."""
  x = _checked("dctn", x, type, norm)
  if _is_complex(x):
    return _complex_parts(dctn, x, type=type, s=s, norm=norm, axes=axes)
  s, axes = _axes_and_sizes(x, s, axes)
  if len(axes) == 1:
    return dct(x, n=s[0] if s is not None else None, axis=axes[0], norm=norm)
  x = _resize_all(x, s, axes)
  if len(axes) == 2:
    return _dct2(x, axes=axes, norm=norm)
  for block in [axes[i:i + 2] for i in range(0, len(axes), 2)]:
    x = dctn(x, axes=block, norm=norm)
  return x


def idct(x, type=2, n=None, axis=-1, norm=None):  # noqa: A002
  """The inverse of the type-2 DCT along `axis`."""
  x = _checked("idct", x, type, norm)
  if _is_complex(x):
    return _complex_parts(idct, x, type=type, n=n, norm=norm, axis=axis)
  x, axis = _resized_1d(x, n, axis)
  size = x.shape[axis]
  x, = promote_dtypes_inexact(x)
  if norm is None or norm == "backward":
    x = _ortho(x, axis)
  x = _ortho(x, axis)
  k = shape_ops.expand_dims(creation.arange(size, dtype=x.dtype), _others(x.ndim, axis))
  w4 = _w4(size, k)
  x = x.astype(w4.dtype) / w4 * 2 * size
  return _deinterleave(jnp_fft.ifft(x, axis=axis).real, axis)


def idctn(x, type=2, s=None, axes=None, norm=None):  # noqa: A002
  """The inverse of the multidimensional type-2 DCT over `axes`."""
  x = _checked("idctn", x, type, norm)
  if _is_complex(x):
    return _complex_parts(idctn, x, type=type, s=s, norm=norm, axes=axes)
  s, axes = _axes_and_sizes(x, s, axes)
  if len(axes) == 1:
    return idct(x, n=s[0] if s is not None else None, axis=axes[0], norm=norm)
  x = _resize_all(x, s, axes)
  for axis in axes:
    x = idct(x, axis=axis, norm=norm)
  return x
