"""`jax._src.compiler` compatibility: the one function every XLA compilation goes through.

dispatch and jit call `backend_compile_and_load` through this module's attribute, so a library
that wraps it (chex.restrict_backends does) sees every compilation, as with JAX."""
import io
import itertools
import logging
import os
import pathlib
import re

import numpy as np
from jaxlib import xla_client as xc
from jaxlib.mlir import ir

from arrax._src.config import config
from arrax._src.config_flags import EffortLevel

_NO_PROFILE_DONT_RETRIEVE = -1   # CompileOptions.profile_version: no feedback-directed profile


def apply_config_options(options: xc.CompileOptions, module=None) -> xc.CompileOptions:
  """Set the fields of `options` that JAX's config options choose: optimization and memory
  efforts and levels, jax_disable_most_optimizations, the rematerialization pass, the XLA
  profile version, and (given the `module`) whether XLA logs in detail. Called once per
  compilation; the options are part of the persistent cache key, so these flags are too."""
  build = options.executable_build_options
  build.exec_time_optimization_effort = config.jax_exec_time_optimization_effort
  build.memory_fitting_effort = config.jax_memory_fitting_effort
  build.optimization_level = EffortLevel[config.jax_optimization_level].value
  build.memory_fitting_level = EffortLevel[config.jax_memory_fitting_level].value
  debug = build.debug_options
  if config.jax_disable_most_optimizations:
    debug.xla_backend_optimization_level = 0
    debug.xla_llvm_disable_expensive_passes = True
    debug.xla_test_all_input_layouts = False
  if not config.jax_compiler_enable_remat_pass:
    debug.xla_disable_hlo_passes = "rematerialization"
  if module is not None:
    debug.xla_detailed_logging = use_detailed_logging(module)
  version = config.jax_xla_profile_version
  options.profile_version = version if version and version > 0 else _NO_PROFILE_DONT_RETRIEVE
  return options


_ir_dumps = itertools.count()
logger = logging.getLogger(__name__)


def dump_dir(path: str) -> pathlib.Path | None:
  """The directory jax_dump_ir_to names (made if missing); "sponge" means the directory in
  TEST_UNDECLARED_OUTPUTS_DIR. None when dumping is off."""
  if not path:
    return None
  if path == "sponge":
    path = os.environ.get("TEST_UNDECLARED_OUTPUTS_DIR", "")
    if not path:
      raise ValueError("Got output directory (e.g., via JAX_DUMP_IR_TO) 'sponge' but "
                       "TEST_UNDECLARED_OUTPUTS_DIR is not defined.")
  out = pathlib.Path(path)
  out.mkdir(parents=True, exist_ok=True)
  return out


def module_to_string(module, enable_debug_info=None) -> str:
  """The module's text; with source locations unless jax_include_debug_info_in_dumps is off."""
  if enable_debug_info is None:
    enable_debug_info = str(config.jax_include_debug_info_in_dumps).lower() not in ("false", "0")
  buf = io.StringIO()
  module.operation.print(file=buf, enable_debug_info=enable_debug_info)
  return buf.getvalue()


def dump_module(module, stage: str = "compile") -> str | None:
  """Write `module` to jax_dump_ir_to as `jax_ir<n>_<name>_<stage>.mlir` when dumping is on
  and jax_dump_ir_modes has 'stablehlo'; the file's name, or None."""
  out = dump_dir(config.jax_dump_ir_to)
  if out is None or "stablehlo" not in config.jax_dump_ir_modes.split(","):
    return None
  with module.context:
    name = ir.StringAttr(module.operation.attributes["sym_name"]).value
  safe = re.sub(r"[^\w.)( -]", "", name)
  fname = f"jax_ir{next(_ir_dumps):04d}_{safe}_{stage}.mlir"
  (out / fname).write_text(module_to_string(module))
  logger.info("Dumped the module to %s.", fname)
  return fname


_jaxpr_dumps = itertools.count()


def dump_jaxpr(name: str, jaxpr) -> str | None:
  """Write `jaxpr` to jax_dump_ir_to as `jax_<n>_<name>.jaxpr.txt` when jax_dump_ir_modes has
  'jaxpr'; the file's name, or None."""
  out = dump_dir(config.jax_dump_ir_to)
  if out is None or "jaxpr" not in config.jax_dump_ir_modes.split(","):
    return None
  fname = f"jax_{next(_jaxpr_dumps):06d}_{name}.jaxpr.txt"
  logger.info("Dumping jaxpr for %s to %s.", name, out)
  (out / fname).write_text(str(jaxpr))
  return fname


def use_detailed_logging(module) -> bool:
  """Whether `module` has at least jax_compiler_detailed_logging_min_ops operations."""
  left = [config.jax_compiler_detailed_logging_min_ops]

  def walk(op):
    left[0] -= 1
    if left[0] < 0:
      return True
    return any(walk(child) for region in op.regions for block in region for child in block)
  return walk(module.operation)


def backend_compile_and_load(backend, module, executable_devices, options, host_callbacks=()):
  """Compile the StableHLO `module` with the XLA client `backend` and load it on the devices."""
  if host_callbacks:
    return backend.compile_and_load(module, executable_devices, options,
                                    host_callbacks=list(host_callbacks))
  return backend.compile_and_load(module, executable_devices, options)


_BUILD_OPTION_OVERRIDES = ("exec_time_optimization_effort", "memory_fitting_effort",
                           "optimization_level", "memory_fitting_level")


def apply_overrides(options: xc.CompileOptions, overrides) -> xc.CompileOptions:
  """Set jit's `compiler_options` (a dict or (name, value) pairs) on `options`: the effort and
  level names on its build options, every other name as an XLA option override (jaxlib
  rejects unknown names and ill-typed values when compiling)."""
  overrides = dict(overrides)
  build = options.executable_build_options
  for name in _BUILD_OPTION_OVERRIDES:
    if name in overrides:
      setattr(build, name, overrides.pop(name))
  options.env_option_overrides = list(overrides.items())
  return options


def get_compile_options(num_replicas: int, num_partitions: int, device_assignment=None,
                        env_options_overrides: dict[str, str] | None = None,
                        fdo_profile: bytes | None = None, detailed_logging: bool = True,
                        backend: xc.Client | None = None) -> xc.CompileOptions:
  """XLA compile options for `num_replicas` x `num_partitions` (SPMD partitioning, Shardy),
  optionally pinned to `device_assignment` (devices or ids, replicas x partitions). No
  feedback-directed-optimization profile is looked up for `backend`."""
  del backend
  options = xc.CompileOptions()
  options.num_replicas = num_replicas
  options.num_partitions = num_partitions
  build = options.executable_build_options
  build.use_spmd_partitioning = True
  build.use_shardy_partitioner = bool(config.jax_use_shardy_partitioner)
  if fdo_profile is not None:
    build.fdo_profile = fdo_profile
  if device_assignment is not None:
    assignment = np.array(device_assignment)
    if assignment.ndim == 1 and num_partitions == 1:
      assignment = assignment[:, None]
    if assignment.shape[0] != num_replicas:
      raise ValueError(f"device_assignment does not match num_replicas: {assignment} vs "
                       f"{num_replicas}.")
    if assignment.shape[1] != num_partitions:
      raise ValueError(f"device_assignment does not match num_partitions: {assignment} vs "
                       f"{num_partitions}.")
    if assignment.dtype == object:
      assignment = np.vectorize(lambda d: d.id, otypes=[int])(assignment)
    options.device_assignment = xc.DeviceAssignment.create(assignment)
  apply_config_options(options)
  if env_options_overrides is not None:
    apply_overrides(options, env_options_overrides)
  build.debug_options.xla_detailed_logging = detailed_logging
  return options

