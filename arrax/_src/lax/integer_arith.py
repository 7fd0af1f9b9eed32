"""`mulhi`: the high half of the double-width product of integers, elementwise.

For N-bit operands the result is the upper N bits of their 2N-bit product (signed or unsigned
as the dtype is); it lowers to `chlo.mulhi`. Like JAX's, it has a zero derivative and
broadcasts under vmap.
"""
from __future__ import annotations

from jaxlib.mlir.dialects import chlo

from arrax._src import ad, batching
from arrax._src.lax import elementwise as ew
from arrax._src.lax.utils import INT, asarray_operand

__all__ = ["mulhi"]

mulhi_p = ew._binop("mulhi", INT, lambda ctx, x, y: chlo.mulhi(x, y))
batching.defbroadcasting(mulhi_p)
ad.defjvp_zero(mulhi_p)


def mulhi(x, y, /):
  """The most significant half of the bits of the full-width product x * y, elementwise
  (integer operands of one dtype)."""
  return mulhi_p.bind(asarray_operand(x), asarray_operand(y))
