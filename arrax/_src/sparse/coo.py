"""COO sparse matrices (`jax.experimental.sparse`'s COO): 2-d, `data`, `row` and `col` of one
length `nse`; repeated positions add up. Primitives `coo_todense`, `coo_fromdense`,
`coo_matvec`, `coo_matmat` computed by scatters and gathers (`util.sparse_primitive`)."""
from __future__ import annotations

import operator
from typing import NamedTuple

import numpy as np

from arrax._src import ad, core, dtypes
from arrax._src.numpy import creation, lax_numpy, searching
from arrax._src.numpy import util as np_util
from arrax._src.sparse._base import JAXSparse
from arrax._src.sparse.util import sparse_primitive, zero_tangent
from arrax._src.tree_util import register_pytree_node_class


class COOInfo(NamedTuple):
  shape: tuple
  rows_sorted: bool = False
  cols_sorted: bool = False


def _todense_impl(data, row, col, *, spinfo):
  return creation.zeros(spinfo.shape, data.dtype).at[row, col].add(data)


coo_todense_p = sparse_primitive("coo_todense", _todense_impl, linear=(0,))


def _fromdense_impl(mat, *, nse, index_dtype):
  row, col = searching.nonzero(mat, size=nse)
  data = mat[row, col]
  true = creation.arange(nse) < (mat != 0).sum()
  data = lax_numpy.where(true, data, creation.zeros((), data.dtype))
  return data, row.astype(index_dtype), col.astype(index_dtype)


coo_fromdense_p = sparse_primitive("coo_fromdense", _fromdense_impl, multiple_results=True,
                                   linear=None)


def _extract(row, col, mat):
  return mat[row, col]


@coo_fromdense_p.def_jvp
def _fromdense_jvp(primals, tangents, *, nse, index_dtype):
  (mat,), (mat_dot,) = primals, tangents
  data, row, col = coo_fromdense_p.bind(mat, nse=nse, index_dtype=index_dtype)
  data_dot = zero_tangent(data) if type(mat_dot) is ad.Zero else _extract(row, col, mat_dot)
  return [data, row, col], [data_dot, zero_tangent(row), zero_tangent(col)]


@coo_fromdense_p.def_transpose
def _fromdense_transpose(ct, mat, *, nse, index_dtype):
  data, row, col = ct
  if any(type(x) is ad.Zero or ad.is_undefined(x) for x in (row, col)):
    raise ValueError("Cannot transpose with respect to sparse indices")
  return [coo_todense_p.bind(ad.instantiate(data), row, col,
                             spinfo=COOInfo(shape=mat.aval.shape))]


def _matvec_impl(data, row, col, v, *, spinfo, transpose):
  dtype = dtypes.result_type(data.dtype, v.dtype)
  data, v = data.astype(dtype), v.astype(dtype)
  rows, cols, n = (col, row, spinfo.shape[1]) if transpose else (row, col, spinfo.shape[0])
  prod = data.reshape(data.shape + (1,) * (v.ndim - 1)) * v[cols]
  return creation.zeros((n,) + v.shape[1:], dtype).at[rows].add(prod)


coo_matvec_p = sparse_primitive("coo_matvec", _matvec_impl, linear=(0, 3))
coo_matmat_p = sparse_primitive("coo_matmat", _matvec_impl, linear=(0, 3))


def coo_todense(mat):
  """The dense matrix of the COO matrix `mat`."""
  return coo_todense_p.bind(mat.data, mat.row, mat.col, spinfo=mat._info)


def _fromdense_nse(mat, nse):
  """The concrete `nse` of a `*_fromdense` call (default: the nonzeros of `mat`)."""
  if nse is None:
    nse = (mat != 0).sum()
  return core.concrete_or_error(operator.index, nse, "coo_fromdense nse argument")


def coo_fromdense(mat, *, nse=None, index_dtype=np.int32):
  """The COO matrix of the dense 2-d `mat` (`nse` stored elements; default: its nonzeros)."""
  mat = creation.asarray(mat)
  nse = _fromdense_nse(mat, nse)
  data, row, col = coo_fromdense_p.bind(mat, nse=nse, index_dtype=np.dtype(index_dtype))
  return COO((data, row, col), shape=mat.shape, rows_sorted=True)


def coo_matvec(mat, v, transpose=False):
  """`mat @ v` (or `mat.T @ v`) of a COO matrix and a dense vector."""
  v = creation.asarray(v)
  return coo_matvec_p.bind(mat.data, mat.row, mat.col, v, spinfo=mat._info,
                           transpose=bool(transpose))


def coo_matmat(mat, B, *, transpose=False):
  """`mat @ B` (or `mat.T @ B`) of a COO matrix and a dense matrix."""
  B = creation.asarray(B)
  return coo_matmat_p.bind(mat.data, mat.row, mat.col, B, spinfo=mat._info,
                           transpose=bool(transpose))


@register_pytree_node_class
class COO(JAXSparse):
  """A 2-d COO sparse matrix: `COO((data, row, col), shape=...)`."""

  def __init__(self, args, *, shape, rows_sorted=False, cols_sorted=False):
    self.data, self.row, self.col = map(creation.asarray, args)
    self._rows_sorted = rows_sorted
    self._cols_sorted = cols_sorted
    super().__init__(args, shape=shape)

  _info = property(lambda self: COOInfo(self.shape, self._rows_sorted, self._cols_sorted))
  _bufs = property(lambda self: (self.data, self.row, self.col))
  nse = property(lambda self: self.data.size)
  dtype = property(lambda self: self.data.dtype)

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
    """The COO matrix of the dense `mat`."""
    return coo_fromdense(mat, nse=nse, index_dtype=index_dtype)

  def _sort_indices(self):
    if self._rows_sorted:
      return self
    perm = searching.lexsort((self.col, self.row))
    return COO((self.data[perm], self.row[perm], self.col[perm]), shape=self.shape,
               rows_sorted=True)

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
    shape = tuple(shape)
    if len(shape) != 2:
      raise ValueError(f"COO must have ndim=2; got shape={shape}")
    data = creation.zeros(0, dtype)
    row = col = creation.zeros(0, index_dtype)
    return cls((data, row, col), shape=shape, rows_sorted=True, cols_sorted=True)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
    diag = min(N, M - k) if k > 0 else min(N + k, M)
    if diag <= 0:
      return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype)
    data = creation.ones(diag, dtype=dtype)
    idx = creation.arange(diag, dtype=index_dtype)
    return cls((data, idx - min(k, 0), idx + max(k, 0)), shape=(N, M), rows_sorted=True,
               cols_sorted=True)

  def todense(self):
    """The dense matrix."""
    return coo_todense(self)

  def transpose(self, axes=None):
    """The transposed matrix (rows and columns swapped)."""
    if axes is not None:
      raise NotImplementedError("axes argument to transpose()")
    return COO((self.data, self.col, self.row), shape=self.shape[::-1],
               rows_sorted=self._cols_sorted, cols_sorted=self._rows_sorted)

  def tree_flatten(self):
    return (self.data, self.row, self.col), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.row, obj.col = children
    if aux_data.keys() != {"shape", "rows_sorted", "cols_sorted"}:
      raise ValueError(f"COO.tree_unflatten: invalid aux_data={aux_data}")
    obj.shape = aux_data["shape"]
    obj._rows_sorted = aux_data["rows_sorted"]
    obj._cols_sorted = aux_data["cols_sorted"]
    return obj

  def __matmul__(self, other):
    if isinstance(other, JAXSparse):
      raise NotImplementedError("matmul between two sparse objects.")
    other = creation.asarray(other)
    data, other = np_util.promote_dtypes(self.data, other)
    mat = COO((data, self.row, self.col), **self._info._asdict())
    if other.ndim == 1:
      return coo_matvec(mat, other)
    if other.ndim == 2:
      return coo_matmat(mat, other)
    raise NotImplementedError(f"matmul with object of shape {other.shape}")
