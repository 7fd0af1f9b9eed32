"""`jax._src.compiler` compatibility: the one function every XLA compilation goes through.

dispatch and jit call `backend_compile_and_load` through this module's attribute, so a library
that wraps it (chex.restrict_backends does) sees every compilation, as with JAX."""


def backend_compile_and_load(backend, module, executable_devices, options, host_callbacks=()):
  """Compile the StableHLO `module` with the XLA client `backend` and load it on the devices."""
  if host_callbacks:
    return backend.compile_and_load(module, executable_devices, options,
                                    host_callbacks=list(host_callbacks))
  return backend.compile_and_load(module, executable_devices, options)
