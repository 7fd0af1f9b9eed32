"""CSR and CSC sparse matrices (`jax.experimental.sparse`'s CSR, CSC): 2-d, `data` and
`indices` (columns; rows for CSC) of length `nse` and row pointers `indptr`. Primitives
`csr_todense`, `csr_fromdense`, `csr_matvec`, `csr_matmat` go through the COO forms (the
row of each element from `indptr` by a scatter and a cumulative sum)."""
from __future__ import annotations

import numpy as np

from arrax._src import ad
from arrax._src.numpy import creation, reductions
from arrax._src.numpy import util as np_util
from arrax._src.sparse import coo
from arrax._src.sparse._base import JAXSparse
from arrax._src.sparse.bcsr import _csr_rows
from arrax._src.sparse.util import sparse_primitive, zero_tangent
from arrax._src.tree_util import register_pytree_node_class


def _rows(indices, indptr):
  return _csr_rows(indptr, indices.shape[0])


def _todense_impl(data, indices, indptr, *, shape):
  return coo._todense_impl(data, _rows(indices, indptr), indices,
                           spinfo=coo.COOInfo(shape=shape))


csr_todense_p = sparse_primitive("csr_todense", _todense_impl, linear=(0,))


def _fromdense_impl(mat, *, nse, index_dtype):
  data, row, col = coo._fromdense_impl(mat, nse=nse, index_dtype=index_dtype)
  n = mat.shape[0]
  counts = creation.zeros((n,), index_dtype).at[row].add(
      (creation.arange(nse) < (mat != 0).sum()).astype(index_dtype))
  indptr = creation.zeros((n + 1,), index_dtype).at[1:].set(reductions.cumsum(counts))
  return data, col, indptr


csr_fromdense_p = sparse_primitive("csr_fromdense", _fromdense_impl, multiple_results=True,
                                   linear=None)


@csr_fromdense_p.def_jvp
def _fromdense_jvp(primals, tangents, *, nse, index_dtype):
  (mat,), (mat_dot,) = primals, tangents
  data, indices, indptr = csr_fromdense_p.bind(mat, nse=nse, index_dtype=index_dtype)
  data_dot = (zero_tangent(data) if type(mat_dot) is ad.Zero
              else mat_dot[_rows(indices, indptr), indices])
  return [data, indices, indptr], [data_dot, zero_tangent(indices), zero_tangent(indptr)]


@csr_fromdense_p.def_transpose
def _fromdense_transpose(ct, mat, *, nse, index_dtype):
  data, indices, indptr = ct
  if any(type(x) is ad.Zero or ad.is_undefined(x) for x in (indices, indptr)):
    raise ValueError("Cannot transpose with respect to sparse indices")
  return [csr_todense_p.bind(ad.instantiate(data), indices, indptr, shape=mat.aval.shape)]


def _matvec_impl(data, indices, indptr, v, *, shape, transpose):
  return coo._matvec_impl(data, _rows(indices, indptr), indices, v,
                          spinfo=coo.COOInfo(shape=shape), transpose=transpose)


csr_matvec_p = sparse_primitive("csr_matvec", _matvec_impl, linear=(0, 3))
csr_matmat_p = sparse_primitive("csr_matmat", _matvec_impl, linear=(0, 3))


def csr_todense(mat):
  """The dense matrix of the CSR matrix `mat`."""
  return csr_todense_p.bind(mat.data, mat.indices, mat.indptr, shape=mat.shape)


def csr_fromdense(mat, *, nse=None, index_dtype=np.int32):
  """The CSR matrix of the dense 2-d `mat` (`nse` stored elements; default: its nonzeros)."""
  mat = creation.asarray(mat)
  nse = coo._fromdense_nse(mat, nse)
  data, indices, indptr = csr_fromdense_p.bind(mat, nse=nse, index_dtype=np.dtype(index_dtype))
  return CSR((data, indices, indptr), shape=mat.shape)


def csr_matvec(mat, v, transpose=False):
  """`mat @ v` (or `mat.T @ v`) of a CSR matrix and a dense vector."""
  return csr_matvec_p.bind(mat.data, mat.indices, mat.indptr, creation.asarray(v),
                           shape=mat.shape, transpose=bool(transpose))


def csr_matmat(mat, B, *, transpose=False):
  """`mat @ B` (or `mat.T @ B`) of a CSR matrix and a dense matrix."""
  return csr_matmat_p.bind(mat.data, mat.indices, mat.indptr, creation.asarray(B),
                           shape=mat.shape, transpose=bool(transpose))


def _matmul(data, indices, indptr, other, shape, transpose):
  if isinstance(other, JAXSparse):
    raise NotImplementedError("matmul between two sparse objects.")
  other = creation.asarray(other)
  data, other = np_util.promote_dtypes(data, other)
  if other.ndim not in (1, 2):
    raise NotImplementedError(f"matmul with object of shape {other.shape}")
  prim = csr_matvec_p if other.ndim == 1 else csr_matmat_p
  return prim.bind(data, indices, indptr, other, shape=shape, transpose=transpose)


class _CompressedBase(JAXSparse):
  def __init__(self, args, *, shape):
    self.data, self.indices, self.indptr = map(creation.asarray, args)
    super().__init__(args, shape=shape)

  nse = property(lambda self: self.data.size)
  dtype = property(lambda self: self.data.dtype)
  _bufs = property(lambda self: (self.data, self.indices, self.indptr))

  def tree_flatten(self):
    return (self.data, self.indices, self.indptr), {"shape": self.shape}

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    if aux_data.keys() != {"shape"}:
      raise ValueError(f"{cls.__name__}.tree_unflatten: invalid aux_data={aux_data}")
    obj.__dict__.update(**aux_data)
    return obj

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32"):
    shape = tuple(shape)
    if len(shape) != 2:
      raise ValueError(f"{cls.__name__} must have ndim=2; got shape={shape}")
    return cls((creation.zeros(0, dtype), creation.zeros(0, index_dtype),
                creation.zeros(shape[cls._ptr_dim] + 1, index_dtype)), shape=shape)


@register_pytree_node_class
class CSR(_CompressedBase):
  """A 2-d CSR sparse matrix: `CSR((data, indices, indptr), shape=...)`."""
  _ptr_dim = 0  # the dimension `indptr` compresses

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
    """The CSR matrix of the dense `mat`."""
    return csr_fromdense(mat, nse=nse, index_dtype=index_dtype)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
    diag = min(N, M - k) if k > 0 else min(N + k, M)
    if diag <= 0:
      return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype)
    data = creation.ones(diag, dtype=dtype)
    idx = np.arange(diag)
    row = idx - min(k, 0)
    counts = np.bincount(row, minlength=N)[:N]
    indptr = np.concatenate([[0], np.cumsum(counts)])
    return cls((data, creation.asarray(idx + max(k, 0), index_dtype),
                creation.asarray(indptr, index_dtype)), shape=(N, M))

  def todense(self):
    """The dense matrix."""
    return csr_todense(self)

  def transpose(self, axes=None):
    """The transpose, as a CSC matrix of the same buffers."""
    assert axes is None
    return CSC((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other):
    return _matmul(self.data, self.indices, self.indptr, other, self.shape, False)


@register_pytree_node_class
class CSC(_CompressedBase):
  """A 2-d CSC sparse matrix: `CSC((data, indices, indptr), shape=...)` (column pointers)."""
  _ptr_dim = 1

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32):
    """The CSC matrix of the dense `mat`."""
    if nse is None:
      nse = (mat != 0).sum()
    return csr_fromdense(mat.T, nse=nse, index_dtype=index_dtype).T

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32"):
    return CSR._eye(M, N, -k, dtype=dtype, index_dtype=index_dtype).T

  def todense(self):
    """The dense matrix."""
    return csr_todense(self.T).T

  def transpose(self, axes=None):
    """The transpose, as a CSR matrix of the same buffers."""
    assert axes is None
    return CSR((self.data, self.indices, self.indptr), shape=self.shape[::-1])

  def __matmul__(self, other):
    return _matmul(self.data, self.indices, self.indptr, other, self.shape[::-1], True)
