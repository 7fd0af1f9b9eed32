"""random_bcoo: a BCOO array with random indices and data."""
from __future__ import annotations

import math
import operator

import numpy as np

from arrax._src import dtypes, random
from arrax._src.batching import vmap
from arrax._src.numpy import creation, lax_numpy, searching
from arrax._src.sparse.bcoo import BCOO


def random_bcoo(key, shape, *, dtype=np.float64, indices_dtype=None, nse=0.2, n_batch=0,
                n_dense=0, unique_indices=True, sorted_indices=False,
                generator=random.uniform, **kwds):
  """A BCOO array of `shape` with `nse` stored elements per batch (a fraction of the sparse
  size if 0 < nse < 1) at random positions (distinct if `unique_indices`), data drawn by
  `generator(key, shape=..., dtype=..., **kwds)`."""
  shape = tuple(map(operator.index, shape))
  n_batch = operator.index(n_batch)
  n_dense = operator.index(n_dense)
  if n_batch < 0 or n_dense < 0 or n_batch + n_dense > len(shape):
    raise ValueError(f"Invalid n_batch={n_batch}, n_dense={n_dense} for shape={shape}")
  n_sparse = len(shape) - n_batch - n_dense
  batch_shape = shape[:n_batch]
  sparse_shape = shape[n_batch:n_batch + n_sparse]
  dense_shape = shape[n_batch + n_sparse:]
  batch_size = math.prod(batch_shape)
  sparse_size = math.prod(sparse_shape)
  if not 0 <= nse < sparse_size:
    raise ValueError(f"got nse={nse}, expected to be between 0 and {sparse_size}")
  if 0 < nse < 1:
    nse = math.ceil(nse * sparse_size)
  nse = operator.index(nse)
  if indices_dtype is None:
    indices_dtype = dtypes.default_int_dtype()
  if sparse_size > np.iinfo(indices_dtype).max:
    raise ValueError(f"indices_dtype={indices_dtype} does not have enough range to generate "
                     f"sparse indices of size {sparse_size}.")

  def indices(k):
    if not sparse_shape:
      return creation.zeros((nse, n_sparse), dtype=indices_dtype)
    flat = random.choice(k, sparse_size, shape=(nse,),
                         replace=not unique_indices).astype(indices_dtype)
    return lax_numpy.stack(searching.unravel_index(flat, sparse_shape), axis=1)
  keys = random.split(key, batch_size + 1)
  data = generator(keys[0], shape=batch_shape + (nse,) + dense_shape, dtype=dtype, **kwds)
  ind = vmap(indices)(keys[1:]).reshape(batch_shape + (nse, n_sparse))
  mat = BCOO((data, ind), shape=shape)
  return mat.sort_indices() if sorted_indices else mat
