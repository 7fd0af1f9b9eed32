"""The geometric distribution: the trial of the first success (k >= 1), shifted by loc."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy, ufuncs
from arrax._src.scipy.special import _const, promote_args_inexact, xlog1py


def logpmf(k, p, loc=0):
  k, p, loc = promote_args_inexact("geom.logpmf", k, p, loc)
  x = lax.sub(k, loc)
  out = xlog1py(lax.sub(x, _const(k, 1)), -p) + lax.log(p)
  return lax_numpy.where(lax.le(x, _const(k, 0)), -np.inf, out)


def pmf(k, p, loc=0):
  return ufuncs.exp(logpmf(k, p, loc))
