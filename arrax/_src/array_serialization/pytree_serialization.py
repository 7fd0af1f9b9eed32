"""Saving and loading pytrees of arrays (`jax.experimental.array_serialization.pytree_serialization`).

A checkpoint directory holds `pytreedef.json` (the structure, as pytree_serialization_utils
stores it, and one description per leaf: `Array(float32[2, 3])` or null) and `array_store/`,
one OCDBT key-value store with leaf i's array under the key "i" (zarr3). The layout is JAX
0.10.2's, so either library loads what the other saved.
"""
from __future__ import annotations

import asyncio
import json
import logging
import os
import pathlib
import re
import shutil
import threading
from concurrent.futures import ThreadPoolExecutor
from os import PathLike
from typing import Any
from uuid import UUID, uuid4

import numpy as np

from arrax._src import api, backend, distributed, multihost_utils
from arrax._src.api_util import flatten_axes
from arrax._src.array import Array
from arrax._src.array_serialization import pytree_serialization_utils as utils
from arrax._src.array_serialization import tensorstore_impl as ts_impl
from arrax._src.layout import Format
from arrax._src.tree_util import (pub_tree_flatten, pub_tree_leaves, pub_tree_map,
                                  pub_tree_structure, tree_unflatten)

try:
  from etils import epath as _epath
except ImportError:
  _epath = None

logger = logging.getLogger(__name__)

_THREADING_SAVE_LOCK = threading.Lock()
_REMOTE_URL_PREFIXES = ["gs://", "s3://"]
_PYTREEDEF_FILE = "pytreedef.json"
_ARCHIVE_NAME = "archive.zip"
_USE_OCDBT = True
_MAX_PATH_LENGTH = 4096
_ARRAY_STORE_DIRNAME = "array_store"
_ARRAY_TYPE_FORMAT = "Array({dtype}[{shape}])"
_ARRAY_TYPE_REGEX = r"Array\(([a-zA-Z0-9_]+)\[([0-9, ]*)\]\)"
_MAX_CONCURRENCY = 32
_TIMEOUT_SEC = 30

PyTreeT = Any

__all__ = ["save", "load", "load_pytreedef", "nonblocking_load", "nonblocking_save"]

_is_none = lambda x: x is None   # noqa: E731


def _get_unique_sync_key() -> str | None:
  """A barrier name every process agrees on (process 0's random UUID); None with one process."""
  if backend.process_count() == 1:
    return None
  ours = np.frombuffer(uuid4().bytes, dtype=np.int32)
  shared = multihost_utils.broadcast_one_to_all(ours)
  return f"jax_sync_key_{UUID(bytes=np.asarray(shared).tobytes())}"


def _is_str_same_on_all_hosts(path: str | PathLike[str]) -> bool:
  """Whether every process names the same path (False with one process)."""
  if backend.process_count() <= 1:
    return False
  raw = str(path).encode("utf-8")
  if len(raw) > _MAX_PATH_LENGTH:
    raise ValueError(f"Path exceeds maximum length of {_MAX_PATH_LENGTH} in multiprocess case.")
  padded = np.zeros(_MAX_PATH_LENGTH, np.uint8)
  padded[:len(raw)] = np.frombuffer(raw, np.uint8)
  every = multihost_utils.process_allgather(padded)
  return bool(np.all(every[0] == every[1:]))


def _sync_on_key(key: str | None, extra_tag: str = "") -> None:
  if key is None:
    return
  client = distributed.global_state.client
  if client is not None:
    client.wait_at_barrier(f"{key}-{extra_tag}" if extra_tag else key,
                           timeout_in_ms=_TIMEOUT_SEC * 1000)


def _is_array_like(x):
  return isinstance(x, (Array, np.ndarray))


def _leaf_to_desc(leaf) -> str:
  if leaf is None:
    return "null"
  if _is_array_like(leaf):
    return _ARRAY_TYPE_FORMAT.format(dtype=leaf.dtype.name,
                                     shape=", ".join(map(str, leaf.shape)))
  return type(leaf).__name__


def _desc_to_leaf(leaf_desc):
  if leaf_desc is None:
    return None
  m = re.match(_ARRAY_TYPE_REGEX, leaf_desc)
  if m is None:
    return leaf_desc
  dtype, dims = m.groups()
  shape = [int(d) for d in dims.split(",") if d.strip()]
  return api.ShapeDtypeStruct(shape, np.dtype(dtype))


def _is_remote_path(path: str | PathLike[str]):
  # (pathlib collapses "gs://" to "gs:/")
  return any(str(path).startswith(p[:-1]) for p in _REMOTE_URL_PREFIXES)


def _norm_path(path: str | PathLike[str]) -> Any:
  if _is_remote_path(path):
    return _epath.Path(path) if _epath is not None else pathlib.Path(path)
  return pathlib.Path(path).expanduser().resolve()


def _rm_dir(root: Any) -> None:
  if _is_remote_path(root):
    root.rmtree()
  else:
    shutil.rmtree(root)


def _set_up_destination(root, overwrite: bool, distinct_locations: bool,
                        sync_key: str | None) -> None:
  """Empty the destination (only if it holds nothing but a previous checkpoint) when
  `overwrite`, else refuse a non-empty one."""
  entries = list(root.iterdir()) if root.exists() else []
  if not overwrite:
    if entries:
      raise ValueError(f"Files already exist at path: `{root}`, but you specified "
                       f"`{overwrite=}`")
    return
  if entries:
    extra = [p for p in entries if p.name not in (_PYTREEDEF_FILE, _ARCHIVE_NAME,
                                                   _ARRAY_STORE_DIRNAME)]
    if extra:
      raise RuntimeError(
          "Refusing to work on a directory that is not a previous checkpoint. Unrecognized "
          f"paths: {extra}. Remove them manually if you're sure you want to use {root} as the "
          "checkpoint directory.")
    if backend.process_index() == 0 or distinct_locations:
      _rm_dir(root)
  _sync_on_key(sync_key, "overwrite")


def _prepare_directory(root, overwrite: bool, distinct_locations: bool, sync_key: str | None):
  """Check and set up the destination `root` (a `_norm_path`), then create it (RuntimeError
  if that fails)."""
  _set_up_destination(root, overwrite, distinct_locations, sync_key)
  if not _is_remote_path(root) and (distinct_locations or backend.process_index() == 0):
    root.mkdir(exist_ok=True)
    if not root.is_dir():
      raise RuntimeError(f"Could not create destination directory at {root}")
  _sync_on_key(sync_key, "mkdir")


def _write_arrays(array_store_path, arrs, arr_leaf_ids, ts_specs, distinct_locations: bool):
  """Write each array as key `leaf id` of the OCDBT store at `array_store_path` (per-process
  stores when several processes write one location)."""
  process_idx = (backend.process_index()
                 if not distinct_locations and backend.process_count() > 1 else None)
  specs = [ts_impl.merge_nested_ts_specs(
               ts_impl.get_tensorstore_spec(array_store_path / str(i), ocdbt=_USE_OCDBT,
                                            process_idx=process_idx, arr=a), user)
           for i, a, user in zip(arr_leaf_ids, arrs, ts_specs)]
  if specs:
    base = specs[0]["kvstore"]["base"]["path"]
    for spec, a in zip(specs, arrs):
      ts_impl.verify_tensorstore_spec(spec, a, base, ocdbt=_USE_OCDBT, check_metadata=True)

  async def write_all():
    await asyncio.gather(*[ts_impl.async_serialize(a, s, primary_host=None)
                           for a, s in zip(arrs, specs)])
  asyncio.run(write_all())


def _finalize_array_store(kvstore_path, distinct_locations: bool):
  """With several processes writing one location, process 0 links their per-process stores
  into the final one."""
  if distinct_locations or backend.process_count() == 1 or backend.process_index() != 0:
    return
  key_path = os.path.join(kvstore_path, "dummy_key")

  def kvstore(i):
    store = ts_impl.get_tensorstore_spec(key_path, ocdbt=True, process_idx=i)["kvstore"]
    store.pop("path")
    return store

  asyncio.run(ts_impl.combine_kvstores(
      kvstore(None), [kvstore(i) for i in range(backend.process_count())]))


def _write_pytreedef(directory, pytree_repr: dict[str, Any], distinct_locations: bool):
  if backend.process_index() == 0 or distinct_locations:
    (_norm_path(directory) / _PYTREEDEF_FILE).write_text(json.dumps(pytree_repr, indent=2))


def _tree_broadcast(a, b, is_leaf=_is_none):
  """The prefix tree `a` broadcast to the structure of `b` (flatten_axes' error on a
  mismatch)."""
  leaves, struct = pub_tree_flatten(a, is_leaf=is_leaf)
  ids = tree_unflatten(struct, range(len(leaves)))
  expanded = flatten_axes("tree_broadcast", pub_tree_structure(b, is_leaf=is_leaf), ids)
  return pub_tree_map(lambda i: leaves[i], expanded)


_serialization_executor = ThreadPoolExecutor(max_workers=_MAX_CONCURRENCY)


def _remote_check(directory):
  if _is_remote_path(directory) and _epath is None:
    raise AssertionError("For checkpointing using remote URLs (e.g., gs, s3) you need `etils` "
                         "module installed. You can install it using `pip install etils`.")


def save(data: PyTreeT, directory: str | PathLike[str], *, overwrite: bool = True,
         ts_specs: PyTreeT | None = None) -> None:
  """Save a pytree whose leaves are arrays or None to `directory` (a local path, or gs:// /
  s3:// with `etils`); `overwrite` replaces a previous checkpoint there; `ts_specs` is a prefix
  tree of TensorStore specs merged into the default ones.

  Example:
    >>> save({"a": jnp.array([1, 2]), "b": None}, "/tmp/ckpt")
  """
  with _THREADING_SAVE_LOCK:
    return _save(data, directory, overwrite=overwrite, ts_specs=ts_specs)


def _save(data, directory, *, overwrite=True, ts_specs=None) -> None:
  sync_key = _get_unique_sync_key()
  if _is_remote_path(directory) and _epath is None:
    raise RuntimeError("For saving to remote URLs (e.g., gs, s3) you need the `etils` module "
                       "installed. You can install it using `pip install etils`.")
  ts_specs = _tree_broadcast(ts_specs, data, is_leaf=ts_impl.is_tensorstore_spec_leaf)
  flat, treedef = pub_tree_flatten(data, is_leaf=_is_none)
  if not all(x is None or _is_array_like(x) for x in flat):
    raise ValueError("For serialization, all leaves must be either None or jax.Array-like "
                     "objects.")
  distinct_locations = not _is_str_same_on_all_hosts(directory)
  if backend.process_count() > 1 and distinct_locations:
    raise ValueError("Saving to different locations on different hosts is not supported, "
                     "because it is extremely fragile. Consider using a single location.")
  root = _norm_path(directory)
  repr_ = utils.serialize_pytreedef(treedef)
  repr_[utils._LEAF_IDS_KEY] = [None if x is None else _leaf_to_desc(x) for x in flat]
  _prepare_directory(root, overwrite, distinct_locations, sync_key)
  futures = [_serialization_executor.submit(_write_pytreedef, root, repr_, distinct_locations)]
  ids = [i for i, x in enumerate(flat) if _is_array_like(x)]
  specs = pub_tree_leaves(ts_specs, is_leaf=ts_impl.is_tensorstore_spec_leaf)
  futures.append(_serialization_executor.submit(
      _write_arrays, root / _ARRAY_STORE_DIRNAME, [flat[i] for i in ids], ids,
      [specs[i] for i in ids], distinct_locations))
  for f in futures:
    f.result()
  _sync_on_key(sync_key, "array_serialization")
  if ids and _USE_OCDBT:   # (from a thread: asyncio.run must not nest)
    _serialization_executor.submit(_finalize_array_store, root / _ARRAY_STORE_DIRNAME,
                                   distinct_locations).result()
  _sync_on_key(sync_key, "end")


def _read_arrays(array_store_path, arr_leaf_ids: list[int], ts_specs: list[Any],
                 shardings: list[Any]):
  """{leaf id: array read from the store with its sharding}."""
  store = _norm_path(array_store_path)
  limiter = ts_impl._LimitInFlightBytes(10 * 1024 ** 3)
  specs = [ts_impl.merge_nested_ts_specs(
               ts_impl.get_tensorstore_spec(store / str(i), ocdbt=_USE_OCDBT), user)
           for i, user in zip(arr_leaf_ids, ts_specs)]
  if specs:
    base = specs[0]["kvstore"]["base"]["path"]
    for spec in specs:
      ts_impl.verify_tensorstore_spec(spec, arr=None, path=base, ocdbt=_USE_OCDBT,
                                      check_metadata=False)

  async def read_all():
    return await asyncio.gather(*[ts_impl.async_deserialize(s, spec, byte_limiter=limiter)
                                  for s, spec in zip(shardings, specs)])
  return dict(zip(arr_leaf_ids, asyncio.run(read_all())))


def load_pytreedef(directory: str | PathLike[str]) -> PyTreeT:
  """The structure saved in `directory`, with arrays as ShapeDtypeStructs."""
  _remote_check(directory)
  raw = json.loads((_norm_path(directory) / _PYTREEDEF_FILE).read_text())
  leaves = [_desc_to_leaf(d) for d in raw[utils._LEAF_IDS_KEY]]
  return tree_unflatten(utils.deserialize_pytreedef(raw), leaves)


def load(directory: str | PathLike[str], shardings: PyTreeT, *, mask: PyTreeT | None = None,
         ts_specs: PyTreeT | None = None) -> PyTreeT:
  """Load the pytree saved in `directory`, each array laid out as `shardings` says (a prefix
  tree of Shardings or of ShapeDtypeStructs with one); leaves where the boolean prefix tree
  `mask` is False are None.

  Example:
    >>> load("/tmp/ckpt", SingleDeviceSharding(jax.devices()[0]))
  """
  _remote_check(directory)
  root = _norm_path(directory)
  assert root.is_dir(), f"Checkpoint directory {root} does not exist"
  pytree = load_pytreedef(directory)
  shardings = _tree_broadcast(shardings, pytree)
  ts_specs = _tree_broadcast(ts_specs, pytree, is_leaf=ts_impl.is_tensorstore_spec_leaf)
  if mask is not None:
    pytree = pub_tree_map(lambda m, x: x if m else pub_tree_map(lambda _: None, x),
                          mask, pytree)
  flat, treedef = pub_tree_flatten(pytree, is_leaf=_is_none)
  shardings_flat = pub_tree_leaves(shardings, is_leaf=_is_none)
  if any(isinstance(s, Format) for s in shardings_flat):
    raise NotImplementedError(
        "Deserialization with `Format` instead of `Sharding` is not currently supported. Pass "
        "ShapeDtypeStruct(shape, dtype, sharding=format) instead.")
  specs_flat = pub_tree_leaves(ts_specs, is_leaf=ts_impl.is_tensorstore_spec_leaf)
  ids = [i for i, x in enumerate(flat) if x is not None]
  arrays = _serialization_executor.submit(
      _read_arrays, root / _ARRAY_STORE_DIRNAME, ids, [specs_flat[i] for i in ids],
      [shardings_flat[i] for i in ids]).result()
  return tree_unflatten(treedef, [arrays.get(i) for i in range(len(flat))])


def nonblocking_save(data: PyTreeT, directory: str | PathLike[str], *, overwrite: bool = True,
                     ts_specs: PyTreeT | None = None) -> utils.PyTreeFuture:
  """`save` in the background: a future (result None) whose `pytree` has the arrays as
  ShapeDtypeStructs."""
  fut = utils.PyTreeFuture(_serialization_executor.submit(
      save, data, directory, overwrite=overwrite, ts_specs=ts_specs))
  fut.pytree = pub_tree_map(
      lambda x: api.ShapeDtypeStruct(x.shape, x.dtype) if _is_array_like(x) else x, data)
  return fut


def nonblocking_load(directory: str | PathLike[str], shardings: PyTreeT, *,
                     mask: PyTreeT | None = None,
                     ts_specs: PyTreeT | None = None) -> utils.PyTreeFuture:
  """`load` in the background: a future of the loaded pytree whose `pytree` is the saved
  structure (arrays as ShapeDtypeStructs)."""
  fut = utils.PyTreeFuture(_serialization_executor.submit(
      load, directory, shardings, mask=mask, ts_specs=ts_specs))
  fut.pytree = load_pytreedef(directory)
  return fut
