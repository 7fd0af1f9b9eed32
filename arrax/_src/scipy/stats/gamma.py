"""The gamma distribution with shape `a` on [loc, inf)."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy
from arrax._src.scipy.special import (_const, gammainc, gammaincc, gammaln,
                                      promote_args_inexact, xlogy)


def logpdf(x, a, loc=0, scale=1):
  x, a, loc, scale = promote_args_inexact("gamma.logpdf", x, a, loc, scale)
  ok = lax.ge(x, loc)
  one = _const(x, 1)
  # Outside the support y is replaced by 1 so the masked branch stays finite.
  y = lax_numpy.where(ok, lax.div(lax.sub(x, loc), scale), one)
  log_linear = lax.sub(xlogy(lax.sub(a, one), y), y)
  shape_terms = lax.add(gammaln(a), lax.log(scale))
  return lax_numpy.where(ok, lax.sub(log_linear, shape_terms), -np.inf)


def pdf(x, a, loc=0, scale=1):
  return lax.exp(logpdf(x, a, loc, scale))


def cdf(x, a, loc=0, scale=1):
  x, a, loc, scale = promote_args_inexact("gamma.cdf", x, a, loc, scale)
  y = lax.clamp(_const(x, 0), lax.div(lax.sub(x, loc), scale), _const(x, np.inf))
  return gammainc(a, y)


def logcdf(x, a, loc=0, scale=1):
  return lax.log(cdf(x, a, loc, scale))


def sf(x, a, loc=0, scale=1):
  x, a, loc, scale = promote_args_inexact("gamma.sf", x, a, loc, scale)
  y = lax.div(lax.sub(x, loc), scale)
  return lax_numpy.where(lax.lt(y, _const(y, 0)), 1, gammaincc(a, y))


def logsf(x, a, loc=0, scale=1):
  return lax.log(sf(x, a, loc, scale))
