"""`jax._src.compiler` compatibility: the one function every XLA compilation goes through.

dispatch and jit call `backend_compile_and_load` through this module's attribute, so a library
that wraps it (chex.restrict_backends does) sees every compilation, as with JAX."""
import numpy as np
from jaxlib import xla_client as xc

_NO_PROFILE_DONT_RETRIEVE = -1   # CompileOptions.profile_version: no feedback-directed profile


def backend_compile_and_load(backend, module, executable_devices, options, host_callbacks=()):
  """Compile the StableHLO `module` with the XLA client `backend` and load it on the devices."""
  if host_callbacks:
    return backend.compile_and_load(module, executable_devices, options,
                                    host_callbacks=list(host_callbacks))
  return backend.compile_and_load(module, executable_devices, options)


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
  build.use_shardy_partitioner = True
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
  if env_options_overrides is not None:
    overrides = dict(env_options_overrides)
    for name in ("exec_time_optimization_effort", "memory_fitting_effort",
                 "optimization_level", "memory_fitting_level"):
      if name in overrides:
        setattr(build, name, overrides.pop(name))
    options.env_option_overrides = list(overrides.items())
  build.debug_options.xla_detailed_logging = detailed_logging
  options.profile_version = _NO_PROFILE_DONT_RETRIEVE
  return options

