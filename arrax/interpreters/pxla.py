"""arrax.interpreters.pxla (`jax.interpreters.pxla`): XLA compile options for a computation
partitioned over devices."""
from arrax._src.compiler import get_compile_options as _get_compile_options


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
