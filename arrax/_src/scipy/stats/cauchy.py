"""The Cauchy distribution."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import ufuncs
from arrax._src.scipy.special import promote_args_inexact, _const


def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("cauchy.logpdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  normalizer = lax.log(lax.mul(_const(x, np.pi), scale))
  return lax.neg(lax.add(normalizer, lax.log1p(lax.mul(z, z))))


def pdf(x, loc=0, scale=1):
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("cauchy.cdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  inv_pi = lax.div(_const(x, 1.), _const(x, np.pi))
  return lax.add(_const(x, 0.5), lax.mul(inv_pi, ufuncs.arctan(z)))


def logcdf(x, loc=0, scale=1):
  return lax.log(cdf(x, loc, scale))


def sf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("cauchy.sf", x, loc, scale)
  return cdf(-x, -loc, scale)


def logsf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("cauchy.logsf", x, loc, scale)
  return logcdf(-x, -loc, scale)


def isf(q, loc=0, scale=1):
  q, loc, scale = promote_args_inexact("cauchy.isf", q, loc, scale)
  angle = lax.sub(_const(q, np.pi / 2), lax.mul(_const(q, np.pi), q))
  return lax.add(lax.mul(lax.tan(angle), scale), loc)


def ppf(q, loc=0, scale=1):
  q, loc, scale = promote_args_inexact("cauchy.ppf", q, loc, scale)
  angle = lax.sub(lax.mul(_const(q, np.pi), q), _const(q, np.pi / 2))
  return lax.add(lax.mul(lax.tan(angle), scale), loc)
