"""Arrays <-> TensorStore (`jax.experimental.array_serialization.tensorstore_impl`).

Each process writes the shards it holds (replica 0 of each piece) into one zarr/zarr3 array,
optionally inside an OCDBT key-value store, and reads back the piece each of its devices needs
(zero-filled where the stored array is smaller than asked for). The specs, metadata and chunk
shapes are JAX 0.10.2's, so each library reads what the other writes.

Needs the optional `tensorstore` package (imported here, as JAX does).
"""
from __future__ import annotations

import asyncio
import functools
import logging
import math
import os
import re
from collections.abc import Awaitable, Callable, Sequence
from os import PathLike
from typing import Any

import numpy as np
import tensorstore as ts

from arrax._src import api, backend, dtypes
from arrax._src.array import Array
from arrax._src.global_arrays import make_array_from_single_device_arrays
from arrax._src.layout import Format
from arrax._src.sharding_impls import Sharding, SingleDeviceSharding
from arrax._src.tree_util import tree_leaves, tree_map

_TS_ARRAY_DRIVER = "zarr3"
_DEFAULT_BASE_DRIVER = "file"
_PROCESS_DIR_FORMAT = "process_{}"
_FILE_SIZE_TARGET = 2 * 1024 ** 3

_TS_CONTEXT = ts.Context({
    "file_io_concurrency": {"limit": 128},
    "cache_pool": {"total_bytes_limit": 10_000_000_000},
    "cache_pool#remote": {"total_bytes_limit": 10_000_000_000},
    "data_copy_concurrency": {"limit": 128},
})
_TS_CHUNK_LAYOUT = ts.ChunkLayout(chunk=ts.ChunkLayout.Grid(elements=100_000_000))

Future, Transaction = ts.Future, ts.Transaction

logger = logging.getLogger(__name__)


class _LimitInFlightBytes:
  """Bounds the host memory that reads/writes in flight may hold at once (a request larger
  than the whole budget raises the budget to its size)."""

  def __init__(self, host_memory_bytes_limit: int):
    self._max_bytes = host_memory_bytes_limit
    self._available_bytes = host_memory_bytes_limit
    self._cv = asyncio.Condition(lock=asyncio.Lock())

  async def wait_for_bytes(self, requested_bytes):
    if requested_bytes > self._max_bytes:
      in_use = self._max_bytes - self._available_bytes
      logger.debug("A single array item requests more bytes than we reserved space for in "
                   "the parallel pool: %d > %d. Increasing the limit to %d.",
                   requested_bytes, self._max_bytes, requested_bytes)
      self._max_bytes = requested_bytes
      self._available_bytes = requested_bytes - in_use
    async with self._cv:
      await self._cv.wait_for(lambda: self._available_bytes >= requested_bytes)
      self._available_bytes -= requested_bytes

  async def release_bytes(self, requested_bytes):
    async with self._cv:
      self._available_bytes += requested_bytes
      self._cv.notify_all()


def is_tensorstore_spec_leaf(leaf: Any):
  """Whether `leaf` is a (possibly absent) TensorStore spec: None or a dict with a driver or
  kvstore."""
  return leaf is None or (isinstance(leaf, dict) and ("driver" in leaf or "kvstore" in leaf))


def _prime_factors(x: int) -> list[int]:
  out, p = [], 2
  while p * p <= x:
    while x % p == 0:
      out.append(p)
      x //= p
    p += 1
  if x > 1:
    out.append(x)
  return out


@functools.lru_cache(maxsize=1024)
def _compute_chunk_shape(local_shape: Sequence[int], dtype, file_size_target: int =
                         _FILE_SIZE_TARGET) -> list[int]:
  """A chunk shape dividing `local_shape` whose byte size is at most 1.1 x the target: the
  axis with the smallest prime factor left is divided by it until the chunk is small enough."""
  shape = list(local_shape)
  if not shape or math.prod(shape) == 0:
    return [max(n, 1) for n in shape]
  factors = [_prime_factors(n) for n in shape]
  nbytes = math.prod(shape) * np.dtype(dtype).itemsize
  while nbytes > 1.1 * file_size_target:
    candidates = [(f[0], i) for i, f in enumerate(factors) if len(f) > 1]
    if not candidates:
      break
    p, i = min(candidates)
    factors[i].pop(0)
    shape[i] //= p
    nbytes //= p
  return shape


def _local_shape(arr):
  return arr.sharding.shard_shape(arr.shape) if isinstance(arr, Array) else arr.shape


def _get_tensorstore_metadata(arr, is_remote: bool = False,
                              file_size_target: int = _FILE_SIZE_TARGET,
                              driver: str = _TS_ARRAY_DRIVER) -> dict[str, Any]:
  """The `metadata` of a spec storing `arr` (its shape, dtype and chunking)."""
  return _get_tensorstore_metadata_cached(tuple(arr.shape), np.dtype(arr.dtype),
                                          tuple(_local_shape(arr)), is_remote,
                                          file_size_target, driver)


@functools.lru_cache(maxsize=1024)
def _get_tensorstore_metadata_cached(global_shape, dtype, local_shape, is_remote=False,
                                     file_size_target=_FILE_SIZE_TARGET,
                                     driver=_TS_ARRAY_DRIVER) -> dict[str, Any]:
  if driver == "zarr3":
    chunks = _compute_chunk_shape(local_shape, dtype, file_size_target=file_size_target)
    return {"codecs": [{"name": "zstd"}] if is_remote else [],
            "shape": global_shape,
            "data_type": np.dtype(dtype).name,
            "chunk_grid": {"name": "regular", "configuration": {"chunk_shape": chunks}}}
  if driver == "zarr":   # (zarr's dtype lives in the spec itself)
    return {"compressor": {"id": "zstd"}, "shape": global_shape,
            "chunks": [max(1, int(n)) for n in local_shape]}
  raise ValueError(f"Unsupported driver: {driver}")


def _divides(x, y):
  return all(a % b == 0 for a, b in zip(x, y))


def merge_nested_ts_specs(dict1: dict[Any, Any], dict2: dict[Any, Any] | None):
  """`dict1` updated by `dict2` (their `kvstore` entries merged too); `dict2` wins."""
  if dict2 is None:
    return dict1
  kvstore = {**dict1.get("kvstore", {}), **dict2.get("kvstore", {})}
  return {**dict1, **dict2, "kvstore": kvstore}


def verify_tensorstore_spec(spec: dict[str, Any], arr, path: str | PathLike[str], ocdbt: bool,
                            check_metadata: bool = True) -> None:
  """Check that `spec` (with `metadata` when `check_metadata`) fits `arr` and writes at `path`
  (raises ValueError otherwise)."""
  if ocdbt and spec.get("kvstore", {}).get("driver", "") != "ocdbt":
    raise ValueError(f"Expected ocdbt driver, got {spec=}")
  if check_metadata:
    if arr is None:
      raise ValueError("Array is required for metadata verification.")
    metadata = spec["metadata"]
    zarr3 = spec.get("driver", "") == "zarr3"
    if zarr3 and metadata["data_type"] != np.dtype(arr.dtype).name:
      raise ValueError(f"Provided dtype ({metadata['data_type']=}) doesn't match "
                       f"({arr.dtype=})")
    if "shape" in metadata and metadata["shape"] != arr.shape:
      raise ValueError(f"Provided shape ({metadata['shape']=}) doesn't match ({arr.shape=})")
    if zarr3:
      chunk_shape = metadata["chunk_grid"]["configuration"]["chunk_shape"]
      local_shape = _local_shape(arr)
      if not _divides(local_shape, chunk_shape):
        raise ValueError(f"Provided chunk shape {chunk_shape} does not divide the local shape "
                         f"of the array {local_shape}")
  found = spec["kvstore"]["base"]["path"] if ocdbt else spec["kvstore"]["path"]
  if str(found) != str(path):
    raise ValueError(f"Provided {path=} does not match the spec path: {spec['kvstore']}")


def _spec_has_metadata(tree):
  return isinstance(tree, dict) and (
      "metadata" in tree or any(_spec_has_metadata(v) for v in tree.values()))


def _bucket_kvstore(ckpt_path: str, scheme: str, driver: str):
  m = re.fullmatch(f"^{scheme}://([^/]*)/(.*)$", ckpt_path, re.DOTALL)
  if m is None:
    raise ValueError("The ckpt_path should contain the bucket name and the file path inside "
                     f"the bucket. Got: {ckpt_path}")
  return {"driver": driver, "bucket": m.group(1), "path": m.group(2)}


def _get_kvstore_for_gcs(ckpt_path: str):
  return _bucket_kvstore(ckpt_path, "gs", "gcs")


def _get_kvstore_for_s3(ckpt_path: str):
  return _bucket_kvstore(ckpt_path, "s3", "s3")


def get_tensorstore_spec(ckpt_path: str | PathLike[str], ocdbt: bool = True,
                         process_idx: int | None = None, arr=None,
                         driver: str = _TS_ARRAY_DRIVER) -> dict[str, Any]:
  """The TensorStore spec of an array stored at `ckpt_path` (a local path, gs:// or s3://).

  With `ocdbt` the array is the key named by the path's last part in an OCDBT store at its
  parent (then a local path must be absolute); `process_idx` puts it under `process_<i>/`;
  with `arr` the spec also holds the metadata for writing it.
  """
  path = re.sub(r"^(gs|s3):/", r"\1://", os.path.normpath(str(ckpt_path)))
  if process_idx is not None:
    parent, name = os.path.split(path)
    path = os.path.join(parent, _PROCESS_DIR_FORMAT.format(process_idx), name)
  scheme = next((s for s in ("gs", "s3") if path.startswith(f"{s}://")), None)
  spec: dict[str, Any] = {"driver": driver, "kvstore": {}}
  if ocdbt:
    full, (path, entry_key) = path, os.path.split(path)
    if scheme and re.fullmatch(f"^{scheme}://([^/]*)/(.*)$", path) is None:
      raise ValueError("Using OCDBT requires the bucket name, the directory name and the "
                       f"array name, your path is: {full}")
  if scheme == "gs":
    base = _get_kvstore_for_gcs(path)
  elif scheme == "s3":
    base = _get_kvstore_for_s3(path)
  else:
    base = {"driver": _DEFAULT_BASE_DRIVER, "path": path}
  if ocdbt:
    if scheme is None and not os.path.isabs(path):
      raise ValueError(f"Checkpoint path should be absolute. Got {path}")
    spec["kvstore"] = {"driver": "ocdbt", "base": base, "path": entry_key}
  else:
    spec["kvstore"] = base
  if arr is not None:
    spec["metadata"] = _get_tensorstore_metadata(arr, driver=str(spec["driver"]))
  return spec


async def _create_async_array_from_callback(global_shape, dtype, inp_sharding,
                                            data_callback: Callable[..., Awaitable[Any]]):
  """The array laid out as `inp_sharding` whose device d's piece is
  `await data_callback(index of d, d)`."""
  indices = inp_sharding.devices_indices_map(tuple(global_shape))
  devices = inp_sharding._addressable_device_assignment
  pieces = await asyncio.gather(*[data_callback(indices[d], d) for d in devices])
  return make_array_from_single_device_arrays(tuple(global_shape), inp_sharding, list(pieces),
                                              dtype=dtype)


async def _transfer_shard_to_host(shard) -> np.ndarray:
  await asyncio.sleep(0)    # let other transfers start
  return np.asarray(shard.data)


async def combine_kvstores(combined_kvstore: dict[str, Any], kvstores: list[dict[str, Any]],
                           context: ts.Context | None = _TS_CONTEXT) -> None:
  """Copy every key of `kvstores` into `combined_kvstore` in one transaction (not safe to run
  from several processes)."""
  combined, stores = await asyncio.gather(
      ts.KvStore.open(combined_kvstore, context=context),
      asyncio.gather(*[ts.KvStore.open(k, context=context) for k in kvstores]))
  txn = ts.Transaction()
  await asyncio.gather(*[s.experimental_copy_range_to(combined.with_transaction(txn))
                         for s in stores])
  await txn.commit_async()


async def async_serialize(arr_inp, tensorstore_spec, commit_future=None, context=_TS_CONTEXT,
                          chunk_layout=_TS_CHUNK_LAYOUT, primary_host: int | None = None,
                          replica_id: int = 0, transaction: ts.Transaction | None = None):
  """Write the array `arr_inp` (this process's shards of replica `replica_id`) as the
  TensorStore `tensorstore_spec` (metadata added when it has none).

  With a list `commit_future`, the open and commit futures are appended to it instead of
  awaited. `primary_host` (default: every process) creates the array; `transaction` is a
  TensorStore transaction to write in.
  """
  if (isinstance(arr_inp, Array) and backend.process_count() > 1
      and arr_inp.is_fully_addressable):
    raise ValueError(
        "Passing fully addressable arrays to a multiprocess serialization is not allowed, as "
        "this may lead to a race condition between processes. Serialization have failed for "
        f"the array with the path from kvstore: \"{tensorstore_spec['kvstore']}\".")
  if not _spec_has_metadata(tensorstore_spec):
    tensorstore_spec["metadata"] = _get_tensorstore_metadata(
        arr_inp, driver=tensorstore_spec["driver"])
  if tensorstore_spec["driver"] == "zarr" and "dtype" not in tensorstore_spec:
    tensorstore_spec["dtype"] = np.dtype(arr_inp.dtype).name
  open_kw = dict(context=context, chunk_layout=chunk_layout, transaction=transaction)
  if primary_host is None or backend.process_index() == primary_host:
    created = ts.open(ts.Spec(tensorstore_spec), create=True, open=True, **open_kw)
    if commit_future is not None:
      commit_future.append(created)
    else:
      await created
  # Without I/O: the store's handle from the spec's metadata.
  t = await ts.open(ts.Spec(tensorstore_spec), open=True, assume_metadata=True, **open_kw)
  owned = isinstance(arr_inp, Array)

  async def write(shard):
    if shard.replica_id != replica_id:
      return
    data = await _transfer_shard_to_host(shard)
    fut = t[shard.index].write(data, can_reference_source_data_indefinitely=owned)
    if commit_future is not None:
      commit_future.append(fut.commit)
      await fut.copy
    else:
      await fut.commit

  shards = arr_inp.addressable_shards if isinstance(arr_inp, Array) else _numpy_shards(arr_inp)
  return await asyncio.gather(*[write(s) for s in shards])


class _HostShard:
  """The one shard of a NumPy array."""
  replica_id = 0

  def __init__(self, data):
    self.data, self.index = data, (slice(None),) * np.ndim(data)


def _numpy_shards(x):
  return [_HostShard(np.asarray(x))]


def _run_serialization(arrays, tensorstore_specs):
  """Write each array (a pytree of them) with its spec (a tree with the arrays' structure as
  a prefix) and wait for all."""
  async def run():
    return await asyncio.gather(*tree_leaves(tree_map(async_serialize, arrays,
                                                      tensorstore_specs)))
  asyncio.run(run())


def estimate_read_memory_footprint(t: ts.TensorStore, domain: ts.IndexDomain) -> int:
  """The bytes reading `domain` of `t` touches: whole chunks covering it (the domain itself
  for an unchunked driver)."""
  itemsize = t.dtype.numpy_dtype.itemsize
  template = t.chunk_layout.read_chunk_template
  domain = t.domain if domain is None else domain
  if not all(template[i].finite for i in range(t.rank)):
    return domain.size * itemsize
  nbytes = itemsize
  for i in range(t.rank):
    size = template.shape[i]
    lo = domain.origin[i] - template.origin[i]
    hi = lo + domain.shape[i]
    nbytes *= -(-hi // size) * size - lo // size * size
  return nbytes


def _sharding_and_layout(in_type, dtype):
  if isinstance(in_type, Format):
    return in_type.sharding, in_type.layout, dtype
  if isinstance(in_type, api.ShapeDtypeStruct):
    sharding = in_type.sharding
    if isinstance(sharding, Format):
      return sharding.sharding, sharding.layout, in_type.dtype if dtype is None else dtype
    return sharding, None, in_type.dtype if dtype is None else dtype
  if not isinstance(in_type, Sharding):
    raise TypeError("sharding passed to deserialization should be specified, concrete and an "
                    f"instance of `jax.sharding.Sharding`. Got {in_type}")
  return in_type, None, dtype


async def async_deserialize(in_type, tensorstore_spec, global_shape=None, dtype=None,
                            byte_limiter: _LimitInFlightBytes | None = None,
                            context=_TS_CONTEXT, chunk_layout=_TS_CHUNK_LAYOUT,
                            assume_metadata: bool = False):
  """Read the TensorStore `tensorstore_spec` into an array laid out as `in_type` (a Sharding,
  a Format or a ShapeDtypeStruct with a sharding), as `global_shape` (zero-filled beyond the
  stored array; default: its shape) and `dtype` (default: the stored one)."""
  sharding, layout, dtype = _sharding_and_layout(in_type, dtype)
  del layout    # (arrax's arrays use the default layout)
  t = await ts.open(tensorstore_spec, open=True, assume_metadata=assume_metadata,
                    context=context, chunk_layout=chunk_layout)
  shape = tuple(t.shape if global_shape is None else global_shape)
  stored_dtype = t.dtype.numpy_dtype
  dtype = stored_dtype if dtype is None else dtype
  shard_shape = sharding.shard_shape(shape)

  async def read(index, device):
    wanted = ts.IndexTransform(input_shape=shape)[index].domain
    present = t.domain.intersect(wanted)
    nbytes = estimate_read_memory_footprint(t, present)
    if byte_limiter is not None:
      await byte_limiter.wait_for_bytes(nbytes)
    host = np.zeros(shard_shape, dtype=stored_dtype)
    dest = ts.array(host)[ts.d[:].translate_to[wanted.origin]][present]
    await dest.write(t[present])
    host = host.astype(dtype)
    out = api.device_put(host, SingleDeviceSharding(device))
    if byte_limiter is not None:
      await byte_limiter.release_bytes(nbytes)
    return out

  return await _create_async_array_from_callback(
      shape, dtypes.canonicalize_dtype(np.dtype(dtype)), sharding, read)


def _run_deserialization(shardings, tensorstore_specs, global_shapes=None, dtypes=None,
                         concurrent_gb: int = 32):
  """Read each spec as its sharding says (the legacy list API); `global_shapes` and `dtypes`
  optional lists as `async_deserialize` takes them."""
  n = len(tensorstore_specs)
  shapes = [None] * n if global_shapes is None else global_shapes
  dts = [None] * n if dtypes is None else dtypes

  async def run():
    limiter = _LimitInFlightBytes(concurrent_gb * 10 ** 9)
    return await asyncio.gather(*[
        async_deserialize(s, spec, shape, dt, byte_limiter=limiter)
        for s, spec, shape, dt in zip(list(shardings), list(tensorstore_specs), shapes, dts)])
  return asyncio.run(run())

