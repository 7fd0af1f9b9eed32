"""The activations and parameter initializers stax needs (arrax has no ``nn`` module yet).

Each follows the algorithm of its ``jax.nn`` namesake so that results (and, for the
initializers, the random bits drawn from a key) agree with JAX.
"""
import math
import operator

import numpy as np

import arrax.numpy as jnp
from arrax import custom_jvp, lax, random

# ---- activations ---------------------------------------------------------------------------


@custom_jvp
def relu(x):
  """Rectified linear unit, ``max(x, 0)``, with derivative 0 at 0 (as JAX)."""
  return jnp.maximum(x, 0)


# A plain maximum would split the derivative at 0 between both branches; JAX picks 0.
relu.defjvps(lambda g, ans, x: jnp.where(x > 0, g, jnp.zeros_like(g)))


def sigmoid(x):
  """Logistic sigmoid ``1 / (1 + exp(-x))``."""
  return lax.logistic(x)


def softplus(x):
  """``log(1 + exp(x))``, computed stably."""
  return jnp.logaddexp(x, 0)


def elu(x, alpha=1.0):
  """Exponential linear unit."""
  x = jnp.asarray(x)
  # The inner where keeps expm1 of large positive x (and its gradient) out of the result.
  return jnp.where(x > 0, x, alpha * jnp.expm1(jnp.where(x > 0, 0., x)))


def leaky_relu(x, negative_slope=1e-2):
  """``x`` where ``x >= 0``, else ``negative_slope * x``."""
  x = jnp.asarray(x)
  return jnp.where(x >= 0, x, negative_slope * x)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(x):
  """Scaled exponential linear unit."""
  return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate=True):
  """Gaussian error linear unit (tanh approximation by default, as JAX)."""
  x = jnp.asarray(x)
  if not jnp.issubdtype(x.dtype, jnp.inexact):
    x = x.astype(jnp.result_type(float))
  if approximate:
    c = np.sqrt(2 / np.pi).astype(x.dtype)
    return x * (0.5 * (1.0 + jnp.tanh(c * (x + 0.044715 * (x ** 3)))))
  half = np.sqrt(0.5).astype(x.dtype)
  return 0.5 * x * lax.erfc(-x * half)


def log_softmax(x, axis=-1):
  """``x - logsumexp(x, axis)``, shifted by the (gradient-stopped) max for stability."""
  x = jnp.asarray(x)
  x_max = jnp.max(x, axis, initial=-np.inf, keepdims=True)
  shifted = x - lax.stop_gradient(x_max)
  return shifted - jnp.log(jnp.sum(jnp.exp(shifted), axis, keepdims=True))


def _softmax_impl(axis, x):
  unnormalized = jnp.exp(x - jnp.max(x, axis, initial=-np.inf, keepdims=True))
  return unnormalized / jnp.sum(unnormalized, axis, keepdims=True)


_softmax = custom_jvp(_softmax_impl, nondiff_argnums=(0,))


# The closed-form tangent avoids differentiating through the max shift.
@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
  (x,), (x_dot,) = primals, tangents
  y = _softmax(axis, x)
  return y, y * (x_dot - jnp.sum(y * x_dot, axis, keepdims=True))


def softmax(x, axis=-1):
  """``exp(x) / sum(exp(x), axis)``."""
  return _softmax(axis, jnp.asarray(x))


def standardize(x, axis=-1, epsilon=1e-5):
  """``(x - mean) / sqrt(var + epsilon)`` along ``axis``, with JAX's default "fast" variance
  ``mean(x**2) - mean(x)**2`` (clipped at 0)."""
  x = jnp.asarray(x)
  mean = jnp.mean(x, axis, keepdims=True)
  variance = jnp.mean(jnp.square(x), axis, keepdims=True) - jnp.square(mean)
  variance = jnp.clip(variance, 0)
  return jnp.subtract(x, mean) * lax.rsqrt(variance + epsilon)


# ---- initializers: init(key, shape, dtype=None) -> array -----------------------------------


def _float_dtype(dtype):
  dtype = jnp.result_type(float) if dtype is None else jnp.dtype(dtype)
  if not jnp.issubdtype(dtype, jnp.floating):
    raise NotImplementedError(
        f"arrax.example_libraries initializers support real floating dtypes only, got {dtype}; "
        "initialize in float and convert.")
  return dtype


def _shape(shape):
  # Dimensions may be concrete integer arrays (e.g. from jnp.prod), as in JAX.
  return tuple(operator.index(d) for d in shape)


def zeros(key, shape, dtype=None):
  """All zeros; ``key`` is ignored."""
  return jnp.zeros(_shape(shape), _float_dtype(dtype))


def ones(key, shape, dtype=None):
  """All ones; ``key`` is ignored."""
  return jnp.ones(_shape(shape), _float_dtype(dtype))


def normal(stddev=1e-2, dtype=None):
  """Initializer drawing from a normal distribution with mean 0 and std ``stddev``."""
  default_dtype = dtype

  def init(key, shape, dtype=default_dtype):
    dtype = _float_dtype(dtype)
    return random.normal(key, _shape(shape), dtype) * jnp.array(stddev, dtype)
  return init


def _axes_size(shape, axes):
  if isinstance(axes, int):
    return shape[axes]
  return math.prod(shape[i] for i in axes)


def _compute_fans(shape, in_axis, out_axis, batch_axis):
  if isinstance(in_axis, int) and in_axis == -2 and len(shape) <= 1:
    raise ValueError(f"Can't compute input and output sizes of a {len(shape)}-dimensional "
                     "weights tensor with the default in_axis; it must be at least 2D or "
                     "in_axis must be given explicitly.")
  in_size = _axes_size(shape, in_axis)
  out_size = _axes_size(shape, out_axis)
  batch_size = _axes_size(shape, batch_axis)
  receptive_field = math.prod(shape) / in_size / out_size / batch_size
  return in_size * receptive_field, out_size * receptive_field


# Standard deviation of a standard normal truncated to (-2, 2).
_TRUNCATED_STD = .87962566103423978


def variance_scaling(scale, mode, distribution, in_axis=-2, out_axis=-1, batch_axis=(),
                     dtype=None):
  """Initializer with variance ``scale / n``, ``n`` the fan given by ``mode``."""
  default_dtype = dtype
  if mode not in ("fan_in", "fan_out", "fan_avg", "fan_geo_avg"):
    raise ValueError(f"invalid mode for variance scaling initializer: {mode}")
  if distribution not in ("truncated_normal", "normal", "uniform"):
    raise ValueError(f"invalid distribution for variance scaling initializer: {distribution}")

  def init(key, shape, dtype=default_dtype):
    shape, dtype = _shape(shape), _float_dtype(dtype)
    fan_in, fan_out = _compute_fans(shape, in_axis, out_axis, batch_axis)
    denominator = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2,
                   "fan_geo_avg": (fan_in * fan_out) ** 0.5}[mode]
    variance = jnp.array(scale / denominator, dtype=dtype)
    if distribution == "truncated_normal":
      stddev = jnp.sqrt(variance) / jnp.array(_TRUNCATED_STD, dtype)
      return random.truncated_normal(key, -2, 2, shape, dtype) * stddev
    if distribution == "normal":
      return random.normal(key, shape, dtype) * jnp.sqrt(variance)
    return random.uniform(key, shape, dtype, -1) * jnp.sqrt(3 * variance)
  return init


def glorot_normal(in_axis=-2, out_axis=-1, batch_axis=(), dtype=None):
  """Glorot (Xavier) normal: truncated normal with variance ``2 / (fan_in + fan_out)``."""
  return variance_scaling(1.0, "fan_avg", "truncated_normal", in_axis=in_axis,
                          out_axis=out_axis, batch_axis=batch_axis, dtype=dtype)
