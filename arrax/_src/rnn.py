"""`jax.experimental.rnn`: the cuDNN-style multi-layer (bi)LSTM with double biases.

JAX's `lstm` binds cuDNN/MIOpen primitives that exist on GPUs only (on CPU it fails). arrax has
no GPU kernels, so `lstm` computes the reference recurrence (`lstm_ref`, a `scan` per
pseudo-layer) on the weights unpacked from the same flat cuDNN layout; its gradient is the
reference's VJP, wired through a `custom_vjp` made of `lstm_fwd`/`lstm_bwd` as in JAX.

Flat weight layout (pseudo-layer p = layer * num_directions + direction): all linear weights
first, W_ih^0, W_hh^0, W_ih^1, W_hh^1, ..., then all biases b_ih^0, b_hh^0, b_ih^1, .... Each
block stacks the four gates (input, forget, cell, output) along its leading axis.
"""
from __future__ import annotations

import math
from functools import partial
from typing import Any

import numpy as np

from arrax._src.ad_api import vjp
from arrax._src.array import Array
from arrax._src.custom_derivatives import custom_vjp
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax.control_flow.loops import scan
from arrax._src.nn.functions import sigmoid
from arrax._src.numpy import assembly, creation, indexing, lax_numpy, ufuncs
from arrax._src.random import uniform

PRNGKeyArray = Any
Shape = tuple
tanh = ufuncs.tanh


# ---- the weight layout -----------------------------------------------------------------------
def _W_ih_l(layer_i, input_size, hidden_size, bidirectional):
  """Shape of pseudo-layer `layer_i`'s stacked input weights (4*hidden, layer input width)."""
  first = layer_i == 0 or (bidirectional and layer_i == 1)
  width = input_size if first else (2 if bidirectional else 1) * hidden_size
  return (4 * hidden_size, width)


def _W_hh_l(layer_i, input_size, hidden_size, bidirectional):
  """Shape of a pseudo-layer's stacked recurrent weights (4*hidden, hidden)."""
  return (4 * hidden_size, hidden_size)


def _b_ih_l(layer_i, input_size, hidden_size, bidirectional):
  """Shape of a pseudo-layer's stacked input bias."""
  return (4 * hidden_size,)


def _b_hh_l(layer_i, input_size, hidden_size, bidirectional):
  """Shape of a pseudo-layer's stacked recurrent bias."""
  return (4 * hidden_size,)


def _get_params_shapes_in_lstm(input_size, hidden_size, num_layers, bidirectional):
  """The shapes of the flat weight vector's blocks, in layout order."""
  n = num_layers * (2 if bidirectional else 1)
  args = (input_size, hidden_size, bidirectional)
  linear = [kind(p, *args) for p in range(n) for kind in (_W_ih_l, _W_hh_l)]
  biases = [kind(p, *args) for p in range(n) for kind in (_b_ih_l, _b_hh_l)]
  return linear + biases


def get_num_params_in_lstm(input_size: int, hidden_size: int, num_layers: int,
                           bidirectional: bool) -> int:
  """The length of the flat LSTM weight vector."""
  return sum(math.prod(s) for s in _get_params_shapes_in_lstm(
      input_size, hidden_size, num_layers, bidirectional))


def init_lstm_weight(rng: PRNGKeyArray, input_size: int, hidden_size: int,
                     num_layers: int, bidirectional: bool):
  """A flat float32 weight vector drawn from U(-1/sqrt(hidden), 1/sqrt(hidden))."""
  n = get_num_params_in_lstm(input_size, hidden_size, num_layers, bidirectional)
  bound = np.sqrt(1.0 / hidden_size)
  return uniform(rng, shape=(n,), dtype=np.float32, minval=-bound, maxval=bound)


def _blocks(weights, shapes):
  offset = 0
  for shape in shapes:
    size = math.prod(shape)
    yield offset, size, weights[offset:offset + size].reshape(shape)
    offset += size


def swap_lstm_gates(weights, input_size, hidden_size, num_layers, bidirectional):
  """Exchange the last two gates (cell and output) of every block of the flat weights.

  The blocks are visited four at a time per pseudo-layer, as JAX does."""
  weights = creation.asarray(weights)
  shapes = _get_params_shapes_in_lstm(input_size, hidden_size, num_layers, bidirectional)
  visited = shapes[:num_layers * (2 if bidirectional else 1) * 4]
  for offset, size, block in list(_blocks(weights, visited)):
    g = assembly.split(block, 4, axis=0)
    swapped = lax_numpy.concatenate([g[0], g[1], g[3], g[2]], axis=0)
    weights = weights.at[offset:offset + size].set(swapped.flatten())
  return weights


def unpack_lstm_weights(weights: Array, input_size: int, hidden_size: int, num_layers: int,
                        bidirectional: bool):
  """Split the flat weights into dicts W_ih, W_hh, b_ih, b_hh keyed by pseudo-layer."""
  shapes = _get_params_shapes_in_lstm(input_size, hidden_size, num_layers, bidirectional)
  blocks = [b for _, _, b in _blocks(weights, shapes)]
  n = len(shapes) // 4
  W_ih = {p: blocks[2 * p] for p in range(n)}
  W_hh = {p: blocks[2 * p + 1] for p in range(n)}
  b_ih = {p: blocks[2 * n + 2 * p] for p in range(n)}
  b_hh = {p: blocks[2 * n + 2 * p + 1] for p in range(n)}
  return W_ih, W_hh, b_ih, b_hh


# ---- the reference recurrence ----------------------------------------------------------------
def _cell(W_ih, W_hh, b_ih, b_hh, carry, x):
  h, c = carry
  wi = assembly.split(W_ih, 4, axis=0)
  wh = assembly.split(W_hh, 4, axis=0)
  bi = assembly.split(b_ih, 4, axis=0)
  bh = assembly.split(b_hh, 4, axis=0)
  pre = [x @ wi[k].T + bi[k][None] + h @ wh[k].T + bh[k][None] for k in range(4)]
  i, f, o = sigmoid(pre[0]), sigmoid(pre[1]), sigmoid(pre[3])
  g = tanh(pre[2])
  c = f * c + i * g
  h = o * tanh(c)
  return (h, c), ((h, c), h)


def _select_last_carry(carry_seq, seq_lengths):
  """carry_seq[seq_lengths[b] - 1, b] for every batch entry b."""
  return carry_seq[seq_lengths - 1, creation.arange(carry_seq.shape[1])]


def _extract_output(seq_lengths, out):
  """The final (h, c) at each sequence's length, and the outputs zeroed past it."""
  _, ((hs, cs), ys) = out
  steps = creation.arange(ys.shape[0], dtype=np.int32)[:, None]
  valid = seq_lengths[None] > steps
  return ((_select_last_carry(hs, seq_lengths), _select_last_carry(cs, seq_lengths)),
          lax_numpy.where(valid[..., None], ys, 0))


def _flip_sequence(sequences, seq_lengths):
  """Reverse each (time-major) sequence within its length; the padding is reversed too and
  stays at the end: out[t, b] = sequences[(len[b] - 1 - t) mod T, b]."""
  T = sequences.shape[0]
  src = ufuncs.mod(seq_lengths[None, :] - 1 - creation.arange(T, dtype=np.int32)[:, None], T)
  return indexing.take_along_axis(sequences, src[..., None], axis=0)


def _run_layer(p, W_ih, W_hh, b_ih, b_hh, h_0, c_0, xs):
  cell = partial(_cell, W_ih[p], W_hh[p], b_ih[p], b_hh[p])
  return scan(cell, (h_0[p], c_0[p]), xs)


@partial(jit, static_argnums=(8, 9, 10, 11, 12))
def lstm_ref(x: Array, h_0: Array, c_0: Array, W_ih: dict[int, Array],
             W_hh: dict[int, Array], b_ih: dict[int, Array],
             b_hh: dict[int, Array], seq_lengths: Array, input_size: int,
             hidden_size: int, num_layers: int, dropout: float,
             bidirectional: bool) -> tuple[Array, Array, Array]:
  """The LSTM recurrence on unpacked weights (batch-first x); returns (y, h_n, c_n)."""
  if seq_lengths.dtype != np.dtype("int32"):
    raise NotImplementedError("`seq_lengths` can only be int32.")
  if dropout != 0.0:
    raise NotImplementedError(
        "Dropout not supported in LSTM reference because we cannot determine CUDNN dropout "
        "mask.")
  params = (W_ih, W_hh, b_ih, b_hh, h_0, c_0)
  ys = x.transpose(1, 0, 2)
  hs, cs = [], []
  for layer in range(num_layers):
    if not bidirectional:
      (h, c), ys = _extract_output(seq_lengths, _run_layer(layer, *params, ys))
      hs.append(h)
      cs.append(c)
      continue
    fwd_p, bwd_p = 2 * layer, 2 * layer + 1
    (hf, cf), ys_fwd = _extract_output(seq_lengths, _run_layer(fwd_p, *params, ys))
    rev = _flip_sequence(ys, seq_lengths)
    (hb, cb), ys_bwd = _extract_output(seq_lengths, _run_layer(bwd_p, *params, rev))
    ys = lax_numpy.concatenate([ys_fwd, _flip_sequence(ys_bwd, seq_lengths)], axis=-1)
    hs += [hf, hb]
    cs += [cf, cb]
  return ys.transpose(1, 0, 2), lax_numpy.stack(hs), lax_numpy.stack(cs)


# ---- the packed-weight API -------------------------------------------------------------------
def _lstm_cudnn_allow_tf32(precision) -> bool:
  """Whether a precision lets cuDNN use TF32 (JAX's rule; bfloat16 passes are refused)."""
  precision = lax_dot.canonicalize_precision(precision)
  if precision is None or not (isinstance(precision, tuple) and len(precision) == 2):
    return True
  first = precision[0]
  if first == lax_dot.Precision.HIGHEST:
    return False
  if first == lax_dot.Precision.HIGH:
    return True
  if first == lax_dot.Precision.DEFAULT:
    raise NotImplementedError("bfloat16 support not implemented for LSTM")
  raise ValueError(f"Unexpected precision specifier value {precision}")


def _packed_ref(input_size, hidden_size, num_layers, dropout, bidirectional, seq_lengths,
                x, h_0, c_0, w):
  unpacked = unpack_lstm_weights(w, input_size, hidden_size, num_layers, bidirectional)
  return lstm_ref(x, h_0, c_0, *unpacked, seq_lengths, input_size, hidden_size, num_layers,
                  dropout, bidirectional)


def lstm_fwd(x: Array, h_0: Array, c_0: Array, w: Array, seq_lengths: Array,
             input_size: int, hidden_size: int, num_layers: int, dropout: float,
             bidirectional: bool, precision):
  """The forward pass: ((y, h_n, c_n), residuals). arrax's reserve space is empty."""
  if seq_lengths.dtype != np.dtype("int32"):
    raise NotImplementedError("`seq_lengths` can only be int32.")
  _lstm_cudnn_allow_tf32(precision)
  y, h_n, c_n = _packed_ref(input_size, hidden_size, num_layers, dropout, bidirectional,
                            seq_lengths, x, h_0, c_0, w)
  reserve_space = creation.zeros((0,), np.float32)
  return (y, h_n, c_n), (x, h_0, c_0, w, seq_lengths, y, reserve_space)


def lstm_bwd(input_size: int, hidden_size: int, num_layers: int, dropout: float,
             bidirectional: bool, precision, residuals, gradients):
  """The backward pass: cotangents of (x, h_0, c_0, weights, seq_lengths)."""
  _lstm_cudnn_allow_tf32(precision)
  x, h_0, c_0, w, seq_lengths, _, _ = residuals
  f = partial(_packed_ref, input_size, hidden_size, num_layers, dropout, bidirectional,
              seq_lengths)
  _, pullback = vjp(f, x, h_0, c_0, w)
  dx, dh_0, dc_0, dw = pullback(tuple(gradients))
  return dx, dh_0, dc_0, dw, creation.zeros_like(seq_lengths)


@partial(custom_vjp, nondiff_argnums=(5, 6, 7, 8, 9, 10))
def lstm(x: Array, h_0: Array, c_0: Array, weights: Array, seq_lengths: Array,
         input_size: int, hidden_size: int, num_layers: int, dropout: float,
         bidirectional: bool, precision=None) -> tuple[Array, Array, Array]:
  """A cuDNN-layout LSTM on batch-first inputs.

  x: (batch, max_len, input_size); h_0, c_0: (num_directions * num_layers, batch, hidden);
  weights: flat, `get_num_params_in_lstm(...)` long; seq_lengths: int32 (batch,).
  Returns y (batch, max_len, num_directions * hidden) and the final h_n, c_n.
  """
  out, _ = lstm_fwd(x, h_0, c_0, weights, seq_lengths, input_size=input_size,
                    hidden_size=hidden_size, num_layers=num_layers, dropout=dropout,
                    bidirectional=bidirectional, precision=precision)
  return out


lstm.defvjp(lstm_fwd, lstm_bwd)
