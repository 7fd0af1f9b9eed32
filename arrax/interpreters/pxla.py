"""arrax.interpreters.pxla (`jax.interpreters.pxla`): XLA compile options for a computation
partitioned over devices. Of JAX's deprecated names, those about HloShardings and mesh axis
names are served (with a DeprecationWarning); those about JAX's pmap and mesh executables, and
the names JAX removed, raise AttributeError."""
from typing import Any as _Any

from arrax._src.compiler import get_compile_options as _get_compile_options
from arrax._src.deprecations import deprecation_getattr as _deprecation_getattr


def create_compile_options(computation, tuple_args, allow_prop_to_inputs, allow_prop_to_outputs,
                           backend, np_dev, compiler_options):
  """XLA CompileOptions for `computation` over the devices `np_dev` (one partition each):
  `tuple_args` passes the arguments as one tuple; `allow_prop_to_inputs` / `_outputs` let
  sharding propagation choose each argument's / result's sharding; `compiler_options` are XLA
  option overrides (an `fdo_profile` entry is taken out of the dict, as JAX does)."""
  del computation
  n = int(np_dev.size)
  fdo_profile = compiler_options.pop("fdo_profile", None)
  options = _get_compile_options(num_replicas=1, num_partitions=n,
                                 device_assignment=np_dev.reshape((1, n)),
                                 env_options_overrides=compiler_options,
                                 fdo_profile=fdo_profile, backend=backend)
  options.parameter_is_tupled_arguments = tuple_args
  build = options.executable_build_options
  build.allow_spmd_sharding_propagation_to_parameters = list(allow_prop_to_inputs)
  build.allow_spmd_sharding_propagation_to_output = list(allow_prop_to_outputs)
  return options


def _are_hlo_shardings_equal(hc1, hc2) -> bool:
  if hc1 is hc2:
    return True
  if _is_hlo_sharding_replicated(hc1) and _is_hlo_sharding_replicated(hc2):
    return True
  return hc1 == hc2


def _is_hlo_sharding_replicated(hc) -> bool:
  return hc.num_devices() == 1 or hc.is_replicated()


_DEPRECATED = {
    "MeshAxisName": ("jax.interpreters.pxla.MeshAxisName is deprecated as of JAX v0.8.2. Use "
                     "jax.sharding.Mesh axis names directly.", _Any),
    "are_hlo_shardings_equal": ("jax.interpreters.pxla.are_hlo_shardings_equal is deprecated as "
                                "of JAX v0.8.2.", _are_hlo_shardings_equal),
    "is_hlo_sharding_replicated": ("jax.interpreters.pxla.is_hlo_sharding_replicated is "
                                   "deprecated as of JAX v0.8.2.", _is_hlo_sharding_replicated),
}
_PMAP_GONE = " Please use `jax.shard_map` instead of `jax.pmap`."
_REMOVED = {
    "MapTracer": "jax.interpreters.pxla.MapTracer was removed in JAX v0.10.0.",
    "PmapExecutable": "jax.interpreters.pxla.PmapExecutable was removed in JAX v0.10.0.",
    "parallel_callable": "jax.interpreters.pxla.parallel_callable was removed in JAX v0.10.0.",
    "shard_args": "jax.interpreters.pxla.shard_args was removed in JAX v0.10.0.",
    **{n: f"jax.interpreters.pxla.{n} was removed in JAX v0.10.0." + _PMAP_GONE
       for n in ("Chunked", "NoSharding", "Replicated", "ShardedAxis", "ShardingSpec",
                 "Unstacked", "spec_to_indices")},
}
__getattr__ = _deprecation_getattr(__name__, _DEPRECATED, _REMOVED)
