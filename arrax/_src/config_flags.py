"""The rest of JAX's config options, with JAX's names, kinds, defaults, environment variables and
validation. Options of JAX's `State` kind (settable per thread by a context manager) get a
`State` handle here, as in `jax._src.config`; those of JAX's `Flag` kind take any value.

Where the implemented ones act: `backend` (default platform, async dispatch, topology timeouts,
leaked clients, distributed debug logs), `compiler` (compile options, IR and jaxpr dumps),
`compilation_cache`/`dispatch` (cache errors, key metadata, content checks), `mlir` (captured
constants), `random`/`prng` (seed offset, gumbel mode), `dtypes` (explicit x64 dtypes),
`numpy/indexing` (static index checks), `checkpoint` (residual logs), `traceback_util`
(filtering), `logging_config` (logging), `sharding_impls` (mesh context manager),
`distributed` (proxy warning). Options arrax cannot honour refuse values that would change
behaviour (`_refuse` below); the "no effect" groups say why each changes nothing in arrax.
"""
import enum
import logging
import os

from arrax._src.config import (State, _env_bool, add_trace_flags, config, env_number, int_parser,
                               parse_float,
                               parse_optional_str)


# ---- the kinds of option, as JAX defines them ----------------------------------------------------
def _bool_state(name, default, env_default=None):
  config.define(name, _env_bool(name, default if env_default is None else env_default), bool)
  return State(name, f"Context manager for `{name}` config option.")


def _int_state(name, default, validator=None):
  config.define(name, env_number(name, default, int), int_parser(name, validator))
  return State(name, f"Context manager for `{name}` config option.")


def _float_state(name, default):
  config.define(name, env_number(name, default, float), parse_float)
  return State(name, f"Context manager for `{name}` config option.")


def _enum_state(name, values, default, optional=False):
  default = os.environ.get(name.upper(), default)
  if not (default is None and optional) and default not in values:
    raise ValueError(f'Invalid value "{default}" for JAX flag {name}')
  none = "None or " if optional else ""

  def parse(v):
    if (v is not None or not optional) and (type(v) is not str or v not in values):
      raise ValueError(f"new enum value must be {none}in {list(values)}, got {v} of type "
                       f"{type(v)}.")
    return v
  config.define(name, default, parse)
  return State(name, f"Context manager for `{name}` config option.")


def _enum_class_state(name, cls, default):
  text = os.environ.get(name.upper())
  if text is not None:
    try:
      default = cls(text)
    except ValueError as e:
      raise ValueError(f'Invalid value "{text}" for JAX flag {name}') from e

  def parse(v):
    if isinstance(v, str):
      return cls(v)
    if not isinstance(v, cls):
      raise TypeError(f"new enum value must be an instance of {cls}, got {v} of type {type(v)}.")
    return v
  config.define(name, default, parse)
  return State(name, f"Context manager for `{name}` config option.")


def _string_state(name, default, optional=False, validator=None):
  def parse(v):
    if validator is not None:
      validator(v)
    elif optional:
      parse_optional_str(v)
    elif not isinstance(v, str):
      raise TypeError(f"new string config value must be of type str, got {v} of type {type(v)}.")
    return v
  config.define(name, os.environ.get(name.upper(), default), parse)
  return State(name, f"Context manager for `{name}` config option.")


def _flag(name, default):
  """JAX's `Flag` kind: set once at start (its default may come from the environment), then
  by `config.update` with any value, unchecked; no context manager."""
  config.define(name, default)


# Options that must be set before the first backend is made (JAX raises RuntimeError after).
backends_initialized = [lambda: False]   # (replaced by backend.py)


def _before_backends(name, value):
  if backends_initialized[0]() and config.read(name) != value:
    raise RuntimeError(f"{name} config should be updated before backends are initialized i.e. "
                       "before any JAX operation is executed. You should initialize this config "
                       "immediately after `import jax`.")


class EffortLevel(enum.Enum):
  """XLA's optimization levels (the values CompileOptions takes), by JAX's names."""
  UNKNOWN = 0
  O0 = 9
  O1 = 19
  O2 = 29
  O3 = 39


class ExplicitX64Mode(enum.IntEnum):
  """What an explicitly requested 64-bit dtype does while x64 is off."""
  WARN = enum.auto()
  ERROR = enum.auto()
  ALLOW = enum.auto()

  @classmethod
  def _missing_(cls, value):
    return {"warn": cls.WARN, "error": cls.ERROR, "allow": cls.ALLOW}.get(value)


class RuntimeTracebackMode(enum.StrEnum):
  """How much of the Python traceback is handed to the runtime at dispatch."""
  OFF = "off"
  ON = "on"
  FULL = "full"

  @classmethod
  def _missing_(cls, value):
    return cls.__members__.get(value.upper()) if isinstance(value, str) else None


_LEVELS = ("UNKNOWN", "O0", "O1", "O2", "O3")

# ---- implemented: backends -------------------------------------------------------------------
# The default platform when jax_platforms does not name one (JAX's older name for it).
_flag("jax_platform_name", os.environ.get("JAX_PLATFORM_NAME", "").lower())
# Deprecated spelling of jax_platform_name, read the same way.
_flag("jax_xla_backend", "")
# False: the CPU client runs each computation inline in the calling thread.
_flag("jax_cpu_enable_async_dispatch", True)
# Multi-process CPU clients: how long to wait for the other processes' topologies.
cpu_get_local_topology_timeout_minutes = _int_state(
    "jax_cpu_get_local_topology_timeout_minutes", 2, _before_backends)
cpu_get_global_topology_timeout_minutes = _int_state(
    "jax_cpu_get_global_topology_timeout_minutes", 5, _before_backends)
debug_leaked_clients_on_clear_backends = _bool_state(
    "jax_debug_leaked_clients_on_clear_backends", False)

config.flag("jax_num_cpu_devices").parse = int_parser("jax_num_cpu_devices", _before_backends)

# ---- implemented: compilation ---------------------------------------------------------------
exec_time_optimization_effort = _float_state("jax_exec_time_optimization_effort", 0.0)
memory_fitting_effort = _float_state("jax_memory_fitting_effort", 0.0)
optimization_level = _enum_state("jax_optimization_level", _LEVELS, "UNKNOWN")
memory_fitting_level = _enum_state("jax_memory_fitting_level", _LEVELS, "O2")
_flag("jax_disable_most_optimizations", _env_bool("jax_disable_most_optimizations", False))
enable_remat_opt_pass = _bool_state("jax_compiler_enable_remat_pass", True)
_flag("jax_compiler_detailed_logging_min_ops",
      env_number("jax_compiler_detailed_logging_min_ops", 10, int))
jax_xla_profile_version = _int_state("jax_xla_profile_version", 0)
# (sets use_shardy_partitioner in get_compile_options; arrax lowers its sharded programs with
# mhlo.sharding attributes, as JAX does with this False, so False changes nothing else)
use_shardy_partitioner = _bool_state("jax_use_shardy_partitioner", True)
# The persistent compilation cache (compilation_cache.py).
raise_persistent_cache_errors = _bool_state("jax_raise_persistent_cache_errors", False)
compilation_cache_include_metadata_in_key = _bool_state(
    "jax_compilation_cache_include_metadata_in_key", False)
compilation_cache_check_contents = _bool_state("jax_compilation_cache_check_contents", False)

# ---- implemented: dumps, logging, printing, errors -------------------------------------------
_flag("jax_dump_ir_to", os.environ.get("JAX_DUMP_IR_TO", ""))
_flag("jax_dump_ir_modes", os.environ.get("JAX_DUMP_IR_MODES", "stablehlo"))
_flag("jax_include_debug_info_in_dumps", _env_bool("jax_include_debug_info_in_dumps", True))
# (set before any arrax logger is configured, so its level is the one the logging module has)
debug_log_modules = _string_state("jax_debug_log_modules", "")
logging_level = _enum_state(
    "jax_logging_level", ("NOTSET", "DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"),
    logging.getLevelName(logging.getLogger("arrax").level), optional=True)
log_checkpoint_residuals = _bool_state("jax_log_checkpoint_residuals", False)
traceback_filtering = _enum_state(
    "jax_traceback_filtering", ("off", "tracebackhide", "remove_frames", "quiet_remove_frames",
                                "auto"), "auto")
captured_constants_warn_bytes = _int_state("jax_captured_constants_warn_bytes", 2 * 10 ** 9)
captured_constants_report_frames = _int_state("jax_captured_constants_report_frames", 0)
check_static_indices = _bool_state("jax_check_static_indices", False)
random_seed_offset = _int_state("jax_random_seed_offset", 0)
use_high_dynamic_range_gumbel = _bool_state("jax_high_dynamic_range_gumbel", False)
explicit_x64_dtypes = _enum_class_state("jax_explicit_x64_dtypes", ExplicitX64Mode,
                                        ExplicitX64Mode.WARN)
disallow_mesh_context_manager = _bool_state("jax_disallow_mesh_context_manager", False)
distributed_debug = _bool_state("jax_distributed_debug", False)
_flag("jax_check_proxy_envs", True)

# Pallas kernels (interpreted by arrax): `pl.debug_check`s checked; scratch buffers poisoned.
pallas_enable_debug_checks = _bool_state("jax_pallas_enable_debug_checks", False)
pallas_enable_debug_checks.__doc__ += "\n\nIf set, `pl.debug_check` calls are checked at run time."
pallas_poison_buffers = _bool_state("jax_pallas_poison_buffers", False)
pallas_poison_buffers.__doc__ += ("\n\nIf set, scratch buffers Pallas allocates start as poison "
                                  "values (NaN for floats).")

# ---- not implemented: raise NotImplementedError when set to a value that would change CPU
# behaviour in JAX (see `_refuse` below) ----------------------------------------------------
error_checking_behavior_nan = _enum_state("jax_error_checking_behavior_nan",
                                          ("ignore", "raise"), "ignore")
error_checking_behavior_divide = _enum_state("jax_error_checking_behavior_divide",
                                             ("ignore", "raise"), "ignore")
error_checking_behavior_oob = _enum_state("jax_error_checking_behavior_oob",
                                          ("ignore", "raise"), "ignore")
xla_runtime_errors = _bool_state("jax_experimental_unsafe_xla_runtime_errors", False)
send_traceback_to_runtime = _enum_class_state("jax_send_traceback_to_runtime",
                                              RuntimeTracebackMode, RuntimeTracebackMode.OFF)
use_simplified_jaxpr_constants = _bool_state("jax_use_simplified_jaxpr_constants", False)
eager_constant_folding = _bool_state("eager_constant_folding", False)

# ---- no effect: arrax prints jaxprs in plain text, which is what False asks for (JAX colours
# them only on a terminal or in a notebook)
pprint_use_color = _bool_state("jax_pprint_use_color", True)
# ---- no effect: arrax's tracers do not record where they were made, so its escaped-tracer
# errors show no creation frames (as JAX with this set to 0)
_flag("jax_tracer_error_num_traceback_frames",
      env_number("jax_tracer_error_num_traceback_frames", 5, int))

# ---- no effect: GPU/TPU-only options (arrax runs on CPU; its GPU client takes no such options)
_flag("jax_cuda_visible_devices", "all")
_flag("jax_rocm_visible_devices", "all")
_flag("jax_oneapi_visible_devices", "all")
_flag("mock_num_gpu_processes", 0)
_flag("jax_mock_gpu_topology", "")
gpu_use_magma = _enum_state("jax_use_magma", ("off", "on", "auto"), "auto")
bcoo_cusparse_lowering = _bool_state("jax_bcoo_cusparse_lowering", False)
threefry_gpu_kernel_lowering = _bool_state("jax_threefry_gpu_kernel_lowering", False)
ragged_dot_use_ragged_dot_instruction = _bool_state(
    "jax_ragged_dot_use_ragged_dot_instruction", True)
ragged_dot_use_gpu_pallas_triton_lowering = _bool_state(
    "jax_ragged_dot_use_gpu_pallas_triton_lowering", False)
persistent_cache_enable_xla_caches = _string_state(
    "jax_persistent_cache_enable_xla_caches", "xla_gpu_per_fusion_autotune_cache_dir",
    optional=True)
# Profile-guided latency estimation feeds XLA's GPU scheduler only.
enable_pgle = _bool_state("jax_enable_pgle", False)
pgle_profiling_runs = _int_state("jax_pgle_profiling_runs", 3)
pgle_aggregation_percentile = _int_state("jax_pgle_aggregation_percentile", 90)
compilation_cache_expect_pgle = _bool_state("jax_compilation_cache_expect_pgle", False)

# ---- no effect: Pallas's Mosaic (TPU) and Triton/Mosaic GPU compilers (arrax's Pallas
# interprets kernels)
_flag("jax_pallas_verbose_errors", _env_bool("jax_pallas_verbose_errors", False))
pallas_use_mosaic_gpu = _bool_state("jax_pallas_use_mosaic_gpu", True)
mosaic_allow_hlo = _bool_state("jax_mosaic_allow_hlo", False)
use_emit_pipeline_primitive = _bool_state("jax_use_emit_pipeline_primitive", False)

# ---- no effect: switches between two JAX-internal implementations that compute the same values
# (arrax has one implementation of each)
scan3 = _bool_state("jax_scan3", False)
remat3 = _bool_state("jax_remat3", False)
custom_vjp3 = _bool_state("jax_custom_vjp3", False)
use_direct_linearize = _bool_state("jax_use_direct_linearize", True)
refs_to_pins = _bool_state("jax_refs_to_pins", False)
embedded_constants_max_bytes = _int_state("jax_embedded_constants_max_bytes", 32)
check_vma = _bool_state("check_vma", False)
disable_vmap_shmap_error = _bool_state("jax_disable_vmap_shmap_error", False)
disable_bwd_checks = _bool_state("jax_disable_bwd_checks", False)
mutable_array_checks = _bool_state("jax_mutable_array_checks", True)
remove_custom_partitioning_ptr_from_cache_key = _bool_state(
    "jax_remove_custom_partitioning_ptr_from_cache_key", False)
source_url_schema = _string_state("jax_source_url_schema", None, optional=True)

# ---- no effect: serialization for jax2tf / TF's XlaCallModule (arrax has no jax2tf), and the
# client options of PJRT plugins (arrax's CPU client takes none)
jax2tf_default_native_serialization = _bool_state("jax2tf_default_native_serialization", True)
jax_serialization_version = _int_state("jax_serialization_version", 0)
export_ignore_forward_compatibility = _bool_state(
    "jax_export_ignore_forward_compatibility", False,
    env_default=_env_bool("jax_export_ignore_forward_compatibiliy", False))


def _client_options(v):
  if v is not None and not isinstance(v, (str, dict)):
    raise ValueError(f"new string config value must be None or of type dict | str, got {v} of "
                     f"type {type(v)}.")


jax_pjrt_client_create_options = _string_state("jax_pjrt_client_create_options", None,
                                               validator=_client_options)

# ---- no effect: multi-host transfer and sharing options (arrax runs one host's processes over
# gloo collectives; it has no cross-host transfer library nor remote compile)
_flag("jax_backend_target", os.environ.get("JAX_BACKEND_TARGET", "").lower())
_flag("jax_force_dcn_cross_host_transfers", False)
# (arrax lists devices in its client's order, which for its CPU clients is process by process)
_flag("jax_sort_devices_by_process_index", True)
_flag("jax_cross_host_transfer_socket_address", "")
_flag("jax_cross_host_transport_addresses", "")
_flag("jax_cross_host_transfer_timeout_seconds", None)
_flag("jax_cross_host_transfer_transfer_size", None)
share_binary_between_hosts = _bool_state("jax_share_binary_between_hosts", False)
share_binary_between_hosts_timeout_ms = _int_state("jax_share_binary_between_hosts_timeout_ms",
                                                   20 * 60 * 1000)


# ---- options arrax cannot honour: setting one to a value that changes CPU behaviour in JAX
# raises NotImplementedError rather than silently changing nothing --------------------------
def _refuse(name, allowed, why):
  flag = config.flag(name)
  parse = flag.parse

  def refusing(v):
    v = parse(v)
    if v not in allowed:
      raise NotImplementedError(f"{name}={v!r} is not supported by arrax: {why}")
    return v
  flag.parse = refusing


_refuse("jax_error_checking_behavior_nan", ("ignore",), "arrax has no jax.numpy error checking")
_refuse("jax_error_checking_behavior_divide", ("ignore",),
        "arrax has no jax.numpy error checking")
_refuse("jax_error_checking_behavior_oob", ("ignore",), "arrax has no jax.numpy error checking")
_refuse("jax_experimental_unsafe_xla_runtime_errors", (False,),
        "checkify checks do not lower to XLA runtime errors")
_refuse("jax_send_traceback_to_runtime", (RuntimeTracebackMode.OFF,),
        "tracebacks are not handed to the runtime (that setting is process-wide jaxlib state)")
_refuse("jax_use_simplified_jaxpr_constants", (False,),
        "constants are kept in the jaxpr's consts, not hoisted as arguments")
_refuse("eager_constant_folding", (False,), "staging does not fold constants")
_refuse("jax_explicit_x64_dtypes", (ExplicitX64Mode.WARN, ExplicitX64Mode.ERROR),
        "64-bit dtypes are not kept while jax_enable_x64 is off (in JAX 0.10.2 this crashes too)")


def _dump_modes(v):
  if isinstance(v, str):
    unsupported = set(v.split(",")) - {"stablehlo", "jaxpr", ""}
    if unsupported:
      raise NotImplementedError(f"jax_dump_ir_modes: arrax dumps 'stablehlo' and 'jaxpr' only, "
                                f"not {sorted(unsupported)}")
  return v


config.flag("jax_dump_ir_modes").parse = _dump_modes
_dump_modes(config.jax_dump_ir_modes)
for _name in ("jax_use_simplified_jaxpr_constants", "eager_constant_folding",
              "jax_experimental_unsafe_xla_runtime_errors", "jax_send_traceback_to_runtime",
              "jax_error_checking_behavior_nan", "jax_error_checking_behavior_divide",
              "jax_error_checking_behavior_oob", "jax_explicit_x64_dtypes"):
  config.flag(_name).parse(config.read(_name))   # (a value from the environment too)
del _name

# Options the jit caches key on, as in JAX (they change what tracing produces).
add_trace_flags("jax_random_seed_offset", "jax_check_static_indices",
                "jax_high_dynamic_range_gumbel", "jax_explicit_x64_dtypes")
