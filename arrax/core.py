"""arrax.core (`jax.core`): the public names of the core (abstract values, traces, jaxprs)."""
from arrax._src import core as _core
from arrax._src.deprecations import deprecation_getattr as _deprecation_getattr
from arrax._src.environment import ensure_compile_time_eval as ensure_compile_time_eval
from arrax._src.core import (
    AbstractValue as AbstractValue,
    Atom as Atom,
    ParamDict as ParamDict,
    ShapedArray as ShapedArray,
    Trace as Trace,
    Tracer as Tracer,
    Value as Value,
    eval_context as eval_context,
    eval_jaxpr as eval_jaxpr,
    max_dim as max_dim,
    min_dim as min_dim,
)

# Names JAX 0.10.2 still serves from jax.core with a DeprecationWarning (where arrax has them)
# and names it removed (an AttributeError pointing to the new place).
_MOVED_TO_EXTEND = ("DropVar", "check_jaxpr", "concrete_or_error", "find_top_trace",
                    "get_opaque_trace_state", "jaxprs_in_params", "new_jaxpr_eqn",
                    "primal_dtype_to_tangent_dtype", "unsafe_am_i_under_a_jit_DO_NOT_USE",
                    "valid_jaxtype")
_DEPRECATED = {**{n: (f"jax.core.{n} is deprecated; use jax.extend.core.{n}.",
                      getattr(_core, n)) for n in _MOVED_TO_EXTEND},
               "abstract_token": ("jax.core.abstract_token is deprecated.", _core.abstract_token),
               "is_concrete": ("jax.core.is_concrete is deprecated.", _core.is_concrete),
               "trace_ctx": ("jax.core.trace_ctx is deprecated.", _core.trace_ctx)}
_REMOVED = {"get_aval": "jax.typeof", "mapped_aval": "jax.extend.core.mapped_aval",
            "unmapped_aval": "jax.extend.core.unmapped_aval",
            "set_current_trace": "jax.extend.core.set_current_trace",
            "take_current_trace": "jax.extend.core.take_current_trace",
            "subjaxprs": "jax.extend.core.subjaxprs", "AbstractToken":
            "jax.extend.core.AbstractToken", "TraceTag": "jax.extend.core.TraceTag",
            "call_impl": "jax.extend.core.call_impl", "traverse_jaxpr_params": None}


__getattr__ = _deprecation_getattr(__name__, _DEPRECATED, {
    n: f"jax.core.{n} was removed in JAX v0.10.0" + (f"; use {new} instead." if new else ".")
    for n, new in _REMOVED.items()})
