"""jax.experimental.rnn against JAX 0.10.2. JAX's `lstm` needs cuDNN (on CPU it fails), so
arrax's `lstm` on packed weights is compared with JAX's `lstm_ref` on the same weights
unpacked: values and gradients (uni- and bidirectional, several layers, ragged lengths), under
jit and vmap; the weight-layout helpers; the errors."""
import jax
import jax.experimental.rnn as jrnn
import numpy as np
import pytest

import arrax
import arrax.experimental.rnn as arnn
from arrax.test_util import check_grads
from tests.oracle import assert_same, check, check_raises, make_with, rand, to_arrax

RNN = {arrax: arnn, jax: jrnn}

# (batch, max_len, input, hidden, layers, bidirectional, lengths)
CONFIGS = [
    (2, 4, 3, 4, 2, False, [4, 4]),
    (3, 4, 2, 3, 1, True, [4, 2, 1]),
]


def inputs(B, T, I, H, L, bi, lengths):
  nd = 2 if bi else 1
  n = jrnn.get_num_params_in_lstm(I, H, L, bi)
  return (rand((B, T, I), seed=1), rand((nd * L, B, H), seed=2), rand((nd * L, B, H), seed=3),
          rand((n,), seed=4) * 0.5, np.array(lengths, np.int32))


def packed(top, I, H, L, bi):
  """lstm on packed weights: arrax's own lstm, JAX's lstm_ref on the unpacked weights."""
  r = RNN[top]
  if top is arrax:
    return lambda x, h, c, w, sl: r.lstm(x, h, c, w, sl, I, H, L, 0.0, bi)
  return lambda x, h, c, w, sl: r.lstm_ref(x, h, c, *r.unpack_lstm_weights(w, I, H, L, bi),
                                           sl, I, H, L, 0.0, bi)


def weighted_sum(top, f):
  def loss(x, h, c, w, sl):
    y, h_n, c_n = f(x, h, c, w, sl)
    return (y * 1.5).sum() + (h_n * h_n).sum() - c_n.sum()
  return top.grad(loss, argnums=(0, 1, 2, 3))


@pytest.mark.parametrize("cfg", CONFIGS, ids=["uni2", "bi"])
def test_lstm_values_and_grads(cfg):
  _, _, I, H, L, bi, _ = cfg
  args = inputs(*cfg)
  check(lambda top: packed(top, I, H, L, bi), *args, build=make_with("top"), eager=not bi,
        jit=bi, tol=1e-5)
  if bi:   # (gradients once: the bidirectional case runs every part of the recurrence)
    check(lambda top: weighted_sum(top, packed(top, I, H, L, bi)), *args,
          build=make_with("top"), tol=1e-5)


def test_lstm_vmap_and_numerical_grads():
  cfg = (2, 2, 2, 2, 1, False, [2, 1])
  _, _, I, H, L, bi, _ = cfg
  x, h, c, w, sl = inputs(*cfg)
  ws = np.stack([w, w * 0.5])
  check(lambda top: top.vmap(lambda w: packed(top, I, H, L, bi)(x, h, c, w, sl)), ws,
        build=make_with("top"), tol=1e-5)
  f = arrax.jit(lambda x, h, c, w: arnn.lstm(x, h, c, w, to_arrax(sl), I, H, L, 0.0, bi))
  check_grads(f, to_arrax((x, h, c, w)), order=1, modes=["rev"], atol=3e-2, rtol=3e-2)


def test_bidirectional_two_layers():
  # Layer 1 of a bidirectional LSTM reads both directions' outputs (2 * hidden wide).
  cfg = (2, 3, 2, 2, 2, True, [3, 1])
  _, _, I, H, L, bi, _ = cfg
  check(lambda top: packed(top, I, H, L, bi), *inputs(*cfg), build=make_with("top"),
        eager=False, jit=True, tol=1e-5)


def test_weight_layout_helpers():
  for I, H, L, bi in [(3, 4, 1, False), (2, 3, 2, True), (5, 2, 3, False)]:
    assert arnn.get_num_params_in_lstm(I, H, L, bi) == jrnn.get_num_params_in_lstm(I, H, L, bi)
  I, H, L, bi = 2, 3, 2, True
  w = rand((jrnn.get_num_params_in_lstm(I, H, L, bi),), seed=5)
  check(lambda top: lambda w: RNN[top].unpack_lstm_weights(w, I, H, L, bi), w,
        build=make_with("top"), exact=True, strict_tree=True, eager=False, jit=True)
  check(lambda top: lambda w: RNN[top].swap_lstm_gates(w, I, H, L, bi), w,
        build=make_with("top"), exact=True, eager=False, jit=True)
  assert_same(arnn.init_lstm_weight(arrax.random.key(3), 3, 4, 2, True),
              jrnn.init_lstm_weight(jax.random.key(3), 3, 4, 2, True))
  assert_same(arnn.sigmoid(to_arrax(np.float32(0.3))), jrnn.sigmoid(np.float32(0.3)))


def test_lstm_errors():
  cfg = (2, 3, 2, 2, 1, False, [3, 3])
  x, h, c, w, sl = inputs(*cfg)
  ref = lambda top, sl_dtype=np.int32, dropout=0.0: lambda x, h, c, w, sl: RNN[top].lstm_ref(  # noqa: E731
      x, h, c, *RNN[top].unpack_lstm_weights(w, 2, 2, 1, False), sl.astype(sl_dtype), 2, 2, 1,
      dropout, False)
  check_raises(lambda top: ref(top, np.uint32), x, h, c, w, sl, build=make_with("top"),
               match=("int32",))
  check_raises(lambda top: ref(top, dropout=0.5), x, h, c, w, sl, build=make_with("top"),
               match=("Dropout",))
  # Precision.DEFAULT is refused before any kernel runs (so JAX raises it on CPU as well).
  check_raises(lambda top: lambda x, h, c, w, sl: RNN[top].lstm(
      x, h, c, w, sl, 2, 2, 1, 0.0, False, precision=top.lax.Precision.DEFAULT),
      x, h, c, w, sl, build=make_with("top"), match=("bfloat16",))
  check_raises(lambda top: lambda x, h, c, w, sl: RNN[top].lstm(
      x, h, c, w, sl.astype(np.uint32), 2, 2, 1, 0.0, False), x, h, c, w, sl,
      build=make_with("top"), match=("int32",))
