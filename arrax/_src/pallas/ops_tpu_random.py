"""Counter-based random bits as TPU Pallas kernels
(jax.experimental.pallas.ops.tpu.random): `prng_utils` (the flat counter of each element of
a block of a larger array), `philox` (Philox-4x32 hashing the counters under a 2-word key,
with split / random_bits / fold_in on one key) and `threefry` (the threefry2x32 hash of the
counters). The kernels run over (256, 256) blocks, padding the output and slicing it back, so
the bits are the same for any shape's prefix. Off-TPU they run in TPU interpret mode
(`pltpu.force_tpu_interpret_mode()`).

The PRNG implementation records `plphilox_prng_impl` and `plthreefry_prng_impl` are made and
registered (as "pallas_philox4x32" and "pallas_threefry2x32") as JAX does, so
`random.key(0, impl="pallas_threefry2x32")` gives `key<plfry>` keys."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from arrax._src import prng
from arrax._src.api import ShapeDtypeStruct
from arrax._src.lax import broadcasting, elementwise as lax
from arrax._src.numpy import creation, lax_numpy
from arrax._src.pallas import core as pallas_core, pallas_call, primitives, tpu

Shape = Sequence[int]

BLOCK_SIZE = (256, 256)

K_HI_32 = 0x9E3779B9
K_LO_32 = 0xBB67AE85
MUL_A = 0xCD9E8D57
MUL_B = 0xD2511F53

_U32 = np.dtype(np.uint32)


# ---- prng_utils -------------------------------------------------------------------------------
def round_up(x, y):
  """`x` rounded up to a multiple of `y`."""
  return -(-x // y) * y


def blocked_iota(block_shape: Shape, total_shape: Shape):
  """The row-major flat index (uint32) in an array of `total_shape` of each position of a
  block of `block_shape` at the array's origin."""
  out = creation.zeros(tuple(block_shape), _U32)
  stride = 1
  for dim in reversed(range(len(block_shape))):
    pos = broadcasting.broadcasted_iota(_U32, tuple(block_shape), dim)
    out = out + pos * stride
    stride *= total_shape[dim]
  return out


def compute_scalar_offset(iteration_index, total_size: Shape, block_size: Shape):
  """The flat index in an array of `total_size` of the first element of the block at grid
  position `iteration_index` (blocks of `block_size`)."""
  total, stride = 0, 1
  for d in reversed(range(len(iteration_index))):
    total = total + iteration_index[d] * block_size[d] * stride
    stride *= total_size[d]
  return total


# ---- shared kernel plumbing -------------------------------------------------------------------
def _check_shape(shape, block_size):
  size = int(np.prod(shape))
  if size > np.iinfo(np.uint32).max:
    raise ValueError(f"Shape too large: {size} > {np.iinfo(np.uint32).max}")
  if shape[-2] % block_size[-2] or shape[-1] % block_size[-1]:
    raise ValueError(f"Shape dimension {shape[-2:]} must be divisible by {block_size}")
  return shape[:-2] + (shape[-2] // block_size[-2], shape[-1] // block_size[1])


def _block_counts(grid_rank, unpadded_shape, block_size, block_shape):
  """Inside a kernel: the low counter words (uint32) of the current block."""
  idx = tuple(primitives.program_id(i) for i in range(grid_rank))
  first = compute_scalar_offset(idx, unpadded_shape, block_shape)
  return blocked_iota(block_size, unpadded_shape) + lax.convert_element_type(first, _U32)


def _key_words(key_ref):
  return [lax_numpy.reshape(key_ref[0, i], (1, 1)) for i in range(2)]


def _padded(fn, shape, *args, **kwargs):
  """`fn(..., padded_shape, shape, ...)` over `shape` padded to whole blocks, sliced back."""
  if shape[-2] % BLOCK_SIZE[-2] == 0 and shape[-1] % BLOCK_SIZE[-1] == 0:
    return fn(shape, shape, *args, **kwargs)
  padded = shape[:-2] + (round_up(shape[-2], BLOCK_SIZE[-2]), round_up(shape[-1], BLOCK_SIZE[-1]))
  return fn(padded, shape, *args, **kwargs)[..., :shape[-2], :shape[-1]]


# ---- philox -----------------------------------------------------------------------------------
def mul32_hi_lo(x, y):
  """The high and low 32 bits of the 64-bit product of the uint32 values `x` and `y`."""
  x_hi, y_hi = x >> 16, y >> 16
  x_lo, y_lo = x & 0xffff, y & 0xffff
  hh, ll = x_hi * y_hi, x_lo * y_lo
  hl, lh = x_hi * y_lo, x_lo * y_hi
  mid = (hl & 0xffff) + (lh & 0xffff) + (ll >> 16)
  hi = hh + (hl >> 16) + (lh >> 16) + (mid >> 16)
  lo = (mid << 16) + (ll & 0xffff)
  return hi, lo


def philox_4x32(hi0, lo0, hi1, lo1, k_hi, k_lo, rounds=10):
  """The Philox-4x32 hash of the counter words (hi0, lo0, hi1, lo1) under the key
  (k_hi, k_lo), `rounds` rounds."""
  bump_hi, bump_lo = creation.asarray(K_HI_32, _U32), creation.asarray(K_LO_32, _U32)
  mul_a, mul_b = creation.asarray(MUL_A, _U32), creation.asarray(MUL_B, _U32)
  for r in range(rounds):
    a_hi, a_lo = mul32_hi_lo(mul_a, hi1)
    b_hi, b_lo = mul32_hi_lo(mul_b, hi0)
    hi0, lo0, hi1, lo1 = a_hi ^ lo0 ^ k_hi, a_lo, b_hi ^ lo1 ^ k_lo, b_lo
    if r < rounds - 1:
      k_hi, k_lo = k_hi + bump_hi, k_lo + bump_lo
  return hi0, lo0, hi1, lo1


def philox_4x32_kernel(key, shape: Shape, unpadded_shape: Shape, block_size: tuple[int, int],
                       offset=0, fuse_output: bool = True):
  """Philox-4x32 random bits of `shape` (a multiple of `block_size` in its last two
  dimensions; `unpadded_shape` the shape the counters are numbered in) from the key (2,),
  the counters shifted by the scalar `offset`: uint32 `shape` (the two output words xor-ed)
  or, without `fuse_output`, (2, *shape) with the high then the low words."""
  shape = tuple(shape)
  grid = _check_shape(shape, block_size)
  offset = creation.asarray(offset, dtype=_U32)
  if offset.ndim != 0:
    raise ValueError(f"Offset must be scalar, got {offset.shape}")
  offset = lax_numpy.reshape(offset, (1,))
  block_shape = (1,) * (len(shape) - 2) + tuple(block_size)

  def kernel(offset_ref, key_ref, out_ref):
    counts = _block_counts(len(grid), unpadded_shape, block_size, block_shape) + offset_ref[0]
    zeros = creation.zeros_like(counts)
    k1, k2 = _key_words(key_ref)
    hi, lo, _, _ = philox_4x32(zeros, counts, zeros, zeros, k1, k2)
    if fuse_output:
      out_ref[...] = lax_numpy.reshape(hi ^ lo, out_ref.shape)
    else:
      out_ref[0, ...] = lax_numpy.reshape(hi, out_ref[0].shape)
      out_ref[1, ...] = lax_numpy.reshape(lo, out_ref[0].shape)

  if fuse_output:
    out = ShapeDtypeStruct(shape, _U32)
    out_spec = pallas_core.BlockSpec(block_shape, lambda *i: i)
  else:
    out = ShapeDtypeStruct((2,) + shape, _U32)
    out_spec = pallas_core.BlockSpec((2,) + block_shape, lambda *i: (0, *i))
  smem = pallas_core.BlockSpec(memory_space=tpu.MemorySpace.SMEM)
  return pallas_call.pallas_call(kernel, in_specs=[smem, smem], out_specs=out_spec, grid=grid,
                                 out_shape=out)(offset, lax_numpy.reshape(key, (1, 2)))


def philox_4x32_count(key, shape: Shape, offset=0, fuse_output: bool = True):
  """`philox_4x32_kernel` for any `shape` (padded to whole (256, 256) blocks)."""
  shape = tuple(shape)
  if len(shape) < 2:
    out = philox_4x32_count(key, (1,) * (2 - len(shape)) + shape, offset=offset,
                            fuse_output=fuse_output)
    return out[..., 0, 0] if not shape else out[..., 0, :]
  return _padded(lambda s, u: philox_4x32_kernel(key, s, u, block_size=BLOCK_SIZE,
                                                 offset=offset, fuse_output=fuse_output),
                 shape)


def philox_split(key, shape: Shape):
  """Key data (*shape, 2) of the keys split from one Philox key."""
  hi, lo = philox_4x32_count(key, shape, fuse_output=False)
  return lax_numpy.stack([hi, lo], axis=hi.ndim)


def philox_random_bits(key, bit_width: int, shape: Shape):
  """uint32 random bits of `shape` from one Philox key (only 32-bit widths)."""
  if bit_width != 32:
    raise ValueError("Only 32-bit PRNG supported.")
  return philox_4x32_count(key, shape, fuse_output=True)


def philox_fold_in(key, data):
  """One Philox key with the scalar `data` folded in (the counters shifted by it)."""
  assert data.ndim == 0
  return philox_4x32_count(key, (), offset=data, fuse_output=False)


plphilox_prng_impl = prng.PRNGImpl(key_shape=(2,), seed=prng.threefry_seed, split=philox_split,
                                   random_bits=philox_random_bits, fold_in=philox_fold_in,
                                   name="pallas_philox4x32", tag="pllox")
prng.register_prng(plphilox_prng_impl)


# ---- threefry ---------------------------------------------------------------------------------
def threefry_2x32_count(key, shape: Shape, unpadded_shape: Shape, block_size: tuple[int, int]):
  """threefry2x32 random bits of `shape` (a multiple of `block_size` in its last two
  dimensions; `unpadded_shape` the shape the counters are numbered in) from the key (2,):
  the two hash words of each element's (0, flat index) counter, xor-ed."""
  shape = tuple(shape)
  grid = _check_shape(shape, block_size)
  block_shape = (1,) * (len(shape) - 2) + tuple(block_size)

  def kernel(key_ref, out_ref):
    counts = _block_counts(len(grid), unpadded_shape, block_size, block_shape)
    k1, k2 = _key_words(key_ref)
    o1, o2 = prng.threefry2x32(k1, k2, creation.zeros_like(counts), counts)
    out_ref[...] = lax_numpy.reshape(o1 ^ o2, out_ref.shape)

  return pallas_call.pallas_call(
      kernel, in_specs=[pallas_core.BlockSpec(memory_space=tpu.MemorySpace.SMEM)],
      out_specs=pallas_core.BlockSpec(block_shape, lambda *i: i), grid=grid,
      out_shape=ShapeDtypeStruct(shape, _U32))(lax_numpy.reshape(key, (1, 2)))


def plthreefry_random_bits(key, bit_width: int, shape: Shape):
  """uint32 random bits of `shape` from one threefry key, computed blockwise in a kernel."""
  if bit_width != 32:
    raise ValueError("Only 32-bit PRNG supported.")
  shape = tuple(shape)
  if not shape:
    return plthreefry_random_bits(key, bit_width, (1, 1))[0, 0]
  if len(shape) == 1:
    return plthreefry_random_bits(key, bit_width, (1, *shape))[0]
  return _padded(lambda s, u: threefry_2x32_count(key, s, u, block_size=BLOCK_SIZE), shape)


plthreefry_prng_impl = prng.PRNGImpl(key_shape=(2,), seed=prng.threefry_seed,
                                     split=prng.threefry_split,
                                     random_bits=plthreefry_random_bits,
                                     fold_in=prng.threefry_fold_in, name="pallas_threefry2x32",
                                     tag="plfry")
prng.register_prng(plthreefry_prng_impl)
