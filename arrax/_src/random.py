"""jax.random: keys and samplers, bit-identical to JAX 0.10.2 in both threefry modes.

Public functions check their arguments, turn the key into its uint32 data and call a jitted
implementation with static shape and dtype (so an eager call is one cached executable). The
implementations follow JAX's algorithms operation by operation, since every rounding step
shows in the bits.
"""
from __future__ import annotations

import math
import functools
import operator
import warnings
from collections.abc import Sequence
from functools import partial

import numpy as np

from arrax._src import ad, batching, core, dtypes, prng
from arrax._src import rbg as _rbg   # (registers rbg and unsafe_rbg)
from arrax._src import prng_counter as _prng_counter   # (threefry4x32, philox2x32, philox4x32)
from arrax._src.lax.elementwise import stop_gradient
from arrax._src.array import Array, concretize
from arrax._src.config import config
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax import linalg as lax_linalg
from arrax._src.lax import reductions as lax_reductions
from arrax._src.lax import sort as lax_sort
from arrax._src.lax.control_flow import common, loops, scan, while_loop
from arrax._src.lax.control_flow.common import lower_fun
from arrax._src.lax.special import random_gamma_grad
from arrax._src.lax.utils import canonicalize_axis
from arrax._src.numpy import creation, indexing, lax_numpy, reductions, ufuncs
from arrax._src.numpy import linalg as np_linalg
from arrax._src.numpy.util import check_arraylike, maybe_auto_axes, promote_dtypes_inexact
from arrax._src.prng import PRNGKeyArray, split_data
from arrax._src.sharding_impls import canonicalize_sharding
from arrax._src.tree_util import tree_flatten, tree_unflatten, treedef_tuple

del _rbg, _prng_counter
UINT_DTYPES = prng.UINT_DTYPES
_KEY_HOWTO = ("Create a key with jax.random.key(seed) (a typed key) or jax.random.PRNGKey(seed) "
              "(a raw uint32[2] key).")


class TypePromotionError(ValueError):
  """An argument cannot be cast safely to the requested dtype."""


# ---- argument checks --------------------------------------------------------------------------
def _is_arraylike(x):
  return (isinstance(x, (Array, core.Tracer, np.ndarray, np.generic))
          or type(x) in dtypes.python_scalar_dtypes or hasattr(x, "__jax_array__"))


_LEGACY_KEY_MSG = ("Legacy uint32 key array passed as key to jax.random function. Please create "
                   "keys using jax.random.key(). If use of a raw key array was intended, set "
                   'jax_legacy_prng_key="allow".')
_legacy_prng_key = config.flag("jax_legacy_prng_key")
_enable_custom_prng = config.flag("jax_enable_custom_prng")
_default_prng_impl = config.flag("jax_default_prng_impl")


def _check_raw_key_allowed():
  """jax_legacy_prng_key ('error' raises, 'warn' warns) and jax_enable_custom_prng (a
  FutureWarning) on a raw uint32 key, as JAX's random functions do."""
  impl = _resolve_impl(None)   # raw keys are read with the default implementation
  mode = _legacy_prng_key.value
  if mode == "error":
    raise ValueError(_LEGACY_KEY_MSG)
  if mode == "warn":
    warnings.warn(_LEGACY_KEY_MSG, stacklevel=4)
  elif _enable_custom_prng.value:
    warnings.warn("Raw arrays as random keys to jax.random functions are deprecated. Assuming "
                  f"valid {impl.name} key for now.", FutureWarning, stacklevel=4)
  return impl


def _check_prng_key(name, key, *, allow_batched=False):
  """(key data, whether the key was typed) for a typed key or raw uint32 key data. The data
  of threefry2x32 keys is their uint32 array; keys of other implementations are passed on as
  (internal) key arrays, which the key derivations of `prng` dispatch on."""
  if isinstance(key, PRNGKeyArray):
    dtype = key._dtype
    if type(dtype) is not prng.KeyTy and name not in ("key_data", "key_impl"):
      raise NotImplementedError(f"jax.random.{name} on {key.dtype} keys: they draw from a TPU "
                                "core's hardware PRNG, which arrax (CPU) does not have")
    data, typed, nb = key._base_array, True, key.ndim
    if dtype is not prng.key_dtype_fry and type(dtype) is prng.KeyTy:
      data = prng.internal_keys(data, dtype)
  elif _is_arraylike(key):
    impl = _check_raw_key_allowed()
    prng.check_key_data(key, impl)
    data, typed = prng.as_key_data(key), False
    nb = data.ndim - len(impl.key_shape)
    if impl is not prng.threefry_prng_impl:   # (raw keys of the default implementation)
      data = prng.internal_keys(data, prng.key_dtype(impl))
  else:
    raise TypeError(f"unexpected PRNG key type {type(key)}. {_KEY_HOWTO}")
  if not allow_batched and nb != 0:
    raise ValueError(f"{name} accepts a single key, but was given a key array of shape "
                     f"{np.shape(key)} != (). Use jax.vmap for batching.")
  if typed and prng._debug_key_reuse.value and name not in _NON_CONSUMING:   # (key reuse)
    prng.consume(key, "random_split" if name == "split" else "jit-compiled function")
  return data, typed


# Key functions that read a key without using it up.
_NON_CONSUMING = frozenset({"key_data", "key_impl", "fold_in"})


def _return_keys(typed, data):
  # With jax_enable_custom_prng, raw keys in give typed keys out (as JAX).
  if isinstance(data, PRNGKeyArray):
    return data._new(data._base_array) if typed or _enable_custom_prng.value else data._base_array
  return PRNGKeyArray(data) if typed or _enable_custom_prng.value else data


def _canonicalize_shape(shape, name):
  if isinstance(shape, (int, np.integer)):
    shape = (shape,)
  try:
    dims = tuple(operator.index(d) for d in shape)
  except TypeError:
    hint = ""
    if isinstance(shape, core.Tracer) or any(isinstance(d, core.Tracer)
                                             for d in _iter_or_empty(shape)):
      hint = ("\nIf using `jit`, try using `static_argnums` or applying `jit` to smaller "
              "subfunctions.")
    raise TypeError("Shapes must be 1D sequences of concrete values of integer type, got "
                    f"{shape}.{hint}") from None
  if any(d < 0 for d in dims):
    # (JAX's class: a TypeError from its static-shape broadcasting)
    raise TypeError(f"{name}: only non-negative sizes are allowed in a shape, but got shape "
                    f"{dims}.")
  return dims


def _iter_or_empty(x):
  try:
    return list(x)
  except TypeError:
    return []


def _check_shape(name, shape, *param_shapes):
  if param_shapes:
    try:
      shape_ = tuple(np.broadcast_shapes(shape, *param_shapes))
    except ValueError:
      shape_ = None
    if shape_ != tuple(shape):
      raise ValueError(
          f"{name} parameter shapes must be broadcast-compatible with shape argument, and the "
          "result of broadcasting the shapes must equal the shape argument, but got result "
          f"{shape_ if shape_ is not None else 'incompatible'} for shape argument {shape} "
          f"(parameter shapes {', '.join(map(str, param_shapes))}).")


def _check_broadcast_shapes(name, shape, *args):
  arg_shapes = [np.shape(a) for a in args]
  if shape is None:
    try:
      return tuple(np.broadcast_shapes(*arg_shapes)) if arg_shapes else ()
    except ValueError:
      raise ValueError(f"{name}: parameter shapes {', '.join(map(str, arg_shapes))} are not "
                       "broadcast-compatible.") from None
  shape = _canonicalize_shape(shape, name)
  _check_shape(name, shape, *arg_shapes)
  return shape


def _float_dtype(name, dtype, kinds=np.floating, what="a float"):
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
  if not dtypes.issubdtype(dtype, kinds):
    raise ValueError(f"dtype argument to `{name}` must be {what} dtype, got {dtype}")
  return dtype


def _check_all_safe_to_cast(name, dtype, *args):
  for arg in args:
    in_dtype = dtypes.dtype_and_weak_type(arg)[0]
    if in_dtype != dtype and dtypes.result_type(arg, dtype) != dtype:
      raise TypePromotionError(f"In arguments to {name}, cannot safely cast argument of type "
                               f"{in_dtype} to {dtype}; pass a {dtype} value or choose a wider "
                               "dtype.")


def _with_out_sharding(fn):
  """`fn` (a sampler) taking JAX's `out_sharding=`: given one, the samples are drawn with the
  mesh's Explicit axes Auto and then resharded to it, as JAX's `maybe_auto_axes` does."""
  name = fn.__name__

  @functools.wraps(fn)
  def sampler(*args, out_sharding=None, **kwargs):
    target = canonicalize_sharding(out_sharding, name)
    if target is None:
      return fn(*args, **kwargs)
    leaves, tree = tree_flatten((args, kwargs))
    where = [i for i, x in enumerate(leaves) if isinstance(x, (Array, core.Tracer, PRNGKeyArray))]

    def draw(*arrays):
      full = list(leaves)
      for i, a in zip(where, arrays):
        full[i] = a
      a, kw = tree_unflatten(tree, full)
      return fn(*a, **kw)
    return maybe_auto_axes(draw, target)(*[leaves[i] for i in where])
  return sampler


def _split(data, num=2):
  """Key data of `num` keys split from one key (internal: no checks)."""
  return split_data(data, (num,))


def _unstack(keys):
  if isinstance(keys, PRNGKeyArray):
    return [prng.internal_keys(k, keys._dtype) for k in _unstack(keys._base_array)]
  return [shape_ops.index_in_dim(keys, i, 0, keepdims=False) for i in range(keys.shape[0])]


def _random_bits(data, bit_width, shape):
  return prng.random_bits(data, bit_width, shape)


def _const(x, value):
  return np.array(value, dtype=core.get_aval(x).dtype)


# ---- keys ----------------------------------------------------------------------------------
def _resolve_impl(impl):
  """The PRNGImpl named or given by `impl` (the default implementation for None)."""
  if impl is None:
    name = _default_prng_impl.value
    impl = prng.PRNG_IMPLS.get(name)
    if impl is None:
      raise NotImplementedError(f'jax_default_prng_impl="{name}": arrax does not implement '
                                f'this PRNG; use one of {", ".join(prng.PRNG_IMPLS)}.')
    return impl
  if isinstance(impl, prng.KeyTy):
    return impl.impl
  if isinstance(impl, prng.PRNGSpec):   # (jax.extend.random.define_prng_impl)
    return impl._impl
  if type(impl) is prng.PRNGImpl:
    return impl
  if isinstance(impl, str):
    if impl in prng.PRNG_IMPLS:
      return prng.PRNG_IMPLS[impl]
    raise ValueError(f'unrecognized PRNG implementation "{impl}". Did you mean one of: '
                     + ", ".join('"' + n + '"' for n in prng.PRNG_IMPLS) + "?")
  raise TypeError(f"unrecognized type {type(impl)} for specifying PRNG implementation.")


def _seed_to_data(ctor_name, seed, impl):
  """(key data of `impl` from a scalar seed, the key dtype)."""
  impl = _resolve_impl(impl)
  if isinstance(seed, PRNGKeyArray):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given a PRNG key.")
  if np.ndim(seed):
    raise TypeError(f"{ctor_name} accepts a scalar seed, but was given an array of shape "
                    f"{np.shape(seed)} != (). Use jax.vmap for batching")
  if isinstance(seed, int):
    # Python ints are read as int64 first (then truncated unless x64), as JAX does.
    seed_arr = creation.asarray(np.int64(seed))
  else:
    seed_arr = creation.asarray(seed)
  if config.jax_random_seed_offset:   # (added to every seed, as in JAX)
    seed_arr = seed_arr + config.jax_random_seed_offset
  if impl is prng.threefry_prng_impl:
    return prng.seed_data(seed_arr), prng.key_dtype_fry
  data = impl.seed(seed_arr)
  prng.check_key_data(data, impl)   # (an impl's seed must give its key shape)
  return data, prng.key_dtype(impl)


def key(seed, *, impl=None, dtype=None):
  """A typed PRNG key (dtype ``key<fry>``) from an integer seed.

  Example:
    >>> k = jax.random.key(0)
    >>> jax.random.normal(k, (2,))
  """
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to jax.random.key")
    impl = dtype
  return PRNGKeyArray(*_seed_to_data("key", seed, impl))


def PRNGKey(seed, *, impl=None):
  """A legacy raw PRNG key: the uint32 key data (for threefry2x32 a uint32[2] array holding the
  seed's high and low 32 bits)."""
  data, dtype = _seed_to_data("PRNGKey", seed, impl)
  return PRNGKeyArray(data, dtype) if _enable_custom_prng.value else data


def key_data(keys):
  """The uint32 key data (shape ``(*keys.shape, *key_shape)``) underlying a key array."""
  data, _ = _check_prng_key("key_data", keys, allow_batched=True)
  return data._base_array if isinstance(data, PRNGKeyArray) else data


def wrap_key_data(key_bits_array, *, impl=None, dtype=None):
  """A typed key array over uint32 key data whose trailing axes are the implementation's key
  shape."""
  if dtype is not None:
    if impl is not None:
      raise ValueError("Cannot specify both `impl` and `dtype` arguments to "
                       "jax.random.wrap_key_data")
    impl = dtype
  impl = _resolve_impl(impl)
  prng.check_key_data(key_bits_array, impl)
  return PRNGKeyArray(prng.as_key_data(key_bits_array), prng.key_dtype(impl))


def key_impl(keys):
  """The PRNG implementation of a key array (its name for the implementations known by name,
  else its PRNGSpec)."""
  _check_prng_key("key_impl", keys, allow_batched=True)
  if not isinstance(keys, PRNGKeyArray):
    return _resolve_impl(None).name
  impl = keys.dtype.impl
  if type(keys.dtype) is not prng.KeyTy or prng.PRNG_IMPLS.get(impl.name) is impl:
    return keys.dtype.impl_name
  return prng.PRNGSpec(impl)


def key_dtype(impl_spec=None):
  """The dtype of typed keys of a PRNG implementation (``key<fry>`` for threefry2x32)."""
  return prng.key_dtype(_resolve_impl(impl_spec))


def default_prng_impl():
  """The name of the default PRNG implementation (jax_default_prng_impl)."""
  return _resolve_impl(None).name


def fold_in(key, data):
  """A new key from `key` and a 32-bit integer `data`."""
  kdata, typed = _check_prng_key("fold_in", key)
  if np.ndim(data):
    raise TypeError("fold_in accepts a scalar, but was given an array of shape "
                    f"{np.shape(data)} != (). Use jax.vmap for batching.")
  if isinstance(data, int):
    data = np.asarray(data, np.uint32)   # out-of-range Python ints raise OverflowError
  msg = creation.asarray(data, dtype="uint32")
  return _return_keys(typed, prng.fold_in_data(kdata, msg))


def split(key, num=2):
  """Split a key into `num` new keys (an int, or a tuple giving the shape of the new keys)."""
  data, typed = _check_prng_key("split", key)
  shape = tuple(num) if isinstance(num, Sequence) else (num,)
  shape = tuple(operator.index(d) for d in shape)
  if any(d < 0 for d in shape):
    raise ValueError(f"split: num must be nonnegative, got shape {shape}.")
  return _return_keys(typed, split_data(data, shape))


def clone(key):
  """A copy of a key (keys are immutable values, so this is the identity on the bits)."""
  if not (isinstance(key, (Array, core.Tracer, PRNGKeyArray, np.ndarray))
          or type(key) in (int, float, bool)):
    raise TypeError("Error interpreting argument to random_clone as a JAX value. The "
                    f"problematic value is of type {type(key)} and was passed to random_clone "
                    "at position 0.")
  return key if isinstance(key, (Array, core.Tracer, PRNGKeyArray)) else creation.asarray(key)


# ---- bits and uniform -----------------------------------------------------------------------
@_with_out_sharding
def bits(key, shape=(), dtype=None, *, out_sharding=None):
  """Uniform random bits as unsigned integers (uint32 by default, uint64 under x64)."""
  data, _ = _check_prng_key("bits", key)
  if dtype is None:
    dtype = dtypes.default_dtype("u")
  else:
    dtype = dtypes.check_user_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.unsignedinteger):
    raise ValueError(f"dtype argument to `bits` must be an unsigned int dtype, got {dtype}")
  shape = _canonicalize_shape(shape, "bits")
  return _bits(data, dtype.itemsize * 8, shape)


@partial(jit, static_argnums=(1, 2))
def _bits(data, bit_width, shape):
  return _random_bits(data, bit_width, shape)


@_with_out_sharding
def uniform(key, shape=(), dtype=None, minval=0., maxval=1., *, out_sharding=None):
  """Uniform random floats in [minval, maxval)."""
  data, _ = _check_prng_key("uniform", key)
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
  shape = _canonicalize_shape(shape, "uniform")
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `uniform` must be a float dtype, got {dtype}")
  return _uniform(data, minval, maxval, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _uniform(data, minval, maxval, shape, dtype):
  # Internal callers may pass a batch of keys (*batch, 2): the samples then have shape
  # (*batch, *shape), each row what its key alone gives.
  batch = data.shape if isinstance(data, PRNGKeyArray) else np.shape(data)[:-1]
  out_shape = batch + tuple(shape)
  minval = shape_ops.broadcast_to_rank(lax.convert_element_type(minval, dtype), len(out_shape))
  maxval = shape_ops.broadcast_to_rank(lax.convert_element_type(maxval, dtype), len(out_shape))
  finfo = dtypes.finfo(dtype)
  nbits, nmant = finfo.bits, finfo.nmant
  if nbits not in (8, 16, 32, 64):
    raise TypeError(f"uniform only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}.")
  rng_bits = 8 if nmant < 8 else nbits
  uint_dtype = UINT_DTYPES[nbits]
  random = _random_bits(data, rng_bits, shape)
  if rng_bits != nbits:
    random = lax.convert_element_type(random, uint_dtype)
  # Random mantissa bits under the exponent of 1.0 give a float in [1, 2); shift to [0, 1).
  mantissa = lax.shift_right_logical(random, np.array(rng_bits - nmant, uint_dtype))
  one_bits = np.array(1.0, dtype).view(uint_dtype)
  floats = lax.bitcast_convert_type(lax.bitwise_or(mantissa, one_bits), dtype)
  floats = lax.sub(floats, np.array(1., dtype))
  scaled = lax.add(lax.mul(floats, lax.sub(maxval, minval)), minval)
  return lax.max(minval, shape_ops.reshape(scaled, out_shape))


# ---- integers ----------------------------------------------------------------------------
def _convert_and_clip_integer(val, dtype):
  """`val` cast to the integer `dtype`, clipped to its range instead of wrapping."""
  dtype = np.dtype(dtype)
  vinfo, info = dtypes.iinfo(val.dtype), dtypes.iinfo(dtype)
  lo = _const(val, max(int(info.min), int(vinfo.min)))
  hi = _const(val, min(int(info.max), int(vinfo.max)))
  return lax_numpy.clip(val, lo, hi).astype(dtype)


@_with_out_sharding
def randint(key, shape, minval, maxval, dtype=None, *, out_sharding=None):
  """Uniform random integers in [minval, maxval)."""
  data, _ = _check_prng_key("randint", key)
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
  shape = _canonicalize_shape(shape, "randint")
  if not dtypes.issubdtype(dtype, np.integer):
    raise TypeError(f"randint only accepts integer dtypes, got {dtype}")
  info = dtypes.iinfo(dtype)
  sample_dtype = dtype
  if info.bits < 32:
    # Narrow integers are sampled in 32 bits, to keep the modulo bias small.
    sample_dtype = np.dtype("int32")
    minval = creation.asarray(minval).astype("int32").clip(int(info.min), int(info.max))
    maxval = creation.asarray(maxval).astype("int32").clip(int(info.min), int(info.max) + 1)
  return _randint(data, minval, maxval, shape, sample_dtype).astype(dtype)


@partial(jit, static_argnums=(3, 4))
def _randint(data, minval, maxval, shape, dtype):
  _check_shape("randint", shape, np.shape(minval), np.shape(maxval))
  check_arraylike("randint", minval, maxval)
  minval = creation.asarray(minval)
  maxval = creation.asarray(maxval)
  if not dtypes.issubdtype(minval.dtype, np.integer):
    minval = minval.astype(int)
  if not dtypes.issubdtype(maxval.dtype, np.integer):
    maxval = maxval.astype(int)
  # maxval beyond the dtype's range (e.g. 256 for uint8) means "up to and including max".
  dtype_max = _convert_and_clip_integer(creation.array(dtypes.iinfo(dtype).max, dtype),
                                        maxval.dtype)
  maxval_out_of_range = lax.gt(maxval, dtype_max)
  minval = shape_ops.broadcast_to_rank(_convert_and_clip_integer(minval, dtype), len(shape))
  maxval = shape_ops.broadcast_to_rank(_convert_and_clip_integer(maxval, dtype), len(shape))
  maxval_out_of_range = shape_ops.broadcast_to_rank(maxval_out_of_range, len(shape))
  nbits = dtypes.iinfo(dtype).bits
  if nbits not in (8, 16, 32, 64):
    raise TypeError(f"randint only accepts 8-, 16-, 32-, or 64-bit dtypes, got {dtype}")
  k1, k2 = _unstack(_split(data))
  higher_bits = _random_bits(k1, nbits, shape)
  lower_bits = _random_bits(k2, nbits, shape)
  unsigned = UINT_DTYPES[nbits]
  span = lax.convert_element_type(lax.sub(maxval, minval), unsigned)
  span = lax.select(lax.le(maxval, minval), creation.full_like(span, 1), span)
  span = lax.select(lax.bitwise_and(maxval_out_of_range, lax.gt(maxval, minval)),
                    lax.add(span, _const(span, 1)), span)
  # (hi * 2**nbits + lo) mod span, without overflow: 2**nbits mod span is squared from halves.
  multiplier = lax.rem(_const(span, 2 ** (nbits // 2)), span)
  multiplier = lax.rem(lax.mul(multiplier, multiplier), span)
  offset = lax.add(lax.mul(lax.rem(higher_bits, span), multiplier), lax.rem(lower_bits, span))
  offset = lax.rem(offset, span)
  return lax.add(minval, lax.convert_element_type(offset, dtype))


# ---- permutations and choice ----------------------------------------------------------------
@_with_out_sharding
def permutation(key, x, axis=0, independent=False, *, out_sharding=None):
  """A random permutation of `x` along `axis`, or of ``arange(x)`` for an integer `x`."""
  data, _ = _check_prng_key("permutation", key)
  check_arraylike("permutation", x)
  axis = canonicalize_axis(axis, np.ndim(x) or 1)
  if not np.ndim(x):
    if not dtypes.issubdtype(dtypes.dtype_and_weak_type(x)[0], np.integer):
      raise TypeError("x must be an integer or at least 1-dimensional")
    r = int(concretize(x, "argument x of jax.random.permutation()"))
    return _shuffle(data, creation.arange(r), axis)
  return _permutation(data, x, axis, independent)


def _permutation(data, x, axis, independent):
  if independent or np.ndim(x) == 1:
    return _shuffle(data, x, axis)
  ind = _shuffle(data, creation.arange(x.shape[axis]), 0)
  return indexing.take(x, ind, axis, unique_indices=True)


@partial(jit, static_argnums=(2,))
def _shuffle(data, x, axis):
  # Sort by fresh random 32-bit keys, repeated often enough that ties are unlikely.
  exponent = 3
  uint32max = np.iinfo(np.uint32).max
  size = math.prod(np.shape(x))
  num_rounds = int(np.ceil(exponent * np.log(max(1, size)) / np.log(uint32max)))
  for _ in range(num_rounds):
    data, subkey = _unstack(_split(data))
    sort_keys = _random_bits(subkey, 32, np.shape(x))
    _, x = lax_sort.sort_key_val(sort_keys, x, axis)
  return x


def _searchsorted_left(sorted_arr, query):
  """Insertion points of `query` into the nondecreasing 1-d `sorted_arr` (side='left')."""
  less = lax.lt(shape_ops.broadcast_to_rank(sorted_arr, query.ndim + 1),
                shape_ops.expand_dims(query, (query.ndim,)))
  return reductions.sum(less, axis=-1, dtype=dtypes.default_int_dtype())


def choice(key, a, shape=(), replace=True, p=None, axis=0, mode=None):
  """Random samples of `a` (or of ``arange(a)``), optionally weighted by `p`."""
  data, _ = _check_prng_key("choice", key)
  if not isinstance(shape, Sequence):
    raise TypeError(f"shape argument of jax.random.choice must be a sequence, got {shape}")
  check_arraylike("choice", a)
  arr = creation.asarray(a)
  if arr.ndim == 0:
    n_inputs = int(concretize(a, "The error occurred in jax.random.choice()"))
  else:
    axis = canonicalize_axis(axis, arr.ndim)
    n_inputs = arr.shape[axis]
  shape = _canonicalize_shape(shape, "choice")
  n_draws = math.prod(shape)
  if n_draws == 0:
    return creation.zeros(shape, dtype=arr.dtype)
  if n_inputs <= 0:
    raise ValueError("a must be greater than 0 unless no samples are taken")
  if not replace and n_draws > n_inputs:
    raise ValueError(f"Cannot take a larger sample (size {n_draws}) than population (size "
                     f"{n_inputs}) when 'replace=False'")
  if p is None:
    if replace:
      ind = randint(data, shape, 0, n_inputs)
      result = ind if arr.ndim == 0 else indexing.take(arr, ind, axis)
    else:
      slices = (slice(None),) * axis + (slice(n_draws),)
      pop = creation.arange(n_inputs) if arr.ndim == 0 else arr
      result = _permutation(data, pop, axis, False)[slices]
  else:
    check_arraylike("choice", p)
    p_arr, = promote_dtypes_inexact(p)
    p_arr = creation.asarray(p_arr)
    if p_arr.shape != (n_inputs,):
      raise ValueError("p must be None or a 1D vector with the same size as a.shape[axis]. "
                       f"p has shape {p_arr.shape} and a.shape[axis] is {n_inputs}.")
    if replace:
      p_cuml = reductions.cumsum(p_arr)
      r = p_cuml[-1] * (1 - uniform(data, shape, dtype=p_cuml.dtype))
      ind = _searchsorted_left(p_cuml, r).astype(int)
    else:
      # Gumbel top-k: the k largest perturbed log-probabilities are a weighted sample.
      g = gumbel(data, (n_inputs,), dtype=p_arr.dtype, mode=mode) + ufuncs.log(p_arr)
      ind = lax_sort.top_k(g, k=n_draws)[1].astype(int)
    result = ind if arr.ndim == 0 else indexing.take(arr, ind, axis)
  return result.reshape(shape if arr.ndim == 0 else
                        arr.shape[0:axis] + tuple(shape) + arr.shape[axis + 1:])


# ---- normal family ----------------------------------------------------------------------
@_with_out_sharding
def normal(key, shape=(), dtype=None, *, out_sharding=None):
  """Standard normal samples (complex dtypes: independent real and imaginary parts)."""
  data, _ = _check_prng_key("normal", key)
  shape = _canonicalize_shape(shape, "normal")
  dtype = _float_dtype("normal", dtype, np.inexact, "a float or complex")
  return _normal(data, shape, dtype)


@partial(jit, static_argnums=(1, 2))
def _normal(data, shape, dtype):
  if dtypes.issubdtype(dtype, np.complexfloating):
    sqrt2 = np.array(np.sqrt(2), dtype)
    key_re, key_im = _unstack(_split(data))
    real_dtype = np.array(0, dtype).real.dtype
    re = _normal_real(key_re, shape, real_dtype).astype(dtype)
    im = _normal_real(key_im, shape, real_dtype).astype(dtype)
    return (re + 1j * im) / sqrt2
  return _normal_real(data, shape, dtype)


@partial(jit, static_argnums=(1, 2))
def _normal_real(data, shape, dtype):
  lo = np.nextafter(np.array(-1., dtype), np.array(0., dtype), dtype=dtype)
  u = _uniform(data, lo, np.array(1., dtype), shape, dtype)
  return lax.mul(np.array(np.sqrt(2), dtype), lax.erf_inv(u))


@_with_out_sharding
def truncated_normal(key, lower, upper, shape=None, dtype=None, *, out_sharding=None):
  """Standard normal samples truncated to (lower, upper)."""
  if shape is not None:
    shape = _canonicalize_shape(shape, "truncated_normal")
  data, _ = _check_prng_key("truncated_normal", key)
  dtype = _float_dtype("truncated_normal", dtype)
  return _truncated_normal(data, lower, upper, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _truncated_normal(data, lower, upper, shape, dtype):
  if shape is None:
    shape = _broadcast_shapes_or_raise("truncated_normal", np.shape(lower), np.shape(upper))
  else:
    _check_shape("truncated_normal", shape, np.shape(lower), np.shape(upper))
  sqrt2 = np.array(np.sqrt(2), dtype)
  lower = lax.convert_element_type(lower, dtype)
  upper = lax.convert_element_type(upper, dtype)
  a = lax.erf(lower / sqrt2)
  b = lax.erf(upper / sqrt2)
  u = _uniform(data, a, b, shape, dtype)
  out = sqrt2 * lax.erf_inv(u)
  # Rounding can land exactly on a bound; keep samples strictly inside.
  return lax_numpy.clip(out, lax.nextafter(stop_gradient(lower), np.array(np.inf, dtype)),
                        lax.nextafter(stop_gradient(upper), np.array(-np.inf, dtype)))


def _broadcast_shapes_or_raise(name, *shapes):
  try:
    return tuple(np.broadcast_shapes(*shapes))
  except ValueError:
    raise ValueError(f"{name}: parameter shapes {', '.join(map(str, shapes))} are not "
                     "broadcast-compatible.") from None


@_with_out_sharding
def lognormal(key, sigma=np.float32(1), shape=None, dtype=None, *, out_sharding=None):
  """exp(sigma * N(0, 1)) samples."""
  data, _ = _check_prng_key("lognormal", key)
  dtype = _float_dtype("lognormal", dtype, np.inexact, "a float or complex")
  shape = _check_broadcast_shapes("lognormal", shape, sigma)
  _check_all_safe_to_cast("lognormal", dtype, sigma)
  return _lognormal(data, sigma, shape, dtype)


@partial(jit, static_argnums=(2, 3), inline=True)
def _lognormal(data, sigma, shape, dtype):
  sigma = lax.convert_element_type(sigma, dtype)
  return lax.exp(_normal(data, shape, dtype) * sigma)


@_with_out_sharding
def multivariate_normal(key, mean, cov, shape=None, dtype=None, method="cholesky", *,
                        out_sharding=None):
  """Multivariate normal samples with the given mean vector(s) and covariance matrix(es)."""
  data, _ = _check_prng_key("multivariate_normal", key)
  mean, cov = promote_dtypes_inexact(mean, cov)
  if method not in {"svd", "eigh", "cholesky"}:
    raise ValueError("method must be one of {'svd', 'eigh', 'cholesky'}")
  if dtype is None:
    dtype = core.get_aval(mean).dtype
  else:
    dtype = dtypes.check_user_dtype(dtype)
  if not dtypes.issubdtype(dtype, np.floating):
    raise ValueError(f"dtype argument to `multivariate_normal` must be a float dtype, got "
                     f"{dtype}")
  if shape is not None:
    shape = _canonicalize_shape(shape, "multivariate_normal")
  return _multivariate_normal(data, mean, cov, shape, dtype, method)


@partial(jit, static_argnums=(3, 4, 5))
def _multivariate_normal(data, mean, cov, shape, dtype, method):
  if not np.ndim(mean) >= 1:
    raise ValueError(f"multivariate_normal requires mean.ndim >= 1, got mean.ndim == "
                     f"{np.ndim(mean)}")
  if not np.ndim(cov) >= 2:
    raise ValueError(f"multivariate_normal requires cov.ndim >= 2, got cov.ndim == "
                     f"{np.ndim(cov)}")
  n = mean.shape[-1]
  if np.shape(cov)[-2:] != (n, n):
    raise ValueError(f"multivariate_normal requires cov.shape == (..., n, n) for n={n}, but got "
                     f"cov.shape == {np.shape(cov)}.")
  if shape is None:
    shape = _broadcast_shapes_or_raise("multivariate_normal", mean.shape[:-1], cov.shape[:-2])
  else:
    _check_shape("normal", shape, mean.shape[:-1], cov.shape[:-2])
  if method == "svd":
    u, s, _ = np_linalg.svd(cov)
    factor = u * ufuncs.sqrt(s[..., None, :])
  elif method == "eigh":
    w, v = np_linalg.eigh(cov)
    factor = v * ufuncs.sqrt(w[..., None, :])
  else:
    factor = np_linalg.cholesky(cov)
  samples = _normal(data, shape + mean.shape[-1:], dtype)
  return mean + _matvec(factor, samples)


def _matvec(a, x):
  """a [..., n, n] times the vectors x [..., n], batch axes broadcast (einsum '...ij,...j')."""
  if a.ndim == 2:   # one matrix: contract x's last axis with it, as einsum does
    return lax_dot.dot_general(x, a, (((x.ndim - 1,), (1,)), ((), ())))
  batch = np.broadcast_shapes(a.shape[:-2], x.shape[:-1])
  a = lax_numpy.broadcast_to(a, (*batch, *a.shape[-2:]))
  x = lax_numpy.broadcast_to(x, (*batch, x.shape[-1]))
  nb = len(batch)
  return lax_dot.dot_general(a, x, (((nb + 1,), (nb,)), (tuple(range(nb)), tuple(range(nb)))))


# ---- simple transforms of uniform samples -----------------------------------------------------
def _sampler_args(name, key, dtype, shape, *params):
  """(key data, dtype, shape) of a float sampler with array parameters `params`, checked."""
  data, _ = _check_prng_key(name, key)
  dtype = _float_dtype(name, dtype)
  shape = _check_broadcast_shapes(name, shape, *params)
  _check_all_safe_to_cast(name, dtype, *params)
  return data, dtype, shape


def _float_args(name, key, dtype, shape):
  """(key data, dtype, shape) of a float sampler with a static shape, checked in that order."""
  data, _ = _check_prng_key(name, key)
  return data, _float_dtype(name, dtype), _canonicalize_shape(shape, name)


def _simple_sampler(name, impl):
  """A sampler `name(key, shape=(), dtype=None)` whose jitted body is `impl(data, shape, dtype)`."""
  jitted = jit(impl, static_argnums=(1, 2))

  def sampler(key, shape=(), dtype=None, *, out_sharding=None):
    data, dtype, shape = _float_args(name, key, dtype, shape)
    return jitted(data, shape, dtype)
  sampler.__name__ = sampler.__qualname__ = name
  return _with_out_sharding(sampler), jitted


def _cauchy(data, shape, dtype):
  u = _uniform(data, dtypes.finfo(dtype).eps, 1., shape, dtype)
  pi = _const(u, np.pi)
  return lax.tan(lax.mul(pi, lax.sub(u, _const(u, 0.5))))


def _exponential(data, shape, dtype):
  u = _uniform(data, 0., 1., shape, dtype)
  return lax.neg(lax.log1p(lax.neg(u)))


def _laplace(data, shape, dtype):
  u = _uniform(data, -1. + dtypes.finfo(dtype).epsneg, 1., shape, dtype)
  return lax.mul(lax.sign(u), lax.log1p(lax.neg(lax.abs(u))))


def _logistic(data, shape, dtype):
  x = _uniform(data, dtypes.finfo(dtype).tiny, 1., shape, dtype)
  return lax.sub(lax.log(x), lax.log1p(lax.neg(x)))


cauchy, _cauchy_jit = _simple_sampler("cauchy", _cauchy)
cauchy.__doc__ = "Standard Cauchy samples."
exponential, _exponential_jit = _simple_sampler("exponential", _exponential)
exponential.__doc__ = "Standard exponential samples."
laplace, _laplace_jit = _simple_sampler("laplace", _laplace)
laplace.__doc__ = "Standard Laplace samples."
logistic, _logistic_jit = _simple_sampler("logistic", _logistic)
logistic.__doc__ = "Standard logistic samples."


@_with_out_sharding
def gumbel(key, shape=(), dtype=None, mode=None, *, out_sharding=None):
  """Standard Gumbel samples; mode 'high'/'highest' use more bits for the far tail."""
  data, dtype, shape = _float_args("gumbel", key, dtype, shape)
  if mode is None:
    mode = "high" if config.jax_high_dynamic_range_gumbel else "low"
  if mode not in ("highest", "high", "low"):
    raise ValueError(f"Must provide valid mode for gumbel got: {mode}")
  return _gumbel(data, shape, dtype, mode)


def _safe_int_to_float(pair):
  """uint32 pairs (hi, lo) as float32 fractions hi/2**32 + lo/2**64, keeping low bits when hi
  has leading zeros."""
  finfo = dtypes.finfo(np.float32)
  hi, lo = _unstack(pair)
  hiclz, loclz = lax.clz(hi), lax.clz(lo)
  u32 = lambda v: np.array(v, np.uint32)
  mantissa = lax.bitwise_or(
      lax.shift_left(hi, hiclz),
                            lax_numpy.where(hiclz == 32, lax.shift_left(lo, loclz),
                                            lax.shift_right_logical(lo, u32(finfo.bits) - hiclz)))
  mantissa = lax.shift_right_logical(mantissa, u32(finfo.bits - finfo.nmant - 1))
  mantissa = lax.bitwise_and(mantissa, u32((1 << finfo.nmant) - 1))
  exp = lax.shift_left(-finfo.minexp - lax_numpy.where(hiclz == 32, 32 + loclz, hiclz),
                       u32(finfo.nmant))
  exp = lax.bitwise_and(exp, u32((1 << (finfo.bits - 2)) - (1 << (finfo.nmant - 1))))
  return lax.bitcast_convert_type(lax.bitwise_or(exp, mantissa), np.float32)


@partial(jit, static_argnums=(1, 2, 3))
def _gumbel(data, shape, dtype, mode):
  info = dtypes.finfo(dtype)
  if dtype == np.float32 and mode == "highest":
    random = _random_bits(data, info.bits, (2,) + shape)
    neg = lax.bitwise_not(random)
    lo_bits = neg[1]
    carry = creation.array([lo_bits == np.array((1 << info.bits) - 1, np.uint32),
                            creation.ones_like(lo_bits)], dtype=np.uint32)
    neg = neg + carry
    flip_mask = random[0] < np.array(1 << (info.bits - 1), np.uint32)
    x = _safe_int_to_float(lax_numpy.where(flip_mask, random, neg))
    return lax_numpy.where(flip_mask, -ufuncs.log(-ufuncs.log1p(-x)), -ufuncs.log(-ufuncs.log(x)))
  if mode in ("high", "highest"):
    high, low = _unstack(_uniform(data, 0., 1., (2,) + shape, dtype))
    x = lax_numpy.where(high >= 0.5, high, high + 2 ** (-info.nmant) * low + info.tiny)
    return -ufuncs.log(-ufuncs.log1p(-x))
  return -ufuncs.log(-ufuncs.log(_uniform(data, info.tiny, 1., shape, dtype)))


@_with_out_sharding
def categorical(key, logits, axis=-1, shape=None, replace=True, mode=None, *,
                out_sharding=None):
  """Samples of category indices along `axis` with unnormalized log-probabilities `logits`."""
  data, _ = _check_prng_key("categorical", key)
  check_arraylike("categorical", logits)
  logits_arr = creation.asarray(logits)
  axis = operator.index(axis)
  batch_shape = tuple(np.delete(logits_arr.shape, axis))
  if shape is None:
    shape = batch_shape
  else:
    shape = _canonicalize_shape(shape, "categorical")
    _check_shape("categorical", shape, batch_shape)
  prefix = shape[:len(shape) - len(batch_shape)]
  ndim = logits_arr.ndim
  if replace:
    if axis >= 0:
      axis -= ndim
    logits_shape = list(shape[len(shape) - len(batch_shape):])
    logits_shape.insert(axis % ndim, logits_arr.shape[axis])
    g = gumbel(data, (*prefix, *logits_shape), logits_arr.dtype, mode=mode)
    return reductions.argmax(g + shape_ops.expand_dims(logits_arr, tuple(range(len(prefix)))),
                             axis=axis)
  logits_arr = logits_arr + gumbel(data, logits_arr.shape, logits_arr.dtype, mode=mode)
  k = math.prod(prefix)
  if k > logits_arr.shape[axis]:
    raise ValueError(f"Number of samples without replacement ({k}) cannot exceed number of "
                     f"categories ({logits_arr.shape[axis]}).")
  _, indices = lax_sort.top_k(lax_numpy.moveaxis(logits_arr, axis, -1), k)
  return shape_ops.reshape(indices, shape, (indices.ndim - 1, *range(indices.ndim - 1)))


@_with_out_sharding
def bernoulli(key, p=0.5, shape=None, mode="low", *, out_sharding=None):
  """Random booleans that are True with probability `p`."""
  if shape is not None:
    shape = _canonicalize_shape(shape, "bernoulli")
  if mode not in ["high", "low"]:
    raise ValueError(f"got mode={mode!r}, expected 'high' or 'low'")
  data, _ = _check_prng_key("bernoulli", key)
  dtype = dtypes.canonicalize_dtype(dtypes.dtype_and_weak_type(p)[0])
  if not dtypes.issubdtype(dtype, np.floating):
    raise TypeError(f"bernoulli probability `p` must have a floating dtype, got {dtype}.")
  p = lax.convert_element_type(p, dtype)
  return _bernoulli(data, p, shape, mode)


@partial(jit, static_argnums=(2, 3))
def _bernoulli(data, p, shape, mode):
  if shape is None:
    shape = np.shape(p)
  else:
    _check_shape("bernoulli", shape, np.shape(p))
  dtype = core.get_aval(p).dtype
  if mode == "high":
    u1, u2 = _unstack(_uniform(data, 0., 1., (2, *shape), dtype))
    u2 = u2 * 2 ** (-dtypes.finfo(dtype).nmant)
    return u2 < p - u1
  return _uniform(data, 0., 1., shape, dtype) < p


@_with_out_sharding
def rademacher(key, shape=(), dtype=None, *, out_sharding=None):
  """Random signs: -1 or +1 with equal probability."""
  data, _ = _check_prng_key("rademacher", key)
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
  shape = _canonicalize_shape(shape, "rademacher")
  return _rademacher(data, shape, dtype)


@partial(jit, static_argnums=(1, 2))
def _rademacher(data, shape, dtype):
  p = lax.convert_element_type(0.5, dtypes.default_float_dtype())
  samples = _bernoulli(data, p, shape, "low").astype(dtype)
  return (2 * samples - 1).astype(dtype)


@_with_out_sharding
def pareto(key, b, shape=None, dtype=None, *, out_sharding=None):
  """Pareto samples with shape parameter `b`."""
  data, dtype, shape = _sampler_args("pareto", key, dtype, shape, b)
  return _pareto(data, b, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _pareto(data, b, shape, dtype):
  b = lax.convert_element_type(b, dtype)
  e = _exponential_jit(data, shape, dtype)
  return lax.exp(e / b)


def _maxwell(data, shape, dtype):
  rvs = _normal(data, shape + (3,), dtype)
  return ufuncs.sqrt(reductions.sum(rvs * rvs, axis=-1))


maxwell, _maxwell_jit = _simple_sampler("maxwell", _maxwell)
maxwell.__doc__ = "Maxwell samples: the norm of three standard normals."


def double_sided_maxwell(key, loc, scale, shape=(), dtype=None):
  """Double-sided Maxwell samples with location `loc` and scale `scale`."""
  data, dtype, shape = _float_args("double_sided_maxwell", key, dtype, shape)
  return _double_sided_maxwell(data, loc, scale, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _double_sided_maxwell(data, loc, scale, shape, dtype):
  params_shapes = _broadcast_shapes_or_raise("double_sided_maxwell", np.shape(loc),
                                             np.shape(scale))
  if not shape:
    shape = params_shapes
  shape = shape + params_shapes
  maxwell_key, rademacher_key = _unstack(_split(data))
  maxwell_rvs = _maxwell_jit(maxwell_key, shape, dtype)
  random_sign = _rademacher(rademacher_key, shape, dtype)
  return random_sign * maxwell_rvs * scale + loc


def weibull_min(key, scale, concentration, shape=(), dtype=None):
  """Weibull samples with the given scale and concentration."""
  data, dtype, shape = _float_args("weibull_min", key, dtype, shape)
  return _weibull_min(data, scale, concentration, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _weibull_min(data, scale, concentration, shape, dtype):
  u = _uniform(data, 0, 1, shape, dtype)
  return ufuncs.power(-ufuncs.log1p(-u), 1.0 / concentration) * scale


@_with_out_sharding
def rayleigh(key, scale, shape=None, dtype=None, *, out_sharding=None):
  """Rayleigh samples with the given scale."""
  data, dtype, shape = _sampler_args("rayleigh", key, dtype, shape, scale)
  return _rayleigh(data, scale, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _rayleigh(data, scale, shape, dtype):
  u = _uniform(data, 0., 1., shape, dtype)
  scale = lax_numpy.broadcast_to(creation.asarray(scale).astype(dtype), shape)
  sqrt_u = lax.sqrt(lax.mul(lax.log(u), _const(scale, -2)))
  return lax.mul(scale, sqrt_u)


@_with_out_sharding
def wald(key, mean, shape=None, dtype=None, *, out_sharding=None):
  """Wald (inverse Gaussian) samples with the given mean."""
  data, dtype, shape = _sampler_args("wald", key, dtype, shape, mean)
  return _wald(data, mean, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _wald(data, mean, shape, dtype):
  k1, k2 = _unstack(_split(data))
  mean = lax_numpy.broadcast_to(creation.asarray(mean).astype(dtype), shape)
  v = _normal(k1, shape, dtype)
  z = _uniform(k2, 0., 1., shape, dtype)
  y = lax.integer_pow(v, 2)
  y_sq = lax.integer_pow(y, 2)
  mean_sq = lax.integer_pow(mean, 2)
  sqrt_term = lax.sqrt(4 * mean * y + mean_sq * y_sq)
  x = mean + mean_sq * y / 2 - mean / 2 * sqrt_term
  return lax.select(lax.le(z, mean / (mean + x)), x, mean_sq / x)


@_with_out_sharding
def geometric(key, p, shape=None, dtype=None, *, out_sharding=None):
  """Geometric samples: the number of trials up to the first success of probability `p`."""
  data, _ = _check_prng_key("geometric", key)
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
  if not dtypes.issubdtype(dtype, np.integer):
    raise ValueError(f"dtype argument to `geometric` must be an int dtype, got {dtype}")
  shape = _check_broadcast_shapes("geometric", shape, p)
  return _geometric(data, p, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _geometric(data, p, shape, dtype):
  check_arraylike("geometric", p)
  p, = promote_dtypes_inexact(p)
  u = _uniform(data, 0., 1., shape, core.get_aval(p).dtype)
  u = lax_numpy.where(u == 0, 1, u)
  log_one_minus_p = lax_numpy.broadcast_to(lax.log1p(-p), shape)
  g = lax.floor(lax.div(lax.log(u), log_one_minus_p)) + 1
  return g.astype(dtype)


@_with_out_sharding
def triangular(key, left, mode, right, shape=None, dtype=None, *, out_sharding=None):
  """Triangular samples on [left, right] with peak at `mode`."""
  data, dtype, shape = _sampler_args("triangular", key, dtype, shape, left, mode, right)
  return _triangular(data, left, mode, right, shape, dtype)


@partial(jit, static_argnums=(4, 5), inline=True)
def _triangular(data, left, mode, right, shape, dtype):
  left = lax_numpy.broadcast_to(lax.convert_element_type(left, dtype), shape)
  right = lax_numpy.broadcast_to(lax.convert_element_type(right, dtype), shape)
  mode = lax_numpy.broadcast_to(lax.convert_element_type(mode, dtype), shape)
  fc = (mode - left) / (right - left)
  u = _uniform(data, 0., 1., shape, dtype)
  out1 = left + lax.sqrt(u * (right - left) * (mode - left))
  out2 = right - lax.sqrt((1 - u) * (right - left) * (right - mode))
  return lax.select(u < fc, out1, out2)



# ---- the gamma family -----------------------------------------------------------------------
def _batched_while(cond_fun, body_fun, init):
  """A while loop over a batch whose `cond_fun` gives one bool per example: it runs while any
  is true, and finished examples keep their carry. (This is how JAX runs a vmapped while_loop,
  which is how it draws gamma samples.)"""
  leaves, in_tree = tree_flatten(init)
  args_tree = treedef_tuple([in_tree])
  avals = tuple(core.get_aval(x) for x in leaves)
  cond_t = common.trace_body(cond_fun, args_tree, avals)
  body_t = common.trace_body(body_fun, args_tree, avals)
  outs = loops.while_p.bind(*cond_t.consts, *body_t.consts, *leaves,
                            cond_jaxpr=cond_t.jaxpr, body_jaxpr=body_t.jaxpr,
                            cond_nconsts=len(cond_t.consts), body_nconsts=len(body_t.consts))
  return tree_unflatten(in_tree, outs)


def _split_batched(keys, num):
  """`num` keys split from each of a batch of keys (n, 2), as a list of (n, 2) key batches."""
  split = split_data(keys, (num,))
  if isinstance(split, PRNGKeyArray):
    return [prng.internal_keys(shape_ops.index_in_dim(split._base_array, i, 1, keepdims=False),
                               split._dtype) for i in range(num)]
  return [shape_ops.index_in_dim(split, i, 1, keepdims=False) for i in range(num)]


def _gamma_batched(keys, alpha, log_space):
  """Marsaglia-Tsang gamma samples, one per (key, alpha) row: keys (n, 2), alpha (n,)."""
  dtype = core.get_aval(alpha).dtype
  n = alpha.shape[0]
  c_ = lambda v: np.array(v, dtype)
  zero, one = c_(0), c_(1)
  one_over_two, one_over_three, squeeze_const = c_(0.5), c_(1.0 / 3.0), c_(0.0331)
  filled = lambda v: shape_ops.broadcast_in_dim(c_(v), (n,), ())
  # alpha < 1 is sampled as alpha + 1 and boosted by U ** (1 / alpha) afterwards.
  boost_mask = lax.ge(alpha, one)
  alpha_orig = alpha
  alpha = lax.select(boost_mask, alpha, lax.add(alpha, one))
  d = lax.sub(alpha, one_over_three)
  c = lax.div(one_over_three, lax.sqrt(d))

  def cond_fn(state):
    _, x, v, u = state
    squeeze_ok = lax.ge(u, lax.sub(one, lax.mul(squeeze_const, lax.mul(x, x))))
    log_ok = lax.ge(lax.log(u), lax.add(lax.mul(x, one_over_two),
                                        lax.mul(d, lax.add(lax.sub(one, v), lax.log(v)))))
    return lax.bitwise_and(squeeze_ok, log_ok)

  def next_xv(state):
    key, subkey = _split_batched(state[0], 2)
    x = _normal(subkey, (), dtype)
    return key, x, lax.add(one, lax.mul(x, c))

  def body_fn(state):
    key, x_key, u_key = _split_batched(state[0], 3)
    _, x, v = _batched_while(lambda s: lax.le(s[2], zero), next_xv,
                             (x_key, filled(0), filled(-1)))
    u = _uniform(u_key, 0., 1., (), dtype)
    return key, lax.mul(x, x), lax.mul(lax.mul(v, v), v), u

  key, subkey = _split_batched(keys, 2)
  _, _, v, _ = _batched_while(cond_fn, body_fn, (key, filled(0), filled(1), filled(2)))
  if log_space:
    log_samples = lax.neg(_exponential_jit(subkey, (), dtype))
    log_boost = lax.select(boost_mask | (log_samples == 0), filled(0),
                           lax.mul(log_samples, lax.div(one, alpha_orig)))
    return lax.add(lax.add(lax.log(d), lax.log(v)), log_boost)
  samples = 1 - _uniform(subkey, 0., 1., (), dtype)
  boost = lax.select(boost_mask, filled(1), lax.pow(samples, lax.div(one, alpha_orig)))
  return lax.mul(lax.mul(d, v), boost)


def _gamma_impl(data, a, *, log_space, impl=None):
  """Gamma samples for keys (*batch, 2) and `a` of shape (*batch, *shape): each key is split
  into one key per element of its row of `a` (`impl`: the key dtype of non-threefry data)."""
  a_shape = np.shape(a)
  key_shape = (2,) if impl is None else tuple(impl.impl.key_shape)
  nb = np.ndim(data) - len(key_shape)
  count = math.prod(a_shape[nb:])
  if impl is not None:
    data = prng.internal_keys(data, impl)
  keys = split_data(data, (count,))
  flat = (math.prod(a_shape[:nb]) * count, *key_shape)
  if impl is not None:
    keys = prng.internal_keys(shape_ops.reshape(keys._base_array, flat), impl)
  else:
    keys = shape_ops.reshape(keys, flat)
  alphas = shape_ops.reshape(a, (math.prod(a_shape),))
  if impl is not None:
    # One key at a time (JAX's lax.map for implementations other than threefry, whose batched
    # draws would not be each key's own).
    def one(args):
      k, alpha = args
      keys = prng.internal_keys(shape_ops.expand_dims(k, (0,)), impl)
      return shape_ops.squeeze(_gamma_batched(keys, shape_ops.expand_dims(alpha, (0,)),
                                              log_space), (0,))
    return shape_ops.reshape(loops.map(one, (keys._base_array, alphas)), a_shape)
  return shape_ops.reshape(_gamma_batched(keys, alphas, log_space), a_shape)


# The sampler is one primitive, as in JAX, so that vmap moves key and parameter batches into it
# and differentiation has one place to go (the implicit gradient, lax.random_gamma_grad).
random_gamma_p = core.Primitive("random_gamma")


def _random_gamma_abstract_eval(key, a, *, log_space, impl=None):
  key_shape = (2,) if impl is None else tuple(impl.impl.key_shape)
  if key.dtype != np.uint32 or key.shape[key.ndim - len(key_shape):] != key_shape:
    raise TypeError(f"random_gamma takes uint32 key data (..., 2), got {key.str_short()}")
  return a


def _random_gamma_lowering(ctx, key, a, *, log_space, impl=None):
  return lower_fun(lambda k, x: [_gamma_impl(k, x, log_space=log_space, impl=impl)])(
      ctx, key, a)


def _random_gamma_jvp(primals, tangents, *, log_space, **impl):
  # Implicit reparameterization, as JAX: a sample moves with `a` along its fixed quantile, at
  # rate lax.random_gamma_grad(a, sample); for log-space samples that rate is divided by the
  # sample (a sample that underflowed to 0 counts as the smallest normal float).
  key, a = primals
  out = random_gamma_p.bind(key, a, log_space=log_space, **impl)
  t_a = tangents[1]
  if type(t_a) is ad.Zero:
    return out, ad.Zero(ad.tangent_aval(core.get_aval(out)))
  if log_space:
    sample = lax.exp(out)
    tiny = creation.full_like(sample, dtypes.finfo(core.get_aval(out).dtype).tiny)
    sample = lax.select(lax.eq(sample, _const(sample, 0)), tiny, sample)
    rate = lax.div(_gamma_grad_map(a, sample, impl), sample)
  else:
    rate = _gamma_grad_map(a, out, impl)
  return out, lax.mul(t_a, rate)


def _gamma_grad_map(a, sample, impl):
  """random_gamma_grad(a, sample); one element at a time for keys of implementations other
  than threefry (JAX's CPU program: the last bit follows how XLA fuses it)."""
  if not impl:
    return random_gamma_grad(a, sample)
  shape = np.shape(sample)
  flat = [shape_ops.reshape(x, (math.prod(shape),)) for x in (a, sample)]
  out = loops.map(lambda args: random_gamma_grad(*args), tuple(flat))
  return shape_ops.reshape(out, shape)


def _random_gamma_batch(args, dims, *, log_space, **impl):
  k, a = args
  size = next(x.shape[d] for x, d in zip(args, dims) if d is not None)
  k = batching.bdim_at_front(k, dims[0], size)
  a = batching.bdim_at_front(a, dims[1], size)
  return random_gamma_p.bind(k, a, log_space=log_space, **impl), 0


random_gamma_p.def_abstract_eval(_random_gamma_abstract_eval)
random_gamma_p.def_lowering(_random_gamma_lowering)
random_gamma_p.def_jvp(_random_gamma_jvp)
random_gamma_p.def_batch(_random_gamma_batch)
random_gamma_p.def_pp_params(lambda params: params)


@partial(jit, static_argnums=(2, 3, 4))
def _gamma(data, a, shape, dtype, log_space):
  if shape is None:
    shape = np.shape(a)
  else:
    _check_shape("gamma", shape, np.shape(a))
  a = lax.convert_element_type(a, dtype)
  if np.shape(a) != shape:
    a = lax_numpy.broadcast_to(a, shape)
  if isinstance(data, PRNGKeyArray):   # (keys of another implementation: the dtype a param)
    return random_gamma_p.bind(data._base_array, a, log_space=log_space, impl=data._dtype)
  return random_gamma_p.bind(data, a, log_space=log_space)


@_with_out_sharding
def gamma(key, a, shape=None, dtype=None, *, out_sharding=None):
  """Gamma samples with shape parameter `a` (unit scale)."""
  data, _ = _check_prng_key("gamma", key)
  dtype = _float_dtype("gamma", dtype)
  if shape is not None:
    shape = _canonicalize_shape(shape, "gamma")
  return _gamma(data, a, shape, dtype, False)


@_with_out_sharding
def loggamma(key, a, shape=None, dtype=None, *, out_sharding=None):
  """The logarithm of gamma samples, accurate for small `a` where the samples underflow."""
  data, _ = _check_prng_key("loggamma", key)
  dtype = _float_dtype("gamma", dtype)
  if shape is not None:
    shape = _canonicalize_shape(shape, "loggamma")
  return _gamma(data, a, shape, dtype, True)


@_with_out_sharding
def beta(key, a, b, shape=None, dtype=None, *, out_sharding=None):
  """Beta samples with parameters `a` and `b`."""
  data, _ = _check_prng_key("beta", key)
  dtype = _float_dtype("beta", dtype)
  _check_all_safe_to_cast("beta", dtype, a, b)
  shape = _check_broadcast_shapes("beta", shape, a, b)
  return _beta(data, a, b, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _beta(data, a, b, shape, dtype):
  _check_shape("beta", shape, np.shape(a), np.shape(b))
  a = lax.convert_element_type(a, dtype)
  b = lax.convert_element_type(b, dtype)
  key_a, key_b = _unstack(_split(data))
  a = lax_numpy.broadcast_to(a, shape)
  b = lax_numpy.broadcast_to(b, shape)
  log_gamma_a = _gamma(key_a, a, shape, dtype, True)
  log_gamma_b = _gamma(key_b, b, shape, dtype, True)
  # Scale both by the larger before exponentiating, so small a and b do not underflow.
  log_max = lax.max(log_gamma_a, log_gamma_b)
  gamma_a_scaled = ufuncs.exp(log_gamma_a - log_max)
  gamma_b_scaled = ufuncs.exp(log_gamma_b - log_max)
  return gamma_a_scaled / (gamma_a_scaled + gamma_b_scaled)


@_with_out_sharding
def dirichlet(key, alpha, shape=None, dtype=None, *, out_sharding=None):
  """Dirichlet samples with concentration `alpha` (the last axis holds the categories)."""
  data, _ = _check_prng_key("dirichlet", key)
  dtype = _float_dtype("dirichlet", dtype)
  if shape is not None:
    shape = _canonicalize_shape(shape, "dirichlet")
  return _dirichlet(data, alpha, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _dirichlet(data, alpha, shape, dtype):
  if not np.ndim(alpha) >= 1:
    raise ValueError(f"dirichlet requires alpha.ndim >= 1, got alpha.ndim == {np.ndim(alpha)}")
  if shape is None:
    shape = np.shape(alpha)[:-1]
  else:
    _check_shape("dirichlet", shape, np.shape(alpha)[:-1])
  alpha = lax.convert_element_type(alpha, dtype)
  log_gamma_samples = _gamma(data, alpha, shape + np.shape(alpha)[-1:], dtype, True)
  return _softmax(log_gamma_samples)


def _softmax(x):
  """softmax over the last axis, computed as jax.nn.softmax does."""
  x_max = reductions.max(x, -1, initial=-np.inf, keepdims=True)
  unnormalized = ufuncs.exp(x - x_max)
  return unnormalized / reductions.sum(unnormalized, -1, keepdims=True)


@_with_out_sharding
def t(key, df, shape=None, dtype=None, *, out_sharding=None):
  """Student's t samples with `df` degrees of freedom."""
  data, dtype, shape = _sampler_args("t", key, dtype, shape, df)
  return _t(data, df, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _t(data, df, shape, dtype):
  _check_shape("t", shape, np.shape(df))
  df = lax.convert_element_type(df, dtype)
  key_n, key_g = _unstack(_split(data))
  n = _normal(key_n, shape, dtype)
  half_df = lax.div(df, _const(n, 2))
  g = _gamma(key_g, half_df, shape, dtype, False)
  return n * ufuncs.sqrt(half_df / g)


@_with_out_sharding
def chisquare(key, df, shape=None, dtype=None, *, out_sharding=None):
  """Chi-square samples with `df` degrees of freedom."""
  data, dtype, shape = _sampler_args("chisquare", key, dtype, shape, df)
  return _chisquare(data, df, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _chisquare(data, df, shape, dtype):
  df = lax.convert_element_type(df, dtype)
  two = _const(df, 2)
  log_g = _gamma(data, lax.div(df, two), shape, dtype, True)
  return lax.mul(ufuncs.exp(log_g), two)


@_with_out_sharding
def f(key, dfnum, dfden, shape=None, dtype=None, *, out_sharding=None):
  """F-distribution samples with `dfnum` and `dfden` degrees of freedom."""
  data, dtype, shape = _sampler_args("f", key, dtype, shape, dfnum, dfden)
  return _f(data, dfnum, dfden, shape, dtype)


@partial(jit, static_argnums=(3, 4))
def _f(data, dfnum, dfden, shape, dtype):
  dfden = lax.convert_element_type(dfden, dtype)
  dfnum = lax.convert_element_type(dfnum, dtype)
  key_dfd, key_dfn = _unstack(_split(data))
  chi2_dfn = chisquare(key_dfn, dfnum, shape, dtype)
  chi2_dfd = chisquare(key_dfd, dfden, shape, dtype)
  return lax.div(lax.div(chi2_dfn, dfnum), lax.div(chi2_dfd, dfden))


@_with_out_sharding
def generalized_normal(key, p, shape=(), dtype=None, *, out_sharding=None):
  """Generalized normal samples with density proportional to exp(-|x|**p)."""
  shape = _canonicalize_shape(shape, "generalized_normal")
  data, _ = _check_prng_key("generalized_normal", key)
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
  return _generalized_normal(data, p, shape, dtype)


@partial(jit, static_argnums=(2, 3))
def _generalized_normal(data, p, shape, dtype):
  k_gamma, k_sign = _unstack(_split(data))
  g = gamma(k_gamma, 1 / p, shape, dtype)
  r = rademacher(k_sign, shape, dtype)
  return r * g ** (1 / p)


@_with_out_sharding
def ball(key, d, p=2, shape=(), dtype=None, *, out_sharding=None):
  """Samples uniform in the unit `p`-norm ball of dimension `d`."""
  shape = _canonicalize_shape(shape, "ball")
  data, _ = _check_prng_key("ball", key)
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
  d = operator.index(concretize(d, "The error occurred in jax.random.ball()")
                     if isinstance(d, core.Tracer) else d)
  return _ball(data, p, d, shape, dtype)


@partial(jit, static_argnums=(2, 3, 4))
def _ball(data, p, d, shape, dtype):
  k1, k2 = _unstack(_split(data))
  g = generalized_normal(k1, p, (*shape, d), dtype)
  e = exponential(k2, shape, dtype)
  return g / (((ufuncs.abs(g) ** p).sum(-1) + e) ** (1 / p))[..., None]


# ---- counts: poisson, binomial, multinomial ------------------------------------------------
@_with_out_sharding
def poisson(key, lam, shape=None, dtype=None, *, out_sharding=None):
  """Poisson samples with rate `lam` (Knuth's method below 10, rejection sampling above)."""
  data, _ = _check_prng_key("poisson", key)
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype)
  if isinstance(data, PRNGKeyArray):
    raise NotImplementedError("`poisson` is only implemented for the threefry2x32 RNG, not "
                              f"{data.dtype.impl}")
  if shape is not None:
    shape = _canonicalize_shape(shape, "poisson")
  else:
    shape = np.shape(lam)
  lam = lax_numpy.broadcast_to(lam, shape)
  lam = lax.convert_element_type(lam, np.float32)
  return _poisson(data, lam, shape, dtype)


def _while_loop(cond_fun, body_fun, init):
  return while_loop(cond_fun, body_fun, init)


@partial(jit, static_argnums=(2, 3, 4))
def _poisson_knuth(data, lam, shape, dtype, max_iters):
  def body_fn(carry):
    i, k, rng, log_prod = carry
    rng, subkey = _unstack(_split(rng))
    k = lax.select(log_prod > -lam, k + 1, k)
    u = _uniform(subkey, 0., 1., shape, np.dtype(np.float32))
    return i + 1, k, rng, log_prod + ufuncs.log(u)

  def cond_fn(carry):
    i, log_prod = carry[0], carry[3]
    return (log_prod > -lam).any() & (i < max_iters)

  k_init = creation.zeros(shape, dtype)
  log_rate_init = creation.zeros(shape, np.float32)
  k = _while_loop(cond_fn, body_fn, (0, k_init, data, log_rate_init))[1]
  return (k - 1).astype(dtype)


@partial(jit, static_argnums=(2, 3, 4))
def _poisson_rejection(data, lam, shape, dtype, max_iters):
  # Transformed rejection with squeeze (Hormann 1993).
  log_lam = lax.log(lam)
  b = 0.931 + 2.53 * lax.sqrt(lam)
  a = -0.059 + 0.02483 * b
  inv_alpha = 1.1239 + 1.1328 / (b - 3.4)
  v_r = 0.9277 - 3.6224 / (b - 2)
  fdtype = core.get_aval(lam).dtype

  def body_fn(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _unstack(_split(key, 3))
    u = _uniform(subkey_0, 0., 1., shape, fdtype) - 0.5
    v = _uniform(subkey_1, 0., 1., shape, fdtype)
    u_shifted = 0.5 - abs(u)
    k = lax.floor((2 * a / u_shifted + b) * u + lam + 0.43)
    s = lax.log(v * inv_alpha / (a / (u_shifted * u_shifted) + b))
    t = -lam + k * log_lam - lax.lgamma(k + 1)
    accept1 = (u_shifted >= 0.07) & (v <= v_r)
    reject = (k < 0) | (u_shifted < 0.013) & (v > u_shifted)
    accept2 = s <= t
    accept = accept1 | ~reject & accept2
    k_out = lax.select(accept, k, k_out)
    accepted = accepted | accept
    return i + 1, k_out, accepted, key

  def cond_fn(carry):
    i, k_out, accepted, key = carry
    return (~accepted).any() & (i < max_iters)

  k_init = creation.full(shape, -1, fdtype)
  accepted = creation.full(shape, False, np.bool_)
  k = _while_loop(cond_fn, body_fn, (0, k_init, accepted, data))[1]
  return k.astype(dtype)


@partial(jit, static_argnums=(2, 3))
def _poisson(data, lam, shape, dtype):
  use_knuth = (lam != lam) | (lam < 10)
  lam_knuth = lax.select(use_knuth, lam, creation.full_like(lam, 0.0))
  lam_rejection = lax.select(use_knuth, creation.full_like(lam, 1e5), lam)
  max_iters = dtype.type(dtypes.iinfo(dtype).max)
  result = lax.select(use_knuth, _poisson_knuth(data, lam_knuth, shape, dtype, max_iters),
                      _poisson_rejection(data, lam_rejection, shape, dtype, max_iters))
  return lax.select(lam == 0, creation.zeros_like(result), result)


def _stirling_approx_tail(k):
  tail_values = creation.array([0.0810614667953272, 0.0413406959554092, 0.0276779256849983,
                                0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                                0.0118967099458917, 0.010411265261972, 0.00925546218271273,
                                0.00833056343336287], dtype=k.dtype)
  use_tail_values = k <= 9
  k = lax.clamp(_const(k, 0.0), k, _const(k, 9.0))
  kp1sq = (k + 1) * (k + 1)
  approx = (1.0 / 12 - (1.0 / 360 - 1.0 / 1260 / kp1sq) / kp1sq) / (k + 1)
  k = ufuncs.floor(k)
  return lax.select(use_tail_values, tail_values[creation.asarray(k, dtype="int32")], approx)


@partial(jit, static_argnums=(3, 4, 5), inline=True)
def _binomial_inversion(data, count, prob, shape, dtype, max_iters):
  log1minusprob = ufuncs.log1p(-prob)
  pdtype = core.get_aval(prob).dtype

  def body_fn(carry):
    i, num_geom, geom_sum, key = carry
    subkey, key = _unstack(_split(key))
    num_geom_out = lax.select(geom_sum <= count, num_geom + 1, num_geom)
    u = _uniform(subkey, 0., 1., shape, pdtype)
    geom = ufuncs.ceil(ufuncs.log(u) / log1minusprob)
    return i + 1, num_geom_out, geom_sum + geom, key

  def cond_fn(carry):
    i, geom_sum = carry[0], carry[2]
    return (geom_sum <= count).any() & (i < max_iters)

  num_geom_init = creation.zeros(shape, pdtype)
  geom_sum_init = creation.zeros(shape, pdtype)
  k = _while_loop(cond_fn, body_fn, (0, num_geom_init, geom_sum_init, data))[1]
  return (k - 1).astype(dtype)


@partial(jit, static_argnums=(3, 4, 5), inline=True)
def _btrs(data, count, prob, shape, dtype, max_iters):
  # Transformed rejection for binomials (Hormann 1993).
  stddev = ufuncs.sqrt(count * prob * (1 - prob))
  b = 1.15 + 2.53 * stddev
  a = -0.0873 + 0.0248 * b + 0.01 * prob
  c = count * prob + 0.5
  v_r = 0.92 - 4.2 / b
  r = prob / (1 - prob)
  alpha = (2.83 + 5.1 / b) * stddev
  m = ufuncs.floor((count + 1) * prob)
  pdtype = core.get_aval(prob).dtype

  def body_fn(carry):
    i, k_out, accepted, key = carry
    key, subkey_0, subkey_1 = _unstack(_split(key, 3))
    u = _uniform(subkey_0, 0., 1., shape, pdtype)
    v = _uniform(subkey_1, 0., 1., shape, pdtype)
    u = u - 0.5
    us = 0.5 - ufuncs.abs(u)
    accept1 = (us >= 0.07) & (v <= v_r)
    k = ufuncs.floor((2 * a / us + b) * u + c)
    reject = (k < 0) | (k > count)
    v = ufuncs.log(v * alpha / (a / (us * us) + b))
    ub = ((m + 0.5) * ufuncs.log((m + 1) / (r * (count - m + 1)))
          + (count + 1) * ufuncs.log((count - m + 1) / (count - k + 1))
          + (k + 0.5) * ufuncs.log(r * (count - k + 1) / (k + 1))
          + _stirling_approx_tail(m) + _stirling_approx_tail(count - m)
          - _stirling_approx_tail(k) - _stirling_approx_tail(count - k))
    accept2 = v <= ub
    accept = accept1 | ~reject & accept2
    k_out = lax.select(accept, k, k_out)
    accepted = accepted | accept
    return i + 1, k_out, accepted, key

  def cond_fn(carry):
    i, accepted = carry[0], carry[2]
    return (~accepted).any() & (i < max_iters)

  k_init = creation.full(shape, -1, pdtype)
  carry = (0, k_init, creation.full(shape, False, bool), data)
  return _while_loop(cond_fn, body_fn, carry)[1].astype(dtype)


def binomial(key, n, p, shape=None, dtype=None):
  """Binomial samples: successes in `n` trials of probability `p` (as floats)."""
  data, _ = _check_prng_key("binomial", key)
  check_arraylike("binomial", n, p)
  dtype = _float_dtype("binomial", dtype)
  if shape is not None:
    shape = _canonicalize_shape(shape, "binomial")
  return _binomial(data, n, p, shape, dtype)


@partial(jit, static_argnums=(3, 4), inline=True)
def _binomial(data, count, prob, shape, dtype):
  if shape is None:
    shape = _broadcast_shapes_or_raise("binomial", np.shape(count), np.shape(prob))
  else:
    _check_shape("binomial", shape, np.shape(count), np.shape(prob))
  prob, = promote_dtypes_inexact(prob)
  count = lax.convert_element_type(count, core.get_aval(prob).dtype)
  count = lax_numpy.broadcast_to(count, shape)
  prob = lax_numpy.broadcast_to(prob, shape)
  p_lt_half = prob < 0.5
  q = lax.select(p_lt_half, prob, 1.0 - prob)
  count_nan_or_neg = (count != count) | (count < 0.0)
  count_inf = ufuncs.isinf(count)
  q_is_nan = q != q
  q_l_0 = q < 0.0
  q = lax.select(q_is_nan | q_l_0, creation.full_like(q, 0.01), q)
  use_inversion = count_nan_or_neg | (count * q <= 10.0)
  count = ufuncs.floor(count)
  count_inv = lax.select(use_inversion, count, creation.full_like(count, 0.0))
  count_btrs = lax.select(use_inversion, creation.full_like(count, 1e4), count)
  q_btrs = lax.select(use_inversion, creation.full_like(q, 0.5), q)
  max_iters = dtype.type(dtypes.finfo(dtype).max)
  samples = lax.select(use_inversion,
                       _binomial_inversion(data, count_inv, q, shape, dtype, max_iters),
                       _btrs(data, count_btrs, q_btrs, shape, dtype, max_iters))
  invalid = q_l_0 | q_is_nan | count_nan_or_neg
  samples = lax.select(invalid, creation.full_like(samples, np.nan, dtype), samples)
  samples = lax.select(count_inf & ~invalid, creation.full_like(samples, np.inf, dtype), samples)
  return lax.select(p_lt_half | count_nan_or_neg | q_is_nan | count_inf, samples,
                    count.astype(dtype) - samples)


def multinomial(key, n, p, *, shape=None, dtype=None, unroll=1):
  """Multinomial counts of `n` trials over categories with probabilities `p` (last axis)."""
  data, _ = _check_prng_key("multinomial", key)
  check_arraylike("multinomial", n, p)
  n, p = promote_dtypes_inexact(n, p)
  if shape is None:
    shape = np.shape(p)
  n = lax_numpy.broadcast_to(n, shape[:-1])
  p = lax_numpy.broadcast_to(p, shape)

  def step(remainder, ratio_key):
    ratio, key = ratio_key
    count = binomial(key, remainder, ratio.clip(0, 1), dtype=remainder.dtype)
    return remainder - count, count

  p = lax_numpy.moveaxis(p, -1, 0)
  remaining_probs = lax_reductions.cumsum(p, 0, reverse=True)
  ratios = p / lax_numpy.where(remaining_probs == 0, 1, remaining_probs)
  keys = split(data, ratios.shape[0])
  _, counts = scan(step, n, (ratios, keys), unroll=unroll)
  return lax_numpy.moveaxis(counts, 0, -1).astype(dtype)


@_with_out_sharding
def orthogonal(key, n, shape=(), dtype=None, m=None, *, out_sharding=None):
  """Random matrices with orthonormal columns (or rows), uniform under the Haar measure."""
  m_ = n if m is None else m
  shape = _canonicalize_shape(shape, "orthogonal")
  data, _ = _check_prng_key("orthogonal", key)
  dtype = dtypes.check_user_dtype(float if dtype is None else dtype)
  n = operator.index(n)
  m_ = operator.index(m_)
  if n < 0 or m_ < 0:
    raise ValueError(f"negative dimensions are not allowed, got {n} and {m}")
  return _orthogonal(data, n, m_, shape, dtype)


@partial(jit, static_argnums=(1, 2, 3, 4))
def _orthogonal(data, n, m, shape, dtype):
  z = _normal(data, (*shape, max(n, m), min(n, m)), dtype)
  q, r = np_linalg.qr(z)
  d = lax_linalg._diagonal(r)   # r is square: the reduced QR of a tall or square z
  x = q * lax_numpy.expand_dims(ufuncs.sign(d), -2)
  return lax_numpy.swapaxes(x, -1, -2) if n < m else x
