"""NumPy's shape manipulation, selection and linear-algebra basics on top of lax."""
from __future__ import annotations

import builtins
import operator

import numpy as np

from arrax._src import core, dtypes, mlir
from arrax._src.array import Array
from arrax._src.jit import jit
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import elementwise as lax, shape_ops
from arrax._src.lax import sort as lax_sort
from arrax._src.lax import stacking
from arrax._src.numpy import util
from arrax._src.numpy.creation import asarray
from arrax._src.numpy.ufuncs import conj, maximum, minimum, multiply
from arrax._src.numpy.util import (_where, broadcast_shapes, canonicalize_axis, check_arraylike,
                                   inline_jit, promote_dtypes, shape_of)


def _asarray(x):
  return x if isinstance(x, (Array, core.Tracer)) else asarray(x)


def shape(a):
  return shape_of(a)


def ndim(a):
  return len(shape_of(a))


def size(a, axis=None):
  s = shape_of(a)
  if axis is None:
    return int(np.prod(s))
  axes = (axis,) if not isinstance(axis, (tuple, list)) else axis
  axes = [canonicalize_axis(i, len(s)) for i in axes]   # out of range: ValueError, as JAX
  if len(set(axes)) != len(axes):
    raise ValueError(f"repeated axis in size: {axis}")
  return int(np.prod([s[i] for i in axes]))


def isscalar(element):
  if isinstance(element, (Array, core.Tracer)):
    return element.ndim == 0
  return np.isscalar(element)


def _canonical_newshape(a_shape, newshape):
  if isinstance(newshape, (int, np.integer)) or (not isinstance(newshape, (tuple, list))
                                                 and hasattr(newshape, "__index__")):
    newshape = (newshape,)
  newshape = tuple(d if mlir.is_symbolic(d) else util.static_dim(d, newshape)
                   for d in newshape)
  size_in = core.shape_size(a_shape)
  if newshape.count(-1) > 1:
    raise TypeError(f"can only specify one unknown axis size with a `-1` value, got {newshape}")
  if -1 in newshape:
    known = core.shape_size([d for d in newshape if not (type(d) is int and d == -1)])
    if known == 0 or size_in % known:
      raise TypeError(f"cannot reshape array of shape {a_shape} (size {size_in}) into shape "
                      f"{newshape} because the product of specified axis sizes ({known}) does "
                      f"not evenly divide {size_in}")
    newshape = tuple(size_in // known if type(d) is int and d == -1 else d for d in newshape)
  if core.shape_size(newshape) != size_in:
    raise TypeError(f"cannot reshape array of shape {a_shape} (size {size_in}) into shape "
                    f"{newshape} (size {core.shape_size(newshape)})")
  return newshape


def reshape(a, shape=None, order="C", *, copy=None, out_sharding=None):
  """Give `a` a new shape with the same number of elements (-1 infers one axis)."""
  check_arraylike("reshape", a)
  a = _asarray(a)
  new = _canonical_newshape(shape_of(a), shape)
  if order == "C":
    return shape_ops.reshape(a, new, out_sharding=out_sharding)
  if order == "F":
    # Column-major: reverse the axes, reshape to the reversed shape, reverse back.
    nd = ndim(a)
    out = shape_ops.reshape(a, new[::-1], tuple(range(nd))[::-1], out_sharding=out_sharding)
    return shape_ops.transpose(out, tuple(range(len(new)))[::-1])
  if order == "A":
    raise NotImplementedError("np.reshape order=A is not implemented.")
  raise ValueError(f"Unexpected value for 'order' argument: {order}.")


def ravel(a, order="C", *, out_sharding=None):
  """Flatten to 1-D."""
  check_arraylike("ravel", a)
  return reshape(a, (size(a),), out_sharding=out_sharding)


def transpose(a, axes=None):
  """Permute axes (reverse them by default)."""
  check_arraylike("transpose", a)
  a = _asarray(a)
  nd = ndim(a)
  axes = tuple(range(nd)[::-1]) if axes is None else tuple(canonicalize_axis(i, nd) for i in axes)
  if sorted(axes) != list(range(nd)):
    raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation {axes} for operand shape {shape_of(a)}.")
  return shape_ops.transpose(a, axes)


def permute_dims(a, /, axes):
  """Permute the axes of `a` by `axes`.

  As in JAX, `axes` must be a permutation of the dimensions (else TypeError); beyond JAX, whose
  lax.transpose rejects them, negative axes count from the end (as in `transpose` and the array
  API standard)."""
  check_arraylike("permute_dims", a)
  a = _asarray(a)
  nd = ndim(a)
  axes = tuple(operator.index(i) for i in axes)
  perm = tuple(i + nd if -nd <= i < 0 else i for i in axes)
  if sorted(perm) != list(range(nd)):
    raise TypeError(f"transpose permutation isn't a permutation of operand dimensions, got "
                    f"permutation {axes} for operand shape {shape_of(a)}.")
  return shape_ops.transpose(a, perm)


def matrix_transpose(x, /):
  """Swap the last two axes."""
  check_arraylike("matrix_transpose", x)
  nd = ndim(x)
  if nd < 2:
    raise ValueError(f"x must be at least two-dimensional for matrix_transpose; got ndim={nd}")
  perm = list(range(nd))
  perm[-1], perm[-2] = perm[-2], perm[-1]
  return transpose(x, perm)


def swapaxes(a, axis1, axis2):
  """Interchange two axes."""
  check_arraylike("swapaxes", a)
  nd = ndim(a)
  perm = list(range(nd))
  i, j = operator.index(axis1), operator.index(axis2)
  for ax in (i, j):   # plain sequence indexing, as JAX's NumPy permutation vector
    if not -nd <= ax < nd:
      raise IndexError(f"index {ax} is out of bounds for axis 0 with size {nd}")
  perm[i], perm[j] = perm[j], perm[i]
  return transpose(a, perm)


def moveaxis(a, source, destination):
  """Move axes to new positions, keeping the order of the others."""
  nd = ndim(a)
  src = [canonicalize_axis(s, nd) for s in np.atleast_1d(source).tolist()]
  dst = [canonicalize_axis(d, nd) for d in np.atleast_1d(destination).tolist()]
  if len(src) != len(dst):
    raise ValueError("Inconsistent number of elements: "
                     f"{len(src)} vs {len(dst)}")
  perm = [i for i in range(nd) if i not in src]
  for d, s in sorted(zip(dst, src)):
    perm.insert(d, s)
  return transpose(a, perm)


def squeeze(a, axis=None):
  """Remove size-1 axes (all of them, or those named by `axis`)."""
  check_arraylike("squeeze", a)
  s = shape_of(a)
  if axis is None:
    axes = tuple(i for i, d in enumerate(s) if d == 1)
  else:
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(canonicalize_axis(i, len(s)) for i in axes)
    for i in axes:
      if s[i] != 1:
        raise ValueError(f"cannot select an axis to squeeze out which has size not equal to "
                         f"one, got shape={s} and dimensions={axes}")
  if not axes:
    return _asarray(a)
  return shape_ops.squeeze(_asarray(a), axes)


def expand_dims(a, axis):
  """Insert size-1 axes at the positions `axis`."""
  check_arraylike("expand_dims", a)
  return shape_ops.expand_dims(_asarray(a), _index_tuple(axis))


def _index_tuple(x):
  """A static index or sequence of indices as a tuple of ints (tracers raise
  ConcretizationTypeError, as JAX's)."""
  x = core.concrete_or_error(None, x, "expected a static index or sequence of indices.")
  try:
    return (operator.index(x),)
  except TypeError:
    return tuple(map(operator.index, x))


def broadcast_to(array, shape, *, out_sharding=None):
  """Broadcast `array` to `shape` (NumPy rules)."""
  check_arraylike("broadcast_to", array)
  arr = array if isinstance(array, core.Literal) else _asarray(array)
  return util._broadcast_to(arr, shape, out_sharding=out_sharding)


def broadcast_arrays(*args):
  """Broadcast arrays against each other."""
  check_arraylike("broadcast_arrays", *args)
  shapes = [shape_of(a) for a in args]
  result = broadcast_shapes(*shapes)
  return [broadcast_to(a, result) for a in args]


def concatenate(arrays, axis=0, dtype=None):
  """Join arrays along an existing axis (axis=None flattens first)."""
  if isinstance(arrays, (Array, core.Tracer)):
    # (a 0-d array holds no arrays to join)
    arrays = [arrays[i] for i in range(shape_of(arrays)[0])] if ndim(arrays) else []
  if not len(arrays):
    raise ValueError("Need at least one array to concatenate.")
  check_arraylike("concatenate", *arrays)
  if axis is None:
    return concatenate([ravel(a) for a in arrays], 0, dtype)
  if ndim(arrays[0]) == 0:
    raise ValueError("Zero-dimensional arrays cannot be concatenated.")
  axis = canonicalize_axis(axis, ndim(arrays[0]))
  arrays = promote_dtypes(*arrays)
  if dtype is not None:
    arrays = [lax._convert_element_type(a, dtypes.check_user_dtype(dtype)) for a in arrays]
  arrays = [_asarray(a) for a in arrays]
  if len(arrays) == 1:
    return arrays[0]
  return shape_ops.concatenate(arrays, axis)




def concat(arrays, /, *, axis=0):
  """Join arrays along an existing axis (the array API's name for concatenate)."""
  return concatenate(arrays, axis)


def stack(arrays, axis=0, out=None, dtype=None):
  """Join arrays of one shape along a new axis (the `stack` primitive, as JAX)."""
  if not len(arrays):
    raise ValueError("Need at least one array to stack.")
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.stack is not supported.")
  if isinstance(arrays, (np.ndarray, Array, core.Tracer)):   # stacked already: its rows
    axis = canonicalize_axis(axis, ndim(arrays))
    return concatenate(expand_dims(arrays, axis + 1), axis, dtype)
  check_arraylike("stack", *arrays)
  if dtype is not None:
    arrays = [asarray(a, dtype=dtype) for a in arrays]
  else:
    arrays = util.promote_dtypes(*arrays)
  return stacking.stack(arrays, axis)


def hstack(tup, dtype=None):
  arrs = [atleast_1d(a) for a in tup]
  return concatenate(arrs, 0 if ndim(arrs[0]) == 1 else 1, dtype)


def vstack(tup, dtype=None):
  return concatenate([atleast_2d(a) for a in tup], 0, dtype)


def _ndmin(a, n):
  """`a` with leading size-1 axes added up to rank `n` (as jnp.array's ndmin)."""
  a = _asarray(a)
  nd = ndim(a)
  return shape_ops.expand_dims(a, tuple(range(n - nd))) if nd < n else a


@jit
def atleast_1d(*arys):
  check_arraylike("atleast_1d", *arys)
  out = [_ndmin(a, 1) for a in arys]
  return out[0] if len(out) == 1 else out


@jit
def atleast_2d(*arys):
  check_arraylike("atleast_2d", *arys)
  out = [_ndmin(a, 2) for a in arys]
  return out[0] if len(out) == 1 else out


def where(condition, x, y):
  """Three-argument where for arrax's own modules (the public jnp.where, with its one-argument
  form, is numpy/searching.py's)."""
  check_arraylike("where", condition, x, y)
  return _where(condition, x, y)


@jit
def clip(arr=None, /, min=None, max=None):  # noqa: A002
  """Limit values to [min, max] (either bound may be None)."""
  if arr is None:
    raise ValueError("clip needs an array to clip (got None).")
  check_arraylike("clip", arr)
  if any(iscomplexobj(t) for t in (arr, min, max)):
    raise ValueError("clip is only defined for real values, but the array or a bound is "
                     "complex; clip its real or imaginary part (real()/imag()) instead.")
  if min is not None:
    arr = maximum(min, arr)
  if max is not None:
    arr = minimum(max, arr)
  return arr if isinstance(arr, (Array, core.Tracer)) else asarray(arr)


def _preferred(a, b):
  dt, _ = dtypes.result_type(a, b, return_weak_type_flag=True)
  return dt


def _dot_dtypes(a, b, preferred_element_type, name):
  if preferred_element_type is None:
    pet, weak = dtypes.result_type(a, b, return_weak_type_flag=True)
  else:
    pet, weak = dtypes.check_user_dtype(preferred_element_type, name), False
  # Operands of different dtypes go to dot_general as they are, as in JAX.
  return a, b, pet, weak


@inline_jit(static_argnames=("precision", "preferred_element_type", "out_sharding"))
def dot(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Dot product: matrix product for 2-D, sum over last/second-to-last axes in general."""
  check_arraylike("dot", a, b)
  a, b = lax.asarray_operand(a), lax.asarray_operand(b)
  a, b, pet, weak = _dot_dtypes(a, b, preferred_element_type, "dot")
  a_nd, b_nd = ndim(a), ndim(b)
  if a_nd == 0 or b_nd == 0:
    contract = ((), ())
  else:
    contract = ((a_nd - 1,), (0,) if b_nd == 1 else (b_nd - 2,))
  out = lax_dot.dot_general(a, b, (contract, ((), ())), precision=precision,
                            preferred_element_type=pet, out_sharding=out_sharding)
  return lax._convert_element_type(out, pet, weak)


@inline_jit(static_argnames=("precision", "preferred_element_type", "out_sharding"))
def matmul(a, b, *, precision=None, preferred_element_type=None, out_sharding=None):
  """Matrix product with NumPy's broadcasting of batch dimensions."""
  check_arraylike("matmul", a, b)
  a, b = lax.asarray_operand(a), lax.asarray_operand(b)
  sa, sb = shape_of(a), shape_of(b)
  for s in (sa, sb):
    if len(s) == 0:
      raise ValueError(f"matmul operand must have at least one dimension, got shapes "
                       f"{sa} and {sb}")
  a, b, pet, weak = _dot_dtypes(a, b, preferred_element_type, "matmul")
  a_mat, b_mat = len(sa) > 1, len(sb) > 1
  a_batch = sa[:-2] if a_mat else ()
  b_batch = sb[:-2] if b_mat else ()
  nbatch = builtins.max(len(a_batch), len(b_batch))
  a_batch = (None,) * (nbatch - len(a_batch)) + tuple(a_batch)
  b_batch = (None,) * (nbatch - len(b_batch)) + tuple(b_batch)
  a_squeeze, b_squeeze, both_squeeze = [], [], []
  a_bdims, b_bdims, idx_batch, idx_a, idx_b = [], [], [], [], []
  for i, (da, db) in enumerate(zip(a_batch, b_batch)):
    if da is None:
      idx_b.append(i)
    elif db is None:
      idx_a.append(i)
    elif da == 1 and db == 1:
      a_squeeze.append(len(idx_batch) + len(idx_a) + len(a_squeeze))
      b_squeeze.append(len(idx_batch) + len(idx_b) + len(b_squeeze))
      both_squeeze.append(i)
    elif da == 1:
      idx_b.append(i)
      a_squeeze.append(len(idx_batch) + len(idx_a) + len(a_squeeze))
    elif db == 1:
      idx_a.append(i)
      b_squeeze.append(len(idx_batch) + len(idx_b) + len(b_squeeze))
    elif da == db:
      a_bdims.append(len(idx_batch) + len(idx_a))
      b_bdims.append(len(idx_batch) + len(idx_b))
      idx_batch.append(i)
    else:
      raise ValueError(f"Incompatible shapes for matmul arguments: {sa} and {sb}")
  if a_mat:
    idx_a.append(nbatch)
  if b_mat:
    idx_b.append(nbatch + a_mat)
  perm = tuple(int(i) for i in np.argsort(np.array(idx_batch + idx_a + idx_b, dtype=np.int64)))
  if a_squeeze:
    a = shape_ops.squeeze(a, tuple(a_squeeze))
  if b_squeeze:
    b = shape_ops.squeeze(b, tuple(b_squeeze))
  contract = ((ndim(a) - 1,), (ndim(b) - 1 - b_mat,))
  out = lax_dot.dot_general(a, b, (contract, (tuple(a_bdims), tuple(b_bdims))),
                            precision=precision, preferred_element_type=pet,
                            out_sharding=out_sharding)
  if perm != tuple(range(len(perm))):
    out = shape_ops.transpose(out, perm)
  if both_squeeze:
    out = shape_ops.expand_dims(out, tuple(both_squeeze))
  return lax._convert_element_type(out, pet, weak)


@inline_jit(static_argnames=("precision", "preferred_element_type"))
def vdot(a, b, *, precision=None, preferred_element_type=None):
  """Dot product of the flattened inputs, the first conjugated."""
  a, b = util.ensure_arraylike("vdot", a, b)
  if dtypes.issubdtype(core.get_aval(a).dtype, np.complexfloating):
    a = conj(a)
  return dot(ravel(a), ravel(b), precision=precision,
             preferred_element_type=preferred_element_type)


@inline_jit(static_argnames=("precision", "preferred_element_type"))
def inner(a, b, *, precision=None, preferred_element_type=None):
  """Sum of products over the last axes."""
  a, b = util.ensure_arraylike("inner", a, b)
  if ndim(a) == 0 or ndim(b) == 0:
    if preferred_element_type is not None:
      a, b = astype(a, preferred_element_type), astype(b, preferred_element_type)
    return multiply(a, b)
  return tensordot(a, b, (-1, -1), precision=precision,
                   preferred_element_type=preferred_element_type)


@inline_jit
def outer(a, b, out=None):
  """Outer product of the flattened inputs."""
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.outer is not supported.")
  check_arraylike("outer", a, b)
  a, b = promote_dtypes(ravel(a), ravel(b))
  op = lax.bitwise_and if core.get_aval(a).dtype == np.bool_ else lax.mul
  return op(expand_dims(a, 1), expand_dims(b, 0))


def tensordot(a, b, axes=2, *, precision=None, preferred_element_type=None,
              out_sharding=None):
  """Sum products over the given axes."""
  a, b = util.ensure_arraylike("tensordot", a, b)
  a, b, pet, weak = _dot_dtypes(a, b, preferred_element_type, "tensordot")
  an, bn = ndim(a), ndim(b)
  if type(axes) is int:
    if axes > min(an, bn):
      raise TypeError(f"Number of tensordot axes (axes {axes}) exceeds input ranks "
                      f"({shape_of(a)} and {shape_of(b)})")
    ca, cb = tuple(range(an - axes, an)), tuple(range(axes))
  elif isinstance(axes, (tuple, list)) and len(axes) == 2:
    ax_a, ax_b = axes
    if isinstance(ax_a, int) != isinstance(ax_b, int) or not all(
        isinstance(x, (int, tuple, list, np.ndarray)) for x in axes):
      raise TypeError("tensordot requires both axes lists to be either ints, tuples or lists, "
                      f"got {ax_a} and {ax_b}")
    ca = tuple(canonicalize_axis(i, an) for i in np.atleast_1d(ax_a).tolist())
    cb = tuple(canonicalize_axis(i, bn) for i in np.atleast_1d(ax_b).tolist())
    if len(ca) != len(cb):
      raise TypeError(f"tensordot requires axes lists to have equal length, got {ax_a} and "
                      f"{ax_b}.")
  else:
    raise TypeError("tensordot axes argument must be an int, a pair of ints, or a pair of "
                    "lists/tuples of ints.")
  out = lax_dot.dot_general(a, b, ((ca, cb), ((), ())), precision=precision,
                            preferred_element_type=pet, out_sharding=out_sharding)
  return lax._convert_element_type(out, pet, weak)


def astype(x, dtype, /, *, copy=False, device=None):
  """Cast to `dtype`. A typed PRNG key array casts only to its own key dtype."""
  if isinstance(getattr(x, "dtype", None), dtypes.ExtendedDType):
    if dtype == x.dtype:
      return x
    raise ValueError(f"Cannot convert_element_type from {x.dtype} to "
                     f"{getattr(dtype, 'name', None) or np.dtype(dtype).name}")
  check_arraylike("astype", x)
  dt = dtypes.default_float_dtype() if dtype is None else dtypes.check_user_dtype(dtype, "astype")
  x = _asarray(x)
  if core.get_aval(x).dtype.kind == "c":
    if dt == np.bool_:   # complex -> bool tests both parts (x != 0), as JAX does
      return lax.ne(x, lax.scalar_literal(0, core.get_aval(x).dtype))
    if dt.kind != "c":
      x = lax.real(x)
  return lax._convert_element_type(x, dt, False)


def result_type(*args):
  return dtypes.result_type(*args)


def promote_types(a, b):
  return dtypes.promote_types(np.dtype(a) if not isinstance(a, type) else a,
                              np.dtype(b) if not isinstance(b, type) else b)


def can_cast(from_, to, casting="safe"):
  return np.can_cast(from_, to, casting)


def iscomplexobj(x):
  """Whether `x` has a complex type: its `.dtype` is looked up first, so scalar-type objects
  (`jnp.complex64`) and dtypes' holders work as well as arrays and scalars."""
  if isinstance(x, (complex, np.complexfloating)):
    return True
  if x is None or isinstance(x, (bool, int, float, str, np.generic)):
    return False
  try:
    typ = x.dtype.type
  except AttributeError:
    typ = _asarray(x).dtype.type
  return dtypes.issubdtype(typ, np.complexfloating)


def isrealobj(x):
  return not iscomplexobj(x)


@jit(static_argnames=("axis", "kind", "order", "stable", "descending"))
def sort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False):
  """A sorted copy (NaNs last)."""
  check_arraylike("sort", a)
  a = _asarray(a)
  if axis is None:
    a, axis = ravel(a), 0
  axis = canonicalize_axis(axis, ndim(a))
  out = lax_sort.sort(a, dimension=axis, is_stable=stable)
  # Descending is the ascending sort reversed (NaNs first), as in JAX.
  return shape_ops.rev(out, (axis,)) if descending else out


@jit(static_argnames=("axis", "kind", "order", "stable", "descending", "dtype"))
def argsort(a, axis=-1, *, kind=None, order=None, stable=True, descending=False, dtype=None):
  """Indices that sort the array (of `dtype`, by default the default integer dtype)."""
  check_arraylike("argsort", a)
  if kind is not None:
    raise TypeError("'kind' argument to argsort is not supported. Use stable=True or "
                    "stable=False to specify sort stability.")
  if order is not None:
    raise TypeError("'order' argument to argsort is not supported.")
  a = _asarray(a)
  if axis is None:
    a, axis = ravel(a), 0
  axis = canonicalize_axis(axis, ndim(a))
  dtype = (dtypes.default_int_dtype() if dtype is None
           else dtypes.check_user_dtype(dtype, "argsort"))
  iota = shape_ops.broadcasted_iota(dtype, shape_of(a), axis)
  if descending and stable:
    # Reversed first, so equal keys keep their original order once the result is reversed.
    a, iota = shape_ops.rev(a, (axis,)), shape_ops.rev(iota, (axis,))
  _, idx = lax_sort.sort((a, iota), dimension=axis, is_stable=stable, num_keys=1)
  return shape_ops.rev(idx, (axis,)) if descending else idx


def flip(m, axis=None):
  """Reverse the order of elements along `axis` (all axes by default)."""
  check_arraylike("flip", m)
  if axis is not None:
    axis = tuple(operator.index(i) for i in np.atleast_1d(axis).tolist())
  return _flip(_asarray(m), axis)


@jit(static_argnames=("axis",))
def _flip(m, axis=None):
  nd = ndim(m)
  axes = tuple(range(nd)) if axis is None else tuple(canonicalize_axis(i, nd) for i in axis)
  return shape_ops.rev(m, axes)


def fliplr(m):
  check_arraylike("fliplr", m)
  return _flip(_asarray(m), (1,))


def flipud(m):
  check_arraylike("flipud", m)
  return _flip(_asarray(m), (0,))


