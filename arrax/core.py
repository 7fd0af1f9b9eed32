"""arrax.core (`jax.core`): the public names of the core (abstract values, traces, jaxprs)."""
from arrax._src.core import (
    AbstractValue as AbstractValue,
    Atom as Atom,
    ParamDict as ParamDict,
    ShapedArray as ShapedArray,
    Trace as Trace,
    Tracer as Tracer,
    Value as Value,
    ensure_compile_time_eval as ensure_compile_time_eval,
    eval_context as eval_context,
    eval_jaxpr as eval_jaxpr,
    max_dim as max_dim,
    min_dim as min_dim,
)
