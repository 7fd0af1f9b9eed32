"""Stax: a tiny neural-net specification library, as ``jax.example_libraries.stax``.

A layer is an ``(init_fun, apply_fun)`` pair:

* ``init_fun(rng, input_shape) -> (output_shape, params)``
* ``apply_fun(params, inputs, **kwargs) -> outputs`` (``rng=`` is passed for random layers).

Layer constructors are CamelCase (``Dense``, ``Relu``); plain functions are snake_case.
"""
import functools
import math

import arrax.numpy as jnp
from arrax import lax, random
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


def _conv_layer(shape_tuple, conv, dimension_numbers, out_chan, filter_shape, strides, padding,
                W_init, b_init):
  """A layer `conv(inputs, W, strides, padding, one) + b` whose output shape is
  `shape_tuple(input_shape, kernel_shape, strides, padding, dimension_numbers)`."""
  lhs_spec, rhs_spec, out_spec = dimension_numbers
  one = (1,) * len(filter_shape)
  strides = strides or one
  W_init = W_init or glorot_normal(rhs_spec.index('I'), rhs_spec.index('O'))

  def init_fun(rng, input_shape):
    kernel_shape = _kernel_shape(rhs_spec, lhs_spec, out_chan, filter_shape, input_shape)
    output_shape = shape_tuple(input_shape, kernel_shape, strides, padding, dimension_numbers)
    bias_shape = [out_chan if c == 'C' else 1 for c in out_spec]
    k1, k2 = random.split(rng)
    return output_shape, (W_init(k1, kernel_shape), b_init(k2, bias_shape))

  def apply_fun(params, inputs, **kwargs):
    W, b = params
    return conv(inputs, W, strides, padding, one, dimension_numbers) + b
  return init_fun, apply_fun


def GeneralConv(dimension_numbers, out_chan, filter_shape, strides=None, padding='VALID',
                W_init=None, b_init=normal(1e-6)):
  """Convolution layer with the layouts ``dimension_numbers`` = (lhs, rhs, out) specs."""
  def conv(inputs, W, strides, padding, one, dimension_numbers):
    return lax.conv_general_dilated(inputs, W, strides, padding, one, one,
                                    dimension_numbers=dimension_numbers)
  return _conv_layer(lax.conv_general_shape_tuple, conv, dimension_numbers, out_chan,
                     filter_shape, strides, padding, W_init, b_init)


def _kernel_shape(rhs_spec, lhs_spec, out_chan, filter_shape, input_shape):
  sizes = iter(filter_shape)
  return [out_chan if c == 'O' else input_shape[lhs_spec.index('C')] if c == 'I'
          else next(sizes) for c in rhs_spec]


Conv = functools.partial(GeneralConv, ('NHWC', 'HWIO', 'NHWC'))


def GeneralConvTranspose(dimension_numbers, out_chan, filter_shape, strides=None,
                         padding='VALID', W_init=None, b_init=normal(1e-6)):
  """Transposed-convolution layer with the layouts ``dimension_numbers``."""
  def conv(inputs, W, strides, padding, one, dimension_numbers):
    return lax.conv_transpose(inputs, W, strides, padding, dimension_numbers=dimension_numbers)
  return _conv_layer(lax.conv_transpose_shape_tuple, conv, dimension_numbers, out_chan,
                     filter_shape, strides, padding, W_init, b_init)


Conv1DTranspose = functools.partial(GeneralConvTranspose, ('NHC', 'HIO', 'NHC'))
ConvTranspose = functools.partial(GeneralConvTranspose, ('NHWC', 'HWIO', 'NHWC'))


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


def _pooling_layer(reducer, init_val, rescaler=None):
  def PoolingLayer(window_shape, strides=None, padding='VALID', spec=None):
    """Pooling layer over the spatial axes (all but batch ``N`` and channels ``C`` of
    ``spec``; default NHWC-like)."""
    strides = strides or (1,) * len(window_shape)
    rescale = rescaler(window_shape, strides, padding) if rescaler else None
    if spec is None:
      non_spatial_axes = 0, len(window_shape) + 1
    else:
      non_spatial_axes = spec.index('N'), spec.index('C')
    for i in sorted(non_spatial_axes):
      window_shape = window_shape[:i] + (1,) + window_shape[i:]
      strides = strides[:i] + (1,) + strides[i:]

    def init_fun(rng, input_shape):
      pads = lax.padtype_to_pads(input_shape, window_shape, strides, padding)
      ones = (1,) * len(window_shape)
      return lax.reduce_window_shape_tuple(input_shape, window_shape, strides, pads, ones,
                                           ones), ()

    def apply_fun(params, inputs, **kwargs):
      out = lax.reduce_window(inputs, init_val, reducer, window_shape, strides, padding)
      return rescale(out, inputs, spec) if rescale else out
    return init_fun, apply_fun
  return PoolingLayer


MaxPool = _pooling_layer(lax.max, -jnp.inf)
SumPool = _pooling_layer(lax.add, 0.)


def _normalize_by_window_size(dims, strides, padding):
  def rescale(outputs, inputs, spec):
    if spec is None:
      non_spatial_axes = 0, inputs.ndim - 1
    else:
      non_spatial_axes = spec.index('N'), spec.index('C')
    spatial_shape = tuple(inputs.shape[i] for i in range(inputs.ndim)
                          if i not in non_spatial_axes)
    one = jnp.ones(spatial_shape, dtype=inputs.dtype)
    window_sizes = lax.reduce_window(one, 0., lax.add, dims, strides, padding)
    for i in sorted(non_spatial_axes):
      window_sizes = jnp.expand_dims(window_sizes, i)
    return outputs / window_sizes
  return rescale


AvgPool = _pooling_layer(lax.add, 0., _normalize_by_window_size)


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
