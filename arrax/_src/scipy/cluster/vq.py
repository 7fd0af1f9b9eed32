"""Vector quantization: the nearest code of each observation."""
from __future__ import annotations

import operator

from arrax._src.batching import vmap
from arrax._src.numpy import linalg as jnp_linalg
from arrax._src.numpy import reductions
from arrax._src.numpy.util import check_arraylike, promote_dtypes_inexact


def vq(obs, code_book, check_finite=True):
  """(code, distance): for each observation (row of obs), the index of the nearest row of
  code_book and the Euclidean distance to it."""
  del check_finite
  check_arraylike("scipy.cluster.vq.vq", obs, code_book)
  obs, book = promote_dtypes_inexact(obs, code_book)
  if obs.ndim != book.ndim:
    raise ValueError("Observation and code_book should have the same rank")
  if obs.ndim == 1:
    obs, book = obs[..., None], book[..., None]
  if obs.ndim != 2:
    raise ValueError("ndim different than 1 or 2 are not supported")
  dist = vmap(lambda ob: jnp_linalg.norm(ob[None] - book, axis=-1))(obs)
  code = reductions.argmin(dist, axis=-1)
  return code, vmap(operator.getitem)(dist, code)
