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
from arrax._src.config import (
    allow_f16_reductions as allow_f16_reductions,
    array_garbage_collection_guard as array_garbage_collection_guard,
    auto_pcast as auto_pcast, debug_key_reuse as debug_key_reuse,
    default_prng_impl as default_prng_impl, enable_checks as enable_checks,
    enable_custom_prng as enable_custom_prng,
    jax2tf_associative_scan_reductions as jax2tf_associative_scan_reductions,
    legacy_prng_key as legacy_prng_key, no_execution as no_execution,
    remove_size_one_mesh_axis_from_type as remove_size_one_mesh_axis_from_type,
    softmax_custom_jvp as softmax_custom_jvp, thread_guard as thread_guard,
    threefry_partitionable as threefry_partitionable)
from arrax._src.environment import (copy_to_host_async, ensure_compile_time_eval, live_arrays,
                                    named_call, named_scope, print_environment_info)
from arrax._src.api import (ShapeDtypeStruct, block_until_ready, clear_caches, device_get,
                            device_put, eval_shape, make_jaxpr, typeof)
from arrax._src.array import ArrayType as Array
from arrax._src.backend import (Device, default_backend, device_count, devices, local_device_count,
                                local_devices, process_count, process_index, process_indices)
from arrax._src.jit import jit
from arrax._src.ad_api import grad, jvp, linearize, value_and_grad, vjp
from arrax._src.ad_api import hessian, jacfwd, jacobian, jacrev, linear_transpose
from arrax._src.custom_derivatives import closure_convert, custom_gradient, custom_jvp, custom_vjp
from arrax._src.checkpoint import checkpoint, checkpoint_policies, remat
from arrax._src.batching import vmap
from arrax._src.pmap import pmap as pmap
from arrax._src import spmd as _spmd  # noqa: F401  (jit with in/out shardings)
from arrax._src.spmd import reshard as reshard
from arrax._src.shard_map import shard_map as shard_map, smap as smap
from arrax._src.callback import pure_callback
from arrax._src.debugging import effects_barrier
from arrax import ad_checkpoint, custom_derivatives, debug, errors, lax, numpy, test_util, tree, tree_util
from arrax import dtypes, ops, random
from arrax import experimental
from arrax import custom_batching
from arrax import stages
from arrax import api_util, core, extend, flatten_util, interpreters, lib, typing
from arrax import scipy
from arrax import nn
from arrax import profiler
from arrax import monitoring
from arrax import ffi
from arrax import image
from arrax import sharding
from arrax import distributed
from arrax import export
from arrax._src.sharding_impls import (NamedSharding, PartitionSpec as P, make_mesh, set_mesh)
from arrax._src.sharding_impls import Shard as Shard
from arrax._src.config import make_user_context as make_user_context
from arrax._src.indexing import ds as ds
from arrax._src.ad_api import fwd_and_bwd as fwd_and_bwd
from arrax._src.backend import host_count as host_count, host_id as host_id, host_ids as host_ids
from arrax import dlpack as dlpack
from arrax import ref as ref
from arrax.ref import (Ref as Ref, empty_ref as empty_ref, free_ref as free_ref,
                       freeze as freeze, new_ref as new_ref)

# Namespaces JAX builds the same way: the markers of its reference-accumulating VJP interface,
# and the memory-space enum.
from types import SimpleNamespace as _SimpleNamespace
from arrax._src import ad_api as _ad_api, core as _core
ad = _SimpleNamespace(DontWant=_ad_api.DontWant, DidntWant=_ad_api.DidntWant,
                      GradRef=_ad_api.GradRef, GradValue=_ad_api.GradValue)
memory = _SimpleNamespace(Space=_core.MemorySpace)
del _SimpleNamespace, _ad_api, _core
from arrax._src.dtypes import float0
from arrax._src.global_arrays import (make_array_from_callback, make_array_from_process_local_data,
                                     make_array_from_single_device_arrays)

from arrax._src.jax_alias import install_as_jax
from arrax import version
from arrax.version import __version__, __version_info__

# arrax's own release; `__version__` is the JAX API version arrax implements.
__arrax_version__ = "0.1.0"

__all__ = [
    "Array", "ShapeDtypeStruct", "block_until_ready", "clear_caches", "config", "default_backend",
    "device_count", "device_get", "device_put", "devices", "disable_jit", "enable_x64",
    "ad_checkpoint", "checkpoint", "checkpoint_policies", "closure_convert", "custom_batching", "custom_derivatives", "custom_gradient", "custom_jvp", "custom_vjp",
    "dtypes", "effects_barrier", "errors", "eval_shape", "experimental", "ffi", "float0", "grad", "hessian", "image", "jacfwd", "jacobian", "jacrev", "linear_transpose", "jit", "jvp", "linearize", "value_and_grad", "vjp", "vmap", "lax", "local_device_count", "local_devices",
    "make_array_from_callback", "make_array_from_process_local_data",
    "make_array_from_single_device_arrays", "make_jaxpr", "make_mesh", "NamedSharding", "P", "reshard", "set_mesh", "shard_map", "sharding", "smap", "checking_leaks", "check_tracer_leaks", "copy_to_host_async", "default_device",
    "default_matmul_precision", "ensure_compile_time_eval", "explain_cache_misses",
    "debug_infs", "debug_nans", "live_arrays", "log_compiles", "named_call", "named_scope", "no_tracing",
    "numpy_dtype_promotion", "numpy_rank_promotion", "print_environment_info",
    "transfer_guard", "transfer_guard_device_to_device", "transfer_guard_device_to_host",
    "transfer_guard_host_to_device", "nn", "numpy", "pmap", "process_count", "profiler", "process_index", "process_indices", "distributed", "pure_callback", "random", "remat", "scipy", "stages", "test_util", "tree", "tree_util", "typeof",
    "ref", "Ref", "new_ref", "empty_ref", "free_ref", "freeze",
]
