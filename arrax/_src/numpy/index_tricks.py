"""Index helpers and structured matrices: the index-expression objects (c_, r_, s_, index_exp,
mgrid, ogrid), index grids (ix_, indices, meshgrid), diagonals and triangles (diag, diagonal,
trace, tri, tril, triu and their index functions), small products (kron, cross, vecdot, matvec,
vecmat, vander), bit packing, and NumPy pass-throughs for printing and buffers.

Sizes, offsets and axes are static, as in JAX. Functions whose result size depends on values
(tril_indices, mask_indices, ...) compute it from static arguments or take `size=`.
"""
from __future__ import annotations

import builtins
import functools
import operator

import numpy as np

from arrax._src import api, array, core, dtypes
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax_ew
from arrax._src.lax import platform, shape_ops
from arrax._src.lax import reductions as lax_reductions
from arrax._src.numpy import creation, indexing, lax_numpy, reductions, searching, ufuncs, util
from arrax._src.numpy.assembly import (_asarray, _concrete, _concrete_index, _dtype, _ndim,
                                       _nonzero_sized, _shape, tile)
from arrax._src.numpy.padding import pad
from arrax._src.numpy.util import canonicalize_axis, check_arraylike, ensure_arraylike
from arrax._src.numpy.vectorize import vectorize

__all__ = [
    "array_repr", "array_str", "c_", "cross", "diag", "diag_indices", "diag_indices_from",
    "diagflat", "diagonal", "fill_diagonal", "from_dlpack", "frombuffer", "fromiter",
    "fromstring", "get_printoptions", "index_exp", "indices", "ix_", "kron", "mask_indices",
    "matvec", "meshgrid", "mgrid", "ogrid", "packbits", "printoptions", "r_", "s_",
    "set_printoptions", "trace", "tri", "tril", "tril_indices", "tril_indices_from", "triu",
    "triu_indices", "triu_indices_from", "unpackbits", "vander", "vecdot", "vecmat",
]


# ---- helpers ----------------------------------------------------------------------------------
_INT32_MAX = np.iinfo(np.int32).max


# ---- index expressions ------------------------------------------------------------------------
def _grid_1d(s, op_name):
  """The 1-d grid of a slice: arange(start, stop, step), or linspace(start, stop, n) when the
  step is the imaginary number n*1j (n points, stop included)."""
  start = _concrete(s.start, f"slice start of jnp.{op_name}\n") or 0
  stop = _concrete(s.stop, f"slice stop of jnp.{op_name}\n")
  step = _concrete(s.step, f"slice step of jnp.{op_name}\n") or 1
  if np.iscomplex(step):
    return creation.linspace(start, stop, int(abs(step)))
  return creation.arange(start, stop, step)


class _Mgrid:
  """`mgrid[s0, s1, ...]`: the dense index grid of the slices, stacked along a new axis 0."""

  def __getitem__(self, key):
    if isinstance(key, slice):
      return _grid_1d(key, "mgrid")
    out = util.promote_dtypes(*(_grid_1d(k, "mgrid") for k in key))
    grids = meshgrid(*out, indexing="ij", sparse=False)
    if len(grids) == 0:
      return creation.arange(0)
    return lax_numpy.stack(grids, 0)


class _Ogrid:
  """`ogrid[s0, s1, ...]`: the open (sparse, broadcastable) index grids of the slices."""

  def __getitem__(self, key):
    if isinstance(key, slice):
      return _grid_1d(key, "ogrid")
    out = util.promote_dtypes(*(_grid_1d(k, "ogrid") for k in key))
    return meshgrid(*out, indexing="ij", sparse=True)


mgrid = _Mgrid()
ogrid = _Ogrid()


class _AxisConcat:
  """Concatenation by index expression: items (arrays, scalars, slices as 1-d grids) are joined
  along `axis` after being made at least `ndmin`-d; a leading string directive
  'axis[,ndmin[,trans1d]]', 'r' or 'c' changes those settings."""
  axis: int
  ndmin: int
  trans1d: int
  op_name: str

  def __getitem__(self, key):
    items = key if isinstance(key, tuple) else (key,)
    params = [self.axis, self.ndmin, self.trans1d, -1]
    directive = items[0]
    if isinstance(directive, str):
      items = items[1:]
      if directive == "r":
        params[-1] = 0
      elif directive == "c":
        params[-1] = 1
      else:
        vec = directive.split(",")
        k = len(vec)
        vec = vec + params[k:] if k < 4 else vec[:3] + [params[-1]]
        try:
          params = list(map(int, vec))
        except ValueError as err:
          raise ValueError(f"could not understand directive {directive!r}") from err
    axis, ndmin, trans1d, matrix = params
    output = []
    for item in items:
      if isinstance(item, slice):
        obj = _grid_1d(item, self.op_name)
        item_ndim = 0
      elif isinstance(item, str):
        raise ValueError("string directive must be placed at the beginning")
      else:
        obj = creation.array(item, copy=False)
        item_ndim = _ndim(obj)
      obj = creation.array(obj, copy=False, ndmin=ndmin)
      if trans1d != -1 and ndmin - item_ndim > 0:
        order = tuple(range(ndmin))
        shifts = ndmin - builtins.abs(ndmin + trans1d + 1) % ndmin
        obj = lax_numpy.transpose(obj, order[shifts:] + order[:shifts])
      output.append(obj)
    res = lax_numpy.concatenate(tuple(output), axis=axis)
    if matrix != -1 and _ndim(res) == 1:
      res = lax_numpy.expand_dims(res, matrix)
    return res

  def __len__(self):
    return 0


class RClass(_AxisConcat):
  """`r_[...]`: concatenation along the first axis (items made at least 1-d)."""
  axis = 0
  ndmin = 1
  trans1d = -1
  op_name = "r_"


class CClass(_AxisConcat):
  """`c_[...]`: concatenation along the last axis (items made at least 2-d, 1-d ones as
  columns)."""
  axis = -1
  ndmin = 2
  trans1d = 0
  op_name = "c_"


r_ = RClass()
c_ = CClass()
s_ = np.s_
index_exp = np.index_exp


# ---- index grids ------------------------------------------------------------------------------
def meshgrid(*xi, copy=True, sparse=False, indexing="xy"):
  """Coordinate grids from 1-d coordinate vectors ('xy': the first two axes swapped, as for
  plotting; 'ij': matrix indexing). `sparse=True` gives broadcastable open grids."""
  args = [_asarray(a) for a in (ensure_arraylike("meshgrid", x) for x in xi)]
  if not copy:
    raise ValueError("jax.numpy.meshgrid only supports copy=True")
  if indexing not in ("xy", "ij"):
    raise ValueError(f"Valid values for indexing are 'xy' and 'ij', got {indexing}")
  if builtins.any(_ndim(a) != 1 for a in args):
    raise ValueError(f"Arguments to jax.numpy.meshgrid must be 1D, got shapes "
                     f"{[_shape(a) for a in args]}")
  swap = indexing == "xy" and len(args) >= 2
  if swap:
    args[0], args[1] = args[1], args[0]
  shape = [1 if sparse else _shape(a)[0] for a in args]

  def target(i, a):
    return [*shape[:i], _shape(a)[0], *shape[i + 1:]] if sparse else shape
  out = [shape_ops.broadcast_in_dim(a, target(i, a), (i,)) for i, a in enumerate(args)]
  if swap:
    out[0], out[1] = out[1], out[0]
  return out


def ix_(*args):
  """Open index grids from 1-d integer index vectors: the i-th has shape 1 except along axis
  i, so indexing with all of them picks the cross product."""
  args = [_asarray(ensure_arraylike("ix", a)) for a in args]
  n = len(args)
  out = []
  for i, a in enumerate(args):
    if _ndim(a) != 1:
      raise ValueError(f"Arguments to jax.numpy.ix_ must be 1-dimensional, got shape "
                       f"{_shape(a)}")
    if _dtype(a) == np.bool_:
      raise NotImplementedError("Boolean arguments to jax.numpy.ix_ are not implemented")
    shape = [1] * n
    shape[i] = _shape(a)[0]
    if _shape(a)[0] == 0:
      # An empty index vector is given NumPy's integer index type.
      dt = dtypes.canonicalize_dtype(np.intp)
      out.append(shape_ops.broadcast_in_dim(lax_ew.scalar_literal(0, dt), shape, ()))
    else:
      out.append(shape_ops.broadcast_in_dim(a, shape, (i,)))
  return tuple(out)


def indices(dimensions, dtype=None, sparse=False):
  """The index grid of shape `dimensions`: stacked along a new axis 0, or (sparse=True) as a
  tuple of broadcastable open grids."""
  dtype = dtypes.check_user_dtype(int if dtype is None else dtype, "indices")
  dims = tuple(_concrete_index(d, "dimensions argument of jnp.indices\n") for d in dimensions)
  n = len(dims)
  out = []
  s = dims
  for i, d in enumerate(dims):
    idx = shape_ops.iota(dtype, d)
    if sparse:
      s = (1,) * i + (d,) + (1,) * (n - i - 1)
    out.append(shape_ops.broadcast_in_dim(idx, s, (i,)))
  if sparse:
    return tuple(out)
  return lax_numpy.stack(out, 0) if out else creation.array([], dtype=dtype)


# ---- diagonals --------------------------------------------------------------------------------
@jit(static_argnames=("offset", "axis1", "axis2"))
def diagonal(a, offset=0, axis1=0, axis2=1):
  """The `offset`-th diagonal of the planes of axes (axis1, axis2), as the last axis."""
  a = ensure_arraylike("diagonal", a)
  if _ndim(a) < 2:
    raise ValueError("diagonal requires an array of at least two dimensions.")
  offset = _concrete_index(offset, "'offset' argument of jnp.diagonal()\n")
  shape = _shape(a)

  def gather_diagonal(a):
    a = lax_numpy.moveaxis(a, (axis1, axis2), (-2, -1))
    n = builtins.max(0, builtins.min(shape[axis1] + builtins.min(offset, 0),
                                     shape[axis2] - builtins.max(offset, 0)))
    i = creation.arange(n)
    j = creation.arange(builtins.abs(offset), builtins.abs(offset) + n)
    return indexing.getitem(a, (Ellipsis, i, j) if offset >= 0 else (Ellipsis, j, i))

  if len(shape) != 2 or shape[0] != shape[1] or offset != 0 or _dtype(a) == np.bool_:
    return gather_diagonal(a)
  # A square matrix: as JAX, a masked column sum on TPU kernels (Mosaic), the gather elsewhere.
  eye = creation.eye(shape[0], dtype=_dtype(a))
  return platform.platform_dependent(
      a, default=gather_diagonal,
      mosaic=lambda a: lax_reductions.reduce_sum(lax_ew.mul(eye, a), (0,)))


def diag(v, k=0):
  """For 1-d `v`, a square matrix with `v` on its k-th diagonal; for 2-d `v`, its k-th
  diagonal."""
  v = ensure_arraylike("diag", v)
  return _diag(_asarray(v), operator.index(k))


@jit(static_argnames=("k",))
def _diag(v, k):
  shape = _shape(v)
  if len(shape) == 1:
    zero = lax_ew.scalar_literal(0, _dtype(v), core.get_aval(v).weak_type)
    n = shape[0] + builtins.abs(k)
    v = shape_ops.pad(v, zero, ((builtins.max(0, -k), builtins.max(0, k), 0),))
    return lax_numpy.where(creation.eye(n, k=k, dtype=bool),
                           indexing.getitem(v, (slice(None), None)), zero)
  if len(shape) == 2:
    return diagonal(v, offset=k)
  raise ValueError("diag input must be 1d or 2d")


def diagflat(v, k=0):
  """A square matrix with the flattened `v` on its k-th diagonal."""
  check_arraylike("diagflat", v)
  flat = lax_numpy.ravel(v)
  n = _shape(flat)[0]
  size = n + builtins.abs(k)
  res = creation.zeros(size * size, dtype=_dtype(flat))
  i = creation.arange(0, size - builtins.abs(k))
  if k >= 0:
    fi = ufuncs.add(ufuncs.add(i, k), ufuncs.multiply(i, size))
  else:
    fi = ufuncs.add(i, ufuncs.multiply(ufuncs.subtract(i, k), size))
  res = res.at[fi].set(flat)
  return lax_numpy.reshape(res, (size, size))


def diag_indices(n, ndim=2):
  """The indices of the main diagonal of an n x ... x n array of `ndim` axes (one iota per
  axis)."""
  n = _concrete_index(n, "'n' argument of jnp.diag_indices()\n")
  ndim = _concrete_index(ndim, "'ndim' argument of jnp.diag_indices()\n")
  if n < 0:
    raise ValueError(f"n argument to diag_indices must be nonnegative, got {n}")
  if ndim < 0:
    raise ValueError(f"ndim argument to diag_indices must be nonnegative, got {ndim}")
  dt = np.dtype(np.int64) if n > _INT32_MAX else dtypes.default_int_dtype()
  return (shape_ops.iota(dt, n),) * ndim


def diag_indices_from(arr):
  """diag_indices for the (square, at least 2-d) array `arr`."""
  arr = ensure_arraylike("diag_indices_from", arr)
  shape = _shape(arr)
  if len(shape) < 2:
    raise ValueError("input array must be at least 2-d")
  if len(set(shape)) != 1:
    raise ValueError("All dimensions of input must be of equal length")
  return diag_indices(shape[0], ndim=len(shape))


def fill_diagonal(a, val, wrap=False, *, inplace=True):
  """`a` with its main diagonal set to `val` (a scalar, or values used in order and repeated).
  Arrays are immutable, so `inplace=False` is required."""
  if inplace:
    raise NotImplementedError("JAX arrays are immutable, must use inplace=False")
  if wrap:
    raise NotImplementedError("wrap=True is not implemented, must use wrap=False")
  a, val = ensure_arraylike("fill_diagonal", a, val)
  a = _asarray(a)
  shape = _shape(a)
  if len(shape) < 2:
    raise ValueError("array must be at least 2-d")
  if len(shape) > 2 and not builtins.all(d == shape[0] for d in shape[1:]):
    raise ValueError("All dimensions of input must be of equal length")
  n = builtins.min(shape)
  idx = diag_indices(n, len(shape))
  if _ndim(val) != 0:
    val = lax_numpy.ravel(val)
    m = _shape(val)[0]
    if m < n:
      val = tile(val, -(-n // m))
    if _shape(val)[0] > n:
      val = indexing.getitem(val, slice(None, n))
  return a.at[idx].set(val)


@jit(static_argnames=("axis1", "axis2", "dtype"))
def trace(a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
  """The sum along the `offset`-th diagonal of the planes of axes (axis1, axis2)."""
  a = ensure_arraylike("trace", a)
  if out is not None:
    raise NotImplementedError("The 'out' argument to jnp.trace is not supported.")
  nd = _ndim(a)
  if canonicalize_axis(axis1, nd) == canonicalize_axis(axis2, nd):
    raise ValueError(f"axis1 and axis2 can not be same. axis1={axis1} and axis2={axis2}")
  if dtype is not None:
    dtype = dtypes.check_user_dtype(dtype, "trace")
  shape = _shape(a)
  a = lax_numpy.moveaxis(a, (axis1, axis2), (-2, -1))
  mask = creation.eye(shape[axis1], shape[axis2], k=offset, dtype=bool)
  a = lax_numpy.where(mask, a, creation.zeros_like(a))
  return reductions.sum(a, axis=(-2, -1), dtype=dtype)


# ---- triangles --------------------------------------------------------------------------------
def _tri(dtype, shape, offset):
  """Booleans (as `dtype`) that are True on and below the `offset`-th diagonal."""
  off = lax_ew.asarray_operand(offset)
  if isinstance(off, (np.ndarray, np.generic)):
    off = creation.asarray(off)
  off_dtype = _dtype(off)
  if not dtypes.issubdtype(off_dtype, np.integer):
    raise TypeError(f"offset must be an integer, got {offset!r}")
  shape_dtype = np.dtype(np.int64 if builtins.any(d > _INT32_MAX for d in shape) else np.int32)
  info, sinfo = np.iinfo(off_dtype), np.iinfo(shape_dtype)
  if info.min < sinfo.min or info.max > sinfo.max:
    shape_dtype = np.dtype(np.int64)
  shape_dtype = dtypes.canonicalize_dtype(shape_dtype)
  below = lax_ew.ge(lax_ew.add(shape_ops.broadcasted_iota(shape_dtype, shape, 0),
                               lax_ew._convert_element_type(off, shape_dtype)),
                    shape_ops.broadcasted_iota(shape_dtype, shape, 1))
  return lax_ew._convert_element_type(below, dtype)


def tri(N, M=None, k=0, dtype=None):
  """An N x M array with ones on and below the k-th diagonal, zeros above (float32 unless
  `dtype` is given)."""
  dtype = np.dtype(np.float32) if dtype is None else dtypes.check_user_dtype(dtype, "tri")
  M = N if M is None else M
  shape = shape_ops._canonicalize_shape((N, M))
  out = _tri(dtype, shape, k)
  return creation.asarray(out) if isinstance(out, core.Literal) else out


@jit(static_argnames=("k",))
def tril(m, k=0):
  """`m` with the elements above the k-th diagonal (of its last two axes) set to zero."""
  m = ensure_arraylike("tril", m)
  shape = _shape(m)
  if len(shape) < 2:
    raise ValueError("Argument to jax.numpy.tril must be at least 2D")
  mask = shape_ops.broadcast(tri(*shape[-2:], k=k, dtype=bool), shape[:-2])
  return lax_ew.select(mask, m, creation.zeros_like(m))


@jit(static_argnames=("k",))
def triu(m, k=0):
  """`m` with the elements below the k-th diagonal (of its last two axes) set to zero."""
  m = ensure_arraylike("triu", m)
  shape = _shape(m)
  if len(shape) < 2:
    raise ValueError("Argument to jax.numpy.triu must be at least 2D")
  mask = shape_ops.broadcast(tri(*shape[-2:], k=k - 1, dtype=bool), shape[:-2])
  return lax_ew.select(mask, creation.zeros_like(m), m)


def _triu_size(n, m, k):
  """The number of elements on and above the k-th diagonal of an n x m matrix."""
  if k < 0:
    return n * m - _triu_size(m, n, 1 - k)
  if k >= m:
    return 0
  mk = builtins.min(n, m - k)
  return mk * (mk + 1) // 2 + mk * (m - k - mk)


def _tri_args(n, k, m):
  n = _concrete_index(n, "n argument of jnp.triu_indices\n")
  k = _concrete_index(k, "k argument of jnp.triu_indices\n")
  m = n if m is None else _concrete_index(m, "m argument of jnp.triu_indices\n")
  return n, k, m


def triu_indices(n, k=0, m=None):
  """The (row, column) indices of the elements on and above the k-th diagonal of an n x m
  matrix, in row-major order."""
  n, k, m = _tri_args(n, k, m)
  return _nonzero_sized(triu(creation.ones((n, m)), k=k), _triu_size(n, m, k))


def tril_indices(n, k=0, m=None):
  """The (row, column) indices of the elements on and below the k-th diagonal of an n x m
  matrix, in row-major order."""
  n, k, m = _tri_args(n, k, m)
  return _nonzero_sized(tril(creation.ones((n, m)), k=k), _triu_size(m, n, -k))


def _shape_2d(name, arr):
  if hasattr(arr, "shape"):
    shape = tuple(arr.shape)
  else:
    shape = _shape(ensure_arraylike(name, arr))
  if len(shape) != 2:
    raise ValueError("Only 2-D inputs are accepted")
  return shape


def triu_indices_from(arr, k=0):
  """triu_indices for the shape of the 2-d array `arr`."""
  n, m = _shape_2d("triu_indices_from", arr)
  return triu_indices(n, k=k, m=m)


def tril_indices_from(arr, k=0):
  """tril_indices for the shape of the 2-d array `arr`."""
  n, m = _shape_2d("tril_indices_from", arr)
  return tril_indices(n, k=k, m=m)


def mask_indices(n, mask_func, k=0, *, size=None):
  """The indices of the nonzero entries of `mask_func(ones((n, n)), k)` (e.g. with tril or
  triu); `size` fixes their number, as for jnp.nonzero."""
  if isinstance(n, core.Tracer):
    # As JAX's ones((n, n)) does for a traced size.
    raise TypeError(f"Shapes must be 1D sequences of concrete values of integer type, got "
                    f"{(n, n)}.")
  mask = mask_func(creation.ones((n, n)), k)
  if size is None:
    return searching.nonzero(mask)
  size = _concrete_index(size, "The size argument of jnp.nonzero\n")
  return _nonzero_sized(_asarray(mask), size)


# ---- products ---------------------------------------------------------------------------------
@jit
def kron(a, b):
  """The Kronecker product: every element of `a` times the whole of `b`, in blocks."""
  check_arraylike("kron", a, b)
  a, b = util.promote_dtypes(a, b)
  na, nb = _ndim(a), _ndim(b)
  if na < nb:
    a = lax_numpy.expand_dims(a, tuple(range(nb - na)))
  elif nb < na:
    b = lax_numpy.expand_dims(b, tuple(range(na - nb)))
  nd = _ndim(a)
  a_spread = lax_numpy.expand_dims(a, tuple(range(1, 2 * nd, 2)))
  b_spread = lax_numpy.expand_dims(b, tuple(range(0, 2 * nd, 2)))
  out_shape = tuple(int(x) * int(y) for x, y in zip(_shape(a), _shape(b)))
  return lax_numpy.reshape(lax_ew.mul(a_spread, b_spread), out_shape)


@jit(static_argnames=("axisa", "axisb", "axisc", "axis"))
def cross(a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
  """The cross product of vectors of length 2 or 3 along the given axes (2-vectors count as
  having a zero third component; two 2-vectors give the scalar z component)."""
  check_arraylike("cross", a, b)
  if axis is not None:
    axisa = axisb = axisc = axis
  a = lax_numpy.moveaxis(a, axisa, -1)
  b = lax_numpy.moveaxis(b, axisb, -1)
  if _shape(a)[-1] not in (2, 3) or _shape(b)[-1] not in (2, 3):
    raise ValueError("Dimension must be either 2 or 3 for cross product")

  def comp(x, i):
    return indexing.getitem(x, (Ellipsis, i))
  if _shape(a)[-1] == 2 and _shape(b)[-1] == 2:
    return ufuncs.subtract(ufuncs.multiply(comp(a, 0), comp(b, 1)),
                           ufuncs.multiply(comp(a, 1), comp(b, 0)))
  a0, a1 = comp(a, 0), comp(a, 1)
  a2 = comp(a, 2) if _shape(a)[-1] == 3 else creation.zeros_like(a0)
  b0, b1 = comp(b, 0), comp(b, 1)
  b2 = comp(b, 2) if _shape(b)[-1] == 3 else creation.zeros_like(b0)
  mul, sub = ufuncs.multiply, ufuncs.subtract
  c = creation.array([sub(mul(a1, b2), mul(a2, b1)), sub(mul(a2, b0), mul(a0, b2)),
                      sub(mul(a0, b1), mul(a1, b0))])
  return lax_numpy.moveaxis(c, 0, axisc)


def vecdot(x1, x2, /, *, axis=-1, precision=None, preferred_element_type=None):
  """The conjugating dot product of vectors along `axis`, broadcast over the other axes."""
  x1, x2 = ensure_arraylike("jnp.vecdot", x1, x2)
  s1, s2 = _shape(x1), _shape(x2)
  if s1[axis] != s2[axis]:
    raise ValueError(f"axes must match; got shapes {s1} and {s2} with axis={axis}")
  x1 = lax_numpy.moveaxis(x1, axis, -1)
  x2 = lax_numpy.moveaxis(x2, axis, -1)
  dot = functools.partial(lax_numpy.vdot, precision=precision,
                          preferred_element_type=preferred_element_type)
  return vectorize(dot, signature="(n),(n)->()")(x1, x2)


@jit
def matvec(x1, x2, /):
  """Matrix-vector products, broadcast over the leading axes."""
  x1, x2 = ensure_arraylike("matvec", x1, x2)
  return vectorize(lax_numpy.matmul, signature="(n,m),(m)->(n)")(x1, x2)


@jit
def vecmat(x1, x2, /):
  """Vector-matrix products (the vector conjugated), broadcast over the leading axes."""
  x1, x2 = ensure_arraylike("matvec", x1, x2)
  return vectorize(lax_numpy.matmul, signature="(n),(n,m)->(m)")(ufuncs.conj(x1), x2)


@jit(static_argnames=("N", "increasing"))
def vander(x, N=None, increasing=False):
  """The Vandermonde matrix of the 1-d `x`: columns x**(N-1), ..., x**0 (or increasing)."""
  x = ensure_arraylike("vander", x)
  if _ndim(x) != 1:
    raise ValueError("x must be a one-dimensional array")
  N = _shape(x)[0] if N is None else _concrete_index(N, "'N' argument of jnp.vander()\n")
  if N < 0:
    raise ValueError("N must be nonnegative")
  powers = shape_ops.iota(_dtype(x), N)
  if not increasing:
    powers = lax_ew.sub(lax_ew.scalar_literal(N - 1, _dtype(x)), powers)
  return ufuncs.power(indexing.getitem(x, (Ellipsis, None)),
                      lax_numpy.expand_dims(powers, tuple(range(_ndim(x)))))


# ---- bit packing ------------------------------------------------------------------------------
@jit(static_argnames=("axis", "bitorder"))
def packbits(a, axis=None, bitorder="big"):
  """Pack the truth values of `a` into uint8, eight to a byte, along `axis` (of the flattened
  array if None), zero-padded at the end."""
  arr = ensure_arraylike("packbits", a)
  dt = _dtype(arr)
  if not (dtypes.issubdtype(dt, np.integer) or dt == np.bool_):
    raise TypeError("Expected an input array of integer or boolean data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  arr = lax_numpy.astype(lax_ew.ne(arr, lax_ew.scalar_literal(0, dt)), "uint8")
  bits = creation.arange(8, dtype="uint8")
  if bitorder == "big":
    bits = indexing.getitem(bits, slice(None, None, -1))
  if axis is None:
    arr = lax_numpy.ravel(arr)
    axis = 0
  arr = lax_numpy.swapaxes(arr, axis, -1)
  rem = _shape(arr)[-1] % 8
  if rem:
    arr = shape_ops.pad(arr, lax_ew.scalar_literal(0, np.uint8),
                        (_ndim(arr) - 1) * [(0, 0, 0)] + [(0, 8 - rem, 0)])
  arr = lax_numpy.reshape(arr, _shape(arr)[:-1] + (_shape(arr)[-1] // 8, 8))
  bits = lax_numpy.expand_dims(bits, tuple(range(_ndim(arr) - 1)))
  packed = lax_numpy.astype(reductions.sum(ufuncs.left_shift(arr, bits), -1), "uint8")
  return lax_numpy.swapaxes(packed, axis, -1)


@jit(static_argnames=("axis", "count", "bitorder"))
def unpackbits(a, axis=None, count=None, bitorder="big"):
  """Unpack the bits of the uint8 array `a` into a uint8 array of 0s and 1s along `axis` (of
  the flattened array if None), keeping `count` of them if given (zero-padded if more)."""
  arr = ensure_arraylike("unpackbits", a)
  if _dtype(arr) != np.uint8:
    raise TypeError("Expected an input array of unsigned byte data type")
  if bitorder not in ("little", "big"):
    raise ValueError("'order' must be either 'little' or 'big'")
  bits = ufuncs.left_shift(1, creation.arange(8, dtype="uint8"))
  if bitorder == "big":
    bits = indexing.getitem(bits, slice(None, None, -1))
  if axis is None:
    arr = lax_numpy.ravel(arr)
    axis = 0
  arr = lax_numpy.swapaxes(arr, axis, -1)
  hit = ufuncs.bitwise_and(indexing.getitem(arr, (Ellipsis, None)),
                           lax_numpy.expand_dims(bits, tuple(range(_ndim(arr)))))
  unpacked = lax_numpy.astype(ufuncs.greater(hit, 0), "uint8")
  unpacked = lax_numpy.reshape(unpacked, _shape(unpacked)[:-2] + (-1,))
  if count is not None:
    n = _shape(unpacked)[-1]
    if count > n:
      unpacked = pad(unpacked, [(0, 0)] * (_ndim(unpacked) - 1) + [(0, count - n)])
    else:
      unpacked = indexing.getitem(unpacked, (Ellipsis, slice(None, count)))
  return lax_numpy.swapaxes(unpacked, axis, -1)


# ---- printing and host buffers (NumPy does the work, as in JAX) -------------------------------
array_repr = np.array_repr
array_str = np.array_str


def get_printoptions():
  """numpy.get_printoptions: arrays print through NumPy, so its options apply."""
  return np.get_printoptions()


def printoptions(*args, **kwargs):
  """numpy.printoptions (a context manager): arrays print through NumPy."""
  return np.printoptions(*args, **kwargs)


def set_printoptions(*args, **kwargs):
  """numpy.set_printoptions: arrays print through NumPy, so its options apply."""
  return np.set_printoptions(*args, **kwargs)


def frombuffer(buffer, dtype=float, count=-1, offset=0):
  """A 1-d array read from the bytes of `buffer` (see numpy.frombuffer)."""
  return creation.asarray(np.frombuffer(buffer=buffer, dtype=dtype, count=count, offset=offset))


def fromstring(string, dtype=float, count=-1, *, sep):
  """A 1-d array parsed from the text `string` with separator `sep` (see numpy.fromstring)."""
  return creation.asarray(np.fromstring(string=string, dtype=dtype, count=count, sep=sep))


def fromiter(*args, **kwargs):
  """Not implemented: consuming an iterator is a side effect, unsafe under transformations."""
  raise NotImplementedError(
      "jnp.fromiter() is not implemented because it may be non-pure and thus unsafe for use "
      "with JIT and other JAX transformations. Consider using jnp.asarray(np.fromiter(...)) "
      "instead, although care should be taken if np.fromiter is used within a jax "
      "transformation because of its potential side-effect of consuming the iterable object.")


def from_dlpack(x, /, *, device=None, copy=None):
  """An array from an object with `__dlpack__` and `__dlpack_device__` (a NumPy array, an arrax
  or JAX array, ...), committed to the object's device, or to `device` (a copy there, which
  `copy=False` forbids); `copy=True` always copies. Other producers' data go through the host
  (jaxlib's zero-copy importer would import jax)."""
  if hasattr(device, "device_set"):
    if len(device.device_set) > 1:
      raise ValueError("from_dlpack can only unpack a dlpack tensor onto a singular device, but "
                       f"a Sharding with {len(device.device_set)} devices was provided.")
    device, = device.device_set
  if not hasattr(x, "__dlpack__") or not hasattr(x, "__dlpack_device__"):
    raise TypeError(
        "The array passed to from_dlpack must have __dlpack__ and __dlpack_device__ methods.")
  dl_type, hardware_id = x.__dlpack_device__()
  if array.dlpack_platform(dl_type) is None:
    raise TypeError("Array passed to from_dlpack is on unsupported device type "
                    f"(DLDeviceType: {dl_type}, array: {x}")
  src = array.device_from_dlpack(dl_type, hardware_id)
  moves = device is not None and device != src
  if moves and copy is not None and not copy:
    raise ValueError(f"Specified {device=} which requires a copy since the source device is "
                     f"{src!r}, however copy=False. Set copy=True or copy=None to perform the "
                     "requested operation.")
  if isinstance(x, array.Array):
    arr = x if not copy else array.device_put_value(x._value, src, dtype=x.dtype)
  else:
    try:
      host = np.from_dlpack(x) if copy is None else np.from_dlpack(x, copy=copy)
    except RuntimeError:   # a dtype NumPy cannot take over DLPack (bfloat16, ...)
      host = np.asarray(x)
    if host.dtype not in dtypes.supported_dtypes:
      raise TypeError(f"JAX only supports number and bool dtypes, got dtype {host.dtype}")
    arr = array.device_put_value(host, src, dtype=dtypes.canonicalize_dtype(host.dtype))
  return api.device_put(arr, device if moves else src)
