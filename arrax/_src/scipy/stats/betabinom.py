"""The beta-binomial distribution: binomial with a Beta(a, b) success probability."""
import numpy as np

from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy, ufuncs
from arrax._src.scipy.special import _const, betaln, promote_args_inexact


@jit
def logpmf(k, n, a, b, loc=0):
  k, n, a, b, loc = promote_args_inexact("betabinom.logpmf", k, n, a, b, loc)
  y = lax.sub(lax.floor(k), loc)
  one, zero = _const(y, 1), _const(y, 0)
  log_comb = lax.neg(lax.add(lax.log1p(n), betaln(lax.add(lax.sub(n, y), one), lax.add(y, one))))
  out = lax.add(log_comb, lax.sub(betaln(lax.add(y, a), lax.add(lax.sub(n, y), b)), betaln(a, b)))
  out = lax_numpy.where(ufuncs.logical_and(lax.eq(y, zero), lax.eq(n, zero)), 0., out)
  outside = ufuncs.logical_or(ufuncs.logical_or(lax.lt(y, lax.neg(loc)), lax.gt(y, n)),
                              lax.le(lax.add(y, a), zero))
  out = lax_numpy.where(outside, -np.inf, out)
  bad = ufuncs.logical_or(ufuncs.logical_or(lax.lt(n, zero), lax.le(a, zero)), lax.le(b, zero))
  return lax_numpy.where(bad, np.nan, out)


def pmf(k, n, a, b, loc=0):
  return lax.exp(logpmf(k, n, a, b, loc))
