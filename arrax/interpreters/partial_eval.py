"""arrax.interpreters.partial_eval (`jax.interpreters.partial_eval`)."""
from arrax._src.interpreters.partial_eval import (
    custom_partial_eval_rules as custom_partial_eval_rules,
    dce_jaxpr as dce_jaxpr,
    dce_jaxpr_call_rule as dce_jaxpr_call_rule,
    dce_jaxpr_closed_call_rule as dce_jaxpr_closed_call_rule,
    dce_jaxpr_consts as dce_jaxpr_consts,
    dce_rules as dce_rules,
    DynamicJaxprTracer as DynamicJaxprTracer,
    JaxprTracer as JaxprTracer,
    partial_eval_jaxpr_custom_rules as partial_eval_jaxpr_custom_rules,
    PartialVal as PartialVal,
    trace_to_jaxpr_dynamic as trace_to_jaxpr_dynamic,
    trace_to_jaxpr_nounits as trace_to_jaxpr_nounits,
    Val as Val,
)
