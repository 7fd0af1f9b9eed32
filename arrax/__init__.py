"""arrax: NumPy on XLA with jit, autodiff-ready tracing and JAX's public API.

    import arrax as jax
    import arrax.numpy as jnp
"""
from arrax._src.config import config, disable_jit, enable_x64
from arrax._src.api import (ShapeDtypeStruct, block_until_ready, clear_caches, device_get,
                            device_put, eval_shape, make_jaxpr, named_call, typeof)
from arrax._src.array import ArrayType as Array
from arrax._src.backend import (Device, default_backend, device_count, devices, local_device_count,
                                local_devices, process_count, process_index)
from arrax._src.jit import jit
from arrax._src.ad_api import grad, jvp, linearize, value_and_grad, vjp
from arrax._src.ad_api import hessian, jacfwd, jacobian, jacrev, linear_transpose
from arrax._src.custom_derivatives import closure_convert, custom_gradient, custom_jvp, custom_vjp
from arrax._src.checkpoint import checkpoint, checkpoint_policies, remat
from arrax._src.batching import vmap
from arrax import ad_checkpoint, custom_derivatives, debug, errors, lax, numpy, test_util, tree, tree_util
from arrax import dtypes, random
from arrax import api_util, core, extend, flatten_util, interpreters, lib, typing
from arrax import scipy
from arrax import nn
from arrax import image
from arrax._src.dtypes import float0

from arrax._src.jax_alias import install_as_jax
from arrax._src.core import ensure_compile_time_eval
from arrax import version
from arrax.version import __version__, __version_info__

# arrax's own release; `__version__` is the JAX API version arrax implements.
__arrax_version__ = "0.1.0"

__all__ = [
    "Array", "ShapeDtypeStruct", "block_until_ready", "config", "default_backend",
    "device_count", "device_get", "device_put", "devices", "disable_jit", "enable_x64",
    "ad_checkpoint", "checkpoint", "checkpoint_policies", "closure_convert", "custom_derivatives", "custom_gradient", "custom_jvp", "custom_vjp",
    "dtypes", "errors", "eval_shape", "float0", "grad", "hessian", "image", "jacfwd", "jacobian", "jacrev", "linear_transpose", "jit", "jvp", "linearize", "value_and_grad", "vjp", "vmap", "lax", "local_device_count", "local_devices",
    "make_jaxpr", "nn", "numpy", "process_count", "process_index", "random", "remat", "scipy", "test_util", "tree", "tree_util", "typeof",
]
