"""arrax: NumPy on XLA with jit, autodiff-ready tracing and JAX's public API.

    import arrax as jax
    import arrax.numpy as jnp
"""
from arrax._src.config import (config, disable_jit, enable_x64, checking_leaks,
                               default_device, default_matmul_precision,
                               explain_cache_misses, log_compiles, no_tracing,
                               debug_infs, debug_nans,
                               numpy_dtype_promotion, numpy_rank_promotion, transfer_guard,
                               transfer_guard_device_to_device, transfer_guard_device_to_host,
                               transfer_guard_host_to_device, check_tracer_leaks)
from arrax._src.environment import (copy_to_host_async, ensure_compile_time_eval, live_arrays,
                                    named_call, named_scope, print_environment_info)
from arrax._src.api import (ShapeDtypeStruct, block_until_ready, clear_caches, device_get,
                            device_put, eval_shape, make_jaxpr, typeof)
from arrax._src.array import ArrayType as Array
from arrax._src.backend import (Device, default_backend, device_count, devices, local_device_count,
                                local_devices, process_count, process_index)
from arrax._src.jit import jit
from arrax._src.ad_api import grad, jvp, linearize, value_and_grad, vjp
from arrax._src.ad_api import hessian, jacfwd, jacobian, jacrev, linear_transpose
from arrax._src.custom_derivatives import closure_convert, custom_gradient, custom_jvp, custom_vjp
from arrax._src.checkpoint import checkpoint, checkpoint_policies, remat
from arrax._src.batching import vmap
from arrax._src.pmap import pmap as pmap
from arrax._src import spmd as _spmd  # noqa: F401  (jit with in/out shardings)
from arrax._src.callback import pure_callback
from arrax._src.debugging import effects_barrier
from arrax import ad_checkpoint, custom_derivatives, debug, errors, lax, numpy, test_util, tree, tree_util
from arrax import dtypes, random
from arrax import experimental
from arrax import custom_batching
from arrax import stages
from arrax import api_util, core, extend, flatten_util, interpreters, lib, typing
from arrax import scipy
from arrax import nn
from arrax import image
from arrax import sharding
from arrax import export
from arrax._src.sharding_impls import (NamedSharding, PartitionSpec as P, make_mesh, set_mesh)
from arrax._src.dtypes import float0

from arrax._src.jax_alias import install_as_jax
from arrax import version
from arrax.version import __version__, __version_info__

# arrax's own release; `__version__` is the JAX API version arrax implements.
__arrax_version__ = "0.1.0"

__all__ = [
    "Array", "ShapeDtypeStruct", "block_until_ready", "clear_caches", "config", "default_backend",
    "device_count", "device_get", "device_put", "devices", "disable_jit", "enable_x64",
    "ad_checkpoint", "checkpoint", "checkpoint_policies", "closure_convert", "custom_batching", "custom_derivatives", "custom_gradient", "custom_jvp", "custom_vjp",
    "dtypes", "effects_barrier", "errors", "eval_shape", "experimental", "float0", "grad", "hessian", "image", "jacfwd", "jacobian", "jacrev", "linear_transpose", "jit", "jvp", "linearize", "value_and_grad", "vjp", "vmap", "lax", "local_device_count", "local_devices",
    "make_jaxpr", "make_mesh", "NamedSharding", "P", "set_mesh", "sharding", "checking_leaks", "check_tracer_leaks", "copy_to_host_async", "default_device",
    "default_matmul_precision", "ensure_compile_time_eval", "explain_cache_misses",
    "debug_infs", "debug_nans", "live_arrays", "log_compiles", "named_call", "named_scope", "no_tracing",
    "numpy_dtype_promotion", "numpy_rank_promotion", "print_environment_info",
    "transfer_guard", "transfer_guard_device_to_device", "transfer_guard_device_to_host",
    "transfer_guard_host_to_device", "nn", "numpy", "pmap", "process_count", "process_index", "pure_callback", "random", "remat", "scipy", "stages", "test_util", "tree", "tree_util", "typeof",
]
