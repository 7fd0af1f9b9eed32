"""The normal distribution truncated to [a, b] (in units of scale around loc)."""
import numpy as np

from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax
from arrax._src.numpy import creation, lax_numpy, searching, ufuncs
from arrax._src.scipy.special import log_ndtr, logsumexp, ndtr, promote_args_inexact
from arrax._src.scipy.stats import norm


def _log_sub(x, y):
  """log(exp(x) - exp(y))."""
  return logsumexp(creation.array([x, y]),
                   b=creation.array([creation.ones_like(x), -creation.ones_like(y)]), axis=0)


def _log_mass(a, b):
  """log(ndtr(b) - ndtr(a)), computed in the tail that keeps it accurate."""
  a, b = lax_numpy.broadcast_arrays(creation.array(a), creation.array(b))
  left, right = b <= 0, a > 0
  central = ~(left | right)
  lo = lax_numpy.where(right, -b, a)
  hi = lax_numpy.where(right, -a, b)
  tail = _log_sub(log_ndtr(hi), log_ndtr(lo))
  return lax_numpy.where(central, ufuncs.log1p(-ndtr(a) - ndtr(-b)), tail)


@jit
def logpdf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote_args_inexact("truncnorm.logpdf", x, a, b, loc, scale)
  out = lax.sub(norm.logpdf(x, loc, scale), _log_mass(a, b))
  z = lax.div(lax.sub(x, loc), scale)
  out = lax_numpy.where((z < a) | (z > b), -np.inf, out)
  return lax_numpy.where(a >= b, np.nan, out)


def pdf(x, a, b, loc=0, scale=1):
  return lax.exp(logpdf(x, a, b, loc, scale))


@jit
def logcdf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote_args_inexact("truncnorm.logcdf", x, a, b, loc, scale)
  x, a, b = lax_numpy.broadcast_arrays(x, a, b)
  x = lax.div(lax.sub(x, loc), scale)
  total = _log_mass(a, b)
  below = _log_mass(a, x) - total
  above = _log_mass(x, b) - total
  out = searching.select([x >= b, x <= a, below > -0.1, x > a],
                         [0, -np.inf, ufuncs.log1p(-ufuncs.exp(above)), below])
  return lax_numpy.where(a >= b, np.nan, out)


@jit
def cdf(x, a, b, loc=0, scale=1):
  return lax.exp(logcdf(x, a, b, loc, scale))


@jit
def logsf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote_args_inexact("truncnorm.logsf", x, a, b, loc, scale)
  return logcdf(-x, -b, -a, -loc, scale)


@jit
def sf(x, a, b, loc=0, scale=1):
  return lax.exp(logsf(x, a, b, loc, scale))
