"""The binomial distribution: k successes in n trials of probability p, shifted by loc."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy, ufuncs
from arrax._src.scipy.special import _const, gammaln, promote_args_inexact, xlog1py, xlogy


def logpmf(k, n, p, loc=0):
  k, n, p, loc = promote_args_inexact("binom.logpmf", k, n, p, loc)
  y = lax.sub(k, loc)
  zero = _const(y, 0)
  log_comb = lax.sub(gammaln(n + 1), lax.add(gammaln(y + 1), gammaln(n - y + 1)))
  log_powers = lax.add(xlogy(y, p), xlog1py(lax.sub(n, y), lax.neg(p)))
  out = lax.add(log_comb, log_powers)
  # Exactly 1 where the outcome is certain (no trials, or p at an end of [0, 1]).
  certain = ufuncs.logical_or(ufuncs.logical_and(lax.eq(y, zero), lax.eq(n, zero)),
                              lax.eq(log_powers, zero))
  out = lax_numpy.where(certain, 0., out)
  return lax_numpy.where(lax.ge(k, loc) & lax.lt(k, loc + n + 1), out, -np.inf)


def pmf(k, n, p, loc=0):
  return lax.exp(logpmf(k, n, p, loc))
