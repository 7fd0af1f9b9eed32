"""Custom differentiation rules (as `jax.custom_derivatives`)."""
from arrax._src.custom_derivatives import (
    CustomVJPPrimal as CustomVJPPrimal,
    SymbolicZero as SymbolicZero,
    closure_convert as closure_convert,
    custom_gradient as custom_gradient,
    custom_jvp as custom_jvp,
    custom_jvp_call_p as custom_jvp_call_p,
    custom_vjp as custom_vjp,
    custom_vjp_call_p as custom_vjp_call_p,
    custom_vjp_primal_tree_values as custom_vjp_primal_tree_values,
    linear_call as linear_call,
    zero_from_primal as zero_from_primal,
)
from arrax._src.remat_opt import remat_opt_p as remat_opt_p
