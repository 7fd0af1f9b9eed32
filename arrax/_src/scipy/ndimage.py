"""arrax.scipy.ndimage.map_coordinates: interpolation of an array at arbitrary coordinates.

Order 0 (nearest) and 1 (linear) only: each coordinate axis gives one or two (index, weight)
pairs; out-of-range indices are folded back per `mode` (or masked to `cval` for 'constant'),
and the result is the sum over all combinations of products of weights times gathered values.
"""
from __future__ import annotations

import functools
import itertools
import operator

import numpy as np

from arrax._src import dtypes
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax
from arrax._src.numpy import creation, lax_numpy, ufuncs


def _mirror(index, size):
  half = size - 1   # the half period of a triangle wave
  return ufuncs.abs((index + half) % (2 * half) - half)


def _reflect(index, size):
  return ufuncs.floor_divide(_mirror(2 * index + 1, 2 * size + 1) - 1, 2)


_FOLD = {
    "constant": lambda index, size: index,
    "nearest": lambda index, size: lax_numpy.clip(index, 0, size - 1),
    "wrap": lambda index, size: index % size,
    "mirror": _mirror,
    "reflect": _reflect,
}


def _round(a):
  return a if dtypes.issubdtype(a.dtype, np.integer) else lax.round(a)


def _nearest(coord):
  return [(_round(coord).astype(np.int32), coord.dtype.type(1))]


def _linear(coord):
  lower = ufuncs.floor(coord)
  w_hi = coord - lower
  index = lower.astype(np.int32)
  return [(index, 1 - w_hi), (index + 1, w_hi)]


@jit(static_argnums=(2, 3, 4))
def _map_coordinates(input, coordinates, order, mode, cval):  # noqa: A002
  arr = creation.asarray(input)
  coords = [creation.asarray(c) for c in coordinates]
  cval = creation.asarray(cval, arr.dtype)
  if len(coordinates) != arr.ndim:
    raise ValueError("coordinates must be a sequence of length input.ndim, but "
                     f"{len(coordinates)} != {arr.ndim}")
  fold = _FOLD.get(mode)
  if fold is None:
    raise NotImplementedError(
        f"jax.scipy.ndimage.map_coordinates does not yet support mode {mode}. Currently "
        f"supported modes are {set(_FOLD)}.")
  if order == 0:
    nodes_of = _nearest
  elif order == 1:
    nodes_of = _linear
  else:
    raise NotImplementedError("jax.scipy.ndimage.map_coordinates currently requires order<=1")
  per_axis = []
  for coord, size in zip(coords, arr.shape):
    per_axis.append([(fold(index, size),
                      ((0 <= index) & (index < size)) if mode == "constant" else True, weight)
                     for index, weight in nodes_of(coord)])
  terms = []
  for combo in itertools.product(*per_axis):
    indices, valids, weights = zip(*combo)
    value = arr[indices]
    if not all(v is True for v in valids):
      value = lax_numpy.where(functools.reduce(operator.and_, valids), value, cval)
    terms.append(functools.reduce(operator.mul, weights) * value)
  result = sum(terms[1:], terms[0])
  if dtypes.issubdtype(arr.dtype, np.integer):
    result = _round(result)
  return result.astype(arr.dtype)


def map_coordinates(input, coordinates, order, mode="constant", cval=0.0):  # noqa: A002
  """input interpolated at `coordinates` (one array per axis of input), with spline order 0
  or 1; points outside are handled by `mode` ('constant' fills with cval, 'nearest', 'wrap',
  'mirror', 'reflect')."""
  return _map_coordinates(input, coordinates, order, mode, cval)
