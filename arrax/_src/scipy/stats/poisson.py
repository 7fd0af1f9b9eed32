"""The Poisson distribution with mean mu, shifted by loc."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy, ufuncs
from arrax._src.scipy.special import promote_args_inexact, _const, gammaincc, gammaln, xlogy


def logpmf(k, mu, loc=0):
  k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
  x = lax.sub(k, loc)
  log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
  off_support = ufuncs.logical_or(lax.lt(x, _const(k, 0)), lax.ne(ufuncs.round(k), k))
  return lax_numpy.where(off_support, -np.inf, log_probs)


def pmf(k, mu, loc=0):
  return ufuncs.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  k, mu, loc = promote_args_inexact("poisson.cdf", k, mu, loc)
  zero = _const(k, 0)
  x = lax.sub(k, loc)
  return lax_numpy.where(lax.lt(x, zero), zero, gammaincc(ufuncs.floor(1 + x), mu))
