"""arrax.interpreters.xla (`jax.interpreters.xla`): running one primitive, the XLA client type
and the table canonicalizing host values' dtypes."""
from jaxlib import _jax

from arrax._src.dispatch import apply_primitive as _apply_primitive
from arrax._src.dtypes import canonicalize_value_handlers as canonicalize_dtype_handlers  # noqa: F401

__all__ = ["apply_primitive", "canonicalize_dtype_handlers", "Backend"]

Backend = _jax.Client


def apply_primitive(prim, *args, **params):
  """Run `prim` on `args` eagerly (as one compiled XLA computation)."""
  return _apply_primitive(prim, args, params)


del _jax
