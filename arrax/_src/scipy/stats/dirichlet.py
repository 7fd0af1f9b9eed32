"""The Dirichlet distribution over the simplex (x along axis 0, one entry per alpha, or one
fewer: the last is then 1 minus the sum)."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.lax import shape_ops
from arrax._src.numpy import lax_numpy, reductions
from arrax._src.numpy.util import promote_dtypes_inexact
from arrax._src.scipy.special import _const, gammaln, xlogy


def _on_simplex(x):
  return reductions.all(x > 0, axis=0) & (abs(reductions.sum(x, axis=0) - 1) < 1E-6)


def logpdf(x, alpha):
  x, alpha = promote_dtypes_inexact(x, alpha)
  if alpha.ndim != 1:
    raise ValueError(f"`alpha` must be one-dimensional; got alpha.shape={alpha.shape}")
  if x.shape[0] not in (alpha.shape[0], alpha.shape[0] - 1):
    raise ValueError("`x` must have either the same number of entries as `alpha` or one entry "
                     f"fewer; got x.shape={x.shape}, alpha.shape={alpha.shape}")
  one = _const(x, 1)
  if x.shape[0] != alpha.shape[0]:
    x = lax_numpy.concatenate([x, lax.sub(one, x.sum(0, keepdims=True))], axis=0)
  log_norm = reductions.sum(gammaln(alpha)) - gammaln(reductions.sum(alpha))
  if x.ndim > 1:
    alpha = shape_ops.broadcast_in_dim(alpha, alpha.shape + (1,) * (x.ndim - 1), (0,))
  out = lax.sub(reductions.sum(xlogy(lax.sub(alpha, one), x), axis=0), log_norm)
  return lax_numpy.where(_on_simplex(x), out, -np.inf)


def pdf(x, alpha):
  return lax.exp(logpdf(x, alpha))
