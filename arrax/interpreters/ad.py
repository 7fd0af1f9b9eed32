"""arrax.interpreters.ad (`jax.interpreters.ad`): register JVP and transpose rules."""
from arrax._src.interpreters.ad import (
    JVPTrace as JVPTrace,
    JVPTracer as JVPTracer,
    UndefinedPrimal as UndefinedPrimal,
    Zero as Zero,
    add_jaxvals_p as add_jaxvals_p,
    add_tangents as add_tangents,
    defjvp as defjvp,
    defjvp2 as defjvp2,
    deflinear as deflinear,
    deflinear2 as deflinear2,
    instantiate_zeros as instantiate_zeros,
    is_undefined_primal as is_undefined_primal,
    primitive_jvps as primitive_jvps,
    primitive_transposes as primitive_transposes,
    zeros_like_aval as zeros_like_aval,
)
