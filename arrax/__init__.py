"""arrax: NumPy on XLA with jit, autodiff-ready tracing and JAX's public API.

    import arrax as jax
    import arrax.numpy as jnp
"""
from arrax._src.config import config, disable_jit, enable_x64
from arrax._src.api import (ShapeDtypeStruct, block_until_ready, device_get, device_put,
                            eval_shape, make_jaxpr, typeof)
from arrax._src.array import ArrayType as Array
from arrax._src.backend import (default_backend, device_count, devices, local_device_count,
                                local_devices, process_count, process_index)
from arrax._src.jit import jit
from arrax._src.ad_api import grad, jvp, linearize, value_and_grad, vjp
from arrax import debug, errors, lax, numpy, tree, tree_util
from arrax._src.tree_util import tree_flatten, tree_leaves, tree_map, tree_structure, tree_unflatten

__version__ = "0.1.0"

__all__ = [
    "Array", "ShapeDtypeStruct", "block_until_ready", "config", "default_backend",
    "device_count", "device_get", "device_put", "devices", "disable_jit", "enable_x64",
    "errors", "eval_shape", "grad", "jit", "jvp", "linearize", "value_and_grad", "vjp", "lax", "local_device_count", "local_devices",
    "make_jaxpr", "numpy", "process_count", "process_index", "tree", "tree_util", "typeof",
]
