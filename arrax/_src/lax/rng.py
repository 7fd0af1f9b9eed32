"""XLA's own random number generators: `rng_bit_generator` (stateless: a key in, the next key
and random bits out) and `rng_uniform` (stateful, uniform floats or integers in [a, b)).

They give XLA's bits for a given key and algorithm, not `jax.random`'s; `rng_uniform`'s results
are not reproducible. Neither has a derivative. A batched `rng_bit_generator` draws all rows
from the first key and advances only that key, as JAX's batching rule does.
"""
from __future__ import annotations

import enum

import numpy as np
from jaxlib.mlir import ir
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import batching, core, dtypes, mlir
from arrax._src.core import ShapedArray
from arrax._src.lax import broadcasting, shape_ops
from arrax._src.lax.utils import _canonicalize_shape, _out_sharding, asarray_operand

__all__ = ["RandomAlgorithm", "rng_bit_generator", "rng_uniform"]


class RandomAlgorithm(enum.IntEnum):
  """The bit generator `rng_bit_generator` uses."""
  RNG_DEFAULT = 0
  "XLA's default for the platform."
  RNG_THREE_FRY = 1
  "Threefry-2x32."
  RNG_PHILOX = 2
  "Philox-4x32."

  def __str__(self):
    return self.name


_UNSIGNED = tuple(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64))
_HLO_ALGORITHM = {RandomAlgorithm.RNG_DEFAULT: "DEFAULT",
                  RandomAlgorithm.RNG_THREE_FRY: "THREE_FRY",
                  RandomAlgorithm.RNG_PHILOX: "PHILOX"}


# ---- rng_bit_generator ------------------------------------------------------------------------
rng_bit_generator_p = core.Primitive("rng_bit_generator")
rng_bit_generator_p.multiple_results = True


def _key_kind(key):
  """'u32x4' or 'u64x2': the two key layouts XLA's generator accepts (as 128 bits)."""
  if key.shape == (4,) and key.dtype == np.uint32:
    return "u32x4"
  if key.shape == (2,) and key.dtype == np.uint64:
    return "u64x2"
  raise TypeError(f"rng_bit_generator: the key must be a uint32[4] (or uint64[2]) array, got "
                  f"{key.str_short()}.")


@rng_bit_generator_p.def_abstract_eval
def _rng_bit_generator_abstract_eval(key, *, shape, dtype, algorithm, out_sharding):
  _key_kind(key)
  return [ShapedArray(key.shape, key.dtype, key.weak_type), ShapedArray(shape, dtype)]


@rng_bit_generator_p.def_lowering
def _rng_bit_generator_lower(ctx, key, *, shape, dtype, algorithm, out_sharding):
  u32, u64 = ir.IntegerType.get_unsigned(32), ir.IntegerType.get_unsigned(64)
  packed = _key_kind(ctx.avals_in[0]) == "u32x4"
  if packed:   # u32[4] -> u64[2]
    key = hlo.bitcast_convert(ir.RankedTensorType.get([2], u64),
                              hlo.reshape(ir.RankedTensorType.get([2, 2], u32), key))
  attr = hlo.RngAlgorithmAttr.get(_HLO_ALGORITHM[RandomAlgorithm(algorithm)])
  new_key, bits = hlo.RngBitGeneratorOp(key.type, mlir.aval_to_ir_type(ctx.avals_out[1]), attr,
                                        key).results
  if packed:
    new_key = hlo.reshape(ir.RankedTensorType.get([4], u32),
                          hlo.bitcast_convert(ir.RankedTensorType.get([2, 2], u32), new_key))
  return [new_key, bits]


@rng_bit_generator_p.def_batch
def _rng_bit_generator_batch(args, dims, *, shape, dtype, algorithm, out_sharding):
  (keys,), (bd,) = args, dims
  keys = batching.moveaxis(keys, bd, 0)
  size, key_size = core.get_aval(keys).shape
  # The first key makes every row of bits; only that key is advanced.
  first = broadcasting.squeeze(shape_ops.slice(keys, (0, 0), (1, key_size)), (0,))
  new_key, bits = rng_bit_generator_p.bind(first, shape=(size, *shape), dtype=dtype,
                                           algorithm=algorithm, out_sharding=out_sharding)
  new_keys = shape_ops.dynamic_update_index_in_dim(keys, new_key, 0, axis=0)
  return [new_keys, bits], [0, 0]


def rng_bit_generator(key, shape, dtype=np.uint32, algorithm=RandomAlgorithm.RNG_DEFAULT, *,
                      out_sharding=None):
  """(next key, random bits of `shape` and unsigned `dtype`) from XLA's stateless generator;
  `key` is a uint32[4] array."""
  out_sharding = _out_sharding(out_sharding, "rng_bit_generator")
  shape = _canonicalize_shape(shape)
  dtype = dtypes.check_user_dtype(dtype, "rng_bit_generator")
  if np.dtype(dtype) not in _UNSIGNED:
    raise TypeError(f"rng_bit_generator: unsupported dtype {dtype}")
  return tuple(rng_bit_generator_p.bind(key, shape=shape, dtype=dtype, algorithm=algorithm,
                                        out_sharding=out_sharding))


# ---- rng_uniform ------------------------------------------------------------------------------
rng_uniform_p = core.Primitive("rng_uniform")


@rng_uniform_p.def_abstract_eval
def _rng_uniform_abstract_eval(a, b, *, shape):
  if a.dtype != b.dtype:
    raise ValueError(f"Arguments to rng_uniform must have identical dtypes, got {a.dtype} "
                     f"and {b.dtype}.")
  if a.shape != () or b.shape != ():
    raise ValueError(f"Arguments to rng_uniform must be scalars; got shapes {a.shape} and "
                     f"{b.shape}.")
  return ShapedArray(shape, a.dtype, a.weak_type and b.weak_type)


@rng_uniform_p.def_lowering
def _rng_uniform_lower(ctx, a, b, *, shape):
  dims = mlir.ir_constant(np.array(ctx.avals_out[0].shape, np.int64))
  return [hlo.rng(a, b, dims, hlo.RngDistributionAttr.get("UNIFORM"))]


# (JAX defines no batching or differentiation rule for rng_uniform.)
rng_uniform_p.def_batch(batching.no_batching_rule("rng_uniform"))


def rng_uniform(a, b, shape):
  """Values drawn uniformly from [a, b) (scalars of one dtype) by XLA's stateful generator:
  not reproducible; prefer `arrax.random`."""
  return rng_uniform_p.bind(asarray_operand(a), asarray_operand(b), shape=tuple(shape))

