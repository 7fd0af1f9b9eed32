"""`jax.ops`: segment reductions, each one scatter of the data into `num_segments` rows.

`segment_sum(data, ids, n)[k]` reduces the rows `data[i]` with `ids[i] == k`; a segment that no
id names holds the reduction's identity (0, 1, +inf/max, -inf/min). Out-of-range ids are
dropped by default (mode FILL_OR_DROP). With `bucket_size`, the rows are scattered into
`ceil(len / bucket_size)` partial results first and those are reduced, which keeps long sums
accurate.
"""
from __future__ import annotations

import numpy as np

from arrax._src import core, dtypes
from arrax._src.lax import slicing
from arrax._src.numpy import creation, indexing, reductions, util
from arrax._src.sharding_impls import canonicalize_sharding

__all__ = ["segment_sum", "segment_prod", "segment_max", "segment_min"]


def _identity(scatter_op, dtype):
  if scatter_op is slicing.scatter_add:
    return 0
  if scatter_op is slicing.scatter_mul:
    return 1
  big = scatter_op is slicing.scatter_min
  if dtype == np.bool_:
    return big
  if dtypes.issubdtype(dtype, np.integer):
    info = dtypes.iinfo(dtype)
    return info.max if big else info.min
  return float("inf") if big else -float("inf")


def _segment(name, scatter_op, reducer, data, segment_ids, num_segments, indices_are_sorted,
             unique_indices, bucket_size, mode, out_sharding):
  util.check_arraylike(name, data, segment_ids)
  out_sharding = canonicalize_sharding(out_sharding, name)
  mode = slicing.GatherScatterMode.FILL_OR_DROP if mode is None else mode
  data, segment_ids = creation.asarray(data), creation.asarray(segment_ids)
  if num_segments is None:
    num_segments = np.max(segment_ids) + 1  # a tracer raises TracerArrayConversionError, as JAX
  num_segments = core.concrete_or_error(
      int, num_segments, f"{name}() `num_segments` argument.")
  if num_segments < 0:
    raise ValueError("num_segments must be non-negative.")
  dtype = data.dtype
  update = dict(indices_are_sorted=indices_are_sorted, unique_indices=unique_indices, mode=mode,
                normalize_indices=False)
  identity = _identity(scatter_op, dtype)
  if bucket_size is None:
    out = creation.full((num_segments,) + data.shape[1:], identity, dtype=dtype)

    def scatter(o, i, d):
      return indexing._scatter_update(o, i, d, scatter_op, **update)
    return util.maybe_auto_axes(scatter, out_sharding)(out, segment_ids, data)
  if out_sharding is not None:
    raise NotImplementedError
  num_buckets = -(-segment_ids.size // bucket_size)
  out = creation.full((num_buckets, num_segments) + data.shape[1:], identity, dtype=dtype)
  buckets = creation.arange(segment_ids.shape[0]) // bucket_size
  out = indexing._scatter_update(out, (buckets, segment_ids[None, :]), data, scatter_op,
                                 **update)
  return reducer(out, axis=0).astype(dtype)


def segment_sum(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """Sums of the rows of `data` in each segment named by `segment_ids` (leading axis).

  `num_segments` (static; default `max(segment_ids) + 1`, which needs concrete ids) sets the
  output length; ids outside [0, num_segments) are dropped unless `mode` says otherwise.
  """
  return _segment("segment_sum", slicing.scatter_add, reductions.sum, data, segment_ids,
                  num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                  out_sharding)


def segment_prod(data, segment_ids, num_segments=None, indices_are_sorted=False,
                 unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """Products of the rows of `data` in each segment (empty segments give 1)."""
  return _segment("segment_prod", slicing.scatter_mul, reductions.prod, data, segment_ids,
                  num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                  out_sharding)


def segment_max(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """Maxima of the rows of `data` in each segment (empty segments give -inf or the dtype's min)."""
  return _segment("segment_max", slicing.scatter_max, reductions.max, data, segment_ids,
                  num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                  out_sharding)


def segment_min(data, segment_ids, num_segments=None, indices_are_sorted=False,
                unique_indices=False, bucket_size=None, mode=None, out_sharding=None):
  """Minima of the rows of `data` in each segment (empty segments give +inf or the dtype's max)."""
  return _segment("segment_min", slicing.scatter_min, reductions.min, data, segment_ids,
                  num_segments, indices_are_sorted, unique_indices, bucket_size, mode,
                  out_sharding)
