"""Batched-CSR sparse arrays (`jax.experimental.sparse`'s BCSR).

A BCSR array of shape `batch + (rows, cols) + dense` stores `data` (`batch + (nse,) + dense`),
the column of each element in `indices` (`batch + (nse,)`) and row pointers `indptr`
(`batch + (rows + 1,)`: the elements of row i are those in [indptr[i], indptr[i+1])). Padding
elements lie past `indptr[-1]` with column `cols`. The primitives (`bcsr_fromdense`,
`bcsr_todense`, `bcsr_extract`, `bcsr_dot_general`) compute through the BCOO forms: the row of
each element comes from `indptr` by a scatter and a cumulative sum.
"""
from __future__ import annotations

import operator

import numpy as np

from arrax._src import ad, core
from arrax._src.numpy import creation, lax_numpy, reductions
from arrax._src.sparse import bcoo
from arrax._src.sparse._base import JAXSparse
from arrax._src.sparse.util import SparseInfo, nfold_vmap, sparse_primitive, zero_tangent
from arrax._src.tree_util import register_pytree_node_class


def _props(indices_shape, indptr_shape, shape, data_shape=None):
  """(n_batch, n_dense, nse) of BCSR buffers, checked against the shape."""
  shape = tuple(shape)
  n_batch = len(indices_shape) - 1
  n_dense = len(shape) - n_batch - 2
  if n_dense < 0 or len(indptr_shape) != n_batch + 1:
    raise ValueError(f"Invalid indices.shape={tuple(indices_shape)}, "
                     f"indptr.shape={tuple(indptr_shape)} for shape={shape}")
  if indptr_shape[-1] != shape[n_batch] + 1:
    raise ValueError(f"indptr shape must match the matrix shape plus 1; got "
                     f"indptr.shape={tuple(indptr_shape)} for shape={shape}")
  nse = indices_shape[-1]
  if data_shape is not None and tuple(data_shape[n_batch:]) != (nse,) + shape[n_batch + 2:]:
    raise ValueError(f"Invalid data.shape={tuple(data_shape)} for nse={nse}, "
                     f"n_batch={n_batch}, n_dense={n_dense}")
  return n_batch, n_dense, nse


def _csr_rows(indptr, nse):
  """The row of each of `nse` elements (unbatched): rows counted by a scatter of ones at
  the row starts and a cumulative sum; past indptr[-1] the row is out of bounds."""
  marks = creation.zeros((nse,), indptr.dtype).at[indptr].add(1, mode="drop")
  return reductions.cumsum(marks) - 1


def _bcsr_to_bcoo(indices, indptr, *, shape):
  n_batch, _, _ = _props(indices.shape, indptr.shape, shape)

  def one(i, p):
    return lax_numpy.stack([_csr_rows(p, i.shape[0]).astype(i.dtype), i], axis=1)
  return nfold_vmap(one, n_batch)(indices, indptr)


def _bcoo_to_bcsr(indices, *, shape, index_dtype):
  n_batch, n_sparse, _, _ = bcoo._props(indices.shape, shape)
  if n_sparse != 2:
    raise ValueError("Must have 2 sparse dimensions to be converted to BCSR.")
  n_rows = shape[n_batch]

  def ptr(i):
    counts = creation.zeros((n_rows,), index_dtype).at[i].add(1, mode="drop")
    return creation.zeros((n_rows + 1,), index_dtype).at[1:].set(reductions.cumsum(counts))
  return indices[..., 1], nfold_vmap(ptr, n_batch, broadcasted=False)(indices[..., 0])


# ---- primitives -------------------------------------------------------------------------------
def _fromdense_impl(mat, *, nse, n_batch, n_dense, index_dtype):
  if mat.ndim - n_dense - n_batch != 2:
    raise ValueError("bcsr_fromdense: must have 2 sparse dimensions.")
  data, ind = bcoo._fromdense_impl(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                   index_dtype=index_dtype)
  indices, indptr = _bcoo_to_bcsr(ind, shape=mat.shape, index_dtype=index_dtype)
  return data, indices, indptr


bcsr_fromdense_p = sparse_primitive("bcsr_fromdense", _fromdense_impl, multiple_results=True,
                                    linear=None)


def _todense_impl(data, indices, indptr, *, spinfo):
  ind = _bcsr_to_bcoo(indices, indptr, shape=spinfo.shape)
  return bcoo._todense_impl(data, ind, spinfo=spinfo)


bcsr_todense_p = sparse_primitive("bcsr_todense", _todense_impl, linear=(0,))


def _extract_impl(indices, indptr, mat):
  ind = _bcsr_to_bcoo(indices, indptr, shape=mat.shape)
  return bcoo._extract_impl(ind, mat, assume_unique=True)


bcsr_extract_p = sparse_primitive("bcsr_extract", _extract_impl, linear=(2,))


@bcsr_fromdense_p.def_jvp
def _fromdense_jvp(primals, tangents, *, nse, n_batch, n_dense, index_dtype):
  (mat,), (mat_dot,) = primals, tangents
  data, indices, indptr = bcsr_fromdense_p.bind(mat, nse=nse, n_batch=n_batch,
                                                n_dense=n_dense, index_dtype=index_dtype)
  data_dot = (zero_tangent(data) if type(mat_dot) is ad.Zero
              else bcsr_extract_p.bind(indices, indptr, mat_dot))
  return [data, indices, indptr], [data_dot, zero_tangent(indices), zero_tangent(indptr)]


@bcsr_fromdense_p.def_transpose
def _fromdense_transpose(ct, mat, *, nse, n_batch, n_dense, index_dtype):
  data, indices, indptr = ct
  if any(type(x) is ad.Zero or ad.is_undefined(x) for x in (indices, indptr)):
    raise ValueError("Transpose with respect to sparse indices is not supported.")
  return [bcsr_todense_p.bind(ad.instantiate(data), indices, indptr,
                              spinfo=SparseInfo(mat.aval.shape))]


def _dot_general_impl(lhs_data, lhs_indices, lhs_indptr, rhs, *, dimension_numbers,
                      preferred_element_type, lhs_spinfo):
  ind = _bcsr_to_bcoo(lhs_indices, lhs_indptr, shape=lhs_spinfo.shape)
  return bcoo._dot_general_impl(lhs_data, ind, rhs, dimension_numbers=dimension_numbers,
                                preferred_element_type=preferred_element_type,
                                lhs_spinfo=lhs_spinfo)


bcsr_dot_general_p = sparse_primitive("bcsr_dot_general", _dot_general_impl, linear=(0, 3))


# ---- functions --------------------------------------------------------------------------------
_TRACED_NSE = ("The error arose for the nse argument of bcsr_fromdense. In order for "
               "BCSR.fromdense() to be used in traced/compiled code, you must pass a concrete "
               "value to the nse (number of stored elements) argument.")


def bcsr_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
  """The BCSR array of the dense `mat` (two sparse dimensions after `n_batch` batch ones)."""
  mat = creation.asarray(mat)
  if nse is None:
    nse = bcoo._count_stored(mat, n_batch, n_dense)
  nse = core.concrete_or_error(operator.index, nse, _TRACED_NSE)
  data, indices, indptr = bcsr_fromdense_p.bind(mat, nse=nse, n_batch=n_batch,
                                                n_dense=n_dense,
                                                index_dtype=np.dtype(index_dtype))
  return BCSR((data, indices, indptr), shape=mat.shape, indices_sorted=True,
              unique_indices=True)


def bcsr_todense(mat):
  """The dense array of the BCSR array `mat`."""
  return bcsr_todense_p.bind(mat.data, mat.indices, mat.indptr, spinfo=mat._info)


def bcsr_extract(indices, indptr, mat):
  """The values of the dense `mat` at the BCSR positions (`indices`, `indptr`)."""
  return bcsr_extract_p.bind(creation.asarray(indices), creation.asarray(indptr),
                             creation.asarray(mat))


def bcsr_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  """`lax.dot_general` with a BCSR operand and a dense one: a dense result."""
  del precision, out_sharding
  if isinstance(rhs, BCSR):
    raise NotImplementedError("bcsr_dot_general: rhs must be dense")
  if isinstance(lhs, BCSR):
    dn = bcoo._canon_dims(dimension_numbers)
    if preferred_element_type is not None:
      preferred_element_type = np.dtype(preferred_element_type)
    rhs = creation.asarray(rhs)
    ind = core.ShapedArray(lhs.indices.shape + (2,), lhs.indices.dtype)
    bcoo._dot_general_check(lhs.data, ind, rhs, dn, preferred_element_type, lhs._info)
    return bcsr_dot_general_p.bind(lhs.data, lhs.indices, lhs.indptr, rhs,
                                   dimension_numbers=dn,
                                   preferred_element_type=preferred_element_type,
                                   lhs_spinfo=lhs._info)
  return bcoo.bcoo_dot_general(lhs, rhs, dimension_numbers=dimension_numbers,
                               preferred_element_type=preferred_element_type)


def bcsr_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
  """`lax.broadcast_in_dim` of a BCSR array."""
  del sharding
  return BCSR.from_bcoo(bcoo.bcoo_broadcast_in_dim(
      mat.to_bcoo(), shape=shape, broadcast_dimensions=broadcast_dimensions))


def bcsr_concatenate(operands, *, dimension):
  """`lax.concatenate` of BCSR arrays."""
  return BCSR.from_bcoo(bcoo.bcoo_concatenate([m.to_bcoo() for m in operands],
                                              dimension=dimension))


def bcsr_sum_duplicates(mat, nse=None):
  """`mat` with the elements at repeated positions summed (see bcoo_sum_duplicates)."""
  return BCSR.from_bcoo(bcoo.bcoo_sum_duplicates(mat.to_bcoo(), nse=nse))


def bcsr_eliminate_zeros(mat, nse=None):
  return BCSR.from_bcoo(bcoo.bcoo_eliminate_zeros(mat.to_bcoo(), nse=nse))


@register_pytree_node_class
class BCSR(JAXSparse):
  """A batched-CSR sparse array: `BCSR((data, indices, indptr), shape=...)`."""

  def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
    self.data, self.indices, self.indptr = map(creation.asarray, args)
    self.indices_sorted = indices_sorted
    self.unique_indices = unique_indices
    super().__init__(args, shape=shape)
    _props(self.indices.shape, self.indptr.shape, self.shape, self.data.shape)

  _bufs = property(lambda self: (self.data, self.indices, self.indptr))
  _info = property(lambda self: SparseInfo(self.shape, self.indices_sorted,
                                           self.unique_indices))
  nse = property(lambda self: self.indices.shape[-1])
  dtype = property(lambda self: self.data.dtype)
  n_batch = property(lambda self: self.indices.ndim - 1)
  n_sparse = property(lambda self: 2)
  n_dense = property(lambda self: self.data.ndim - self.indices.ndim)
  _sparse_shape = property(lambda self: tuple(self.shape[self.n_batch:self.n_batch + 2]))

  def transpose(self, *args, **kwargs):
    raise NotImplementedError("Transpose is not implemented.")

  def tree_flatten(self):
    return (self.data, self.indices, self.indptr), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices, obj.indptr = children
    if aux_data.keys() != {"shape", "indices_sorted", "unique_indices"}:
      raise ValueError(f"BCSR.tree_unflatten: invalid aux_data={aux_data}")
    obj.__dict__.update(**aux_data)
    return obj

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
    shape = tuple(shape)
    if n_dense < 0 or n_batch < 0 or nse < 0:
      raise ValueError(f"Invalid inputs: shape={shape}, n_dense={n_dense}, n_batch={n_batch}, "
                       f"nse={nse}")
    if len(shape) - n_dense - n_batch != 2:
      raise ValueError("BCSR sparse.empty: must have 2 sparse dimensions.")
    batch, (rows, cols), dense = shape[:n_batch], shape[n_batch:n_batch + 2], \
        shape[n_batch + 2:]
    data = creation.zeros((*batch, nse, *dense), dtype)
    indices = creation.full((*batch, nse), cols, index_dtype)
    indptr = creation.zeros((*batch, rows + 1), index_dtype)
    return cls((data, indices, indptr), shape=shape)

  def sum_duplicates(self, nse=None, remove_zeros=True):
    """This array with repeated positions summed (stored zeros removed unless
    `remove_zeros=False`)."""
    if remove_zeros:
      return bcsr_eliminate_zeros(self, nse=nse)
    return bcsr_sum_duplicates(self, nse=nse)

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    """The BCSR array of the dense `mat`."""
    return bcsr_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  def todense(self):
    """The dense array."""
    return bcsr_todense(self)

  def to_bcoo(self):
    """The same array in BCOO format."""
    ind = _bcsr_to_bcoo(self.indices, self.indptr, shape=self.shape)
    return bcoo.BCOO((self.data, ind), shape=self.shape)

  @classmethod
  def from_bcoo(cls, arr):
    """The BCSR form of the BCOO array `arr` (two sparse dimensions)."""
    if arr.n_sparse != 2:
      raise NotImplementedError(f"BSCR.from_bcoo requires n_sparse=2; got "
                                f"arr.n_sparse={arr.n_sparse}")
    if not arr.indices_sorted:
      arr = arr.sort_indices()
    indices, indptr = _bcoo_to_bcsr(arr.indices, shape=arr.shape,
                                    index_dtype=arr.indices.dtype)
    return cls((arr.data, indices, indptr), shape=arr.shape)

  @classmethod
  def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
    """The BCSR array of a scipy.sparse matrix."""
    if n_dense != 0 or n_batch != 0:
      raise NotImplementedError("BCSR from_scipy_sparse with nonzero n_dense/n_batch.")
    mat = mat.tocsr()
    data = creation.asarray(mat.data)
    indices = creation.asarray(mat.indices).astype(index_dtype or np.int32)
    indptr = creation.asarray(mat.indptr).astype(index_dtype or np.int32)
    return cls((data, indices, indptr), shape=mat.shape, indices_sorted=mat.has_sorted_indices,
               unique_indices=mat.has_sorted_indices)
