"""The normal distribution N(loc, scale**2)."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import creation
from arrax._src.scipy import special
from arrax._src.scipy.special import promote_args_inexact, _const


def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("norm.logpdf", x, loc, scale)
  scale_sq = lax.square(scale)
  log_normalizer = lax.log(lax.mul(_const(x, 2 * np.pi), scale_sq))
  quadratic = lax.div(lax.square(lax.sub(x, loc)), scale_sq)
  return lax.div(lax.add(log_normalizer, quadratic), _const(x, -2))


def pdf(x, loc=0, scale=1):
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("norm.cdf", x, loc, scale)
  return special.ndtr(lax.div(lax.sub(x, loc), scale))


def logcdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("norm.logcdf", x, loc, scale)
  return special.log_ndtr(lax.div(lax.sub(x, loc), scale))


def ppf(q, loc=0, scale=1):
  # As in JAX, the result has the default float dtype whatever q's.
  return creation.asarray(special.ndtri(q) * scale + loc, float)


def sf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("norm.sf", x, loc, scale)
  return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("norm.logsf", x, loc, scale)
  return logcdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
  return ppf(lax.sub(_const(q, 1), q), loc, scale)
