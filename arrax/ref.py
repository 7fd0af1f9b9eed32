"""jax.ref: mutable array references."""
from arrax._src.state.primitives import (
    AbstractRef as AbstractRef,
    Ref as Ref,
    empty_ref as empty_ref,
    free_ref as free_ref,
    freeze as freeze,
    new_ref as new_ref,
    ref_addupdate as addupdate,
    ref_get as get,
    ref_set as set,  # noqa: A004
    ref_swap as swap,
)

__all__ = ["AbstractRef", "Ref", "addupdate", "free_ref", "freeze", "get", "new_ref",
           "empty_ref", "set", "swap"]
