"""`index_take`: gather whole slices of `src` at integer index vectors along some axes."""
from __future__ import annotations

import numpy as np

from arrax._src import core
from arrax._src.lax import broadcasting, shape_ops, slicing

__all__ = ["index_take"]


def index_take(src, idxs, axes):
  """src indexed along `axes` by the index arrays `idxs` (one per axis, of one shape; negative
  and out-of-range indices wrap around): the result has the index shape followed by the axes
  of `src` not indexed."""
  src_shape = core.get_aval(src).shape
  indices = shape_ops.concatenate([broadcasting.expand_dims(i, (1,)) for i in idxs], 1)
  nbatch = core.get_aval(indices).ndim - 1
  sizes = broadcasting.expand_dims(np.array([src_shape[ax] for ax in axes]), tuple(range(nbatch)))
  indices = indices % sizes   # (the NumPy remainder, as JAX's operator gives)
  slice_sizes = [1 if ax in axes else d for ax, d in enumerate(src_shape)]
  offset_dims = tuple(range(1, len(src_shape) - core.get_aval(indices).shape[1] + 1))
  dnums = slicing.GatherDimensionNumbers(offset_dims=offset_dims, collapsed_slice_dims=tuple(axes),
                                         start_index_map=tuple(axes))
  return slicing.gather(src, indices, dimension_numbers=dnums, slice_sizes=tuple(slice_sizes))
