"""arrax.extend.ifrt_programs (`jax.extend.ifrt_programs`): jaxlib's IFRT program bindings."""
from jaxlib import _jax

ifrt_programs = _jax.ifrt_programs

del _jax
