"""Cluster environments `distributed.initialize()` reads its arguments from (JAX's ClusterEnv
registry): Open MPI and Slurm from their launchers' environment variables, mpi4py when asked
for by name (and importable), Kubernetes when the `kubernetes` package is installed, and the
Cloud TPU environments (never present here: arrax does not run on TPU VMs).

Each environment is a `ClusterEnv` subclass, registered when defined; `auto_detect_unset_
distributed_params` picks the first one present (or the one named by
`cluster_detection_method`) and fills the arguments the caller left unset.
"""
from __future__ import annotations

import importlib
import importlib.util
import logging
import os
import re
import textwrap
import warnings

_logger = logging.getLogger(__name__)

# The coordinator port of a job is picked from the last 4096 ephemeral ports.
_PORT_RANGE = 2 ** 12
_FIRST_PORT = 65535 - _PORT_RANGE + 1


class ClusterEnv:
  """A kind of cluster: whether this process runs in one, and the coordinator address, the
  number of processes and this process's id (and index on its host) it prescribes."""
  name: str = ""
  opt_in_only_method: bool = False   # detected only when named by cluster_detection_method
  _cluster_types: list = []

  def __init_subclass__(cls, **kwargs):
    super().__init_subclass__(**kwargs)
    cls._cluster_types.append(cls)

  @classmethod
  def auto_detect_unset_distributed_params(cls, coordinator_address, num_processes, process_id,
                                           local_device_ids, cluster_detection_method,
                                           initialization_timeout):
    """The four arguments of `initialize` with those left None filled from the environment
    detected (unchanged when none is)."""
    if cluster_detection_method is not None:
      env = next((e for e in cls._cluster_types if e.name == cluster_detection_method), None)
      if env is None:
        _logger.error("Automatic Distributed initialization can not proceed: %s is not "
                      "supported.", cluster_detection_method)
      elif not env.is_env_present():
        _logger.error("Automatic Distributed initialization can not proceed: %s is supported "
                      "but not functional in this environment.", cluster_detection_method)
    else:
      env = next((e for e in cls._cluster_types
                  if not e.opt_in_only_method and e.is_env_present()), None)
    if not env:
      _logger.debug("Could not find a known environment for initializing distributed JAX. "
                    "Known environments: %s", ", ".join(e.__name__ for e in cls._cluster_types))
      return coordinator_address, num_processes, process_id, local_device_ids
    _logger.debug("Initializing distributed JAX environment via %s", env.__name__)
    if coordinator_address is None:
      coordinator_address = env.get_coordinator_address(
          timeout_secs=initialization_timeout,
          override_coordinator_port=os.environ.get("JAX_COORDINATOR_PORT"))
    if num_processes is None:
      num_processes = env.get_process_count()
    if process_id is None:
      process_id = env.get_process_id()
    if local_device_ids is None and (local := env.get_local_process_id()) is not None:
      local_device_ids = [local]   # (one device per process: the one of its host index)
    return coordinator_address, num_processes, process_id, local_device_ids

  @classmethod
  def is_env_present(cls) -> bool:
    raise NotImplementedError("ClusterEnv subclasses must implement is_env_present")

  @classmethod
  def get_coordinator_address(cls, timeout_secs: int | None,
                              override_coordinator_port: str | None) -> str:
    raise NotImplementedError("ClusterEnv subclasses must implement get_coordinator_address")

  @classmethod
  def get_process_count(cls) -> int:
    raise NotImplementedError("ClusterEnv subclasses must implement get_process_count")

  @classmethod
  def get_process_id(cls) -> int:
    raise NotImplementedError("ClusterEnv subclasses must implement get_process_id")

  @classmethod
  def get_local_process_id(cls) -> int | None:
    """This process's index among those on its host (None: devices are not restricted)."""
    return None


def _env_int(name):
  return int(os.environ[name])


class OmpiCluster(ClusterEnv):
  """A job started by Open MPI's mpirun (its ORTE daemon's URI names the launcher's host)."""
  name: str = "ompi"

  @classmethod
  def is_env_present(cls) -> bool:
    return "OMPI_MCA_orte_hnp_uri" in os.environ

  @classmethod
  def get_coordinator_address(cls, timeout_secs, override_coordinator_port):
    # e.g. "1531576320.0;tcp://10.96.0.1,10.148.0.1:34911" or "...;tcp6://[fe80::1,...]:43370"
    uri = os.environ["OMPI_MCA_orte_hnp_uri"]
    if override_coordinator_port:
      port = override_coordinator_port
    else:   # the job id (a multiple of 4096) picks the port
      port = str(int(uri.split(".", 1)[0]) // _PORT_RANGE % _PORT_RANGE + _FIRST_PORT)
    m = re.search(r"tcp://(.+?)[,:]|tcp6://\[(.+?)[,\]]", uri)
    if m is None:
      raise RuntimeError("Could not parse coordinator IP address from Open MPI environment.")
    host = m.group(1) if m.group(1) is not None else m.group(2)
    return f"{host}:{port}"

  @classmethod
  def get_process_count(cls) -> int:
    return _env_int("OMPI_COMM_WORLD_SIZE")

  @classmethod
  def get_process_id(cls) -> int:
    return _env_int("OMPI_COMM_WORLD_RANK")

  @classmethod
  def get_local_process_id(cls) -> int | None:
    return _env_int("OMPI_COMM_WORLD_LOCAL_RANK")


_SLURM_VARS = ("SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS", "SLURM_PROCID",
               "SLURM_LOCALID")


class SlurmCluster(ClusterEnv):
  """A job step started by Slurm's srun: the coordinator runs on the step's first node."""
  name: str = "slurm"

  @classmethod
  def is_env_present(cls) -> bool:
    return all(v in os.environ for v in _SLURM_VARS)

  @classmethod
  def get_coordinator_address(cls, timeout_secs, override_coordinator_port):
    port = override_coordinator_port or str(_env_int("SLURM_JOB_ID") % _PORT_RANGE + _FIRST_PORT)
    # The first host of a node list: "node001", "node001,host2", "node[001-015],host2",
    # "node[001,007-015],host2".
    nodes = os.environ["SLURM_STEP_NODELIST"]
    cut = next((i for i, ch in enumerate(nodes) if ch in ",["), len(nodes))
    if cut == len(nodes) or nodes[cut] == ",":
      return f"{nodes[:cut]}:{port}"
    rest = nodes[cut + 1:]   # (after "[": the first number, up to "," or "-")
    end = next((i for i, ch in enumerate(rest) if ch in ",-"), len(rest))
    return f"{nodes[:cut]}{rest[:end]}:{port}"

  @classmethod
  def get_process_count(cls) -> int:
    return _env_int("SLURM_NTASKS")

  @classmethod
  def get_process_id(cls) -> int:
    return _env_int("SLURM_PROCID")

  @classmethod
  def get_local_process_id(cls) -> int | None:
    return _env_int("SLURM_LOCALID")


def _mpi():
  return importlib.import_module("mpi4py.MPI")   # (only when asked for: mpi4py is optional)


class Mpi4pyCluster(ClusterEnv):
  """Any MPI launcher, through mpi4py (only when `cluster_detection_method="mpi4py"`): rank 0
  names its host and a port and broadcasts them."""
  name: str = "mpi4py"
  opt_in_only_method: bool = True

  @classmethod
  def is_env_present(cls) -> bool:
    return importlib.util.find_spec("mpi4py") is not None

  @classmethod
  def get_coordinator_address(cls, timeout_secs, override_coordinator_port):
    comm = _mpi().COMM_WORLD
    address = "None"
    if comm.Get_rank() == 0:
      host = os.uname().nodename
      port = override_coordinator_port or str(hash(host) % _PORT_RANGE + _FIRST_PORT)
      address = f"{host}:{port}"
    return comm.bcast(address, root=0)

  @classmethod
  def get_process_count(cls) -> int:
    return int(_mpi().COMM_WORLD.Get_size())

  @classmethod
  def get_process_id(cls) -> int:
    return int(_mpi().COMM_WORLD.Get_rank())

  @classmethod
  def get_local_process_id(cls) -> int | None:
    mpi = _mpi()
    return int(mpi.COMM_WORLD.Split_type(mpi.COMM_TYPE_SHARED).Get_rank())


class BaseTpuCluster(ClusterEnv):
  """Cloud TPU VMs (JAX reads their metadata server): never present for arrax."""
  name: str = "tpu"

  @classmethod
  def is_env_present(cls) -> bool:
    return False

  @classmethod
  def get_coordinator_address(cls, timeout_secs, override_coordinator_port):
    raise NotImplementedError("arrax does not run on Cloud TPU VMs: no TPU cluster to read")

  get_process_count = get_process_id = classmethod(
      lambda cls: BaseTpuCluster.get_coordinator_address(None, None))


class GceTpuCluster(BaseTpuCluster):
  name: str = "gcetpu"


class GkeTpuCluster(BaseTpuCluster):
  name: str = "gketpu"


class K8sCluster(ClusterEnv):
  """A Kubernetes indexed Job. Its coordinator and size come from the Kubernetes API (the
  `kubernetes` package), which arrax does not query: without the package the environment is
  not used (JAX's warning), with it initialize raises NotImplementedError."""

  @classmethod
  def is_env_present(cls) -> bool:
    if "KUBERNETES_SERVICE_HOST" not in os.environ:
      return False
    if importlib.util.find_spec("kubernetes") is None:
      warnings.warn("\n".join([
          textwrap.fill("Kubernetes environment detected, but the `kubernetes` package is not "
                        "installed to enable automatic bootstrapping in this environment. To "
                        "enable automatic bootstrapping, please install jax with the [k8s] "
                        "extra. For example:"),
          "    pip install jax[k8s]",
          "    pip install jax[k8s,<MORE-EXTRAS...>]"]))
      return False
    return True

  @classmethod
  def get_coordinator_address(cls, timeout_secs, override_coordinator_port):
    raise NotImplementedError("arrax does not read the coordinator of a Kubernetes job from "
                              "the Kubernetes API: pass coordinator_address and num_processes")

  @classmethod
  def get_process_count(cls) -> int:
    raise NotImplementedError("arrax does not read the size of a Kubernetes job from the "
                              "Kubernetes API: pass num_processes")

  @classmethod
  def get_process_id(cls) -> int:
    try:
      return _env_int("JOB_COMPLETION_INDEX")
    except KeyError:
      raise RuntimeError('To enable automatic bootstrap in a K8s cluster, jobs must be indexed '
                         'by setting `completionMode: "Indexed"`.') from None


def detect(coordinator_address, num_processes, process_id, local_device_ids,
           cluster_detection_method, initialization_timeout):
  """`ClusterEnv.auto_detect_unset_distributed_params`, skipped as JAX does when nothing is
  missing or detection is deactivated."""
  if cluster_detection_method == "deactivate" or None not in (
      coordinator_address, num_processes, process_id, local_device_ids):
    return coordinator_address, num_processes, process_id, local_device_ids
  return ClusterEnv.auto_detect_unset_distributed_params(
      coordinator_address, num_processes, process_id,
      None if local_device_ids is None else list(local_device_ids), cluster_detection_method,
      initialization_timeout)


__all__ = ["ClusterEnv", "GceTpuCluster", "GkeTpuCluster", "K8sCluster", "Mpi4pyCluster",
           "OmpiCluster", "SlurmCluster", "detect"]
