"""The multinomial distribution of integer counts x (last axis) in n trials."""
import numpy as np

from arrax._src import dtypes
from arrax._src.lax import elementwise as lax
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs
from arrax._src.numpy.util import promote_args_numeric
from arrax._src.scipy.special import gammaln, promote_args_inexact, xlogy


def logpmf(x, n, p):
  p, = promote_args_inexact("multinomial.logpmf", p)
  x, n = (creation.asarray(v) for v in promote_args_numeric("multinomial.logpmf", x, n))
  if not dtypes.issubdtype(x.dtype, np.integer):
    raise ValueError(f"x and n must be of integer type; got x.dtype={x.dtype}, "
                     f"n.dtype={n.dtype}")
  x, n = x.astype(p.dtype), n.astype(p.dtype)
  out = gammaln(n + 1) + reductions.sum(xlogy(x, p) - gammaln(x + 1), axis=-1)
  return lax_numpy.where(ufuncs.equal(reductions.sum(x), n), out, -np.inf)


def pmf(x, n, p):
  return lax.exp(logpmf(x, n, p))
