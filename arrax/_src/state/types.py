"""`jax._src.state.types`: the abstract value of mutable array references (libraries such as
flax.nnx import it from here)."""
from arrax._src.core import AbstractRef as AbstractRef

__all__ = ["AbstractRef"]
