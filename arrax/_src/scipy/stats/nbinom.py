"""The negative binomial distribution: k failures before n successes of probability p."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy
from arrax._src.scipy.special import _const, gammaln, promote_args_inexact, xlogy


def logpmf(k, n, p, loc=0):
  k, n, p, loc = promote_args_inexact("nbinom.logpmf", k, n, p, loc)
  one = _const(k, 1)
  y = lax.sub(k, loc)
  log_comb = lax.sub(lax.sub(gammaln(lax.add(y, n)), gammaln(n)), gammaln(lax.add(y, one)))
  out = lax.add(log_comb, lax.add(xlogy(n, p), xlogy(y, lax.sub(one, p))))
  return lax_numpy.where(lax.lt(k, loc), -np.inf, out)


def pmf(k, n, p, loc=0):
  return lax.exp(logpmf(k, n, p, loc))
