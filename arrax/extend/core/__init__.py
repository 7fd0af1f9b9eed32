"""arrax.extend.core (`jax.extend.core`): primitives, jaxprs and traces for library authors."""
from arrax._src.core import (
    AbstractToken as AbstractToken,
    ClosedJaxpr as ClosedJaxpr,
    DropVar as DropVar,
    Effect as Effect,
    Jaxpr as Jaxpr,
    JaxprEqn as JaxprEqn,
    Literal as Literal,
    Primitive as Primitive,
    Token as Token,
    Var as Var,
    check_jaxpr as check_jaxpr,
    concrete_or_error as concrete_or_error,
    find_top_trace as find_top_trace,
    get_opaque_trace_state as get_opaque_trace_state,
    jaxpr_as_fun as jaxpr_as_fun,
    jaxprs_in_params as jaxprs_in_params,
    mapped_aval as mapped_aval,
    new_jaxpr_eqn as new_jaxpr_eqn,
    primal_dtype_to_tangent_dtype as primal_dtype_to_tangent_dtype,
    set_current_trace as set_current_trace,
    subjaxprs as subjaxprs,
    take_current_trace as take_current_trace,
    unmapped_aval as unmapped_aval,
    unsafe_am_i_under_a_jit_DO_NOT_USE as unsafe_am_i_under_a_jit_DO_NOT_USE,
    valid_jaxtype as valid_jaxtype,
)
from arrax._src.api_util import DebugInfo as DebugInfo
from arrax._src.errors import (
    InconclusiveDimensionOperation as InconclusiveDimensionOperation,
    JaxprTypeError as JaxprTypeError,
)
from arrax._src.extend import (
    CallPrimitive as CallPrimitive,
    Effects as Effects,
    TraceTag as TraceTag,
    array_types as array_types,
    call_impl as call_impl,
    gensym as gensym,
    no_effects as no_effects,
    nonempty_axis_env_DO_NOT_USE as nonempty_axis_env_DO_NOT_USE,
    unsafe_am_i_under_a_vmap_DO_NOT_USE as unsafe_am_i_under_a_vmap_DO_NOT_USE,
    unsafe_get_axis_names_DO_NOT_USE as unsafe_get_axis_names_DO_NOT_USE,
)
from arrax.extend.core import primitives as primitives  # noqa: E402  (the submodule, as JAX)
