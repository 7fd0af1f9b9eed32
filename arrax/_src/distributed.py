"""`arrax.distributed`: join a job of several processes (jax.distributed).

Process 0 starts jaxlib's coordination service; every process connects a distributed runtime
client to it. The CPU client made afterwards (`backend._make_cpu_client`) is told the process
id, the number of processes and that client, so `devices()` lists the devices of every process
and cross-process collectives go through gloo over TCP (`jax_cpu_collectives_implementation`).
Arguments left unset are read, as JAX does, from the cluster environment detected
(`_src/clusters.py`: Open MPI's and Slurm's launcher variables; mpi4py when named).
"""
from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Sequence

from jaxlib import _jax

from arrax._src import backend, clusters
from arrax._src.config import config

_logger = logging.getLogger(__name__)

global_state = backend.distributed_state


def _check_args(coordinator_address, num_processes, process_id):
  if coordinator_address is None:
    raise ValueError("coordinator_address should be defined.")
  if num_processes is None:
    raise ValueError("Number of processes must be defined.")
  if process_id is None:
    raise ValueError("The process id of the current process must be defined.")
  if not isinstance(process_id, int):
    raise TypeError(f"process_id must be a nonnegative int. Got process_id={process_id} of "
                    f"type {type(process_id)}.")
  if not isinstance(num_processes, int):
    raise TypeError(f"num_processes must be a positive int. Got num_processes={num_processes} "
                    f"of type {type(num_processes)}.")
  if not 0 <= process_id < num_processes:
    raise ValueError("process_id and num_processes must be nonnegative, with process_id < "
                     f"num_processes. Got process_id={process_id}, "
                     f"num_processes={num_processes}.")


def _partition_index(partition_index):
  if partition_index is not None:
    return partition_index
  if (env := os.environ.get("JAX_PARTITION_INDEX")) is not None:
    return int(env)
  if (env := os.environ.get("JAX_SLICE_INDEX")) is not None:
    warnings.warn("JAX_SLICE_INDEX has been deprecated. Please use JAX_PARTITION_INDEX "
                  "instead.", DeprecationWarning)
    return int(env)
  return None


def initialize(coordinator_address: str | None = None,
               num_processes: int | None = None,
               process_id: int | None = None,
               local_device_ids: int | Sequence[int] | None = None,
               cluster_detection_method: str | None = None,
               initialization_timeout: int = 300,
               heartbeat_timeout_seconds: int = 100,
               shutdown_timeout_seconds: int = 300,
               coordinator_bind_address: str | None = None,
               slice_index: int | None = None,
               partition_index: int | None = None):
  """Join a multi-process job; call it in every process before any computation.

  Process `process_id` (0 .. num_processes-1) connects to the coordinator at
  `coordinator_address` ("host:port"), which process 0 starts (listening on
  `coordinator_bind_address`, by default every address on that port). Afterwards `devices()`
  lists the devices of all processes and `local_devices()` this process's.
  """
  if backend.backends_are_initialized():
    raise RuntimeError("jax.distributed.initialize() must be called before any JAX calls that "
                       "might initialise the XLA backend. This includes any computation, but "
                       "also calls to jax.devices, jax.device_put, and others.")
  if partition_index is None and slice_index is not None:
    warnings.warn("`slice_index` has been deprecated. Please use `partition_index` instead.",
                  DeprecationWarning)
    partition_index = slice_index
  state = global_state
  coordinator_address = coordinator_address or os.environ.get("JAX_COORDINATOR_ADDRESS")
  if isinstance(local_device_ids, int):
    local_device_ids = [local_device_ids]
  if local_device_ids is None and (env_ids := os.environ.get("JAX_LOCAL_DEVICE_IDS")):
    local_device_ids = [int(i) for i in env_ids.split(",")]
  coordinator_address, num_processes, process_id, local_device_ids = clusters.detect(
      coordinator_address, num_processes, process_id, local_device_ids,
      cluster_detection_method, initialization_timeout)
  _check_args(coordinator_address, num_processes, process_id)
  state.coordinator_address = coordinator_address
  bind = (coordinator_bind_address or os.environ.get("JAX_COORDINATOR_BIND_ADDRESS")
          or "[::]:" + coordinator_address.rsplit(":", 1)[1])
  if local_device_ids:
    # (JAX restricts the visible GPUs to these; CPU devices are not restricted.)
    _logger.info("distributed: visible devices %s", ",".join(map(str, local_device_ids)))
  state.process_id = process_id
  proxies = ([k for k in os.environ if "_proxy" in k.lower()]
             if config.jax_check_proxy_envs else [])
  if proxies:
    _logger.warning("JAX detected proxy variable(s) in the environment as distributed setup: "
                    f"{' '.join(proxies)}. On some systems, this may cause a hang of "
                    "distributed.initialize and you may need to unset these ENV variable(s)")
  if process_id == 0:
    if state.service is not None:
      raise RuntimeError("distributed.initialize should only be called once.")
    _logger.info("Starting the distributed service on %s", bind)
    state.service = _jax.get_distributed_runtime_service(
        bind, num_processes, heartbeat_timeout=heartbeat_timeout_seconds,
        shutdown_timeout=shutdown_timeout_seconds,
        recoverable=config.jax_enable_recoverability)
  state.num_processes = num_processes
  if state.client is not None:
    raise RuntimeError("distributed.initialize should only be called once.")
  state.client = _jax.get_distributed_runtime_client(
      coordinator_address, process_id, init_timeout=initialization_timeout,
      use_compression=True, heartbeat_timeout=heartbeat_timeout_seconds)
  _logger.info("Connecting to the distributed service on %s", coordinator_address)
  state.client.connect()
  if config.jax_enable_preemption_service:
    if state.preemption_sync_manager is not None:
      raise RuntimeError("Preemption sync manager should only be initialized once.")
    state.preemption_sync_manager = _jax.create_preemption_sync_manager()
    state.preemption_sync_manager.initialize(state.client)
  state.partition_index = _partition_index(partition_index)


def is_initialized() -> bool:
  """Whether `initialize` has connected this process to a job."""
  return global_state.client is not None


def shutdown():
  """Leave the job: stop the preemption manager, the client and (process 0) the service.
  Does nothing when not initialized."""
  state = global_state
  if state.preemption_sync_manager is not None:
    state.preemption_sync_manager.shutdown()
    state.preemption_sync_manager = None
  if state.client is not None:
    state.client.shutdown()
    state.client = None
  if state.service is not None:
    state.service.shutdown()
    state.service = None
