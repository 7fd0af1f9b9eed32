"""Separable image resampling, as jax.image: `resize` and `scale_and_translate`.

Each resampled axis becomes an (input size x output size) weight matrix built from a 1-d
kernel evaluated at the distance between input pixel centres and the sample positions of the
output pixels; the matrices are applied to the image with one einsum. The arithmetic is written
in the same order as JAX's, so values and jaxprs agree.
"""
from __future__ import annotations

import enum
import operator
from collections.abc import Callable, Sequence

import numpy as np

from arrax._src import core, dtypes
from arrax._src.jit import jit
from arrax._src.lax import broadcasting
from arrax._src.lax.dot import Precision
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs
from arrax._src.numpy import util as np_util
from arrax._src.numpy.einsum import einsum


# ---- kernels ----------------------------------------------------------------------------------
# Each takes |distance| (already divided by the kernel's stretch) and gives the weight.

def _lanczos(radius, x):
  num = radius * ufuncs.sin(np.pi * x) * ufuncs.sin(np.pi * x / radius)
  # num / (pi x)^2, with the limit 1 near x = 0 (and no division by zero there).
  val = lax_numpy.where(x > 1e-3,
                        ufuncs.divide(num, lax_numpy.where(x != 0, np.pi**2 * x**2, 1)), 1)
  return lax_numpy.where(x > radius, 0., val)


def _keys_cubic(x):
  # Keys' cubic convolution kernel with a = -0.5 (Pillow/TensorFlow/PyTorch with antialias).
  near = ((1.5 * x - 2.5) * x) * x + 1.
  val = lax_numpy.where(x >= 1., ((-0.5 * x + 2.5) * x - 4.) * x + 2., near)
  return lax_numpy.where(x >= 2., 0., val)


def _opencv_cubic(x):
  # The a = -0.75 cubic of OpenCV, which PyTorch uses without antialiasing.
  a = -0.75
  near = ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0
  val = lax_numpy.where(x >= 1.0, ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a, near)
  return lax_numpy.where(x >= 2.0, 0.0, val)


def _triangle(x):
  return ufuncs.maximum(0, 1 - ufuncs.abs(x))


_AREA = object()   # marks box-overlap weights instead of a kernel function


class ResizeMethod(enum.Enum):
  """How `resize` / `scale_and_translate` interpolate.

  NEAREST: nearest neighbour (resize only). LINEAR: (bi/tri)linear, a triangle filter.
  LANCZOS3 / LANCZOS5: Lanczos windowed sinc of radius 3 / 5. CUBIC: Keys cubic (a = -0.5).
  CUBIC_PYTORCH: PyTorch's bicubic (a = -0.75 with edge replication when not antialiasing,
  else CUBIC). AREA: the average over each output pixel's footprint (a box filter).
  """
  NEAREST = 0
  LINEAR = 1
  LANCZOS3 = 2
  LANCZOS5 = 3
  CUBIC = 4
  CUBIC_PYTORCH = 5
  AREA = 6

  @staticmethod
  def from_string(s: str):
    """The method a name stands for ('bilinear', 'bicubic', 'lanczos3', ...)."""
    try:
      return _METHOD_NAMES[s]
    except (KeyError, TypeError):
      raise ValueError(f'Unknown resize method "{s}"') from None


_METHOD_NAMES = {
    "nearest": ResizeMethod.NEAREST,
    "linear": ResizeMethod.LINEAR, "bilinear": ResizeMethod.LINEAR,
    "trilinear": ResizeMethod.LINEAR, "triangle": ResizeMethod.LINEAR,
    "lanczos3": ResizeMethod.LANCZOS3, "lanczos5": ResizeMethod.LANCZOS5,
    "cubic": ResizeMethod.CUBIC, "bicubic": ResizeMethod.CUBIC, "tricubic": ResizeMethod.CUBIC,
    "cubic-pytorch": ResizeMethod.CUBIC_PYTORCH, "bicubic-pytorch": ResizeMethod.CUBIC_PYTORCH,
    "area": ResizeMethod.AREA,
}

# method -> (kernel radius, kernel)
_KERNELS = {
    ResizeMethod.LINEAR: (1, _triangle),
    ResizeMethod.LANCZOS3: (3, lambda x: _lanczos(3., x)),
    ResizeMethod.LANCZOS5: (5, lambda x: _lanczos(5., x)),
    ResizeMethod.CUBIC: (2, _keys_cubic),
    ResizeMethod.CUBIC_PYTORCH: (2, _opencv_cubic),
    ResizeMethod.AREA: (1, _AREA),
}


def _canonical_shape(shape):
  """A tuple of Python ints (an int is a 1-d shape); TypeError as JAX's otherwise."""
  if isinstance(shape, int):
    shape = (shape,)
  try:
    return tuple(operator.index(d) for d in shape)
  except TypeError:
    pass
  msg = f"Shapes must be 1D sequences of concrete values of integer type, got {shape}."
  if any(isinstance(d, core.Tracer) for d in shape):
    msg += ("\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller "
            "subfunctions.")
  raise TypeError(msg)


# ---- weights ----------------------------------------------------------------------------------
def _normalize_columns(w):
  """Each output pixel's weights divided by their sum (zero where the sum is ~0)."""
  total = reductions.sum(w, axis=0, keepdims=True)
  nonzero = ufuncs.abs(total) > 1000. * float(np.finfo(np.float32).eps)
  return lax_numpy.where(nonzero, ufuncs.divide(w, lax_numpy.where(total != 0, total, 1)), 0)


def _weight_matrix(in_size: int, out_size: int, scale, translation, kernel: Callable,
                   antialias: bool, edge_padding: bool, radius: int | None):
  """The (in_size, out_size) resampling matrix of one axis."""
  dtype = dtypes.result_type(scale, translation)
  inv_scale = 1. / scale
  # Downsampling with antialias widens the kernel by 1/scale (a low-pass filter); upsampling
  # only interpolates.
  stretch = ufuncs.maximum(inv_scale, 1.) if antialias else 1.
  # The input coordinate of each output pixel's centre.
  centres = ((creation.arange(out_size, dtype=dtype) + 0.5) * inv_scale
             - translation * inv_scale - 0.5)
  if edge_padding:
    if antialias:   # not reachable from the public functions
      raise NotImplementedError("antialiasing with edge padding is not supported")
    pad = radius
  else:
    pad = 0
  positions = creation.arange(-pad, in_size + pad, dtype=dtype)

  if kernel is _AREA:
    # Length of the overlap of output pixel i's footprint [lo_i, hi_i] (in input coordinates)
    # with input pixel j's [j, j + 1].
    lo_out = creation.arange(out_size, dtype=dtype) * inv_scale - translation * inv_scale
    hi_out = lo_out + inv_scale
    lo_in = creation.arange(in_size, dtype=dtype)
    hi_in = lo_in + 1.0
    w = ufuncs.maximum(0.0, ufuncs.minimum(hi_out[np.newaxis, :], hi_in[:, np.newaxis])
                       - ufuncs.maximum(lo_out[np.newaxis, :], lo_in[:, np.newaxis]))
  else:
    dist = ufuncs.abs(centres[np.newaxis, :] - positions[:, np.newaxis])
    w = kernel(dist / stretch)

  if edge_padding:
    # Fold the weights of the pixels beyond each edge onto the edge pixel (scatter-add).
    rows = lax_numpy.clip(positions.astype(dtypes.int32), 0, in_size - 1)
    out_index = creation.arange(out_size)
    folded = creation.zeros((in_size, out_size), dtype=dtype)
    cols = broadcasting.broadcast_in_dim(out_index, (positions.shape[0], out_size), (1,))
    folded = folded.at[rows[:, np.newaxis], cols].add(w)
    return _normalize_columns(folded)

  w = _normalize_columns(w)
  # Output pixels whose centre falls outside the input get nothing.
  inside = ufuncs.logical_and(centres >= -0.5, centres <= in_size - 0.5)
  return lax_numpy.where(inside[np.newaxis, :], w, 0)


def _apply(x, out_shape, spatial_dims, scale, translation, kernel, antialias, precision,
           edge_padding=False, radius=None):
  """Resample `x` along `spatial_dims` to `out_shape` with one einsum of the weight matrices."""
  assert len(x.shape) == len(out_shape)
  assert len(spatial_dims) == len(scale) == len(translation)
  if not spatial_dims:
    return x
  ndim = len(out_shape)
  operands = []
  out_labels = list(range(ndim))
  for i, d in enumerate(spatial_dims):
    d = np_util.canonicalize_axis(d, x.ndim)
    w = _weight_matrix(x.shape[d], out_shape[d], scale[i], translation[i], kernel, antialias,
                       edge_padding, radius).astype(x.dtype)
    operands += [w, [d, ndim + i]]
    out_labels[d] = ndim + i
  return einsum(x, list(range(ndim)), *operands, out_labels, precision=precision)


def _check_rank(shape, image):
  if len(shape) != image.ndim:
    raise ValueError("shape must have length equal to the number of dimensions of x; "
                     f" {shape} vs {image.shape}")


def _kernel_for(method, antialias):
  if method == ResizeMethod.CUBIC_PYTORCH and antialias:
    method = ResizeMethod.CUBIC
  radius, kernel = _KERNELS[method]
  return radius, kernel, method == ResizeMethod.CUBIC_PYTORCH and not antialias


def scale_and_translate(image, shape, spatial_dims: Sequence[int], scale, translation,
                        method: str | ResizeMethod, antialias: bool = True,
                        precision=Precision.HIGHEST):
  """Resample `image` to `shape`, mapping input point p to `p * scale + translation` along
  each of `spatial_dims`.

  Pixels are half-centred (pixel k covers [k, k + 1]); output pixels whose inverse-mapped
  centre lies outside the input are zero. Nearest-neighbour sampling is not supported here.

  Args:
    image: the input array.
    shape: the output shape (one entry per dimension of `image`).
    spatial_dims: the K dimensions to transform.
    scale, translation: arrays of K values, one per spatial dimension.
    method: a `ResizeMethod` or its name ('linear', 'cubic', 'lanczos3', ...).
    antialias: widen the kernel when downsampling (no effect when upsampling).
    precision: the einsum precision.

  Returns:
    The resampled image, in a floating dtype.
  """
  shape = _canonical_shape(shape)
  _check_rank(shape, image)
  if isinstance(method, str):
    method = ResizeMethod.from_string(method)
  if method == ResizeMethod.NEAREST:
    raise ValueError("Nearest neighbor resampling is not currently supported for "
                     "scale_and_translate.")
  assert isinstance(method, ResizeMethod)
  radius, kernel, edge_padding = _kernel_for(method, antialias)
  image, = np_util.promote_dtypes_inexact(image)
  scale, translation = np_util.promote_dtypes_inexact(scale, translation)
  return _apply(image, shape, spatial_dims, scale, translation, kernel, antialias, precision,
                edge_padding=edge_padding, radius=radius)


def _resize_nearest(x, out_shape):
  for d, (m, n) in enumerate(zip(x.shape, out_shape)):
    if m == n:
      continue
    # Index of the input pixel containing each output pixel's centre (computed in float32,
    # as JAX does whatever the x64 mode).
    src = (creation.arange(n, dtype=np.float32) + 0.5) * m / n
    src = ufuncs.floor(src.astype(np.float32)).astype(np.int32)
    idx = [slice(None)] * len(x.shape)
    idx[d] = src
    x = x[tuple(idx)]
  return x


@jit(static_argnums=(1, 2, 3, 4))
def _resize(image, shape, method, antialias, precision):
  _check_rank(shape, image)
  if isinstance(method, str):
    method = ResizeMethod.from_string(method)
  if method == ResizeMethod.NEAREST:
    return _resize_nearest(image, shape)
  assert isinstance(method, ResizeMethod)
  image, = np_util.promote_dtypes_inexact(image)
  # Axes whose size is unchanged are the identity for every (interpolating) kernel: skip them.
  spatial_dims = tuple(d for d in range(len(shape)) if image.shape[d] != shape[d])
  radius, kernel, edge_padding = _kernel_for(method, antialias)
  scale = [1.0 if shape[d] == 0 else shape[d] / image.shape[d] for d in spatial_dims]
  return _apply(image, shape, spatial_dims, scale, [0.] * len(spatial_dims), kernel, antialias,
                precision, edge_padding=edge_padding, radius=radius)


def resize(image, shape, method: str | ResizeMethod, antialias: bool = True,
           precision=Precision.HIGHEST):
  """Resize `image` to `shape` (every dimension: keep batch/channel sizes as they are).

  Args:
    image: the input array.
    shape: the output shape (one entry per dimension of `image`).
    method: a `ResizeMethod` or its name: 'nearest', 'linear' ('bilinear', 'trilinear',
      'triangle'), 'cubic' ('bicubic', 'tricubic'), 'cubic-pytorch', 'lanczos3', 'lanczos5',
      'area'.
    antialias: widen the kernel when downsampling (no effect when upsampling or for NEAREST).
    precision: the einsum precision (ignored by NEAREST).

  Returns:
    The resized image: NEAREST keeps the input dtype, the other methods give a floating dtype.
  """
  return _resize(image, _canonical_shape(shape), method, antialias, precision)
