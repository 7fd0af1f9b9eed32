"""Asynchronous checkpointing of arrays through TensorStore
(`jax.experimental.array_serialization.serialization`).

`GlobalAsyncCheckpointManager.serialize` starts the writes, then commits them in a background
thread (with several processes: a barrier in the distributed runtime, after which process 0
runs the commit callback and marks the checkpoint done in the key-value store).
"""
from __future__ import annotations

import abc
import asyncio
import functools
import itertools
import logging
import re
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from jaxlib import _jax

from arrax._src import backend, distributed, monitoring
from arrax._src.array_serialization import tensorstore_impl as ts_impl
from arrax._src.tree_util import tree_leaves, tree_map

# The older zarr format, without OCDBT, as this module's callers expect.
_get_metadata = functools.partial(ts_impl._get_tensorstore_metadata, driver="zarr")
get_tensorstore_spec = functools.partial(ts_impl.get_tensorstore_spec, driver="zarr",
                                         ocdbt=False)

_CHECKPOINT_SUCCESS = "checkpoint_write_success"
_module_unique_count = itertools.count()
_DISTRIBUTED_SYSTEM_MSG = ("Please initialize the distributed system via "
                           "`jax.distributed.initialize()` at the start of your program.")
_REMOTE_URL_PREFIXES = ["gs://", "s3://"]
_REMOTE_DRIVER_VALIDATIONS = [{"driver": "gcs", "path_regex": None},
                              {"driver": "s3", "path_regex": None}]
_BARRIER_TIMED_OUT_MSG = (
    "Suggestions for possible fixes:\n"
    "* Check the logs to see if one or more processes failed.\n"
    "* Make sure the training and checkpointing endpoints are close geographically.\n"
    "* Try increasing the timeout you pass to GlobalAsyncCheckpointManager.")

logger = logging.getLogger(__name__)


class BarrierTimeoutError(Exception):
  """The processes did not all reach the checkpoint's barrier in time."""


def is_remote_storage(tspec: dict[str, Any] | str) -> bool:
  """Whether a spec (or a KvStore URL) names cloud storage (gs://, s3://, gcs or s3 drivers);
  storage mounted as a file system is not detected."""
  if isinstance(tspec, str):
    return any(tspec.startswith(p) for p in _REMOTE_URL_PREFIXES)
  for key in ("base", "kvstore"):
    if key in tspec:
      return is_remote_storage(tspec[key])
  for rule in _REMOTE_DRIVER_VALIDATIONS:
    if tspec.get("driver") == rule["driver"]:
      if rule["path_regex"] is None or re.match(rule["path_regex"], tspec["path"]):
        return True
  return False


def _get_key(key: int):
  return f"tensorstore_checkpoint_{key}"


class _StrictABCMeta(abc.ABCMeta):
  """ABCMeta without virtual subclasses (`register` raises)."""

  def register(cls, subclass):
    raise NotImplementedError(f"{cls} does not support virtual subclasses")

  __instancecheck__ = type.__instancecheck__
  __subclasscheck__ = type.__subclasscheck__


class GlobalAsyncCheckpointManagerBase(metaclass=_StrictABCMeta):
  """The interface of an asynchronous checkpointer: one checkpoint may be committing in the
  background while the program goes on; the next `serialize` waits for it."""
  __slots__ = ()

  @abc.abstractmethod
  def check_for_errors(self):
    """Raise the background commit's error, if any (does not block)."""

  @abc.abstractmethod
  def wait_until_finished(self):
    """Block until the background commit has finished."""

  @abc.abstractmethod
  def serialize(self, arrays, tensorstore_specs, *, on_commit_callback: Callable[[], None]):
    """Write arrays to TensorStore."""

  @abc.abstractmethod
  def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None):
    """Read arrays from TensorStore."""


class AsyncManager:
  """Runs a checkpoint's commit in a background thread and reports its errors."""

  def __init__(self, timeout_secs=300):
    self._timeout_secs = timeout_secs
    self._timeout_in_ms = timeout_secs * 1000
    self._commit_futures = None
    self._thread = None
    self._exception = None
    if backend.process_count() > 1 and distributed.global_state.client is None:
      raise ValueError(_DISTRIBUTED_SYSTEM_MSG)
    self._client = distributed.global_state.client
    self._count: int | None = None

  def __del__(self):
    if self._thread is not None and self._thread.is_alive():
      logger.warning("Please add `.wait_until_finished()` in the main thread before your "
                     "program finishes because there is a possibility of losing errors raised "
                     "if the this class is deleted before writing is completed.")

  def _thread_func(self):
    try:
      process, nproc = backend.process_index(), backend.process_count()
      logger.info("Starting commit to storage layer by process: %s", process)
      start = time.time()
      for future in self._commit_futures:
        future.result()
      logger.info("Finished committing to storage layer by process: %s", process)
      key = None
      if nproc > 1:
        key = _get_key(self._count)
        self._client.wait_at_barrier(key, self._timeout_in_ms)
      if process == 0:
        if self._on_commit_callback is not None:
          self._on_commit_callback()
          logger.info("on_commit_callback successfully ran!")
        if nproc > 1:
          self._client.key_value_set(key, _CHECKPOINT_SUCCESS)
      monitoring.record_event_duration_secs(
          "/jax/checkpoint/write/async/thread_duration_sec", time.time() - start)
    except Exception as e:  # reported by check_for_errors
      self._exception = e

  def _start_async_commit(self, on_commit_callback):
    self._count = next(_module_unique_count)
    self._on_commit_callback = on_commit_callback
    self._thread = threading.Thread(target=self._thread_func)
    self._thread.start()

  def check_for_errors(self):
    """Raise (once) the error the background commit hit, if any."""
    if self._exception is None:
      return
    exc, self._exception = self._exception, None
    if (isinstance(exc, _jax.JaxRuntimeError)
        and "DEADLINE_EXCEEDED: Barrier timed out" in str(exc)):
      raise BarrierTimeoutError("\n".join([str(exc), _BARRIER_TIMED_OUT_MSG]))
    raise exc

  def wait_until_finished(self):
    """Join the background commit and raise its error; with several processes, also wait
    until process 0 has marked the checkpoint done."""
    if self._thread is not None:
      self._thread.join()
      self._thread = None
      logger.info("Thread joined successfully")
    self.check_for_errors()
    if backend.process_count() > 1 and self._count is not None:
      self._client.blocking_key_value_get(_get_key(self._count), self._timeout_in_ms)

  def _add_futures(self, futures):
    self._commit_futures = futures


class GlobalAsyncCheckpointManager(AsyncManager, GlobalAsyncCheckpointManagerBase):
  """Writes arrays through TensorStore asynchronously (and reads them back)."""

  def serialize(self, arrays, tensorstore_specs, *,
                on_commit_callback: Callable[[], None] | None = None,
                transaction: ts_impl.Transaction | None = None):
    """Start writing `arrays` to their `tensorstore_specs`: returns once the data is copied;
    the commit runs in the background, then `on_commit_callback` runs (in process 0, after
    every process has committed)."""
    logger.info("Waiting for previous serialization to finish.")
    self.wait_until_finished()
    futures: list = []

    async def run():
      pairs = tree_leaves(tree_map(
          lambda a, spec: ts_impl.async_serialize(a, spec, commit_future=futures,
                                                  transaction=transaction),
          arrays, tensorstore_specs))
      return await asyncio.gather(*pairs)

    asyncio.run(run())
    self._add_futures(futures)
    self._start_async_commit(on_commit_callback)

  def serialize_with_paths(self, arrays: Sequence[Any], paths: Sequence[str], *,
                           on_commit_callback: Callable[[], None] | None = None,
                           transaction: ts_impl.Transaction | None = None):
    """`serialize` with the zarr specs of `paths`."""
    specs = tree_map(get_tensorstore_spec, paths)
    return self.serialize(arrays, specs, on_commit_callback=on_commit_callback,
                          transaction=transaction)

  def deserialize(self, shardings, tensorstore_specs, global_shapes=None, dtypes=None,
                  concurrent_gb: int = 32):
    """Wait for any write in progress, then read the specs as `run_deserialization` does."""
    self.wait_until_finished()
    return ts_impl._run_deserialization(shardings, tensorstore_specs, global_shapes, dtypes,
                                        concurrent_gb)

  def deserialize_with_paths(self, shardings, paths: Sequence[str], global_shapes=None,
                             dtypes=None, concurrent_gb: int = 32):
    """`deserialize` with the zarr specs of `paths`."""
    specs = tree_map(get_tensorstore_spec, paths)
    return self.deserialize(shardings, specs, global_shapes, dtypes, concurrent_gb)
