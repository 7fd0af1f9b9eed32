"""arrax.interpreters.partial_eval (`jax.interpreters.partial_eval`)."""
from arrax._src.interpreters.partial_eval import (
    DynamicJaxprTracer as DynamicJaxprTracer,
    PartialVal as PartialVal,
    dce_jaxpr as dce_jaxpr,
    trace_to_jaxpr_dynamic as trace_to_jaxpr_dynamic,
    trace_to_jaxpr_nounits as trace_to_jaxpr_nounits,
)
