"""Parameter initializers (jax.nn.initializers): `init(key, shape, dtype) -> Array`.

The random draws use the same arrax.random calls, in the same order and with the same scaling
arithmetic, as JAX's initializers, so a given key produces bit-identical parameters.
"""
from __future__ import annotations

import math
import operator
import typing
from typing import Any, Protocol

import numpy as np

from arrax._src import dtypes
from arrax._src import random
from arrax._src.numpy import creation, lax_numpy, ufuncs
from arrax._src.sharding_impls import canonicalize_sharding


@typing.runtime_checkable
class Initializer(Protocol):
  """A callable `init(key, shape, dtype=None, out_sharding=None) -> Array`."""

  def __call__(self, key, shape, dtype=None, out_sharding=None) -> Any:
    raise NotImplementedError


def _float_dtype(dtype):
  return dtypes.default_float_dtype() if dtype is None else dtype


def _canonical_shape(shape):
  try:
    return tuple(operator.index(d) for d in shape)
  except TypeError:
    raise TypeError("Shapes must be 1D sequences of concrete values of integer type, "
                    f"got {shape!r}.") from None


def zeros(key, shape, dtype=None, out_sharding=None):
  """All-zeros initializer (`key` is ignored)."""
  return creation.zeros(shape, _float_dtype(dtype), out_sharding=out_sharding)


def ones(key, shape, dtype=None, out_sharding=None):
  """All-ones initializer (`key` is ignored)."""
  return creation.ones(shape, _float_dtype(dtype), out_sharding=out_sharding)


def constant(value, dtype=None) -> Initializer:
  """An initializer filling the array with `value`."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    out_sharding = canonicalize_sharding(out_sharding, "nn.initializers.constant")
    return creation.full(shape, value, dtype=_float_dtype(dtype), out_sharding=out_sharding)
  return init


def uniform(scale=1e-2, dtype=None) -> Initializer:
  """An initializer drawing uniformly from [0, scale)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float_dtype(dtype)
    return (random.uniform(key, shape, dtype, out_sharding=out_sharding)
            * creation.array(scale, dtype))
  return init


def normal(stddev=1e-2, dtype=None) -> Initializer:
  """An initializer drawing from a centred normal with standard deviation `stddev`."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float_dtype(dtype)
    return (random.normal(key, shape, dtype, out_sharding=out_sharding)
            * creation.array(stddev, dtype))
  return init


def truncated_normal(stddev=1e-2, dtype=None, lower=-2.0, upper=2.0) -> Initializer:
  """An initializer drawing `stddev` times a standard normal truncated to (lower, upper)."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    dtype = _float_dtype(dtype)
    draws = random.truncated_normal(key, lower, upper, shape, dtype, out_sharding=out_sharding)
    return draws * creation.array(stddev, dtype)
  return init


def _axes_size(shape, axes):
  if isinstance(axes, int):
    return shape[axes]
  return math.prod([shape[i] for i in axes])


def _compute_fans(shape, in_axis=-2, out_axis=-1, batch_axis=()):
  """(fan_in, fan_out) of a weight shape; the axes not named form the receptive field."""
  if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
    raise ValueError(
        f"Can't compute input and output sizes of a {len(shape)}-dimensional weights tensor "
        "with default in_axis. Must be at least 2D or specify in_axis explicitly.")
  in_size = _axes_size(shape, in_axis)
  out_size = _axes_size(shape, out_axis)
  batch_size = _axes_size(shape, batch_axis)
  # Float division, in this order, so the variance rounds exactly like JAX's.
  receptive_field = math.prod(shape) / in_size / out_size / batch_size
  return in_size * receptive_field, out_size * receptive_field


def _complex_of(real_dtype):
  return np.dtype(np.complex128 if np.dtype(real_dtype) == np.float64 else np.complex64)


def _real_of(dtype):
  return np.array(0, dtype).real.dtype


def _complex_uniform(key, shape, dtype):
  """Complex samples uniform over the disc of radius sqrt(2) (unit variance)."""
  key_r, key_theta = random.split(key)
  real = _real_of(dtype)
  dtype = _complex_of(real)
  r = ufuncs.sqrt(2 * random.uniform(key_r, shape, real)).astype(dtype)
  theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(dtype)
  return r * ufuncs.exp(1j * theta)


def _complex_truncated_normal(key, upper, shape, dtype):
  """Complex normal samples with modulus truncated to `upper`, by inverting the radius CDF."""
  key_r, key_theta = random.split(key)
  real = _real_of(dtype)
  dtype = _complex_of(real)
  t = ((1 - ufuncs.exp(creation.array(-(upper ** 2), dtype)))
       * random.uniform(key_r, shape, real).astype(dtype))
  r = ufuncs.sqrt(-ufuncs.log(1 - t))
  theta = 2 * np.pi * random.uniform(key_theta, shape, real).astype(dtype)
  return r * ufuncs.exp(1j * theta)


# Standard deviations of a standard normal truncated to (-2, 2): real, and complex modulus.
_TRUNC_STD_REAL = .87962566103423978
_TRUNC_STD_COMPLEX = .95311164380491208


def _denominator(mode, fan_in, fan_out):
  if mode == "fan_in":
    return fan_in
  if mode == "fan_out":
    return fan_out
  if mode == "fan_avg":
    return (fan_in + fan_out) / 2
  if mode == "fan_geo_avg":
    return (fan_in * fan_out) ** 0.5
  raise ValueError(f"invalid mode for variance scaling initializer: {mode}; expected one of "
                   "'fan_in', 'fan_out', 'fan_avg', 'fan_geo_avg'.")


def _scaled_draws(key, shape, dtype, variance, distribution, out_sharding):
  is_float = dtypes.issubdtype(dtype, np.floating)
  if distribution == "truncated_normal":
    if is_float:
      stddev = ufuncs.sqrt(variance) / creation.array(_TRUNC_STD_REAL, dtype)
      return random.truncated_normal(key, -2, 2, shape, dtype,
                                     out_sharding=out_sharding) * stddev
    stddev = ufuncs.sqrt(variance) / creation.array(_TRUNC_STD_COMPLEX, dtype)
    return _complex_truncated_normal(key, 2, shape, dtype) * stddev
  if distribution == "normal":
    return random.normal(key, shape, dtype, out_sharding=out_sharding) * ufuncs.sqrt(variance)
  if distribution == "uniform":
    if is_float:
      return random.uniform(key, shape, dtype, -1,
                            out_sharding=out_sharding) * ufuncs.sqrt(3 * variance)
    return _complex_uniform(key, shape, dtype) * ufuncs.sqrt(variance)
  raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}; "
                   "expected 'truncated_normal', 'normal' or 'uniform'.")


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None) -> Initializer:
  """Draws with variance `scale / n`, n the fan given by `mode` ("fan_in", "fan_out",
  "fan_avg" or "fan_geo_avg"), from a "truncated_normal", "normal" or "uniform" distribution.

  `in_axis`, `out_axis` and `batch_axis` say which dimensions of the weight shape are inputs,
  outputs and batch; the rest form the receptive field (e.g. convolution window).
  """
  def init(key, shape, dtype=dtype, out_sharding=None):
    shape = _canonical_shape(shape)
    dtype = _float_dtype(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    variance = creation.array(scale / _denominator(mode, fan_in, fan_out), dtype=dtype)
    return _scaled_draws(key, shape, dtype, variance, distribution, out_sharding)
  return init


def glorot_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  """Glorot / Xavier uniform: variance_scaling(1.0, "fan_avg", "uniform")."""
  return variance_scaling(1.0, "fan_avg", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  """Glorot / Xavier normal: variance_scaling(1.0, "fan_avg", "truncated_normal")."""
  return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def lecun_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  """LeCun uniform: variance_scaling(1.0, "fan_in", "uniform")."""
  return variance_scaling(1.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def lecun_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  """LeCun normal: variance_scaling(1.0, "fan_in", "truncated_normal")."""
  return variance_scaling(1.0, "fan_in", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


def he_uniform(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  """He / Kaiming uniform: variance_scaling(2.0, "fan_in", "uniform")."""
  return variance_scaling(2.0, "fan_in", "uniform", in_axis=in_axis, out_axis=out_axis,
                          batch_axis=batch_axis, dtype=dtype)


def he_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None) -> Initializer:
  """He / Kaiming normal: variance_scaling(2.0, "fan_in", "truncated_normal")."""
  return variance_scaling(2.0, "fan_in", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)


xavier_uniform = glorot_uniform
xavier_normal = glorot_normal
kaiming_uniform = he_uniform
kaiming_normal = he_normal


def orthogonal(scale=1.0, column_axis=-1, dtype=None) -> Initializer:
  """Orthogonal matrices (Haar-uniform) reshaped so that `column_axis` holds the columns."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    if out_sharding is not None:
      raise NotImplementedError("orthogonal initializer does not support out_sharding; "
                                "reshard the result instead.")
    dtype = _float_dtype(dtype)
    if len(shape) < 2:
      raise ValueError("orthogonal initializer requires at least a 2D shape")
    if any(d == 0 for d in shape):
      return creation.zeros(shape, dtype=dtype)
    n_cols = shape[column_axis]
    n_rows = math.prod(shape) // n_cols
    q = random.orthogonal(key, n_rows, (), dtype, n_cols)
    q = lax_numpy.reshape(q, tuple(np.delete(shape, column_axis)) + (n_cols,))
    q = lax_numpy.moveaxis(q, -1, column_axis)
    return creation.array(scale, dtype) * q
  return init


def delta_orthogonal(scale=1.0, column_axis=-1, dtype=None) -> Initializer:
  """Delta-orthogonal convolution kernels: an orthogonal matrix at the window centre, zeros
  elsewhere (arXiv:1806.05393). Shapes are 3D, 4D or 5D with in-channels <= out-channels."""
  def init(key, shape, dtype=dtype, out_sharding=None):
    if out_sharding is not None:
      raise NotImplementedError("delta_orthogonal initializer does not support out_sharding; "
                                "reshard the result instead.")
    dtype = _float_dtype(dtype)
    if len(shape) not in (3, 4, 5):
      raise ValueError("Delta orthogonal initializer requires a 3D, 4D or 5D shape.")
    if shape[-1] < shape[-2]:
      raise ValueError("`fan_in` must be less or equal than `fan_out`. ")
    ortho = orthogonal(scale=scale, column_axis=column_axis, dtype=dtype)(key, shape[-2:])
    centre = tuple((k - 1) // 2 for k in shape[:-2])
    return creation.zeros(shape, dtype=dtype).at[centre + (Ellipsis,)].set(ortho)
  return init
