"""Batched-COO sparse arrays (`jax.experimental.sparse`'s BCOO), built on arrax's array ops.

A BCOO array of shape `batch + sparse + dense` stores `data` of shape `batch + (nse,) + dense`
and `indices` of shape `batch + (nse, n_sparse)`: each of the `nse` stored elements of a batch
is a block of `dense` shape at the sparse position its row of `indices` gives. Positions out of
bounds (JAX's padding: the sparse shape itself) are ignored; repeated positions add up.

The operations are written with gathers, scatters and dense contractions (so jit, grad and
vmap of functions of dense arrays go through them), not as primitives of their own as in JAX:
jaxprs show their parts. `bcoo_dot_general` (and `@`) contracts the densified array.
"""
from __future__ import annotations

import math
import operator
from collections.abc import Sequence

import numpy as np

from arrax._src import core, dtypes
from arrax._src.batching import vmap
from arrax._src.lax import broadcasting
from arrax._src.lax import dot as lax_dot
from arrax._src.numpy import creation, lax_numpy, searching
from arrax._src.tree_util import register_pytree_node_class

_TRACED_NSE = ("bcoo_fromdense's nse: to use BCOO.fromdense in traced or compiled code, pass "
               "a concrete value for nse (the number of stored elements)")


def _props(indices_shape, shape, data_shape=None):
  """(n_batch, n_sparse, n_dense, nse) of a BCOO's buffers, checked against its shape."""
  shape = tuple(shape)
  if len(indices_shape) < 2:
    raise ValueError(f"Invalid indices.shape={tuple(indices_shape)} for shape={shape}")
  nse, n_sparse = indices_shape[-2:]
  n_batch = len(indices_shape) - 2
  n_dense = len(shape) - n_batch - n_sparse
  if n_dense < 0:
    raise ValueError(f"Invalid indices.shape={tuple(indices_shape)} for shape={shape}")
  if any(s not in (1, t) for s, t in zip(indices_shape[:n_batch], shape[:n_batch])):
    raise ValueError(f"indices batch dimensions not compatible for "
                     f"indices.shape={tuple(indices_shape)}, shape={shape}")
  if data_shape is not None:
    if any(s not in (1, t) for s, t in zip(data_shape[:n_batch], shape[:n_batch])):
      raise ValueError(f"data batch dimensions not compatible for "
                       f"data.shape={tuple(data_shape)}, shape={shape}")
    if tuple(data_shape[n_batch:]) != (nse,) + shape[n_batch + n_sparse:]:
      raise ValueError(f"Invalid data.shape={tuple(data_shape)} for nse={nse}, "
                       f"n_batch={n_batch}, n_dense={n_dense}")
  return n_batch, n_sparse, n_dense, nse


def _index_grids(shape, indices, n_batch, n_sparse):
  """Index tuples (batch positions, sparse positions) addressing each stored element."""
  slices = tuple(np.zeros(s, int) if i == 1 else np.arange(s)
                 for s, i in zip(shape[:n_batch], indices.shape[:n_batch]))
  grid = tuple(np.meshgrid(*slices, indexing="ij", sparse=True))
  sparse_ind = tuple(indices[grid + (slice(None), i)] for i in range(n_sparse))
  batch = np.meshgrid(*(np.arange(s) for s in shape[:n_batch]), np.arange(1), indexing="ij",
                      sparse=True)
  return tuple(batch)[:-1], sparse_ind


def _todense(data, indices, shape):
  n_batch, n_sparse, _, _ = _props(indices.shape, shape, data.shape)
  batch_ind, sparse_ind = _index_grids(shape, indices, n_batch, n_sparse)
  if not sparse_ind:
    data = data.sum(n_batch, keepdims=bool(batch_ind), dtype=data.dtype)
  return creation.zeros(shape, data.dtype).at[batch_ind + sparse_ind].add(data)


def _extract(indices, arr):
  """The values of the dense `arr` at the BCOO `indices` (0 out of bounds)."""
  n_batch, n_sparse, _, nse = _props(indices.shape, arr.shape)
  batch_ind, sparse_ind = _index_grids(arr.shape, indices, n_batch, n_sparse)
  if not sparse_ind + batch_ind:
    out = arr[None]
  else:
    out = arr.at[batch_ind + sparse_ind].get(mode="fill", fill_value=0)
  if n_sparse == 0 and nse != 1:
    shape = list(out.shape)
    shape[n_batch] = nse
    out = broadcasting.broadcast_in_dim(out, tuple(shape), tuple(range(out.ndim)))
  return out


def _nfold_vmap(f, n):
  for _ in range(n):
    f = vmap(f)
  return f


@register_pytree_node_class
class BCOO:
  """A batched-COO sparse array: `BCOO((data, indices), shape=...)`.

  `data` has shape `batch + (nse,) + dense` and `indices` shape `batch + (nse, n_sparse)`
  (integers); the array's shape is `batch + sparse + dense`. Repeated indices add up;
  out-of-bounds ones (padding) are ignored. Make one from a dense array with
  `BCOO.fromdense`; `todense()` gives it back.
  """
  __hash__ = None

  def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
    data, indices = args
    self.data = creation.asarray(data)
    self.indices = creation.asarray(indices)
    self.indices_sorted = indices_sorted
    self.unique_indices = unique_indices
    self.shape = tuple(operator.index(d) for d in shape)
    _props(self.indices.shape, self.shape, self.data.shape)

  nse = property(lambda self: self.indices.shape[-2])
  dtype = property(lambda self: self.data.dtype)
  n_batch = property(lambda self: self.indices.ndim - 2)
  n_sparse = property(lambda self: self.indices.shape[-1])
  n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)
  ndim = property(lambda self: len(self.shape))
  size = property(lambda self: math.prod(self.shape))
  T = property(lambda self: self.transpose())

  def __len__(self):
    return self.shape[0]

  def __repr__(self):
    extra = f", nse={self.nse}"
    if self.n_batch:
      extra += f", n_batch={self.n_batch}"
    if self.n_dense:
      extra += f", n_dense={self.n_dense}"
    out = f"BCOO({self.dtype}{list(self.shape)}{extra})"
    if isinstance(self.data, core.Tracer):
      out = f"{type(self.data).__name__}[{out}]"
    return out

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    """The BCOO array of the dense `mat` (see `bcoo_fromdense`)."""
    return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  def todense(self):
    """The dense array."""
    return bcoo_todense(self)

  def transpose(self, axes=None):
    """The transpose (axes reversed, or permuted by `axes`)."""
    perm = list(range(self.ndim)[::-1] if axes is None else axes)
    out = bcoo_transpose(self, permutation=perm)
    sparse_perm = [p - self.n_batch for p in perm[self.n_batch:self.n_batch + self.n_sparse]]
    is_sorted = self.indices_sorted and tuple(sparse_perm) == tuple(range(self.n_sparse))
    return BCOO((out.data, out.indices), shape=out.shape, indices_sorted=is_sorted,
                unique_indices=self.unique_indices)

  def block_until_ready(self):
    self.data.block_until_ready()
    self.indices.block_until_ready()
    return self

  def __matmul__(self, other):
    if isinstance(other, BCOO):
      raise NotImplementedError("arrax: the product of two BCOO arrays")
    return lax_numpy.matmul(self.todense(), other)

  def __rmatmul__(self, other):
    if isinstance(other, BCOO):
      raise NotImplementedError("arrax: the product of two BCOO arrays")
    return lax_numpy.matmul(other, self.todense())

  def tree_flatten(self):
    return (self.data, self.indices), {"shape": self.shape,
                                       "indices_sorted": self.indices_sorted,
                                       "unique_indices": self.unique_indices}

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices = children
    if aux_data.keys() != {"shape", "indices_sorted", "unique_indices"}:
      raise ValueError(f"BCOO.tree_unflatten: invalid aux_data={aux_data}")
    obj.__dict__.update(**aux_data)
    return obj

  @classmethod
  def _empty(cls, shape, *, dtype=None, index_dtype="int32", n_dense=0, n_batch=0, nse=0):
    shape = tuple(shape)
    n_sparse = len(shape) - n_dense - n_batch
    if n_sparse < 0 or n_dense < 0 or n_batch < 0 or nse < 0:
      raise ValueError(f"Invalid inputs: shape={shape}, n_dense={n_dense}, n_batch={n_batch}, "
                       f"nse={nse}")
    batch, sparse, dense = (shape[:n_batch], shape[n_batch:n_batch + n_sparse],
                            shape[n_batch + n_sparse:])
    data = creation.zeros((*batch, nse, *dense), dtype)
    indices = creation.full((*batch, nse, n_sparse), creation.array(sparse, index_dtype),
                            index_dtype)
    return cls((data, indices), shape=shape, indices_sorted=True, unique_indices=True)

  @classmethod
  def _eye(cls, N, M, k, *, dtype=None, index_dtype="int32", n_batch=0, n_dense=0):
    n_sparse = 2 - n_batch - n_dense
    if n_sparse < 0 or n_dense < 0 or n_batch < 0:
      raise ValueError(f"Invalid inputs: shape={(N, M)}, n_dense={n_dense}, n_batch={n_batch}")
    diag = min(N, M - k) if k > 0 else min(N + k, M)
    if diag <= 0:
      return cls._empty((N, M), dtype=dtype, index_dtype=index_dtype, n_batch=n_batch,
                        n_dense=n_dense)
    if n_dense > 0 or n_batch > 1:
      return cls.fromdense(creation.eye(N, M, k, dtype=dtype), n_batch=n_batch,
                           n_dense=n_dense, index_dtype=index_dtype)
    if n_batch == 0:
      data = creation.ones(diag, dtype=dtype)
      idx = creation.arange(diag, dtype=index_dtype)
      indices = lax_numpy.stack([idx - min(k, 0), idx + max(k, 0)], axis=1).astype(index_dtype)
    else:
      data = np.ones(N, dtype=dtypes.canonicalize_dtype(dtype or np.float32))
      ind = np.arange(N) + k
      if k < 0:
        data[:-k] = 0
        ind[:-k] = M
      elif k > 0:
        data[M - k:] = 0
        ind[M - k] = M
      data = creation.asarray(data[:, None])
      indices = creation.asarray(ind[:, None, None], dtype=index_dtype)
    return cls((data, indices), shape=(N, M), indices_sorted=True, unique_indices=True)


def bcoo_todense(mat):
  """The dense array of the BCOO array `mat`."""
  return _todense(mat.data, mat.indices, mat.shape)


def bcoo_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
  """The BCOO array of the dense `mat`, with `n_batch` leading batch and `n_dense` trailing
  dense dimensions. `nse` (stored elements per batch; default: the most nonzeros of any batch,
  which needs a concrete `mat`) is static: extra slots are padded with zeros at out-of-bounds
  indices, and nonzeros beyond it are dropped."""
  mat = creation.asarray(mat)
  n_sparse = mat.ndim - n_dense - n_batch
  mask = mat != 0
  if n_dense > 0:
    mask = mask.any([-(i + 1) for i in range(n_dense)])
  if nse is None:
    counts = mask.sum(tuple(range(n_batch, mask.ndim)))
    nse = counts.max() if counts.size else 0
  nse = core.concrete_or_error(operator.index, nse, _TRACED_NSE)

  def nonzero(a):
    if a.ndim:
      return searching.nonzero(a, size=nse, fill_value=a.shape[:n_sparse])
    return ()
  found = _nfold_vmap(nonzero, n_batch)(mask)
  if not found:
    indices = creation.zeros(mask.shape[:n_batch] + (nse, 0), index_dtype)
  else:
    indices = lax_numpy.moveaxis(creation.array(found, index_dtype), 0, n_batch + 1)
  data = _extract(indices, mat)
  true_nse = mask.sum(list(range(n_batch, mask.ndim)))[..., None]
  kept = broadcasting.broadcasted_iota(true_nse.dtype, (1,) * n_batch + (nse,), n_batch) < true_nse
  kept = kept[(n_batch + 1) * (slice(None),) + n_dense * (None,)]
  data = lax_numpy.where(kept, data, 0)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_transpose(mat, *, permutation: Sequence[int]):
  """`mat` with its axes permuted (batch axes among themselves, sparse among themselves, dense
  among themselves)."""
  permutation = tuple(int(p) for p in permutation)
  shape = mat.shape
  if tuple(sorted(permutation)) != tuple(range(len(shape))):
    raise TypeError("transpose permutation isn't a permutation of operand dimensions, "
                    f"got permutation {permutation} for shape {shape}.")
  out_shape = tuple(shape[p] for p in permutation)
  if permutation == tuple(range(len(shape))):
    return BCOO((mat.data, mat.indices), shape=out_shape, unique_indices=mat.unique_indices)
  n_batch, n_sparse, n_dense = mat.n_batch, mat.n_sparse, mat.n_dense
  batch_perm = permutation[:n_batch]
  sparse_perm = [p - n_batch for p in permutation[n_batch:n_batch + n_sparse]]
  dense_perm = [p - n_sparse - n_batch for p in permutation[n_batch + n_sparse:]]
  if n_batch and tuple(sorted(batch_perm)) != tuple(range(n_batch)):
    raise NotImplementedError("transpose permutation cannot permute batch axes with non-batch "
                              f"axes; got permutation {permutation}, with n_batch={n_batch}.")
  if n_dense and tuple(sorted(dense_perm)) != tuple(range(n_dense)):
    raise NotImplementedError("transpose permutation cannot permute dense axes with non-dense "
                              f"axes; got permutation {permutation}, with n_dense={n_dense}.")
  indices = mat.indices[..., np.array(sparse_perm, int)].transpose(
      *batch_perm, n_batch, n_batch + 1)
  data = mat.data.transpose(*batch_perm, n_batch, *(d + n_batch + 1 for d in dense_perm))
  return BCOO((data, indices), shape=out_shape, unique_indices=mat.unique_indices)


def bcoo_reduce_sum(mat, *, axes: Sequence[int]):
  """The sum of `mat` over `axes` (non-negative), as a BCOO array."""
  shape = mat.shape
  data, indices = mat.data, mat.indices
  n_batch, n_sparse, _, nse = _props(indices.shape, shape, data.shape)
  axes = sorted(set(axes))
  if not all(0 <= a < len(shape) for a in axes):
    raise ValueError(f"bcoo_reduce_sum: axes {axes} out of range for shape {shape}")
  dense_axes = tuple(a - n_sparse + 1 for a in axes if a >= n_batch + n_sparse)
  data = data.sum(dense_axes)
  if n_sparse:
    bound = lax_numpy.expand_dims(creation.array(shape[n_batch:n_batch + n_sparse],
                                                 dtype=indices.dtype),
                                  tuple(range(indices.ndim - 1)))
    valid = (indices < bound).all(-1)
    if data.ndim > valid.ndim:
      valid = broadcasting.expand_dims(valid, tuple(range(valid.ndim, data.ndim)))
    data = lax_numpy.where(valid, data, 0)
  keep = [i for i in range(n_sparse) if i + n_batch not in axes]
  if not keep:
    ishape = list(indices.shape)
    ishape[n_batch + 1] = 0
    indices = creation.zeros(tuple(ishape), indices.dtype)
  else:
    indices = indices[..., np.array(keep)]
  batch_axes = {a for a in axes if a < n_batch}
  for a in batch_axes:
    if data.shape[a] == 1:
      if indices.shape[a] == 1:
        data = data * shape[a]
      else:
        dshape = list(data.shape)
        dshape[a] = shape[a]
        data = broadcasting.broadcast_in_dim(data, tuple(dshape), tuple(range(data.ndim)))
    elif indices.shape[a] == 1:
      data = data.sum(a)
  new_batch = tuple(sorted(set(range(n_batch)) - batch_axes))
  new_batch_shape = tuple(data.shape[i] for i in new_batch)
  new_nse = nse * math.prod([data.shape[i] for i in batch_axes])
  data = broadcasting.reshape(data, (*new_batch_shape, new_nse, *data.shape[n_batch + 1:]),
                              (*new_batch, *sorted(batch_axes), *range(n_batch, data.ndim)))
  indices = broadcasting.reshape(
      indices, (*new_batch_shape, new_nse, *indices.shape[n_batch + 1:]),
      (*new_batch, *sorted(batch_axes), *range(n_batch, indices.ndim)))
  out_shape = tuple(shape[i] for i in range(len(shape)) if i not in axes)
  return BCOO((data, indices), shape=out_shape)


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  """`lax.dot_general` with a BCOO operand (the other dense): a dense result."""
  del precision, out_sharding
  if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
    raise NotImplementedError("arrax: bcoo_dot_general of two BCOO arrays")
  (lc, rc), (lb, rb) = dimension_numbers
  sparse, contracting, batch = (lhs, lc, lb) if isinstance(lhs, BCOO) else (rhs, rc, rb)
  if isinstance(sparse, BCOO):
    contracting, batch = tuple(contracting), tuple(batch)
    if batch and max(batch) >= sparse.n_batch:
      raise NotImplementedError(
          "bcoo_dot_general batch dimensions must be among the batch dimensions in the sparse "
          f"representation.\ngot lhs_batch={batch}, n_batch={sparse.n_batch}")
    if any(d >= sparse.n_batch + sparse.n_sparse for d in contracting):
      raise NotImplementedError("bcoo_dot_general: contracting over dense dimensions.")
  if isinstance(lhs, BCOO):
    lhs = lhs.todense()
  if isinstance(rhs, BCOO):
    rhs = rhs.todense()
  return lax_dot.dot_general(lhs, rhs, dimension_numbers,
                             preferred_element_type=preferred_element_type)


def todense(arr):
  """The dense array of a sparse array; a dense array passes through."""
  return arr.todense() if isinstance(arr, BCOO) else creation.asarray(arr)


def empty(shape, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """A sparse array of `shape` with no stored elements (nse=0 unless given)."""
  if sparse_format != "bcoo":
    if sparse_format in ("bcsr", "coo", "csr", "csc"):
      raise NotImplementedError(f"arrax: sparse_format={sparse_format!r}")
    raise ValueError(f"sparse_format={sparse_format!r} not recognized; must be one of "
                     "['bcsr', 'bcoo', 'coo', 'csr', 'csc']")
  return BCOO._empty(tuple(shape), dtype=dtype, index_dtype=index_dtype, **kwds)


def eye(N, M=None, k=0, dtype=None, index_dtype="int32", sparse_format="bcoo", **kwds):
  """The sparse N x M matrix with ones on its k-th diagonal."""
  if M is None:
    M = N
  N = core.concrete_or_error(operator.index, N)
  M = core.concrete_or_error(operator.index, M)
  k = core.concrete_or_error(operator.index, k)
  if sparse_format != "bcoo":
    if sparse_format in ("coo", "csr", "csc"):
      raise NotImplementedError(f"arrax: sparse_format={sparse_format!r}")
    raise KeyError(sparse_format)
  return BCOO._eye(N, M, k, dtype=dtype, index_dtype=index_dtype, **kwds)
