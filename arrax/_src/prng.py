"""PRNG keys: the threefry2x32 hash built from lax primitives, JAX's key derivations, key arrays.

Key data is a uint32 array of shape (*batch, 2). Every derivation here (seed, split, fold_in,
random bits) takes such data with any leading batch shape and treats each key independently,
by broadcasting the key words against the counters; the result for one key is what JAX computes
for that key in the same `jax_threefry_partitionable` mode.

Typed keys (`jax.random.key`) are `PRNGKeyArray`s: a pytree node whose single child is the
uint32 data, so jit, vmap and the other transformations see plain uint32 arrays.
"""
from __future__ import annotations

import functools
import math
import weakref
import operator
from collections.abc import Callable
from typing import NamedTuple

import numpy as np

from arrax._src import array, core, dtypes
from arrax._src.array import Array
from arrax._src.config import config
from arrax._src.errors import KeyReuseError
from arrax._src.jit import jit
from arrax._src.ad import defjvp_zero
from arrax._src.batching import defbroadcasting, vmap
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax.control_flow import fori_loop
from arrax._src.lax.control_flow.common import lower_fun
from arrax._src.lax.utils import broadcasting_shape
from arrax._src.numpy import array_methods, creation, indexing, reductions, ufuncs
from arrax._src.sharding_impls import Shard
from arrax._src import pretty_printer as pp
from arrax._src.tree_util import register_leaf_type, register_pytree_node

_partitionable = config.flag("jax_threefry_partitionable")
_debug_key_reuse = config.flag("jax_debug_key_reuse")
_U32 = np.dtype(np.uint32)
UINT_DTYPES = {8: np.dtype(np.uint8), 16: np.dtype(np.uint16), 32: _U32,
               64: np.dtype(np.uint64)}


# ---- the threefry2x32 hash --------------------------------------------------------------------
# threefry2x32 is a primitive (as in JAX) so that jaxprs show it as one equation and vmap
# broadcasts it; it lowers to the lax operations below. Like JAX on CPU, the five key-injection
# rounds run as a rolled loop: the loop also decides how XLA fuses the float work that follows,
# and that fusion shows in the last bit of some samples.
_ROTATIONS = (np.array([13, 15, 26, 6], np.uint32), np.array([17, 29, 16, 24], np.uint32))
_KS_PARITY = np.uint32(0x1BD11BDA)

threefry2x32_p = core.Primitive("threefry2x32")
threefry2x32_p.multiple_results = True


def _threefry2x32_abstract_eval(k1, k2, x1, x2):
  avals = (k1, k2, x1, x2)
  if any(a.dtype != _U32 for a in avals):
    raise TypeError("Arguments to threefry2x32 must have uint32 type, got "
                    f"{', '.join(a.str_short() for a in avals)}")
  aval = core.ShapedArray(broadcasting_shape("threefry2x32", *avals), _U32)
  return [aval, aval]


def _rotate_left(x, d):
  return lax.bitwise_or(lax.shift_left(x, d), lax.shift_right_logical(x, lax.sub(np.uint32(32), d)))


def _apply_round(x1, x2, rot):
  x1 = lax.add(x1, x2)
  return x1, lax.bitwise_xor(x1, _rotate_left(x2, rot))


def _rolled_step(i, state):
  (x1, x2), ks, rotations = state
  for j in range(4):
    x1, x2 = _apply_round(x1, x2, shape_ops.index_in_dim(rotations[0], j, keepdims=False))
  step = lax.convert_element_type(lax.add(i, 1), _U32)
  new_x = (lax.add(x1, ks[0]), lax.add(lax.add(x2, ks[1]), step))
  return new_x, ks[1:] + ks[:1], rotations[1:] + rotations[:1]


def _threefry2x32_lowered(k1, k2, x1, x2):
  shape = broadcasting_shape("threefry2x32", *map(core.get_aval, (k1, k2, x1, x2)))
  x1, x2 = (_broadcast(x, shape) for x in (x1, x2))
  ks = (k1, k2, lax.bitwise_xor(lax.bitwise_xor(k1, k2), _KS_PARITY))
  x = (lax.add(x1, ks[0]), lax.add(x2, ks[1]))
  x, _, _ = fori_loop(0, 5, _rolled_step, (x, ks[1:] + ks[:1], _ROTATIONS))
  return list(x)


def _threefry2x32_lowering(ctx, *args):
  return lower_fun(_threefry2x32_lowered)(ctx, *args)


threefry2x32_p.def_abstract_eval(_threefry2x32_abstract_eval)
threefry2x32_p.def_lowering(_threefry2x32_lowering)
defbroadcasting(threefry2x32_p)
defjvp_zero(threefry2x32_p)


def threefry2x32(k1, k2, x1, x2):
  """Threefry-2x32 with 20 rounds (Salmon et al. 2011) on broadcast-compatible uint32 arrays."""
  return threefry2x32_p.bind(k1, k2, x1, x2)


def _hash(k1, k2, x1, x2):
  """threefry2x32 of keys (rank 0, or with trailing size-1 axes) and counters."""
  kn, xn = np.ndim(k1), np.ndim(x1)
  if kn and kn != xn:
    x1, x2 = (shape_ops.reshape(x, (1,) * (kn - xn) + np.shape(x)) for x in (x1, x2))
  return threefry2x32(k1, k2, x1, x2)


def _broadcast(x, shape):
  xs = np.shape(x)
  if xs == shape:
    return x
  lead = len(shape) - len(xs)
  keep = [i for i, d in enumerate(xs) if d == shape[lead + i]]
  x = shape_ops.reshape(x, tuple(xs[i] for i in keep)) if len(keep) != len(xs) else x
  return shape_ops.broadcast_in_dim(x, shape, tuple(lead + i for i in keep))


def _key_words(data, extra_ndim):
  """The two uint32 words of keys (*batch, 2): scalars for one key, else arrays of shape
  (*batch, 1, ..., 1) with `extra_ndim` trailing axes to broadcast against counters."""
  batch = np.shape(data)[:-1]
  last = len(batch)
  words = []
  for i in range(2):
    w = shape_ops.squeeze(shape_ops.slice_in_dim(data, i, i + 1, axis=last), (last,))
    words.append(shape_ops.reshape(w, batch + (1,) * extra_ndim) if batch else w)
  return words


def threefry_2x32(data, count):
  """JAX's counter hashing in legacy mode: the flat counts are cut into halves that are hashed
  as pairs (padded to even length); returns uint32 of shape batch + count.shape."""
  batch = np.shape(data)[:-1]
  cshape = np.shape(count)
  flat = shape_ops.reshape(count, (math.prod(cshape),))
  odd = flat.shape[0] % 2
  if odd:
    flat = shape_ops.concatenate([flat, np.zeros((1,), _U32)], 0)
  half = flat.shape[0] // 2
  x1 = shape_ops.slice_in_dim(flat, 0, half)
  x2 = shape_ops.slice_in_dim(flat, half, 2 * half)
  k1, k2 = _key_words(data, 1)
  y1, y2 = _hash(k1, k2, x1, x2)
  out = shape_ops.concatenate([y1, y2], len(batch))
  if odd:
    out = shape_ops.slice_in_dim(out, 0, 2 * half - 1, axis=len(batch))
  return shape_ops.reshape(out, batch + cshape)


def iota_2x32_shape(shape):
  """High and low uint32 words of a 64-bit row-major iota of `shape`."""
  size = math.prod(shape)
  if size > 2 ** 32:
    raise NotImplementedError(f"random values for more than 2**32 elements (shape {shape}) "
                              "are not supported by arrax.")
  zeros = shape_ops._full(shape, 0, _U32)
  if not shape:
    return zeros, zeros
  lo = shape_ops.reshape(shape_ops.iota(_U32, size), shape)
  return zeros, lo


# ---- key derivations on raw uint32 key data --------------------------------------------------
def seed_data(seed):
  """uint32[2] key data from an integer scalar seed: its high and low 32 bits."""
  seed_dtype = np.dtype(seed.dtype)
  if np.ndim(seed):
    raise TypeError(f"PRNG key seed must be a scalar; got {seed!r}.")
  if not np.issubdtype(seed_dtype, np.integer):
    raise TypeError(f"PRNG key seed must be an integer; got {seed!r}")
  return _seed_data(seed)


@functools.partial(jit, inline=True)
def _seed_data(seed):
  hi = lax.shift_right_logical(seed, np.array(32, seed.dtype))
  # The low word as JAX computes it: `seed & 0xFFFFFFFF` under standard promotion.
  lo = ufuncs.bitwise_and(seed, np.uint32(0xFFFFFFFF))
  words = [shape_ops.expand_dims(lax.convert_element_type(w, _U32), (0,)) for w in (hi, lo)]
  return shape_ops.concatenate(words, 0)


def _split_partitionable(data, shape):
  hi, lo = iota_2x32_shape(shape)
  k1, k2 = _key_words(data, len(shape))
  b1, b2 = _hash(k1, k2, hi, lo)
  nd = len(b1.shape)
  return shape_ops.concatenate([shape_ops.expand_dims(b1, (nd,)),
                                shape_ops.expand_dims(b2, (nd,))], nd)


def _split_legacy(data, shape):
  batch = np.shape(data)[:-1]
  counts = shape_ops.iota(_U32, 2 * math.prod(shape))
  return shape_ops.reshape(threefry_2x32(data, counts), batch + tuple(shape) + (2,))


@functools.partial(jit, static_argnums=(1,))
def split_data(data, shape):
  """Key data (*batch, *shape, 2) of new keys split from each key in `data` (keys of another
  implementation when `data` is a key array)."""
  if isinstance(data, PRNGKeyArray):
    return impl_split(data, shape)
  if _partitionable.value:
    return _split_partitionable(data, shape)
  return _split_legacy(data, shape)


@jit
def fold_in_data(data, msg):
  """Key data of `data`'s keys with the uint32 scalar `msg` folded in."""
  if isinstance(data, PRNGKeyArray):
    return impl_fold_in(data, msg)
  zero = np.zeros((1,), _U32)
  counts = shape_ops.concatenate([zero, shape_ops.reshape(msg, (1,))], 0)
  return threefry_2x32(data, counts)


def _bits_partitionable(data, bit_width, shape):
  hi, lo = iota_2x32_shape(shape)
  k1, k2 = _key_words(data, len(shape))
  b1, b2 = _hash(k1, k2, hi, lo)
  dtype = UINT_DTYPES[bit_width]
  if bit_width == 64:
    b1 = lax.convert_element_type(b1, dtype)
    b2 = lax.convert_element_type(b2, dtype)
    return lax.bitwise_or(lax.shift_left(b1, np.array(32, dtype)), b2)
  bits = lax.bitwise_xor(b1, b2)
  return bits if bit_width == 32 else lax.convert_element_type(bits, dtype)


def _bits_legacy(data, bit_width, shape):
  batch = np.shape(data)[:-1]
  nb = len(batch)
  size = math.prod(shape)
  max_count = -(-bit_width * size // 32)
  if max_count >= np.iinfo(np.uint32).max:
    raise NotImplementedError(f"random values of {bit_width * size} bits (shape {shape}) in "
                              "legacy threefry mode are not supported by arrax.")
  bits = threefry_2x32(data, shape_ops.iota(_U32, max_count))
  dtype = UINT_DTYPES[bit_width]
  if bit_width == 64:
    hi = lax.convert_element_type(shape_ops.slice_in_dim(bits, 0, size, axis=nb), dtype)
    lo = lax.convert_element_type(shape_ops.slice_in_dim(bits, size, 2 * size, axis=nb), dtype)
    bits = lax.bitwise_or(lax.shift_left(hi, np.array(32, dtype)), lo)
  elif bit_width in (8, 16):
    # Each 32-bit word gives 32 // bit_width values, lowest bits first (a little-endian view).
    per_word = 32 // bit_width
    shifts = lax.mul(np.uint32(bit_width), shape_ops.iota(_U32, per_word))
    words = shape_ops.expand_dims(bits, (nb + 1,))
    shifts = shape_ops.reshape(shifts, (1,) * (nb + 1) + (per_word,))
    parts = lax.bitwise_and(lax.shift_right_logical(words, shifts),
                            np.uint32(np.iinfo(dtype).max))
    parts = shape_ops.reshape(parts, batch + (max_count * per_word,))
    bits = shape_ops.slice_in_dim(lax.convert_element_type(parts, dtype), 0, size, axis=nb)
  return shape_ops.reshape(bits, batch + tuple(shape))


def random_bits(data, bit_width, shape):
  """Uniform random unsigned integers of `bit_width` bits, shape (*batch, *shape)."""
  shape = tuple(shape)
  if isinstance(data, PRNGKeyArray):
    return impl_random_bits(data, bit_width, shape)
  if _partitionable.value:
    return _bits_partitionable(data, bit_width, shape)
  return _bits_legacy(data, bit_width, shape)


# ---- the PRNG implementation record (jax.extend.random) ----------------------------------------
class PRNGImpl(NamedTuple):
  """A PRNG implementation: the shape of one key's uint32 data and its derivations on one key,
  `seed(int[]) -> key`, `split(key, shape) -> keys[*shape]`, `random_bits(key, bit_width,
  shape) -> uint<bit_width>[*shape]` and `fold_in(key, uint32[]) -> key`. arrax's key arrays
  implement threefry2x32 (`threefry_prng_impl`)."""
  key_shape: tuple
  seed: Callable
  split: Callable
  random_bits: Callable
  fold_in: Callable
  name: str = "<unnamed>"
  tag: str = "?"

  def __hash__(self):
    return hash(self.tag)

  def __str__(self):
    return self.tag


# ---- typed key arrays ----------------------------------------------------------------------
class KeyTy(dtypes.ExtendedDType):
  """The dtype of typed PRNG key arrays of one implementation, printed `key<tag>`
  (threefry2x32 keys are `key<fry>`)."""
  __slots__ = ("_impl", "nk")
  type = dtypes.prng_key
  itemsize = 8
  kind = "V"

  def __init__(self, impl=None):
    self._impl = threefry_prng_impl if impl is None else impl
    self.nk = len(self._impl.key_shape)   # the number of key-data axes

  impl = property(lambda self: self._impl)
  name = property(lambda self: f"key<{self._impl.tag}>")
  impl_name = property(lambda self: self._impl.name)

  def __repr__(self):
    return self.name

  __str__ = __repr__

  def __eq__(self, other):
    return type(other) is type(self) and (other._impl is self._impl or other._impl == self._impl)

  def __hash__(self):
    return hash((KeyTy, self._impl))


_KEY_DTYPES = {}


def key_dtype(impl):
  """The (one) KeyTy of the PRNGImpl `impl`."""
  dt = _KEY_DTYPES.get(impl)
  if dt is None or dt._impl != impl:
    dt = _KEY_DTYPES[impl] = KeyTy(impl)
  return dt


def _norm_axes(axes, ndim):
  return tuple(operator.index(a) % ndim if ndim else operator.index(a) for a in axes)


class PRNGKeyArray:
  """An array of typed PRNG keys (dtype `key<tag>` of a PRNG implementation) over uint32 key
  data of shape (*shape, *impl.key_shape).

  Keys support indexing and reshaping like arrays, but no arithmetic; extract the bits with
  `jax.random.key_data`.
  """
  __slots__ = ("_base_array", "_dtype", "_consumed", "_link", "__weakref__")
  __array_priority__ = 100

  def __init__(self, base_array, dtype=None):
    self._base_array = base_array
    self._dtype = key_dtype_fry if dtype is None else dtype
    # Key-reuse checking (jax_debug_key_reuse): whether the keys were used up, all of them
    # (a bool) or per key (a NumPy bool array of the key shape); `_link` is the _KeyLink to
    # the caller's key when these keys were rebuilt inside a transformation (False for the
    # internal keys the samplers pass to their jitted bodies: never checked nor linked).
    self._consumed = False
    self._link = None

  shape = property(lambda self: tuple(self._base_array.shape[:self.ndim]))
  ndim = property(lambda self: len(self._base_array.shape) - self._dtype.nk)
  size = property(lambda self: math.prod(self.shape))
  dtype = property(lambda self: self._dtype)
  itemsize = property(lambda self: self._dtype.itemsize)
  nbytes = property(lambda self: self.size * self._dtype.itemsize)

  def _new(self, data):
    return PRNGKeyArray(data, self._dtype)

  def _tail(self):
    return (slice(None),) * self._dtype.nk

  def _wrap(self, data, mask_fn=None):
    """Keys over `data` derived from these; with `mask_fn` (a NumPy view change applied to
    the consumed mask) they inherit the consumption (JAX's forwarding ops)."""
    out = PRNGKeyArray(data, self._dtype)
    if mask_fn is not None and self._consumed is not False:
      out._consumed = (self._consumed if isinstance(self._consumed, bool)
                       else mask_fn(self._consumed))
    return out

  def __len__(self):
    if not self.ndim:
      raise TypeError("len() of unsized object")
    return self.shape[0]

  def __iter__(self):
    if not self.ndim:
      raise TypeError("iteration over a 0-d key array")
    if isinstance(self._base_array, Array):
      # `k1, k2 = split(key)` is the common case: one executable for all the rows.
      return iter([self._new(row) for row in _unstack_rows(self._base_array)])
    return (self[i] for i in range(self.shape[0]))

  def __getitem__(self, idx):
    idx = idx if isinstance(idx, tuple) else (idx,)
    if any(i is Ellipsis for i in idx):
      full = (*idx, *self._tail())
    else:
      full = (*idx, Ellipsis, *self._tail())
    if _debug_key_reuse.value and all(i is None or i is Ellipsis or isinstance(i, (int, slice))
                                      for i in idx):
      # A static index slices: the selected keys are consumed, the result is fresh (JAX).
      selected = np.zeros(self.shape, bool)
      selected[idx] = True
      consume(self, "slice", selected)
    return self._wrap(self._base_array[full])

  def reshape(self, *shape, order="C"):
    if len(shape) == 1 and not isinstance(shape[0], int) and not hasattr(shape[0], "__index__"):
      shape = tuple(shape[0])
    shape = tuple(operator.index(d) for d in shape)
    return self._wrap(self._base_array.reshape(*shape, *self._dtype.impl.key_shape,
                                               order=order),
                      lambda m: m.reshape(*shape, order=order))

  def ravel(self, order="C"):
    return self.reshape(-1, order=order)

  flatten = ravel

  def transpose(self, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
      axes = axes[0]
    nd = self.ndim
    perm = tuple(reversed(range(nd))) if not axes else _norm_axes(axes, nd)
    tail = range(nd, nd + self._dtype.nk)
    return self._wrap(self._base_array.transpose(*perm, *tail), lambda m: m.transpose(perm))

  T = property(lambda self: self.transpose())

  def squeeze(self, axis=None):
    if axis is None:
      axis = tuple(i for i, d in enumerate(self.shape) if d == 1)
    axis = _norm_axes((axis,) if isinstance(axis, int) else tuple(axis), self.ndim)
    return self._wrap(self._base_array.squeeze(axis), lambda m: m.squeeze(axis))

  def swapaxes(self, axis1, axis2):
    a1, a2 = _norm_axes((axis1, axis2), self.ndim)
    return self._wrap(self._base_array.swapaxes(a1, a2), lambda m: m.swapaxes(a1, a2))

  def __eq__(self, other):
    if not isinstance(other, PRNGKeyArray):
      return NotImplemented
    axes = tuple(range(self.ndim, self.ndim + self._dtype.nk))
    return reductions.all(self._base_array == other._base_array, axis=axes)

  def __ne__(self, other):
    if not isinstance(other, PRNGKeyArray):
      return NotImplemented
    axes = tuple(range(self.ndim, self.ndim + self._dtype.nk))
    return reductions.any(self._base_array != other._base_array, axis=axes)

  __hash__ = None

  def __bool__(self):
    raise TypeError("key array cannot be converted to boolean.")

  def __array__(self, dtype=None, copy=None):
    raise TypeError("JAX array with PRNGKey dtype cannot be converted to a NumPy array. Use "
                    "jax.random.key_data(arr) if you wish to extract the underlying integer "
                    "array.")

  def __repr__(self):
    if isinstance(self._base_array, Array):
      return f"Array({self.shape}, dtype={self.dtype.name}) overlaying:\n{self._base_array}"
    return f"PRNGKeyArray(shape={self.shape}, dtype={self.dtype.name}) over {self._base_array!r}"

  __str__ = __repr__

  # ---- device and buffer methods, forwarded to the key data ----
  def block_until_ready(self):
    self._base_array.block_until_ready()
    return self

  def is_deleted(self):
    return self._base_array.is_deleted()

  def delete(self):
    self._base_array.delete()

  def devices(self):
    return self._base_array.devices()

  device = property(lambda self: self._base_array.device)
  sharding = property(lambda self: self._base_array.sharding)
  committed = property(lambda self: self._base_array.committed)

  def copy(self):
    return self._wrap(creation.array(self._base_array), lambda m: m.copy())

  @property
  def aval(self):
    return core.ShapedArray(self.shape, self._dtype)

  is_fully_addressable = property(lambda self: self._base_array.is_fully_addressable)
  is_fully_replicated = property(lambda self: self._base_array.is_fully_replicated)

  def copy_to_host_async(self):
    self._base_array.copy_to_host_async()

  def on_device_size_in_bytes(self):
    return self._base_array.on_device_size_in_bytes()

  def unsafe_buffer_pointer(self):
    return self._base_array.unsafe_buffer_pointer()

  def addressable_data(self, index):
    """The keys of this process's `index`-th shard."""
    return self._new(self._base_array.addressable_data(index))

  def _key_shards(self, shards):
    # (each shard's index and replica id are those of the key data)
    return [Shard._known(s.device, s._sharding, s._global_shape,
                         None if s.data is None else self._new(s.data), s.index, s.replica_id)
            for s in shards]

  addressable_shards = property(lambda self: self._key_shards(self._base_array.addressable_shards))
  global_shards = property(lambda self: self._key_shards(self._base_array.global_shards))

  def pprint(self):
    """A description of the key array and its PRNG implementation."""
    if isinstance(self._base_array, core.Tracer):   # (JAX's traced keys have no pprint)
      raise AttributeError(f"{type(self._base_array).__name__} has no attribute pprint")
    impl = self._dtype.impl
    fields = pp.join(pp.brk(), [pp.text(f"{k} = {v}") for k, v in impl._asdict().items()])
    pp_impl = (pp.text(f"PRNGImpl [{impl.tag}] {{{impl.name}}}:")
               + pp.nest(2, pp.group(pp.brk() + fields)))
    return str(pp.group(pp.text("PRNGKeyArray:") + pp.nest(
        2, pp.brk() + pp.text(f"shape = {self.shape}") + pp.brk() + pp.text("impl = ")
        + pp_impl)))

  def take(self, indices, axis=None, out=None, mode=None, unique_indices=False,
           indices_are_sorted=False, fill_value=None):
    """The keys at `indices` along `axis` (of the flattened keys by default)."""
    keys = self.ravel() if axis is None else self
    axis = 0 if axis is None else operator.index(axis) % max(keys.ndim, 1)
    return self._new(indexing.take(keys._base_array, indices, axis=axis, out=out, mode=mode,
                                      unique_indices=unique_indices,
                                      indices_are_sorted=indices_are_sorted,
                                      fill_value=fill_value))

  @property
  def at(self):
    return _KeyIndexUpdateHelper(self)


class _KeyIndexUpdateHelper:
  """`keys.at[idx]`: `.get()` and `.set(other_keys)` on the key data."""
  __slots__ = ("keys",)

  def __init__(self, keys):
    self.keys = keys

  def __getitem__(self, idx):
    return _KeyIndexUpdateRef(self.keys, idx)


class _KeyIndexUpdateRef:
  __slots__ = ("keys", "idx")

  def __init__(self, keys, idx):
    self.keys, self.idx = keys, idx

  def _data_index(self):
    idx = self.idx if isinstance(self.idx, tuple) else (self.idx,)
    tail = self.keys._tail()
    return (*idx, *tail) if any(i is Ellipsis for i in idx) else (*idx, Ellipsis, *tail)

  def get(self, **kwargs):
    return self.keys._new(self.keys._base_array.at[self._data_index()].get(**kwargs))

  def set(self, values, **kwargs):
    if not isinstance(values, PRNGKeyArray) or values.dtype != self.keys.dtype:
      raise TypeError(f"a key array can only be updated with keys, got {type(values)}")
    return self.keys._new(self.keys._base_array.at[self._data_index()].set(
        values._base_array, **kwargs))


def _abstract_key_method(name, like):
  @functools.wraps(like)
  def method(*args, **kwargs):
    raise NotImplementedError(f"Cannot call abstract method {name}")
  return method


# Array methods key arrays do not implement (as JAX's key arrays: the abstract base's).
for _name in ("all", "any", "argmax", "argmin", "argpartition", "argsort", "astype", "byteswap",
              "choose", "clip", "compress", "conj", "conjugate", "cumprod", "cumsum", "diagonal",
              "dot", "item", "max", "mean", "min", "nonzero", "prod", "ptp", "repeat", "round",
              "searchsorted", "sort", "std", "sum", "to_device", "trace", "var", "view"):
  # (array_methods has installed the methods on Array: their signatures are kept)
  setattr(PRNGKeyArray, _name, _abstract_key_method(_name, getattr(array_methods.Array, _name)))


@jit
def _unstack_rows(x):
  return [shape_ops.index_in_dim(x, i, 0, keepdims=False) for i in range(x.shape[0])]


array.register_array_class(PRNGKeyArray)
# A node over its key data for arrax's transformations (which flatten their arguments and pass
# the data through), a leaf for the public tree utilities, as JAX's key arrays are.
class _KeyLink:
  """Under jax_debug_key_reuse, the pytree node data of a key array that a transformation
  (jit, vmap, grad ...) flattens: the key's consumed state and a weak reference to the key.
  The keys rebuilt inside start in that state and report their consumption to the caller's
  key; since the node data is part of the trace's cache key, a key consumed since the last
  call (or another key object) makes the transformation trace again, where reuse is caught."""
  __slots__ = ("ref", "state", "traced")

  def __init__(self, key):
    self.ref = weakref.ref(key)
    self.traced = isinstance(key._base_array, core.Tracer)
    c = key._consumed
    self.state = c if isinstance(c, bool) else c.copy()

  def _state_key(self):
    s = self.state
    return s if isinstance(s, bool) else (s.shape, s.tobytes())

  def __eq__(self, other):
    # Links to two concrete keys are equal only for the same key (a jit cache hit then has
    # nothing new to report); a link to a traced key (a loop's carry, an inner jit's argument)
    # only needs the same state, so carried keys keep their structure.
    if not isinstance(other, _KeyLink) or self._state_key() != other._state_key():
      return False
    return self.traced or other.traced or self.ref() is other.ref()

  def __hash__(self):
    return hash(self._state_key())



def _flatten_key(k):
  # (the node data: the _KeyLink or None; a pair with the dtype for other implementations)
  link = _KeyLink(k) if _debug_key_reuse.value and k._link is not False else None
  return (k._base_array,), (link if k._dtype is key_dtype_fry else (k._dtype, link))


def _unflatten_key(aux, children):
  if type(aux) is tuple:
    dtype, aux = aux
    key = PRNGKeyArray(children[0], dtype)
  else:
    key = PRNGKeyArray(children[0])
  if isinstance(aux, _KeyLink):
    key._consumed = aux.state if isinstance(aux.state, bool) else aux.state.copy()
    key._link = aux
  return key


register_pytree_node(PRNGKeyArray, _flatten_key, _unflatten_key)
register_leaf_type(PRNGKeyArray)


def consume(keys, funcname, mask=True):
  """Key-reuse checking (with jax_debug_key_reuse): mark `keys` (where `mask`) used up by
  `funcname`; KeyReuseError if one of them already was. Inside a trace the message names the
  operation as JAX's jaxpr checker does."""
  if not _debug_key_reuse.value or not isinstance(keys, PRNGKeyArray) or keys._link is False:
    return
  outer = keys._link.ref() if keys._link is not None else None
  if np.any(np.logical_and(keys._consumed, mask)):
    if keys._link is not None and np.any(np.logical_and(keys._link.state, mask)):
      # consumed before the caller passed it into the transformation
      raise KeyReuseError(f"Previously-consumed key passed to {funcname} at index 0")
    if isinstance(keys._base_array, core.Tracer):
      op = "jit" if funcname == "jit-compiled function" else funcname
      raise KeyReuseError(f"In {op}, argument 0 is already consumed.")
    raise KeyReuseError(f"Previously-consumed key passed to {funcname} at index 0")
  keys._consumed = _merge(keys._consumed, mask)
  if outer is not None and outer is not keys:
    # Report to the caller's key (all of it when the shapes differ, as under vmap).
    same = np.shape(mask) == () or np.shape(mask) == outer.shape
    outer._consumed = _merge(outer._consumed, mask if same else True)


def _merge(consumed, mask):
  both = np.logical_or(consumed, mask)
  if np.ndim(both) == 0 or both.all():
    return bool(np.all(both))
  return both


def is_key_array(x) -> bool:
  return isinstance(x, PRNGKeyArray)


def check_key_data(data, impl=None):
  """TypeError unless `data` is uint32 key data of shape (..., *impl.key_shape)."""
  impl = threefry_prng_impl if impl is None else impl
  ks = tuple(impl.key_shape)
  how = ("Create a key with jax.random.key(seed) (a typed key) or jax.random.PRNGKey(seed) "
         "(a raw uint32[2] key).")
  if not all(hasattr(data, a) for a in ("ndim", "shape", "dtype")):
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data to have ndim, "
                    f"shape, and dtype attributes. Got {data}. {how}")
  if data.ndim < 1:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.ndim >= 1; got "
                    f"ndim={data.ndim}. {how}")
  if tuple(data.shape[data.ndim - len(ks):]) != ks:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.shape to end "
                    f"with {ks}; got shape={tuple(data.shape)} for impl={impl.name}. {how}")
  if np.dtype(data.dtype) != _U32:
    raise TypeError("JAX encountered invalid PRNG key data: expected key_data.dtype = uint32; "
                    f"got dtype={np.dtype(data.dtype)}. {how}")


def as_key_data(x):
  """Key data as an arrax Array or tracer (NumPy key data is copied to the device)."""
  if isinstance(x, (Array, core.Tracer)):
    return x
  return creation.asarray(x)



class PRNGSpec:
  """A PRNG implementation as passed to `random.key(..., impl=...)` (what define_prng_impl
  returns): a wrapper of its PRNGImpl."""
  __slots__ = ("_impl",)

  def __init__(self, impl):
    self._impl = impl

  def __repr__(self):
    return f"PRNGSpec({self._impl.name!r})"

  def __str__(self):
    return str(self._impl)

  def __hash__(self):
    return hash(self._impl)

  def __eq__(self, other):
    return isinstance(other, PRNGSpec) and self._impl == other._impl


def threefry_seed(seed):
  """uint32[2] threefry key data from an integer scalar seed."""
  return seed_data(creation.asarray(seed))


def threefry_split(key, shape):
  """Key data (*shape, 2) of the keys split from one threefry key."""
  return split_data(as_key_data(key), tuple(operator.index(d) for d in shape))


def threefry_fold_in(key, data):
  """One threefry key with the uint32 scalar `data` folded in."""
  return fold_in_data(as_key_data(key), creation.asarray(data, dtype=_U32))


def threefry_random_bits(key, bit_width, shape):
  """Uniform random unsigned integers of `bit_width` bits and `shape` from one threefry key."""
  if bit_width not in UINT_DTYPES:
    raise TypeError(f"requires bit field width in {tuple(UINT_DTYPES)}")
  return random_bits(as_key_data(key), bit_width, tuple(shape))


threefry_prng_impl = PRNGImpl(key_shape=(2,), seed=threefry_seed, split=threefry_split,
                              random_bits=threefry_random_bits, fold_in=threefry_fold_in,
                              name="threefry2x32", tag="fry")
key_dtype_fry = key_dtype(threefry_prng_impl)

# The implementations `random.key(..., impl=name)` and jax_default_prng_impl know by name.
PRNG_IMPLS = {"threefry2x32": threefry_prng_impl}


def register_prng(impl):
  """Make `impl` known by its name (as JAX's prng.register_prng)."""
  if impl.name in PRNG_IMPLS:
    raise ValueError(f"PRNG with name {impl.name} already registered: {impl}")
  PRNG_IMPLS[impl.name] = impl


# ---- key operations of the other implementations --------------------------------------------
# The samplers pass keys of other implementations into their jitted bodies as key arrays (the
# dtype, hence the implementation, is in the pytree node data and so in the trace's cache key),
# and `split_data`, `fold_in_data` and `random_bits` run the implementation's one-key functions
# there, mapped over the batch axes (threefry keys stay raw uint32 data: the fast path).
def internal_keys(data, dtype):
  """Keys over `data` for a sampler's own use (not checked for reuse, not linked)."""
  keys = PRNGKeyArray(data, dtype)
  keys._link = False
  return keys


def _over_batch(fn, nb):
  for _ in range(nb):
    fn = vmap(fn)
  return fn


def impl_split(keys, shape):
  impl = keys._dtype.impl
  out = _over_batch(lambda k: impl.split(k, shape), keys.ndim)(keys._base_array)
  return internal_keys(out, keys._dtype)


def impl_fold_in(keys, msg):
  impl = keys._dtype.impl
  out = _over_batch(lambda k: impl.fold_in(k, msg), keys.ndim)(keys._base_array)
  return internal_keys(out, keys._dtype)


def impl_random_bits(keys, bit_width, shape):
  impl = keys._dtype.impl
  return _over_batch(lambda k: impl.random_bits(k, bit_width, shape), keys.ndim)(
      keys._base_array)


def random_seed(seeds, impl):
  """A key array of `impl` of shape `seeds.shape`, one key per integer seed."""
  seeds = creation.asarray(np.int64(seeds)) if isinstance(seeds, int) else creation.asarray(seeds)
  if not np.issubdtype(np.dtype(seeds.dtype), np.integer):
    raise TypeError(f"PRNG key seed must be an integer; got {seeds!r}")
  if config.jax_random_seed_offset:   # (added to every seed, as in JAX)
    seeds = seeds + config.jax_random_seed_offset
  shape = tuple(seeds.shape)
  seed_fn = _seed_data if impl is threefry_prng_impl else impl.seed
  flat = vmap(seed_fn)(shape_ops.reshape(seeds, (math.prod(shape),)))
  if seed_fn is not _seed_data:   # (an impl's seed must give its key shape)
    check_key_data(core.get_aval(flat).update(shape=tuple(flat.shape[1:])), impl)
  return PRNGKeyArray(shape_ops.reshape(flat, shape + tuple(impl.key_shape)), key_dtype(impl))


def seed_with_impl(impl, seed):
  """`random_seed(seed, impl=impl)`."""
  return random_seed(seed, impl=impl)


def threefry_2x32_hash(keypair, count):
  """The threefry2x32 hash of the uint32 array `count` under the key (k1, k2) (uint32 scalars):
  uint32 of count's shape (the flat counts are hashed in two halves, as JAX does)."""
  k1, k2 = keypair
  dts = [core.get_aval(x).dtype for x in (k1, k2, count)]
  if any(np.dtype(d) != _U32 for d in dts):
    raise TypeError(f"threefry_2x32 requires uint32 arguments, got {dts}")
  count = creation.asarray(count)
  flat = shape_ops.reshape(count, (math.prod(count.shape),))
  odd = flat.shape[0] % 2
  if odd:
    flat = shape_ops.concatenate([flat, np.zeros((1,), _U32)], 0)
  half = flat.shape[0] // 2
  x1, x2 = shape_ops.split(flat, (half, half))
  out = shape_ops.concatenate(threefry2x32(k1, k2, x1, x2), 0)
  if odd:
    out = shape_ops.slice_in_dim(out, 0, 2 * half - 1)
  return shape_ops.reshape(out, tuple(count.shape))


# ---- JAX's typed-key primitives (jax.extend.core.primitives) --------------------------------
class _KeyPrimitive(core.Primitive):
  """One of JAX's typed-key primitives. arrax's key arrays wrap uint32 key data whose
  operations are ordinary primitives, so `bind` runs the key operation on the current trace:
  the values (and jit/vmap/grad of them) are JAX's; jaxprs show the threefry operations instead
  of one `random_*` equation."""
  runs_inline = True

  def __init__(self, name, run):
    super().__init__(name)
    self._run = run

  def bind(self, *args, **params):
    return self._run(*args, **params)


def _key_arg(keys, what):
  if not isinstance(keys, PRNGKeyArray):
    raise TypeError(f"{what} accepts a typed PRNG key array, got {type(keys).__name__}")
  return keys._base_array


def _bind_split(keys, *, shape):
  data = _key_arg(keys, "random_split")
  shape = tuple(operator.index(d) for d in shape)
  if keys._dtype is not key_dtype_fry:
    return keys._new(impl_split(keys, shape)._base_array)
  return PRNGKeyArray(split_data(data, shape))


def _bind_fold_in(keys, msgs):
  data = _key_arg(keys, "random_fold_in")
  msgs = creation.asarray(msgs, dtype=_U32)
  shape = tuple(keys.shape)
  if tuple(msgs.shape) != shape:
    raise TypeError(f"random_fold_in: key shape {shape} and message shape "
                    f"{tuple(msgs.shape)} differ")
  if keys._dtype is not key_dtype_fry:
    impl = keys._dtype.impl
    out = _over_batch(impl.fold_in, len(shape))(data, msgs)
    return keys._new(out)
  if not shape:
    return PRNGKeyArray(fold_in_data(data, msgs))
  n = math.prod(shape)
  out = vmap(fold_in_data)(shape_ops.reshape(data, (n, 2)), shape_ops.reshape(msgs, (n,)))
  return PRNGKeyArray(shape_ops.reshape(out, shape + (2,)))


def _bind_bits(keys, *, bit_width, shape):
  if bit_width not in UINT_DTYPES:
    raise TypeError(f"requires bit field width in {tuple(UINT_DTYPES)}")
  data = _key_arg(keys, "random_bits")
  if keys._dtype is not key_dtype_fry:
    return impl_random_bits(keys, bit_width, tuple(shape))
  return random_bits(data, bit_width, tuple(shape))


random_seed_p = _KeyPrimitive("random_seed", lambda seeds, *, impl: random_seed(
    seeds, getattr(impl, "_impl", impl)))
random_split_p = _KeyPrimitive("random_split", _bind_split)
random_fold_in_p = _KeyPrimitive("random_fold_in", _bind_fold_in)
random_bits_p = _KeyPrimitive("random_bits", _bind_bits)
