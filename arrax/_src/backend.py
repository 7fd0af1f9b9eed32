"""The XLA runtime: one PJRT client per platform per process, created lazily, and its devices."""
import atexit
import functools
import gc
import logging
import os
import threading
import warnings
import weakref

from arrax._src import config_flags, logging_config
from arrax._src.config import config, contexts_open

# Quieten XLA's C++ INFO logging (device listings) unless the user asked for it.
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "1")

from jaxlib import _jax, xla_client as xc  # noqa: E402

_logger = logging.getLogger(__name__)


def _collect_deferred(phase, info):
  """jaxlib defers freeing some Python objects its runtime made (the creation traceback each
  Array records, ...) to `collect_garbage`: without this hook every jit call or eager op left
  ~70 bytes behind (JAX registers the same hook)."""
  _jax.collect_garbage()


gc.callbacks.append(_collect_deferred)

_clients = {}
_clients_lock = threading.Lock()   # threads making the first arrays at once share one client


class DistributedState:
  """This process's place in a multi-process job (filled by `arrax.distributed.initialize`):
  the CPU client is created with the distributed runtime client when there is one."""
  process_id = 0
  num_processes = 1
  service = None
  client = None
  preemption_sync_manager = None
  coordinator_address = None
  partition_index = None


distributed_state = DistributedState()


def _num_cpu_devices():
  n = config.jax_num_cpu_devices
  if n is not None and n > 0:
    return n
  for flag in os.environ.get("XLA_FLAGS", "").split():
    if flag.startswith("--xla_force_host_platform_device_count="):
      return int(flag.split("=", 1)[1])
  return None


def _make_cpu_client():
  # (jax_cpu_enable_async_dispatch False: each computation runs inline in the calling thread)
  opts = dict(asynchronous=bool(config.jax_cpu_enable_async_dispatch),
              num_devices=_num_cpu_devices())
  dist = distributed_state
  if dist.client is None:
    return xc.make_cpu_client(**opts)
  impl = config.jax_cpu_collectives_implementation
  if impl == "gloo":
    collectives = _jax.make_gloo_tcp_collectives(distributed_client=dist.client)
  elif impl == "mpi":   # (needs an MPI library that jaxlib can load, as in JAX)
    collectives = _jax.make_mpi_collectives()
    collectives.Init()
    atexit.register(collectives.Finalize)
  elif impl is None:
    collectives = None
  else:
    raise NotImplementedError(f"jax_cpu_collectives_implementation={impl!r}: arrax supports "
                              "'gloo', 'mpi' (or None)")
  return xc.make_cpu_client(
      distributed_client=dist.client, node_id=dist.process_id, num_nodes=dist.num_processes,
      collectives=collectives,
      get_local_topology_timeout_minutes=config.jax_cpu_get_local_topology_timeout_minutes,
      get_global_topology_timeout_minutes=config.jax_cpu_get_global_topology_timeout_minutes,
      **opts)


def _make_gpu_client(platform):
  """Load the CUDA PJRT plugin (from the `jax-cuda12-pjrt` package) without importing jax."""
  try:
    import importlib.util
    spec = importlib.util.find_spec("jax_plugins.xla_cuda12")
  except ImportError:
    spec = None
  if spec is None or not spec.submodule_search_locations:
    raise RuntimeError(
        f"Unable to initialize backend '{platform}': the CUDA PJRT plugin is not installed. "
        "Install it with `pip install jax-cuda12-pjrt jax-cuda12-plugin` or use "
        "JAX_PLATFORMS=cpu.")
  path = os.path.join(list(spec.submodule_search_locations)[0], "xla_cuda_plugin.so")
  if not xc.pjrt_plugin_loaded("cuda"):
    xc.load_pjrt_plugin_dynamically("cuda", path)
  if not xc.pjrt_plugin_initialized("cuda"):
    xc.initialize_pjrt_plugin("cuda")
  return xc.make_c_api_client("cuda", xc.generate_pjrt_gpu_plugin_options())


def _requested_platforms():
  plats = config.jax_platforms or os.environ.get("JAX_PLATFORMS", "")
  return [p.strip() for p in plats.split(",") if p.strip()] or ["cpu"]


def _default_platform():
  # jax_xla_backend and jax_platform_name (JAX's older names) choose it before jax_platforms.
  return (config.jax_xla_backend or config.jax_platform_name or _requested_platforms()[0])


def get_client(platform=None):
  """The PJRT client for `platform` (default: jax_platform_name, else the first of
  jax_platforms, else cpu)."""
  if platform is None:
    platform = _default_platform()
  platform = {"gpu": "cuda", "host": "cpu"}.get(platform, platform)
  client = _clients.get(platform)
  if client is None:
    with _clients_lock:
      client = _clients.get(platform)
      if client is None:
        if platform in _backend_factories:   # (register_backend_factory)
          client = _backend_factories[platform][0]()
        elif platform == "cpu":
          client = _make_cpu_client()
        elif platform == "cuda":
          client = _make_gpu_client(platform)
        else:
          raise RuntimeError(f"Unknown backend '{platform}'. Available: cpu, cuda.")
        _clients[platform] = client
        distributed_debug_log(("Initialized backend", client.platform),
                              ("process_index", client.process_index()),
                              ("device_count", client.device_count()),
                              ("local_devices", client.local_devices()))
  return client


def distributed_debug_log(*pairs):
  """With jax_distributed_debug, log `pairs` ((heading, value), (label, value), ...) as one
  WARNING, in JAX's layout."""
  if not config.jax_distributed_debug:
    return
  lines = ["\nDISTRIBUTED_DEBUG_BEGIN", f"{pairs[0][0]}: {pairs[0][1]}"]
  lines += [f"  {label}: {value}" for label, value in pairs[1:]]
  lines.append("DISTRIBUTED_DEBUG_END")
  _logger.warning("\n".join(lines))


def default_backend() -> str:
  """The name of the default platform, e.g. 'cpu'."""
  return get_client().platform


def backends_are_initialized() -> bool:
  """Whether a PJRT client has been created in this process."""
  return bool(_clients)


config_flags.backends_initialized[0] = backends_are_initialized
logging_config.install()


def _client(backend):
  return backend if isinstance(backend, xc.Client) else get_client(backend)


def devices(backend=None):
  """All devices of a backend (the default one if None), those of every process."""
  return _client(backend).devices()


def local_devices(process_index=None, backend=None, host_id=None):
  """The devices attached to process `process_index` (default: this process)."""
  if host_id is not None:
    warnings.warn("The argument to jax.local_devices has been renamed from `host_id` to "
                  "`process_index`. This alias will eventually be removed; please update "
                  "your code.")
    process_index = host_id
  client = _client(backend)
  if process_index is None:
    process_index = client.process_index()
  if not 0 <= process_index < process_count(client):
    raise ValueError(f"Unknown process_index {process_index}")
  return [d for d in client.devices() if d.process_index == process_index]


def device_count(backend=None) -> int:
  """The number of devices of every process."""
  return int(_client(backend).device_count())


def local_device_count(backend=None) -> int:
  """The number of devices attached to this process."""
  return int(_client(backend).local_device_count())


def process_index(backend=None) -> int:
  """This process's index in a multi-process job (0 when alone)."""
  return _client(backend).process_index()


def process_count(backend=None) -> int:
  """The number of processes of the job."""
  return max((d.process_index for d in devices(backend)), default=0) + 1


def process_indices(backend=None) -> list:
  """The indices of all processes: [0, ..., process_count() - 1]."""
  return list(range(process_count(backend)))


# Old names of process_index/process_count/process indices: they warn (UserWarning, with JAX's
# messages) and give the same values.
def host_id(backend=None) -> int:
  warnings.warn("jax.process_index has been renamed to jax.process_index. This alias will "
                "eventually be removed; please update your code.", stacklevel=2)
  return process_index(backend)


def host_count(backend=None) -> int:
  warnings.warn("jax.process_count has been renamed to jax.process_count. This alias will "
                "eventually be removed; please update your code.", stacklevel=2)
  return process_count(backend)


def host_ids(backend=None) -> list[int]:
  warnings.warn("jax.process_indexs has been renamed to jax.process_indices. This alias will "
                "eventually be removed; please update your code.", stacklevel=2)
  return list(range(process_count(backend)))


_default_device = []   # the resolved default device, cleared when the flags choosing it change


def default_device():
  """The device uncommitted computations run on: `jax_default_device` if set (a device or a
  platform name), else the first local device of the default backend."""
  if _default_device and not contexts_open():
    return _default_device[0]
  chosen = config.jax_default_device   # (this thread's, while a config context is open)
  if chosen is None:
    chosen = get_client().local_devices()[0]
  elif isinstance(chosen, str):
    chosen = get_client(chosen).local_devices()[0]
  if not contexts_open():
    _default_device[:] = [chosen]
  return chosen


def _reset_default_device(name):
  if name in ("jax_platforms", "jax_default_device", "jax_platform_name", "jax_xla_backend"):
    _default_device.clear()


config._listeners.append(_reset_default_device)


@functools.lru_cache(maxsize=None)
def device_sharding(device):
  """A replicated single-device sharding. GSPMDSharding needs no Python hooks on jaxlib classes."""
  return _jax.GSPMDSharding(xc.DeviceList((device,)), xc.HloSharding.replicate())


# ---- jax.extend.backend / jax._src.xla_bridge names --------------------------------------------
Device = _jax.Device


def get_backend(platform=None):
  """The XLA client of `platform` (the default backend if None)."""
  return get_client(platform)


def backends():
  """The clients created so far, by platform name (the default one is created if none is)."""
  if not _clients:
    get_client()
  return dict(_clients)


def clear_backends():
  """Forget the XLA clients (new ones are created on next use); caches must be cleared too.
  With jax_debug_leaked_clients_on_clear_backends, raise RuntimeError if one stays alive."""
  refs = ([weakref.ref(c) for c in _clients.values()]
          if config.jax_debug_leaked_clients_on_clear_backends else [])
  _clients.clear()
  _default_device.clear()
  if refs:
    for _ in range(4):
      gc.collect()
    if any(r() is not None for r in refs):
      raise RuntimeError("A jax.Client was leaked")


get_default_device = default_device


# ---- user-registered backends (jax.extend.backend) ----------------------------------------------
_backend_factories: dict = {}   # name -> (factory, priority, fail_quietly, experimental, c_api)
topology_factories: dict = {}   # name -> make_topology(topology_name, **kwargs)


def register_backend_factory(name: str, factory, *, priority: int = 0,
                             fail_quietly: bool = True, experimental: bool = False,
                             make_topology=None, c_api=None) -> None:
  """Have `get_backend(name)` create its client with `factory()` (before it is first used)."""
  with _clients_lock:
    if name in _clients:
      raise RuntimeError(f"Backend {name} already initialized")
  _backend_factories[name] = (factory, priority, fail_quietly, experimental, c_api)
  if make_topology is not None:
    topology_factories[name] = make_topology


def backend_xla_version(platform=None):
  """The XLA version a PJRT plugin backend reports; None for the built-in clients."""
  return getattr(get_backend(platform), "xla_version", None)
