"""arrax.scipy.interpolate.RegularGridInterpolator: linear or nearest interpolation on a
rectilinear grid (a pytree, so it can cross jit boundaries)."""
from __future__ import annotations

from itertools import product

import numpy as np

from arrax._src.numpy import creation, lax_numpy, searching
from arrax._src.numpy.util import check_arraylike, promote_dtypes_inexact
from arrax._src.tree_util import register_pytree_node


def _points_array(points, ndim=None):
  """Sample points as one array [..., ndim] (from a tuple of coordinate arrays or an array)."""
  if isinstance(points, tuple) and len(points) == 1:
    points = points[0]
  if isinstance(points, tuple):
    parts = lax_numpy.broadcast_arrays(*points)
    if any(p.shape != parts[0].shape for p in parts[1:]):
      raise ValueError("coordinate arrays do not have the same shape")
    out = creation.empty(parts[0].shape + (len(points),), dtype=float)
    for j, item in enumerate(parts):
      out = out.at[..., j].set(item)
    return out
  check_arraylike("_ndim_coords_from_arrays", points)
  points = creation.asarray(points)
  if points.ndim == 1:
    points = points.reshape(-1, 1) if ndim is None else points.reshape(-1, ndim)
  return points


class RegularGridInterpolator:
  """Interpolate `values` given on the grid `points` (one increasing 1-D array per axis).

  method 'linear' or 'nearest'; points outside the grid get `fill_value` (None extrapolates).
  `bounds_error=True` is not supported (it cannot be checked under jit).
  """

  def __init__(self, points, values, method="linear", bounds_error=False, fill_value=np.nan):
    if method not in ("linear", "nearest"):
      raise ValueError(f"method {method!r} is not defined")
    self.method = method
    self.bounds_error = bounds_error
    if self.bounds_error:
      raise NotImplementedError("`bounds_error` takes no effect under JIT")
    check_arraylike("RegularGridInterpolator", values)
    if len(points) > values.ndim:
      raise ValueError(f"there are {len(points)} point arrays, but values has {values.ndim} "
                       "dimensions")
    values = creation.asarray(promote_dtypes_inexact(values)[0])
    if fill_value is not None:
      check_arraylike("RegularGridInterpolator", fill_value)
      fill_value = creation.asarray(fill_value)
      if not lax_numpy.can_cast(fill_value.dtype, values.dtype, casting="same_kind"):
        raise ValueError("fill_value must be either 'None' or of a type compatible with values")
    self.fill_value = fill_value
    check_arraylike("RegularGridInterpolator", *points)
    self.grid = tuple(creation.asarray(p) for p in points)
    self.values = values

  def __call__(self, xi, method=None):
    method = self.method if method is None else method
    if method not in ("linear", "nearest"):
      raise ValueError(f"method {method!r} is not defined")
    ndim = len(self.grid)
    xi = _points_array(xi, ndim=ndim)
    if xi.shape[-1] != ndim:
      raise ValueError(f"the requested sample points xi have dimension {xi.shape[1]}, but "
                       f"this RegularGridInterpolator has dimension {ndim}")
    shape = xi.shape
    xi = xi.reshape(-1, shape[-1])
    indices, dists, outside = self._find_indices(xi.T)
    if method == "linear":
      result = self._linear(indices, dists)
    else:
      result = self._nearest(indices, dists)
    if not self.bounds_error and self.fill_value is not None:
      bc = result.shape[:1] + (1,) * (result.ndim - 1)
      result = lax_numpy.where(outside.reshape(bc), self.fill_value, result)
    return result.reshape(shape[:-1] + self.values.shape[ndim:])

  def _linear(self, indices, dists):
    trailing = (slice(None),) + (None,) * (self.values.ndim - len(indices))
    out = creation.asarray(0.)
    for corner in product(*[[i, i + 1] for i in indices]):
      weight = creation.asarray(1.)
      for ci, i, t in zip(corner, indices, dists):
        weight = weight * lax_numpy.where(ci == i, 1 - t, t)
      out = out + self.values[corner] * weight[trailing]
    return out

  def _nearest(self, indices, dists):
    return self.values[tuple(lax_numpy.where(t <= .5, i, i + 1) for i, t in zip(indices, dists))]

  def _find_indices(self, xi):
    indices, dists = [], []
    outside = creation.zeros((xi.shape[1],), dtype=bool)
    for x, g in zip(xi, self.grid):
      i = searching.searchsorted(g, x) - 1
      i = lax_numpy.where(i < 0, 0, i)
      i = lax_numpy.where(i > g.size - 2, g.size - 2, i)
      indices.append(i)
      dists.append((x - g[i]) / (g[i + 1] - g[i]))
      if not self.bounds_error:
        outside = outside + (x < g[0])
        outside = outside + (x > g[-1])
    return indices, dists, outside


register_pytree_node(
    RegularGridInterpolator,
    lambda obj: ((obj.grid, obj.values, obj.fill_value), (obj.method, obj.bounds_error)),
    lambda aux, children: RegularGridInterpolator(*children[:2], *aux, *children[2:]))
