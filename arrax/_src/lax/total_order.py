"""Total-order comparisons (`eq_to`, `le_to`, `lt_to`) and the sort comparators built on them.

The comparators order values as `lax.sort` does: floats are first made canonical (-0.0 becomes
0.0 and every NaN the same positive NaN) and then compared in the IEEE total order, so NaNs come
last; complex values compare as (real, imag) pairs. jnp.searchsorted uses them so that its
answers agree with the order of a sorted array.
"""
from __future__ import annotations

import numpy as np

from arrax._src import ad, batching, core, dtypes, mlir
from arrax._src.lax import elementwise as ew
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax.utils import ANY, ORDERED

__all__ = ["eq_to_p", "le_to_p", "lt_to_p", "sort_le_comparator", "sort_lt_comparator"]


def _total_order_compare(name, direction, classes):
  def emit(ctx, x, y):
    return mlir.compare(x, y, direction, ctx.avals_in[0].dtype, total_order=True)
  prim = ew._binop(name, classes, emit, out_dtype=lambda *a: dtypes.bool_)
  batching.defbroadcasting(prim)
  ad.defjvp_zero(prim)
  return prim


eq_to_p = _total_order_compare("eq_to", "EQ", ANY)
le_to_p = _total_order_compare("le_to", "LE", ORDERED)
lt_to_p = _total_order_compare("lt_to", "LT", ORDERED)


def _canonical_float(x):
  """x with -0.0 made 0.0 and every NaN the canonical NaN (JAX's order for sorting)."""
  out = lax.select(lax.eq(x, shape_ops._full_like(x, 0, shape=())), shape_ops._full_like(x, 0), x)
  return lax.select(lax.ne(x, x), shape_ops._full_like(out, np.nan), out)


def _keys(x):
  dt = core.get_aval(x).dtype
  if dtypes.issubdtype(dt, np.complexfloating):
    return [_canonical_float(lax.real(x)), _canonical_float(lax.imag(x))]
  if dtypes.issubdtype(dt, np.floating):
    return [_canonical_float(x)]
  return [x]


def _comparator(last_prim, *operands, num_keys=1):
  """Lexicographic comparison of (x0, y0, x1, y1, ...) on the first `num_keys` pairs; the least
  significant key is compared with `last_prim`, ties on earlier keys fall through to it."""
  xs, ys = [], []
  for x, y in zip(operands[:2 * num_keys:2], operands[1:2 * num_keys:2]):
    xs += _keys(x)
    ys += _keys(y)
  out = None
  for xk, yk in zip(xs[::-1], ys[::-1]):
    if out is None:
      out = last_prim.bind(xk, yk)
    else:
      out = lax.bitwise_or(lt_to_p.bind(xk, yk), lax.bitwise_and(eq_to_p.bind(xk, yk), out))
  return out


def sort_lt_comparator(*operands, num_keys=1):
  """x < y in sort order, for operands given as (x, y) pairs."""
  return _comparator(lt_to_p, *operands, num_keys=num_keys)


def sort_le_comparator(*operands, num_keys=1):
  """x <= y in sort order, for operands given as (x, y) pairs."""
  return _comparator(le_to_p, *operands, num_keys=num_keys)
