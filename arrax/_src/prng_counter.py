"""The counter-based PRNG implementations threefry4x32, philox2x32 and philox4x32 (Random123).

Each record's functions work on one key's uint32 data (shape (4,), (1,) and (2,)), as JAX's do,
and give JAX's bits: the seed hashes its two 32-bit halves, split and random_bits hash a 64-bit
row-major iota of the requested shape, and fold_in hashes the message as a counter word. The
hashes are written with arrax's lax integer operations (mul and mulhi for Philox). All three are
registered by name, so `random.key(0, impl="philox4x32")` gives keys of dtype `key<phx4>`.
"""
from __future__ import annotations

import math
import operator

import numpy as np

from arrax._src import prng
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax.integer_arith import mulhi
from arrax._src.numpy import creation

_U32 = np.dtype(np.uint32)


# ---- the hashes on broadcast uint32 arrays of one shape -----------------------------------------
def _rotl(x, d):
  return lax.bitwise_or(lax.shift_left(x, np.uint32(d)),
                        lax.shift_right_logical(x, np.uint32(32 - d)))


_FRY4_ROTATIONS = ((10, 26), (11, 21), (13, 27), (23, 5), (6, 20), (17, 11), (25, 10), (18, 20))
_FRY4_PARITY = np.uint32(0x1BD11BDA)


def threefry4x32(k, x):
  """Threefry-4x32, 20 rounds, of key words `k` and counter words `x` (four each)."""
  ks = list(k)
  ks.append(lax.bitwise_xor(lax.bitwise_xor(ks[0], ks[1]),
                            lax.bitwise_xor(lax.bitwise_xor(ks[2], ks[3]), _FRY4_PARITY)))
  x0, x1, x2, x3 = (lax.add(xi, ki) for xi, ki in zip(x, ks))
  for r in range(20):
    ra, rb = _FRY4_ROTATIONS[r % 8]
    if r % 2 == 0:                      # mix words (0, 1) and (2, 3)
      x0 = lax.add(x0, x1)
      x1 = lax.bitwise_xor(x0, _rotl(x1, ra))
      x2 = lax.add(x2, x3)
      x3 = lax.bitwise_xor(x2, _rotl(x3, rb))
    else:                               # mix words (0, 3) and (2, 1)
      x0 = lax.add(x0, x3)
      x3 = lax.bitwise_xor(x0, _rotl(x3, ra))
      x2 = lax.add(x2, x1)
      x1 = lax.bitwise_xor(x2, _rotl(x1, rb))
    if r % 4 == 3:                      # key injection s = r // 4 + 1
      s = r // 4 + 1
      x0 = lax.add(x0, ks[s % 5])
      x1 = lax.add(x1, ks[(s + 1) % 5])
      x2 = lax.add(x2, ks[(s + 2) % 5])
      x3 = lax.add(lax.add(x3, ks[(s + 3) % 5]), np.uint32(s))
  return x0, x1, x2, x3


_PHILOX_W = (np.uint32(0x9E3779B9), np.uint32(0xBB67AE85))
_PHILOX2_M = np.uint32(0xD256D193)
_PHILOX4_M = (np.uint32(0xD2511F53), np.uint32(0xCD9E8D57))


def philox2x32(k0, x0, x1):
  """Philox-2x32, 10 rounds, of the key word `k0` and counter words `x0`, `x1`."""
  for r in range(10):
    if r:
      k0 = lax.add(k0, _PHILOX_W[0])
    lo, hi = lax.mul(x0, _PHILOX2_M), mulhi(x0, _PHILOX2_M)
    x0, x1 = lax.bitwise_xor(lax.bitwise_xor(hi, x1), k0), lo
  return x0, x1


def philox4x32(k, x):
  """Philox-4x32, 10 rounds, of key words `k` (two) and counter words `x` (four)."""
  k0, k1 = k
  x0, x1, x2, x3 = x
  for r in range(10):
    if r:
      k0, k1 = lax.add(k0, _PHILOX_W[0]), lax.add(k1, _PHILOX_W[1])
    lo0, hi0 = lax.mul(x0, _PHILOX4_M[0]), mulhi(x0, _PHILOX4_M[0])
    lo1, hi1 = lax.mul(x2, _PHILOX4_M[1]), mulhi(x2, _PHILOX4_M[1])
    x0, x1, x2, x3 = (lax.bitwise_xor(lax.bitwise_xor(hi1, x1), k0), lo1,
                      lax.bitwise_xor(lax.bitwise_xor(hi0, x3), k1), lo0)
  return x0, x1, x2, x3


# ---- helpers on one key ----------------------------------------------------------------------------
def _words(key, n, shape=()):
  """The `n` words of one key's data, each broadcast to `shape`."""
  key = creation.asarray(key)
  out = []
  for i in range(n):
    w = shape_ops.reshape(shape_ops.slice_in_dim(key, i, i + 1), ())
    out.append(shape_ops.broadcast_in_dim(w, shape, ()) if shape else w)
  return out


def _const(v, shape=()):
  return shape_ops._full(shape, v, _U32)


def _stack(words):
  """Words of one shape stacked along a new last axis."""
  nd = len(np.shape(words[0]))
  return shape_ops.concatenate([shape_ops.expand_dims(w, (nd,)) for w in words], nd)


def _seed_words(seed):
  """The high and low uint32 words of an integer scalar seed, as JAX computes them."""
  hi_lo = prng.seed_data(creation.asarray(seed))
  return _words(hi_lo, 2)


def _msg(data):
  return lax.convert_element_type(creation.asarray(data), _U32)


def _check_bits(name, key, key_shape, bit_width):
  key = creation.asarray(key)
  if not (tuple(key.shape) == key_shape and key.dtype == _U32):
    raise TypeError(f"{name}_random_bits got invalid prng key.")
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")


def _check_size(shape):
  if math.prod(shape) > 2 ** 64:
    raise NotImplementedError("random bits array of size exceeding 2 ** 64")


def _combine(bit_width, hi, lo, xor_all):
  """64-bit values from the words `hi`, `lo`; narrower ones from the xor of `xor_all`."""
  dtype = prng.UINT_DTYPES[bit_width]
  if bit_width == 64:
    hi, lo = (lax.convert_element_type(w, dtype) for w in (hi, lo))
    return lax.bitwise_or(lax.shift_left(hi, np.array(32, dtype)), lo)
  bits = xor_all[0]
  for w in xor_all[1:]:
    bits = lax.bitwise_xor(bits, w)
  return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)


def _shape(shape):
  return tuple(operator.index(d) for d in shape)


# ---- the records: one key's functions, parameterized by the hash ----------------------------------
def _counter_prng(hash_fn, *, key_shape, n_ctr, seed_in_key, xor_halves, name, tag):
  """The PRNGImpl of the counter hash `hash_fn(key_words, counter_words)` on `key_shape[0]` key
  words and `n_ctr` counter words. Seed hashes the seed's halves as the key (`seed_in_key`) or as
  the first counter words; split and fold_in hash their counter in the last words, random_bits in
  the first; keys are the first output words, 64-bit values the first two (xored with the next
  two when `xor_halves`)."""
  nk = key_shape[0]

  def seed(s):
    hi, lo = _seed_words(s)
    z = _const(0)
    if seed_in_key:
      y = hash_fn([hi, lo] + [z] * (nk - 2), [z] * n_ctr)
    else:
      y = hash_fn([z] * nk, [hi, lo] + [z] * (n_ctr - 2))
    return _stack(list(y[:nk]))

  def split(key, shape):
    shape = _shape(shape)
    c_hi, c_lo = prng.iota_2x32_shape(shape)
    z = _const(0, shape)
    return _stack(list(hash_fn(_words(key, nk, shape), [z] * (n_ctr - 2) + [c_hi, c_lo])[:nk]))

  def fold_in(key, data):
    z = _const(0)
    return _stack(list(hash_fn(_words(key, nk), [z] * (n_ctr - 1) + [_msg(data)])[:nk]))

  def random_bits(key, bit_width, shape):
    _check_bits(name, key, key_shape, bit_width)
    shape = _shape(shape)
    _check_size(shape)
    c_hi, c_lo = prng.iota_2x32_shape(shape)
    z = _const(0, shape)
    y = hash_fn(_words(key, nk, shape), [c_hi, c_lo] + [z] * (n_ctr - 2))
    hi, lo = ((lax.bitwise_xor(y[0], y[2]), lax.bitwise_xor(y[1], y[3])) if xor_halves
              else (y[0], y[1]))
    return _combine(bit_width, hi, lo, y)

  impl = prng.PRNGImpl(key_shape=key_shape, seed=seed, split=split, random_bits=random_bits,
                       fold_in=fold_in, name=name, tag=tag)
  prng.register_prng(impl)
  return impl


threefry4x32_prng_impl = _counter_prng(threefry4x32, key_shape=(4,), n_ctr=4, seed_in_key=True,
                                       xor_halves=True, name="threefry4x32", tag="fry4")
philox2x32_prng_impl = _counter_prng(lambda k, x: philox2x32(k[0], *x), key_shape=(1,), n_ctr=2,
                                     seed_in_key=False, xor_halves=False, name="philox2x32",
                                     tag="phx2")
philox4x32_prng_impl = _counter_prng(philox4x32, key_shape=(2,), n_ctr=4, seed_in_key=False,
                                     xor_halves=False, name="philox4x32", tag="phx4")
