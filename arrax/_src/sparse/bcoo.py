"""Batched-COO sparse arrays (`jax.experimental.sparse`'s BCOO) and their operations.

A BCOO array of shape `batch + sparse + dense` stores `data` of shape `batch + (nse,) + dense`
and `indices` of shape `batch + (nse, n_sparse)`: each of the `nse` stored elements of a batch
is a block of `dense` shape at the sparse position its row of `indices` gives. Positions out of
bounds (JAX's padding: the sparse shape itself) are ignored; repeated positions add up. Batch
dimensions of `data` or `indices` may have size 1 (broadcast).

The core operations are primitives with JAX's names and parameters (`bcoo_todense`,
`bcoo_fromdense`, `bcoo_extract`, `bcoo_transpose`, `bcoo_dot_general`,
`bcoo_dot_general_sampled`, `bcoo_spdot_general`, `bcoo_sort_indices`, `bcoo_sum_duplicates`),
each computed by an arrax function (gathers, scatters, sorts, dot_general; see
`util.sparse_primitive`). `bcoo_dot_general` of a sparse and a dense operand gathers the dense
operand at the stored indices and scatter-adds the products (no densifying), as JAX's generic
path. The other operations rearrange `data` and `indices` with lax/numpy operations.
"""
from __future__ import annotations

import math
import operator
import warnings
from collections.abc import Sequence

import numpy as np

from arrax._src import ad, core, dtypes, tracing
from arrax._src.batching import vmap
from arrax._src.lax import broadcasting, shape_ops
from arrax._src.lax import dot as lax_dot
from arrax._src.lax import sort as lax_sort
from arrax._src.numpy import (
  assembly,
  creation,
  lax_numpy,
  padding,
  reductions,
  searching,
)
from arrax._src.numpy.index_tricks import meshgrid
from arrax._src.sparse._base import JAXSparse
from arrax._src.sparse.util import (
  SparseEfficiencyError,
  SparseEfficiencyWarning,
  SparseInfo,
  nfold_vmap,
  sparse_primitive,
)
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


def _remaining(original, *removed):
  removed = set().union(*removed)
  return [i for i in original if i not in removed]


def _index_grids(shape, indices, n_batch, n_sparse):
  """Index tuples (batch positions, sparse positions) addressing each stored element."""
  slices = tuple(np.zeros(s, int) if i == 1 else np.arange(s)
                 for s, i in zip(shape[:n_batch], indices.shape[:n_batch]))
  grid = tuple(np.meshgrid(*slices, indexing="ij", sparse=True))
  sparse_ind = tuple(indices[grid + (slice(None), i)] for i in range(n_sparse))
  batch = np.meshgrid(*(np.arange(s) for s in shape[:n_batch]), np.arange(1), indexing="ij",
                      sparse=True)
  return tuple(batch)[:-1], sparse_ind


def _sparse_bound(shape, n_batch, n_sparse, dtype, ndim):
  """The sparse shape as an array broadcastable against indices of rank `ndim`."""
  bound = creation.array(shape[n_batch:n_batch + n_sparse], dtype=dtype)
  return broadcasting.expand_dims(bound, tuple(range(ndim - 1)))


# ---- bcoo_todense -----------------------------------------------------------------------------
def _todense_impl(data, indices, *, spinfo):
  shape = spinfo.shape
  n_batch, n_sparse, _, _ = _props(indices.shape, shape, data.shape)
  batch_ind, sparse_ind = _index_grids(shape, indices, n_batch, n_sparse)
  if data.dtype == np.bool_:   # booleans add up as a logical or
    return _todense_impl(data.astype(np.int32), indices, spinfo=spinfo) > 0
  if not sparse_ind:
    data = data.sum(n_batch, keepdims=bool(batch_ind), dtype=data.dtype)
  return creation.zeros(shape, data.dtype).at[batch_ind + sparse_ind].add(data)


bcoo_todense_p = sparse_primitive("bcoo_todense", _todense_impl, linear=(0,))


def bcoo_todense(mat):
  """The dense array of the BCOO array `mat`."""
  return _bcoo_todense(mat.data, mat.indices, spinfo=mat._info)


def _bcoo_todense(data, indices, *, spinfo):
  return bcoo_todense_p.bind(creation.asarray(data), creation.asarray(indices), spinfo=spinfo)


# ---- bcoo_extract -----------------------------------------------------------------------------
def _first_occurrences(indices):
  """1 where a row of the unbatched `indices` is the first of its value, else 0."""
  nse, n = indices.shape
  if n == 0:
    return (broadcasting.iota(np.int32, nse) == 0)
  cols = [indices[:, i] for i in range(n)]
  *scols, perm = lax_sort.sort((*cols, broadcasting.iota(np.int32, nse)), num_keys=n)
  st = lax_numpy.stack(scols, axis=1)
  new = lax_numpy.concatenate([creation.ones((1,), bool),
                               (st[1:] != st[:-1]).any(-1)]) if nse else creation.ones((0,), bool)
  return creation.zeros((nse,), bool).at[perm].set(new)


def _extract_impl(indices, arr, *, assume_unique):
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
  if not assume_unique:
    first = nfold_vmap(_first_occurrences, n_batch, broadcasted=False)(
        lax_numpy.broadcast_to(indices, out.shape[:n_batch] + indices.shape[n_batch:]))
    first = first.reshape(first.shape + (1,) * (out.ndim - first.ndim))
    out = lax_numpy.where(first, out, creation.zeros((), out.dtype))
  return out


bcoo_extract_p = sparse_primitive("bcoo_extract", _extract_impl, linear=(1,))


def _bcoo_extract(indices, arr, *, assume_unique=True):
  return bcoo_extract_p.bind(creation.asarray(indices), creation.asarray(arr),
                             assume_unique=bool(assume_unique))


def bcoo_extract(sparr, arr, *, assume_unique=None):
  """A BCOO array with `sparr`'s indices holding the values of the dense `arr` there
  (duplicated indices: the value at the first, zeros at the others, unless `assume_unique`)."""
  if not isinstance(sparr, BCOO):
    raise TypeError("First argument to bcoo_extract should be a BCOO array. "
                    f"Got type(sparr)={type(sparr)}")
  a = creation.asarray(arr)
  if a.shape != sparr.shape:
    raise ValueError(f"shape mismatch: sparr.shape={sparr.shape} a.shape={a.shape}")
  if assume_unique is None:
    assume_unique = sparr.unique_indices
  data = _bcoo_extract(sparr.indices, a, assume_unique=assume_unique)
  return BCOO((data, sparr.indices), **sparr._info._asdict())


# ---- bcoo_fromdense ---------------------------------------------------------------------------
def _fromdense_impl(mat, *, nse, n_batch, n_dense, index_dtype):
  n_sparse = mat.ndim - n_dense - n_batch
  mask = mat != 0
  if n_dense > 0:
    mask = mask.any([-(i + 1) for i in range(n_dense)])

  def nonzero(a):
    if a.ndim:
      return searching.nonzero(a, size=nse, fill_value=a.shape[:n_sparse])
    return ()
  found = nfold_vmap(nonzero, n_batch, broadcasted=False)(mask)
  if not found:
    indices = creation.zeros(mask.shape[:n_batch] + (nse, 0), index_dtype)
  else:
    indices = lax_numpy.moveaxis(lax_numpy.stack(found).astype(index_dtype), 0, n_batch + 1)
  data = _extract_impl(indices, mat, assume_unique=True)
  true_nse = mask.sum(list(range(n_batch, mask.ndim)))[..., None]
  kept = broadcasting.broadcasted_iota(true_nse.dtype, (1,) * n_batch + (nse,), n_batch) < true_nse
  kept = kept[(n_batch + 1) * (slice(None),) + n_dense * (None,)]
  data = lax_numpy.where(kept, data, 0)   # (booleans become weak int32 here, as in JAX)
  return data, indices


bcoo_fromdense_p = sparse_primitive("bcoo_fromdense", _fromdense_impl, multiple_results=True,
                                    linear=None)


@bcoo_fromdense_p.def_jvp
def _fromdense_jvp(primals, tangents, *, nse, n_batch, n_dense, index_dtype):
  (mat,), (mat_dot,) = primals, tangents
  data, indices = bcoo_fromdense_p.bind(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                        index_dtype=index_dtype)
  if type(mat_dot) is ad.Zero:
    data_dot = ad.Zero(ad.tangent_aval(core.get_aval(data)))
  else:
    data_dot = _bcoo_extract(indices, mat_dot)
  return [data, indices], [data_dot, ad.Zero(ad.tangent_aval(core.get_aval(indices)))]


@bcoo_fromdense_p.def_transpose
def _fromdense_transpose(ct, mat, *, nse, n_batch, n_dense, index_dtype):
  data, indices = ct
  if type(indices) is ad.Zero or ad.is_undefined(indices):
    raise ValueError("Transpose with respect to sparse indices is not supported.")
  return [_bcoo_todense(ad.instantiate(data), indices, spinfo=SparseInfo(mat.aval.shape))]


def _count_stored(mat, n_batch, n_dense):
  mask = mat != 0
  if n_dense > 0:
    mask = mask.any(tuple(-(i + 1) for i in range(n_dense)))
  counts = mask.sum(tuple(range(n_batch, mask.ndim)))
  return counts.max() if counts.size else 0


def bcoo_fromdense(mat, *, nse=None, n_batch=0, n_dense=0, index_dtype=np.int32):
  """The BCOO array of the dense `mat`, with `n_batch` leading batch and `n_dense` trailing
  dense dimensions. `nse` (stored elements per batch; default: the most nonzeros of any batch,
  which needs a concrete `mat`) is static: extra slots are padded with zeros at out-of-bounds
  indices, and nonzeros beyond it are dropped."""
  mat = creation.asarray(mat)
  if nse is None:
    nse = _count_stored(mat, n_batch, n_dense)
  nse = core.concrete_or_error(operator.index, nse, _TRACED_NSE)
  data, indices = _bcoo_fromdense(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                                  index_dtype=index_dtype)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def _bcoo_fromdense(mat, *, nse, n_batch=0, n_dense=0, index_dtype=np.int32):
  mat = creation.asarray(mat)
  nse = core.concrete_or_error(operator.index, nse, _TRACED_NSE)
  return bcoo_fromdense_p.bind(mat, nse=nse, n_batch=n_batch, n_dense=n_dense,
                               index_dtype=np.dtype(index_dtype))


# ---- bcoo_transpose ---------------------------------------------------------------------------
def _validate_permutation(n_batch, n_sparse, n_dense, permutation, shape):
  if tuple(sorted(permutation)) != tuple(range(len(shape))):
    raise TypeError("transpose permutation isn't a permutation of operand dimensions, "
                    f"got permutation {tuple(permutation)} for shape {tuple(shape)}.")
  batch_perm = permutation[:n_batch]
  sparse_perm = [p - n_batch for p in permutation[n_batch:n_batch + n_sparse]]
  dense_perm = [p - n_sparse - n_batch for p in permutation[n_batch + n_sparse:]]
  if n_batch and tuple(sorted(batch_perm)) != tuple(range(n_batch)):
    raise NotImplementedError("transpose permutation cannot permute batch axes with non-batch "
                              f"axes; got permutation {tuple(permutation)}, with "
                              f"n_batch={n_batch}.")
  if n_dense and tuple(sorted(dense_perm)) != tuple(range(n_dense)):
    raise NotImplementedError("transpose permutation cannot permute dense axes with non-dense "
                              f"axes; got permutation {tuple(permutation)}, with "
                              f"n_dense={n_dense}.")
  return tuple(batch_perm), tuple(sparse_perm), tuple(dense_perm)


def _transpose_impl(data, indices, *, permutation, spinfo):
  n_batch, n_sparse, n_dense, _ = _props(indices.shape, spinfo.shape, data.shape)
  batch_perm, sparse_perm, dense_perm = _validate_permutation(
      n_batch, n_sparse, n_dense, permutation, spinfo.shape)
  if n_sparse:
    indices = indices[..., np.array(sparse_perm, int)]
  indices = indices.transpose(*batch_perm, n_batch, n_batch + 1)
  data = data.transpose(*batch_perm, n_batch, *(d + n_batch + 1 for d in dense_perm))
  return data, indices


bcoo_transpose_p = sparse_primitive("bcoo_transpose", _transpose_impl, multiple_results=True,
                                    linear=(0,))


def bcoo_transpose(mat, *, permutation: Sequence[int]):
  """`mat` with its axes permuted (batch axes among themselves, sparse among themselves, dense
  among themselves)."""
  permutation = tuple(operator.index(p) for p in permutation)
  _validate_permutation(mat.n_batch, mat.n_sparse, mat.n_dense, permutation, mat.shape)
  data, indices = bcoo_transpose_p.bind(mat.data, mat.indices, permutation=permutation,
                                        spinfo=mat._info)
  out_shape = tuple(mat.shape[p] for p in permutation)
  return BCOO((data, indices), shape=out_shape, unique_indices=mat.unique_indices)


# ---- bcoo_dot_general (sparse x dense) ------------------------------------------------------
def _dot_out_aval(lhs_shape, lhs_dtype, rhs_shape, rhs_dtype, dimension_numbers,
                  preferred_element_type):
  """The result type of lax.dot_general for these operand types (its errors too)."""
  jaxpr, _ = tracing.trace_to_jaxpr(
      lambda a, b: [lax_dot.dot_general(a, b, dimension_numbers,
                                        preferred_element_type=preferred_element_type)],
      [core.ShapedArray(tuple(lhs_shape), lhs_dtype), core.ShapedArray(tuple(rhs_shape),
                                                                        rhs_dtype)])
  return jaxpr.out_avals[0]


def _dot_general_impl(lhs_data, lhs_indices, rhs, *, dimension_numbers,
                      preferred_element_type, lhs_spinfo):
  out_aval = _dot_general_check(lhs_data, lhs_indices, rhs, dimension_numbers,
                                preferred_element_type, lhs_spinfo)
  n_batch, n_sparse, _, _ = _props(lhs_indices.shape, lhs_spinfo.shape, lhs_data.shape)
  (lc, rc), (lb, rb) = dimension_numbers
  pairs_b = [(l, r) for l, r in zip(lc, rc) if l < n_batch]
  pairs_s = [(l, r) for l, r in zip(lc, rc) if l >= n_batch]
  lcb, rcb = [p[0] for p in pairs_b], [p[1] for p in pairs_b]
  lcs, rcs = [p[0] for p in pairs_s], [p[1] for p in pairs_s]
  if lb or lcb:
    perm = [*lb, *_remaining(range(n_batch), lb, lcb), *lcb]
    lhs_data = lhs_data.transpose(*perm, *range(n_batch, lhs_data.ndim))
    lhs_indices = lhs_indices.transpose(*perm, *range(n_batch, lhs_indices.ndim))
  if lcs:
    lcs_rel = [d - n_batch for d in lcs]
    sperm = np.array([*lcs_rel, *_remaining(range(n_sparse), lcs_rel)], int)
    lhs_indices = lhs_indices[..., sperm]
  rhs = rhs.transpose(*rb, *rcb, *rcs, *_remaining(range(rhs.ndim), rb, rc))
  dtype = out_aval.dtype
  n_cb = len(lcb)

  def one(out, data, indices, r):
    idx = [indices[..., i] for i in range(n_sparse)]
    right, left = idx[:len(lcs)], idx[len(lcs):]
    if right and indices.ndim > 2:
      grids = meshgrid(*(creation.arange(n) for n in indices.shape[:-1]), indexing="ij")
      right = [*grids[:indices.ndim - 2], *right]
    gathered = r.at[tuple(right)].get(mode="fill", fill_value=0) if right else r
    bdims = list(range(n_cb + bool(lcs)))
    if data.dtype != dtype:
      data = data.astype(dtype)
    if gathered.dtype != dtype:
      gathered = gathered.astype(dtype)
    prod = lax_dot.dot_general(data, gathered, (([], []), (bdims, bdims)),
                               preferred_element_type=preferred_element_type)
    if left:
      return out.at[tuple(left)].add(prod)
    return prod.sum(tuple(range(prod.ndim - out.ndim)), dtype=out.dtype)

  fn = nfold_vmap(one, n_batch - n_cb)
  rhs = broadcasting.expand_dims(rhs, tuple(range(len(rb), n_batch - n_cb)))
  out = creation.zeros(out_aval.shape, dtype)
  return fn(out, lhs_data, lhs_indices, rhs)


def _dot_general_check(lhs_data, lhs_indices, rhs, dimension_numbers, preferred_element_type,
                       lhs_spinfo):
  out_aval = _dot_out_aval(lhs_spinfo.shape, lhs_data.dtype, rhs.shape, rhs.dtype,
                           dimension_numbers, preferred_element_type)
  (lc, _), (lb, _) = dimension_numbers
  n_batch, n_sparse, _, _ = _props(lhs_indices.shape, lhs_spinfo.shape, lhs_data.shape)
  if lb and max(lb) >= n_batch:
    raise NotImplementedError(
        "bcoo_dot_general batch dimensions must be among the batch dimensions in the sparse "
        f"representation.\ngot lhs_batch={tuple(lb)}, n_batch={n_batch}")
  if any(d >= n_batch + n_sparse for d in lc):
    raise NotImplementedError("bcoo_dot_general: contracting over dense dimensions.")
  return out_aval


bcoo_dot_general_p = sparse_primitive("bcoo_dot_general", _dot_general_impl, linear=(0, 2))


def _canon_dims(dimension_numbers):
  (lc, rc), (lb, rb) = dimension_numbers
  tup = lambda d: (operator.index(d),) if np.ndim(d) == 0 else tuple(map(operator.index, d))
  return ((tup(lc), tup(rc)), (tup(lb), tup(rb)))


def _bcoo_dot_general(lhs_data, lhs_indices, rhs, *, dimension_numbers,
                      preferred_element_type, lhs_spinfo):
  dn = _canon_dims(dimension_numbers)
  if preferred_element_type is not None:
    preferred_element_type = np.dtype(preferred_element_type)
  lhs_data, lhs_indices, rhs = map(creation.asarray, (lhs_data, lhs_indices, rhs))
  _dot_general_check(lhs_data, lhs_indices, rhs, dn, preferred_element_type, lhs_spinfo)
  return bcoo_dot_general_p.bind(lhs_data, lhs_indices, rhs, dimension_numbers=dn,
                                 preferred_element_type=preferred_element_type,
                                 lhs_spinfo=lhs_spinfo)


def _bcoo_rdot_general(lhs, rhs_data, rhs_indices, *, dimension_numbers,
                       preferred_element_type, rhs_spinfo):
  dn = _canon_dims(dimension_numbers)
  reversed_dn = tuple(d[::-1] for d in dn)
  result = _bcoo_dot_general(rhs_data, rhs_indices, lhs, lhs_spinfo=rhs_spinfo,
                             dimension_numbers=reversed_dn,
                             preferred_element_type=preferred_element_type)
  n_contract, n_batch = len(dn[0][0]), len(dn[1][0])
  n_swap = len(rhs_spinfo.shape) - n_contract
  perm = (*range(n_batch), *range(n_swap, result.ndim), *range(n_batch, n_swap))
  return broadcasting.transpose(result, perm)


def bcoo_dot_general(lhs, rhs, *, dimension_numbers, precision=None,
                     preferred_element_type=None, out_sharding=None):
  """`lax.dot_general` with BCOO operands: dense when one operand is dense, BCOO when both
  are sparse."""
  del precision, out_sharding
  if isinstance(lhs, BCOO) and isinstance(rhs, BCOO):
    dn = _canon_dims(dimension_numbers)
    shape = _dot_out_aval(lhs.shape, lhs.dtype, rhs.shape, rhs.dtype, dn,
                          preferred_element_type).shape
    bufs = _bcoo_spdot_general(lhs.data, lhs.indices, rhs.data, rhs.indices,
                               lhs_spinfo=lhs._info, rhs_spinfo=rhs._info,
                               dimension_numbers=dn,
                               preferred_element_type=preferred_element_type)
    return BCOO(bufs, shape=shape)
  if isinstance(lhs, BCOO):
    return _bcoo_dot_general(lhs.data, lhs.indices, rhs, dimension_numbers=dimension_numbers,
                             preferred_element_type=preferred_element_type,
                             lhs_spinfo=lhs._info)
  if isinstance(rhs, BCOO):
    return _bcoo_rdot_general(lhs, rhs.data, rhs.indices, dimension_numbers=dimension_numbers,
                              preferred_element_type=preferred_element_type,
                              rhs_spinfo=rhs._info)
  return lax_dot.dot_general(lhs, rhs, _canon_dims(dimension_numbers),
                             preferred_element_type=preferred_element_type)


# ---- bcoo_dot_general_sampled -----------------------------------------------------------------
def _dot_general_sampled_impl(A, B, indices, *, dimension_numbers):
  dense = lax_dot.dot_general(A, B, dimension_numbers)
  return _extract_impl(indices, dense, assume_unique=True)


bcoo_dot_general_sampled_p = sparse_primitive(
    "bcoo_dot_general_sampled", _dot_general_sampled_impl, linear=(0, 1))


def bcoo_dot_general_sampled(A, B, indices, *, dimension_numbers):
  """The values of `lax.dot_general(A, B)` at the BCOO `indices` only (the data of the
  result; the transpose of bcoo_dot_general with respect to the sparse data)."""
  dn = _canon_dims(dimension_numbers)
  A, B, indices = map(creation.asarray, (A, B, indices))
  return bcoo_dot_general_sampled_p.bind(A, B, indices, dimension_numbers=dn)


# ---- bcoo_spdot_general (sparse x sparse) -----------------------------------------------------
def _spdot_out(lhs_data, lhs_indices, rhs_data, rhs_indices, lhs_spinfo, rhs_spinfo,
               dimension_numbers, preferred_element_type):
  """(n_batch of lhs, of rhs, out_nse, out aval) after JAX's checks."""
  out_aval = _dot_out_aval(lhs_spinfo.shape, lhs_data.dtype, rhs_spinfo.shape, rhs_data.dtype,
                           dimension_numbers, preferred_element_type)
  lnb, lns, lnd, lnse = _props(lhs_indices.shape, lhs_spinfo.shape, lhs_data.shape)
  rnb, rns, rnd, rnse = _props(rhs_indices.shape, rhs_spinfo.shape, rhs_data.shape)
  (lc, rc), (lb, rb) = dimension_numbers
  if lnd or rnd:
    raise NotImplementedError("bcoo_spdot_general with dense dimensions.")
  if (lb and max(lb) >= lnb) or (rb and max(rb) >= rnb):
    raise NotImplementedError("bcoo_spdot_general: batch_dims must correspond to batch "
                              "dimensions of the sparse representation.")
  for c, nb, ns in ((lc, lnb, lns), (rc, rnb, rns)):
    if c and (min(c) < nb or max(c) >= nb + ns):
      raise NotImplementedError("bcoo_spdot_general only supports contraction of sparse "
                                "indices.")
  if rnb > len(rb) and lns > len(lc):
    raise ValueError("bcoo_spdot_general: cannot have unused batch dims on rhs with unused "
                     "sparse dims on lhs.")
  out_nse = (lnse if lns > len(lc) else 1) * (rnse if rns > len(rc) else 1)
  out_n_batch = lnb + rnb - len(lb)
  out_nse = min(out_nse, math.prod(out_aval.shape[out_n_batch:]))
  return lnb, rnb, out_nse, out_aval


def _spdot_unbatched(ld, li, rd, ri, *, lshape, rshape, lc, rc, out_nse, dtype):
  lnse, rnse = li.shape[0], ri.shape[0]
  take = lambda ind, cols: ind[:, np.array(cols, int)]
  l_i, r_i = take(li, lc), take(ri, rc)
  l_j = take(li, _remaining(range(li.shape[1]), lc))
  r_j = take(ri, _remaining(range(ri.shape[1]), rc))
  overlap = (l_i[:, None] == r_i[None, :]).all(-1)
  l_ok = (l_i < creation.array([lshape[d] for d in lc], l_i.dtype)[None]).all(-1)
  r_ok = (r_i < creation.array([rshape[d] for d in rc], r_i.dtype)[None]).all(-1)
  prod = ld.astype(dtype)[:, None] * rd.astype(dtype)[None, :]
  data = lax_numpy.where(overlap & l_ok[:, None] & r_ok[None, :], prod,
                         creation.zeros((), dtype)).ravel()
  idx_dtype = dtypes.result_type(li.dtype, ri.dtype)
  ind = lax_numpy.concatenate([
      lax_numpy.broadcast_to(l_j[:, None].astype(idx_dtype), (lnse, rnse, l_j.shape[-1])),
      lax_numpy.broadcast_to(r_j[None, :].astype(idx_dtype), (lnse, rnse, r_j.shape[-1]))],
      axis=-1).reshape(lnse * rnse, l_j.shape[-1] + r_j.shape[-1])
  out_shape = (*(s for i, s in enumerate(lshape) if i not in lc),
               *(s for i, s in enumerate(rshape) if i not in rc))
  return _sum_duplicates_impl(data, ind, spinfo=SparseInfo(out_shape), nse=out_nse)


def _spdot_general_impl(lhs_data, lhs_indices, rhs_data, rhs_indices, *, lhs_spinfo,
                        rhs_spinfo, dimension_numbers, preferred_element_type):
  lnb, rnb, out_nse, out_aval = _spdot_out(lhs_data, lhs_indices, rhs_data, rhs_indices,
                                           lhs_spinfo, rhs_spinfo, dimension_numbers,
                                           preferred_element_type)
  (lc, rc), (lb, rb) = dimension_numbers
  lperm = [*lb, *_remaining(range(lnb), lb)]
  rperm = [*rb, *_remaining(range(rnb), rb)]
  tr = lambda x, perm, nb: x.transpose(*perm, *range(nb, x.ndim))
  lhs_data, lhs_indices = tr(lhs_data, lperm, lnb), tr(lhs_indices, lperm, lnb)
  rhs_data, rhs_indices = tr(rhs_data, rperm, rnb), tr(rhs_indices, rperm, rnb)

  def fn(ld, li, rd, ri):
    return _spdot_unbatched(ld, li, rd, ri, lshape=lhs_spinfo.shape[lnb:],
                            rshape=rhs_spinfo.shape[rnb:], lc=[d - lnb for d in lc],
                            rc=[d - rnb for d in rc], out_nse=out_nse, dtype=out_aval.dtype)
  fn = nfold_vmap(fn, rnb - len(rb), in_axes=(None, None, 0, 0))
  fn = nfold_vmap(fn, lnb - len(lb), in_axes=(0, 0, None, None))
  fn = nfold_vmap(fn, len(lb))
  data, indices = fn(lhs_data, lhs_indices, rhs_data, rhs_indices)
  return data, indices


bcoo_spdot_general_p = sparse_primitive("bcoo_spdot_general", _spdot_general_impl,
                                        multiple_results=True, linear=(0, 2))


def _bcoo_spdot_general(lhs_data, lhs_indices, rhs_data, rhs_indices, *, lhs_spinfo,
                        rhs_spinfo, dimension_numbers, preferred_element_type):
  dn = _canon_dims(dimension_numbers)
  if preferred_element_type is not None:
    preferred_element_type = np.dtype(preferred_element_type)
  args = tuple(map(creation.asarray, (lhs_data, lhs_indices, rhs_data, rhs_indices)))
  _spdot_out(*args, lhs_spinfo, rhs_spinfo, dn, preferred_element_type)
  return bcoo_spdot_general_p.bind(*args, lhs_spinfo=lhs_spinfo, rhs_spinfo=rhs_spinfo,
                                   dimension_numbers=dn,
                                   preferred_element_type=preferred_element_type)


# ---- bcoo_sort_indices, bcoo_sum_duplicates ---------------------------------------------------
def _sort_unbatched(indices):
  nse, n = indices.shape
  cols = [indices[:, i] for i in range(n)]
  *cols, perm = lax_sort.sort((*cols, broadcasting.iota(indices.dtype, nse)), num_keys=n)
  return lax_numpy.stack(cols, axis=1), perm


def _sort_indices_impl(data, indices, *, spinfo):
  n_batch, n_sparse, _, _ = _props(indices.shape, spinfo.shape, data.shape)
  if n_sparse == 0:
    return data, indices
  indices, perm = nfold_vmap(_sort_unbatched, n_batch, broadcasted=False)(indices)
  data = nfold_vmap(lambda d, p: d[p], n_batch)(data, perm)
  return data, indices


bcoo_sort_indices_p = sparse_primitive("bcoo_sort_indices", _sort_indices_impl,
                                       multiple_results=True, linear=(0,))


def bcoo_sort_indices(mat):
  """`mat` with its stored elements sorted by index (lexicographically)."""
  data, indices = bcoo_sort_indices_p.bind(mat.data, mat.indices, spinfo=mat._info)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True,
              unique_indices=mat.unique_indices)


def _unique_unbatched(indices, *, sparse_shape, nse_out):
  """(unique indices padded to nse_out, slot of each input element, number of in-bounds
  unique indices) of the unbatched `indices`."""
  nse, n = indices.shape
  fill = creation.array(sparse_shape, indices.dtype)[None]
  oob = (indices >= fill).any(-1, keepdims=True)
  indices = lax_numpy.where(oob, fill, indices)
  if nse == 0:
    return (lax_numpy.broadcast_to(fill, (nse_out, n)), creation.zeros((0,), np.int32),
            creation.zeros((), np.int32))
  cols = [indices[:, i] for i in range(n)]
  *scols, perm = lax_sort.sort((*cols, broadcasting.iota(np.int32, nse)), num_keys=n)
  st = lax_numpy.stack(scols, axis=1)
  new = lax_numpy.concatenate([creation.ones((1,), bool), (st[1:] != st[:-1]).any(-1)])
  seg = reductions.cumsum(new.astype(np.int32)) - 1
  mapping = creation.zeros((nse,), np.int32).at[perm].set(seg)
  out = lax_numpy.broadcast_to(fill, (nse_out, n)).at[seg].set(st, mode="drop")
  true_nse = seg[-1] + 1 - (st[-1] == fill[0]).all().astype(np.int32)
  return out, mapping, true_nse


def _sum_duplicates_impl(data, indices, *, spinfo, nse):
  n_batch, n_sparse, _, _ = _props(indices.shape, spinfo.shape, data.shape)
  if n_sparse == 0:
    out_nse = 1 if nse is None else nse
    data = data.sum(n_batch, keepdims=True, dtype=data.dtype)
    ind = creation.zeros(indices.shape[:n_batch] + (out_nse, 0), indices.dtype)
    bshape = tuple(map(max, indices.shape[:n_batch], data.shape[:n_batch]))
    if out_nse == 0:
      return creation.zeros(bshape + (0,) + data.shape[n_batch + 1:], data.dtype), ind
    pad = [(0, 0)] * data.ndim
    pad[n_batch] = (0, out_nse - 1)
    return padding.pad(data, pad), ind
  sparse_shape = spinfo.shape[n_batch:n_batch + n_sparse]
  uniq = lambda i: _unique_unbatched(i, sparse_shape=sparse_shape, nse_out=nse)
  ind_out, mapping, _ = nfold_vmap(uniq, n_batch, broadcasted=False)(indices)
  bshape = tuple(map(max, indices.shape[:n_batch], data.shape[:n_batch]))
  data_out = creation.zeros((*bshape, nse, *data.shape[n_batch + 1:]), data.dtype)
  permute = nfold_vmap(lambda o, m, d: o.at[m].add(d, mode="drop"), n_batch)
  return permute(data_out, mapping, data), ind_out


bcoo_sum_duplicates_p = sparse_primitive("bcoo_sum_duplicates", _sum_duplicates_impl,
                                         multiple_results=True, linear=(0,))


def _needed_nse(indices, spinfo):
  n_batch, n_sparse, _, _ = _props(indices.shape, spinfo.shape)
  if n_sparse == 0:
    return 1
  sparse_shape = spinfo.shape[n_batch:n_batch + n_sparse]
  uniq = lambda i: _unique_unbatched(i, sparse_shape=sparse_shape, nse_out=i.shape[0])[2]
  counts = nfold_vmap(uniq, n_batch, broadcasted=False)(indices)
  return int(counts.max()) if counts.size else 0


def _bcoo_sum_duplicates(data, indices, *, spinfo, nse):
  if nse is None:
    if isinstance(indices, core.Tracer) or isinstance(data, core.Tracer):
      raise ValueError("bcoo_sum_duplicates: nse must be specified when using the function "
                       "within jit, vmap, and other transformations requiring abstract "
                       "evaluation.")
    nse = _needed_nse(indices, spinfo)
  nse = core.concrete_or_error(operator.index, nse, "nse argument of bcoo_sum_duplicates.")
  return bcoo_sum_duplicates_p.bind(data, indices, spinfo=spinfo, nse=nse)


def bcoo_sum_duplicates(mat, nse=None):
  """`mat` with the elements at repeated indices summed, indices sorted, out-of-bounds
  (padding) elements moved to the end. `nse` (default: the number needed, which needs
  concrete indices) sets the stored size: padding is added, or elements dropped."""
  data, indices = _bcoo_sum_duplicates(mat.data, mat.indices, spinfo=mat._info, nse=nse)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=True, unique_indices=True)


def bcoo_eliminate_zeros(mat, nse=None):
  """`mat` with explicitly stored zeros and duplicates removed."""
  data, indices, shape = mat.data, mat.indices, mat.shape
  n_batch, n_sparse, _, _ = _props(indices.shape, shape, data.shape)
  mask = (data == 0).all(tuple(range(n_batch + 1, data.ndim)))
  contract = tuple(i for i, s in enumerate(indices.shape[:n_batch]) if s == 1)
  mask = mask.all(contract, keepdims=True)
  fill = creation.array(shape[n_batch:n_batch + n_sparse], dtype=indices.dtype)
  f = lambda i, m: lax_numpy.where(m[:, None], fill[None, :], i)
  indices = nfold_vmap(f, n_batch)(indices, mask)
  return bcoo_sum_duplicates(BCOO((data, indices), shape=shape), nse=nse)


# ---- operations rearranging data and indices --------------------------------------------------
def _set_nse(mat, nse):
  """`mat` with `nse` stored elements per batch (padding added, or elements dropped)."""
  nse = operator.index(nse)
  if mat.nse == nse:
    return mat
  nb = mat.n_batch
  if nse <= mat.nse:
    data = mat.data[(slice(None),) * nb + (slice(nse),)]
    indices = mat.indices[..., :nse, :]
  else:
    pad = [(0, 0)] * mat.data.ndim
    pad[nb] = (0, nse - mat.nse)
    data = padding.pad(mat.data, pad)
    fill = lax_numpy.broadcast_to(
        creation.array(mat.shape[nb:nb + mat.n_sparse], mat.indices.dtype),
        (*mat.indices.shape[:-2], nse - mat.nse, mat.n_sparse))
    indices = lax_numpy.concatenate([mat.indices, fill], axis=-2)
  return BCOO((data, indices), shape=mat.shape, indices_sorted=mat.indices_sorted,
              unique_indices=mat.unique_indices)


def bcoo_reduce_sum(mat, *, axes: Sequence[int]):
  """The sum of `mat` over `axes` (non-negative), as a BCOO array."""
  shape = mat.shape
  data, indices = mat.data, mat.indices
  n_batch, n_sparse, _, nse = _props(indices.shape, shape, data.shape)
  axes = sorted({lax_numpy.canonicalize_axis(a, len(shape)) if hasattr(
      lax_numpy, "canonicalize_axis") else a for a in axes})
  if not all(0 <= a < len(shape) for a in axes):
    raise ValueError(f"bcoo_reduce_sum: axes {axes} out of range for shape {shape}")
  dense_axes = tuple(a - n_sparse + 1 for a in axes if a >= n_batch + n_sparse)
  data = data.sum(dense_axes)
  if n_sparse:
    valid = (indices < _sparse_bound(shape, n_batch, n_sparse, indices.dtype,
                                     indices.ndim)).all(-1)
    if data.ndim > valid.ndim:
      valid = broadcasting.expand_dims(valid, tuple(range(valid.ndim, data.ndim)))
    data = lax_numpy.where(valid, data, creation.zeros((), data.dtype))
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
      data = data.sum(a, keepdims=True)
  for a in batch_axes:
    if data.shape[a] != indices.shape[a]:
      ishape = list(indices.shape)
      ishape[a] = data.shape[a]
      indices = broadcasting.broadcast_in_dim(indices, tuple(ishape), tuple(range(indices.ndim)))
  new_batch = tuple(sorted(set(range(n_batch)) - batch_axes))
  new_batch_shape = tuple(data.shape[i] for i in new_batch)
  new_nse = nse * math.prod([data.shape[i] for i in batch_axes])
  data = broadcasting.reshape(data, (*new_batch_shape, new_nse, *data.shape[n_batch + 1:]),
                              (*new_batch, *sorted(batch_axes), *range(n_batch, data.ndim)))
  indices = broadcasting.reshape(
      indices, (*tuple(indices.shape[i] for i in new_batch), new_nse,
                *indices.shape[n_batch + 1:]),
      (*new_batch, *sorted(batch_axes), *range(n_batch, indices.ndim)))
  out_shape = tuple(shape[i] for i in range(len(shape)) if i not in axes)
  return BCOO((data, indices), shape=out_shape)


def bcoo_multiply_dense(sp_mat, v):
  """The data of the elementwise product of the BCOO `sp_mat` and the dense `v` (broadcast
  to `sp_mat`'s shape): a result with `sp_mat`'s indices."""
  data, indices, shape = sp_mat.data, sp_mat.indices, sp_mat.shape
  v = creation.asarray(v)
  if v.ndim == 0:
    return lax_numpy.multiply(data, v)
  if shape == v.shape:
    return lax_numpy.multiply(data, _bcoo_extract(indices, v))
  if lax_numpy.broadcast_shapes(v.shape, shape) != shape:
    raise NotImplementedError(
        "multiplication between sparse and dense is only implemented for cases where the "
        f"output shape matches the sparse matrix shape. Got shape={shape}, v.shape={v.shape}")
  v = broadcasting.expand_dims(v, tuple(range(len(shape) - v.ndim)))
  n_batch, _, _, _ = _props(indices.shape, shape, data.shape)

  def mul(d, i, vv):
    ind = tuple(i[:, k] if s != 1 else 0 for k, s in zip(range(i.shape[1]), vv.shape))
    return lax_numpy.multiply(d, vv[ind])
  return nfold_vmap(mul, n_batch)(data, indices, v)


def _multiply_sparse_unbatched(ld, li, rd, ri, *, lshape, rshape):
  lnb = li.ndim - 2
  rnb = ri.ndim - 2
  if lnb:
    ld, li = bcoo_update_layout(BCOO((ld, li), shape=lshape), n_batch=0)._bufs
  elif rnb:
    rd, ri = bcoo_update_layout(BCOO((rd, ri), shape=rshape), n_batch=0)._bufs
  lns, rns = li.shape[-1], ri.shape[-1]
  dims = np.array([i for i, (a, b) in enumerate(zip(lshape[:lns], rshape[:rns]))
                   if a != 1 and b != 1], int)
  lnse, rnse = li.shape[0], ri.shape[0]
  nse = lnse * rnse
  mask = (li[:, None, dims] == ri[None, :, dims]).all(-1)
  il, ir = searching.nonzero(mask, size=nse, fill_value=(lnse, rnse))
  data = (ld.at[il].get(mode="fill", fill_value=0) * rd.at[ir].get(mode="fill", fill_value=0))
  indices = lax_numpy.maximum(
      li.at[il].get(mode="fill", fill_value=max(lshape, default=0)),
      ri.at[ir].get(mode="fill", fill_value=max(rshape, default=0)))
  return data, indices


def bcoo_multiply_sparse(lhs, rhs):
  """The elementwise product of two BCOO arrays (broadcasting), as a BCOO array."""
  if len(lhs.shape) != len(rhs.shape):
    raise TypeError("bcoo_multiply_sparse: arrays must have same number of dimensions, "
                    f"got {lhs.shape}, {rhs.shape}")
  if lhs.n_dense != rhs.n_dense:
    raise NotImplementedError("bcoo_multiply_sparse: arrays with differing numbers of "
                              f"dense dimensions: {lhs}, {rhs}")
  n_batch = min(lhs.n_batch, rhs.n_batch)

  def mul(ld, li, rd, ri):
    return _multiply_sparse_unbatched(ld, li, rd, ri, lshape=lhs.shape[n_batch:],
                                      rshape=rhs.shape[n_batch:])
  data, indices = nfold_vmap(mul, n_batch)(lhs.data, lhs.indices, rhs.data, rhs.indices)
  return BCOO((data, indices), shape=lax_numpy.broadcast_shapes(lhs.shape, rhs.shape))


def bcoo_update_layout(mat, *, n_batch=None, n_dense=None, on_inefficient="error"):
  """`mat` stored with `n_batch` batch and `n_dense` dense dimensions. Growing either over
  dimensions longer than 1 stores many zeros: `on_inefficient` ('error', 'warn' or None) says
  whether to raise SparseEfficiencyError, warn, or go on."""
  n_batch = mat.n_batch if n_batch is None else operator.index(n_batch)
  n_dense = mat.n_dense if n_dense is None else operator.index(n_dense)
  if (n_batch, n_dense) == (mat.n_batch, mat.n_dense):
    return mat
  n_sparse = mat.ndim - n_batch - n_dense
  if on_inefficient not in ["error", "warn", None]:
    raise ValueError("on_inefficent={on_inefficient!r}; expected one of "
                     "['error', 'warn', None].")
  if n_batch < 0:
    raise ValueError(f"n_batch must be non-negative; got {n_batch}")
  if n_dense < 0:
    raise ValueError(f"n_dense must be non-negative; got {n_dense}")
  if n_sparse < 0:
    raise ValueError(f"sum of n_batch={n_batch} and n_dense={n_dense} cannot be larger than "
                     f"mat.ndim={mat.ndim}.")

  def inefficient(msg):
    if on_inefficient == "error":
      raise SparseEfficiencyError(msg + " To disable this error, set the on_inefficient "
                                  "argument of bcoo_update_layout to 'warn' or None.")
    if on_inefficient == "warn":
      warnings.warn(msg + " To disable this warning, set the on_inefficient argument of "
                    "bcoo_update_layout to None.", category=SparseEfficiencyWarning,
                    stacklevel=3)
  if n_dense > mat.n_dense and any(d > 1 for d in mat.shape[-n_dense:mat.ndim - mat.n_dense]):
    inefficient(f"For matrix of shape {mat.shape}, increasing n_dense from {mat.n_dense} to "
                f"{n_dense} results in inefficient storage.")
  if n_batch > mat.n_batch and any(d > 1 for d in mat.shape[mat.n_batch:n_batch]):
    inefficient(f"For matrix of shape {mat.shape}, increasing n_batch from {mat.n_batch} to "
                f"{n_batch} results in inefficient storage.")
  data, indices, shape = mat.data, mat.indices, mat.shape
  cur_b, cur_d = mat.n_batch, mat.n_dense
  if n_dense < cur_d:   # dense dims become sparse: each element becomes a block of elements
    n = cur_d - n_dense

    def to_sparse(d, i):
      nd = d.reshape(math.prod(d.shape[:n]), *d.shape[n:])
      grids = meshgrid(*(creation.arange(s, dtype=i.dtype) for s in d.shape[:n]),
                       indexing="ij")
      ni = lax_numpy.concatenate(
          [lax_numpy.broadcast_to(i, (nd.shape[0], i.size))] + [g.ravel()[:, None]
                                                               for g in grids], axis=1)
      return nd, ni
    data, indices = nfold_vmap(to_sparse, cur_b + 1)(data, indices)
    data = data.reshape(*data.shape[:cur_b], math.prod(data.shape[cur_b:cur_b + 2]),
                        *data.shape[cur_b + 2:])
    indices = indices.reshape(*indices.shape[:cur_b],
                              math.prod(indices.shape[cur_b:cur_b + 2]),
                              *indices.shape[cur_b + 2:])
    cur_d = n_dense
  if n_batch < cur_b:   # batch dims become sparse
    n = cur_b - n_batch

    def unbatch(d, i):
      nse = i.shape[-2]
      nd = d.reshape(math.prod(d.shape[:n + 1]), *d.shape[n + 1:])
      grids = meshgrid(*(creation.arange(s, dtype=i.dtype) for s in (*i.shape[:n], nse)),
                       indexing="ij")
      ni = i.reshape(math.prod(i.shape[:n + 1]), *i.shape[n + 1:])
      ni = lax_numpy.concatenate([g.ravel()[:, None] for g in grids[:-1]] + [ni], axis=1)
      return nd, ni
    d_full = lax_numpy.broadcast_to(data, shape[:cur_b] + data.shape[cur_b:])
    i_full = lax_numpy.broadcast_to(indices, shape[:cur_b] + indices.shape[cur_b:])
    data, indices = nfold_vmap(unbatch, n_batch)(d_full, i_full)
    cur_b = n_batch
  if n_dense > cur_d:   # sparse dims become dense
    n = n_dense - cur_d

    def to_dense(d, i):
      nd = creation.zeros(shape[-n_dense:], d.dtype).at[tuple(i[-n:])].set(d)
      return nd, i[:-n]
    data, indices = nfold_vmap(to_dense, cur_b + 1)(data, indices)
    cur_d = n_dense
  if n_batch > cur_b:   # sparse dims become batch dims
    n = n_batch - cur_b

    def batch(d, i):
      nse = i.shape[-2]
      idx = tuple(i[:, j] for j in range(n)) + (creation.arange(nse),)
      ni = lax_numpy.broadcast_to(i[:, n:], (*shape[cur_b:n_batch], nse, i.shape[-1] - n))
      nd = creation.zeros((*shape[cur_b:n_batch], nse, *d.shape[d.ndim - n_dense:]),
                          d.dtype).at[idx].set(d)
      return nd, ni
    data, indices = nfold_vmap(batch, cur_b)(data, indices)
  return BCOO((data, indices), shape=shape)


def bcoo_broadcast_in_dim(mat, *, shape, broadcast_dimensions, sharding=None):
  """`lax.broadcast_in_dim` of a BCOO array: new leading dimensions become batch dimensions,
  sparse dimensions may only be added with length 1."""
  del sharding
  shape = tuple(shape)
  data, indices = mat.data, mat.indices
  if len(mat.shape) != len(broadcast_dimensions):
    raise ValueError(f"spinfo.shape={mat.shape} and broadcast_dimensions="
                     f"{tuple(broadcast_dimensions)} must have the same length")
  n_batch, n_sparse, n_dense, nse = _props(indices.shape, mat.shape, data.shape)
  bd = list(broadcast_dimensions)
  batch_dims, sparse_dims, dense_dims = bd[:n_batch], bd[n_batch:n_batch + n_sparse], \
      bd[n_batch + n_sparse:]
  if max(batch_dims, default=0) > min(sparse_dims, default=len(shape)):
    raise ValueError("Cannot mix batch and sparse dimensions during broadcast_in_dim")
  if max(sparse_dims, default=0) > min(dense_dims, default=len(shape)):
    raise ValueError("Cannot mix sparse and dense dimensions during broadcast_in_dim")
  new_n_batch = min(bd[n_batch:], default=len(shape))
  new_n_dense = n_dense and len(shape) - min(bd[-n_dense:])
  new_n_sparse = len(shape) - new_n_batch - new_n_dense
  if math.prod(mat.shape[n_batch:n_batch + n_sparse]) != \
      math.prod(shape[new_n_batch:new_n_batch + new_n_sparse]):
    raise NotImplementedError("Adding sparse dimensions with lengths != 1")
  if (new_n_batch, new_n_dense) != (n_batch, n_dense):
    data = broadcasting.broadcast_in_dim(
        data, (*shape[:new_n_batch], nse, *shape[new_n_batch + new_n_sparse:]),
        (*batch_dims, new_n_batch, *(b + 1 - new_n_sparse for b in dense_dims)))
    indices = broadcasting.broadcast_in_dim(
        indices, (*shape[:new_n_batch], nse, n_sparse),
        (*batch_dims, new_n_batch, new_n_batch + 1))
  if new_n_sparse != n_sparse:
    ind = np.array(sparse_dims, int) - new_n_batch
    indices = creation.zeros((*shape[:new_n_batch], nse, new_n_sparse),
                             indices.dtype).at[..., ind].set(indices)
  return BCOO((data, indices), shape=shape)


def bcoo_concatenate(operands, *, dimension):
  """`lax.concatenate` of BCOO arrays along a batch or sparse dimension."""
  operands = list(operands)
  if not all(isinstance(op, BCOO) for op in operands):
    raise ValueError("bcoo_concatenate: expected operands to be a sequence of BCOO arrays. "
                     f"Got {operands}")
  out_shape = _concat_shape([op.shape for op in operands], dimension)
  if len({op.n_dense for op in operands}) > 1:
    raise ValueError("bcoo_concatenate requires inputs to have matching nse dimensions.")
  n_batches = {op.n_batch for op in operands}
  if len(n_batches) != 1 and max(n_batches) == 1:
    if all(op.shape[0] == 1 for op in operands if op.n_batch == 0):
      operands = [bcoo_update_layout(op, n_batch=1) if op.n_batch == 0 else op
                  for op in operands]
    elif all(op.shape[0] == 1 for op in operands if op.n_batch == 1):
      operands = [bcoo_update_layout(op, n_batch=0) if op.n_batch == 1 else op
                  for op in operands]
    n_batches = {op.n_batch for op in operands}
  if len(n_batches) != 1:
    raise ValueError("bcoo_concatenate requires inputs to have matching batch dimensions.")
  n_batch, n_sparse = operands[0].n_batch, operands[0].n_sparse
  ib = [op.indices.shape[:n_batch] for op in operands]
  db = [op.data.shape[:n_batch] for op in operands]
  if dimension < n_batch:
    ib = [s[:dimension] + s[dimension + 1:] for s in ib]
    db = [s[:dimension] + s[dimension + 1:] for s in db]
  if not len(set(ib)) == len(set(db)) == 1:
    raise NotImplementedError("concatenation of arrays with broadcasted batch indices")
  if dimension < n_batch:
    nses = {op.nse for op in operands}
    if len(nses) != 1:
      operands = [_set_nse(op, max(nses)) for op in operands]
    indices = shape_ops.concatenate([op.indices for op in operands], dimension)
    data = shape_ops.concatenate([op.data for op in operands], dimension)
  elif dimension < n_batch + n_sparse:
    offsets = np.cumsum([0] + [op.shape[dimension] for op in operands[:-1]])
    data = shape_ops.concatenate([op.data for op in operands], n_batch)
    indices = shape_ops.concatenate(
        [op.indices.at[..., dimension - n_batch].add(
            np.asarray(off, op.indices.dtype)) for op, off in zip(operands, offsets)], n_batch)
  else:
    raise NotImplementedError("Concatenation along dense dimensions.")
  return BCOO((data, indices), shape=out_shape)


def _concat_shape(shapes, dimension):
  if not shapes:
    raise TypeError("concatenate expects at least one operand")
  if len({len(s) for s in shapes}) != 1:
    raise TypeError("Cannot concatenate arrays with different numbers of dimensions: got "
                    f"{', '.join(str(tuple(s)) for s in shapes)}.")
  nd = len(shapes[0])
  if not 0 <= dimension < nd:
    raise ValueError(f"concatenate dimension out of bounds: dimension {dimension} for shapes "
                     f"{', '.join(str(tuple(s)) for s in shapes)}.")
  others = {tuple(s[:dimension]) + tuple(s[dimension + 1:]) for s in shapes}
  if len(others) != 1:
    raise TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
                    f"than the one being concatenated: concatenating along dimension "
                    f"{dimension} for shapes {', '.join(str(tuple(s)) for s in shapes)}.")
  out = list(shapes[0])
  out[dimension] = sum(s[dimension] for s in shapes)
  return tuple(out)


def bcoo_reshape(mat, *, new_sizes, dimensions=None, sharding=None):
  """`lax.reshape` of a BCOO array, keeping batch, sparse and dense dimensions apart."""
  del sharding
  new_sizes = tuple(operator.index(s) for s in new_sizes)
  if math.prod(new_sizes) != mat.size:
    raise TypeError(f"reshape total size must be unchanged, got new_sizes {new_sizes} for "
                    f"shape {mat.shape}.")
  if mat.indices.shape[:mat.n_batch] != mat.data.shape[:mat.n_batch] != \
      mat.shape[:mat.n_batch]:
    raise NotImplementedError("reshape of arrays with broadcasted batch dimensions.")
  nb, ns = mat.n_batch, mat.n_sparse
  batch_shape, sparse_shape = mat.shape[:nb], mat.shape[nb:nb + ns]
  batch_perm, sparse_perm, dense_perm = _validate_permutation(
      nb, ns, mat.n_dense, tuple(dimensions or range(mat.ndim)), mat.shape)
  batch_size, sparse_size = math.prod(batch_shape), math.prod(sparse_shape)
  cum = np.cumprod(new_sizes)
  if batch_size != 1 and batch_size not in cum:
    raise ValueError("bcoo_reshape: new shape cannot mix batch and sparse dimensions; got "
                     f"shape={mat.shape} new_shape={new_sizes} with n_batch={nb}")
  if sparse_size != 1 and batch_size * sparse_size not in cum:
    raise ValueError("bcoo_reshape: new shape cannot mix sparse and dense dimensions; got "
                     f"shape={mat.shape} new_shape={new_sizes} with n_dense={mat.n_dense}")
  i1 = int(cum.searchsorted(batch_size, side="right"))
  i2 = int(cum.searchsorted(batch_size * sparse_size, side="right"))
  new_batch, new_sparse, new_dense = new_sizes[:i1], new_sizes[i1:i2], new_sizes[i2:]
  data = broadcasting.reshape(mat.data, (*new_batch, mat.nse, *new_dense),
                              (*batch_perm, nb, *(p + nb + 1 for p in dense_perm)))
  indices = broadcasting.reshape(mat.indices, (*new_batch, mat.nse, ns),
                                 (*batch_perm, nb, nb + 1))
  if not new_sparse:
    indices = creation.zeros((*new_batch, mat.nse, 0), indices.dtype)
  elif sparse_shape:
    cols = tuple(indices[..., i] for i in sparse_perm)
    dims = tuple(int(mat.shape[nb + i]) for i in sparse_perm)
    flat = searching.ravel_multi_index(cols, dims, mode="clip")
    oob = (indices >= _sparse_bound(mat.shape, nb, ns, indices.dtype, indices.ndim)).any(
        -1, keepdims=True)
    new_cols = searching.unravel_index(flat, new_sparse)
    indices = lax_numpy.concatenate([c[..., None].astype(indices.dtype) for c in new_cols],
                                    axis=-1)
    indices = lax_numpy.where(oob, creation.array(new_sparse, indices.dtype), indices)
  return BCOO((data, indices), shape=new_sizes)


def bcoo_rev(operand, dimensions):
  """`lax.rev` of a BCOO array."""
  dimensions = tuple(dimensions)
  if len(set(dimensions)) != len(dimensions) or \
      any(not 0 <= d < operand.ndim for d in dimensions):
    raise ValueError(f"rev dimensions must be unique and in range, got {dimensions} for "
                     f"operand of rank {operand.ndim}")
  nb, ns = operand.n_batch, operand.n_sparse
  batch_dims = [d for d in dimensions if d < nb]
  sparse_dims = [d for d in dimensions if nb <= d < nb + ns]
  dense_dims = [d for d in dimensions if d >= nb + ns]
  data, indices = operand.data, operand.indices
  if batch_dims:
    indices = shape_ops.rev(indices, tuple(batch_dims))
  if batch_dims or dense_dims:
    data = shape_ops.rev(data, tuple(batch_dims + [d + 1 - ns for d in dense_dims]))
  if sparse_dims:
    sshape = creation.array(operand.shape[nb:nb + ns], indices.dtype)
    sp = np.array([d - nb for d in sparse_dims])
    indices = indices.at[..., sp].mul(-1)
    indices = indices.at[..., sp].add(sshape[sp] - 1)
    indices = lax_numpy.where(indices < 0, sshape, indices)
  return BCOO((data, indices), shape=operand.shape)


def bcoo_squeeze(arr, *, dimensions):
  """`lax.squeeze` of a BCOO array."""
  dimensions = tuple(d + arr.ndim if d < 0 else d for d in dimensions)
  if any(arr.shape[d] != 1 for d in dimensions):
    raise ValueError("cannot select an axis to squeeze out which has size not equal to one, "
                     f"got shape={arr.shape} and dimensions={dimensions}")
  batch_dims = tuple(d for d in dimensions if d < arr.n_batch)
  sparse_dims = np.array([i for i in range(arr.n_sparse) if i + arr.n_batch not in dimensions],
                         dtype=int)
  dense_dims = tuple(d - arr.n_sparse + 1 for d in dimensions
                     if d >= arr.n_batch + arr.n_sparse)
  data = broadcasting.squeeze(arr.data, batch_dims + dense_dims)
  indices = broadcasting.squeeze(arr.indices[..., sparse_dims], batch_dims)
  out_shape = tuple(s for i, s in enumerate(arr.shape) if i not in dimensions)
  return BCOO((data, indices), shape=out_shape, indices_sorted=arr.indices_sorted,
              unique_indices=arr.unique_indices)


def _mask_sparse(data, indices, keep, nb, nd):
  keep_data = broadcasting.expand_dims(keep[..., 0], tuple(range(nb + 1, nb + 1 + nd)))
  return lax_numpy.where(keep_data, data, creation.zeros((), data.dtype))


def bcoo_slice(mat, *, start_indices, limit_indices, strides=None):
  """`lax.slice` of a BCOO array (static bounds)."""
  if not isinstance(mat, BCOO):
    raise TypeError(f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}")
  start_indices = tuple(map(operator.index, start_indices))
  limit_indices = tuple(map(operator.index, limit_indices))
  strides = (1,) * mat.ndim if strides is None else tuple(map(operator.index, strides))
  if len(start_indices) != len(limit_indices) != mat.ndim:
    raise ValueError(f"bcoo_slice: indices must have size mat.ndim={mat.ndim}")
  if len(strides) != mat.ndim:
    raise ValueError(f"len(strides) = {len(strides)}; expected {mat.ndim}")
  if any(s <= 0 for s in strides):
    raise ValueError(f"strides must be a sequence of positive integers; got {strides}")
  if not all(0 <= s <= e <= n for s, e, n in zip(start_indices, limit_indices, mat.shape)):
    raise ValueError(f"bcoo_slice: invalid indices. Got start_indices={start_indices}, "
                     f"limit_indices={limit_indices} and shape={mat.shape}")
  nb, ns, nd = mat.n_batch, mat.n_sparse, mat.n_dense
  dsl, isl = [], []
  for i in range(nb):
    s, e, st = start_indices[i], limit_indices[i], strides[i]
    dsl.append(slice(None) if mat.data.shape[i] != mat.shape[i] else slice(s, e, st))
    isl.append(slice(None) if mat.indices.shape[i] != mat.shape[i] else slice(s, e, st))
  dsl.append(slice(None))
  isl += [slice(None), slice(None)]
  for i in range(nb + ns, mat.ndim):
    dsl.append(slice(start_indices[i], limit_indices[i], strides[i]))
  data, indices = mat.data[tuple(dsl)], mat.indices[tuple(isl)]
  new_shape = tuple((e - s + st - 1) // st
                    for s, e, st in zip(start_indices, limit_indices, strides))
  if ns:
    sl = slice(nb, nb + ns)
    lead = tuple(range(nb + 1))
    starts = broadcasting.expand_dims(creation.array(start_indices[sl], indices.dtype), lead)
    ends = broadcasting.expand_dims(creation.array(limit_indices[sl], indices.dtype), lead)
    sts = broadcasting.expand_dims(creation.array(strides[sl], indices.dtype), lead)
    keep = ((indices >= starts) & (indices < ends) & ((indices - starts) % sts == 0)).all(
        -1, keepdims=True)
    indices = lax_numpy.where(keep, (indices - starts + sts - 1) // sts,
                              (ends - starts + sts - 1) // sts)
    data = _mask_sparse(data, indices, keep, nb, nd)
    new_nse = math.prod(new_shape[sl])
    if mat.nse > new_nse:
      data, indices = _bcoo_sum_duplicates(data, indices, spinfo=SparseInfo(new_shape),
                                           nse=new_nse)
  return BCOO((data, indices), shape=new_shape)


def bcoo_dynamic_slice(mat, start_indices, slice_sizes):
  """`lax.dynamic_slice` of a BCOO array (traced starts, static sizes)."""
  if not isinstance(mat, BCOO):
    raise TypeError(f"bcoo_slice: input should be BCOO array, got type(mat)={type(mat)}")
  start_indices = tuple(creation.asarray(i) for i in start_indices)
  slice_sizes = tuple(map(operator.index, slice_sizes))
  if len(start_indices) != len(slice_sizes) != mat.ndim:
    raise ValueError(f"bcoo_dynamic_slice: indices must have size mat.ndim={mat.ndim}")
  if not all(0 <= s <= n for s, n in zip(slice_sizes, mat.shape)):
    raise TypeError("slice_sizes must be less than or equal to operand shape, got "
                    f"slice_sizes {slice_sizes} for operand shape {mat.shape}")
  nb, ns, nd = mat.n_batch, mat.n_sparse, mat.n_dense
  zero = creation.zeros((), start_indices[0].dtype if start_indices else np.int32)
  d_start, d_size, i_start, i_size = [], [], [], []
  for i in range(nb):
    db = mat.data.shape[i] != mat.shape[i]
    ib = mat.indices.shape[i] != mat.shape[i]
    d_start.append(zero if db else start_indices[i])
    d_size.append(1 if db else slice_sizes[i])
    i_start.append(zero if ib else start_indices[i])
    i_size.append(1 if ib else slice_sizes[i])
  d_start.append(zero)
  d_size.append(mat.nse)
  i_start += [zero, zero]
  i_size += [mat.nse, ns]
  d_start += list(start_indices[nb + ns:])
  d_size += list(slice_sizes[nb + ns:])
  data = shape_ops.dynamic_slice(mat.data, d_start, d_size)
  indices = shape_ops.dynamic_slice(mat.indices, i_start, i_size)
  new_shape = slice_sizes
  if ns:
    sl = slice(nb, nb + ns)
    starts = lax_numpy.stack([s.astype(indices.dtype) for s in start_indices[sl]])
    sizes = creation.array(slice_sizes[sl], indices.dtype)
    sshape = creation.array(mat.shape[sl], indices.dtype)
    starts = lax_numpy.where(starts < 0, starts + sshape, starts)
    starts = lax_numpy.clip(starts, 0, sshape - sizes)
    lead = tuple(range(nb + 1))
    starts = broadcasting.expand_dims(starts, lead)
    sizes = broadcasting.expand_dims(sizes, lead)
    keep = ((indices >= starts) & (indices < starts + sizes)).all(-1, keepdims=True)
    indices = lax_numpy.where(keep, indices - starts, sizes)
    data = _mask_sparse(data, indices, keep, nb, nd)
    if mat.nse > math.prod(slice_sizes[sl]):
      data, indices = _bcoo_sum_duplicates(data, indices, spinfo=SparseInfo(new_shape),
                                           nse=math.prod(slice_sizes[sl]))
  return BCOO((data, indices), shape=new_shape)


def bcoo_conv_general_dilated(lhs, rhs, *, window_strides, padding, lhs_dilation=None,
                              rhs_dilation=None, dimension_numbers=None, feature_group_count=1,
                              batch_group_count=1, precision=None, preferred_element_type=None,
                              out_sharding=None):
  """`lax.conv_general_dilated` with BCOO operands: 1-d convolutions of a single batch and
  feature (shapes (1, 1, n)), unit strides and dilations."""
  del precision, preferred_element_type, out_sharding, dimension_numbers
  nd = lhs.ndim - 2
  if lhs_dilation is not None and tuple(lhs_dilation) != (1,) * nd:
    raise NotImplementedError("bcoo convolution with lhs_dilation.")
  if rhs_dilation is not None and tuple(rhs_dilation) != (1,) * nd:
    raise NotImplementedError("bcoo convolution with lhs_dilation.")
  if tuple(window_strides) != (1,) * nd:
    raise NotImplementedError("bcoo convolution with non-unit window_strides.")
  if batch_group_count != feature_group_count != 1:
    raise NotImplementedError("bcoo convolution with non-unit group counts.")
  if lhs.shape[:2] != rhs.shape[:2] != (1, 1):
    raise NotImplementedError("bcoo convolution with leading dimensions other than (1, 1)")
  if nd != 1:
    raise NotImplementedError("bcoo convolution: only 1-d convolutions are implemented.")
  if isinstance(padding, str):
    k = rhs.shape[-1]
    if padding == "VALID":
      padding = [(0, 0)]
    else:
      total = max(k - 1, 0)
      lo = total // 2 if padding == "SAME" else total - total // 2
      padding = [(lo, total - lo)] if padding == "SAME" else [(total - total // 2,
                                                               total // 2)]
      del n
  (pad_lo, pad_hi), = padding
  index_dtype = (lhs.indices.dtype if isinstance(lhs, BCOO) else
                 rhs.indices.dtype if isinstance(rhs, BCOO) else np.int32)
  l_d, l_i = _conv_operand(lhs, index_dtype)
  r_d, r_i = _conv_operand(rhs, index_dtype)
  data = (l_d[:, None] * r_d[None, :]).ravel()
  ind = (l_i[:, None] + (pad_lo - r_i)[None, :]).ravel()
  neg = ind < 0
  ind = lax_numpy.where(neg, 0, ind)
  data = lax_numpy.where(neg, creation.zeros((), data.dtype), data)
  size = max(0, lhs.shape[-1] + pad_lo + pad_hi - rhs.shape[-1] + 1)
  return BCOO((data[None, None], ind[None, None, :, None]), shape=(1, 1, size))


def _conv_operand(mat, index_dtype):
  if isinstance(mat, BCOO):
    mat = mat.update_layout(n_batch=2, n_dense=0)
    data = broadcasting.squeeze(mat.data, (0, 1))
    ind = broadcasting.squeeze(mat.indices, (0, 1))[:, 0]
    return lax_numpy.where(ind < mat.shape[-1], data, creation.zeros((), data.dtype)), ind
  mat = creation.asarray(mat)
  data = broadcasting.squeeze(mat, (0, 1))
  return data, broadcasting.iota(index_dtype, data.shape[0])


def bcoo_gather(operand, start_indices, dimension_numbers, slice_sizes, *,
                unique_indices=False, indices_are_sorted=False, mode=None, fill_value=None):
  """`lax.gather` of a BCOO array (the gathered slices as a BCOO array)."""
  del unique_indices, indices_are_sorted, fill_value
  if mode is not None and str(mode).upper().split(".")[-1] not in (
      "FILL_OR_DROP", "PROMISE_IN_BOUNDS", "CLIP", "1", "0"):
    raise NotImplementedError(f"bcoo_gather: mode={mode}")
  start_indices = creation.asarray(start_indices)
  offset_dims = tuple(dimension_numbers.offset_dims)
  collapsed = tuple(dimension_numbers.collapsed_slice_dims)
  index_map = tuple(dimension_numbers.start_index_map)
  out_ndim = start_indices.ndim - 1 + len(slice_sizes) - len(collapsed)
  full_starts = [creation.zeros((), start_indices.dtype)] * operand.ndim
  in_axes = [None] * operand.ndim
  sizes = list(operand.shape)
  n_idx = math.prod(start_indices.shape[:-1])
  for i, j in enumerate(index_map):
    full_starts[j] = start_indices[..., i].ravel()
    sizes[j] = slice_sizes[j]
    in_axes[j] = 0

  def one(starts):
    s = bcoo_dynamic_slice(operand, starts, slice_sizes=sizes)
    return bcoo_squeeze(s, dimensions=collapsed)
  if all(a is None for a in in_axes):
    result = one(full_starts)
    result = bcoo_broadcast_in_dim(result, shape=(n_idx, *result.shape),
                                   broadcast_dimensions=tuple(range(1, result.ndim + 1)))
  else:
    result = vmap(one, in_axes=(in_axes,))(full_starts)
  result = bcoo_reshape(result, new_sizes=(*start_indices.shape[:-1], *result.shape[1:]),
                        dimensions=tuple(range(result.ndim)))
  if result.shape:
    batch_dims = tuple(d for d in range(out_ndim) if d not in offset_dims)
    perm = np.zeros(result.ndim, dtype=int)
    perm[np.array(batch_dims + offset_dims, int)] = np.arange(result.ndim)
    if set(perm[:len(batch_dims)]) != set(range(len(batch_dims))):
      result = bcoo_update_layout(result, n_batch=0)
    result = bcoo_transpose(result, permutation=tuple(int(p) for p in perm))
  return result


# ---- the BCOO class ---------------------------------------------------------------------------
@register_pytree_node_class
class BCOO(JAXSparse):
  """A batched-COO sparse array: `BCOO((data, indices), shape=...)`.

  `data` has shape `batch + (nse,) + dense` and `indices` shape `batch + (nse, n_sparse)`
  (integers); the array's shape is `batch + sparse + dense`. Repeated indices add up;
  out-of-bounds ones (padding) are ignored. Make one from a dense array with
  `BCOO.fromdense`; `todense()` gives it back.
  """

  def __init__(self, args, *, shape, indices_sorted=False, unique_indices=False):
    data, indices = args
    self.data = creation.asarray(data)
    self.indices = creation.asarray(indices)
    self.indices_sorted = indices_sorted
    self.unique_indices = unique_indices
    super().__init__(args, shape=tuple(shape))
    _props(self.indices.shape, self.shape, self.data.shape)

  _info = property(lambda self: SparseInfo(self.shape, self.indices_sorted,
                                           self.unique_indices))
  _bufs = property(lambda self: (self.data, self.indices))
  nse = property(lambda self: self.indices.shape[-2])
  dtype = property(lambda self: self.data.dtype)
  n_batch = property(lambda self: self.indices.ndim - 2)
  n_sparse = property(lambda self: self.indices.shape[-1])
  n_dense = property(lambda self: self.data.ndim - 1 - self.n_batch)

  @classmethod
  def fromdense(cls, mat, *, nse=None, index_dtype=np.int32, n_dense=0, n_batch=0):
    """The BCOO array of the dense `mat` (see `bcoo_fromdense`)."""
    return bcoo_fromdense(mat, nse=nse, index_dtype=index_dtype, n_dense=n_dense,
                          n_batch=n_batch)

  @classmethod
  def from_scipy_sparse(cls, mat, *, index_dtype=None, n_dense=0, n_batch=0):
    """The BCOO array of a scipy.sparse matrix."""
    if n_dense != 0 or n_batch != 0:
      raise NotImplementedError("BCOO.fromscipy with nonzero n_dense/n_batch")
    mat = mat.tocoo()
    data = creation.asarray(mat.data)
    indices = assembly.column_stack((mat.row, mat.col)).astype(index_dtype or np.int32)
    return cls((data, indices), shape=mat.shape, indices_sorted=False, unique_indices=False)

  def update_layout(self, *, n_batch=None, n_dense=None, on_inefficient="error"):
    """This array with another number of batch / dense dimensions (see
    `bcoo_update_layout`)."""
    return bcoo_update_layout(self, n_batch=n_batch, n_dense=n_dense,
                              on_inefficient=on_inefficient)

  def sum_duplicates(self, nse=None, remove_zeros=True):
    """This array with repeated indices summed (and stored zeros removed unless
    `remove_zeros=False`), indices sorted."""
    if remove_zeros:
      return bcoo_eliminate_zeros(self, nse=nse)
    return bcoo_sum_duplicates(self, nse=nse)

  def sort_indices(self):
    """This array with its indices sorted."""
    return bcoo_sort_indices(self)

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

  def tree_flatten(self):
    return (self.data, self.indices), self._info._asdict()

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    obj = object.__new__(cls)
    obj.data, obj.indices = children
    if aux_data.keys() != {"shape", "indices_sorted", "unique_indices"}:
      raise ValueError(f"BCOO.tree_unflatten: invalid aux_data={aux_data}")
    obj.__dict__.update(**aux_data)
    obj.shape = _vmapped_shape(obj.data, obj.indices, obj.shape)
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
        if M - k < N:   # (JAX marks only this one slot as padding)
          ind[M - k] = M
      data = creation.asarray(data[:, None])
      indices = creation.asarray(ind[:, None, None], dtype=index_dtype)
    return cls((data, indices), shape=(N, M), indices_sorted=True, unique_indices=True)


def _vmapped_shape(data, indices, shape):
  """The shape of a BCOO whose buffers vmap has unstacked or stacked along axis 0 (its
  flattened `shape` then lacks or has an extra leading batch dimension)."""
  try:
    nb = indices.ndim - 2
    n_dense = data.ndim - 1 - nb
    total = nb + indices.shape[-1] + n_dense
  except (AttributeError, IndexError, TypeError):
    return shape
  if total == len(shape) - 1 and nb >= 0 and len(shape) > 0:
    for k in range(len(shape)):   # the first axis whose removal fits the buffers
      cand = tuple(shape[:k]) + tuple(shape[k + 1:])
      try:
        _props(indices.shape, cand, data.shape)
      except ValueError:
        continue
      return cand
    return tuple(shape[1:])
  if total == len(shape) + 1 and nb >= 1:
    return (max(data.shape[0], indices.shape[0]),) + tuple(shape)
  return shape


def todense(arr):
  """The dense array of a sparse array; a dense array passes through."""
  if isinstance(arr, JAXSparse):
    return arr.todense()
  return creation.asarray(arr)
