"""Stax: a tiny neural-net specification library, as ``jax.example_libraries.stax``.

A layer is an ``(init_fun, apply_fun)`` pair:

* ``init_fun(rng, input_shape) -> (output_shape, params)``
* ``apply_fun(params, inputs, **kwargs) -> outputs`` (``rng=`` is passed for random layers).

Layer constructors are CamelCase (``Dense``, ``Relu``); plain functions are snake_case. Layers
built on convolution or windowed reductions (``Conv``, ``MaxPool``...) need ``lax`` operations
arrax does not have yet and raise ``NotImplementedError`` when constructed.
"""
import math

import arrax.numpy as jnp
from arrax import random
from arrax.nn import (elu, gelu, leaky_relu, log_softmax, relu, selu, sigmoid, softmax, softplus,
                      standardize)
from arrax.nn.initializers import glorot_normal, normal, ones, zeros

# Old names kept by JAX's stax.
glorot = glorot_normal
randn = normal
logsoftmax = log_softmax


_GLOROT_NORMAL = glorot_normal()
_NORMAL = normal()


def Dense(out_dim, W_init=_GLOROT_NORMAL, b_init=_NORMAL):
  """Fully-connected layer: ``inputs @ W + b``."""
  def init_fun(rng, input_shape):
    k1, k2 = random.split(rng)
    W = W_init(k1, (input_shape[-1], out_dim))
    b = b_init(k2, (out_dim,))
    return tuple(input_shape[:-1]) + (out_dim,), (W, b)

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return jnp.dot(inputs, W) + b
  return init_fun, apply_fun


def _missing_lax(layer, ops):
  def constructor(*args, **kwargs):
    raise NotImplementedError(
        f"stax.{layer} needs lax.{ops}, which arrax does not implement yet; build the model "
        "from Dense and elementwise layers, or write the layer with arrax.numpy.")
  constructor.__name__ = layer
  return constructor


GeneralConv = _missing_lax("GeneralConv", "conv_general_dilated")
Conv = _missing_lax("Conv", "conv_general_dilated")
GeneralConvTranspose = _missing_lax("GeneralConvTranspose", "conv_transpose")
Conv1DTranspose = _missing_lax("Conv1DTranspose", "conv_transpose")
ConvTranspose = _missing_lax("ConvTranspose", "conv_transpose")
MaxPool = _missing_lax("MaxPool", "reduce_window")
SumPool = _missing_lax("SumPool", "reduce_window")
AvgPool = _missing_lax("AvgPool", "reduce_window")


def BatchNorm(axis=(0, 1, 2), epsilon=1e-5, center=True, scale=True,
              beta_init=zeros, gamma_init=ones):
  """Batch normalization over ``axis``, with learned shift ``beta`` and scale ``gamma``."""
  axis = (axis,) if jnp.isscalar(axis) else tuple(axis)

  def init_fun(rng, input_shape):
    shape = tuple(d for i, d in enumerate(input_shape) if i not in axis)
    k1, k2 = random.split(rng)
    beta = beta_init(k1, shape) if center else ()
    gamma = gamma_init(k2, shape) if scale else ()
    return input_shape, (beta, gamma)

  def apply_fun(params, x, **kwargs):
    beta, gamma = params
    # Re-insert the normalized axes so beta/gamma broadcast against x.
    expand = tuple(None if i in axis else slice(None) for i in range(jnp.ndim(x)))
    z = standardize(x, axis, epsilon=epsilon)
    if scale:
      z = gamma[expand] * z
    if center:
      z = z + beta[expand]
    return z
  return init_fun, apply_fun


def elementwise(fun, **fun_kwargs):
  """Parameterless layer applying ``fun(inputs, **fun_kwargs)``."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return fun(inputs, **fun_kwargs)
  return init_fun, apply_fun


Tanh = elementwise(jnp.tanh)
Relu = elementwise(relu)
Exp = elementwise(jnp.exp)
LogSoftmax = elementwise(log_softmax, axis=-1)
Softmax = elementwise(softmax, axis=-1)
Softplus = elementwise(softplus)
Sigmoid = elementwise(sigmoid)
Elu = elementwise(elu)
LeakyRelu = elementwise(leaky_relu)
Selu = elementwise(selu)
Gelu = elementwise(gelu)


def _flatten():
  """Flatten all but the leading (batch) dimension."""
  def init_fun(rng, input_shape):
    return (input_shape[0], math.prod(input_shape[1:])), ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.reshape(inputs, (inputs.shape[0], -1))
  return init_fun, apply_fun


Flatten = _flatten()


def _identity():
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    return inputs
  return init_fun, apply_fun


Identity = _identity()


def FanOut(num):
  """Layer copying its input into a list of ``num`` outputs."""
  def init_fun(rng, input_shape):
    return [input_shape] * num, ()

  def apply_fun(params, inputs, **kwargs):
    return [inputs] * num
  return init_fun, apply_fun


def _fan_in_sum():
  def init_fun(rng, input_shape):
    return input_shape[0], ()

  def apply_fun(params, inputs, **kwargs):
    return sum(inputs)
  return init_fun, apply_fun


FanInSum = _fan_in_sum()


def FanInConcat(axis=-1):
  """Layer concatenating a list of inputs along ``axis``."""
  def init_fun(rng, input_shape):
    first = tuple(input_shape[0])
    ax = axis % len(first)
    size = sum(shape[ax] for shape in input_shape)
    return first[:ax] + (size,) + first[ax + 1:], ()

  def apply_fun(params, inputs, **kwargs):
    return jnp.concatenate(inputs, axis)
  return init_fun, apply_fun


def Dropout(rate, mode='train'):
  """Dropout layer; like JAX's stax, ``rate`` is the probability of *keeping* a unit."""
  def init_fun(rng, input_shape):
    return input_shape, ()

  def apply_fun(params, inputs, **kwargs):
    rng = kwargs.get('rng', None)
    if rng is None:
      raise ValueError("Dropout layer requires apply_fun to be called with a PRNG key "
                       "argument: call `apply_fun(params, inputs, rng=key)` with a key from "
                       "`arrax.random.key` instead of `apply_fun(params, inputs)`.")
    if mode != 'train':
      return inputs
    keep = random.bernoulli(rng, rate, inputs.shape)
    return jnp.where(keep, inputs / rate, 0)
  return init_fun, apply_fun


# ---- combinators ---------------------------------------------------------------------------


def _apply_rngs(rng, count):
  return random.split(rng, count) if rng is not None else (None,) * count


def serial(*layers):
  """Compose layers in sequence; params are a list with one entry per layer."""
  init_funs, apply_funs = zip(*layers)

  def init_fun(rng, input_shape):
    params = []
    for init in init_funs:
      rng, layer_rng = random.split(rng)
      input_shape, param = init(layer_rng, input_shape)
      params.append(param)
    return input_shape, params

  def apply_fun(params, inputs, **kwargs):
    rngs = _apply_rngs(kwargs.pop('rng', None), len(layers))
    for fun, param, rng in zip(apply_funs, params, rngs):
      inputs = fun(param, inputs, rng=rng, **kwargs)
    return inputs
  return init_fun, apply_fun


def parallel(*layers):
  """Apply layers side by side to a sequence of inputs (one input per layer)."""
  init_funs, apply_funs = zip(*layers)

  def init_fun(rng, input_shape):
    rngs = random.split(rng, len(layers))
    # JAX returns a lazy ``zip`` of (output_shapes, params); keep that exact form.
    return zip(*[init(r, shape) for init, r, shape in zip(init_funs, rngs, input_shape)])

  def apply_fun(params, inputs, **kwargs):
    rngs = _apply_rngs(kwargs.pop('rng', None), len(layers))
    return [f(p, x, rng=r, **kwargs) for f, p, x, r in zip(apply_funs, params, inputs, rngs)]
  return init_fun, apply_fun


def shape_dependent(make_layer):
  """Delay building a layer until its input shape is known: ``make_layer(shape)``."""
  def init_fun(rng, input_shape):
    return make_layer(input_shape)[0](rng, input_shape)

  def apply_fun(params, inputs, **kwargs):
    return make_layer(inputs.shape)[1](params, inputs, **kwargs)
  return init_fun, apply_fun
