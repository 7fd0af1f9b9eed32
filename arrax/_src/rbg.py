"""`jax.extend.random`'s other PRNG implementation records: rbg and unsafe_rbg (XLA's
RngBitGenerator keyed by uint32[4] data), and `define_prng_impl`.

The records' functions work on raw key data exactly as JAX's do (seed, split, fold_in and
random_bits give JAX's bits); both are registered by name, so `random.key(0, impl="rbg")` and
jax_default_prng_impl="rbg" give key arrays of dtype `key<rbg>` / `key<urbg>`.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Callable, Hashable

import numpy as np

from arrax._src import prng
from arrax._src.lax import broadcasting, shape_ops
from arrax._src.lax.elementwise import bitwise_xor
from arrax._src.lax.rng import rng_bit_generator
from arrax._src.numpy import creation

Shape = tuple


def _rbg_seed(seed):
  half = prng.threefry_seed(seed)
  return shape_ops.concatenate([half, half], 0)


def _rbg_split(key, shape):
  shape = tuple(operator.index(d) for d in shape)
  halves = shape_ops.reshape(creation.asarray(key), (2, 2))
  keys = prng.split_data(halves, shape)                 # (2, *shape, 2)
  keys = broadcasting.transpose(keys, tuple(range(1, len(shape) + 1)) + (0, len(shape) + 1))
  return shape_ops.reshape(keys, shape + (4,))


def _rbg_fold_in(key, data):
  halves = shape_ops.reshape(creation.asarray(key), (2, 2))
  folded = prng.fold_in_data(halves, creation.asarray(data, dtype=np.uint32))
  return shape_ops.reshape(folded, (4,))


def _rbg_random_bits(key, bit_width, shape):
  key = creation.asarray(key)
  if not (tuple(key.shape) == (4,) and key.dtype == np.dtype("uint32")):
    raise TypeError("_rbg_random_bits got invalid prng key.")
  if bit_width not in (8, 16, 32, 64):
    raise TypeError("requires 8-, 16-, 32- or 64-bit field width.")
  _, bits = rng_bit_generator(key, tuple(shape), dtype=prng.UINT_DTYPES[bit_width])
  return bits


rbg_prng_impl = prng.PRNGImpl(key_shape=(4,), seed=_rbg_seed, split=_rbg_split,
                              random_bits=_rbg_random_bits, fold_in=_rbg_fold_in,
                              name="rbg", tag="rbg")
prng.register_prng(rbg_prng_impl)


def _unsafe_rbg_split(key, shape):
  # Ten rounds of the generator per new key stand in for a hash (JAX's choice).
  shape = tuple(operator.index(d) for d in shape)
  n = math.prod(shape)
  _, rows = rng_bit_generator(creation.asarray(key), (10 * n, 4), dtype=np.uint32)
  every_tenth = shape_ops.slice(rows, (0, 0), (10 * n, 4), (10, 1))
  return shape_ops.reshape(every_tenth, shape + (4,))


def _unsafe_rbg_fold_in(key, data):
  _, rows = rng_bit_generator(_rbg_seed(data), (10, 4), dtype=np.uint32)
  last = shape_ops.reshape(shape_ops.slice(rows, (9, 0), (10, 4)), (4,))
  return bitwise_xor(creation.asarray(key), last)


unsafe_rbg_prng_impl = prng.PRNGImpl(key_shape=(4,), seed=_rbg_seed, split=_unsafe_rbg_split,
                                     random_bits=_rbg_random_bits, fold_in=_unsafe_rbg_fold_in,
                                     name="unsafe_rbg", tag="urbg")
prng.register_prng(unsafe_rbg_prng_impl)


def define_prng_impl(*, key_shape: Shape, seed: Callable, split: Callable,
                     random_bits: Callable, fold_in: Callable, name: str = "<unnamed>",
                     tag: str = "?") -> Hashable:
  """A PRNG implementation (a PRNGSpec for `random.key(..., impl=...)`) from its key shape
  and key functions (see PRNGImpl)."""
  return prng.PRNGSpec(prng.PRNGImpl(key_shape, seed, split, random_bits, fold_in, name=name,
                                     tag=tag))
