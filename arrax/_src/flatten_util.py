"""`jax.flatten_util.ravel_pytree`: a pytree of arrays as one 1-D array, and the way back."""
import functools

import numpy as np

from arrax._src import core, dtypes
from arrax._src.lax import broadcasting, creation, shape_ops
from arrax._src.lax import elementwise as lax
from arrax._src.tree_util import tree_flatten, tree_unflatten


class _HashablePartial(functools.partial):
  """A partial that compares equal (and hashes alike) when its function and arguments do, so a
  jitted unravel function is not retraced for an equal one."""

  def __eq__(self, other):
    return (type(other) is _HashablePartial and self.func is other.func
            and self.args == other.args and self.keywords == other.keywords)

  def __hash__(self):
    return hash((self.func, self.args, tuple(sorted(self.keywords.items()))))


def ravel_pytree(pytree):
  """Flatten a pytree of arrays and scalars into one 1-D array (leaf dtypes promoted together)
  and return it with a function that turns such a vector back into the pytree. An empty pytree
  gives an empty float32 vector."""
  leaves, treedef = tree_flatten(pytree)
  flat, unravel_list = _ravel_list(leaves)
  return flat, _HashablePartial(_unravel_pytree, treedef, unravel_list)


def _unravel_pytree(treedef, unravel_list, flat):
  return tree_unflatten(treedef, unravel_list(flat))


def _ravel_list(leaves):
  if not leaves:
    return creation.full([0], 0, "float32"), lambda _: []
  avals = [core.get_aval(x) for x in leaves]
  from_dtypes = tuple(a.dtype for a in avals)
  to_dtype = dtypes.result_type(*from_dtypes)
  shapes = tuple(tuple(a.shape) for a in avals)
  sizes = tuple(int(np.prod(s, dtype=np.int64)) for s in shapes)
  if all(dt == to_dtype for dt in from_dtypes):
    # No conversion: the unravel function accepts any dtype.
    unravel = _HashablePartial(_unravel_single_dtype, sizes, shapes)
  else:
    leaves = [lax.convert_element_type(x, to_dtype) for x in leaves]
    unravel = _HashablePartial(_unravel_list, sizes, shapes, from_dtypes, to_dtype)
  flat = shape_ops.concatenate([broadcasting.reshape(x, (n,)) for x, n in zip(leaves, sizes)], 0)
  return flat, unravel


def _unravel_single_dtype(sizes, shapes, arr):
  chunks = shape_ops.split(arr, sizes)
  return [broadcasting.reshape(c, s) for c, s in zip(chunks, shapes)]


def _unravel_list(sizes, shapes, from_dtypes, to_dtype, arr):
  arr_dtype = core.get_aval(arr).dtype
  if arr_dtype != to_dtype:
    raise TypeError(f"unravel function given array of dtype {arr_dtype}, but expected dtype "
                    f"{to_dtype}")
  return [lax._convert_element_type(c, dt)
          for c, dt in zip(_unravel_single_dtype(sizes, shapes, arr), from_dtypes)]
