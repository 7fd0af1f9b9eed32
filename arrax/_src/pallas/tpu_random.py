"""Random numbers in TPU kernels (jax.experimental.pallas.tpu): `sample_block`, which draws a
block of a larger random array so that the values do not depend on the block shape or the
iteration order (one key per tile, folded in from the tile's row-major index), and
`to_pallas_key`, which makes keys of the TPU core's hardware PRNG (`key<pl>`).

Pallas keys can be made, indexed, passed through jit and read with `jax.random.key_data`; drawing
from them needs the TPU's PRNG, so the random functions raise NotImplementedError on them, as
JAX does off-TPU."""
from __future__ import annotations

import numpy as np

from arrax._src import batching, prng, random
from arrax._src.numpy import lax_numpy
from arrax._src.pallas import primitives
from arrax._src.tree_util import register_leaf_type, register_pytree_node

_PALLAS_KEY_SHAPE = (1, 2)


def _kernel_only(op):
  def fn(*args, **kwargs):
    if op == "split":
      raise NotImplementedError("Cannot split a Pallas key. Use fold_in instead to generate new "
                                "keys.")
    raise NotImplementedError(f"jax.random's {op} of a Pallas TPU key (key<pl>): these keys seed "
                              "the TPU core's hardware PRNG inside a Pallas TPU kernel")
  return fn


# (the record of key<pl>: its keys only seed the hardware PRNG in a kernel, as in JAX)
_pallas_tpu_impl = prng.PRNGImpl(_PALLAS_KEY_SHAPE, _kernel_only("seed"), _kernel_only("split"),
                                 _kernel_only("random_bits"), _kernel_only("fold_in"),
                                 name="pallas_tpu", tag="pl")


class PallasKeyTy(prng.KeyTy):
  """The dtype of Pallas TPU keys (`key<pl>`)."""
  __slots__ = ()

  def __init__(self):
    super().__init__(_pallas_tpu_impl)

  def __eq__(self, other):
    return type(other) is PallasKeyTy

  def __hash__(self):
    return hash(PallasKeyTy)


key_dtype_pl = PallasKeyTy()


class PallasKeyArray(prng.PRNGKeyArray):
  """Typed Pallas TPU keys over uint32 key data of shape (*shape, 1, 2)."""
  __slots__ = ()

  def __init__(self, base_array, dtype=None):
    super().__init__(base_array, key_dtype_pl)

  def _wrap(self, data, mask_fn=None):
    return PallasKeyArray(data)

  def __getitem__(self, idx):
    idx = idx if isinstance(idx, tuple) else (idx,)
    tail = (slice(None),) * 2
    full = (*idx, *tail) if any(i is Ellipsis for i in idx) else (*idx, Ellipsis, *tail)
    return PallasKeyArray(self._base_array[full])

  def reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int):
      shape = tuple(shape[0])
    return PallasKeyArray(self._base_array.reshape(*shape, *_PALLAS_KEY_SHAPE, order=order))


register_pytree_node(PallasKeyArray, lambda k: ((k._base_array,), None),
                     lambda _, children: PallasKeyArray(children[0]))
register_leaf_type(PallasKeyArray)


def to_pallas_key(key):
  """A Pallas TPU key (`key<pl>`) for each key of `key` (typed or raw): uint32 bits of shape
  (1, 2) drawn from it."""
  typed = isinstance(key, prng.PRNGKeyArray)
  batched = key.ndim > (0 if typed else 1)

  def bits(k):
    return random.bits(k, _PALLAS_KEY_SHAPE, np.uint32)

  data = batching.vmap(bits)(key) if batched else bits(key)
  return PallasKeyArray(data)


def _blocked_keys(global_key, total_size, block_size, tile_size, block_index):
  """The nested lists of keys of the block's tiles: `fold_in(global_key, t)` with `t` the
  tile's row-major index in the whole array (partial tiles at the end counted)."""
  per_block = [b // t for b, t in zip(block_size, tile_size)]
  tiles = [-(-s // t) for s, t in zip(total_size, tile_size)]

  def keys(axis, prefix):
    if axis == len(per_block):
      flat, stride = 0, 1
      for d in reversed(range(len(per_block))):
        flat = flat + (prefix[d] + block_index[d] * per_block[d]) * stride
        stride *= tiles[d]
      return random.fold_in(global_key, flat)
    return [keys(axis + 1, prefix + (i,)) for i in range(per_block[axis])]

  return keys(0, ())


def sample_block(sampler_fn, global_key, block_size, tile_size, total_size, block_index=None,
                 **kwargs):
  """The block `block_index` (default: the program ids) of shape `block_size` of a random
  array of shape `total_size` drawn with `sampler_fn(key, shape=tile_size, **kwargs)` per tile;
  the same for any block shape that `tile_size` divides."""
  if len(block_size) != len(tile_size):
    raise ValueError(f"block_size ({len(block_size)}) and tile_size ({len(tile_size)}) must "
                     "have the same length.")
  if block_index is None:
    block_index = tuple(primitives.program_id(a) for a in range(len(block_size)))
  keys = _blocked_keys(global_key, total_size, block_size, tile_size, block_index)
  per_block = [b // t for b, t in zip(block_size, tile_size)]

  def draw(axis, sub):
    if axis == len(per_block):
      return sampler_fn(sub, shape=tile_size, **kwargs)
    return lax_numpy.concatenate([draw(axis + 1, sub[i]) for i in range(per_block[axis])],
                                 axis=axis)

  return draw(0, keys)
