"""Neural-network activations, softmax family, one_hot and dot_product_attention (jax.nn).

Each function is built from the same jnp/lax operations as JAX's, under the same jit / custom_jvp
wrappers, so values, dtypes, weak types and jaxprs agree with JAX.
"""
from __future__ import annotations

import functools
import operator
import warnings

import numpy as np

from arrax._src import core, dtypes
from arrax._src.config import config
from arrax._src.lax.elementwise import stop_gradient
from arrax._src.batching import vmap
from arrax._src.custom_derivatives import custom_jvp
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax
from arrax._src.lax import parallel as lax_parallel
from arrax._src.lax import shape_ops
from arrax._src.numpy import assembly, creation, lax_numpy, reductions, ufuncs
from arrax._src.numpy import util as np_util


def _zeros_like(x):
  return shape_ops._full_like(x, 0)


# ---- activations ------------------------------------------------------------------------------

@jit
def identity(x):
  """Identity activation: returns `x` unchanged (as an array)."""
  return np_util.ensure_arraylike("identity", x)


@custom_jvp
@jit
def relu(x):
  """Rectified linear unit, max(x, 0); its derivative at 0 is taken to be 0."""
  return ufuncs.maximum(x, 0)


# Gradient 0 at x == 0 (see "Numerical influence of ReLU'(0) on backpropagation").
relu.defjvps(lambda g, ans, x: lax.select(x > 0, g, _zeros_like(g)))


@custom_jvp
@jit
def relu6(x):
  """min(max(x, 0), 6); derivative 0 at both kinks (x == 0 and x == 6)."""
  return ufuncs.minimum(ufuncs.maximum(x, 0), 6.)


relu6.defjvps(lambda g, ans, x: lax.select((x > 0) & (x < 6), g, _zeros_like(g)))


@jit
def squareplus(x, b=4):
  """(x + sqrt(x**2 + b)) / 2, a smooth ReLU (arXiv:2112.11687)."""
  x, b = np_util.ensure_arraylike("squareplus", x, b)
  return (x + ufuncs.sqrt(ufuncs.square(x) + b)) / 2


@jit
def softplus(x):
  """log(1 + exp(x)), computed stably as logaddexp(x, 0)."""
  return ufuncs.logaddexp(x, 0)


@jit
def sparse_plus(x):
  """0 for x <= -1, (x + 1)**2 / 4 on (-1, 1), x for x >= 1."""
  x = np_util.ensure_arraylike("sparse_plus", x)
  return lax_numpy.where(x <= -1.0, 0.0, lax_numpy.where(x >= 1.0, x, (x + 1.0) ** 2 / 4))


@jit
def soft_sign(x):
  """x / (|x| + 1)."""
  x = np_util.ensure_arraylike("soft_sign", x)
  return x / (ufuncs.abs(x) + 1)


@jit(inline=True)
def sigmoid(x):
  """Logistic sigmoid 1 / (1 + exp(-x))."""
  return lax.logistic(x)


@jit
def sparse_sigmoid(x):
  """0 for x <= -1, (x + 1) / 2 on (-1, 1), 1 for x >= 1 (the derivative of sparse_plus)."""
  return 0.5 * lax_numpy.clip(x + 1.0, 0.0, 2.0)


@jit
def silu(x):
  """SiLU / swish: x * sigmoid(x)."""
  x = np_util.ensure_arraylike("silu", x)
  return x * sigmoid(x)


swish = silu


@jit
def mish(x):
  """x * tanh(softplus(x)) (arXiv:1908.08681)."""
  x = np_util.ensure_arraylike("mish", x)
  return x * ufuncs.tanh(softplus(x))


@jit
def log_sigmoid(x):
  """log(sigmoid(x)) = -softplus(-x)."""
  x = np_util.ensure_arraylike("log_sigmoid", x)
  return -softplus(-x)


@jit
def elu(x, alpha=1.0):
  """x for x > 0, alpha * (exp(x) - 1) otherwise."""
  x = np_util.ensure_arraylike("elu", x)
  # expm1 only sees non-positive values, so the unused branch cannot overflow to inf.
  return lax_numpy.where(x > 0, x, alpha * ufuncs.expm1(lax_numpy.where(x > 0, 0., x)))


@jit
def leaky_relu(x, negative_slope=1e-2):
  """x for x >= 0, negative_slope * x otherwise."""
  x = np_util.ensure_arraylike("leaky_relu", x)
  return lax_numpy.where(x >= 0, x, negative_slope * x)


@jit
def hard_tanh(x):
  """x clipped to [-1, 1]."""
  x = np_util.ensure_arraylike("hard_tanh", x)
  return lax_numpy.where(x > 1, 1, lax_numpy.where(x < -1, -1, x))


@jit
def celu(x, alpha=1.0):
  """max(x, 0) + alpha * (exp(min(x, 0) / alpha) - 1) (arXiv:1704.07483)."""
  return ufuncs.maximum(x, 0.0) + alpha * ufuncs.expm1(ufuncs.minimum(x, 0.0) / alpha)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


@jit
def selu(x):
  """Scaled ELU of self-normalizing networks (arXiv:1706.02515)."""
  return _SELU_SCALE * elu(x, _SELU_ALPHA)


def gelu(x, approximate: bool = True):
  """Gaussian error linear unit; the tanh approximation unless `approximate=False`.

  Not jitted, as in JAX (whose jaxpr for gelu is inline).
  """
  [x] = np_util.promote_args_inexact("gelu", x)
  x = creation.asarray(x)   # a weak Python scalar becomes an operand with a dtype
  if approximate:
    sqrt_2_over_pi = np.sqrt(2 / np.pi).astype(x.dtype)
    cdf = 0.5 * (1.0 + ufuncs.tanh(sqrt_2_over_pi * (x + 0.044715 * (x ** 3))))
    return x * cdf
  sqrt_half = np.sqrt(0.5).astype(x.dtype)
  return creation.array(0.5 * x * lax.erfc(-x * sqrt_half), dtype=x.dtype)


@jit(static_argnames=("axis",))
def glu(x, axis: int = -1):
  """Gated linear unit: first half of `x` along `axis` times sigmoid of the second half."""
  x = np_util.ensure_arraylike("glu", x)
  if x.shape[axis] % 2 != 0:
    raise ValueError(f"glu: the size of axis {axis} must be divisible by 2, got shape "
                     f"{x.shape}; pad or slice the input first.")
  x1, x2 = assembly.split(x, 2, axis)
  return x1 * sigmoid(x2)


_softmax_custom_jvp = config.flag("jax_softmax_custom_jvp")


# ---- log-sum-exp and the softmax family --------------------------------------------------------

def _reduction_dims(ndim, axis):
  """(positive axes, axes) of a reduction, as JAX's logsumexp computes them."""
  if axis is None:
    return tuple(range(ndim)), tuple(range(ndim))
  axes = (axis,) if not isinstance(axis, (tuple, list)) else tuple(axis)
  # an axis that is not an integer names a mapped axis (the reductions run psum/pmax over it)
  dims = tuple(np_util.canonicalize_axis(a, ndim) if isinstance(a, int) else a
               for a in map(reductions._int_or_name, axes))
  if len(set(dims)) != len(dims):
    raise ValueError(f"duplicate value in 'axis': {axis}")
  return tuple(sorted(d for d in dims if isinstance(d, int))), dims


def logsumexp(a, axis=None, b=None, keepdims: bool = False, return_sign: bool = False,
              where=None):
  """log(sum(b * exp(a))) over `axis`, shifted by the max for stability (scipy's logsumexp)."""
  if where is not None:
    a = lax_numpy.where(where, a, 0)
  if b is not None:
    a, b = np_util.promote_args_inexact("logsumexp", a, b)
    a = lax_numpy.where(b != 0, a, -np.inf)
  else:
    a, = np_util.promote_args_inexact("logsumexp", a)
  a = creation.asarray(a)   # a Python scalar comes back from promotion as a literal
  pos_dims, dims = _reduction_dims(a.ndim, axis)
  amax = reductions.max(a.real, axis=dims, keepdims=keepdims, where=where, initial=-np.inf)
  # A non-finite max would turn every shifted term into nan; shift by 0 instead.
  amax = stop_gradient(lax.select(ufuncs.isfinite(amax), amax, _zeros_like(amax)))
  amax_b = amax if keepdims else shape_ops.expand_dims(amax, pos_dims)
  exp_a = lax.exp(lax.sub(a, amax_b.astype(a.dtype)))
  if b is not None:
    exp_a = lax.mul(exp_a, b)
  sumexp = exp_a.sum(axis=dims, keepdims=keepdims, where=where)
  sign = lax.sign(sumexp)
  complex_out = dtypes.issubdtype(a.dtype, np.complexfloating)
  if return_sign or not complex_out:
    sumexp = abs(sumexp)
  out = lax.add(lax.log(sumexp), amax.astype(sumexp.dtype))
  if return_sign:
    return out, sign
  if b is not None and not complex_out:
    out = lax_numpy.where(sign < 0, creation.array(np.nan, dtype=out.dtype), out)
  return out


def _count(x, axis, where, keepdims, dtype):
  """Number of elements reduced over `axis` (those selected by `where`), as `dtype`."""
  ones = creation.ones(np.shape(x), dtype=dtype) if where is None else lax_numpy.broadcast_to(
      creation.asarray(where).astype(dtype), np.shape(x))
  return reductions.sum(ones, axis=axis, keepdims=keepdims)


@jit(static_argnames=("axis", "keepdims"))
def logmeanexp(x, axis=None, where=None, keepdims: bool = False):
  """logsumexp(x) - log(n): the log of the mean of exp(x) over `axis`."""
  lse = logsumexp(x, axis=axis, where=where, keepdims=keepdims)
  if where is None:
    n = np.prod([np.shape(x)[a] for a in _reduction_dims(np.ndim(x), axis)[1]])
    return lse - ufuncs.log(creation.array(n, dtype=lse.dtype))
  return lse - ufuncs.log(_count(x, axis, where, keepdims, lse.dtype))


@jit(static_argnames=("axis",))
def log_softmax(x, axis=-1, where=None):
  """log(softmax(x)) along `axis`, computed stably; masked-out entries are -inf."""
  x = np_util.ensure_arraylike("log_softmax", x)
  x_max = reductions.max(x, axis, where=where, initial=-np.inf, keepdims=True)
  x_safe = x if where is None else lax_numpy.where(where, x, -np.inf)
  shifted = x_safe - stop_gradient(x_max)
  shifted_lse = ufuncs.log(reductions.sum(ufuncs.exp(shifted), axis, where=where, keepdims=True))
  result = shifted - shifted_lse
  if where is not None:
    return lax_numpy.where(where, result, -np.inf)
  return result


def softmax(x, axis=-1, where=None):
  """exp(x) / sum(exp(x)) along `axis` (an int, tuple or None); masked-out entries are 0.

  Not jitted, as in JAX. By default (`jax_softmax_custom_jvp=False`) the max subtracted for
  stability is a stop_gradient constant and derivatives go through the formula; with the flag
  on, a custom JVP rule gives y * (dx - sum(y * dx)).
  """
  if _softmax_custom_jvp.value:
    return _softmax(x, axis, where)
  return _softmax_plain(x, axis, where)


def _softmax_plain(x, axis=-1, where=None, initial=-np.inf):
  x_max = reductions.max(x, axis, where=where, initial=initial, keepdims=True)
  x_safe = x if where is None else lax_numpy.where(where, x, initial)
  unnormalized = ufuncs.exp(x_safe - stop_gradient(x_max))
  result = unnormalized / reductions.sum(unnormalized, axis, where=where, keepdims=True)
  if where is not None:
    result = lax_numpy.where(where, result, 0)
  return result


def _softmax_impl(x, axis, where, initial):
  x_max = reductions.max(x, axis, where=where, initial=initial, keepdims=True)
  x_safe = x if where is None else lax_numpy.where(where, x, initial)
  unnormalized = ufuncs.exp(x_safe - x_max)
  result = unnormalized / reductions.sum(unnormalized, axis, where=where, keepdims=True)
  if where is not None:
    result = lax_numpy.where(where, result, 0)
  return result


@functools.partial(custom_jvp, nondiff_argnums=(1,))
def _softmax(x, axis=-1, where=None, initial=-np.inf):
  return _softmax_impl(x, axis, where, initial)


@_softmax.defjvp
def _softmax_jvp(axis, primals, tangents):
  (x, where, initial), (x_dot, _, _) = primals, tangents
  y = _softmax(x, axis, where, initial)
  return y, y * (x_dot - reductions.sum(y * x_dot, axis, where=where, keepdims=True))


@jit(static_argnames=("axis", "algorithm"))
def standardize(x, axis=-1, mean=None, variance=None, epsilon=1e-5, where=None, *,
                algorithm: str = "fast"):
  """(x - mean) / sqrt(variance + epsilon), with mean and variance over `axis` by default.

  `algorithm="fast"` takes the variance as mean(x**2) - mean(x)**2 (clipped at 0), "stable"
  as mean((x - mean)**2).
  """
  np_util.check_arraylike("standardize", x)
  for name, v in (("mean", mean), ("variance", variance), ("where", where)):
    if v is not None:
      np_util.check_arraylike(f"standardize {name}", v)
  if mean is None:
    mean = reductions.mean(x, axis, keepdims=True, where=where)
  if variance is None:
    if algorithm == "stable":
      variance = reductions.mean(ufuncs.square(ufuncs.subtract(x, mean)), axis, keepdims=True,
                                 where=where)
    elif algorithm == "fast":
      variance = (reductions.mean(ufuncs.square(x), axis, keepdims=True, where=where)
                  - ufuncs.square(mean))
      # The one-pass formula can round below zero, which rsqrt would turn into nan.
      variance = lax_numpy.clip(variance, 0)
    else:
      raise ValueError(f"Unknown algorithm '{algorithm}'. Expected 'fast' or 'stable'.")
  return ufuncs.subtract(x, mean) * lax.rsqrt(variance + epsilon)


# ---- one_hot ----------------------------------------------------------------------------------

def _concrete_int(n):
  """`num_classes` as a Python int: tracers raise ConcretizationTypeError, as in JAX."""
  return core.concrete_or_error(operator.index, n,
                                "The error arose in jax.nn.one_hot argument `num_classes`.")


@jit(static_argnames=("num_classes", "dtype", "axis"))
def _one_hot(x, num_classes, *, dtype, axis):
  try:
    out_axis = np_util.canonicalize_axis(axis, x.ndim + 1)
  except TypeError:
    # `axis` names a vmapped axis: compare against this instance's index along it.
    axis_size = lax_parallel.axis_size(axis)
    if num_classes != axis_size:
      raise ValueError(f"Expected num_classes to match the size of axis {axis}, "
                       f"but {num_classes} != {axis_size}") from None
    return creation.asarray(x == lax_parallel.axis_index(axis), dtype=dtype)
  lhs = shape_ops.expand_dims(x, (operator.index(axis),))
  rhs_shape = [1] * x.ndim
  rhs_shape.insert(out_axis, num_classes)
  rhs = shape_ops.broadcasted_iota(x.dtype, rhs_shape, out_axis)
  return (lhs == rhs).astype(dtype)


def one_hot(x, num_classes: int, *, dtype=None, axis=-1):
  """One-hot encode integer indices `x` along a new axis of size `num_classes`.

  Indices outside [0, num_classes) encode as all zeros. `axis` may also name a vmapped axis.
  """
  num_classes = _concrete_int(num_classes)
  x = creation.asarray(x)
  if not dtypes.issubdtype(x.dtype, np.integer):
    warnings.warn(f"jax.nn.one_hot input should be integer-typed; got dtype={x.dtype}",
                  DeprecationWarning, stacklevel=2)
  dtype = dtypes.default_float_dtype() if dtype is None else dtype
  return _one_hot(x, num_classes, dtype=dtype, axis=axis)


# ---- hard activations built on relu6 -----------------------------------------------------------

@jit
def hard_sigmoid(x):
  """relu6(x + 3) / 6."""
  return relu6(x + 3.) / 6.


@jit
def hard_silu(x):
  """Hard SiLU / swish: x * hard_sigmoid(x)."""
  x = np_util.ensure_arraylike("hard_silu", x)
  return x * hard_sigmoid(x)


hard_swish = hard_silu


@custom_jvp
@jit
def log1mexp(x):
  """log(1 - exp(-x)) for x >= 0, accurate for both small and large x."""
  x = np_util.ensure_arraylike("log1mexp", x)
  c = ufuncs.log(2.0)
  return lax_numpy.where(x < c, ufuncs.log(-ufuncs.expm1(-x)), ufuncs.log1p(-ufuncs.exp(-x)))


log1mexp.defjvps(lambda g, ans, x: g / ufuncs.expm1(x))



# ---- dot_product_attention (XLA implementation) -------------------------------------------------

def _large_negative(dtype):
  # Finite even after the float32 cast of the softmax (float64's max would overflow to -inf).
  big = min(float(dtypes.finfo(dtype).max), float(np.finfo(np.float32).max))
  return creation.asarray(-0.7 * big, dtype=dtype)


def _attention_mask(shape, mask, is_causal, q_seqlen, kv_seqlen, window):
  """The boolean mask (True = attend) of logits `shape` (B, N, T, S), or None for no mask."""
  if mask is None and not is_causal and q_seqlen is None and kv_seqlen is None and (
      window is None):
    return None
  t, s = shape[2], shape[3]
  combined = creation.ones(shape, dtype=bool)
  if mask is not None:
    combined = ufuncs.logical_and(combined, mask)
  q_pos = shape_ops.broadcasted_iota(np.int32, (t, s), 0)
  k_pos = shape_ops.broadcasted_iota(np.int32, (t, s), 1)
  if is_causal:
    combined = ufuncs.logical_and(combined, (k_pos <= q_pos)[None, None])
  if window is not None:
    left, right = window
    in_window = (q_pos <= k_pos + left) & (q_pos >= k_pos - right)
    combined = ufuncs.logical_and(combined, in_window[None, None])
  if q_seqlen is not None:
    q_ok = creation.arange(t)[None, :, None] < q_seqlen[:, None, None]
    combined = ufuncs.logical_and(combined, q_ok[:, None])
  if kv_seqlen is not None:
    kv_ok = creation.arange(s)[None, None, :] < kv_seqlen[:, None, None]
    combined = ufuncs.logical_and(combined, kv_ok[:, None])
  return combined


def _attention_core(query, key, value, bias, mask, is_causal, scale, q_seqlen, kv_seqlen,
                    window, return_residual):
  """Attention of query (B,T,N,H) over key/value (B,S,N,H)."""
  logits_dtype = lax_numpy.promote_types(query.dtype, np.float32)
  # logits[b, n, t, s] = sum_h query[b, t, n, h] * key[b, s, n, h]
  logits = lax_dot.dot_general(query, key, (((3,), (3,)), ((0, 2), (0, 2))),
                               preferred_element_type=logits_dtype)
  logits = logits * creation.array(scale, dtype=logits.dtype)
  if bias is not None:
    logits = (logits + bias).astype(logits.dtype)
  combined = _attention_mask(logits.shape, mask, is_causal, q_seqlen, kv_seqlen, window)
  if combined is not None:
    logits = lax_numpy.where(combined, logits, _large_negative(logits.dtype))
  logits = logits.astype(np.float32)   # the softmax is always computed in float32
  probs = softmax(logits, axis=-1).astype(key.dtype)
  # encoded[b, n, t, h] = sum_s probs[b, n, t, s] * value[b, s, n, h], then to (B, T, N, H).
  encoded = lax_dot.dot_general(probs, value, (((3,), (1,)), ((0, 1), (0, 2))))
  encoded = lax_numpy.transpose(encoded, (0, 2, 1, 3))
  if q_seqlen is not None:
    valid = creation.arange(encoded.shape[1])[None, :] < q_seqlen[:, None]
    encoded = encoded * valid[:, :, None, None].astype(encoded.dtype)
  if return_residual:
    lse = logsumexp(logits, axis=-1).astype(key.dtype)
    return encoded, stop_gradient(lax_numpy.transpose(lse, (0, 2, 1)))
  return encoded


def _group(t, k, g):
  """A (B, N|1, T, S) bias or mask as (B, K, G, T, S), heads grouped per key/value head."""
  if t is None:
    return None
  b, n, tt, s = t.shape
  if n == 1:
    return lax_numpy.broadcast_to(t[:, :, None], (b, 1, g, tt, s))
  if n != k * g:
    raise ValueError(f"bias/mask must have 1 or {k * g} heads (axis 1), got shape {t.shape}")
  return lax_numpy.reshape(t, (b, k, g, tt, s))


def _attention_xla(query, key, value, bias, mask, is_causal, scale, q_seqlen, kv_seqlen,
                   window, return_residual):
  b, t, n, h = query.shape
  k = key.shape[2]
  g = n // k
  query = lax_numpy.reshape(query, (b, t, k, g, h))
  bias, mask = _group(bias, k, g), _group(mask, k, g)

  def one_group(q, bias_g, mask_g):
    return _attention_core(q, key, value, bias_g, mask_g, is_causal, scale, q_seqlen,
                           kv_seqlen, window, return_residual)
  out = vmap(one_group, in_axes=(3, 2 if bias is not None else None,
                                 2 if mask is not None else None), out_axes=3)(query, bias, mask)
  if return_residual:
    encoded, lse = out
    return lax_numpy.reshape(encoded, (b, t, n, h)), lax_numpy.reshape(lse, (b, t, n))
  return lax_numpy.reshape(out, (b, t, n, h))


def _to_4d(t):
  t = creation.asarray(t)
  return lax_numpy.expand_dims(t, tuple(range(4 - t.ndim))) if t.ndim < 4 else t


def _check_attention_arg(t, shape, dtype, name):
  if t is None:
    return
  if t.ndim != len(shape):
    raise ValueError(f"{name} ndim should be {len(shape)}, but got {t.ndim}")
  if dtype is not None and t.dtype != dtype:
    raise ValueError(f"{name} dtype should be {dtype}, but got {t.dtype}")
  if any(want != -1 and got != want for got, want in zip(t.shape, shape)):
    raise ValueError(f"{name} shape should be {shape}: but got {t.shape}")


def dot_product_attention(query, key, value, bias=None, mask=None, *, scale=None,
                          is_causal: bool = False, query_seq_lengths=None,
                          key_value_seq_lengths=None, local_window_size=None,
                          implementation=None, return_residual: bool = False):
  """softmax(Q K^T * scale + bias) V per head, for query (B?,T,N,H) and key/value (B?,S,K,H).

  N must be a multiple of K (grouped-query attention). `mask` is boolean (True = attend);
  `is_causal`, `local_window_size` (left, right) and per-batch sequence lengths add masks.
  Only the "xla" implementation exists here.
  """
  if implementation not in (None, "xla"):
    if implementation == "cudnn":
      raise NotImplementedError("arrax has no cuDNN attention; use implementation='xla'.")
    raise ValueError(f"Unsupported implementation option: {implementation}")
  out_shape = creation.asarray(query).shape
  q, k, v = _to_4d(query), _to_4d(key), _to_4d(value)
  bias = None if bias is None else _to_4d(bias)
  mask = None if mask is None else _to_4d(mask)
  q_len = None if query_seq_lengths is None else creation.asarray(query_seq_lengths)
  kv_len = None if key_value_seq_lengths is None else creation.asarray(key_value_seq_lengths)
  if isinstance(local_window_size, int):
    local_window_size = (local_window_size, local_window_size)
  b, s, kh, h = k.shape
  _check_attention_arg(v, [b, s, kh, h], k.dtype, "value")
  _check_attention_arg(q, [b, -1, -1, h], k.dtype, "query")
  _check_attention_arg(mask, [-1] * 4, np.dtype(bool), "mask")
  _check_attention_arg(bias, [-1] * 4, None, "bias")
  _check_attention_arg(q_len, [b], np.dtype(np.int32), "query_seq_lengths")
  _check_attention_arg(kv_len, [b], np.dtype(np.int32), "key_value_seq_lengths")
  if q.shape[-2] % kh != 0:
    raise ValueError("The number of query heads must be a multiple of key/value heads, but "
                     f"got {q.shape[-2]} vs {kh}")
  scale = (1.0 / np.sqrt(h)) if scale is None else scale
  out = _attention_xla(q, k, v, bias, mask, is_causal, scale, q_len, kv_len,
                       local_window_size, return_residual)
  if return_residual:
    encoded, lse = out
    return lax_numpy.reshape(encoded, out_shape), lax_numpy.reshape(lse, out_shape[:-1])
  return lax_numpy.reshape(out, out_shape)
