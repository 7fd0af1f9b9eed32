"""The exponential distribution on [loc, inf) with mean loc + scale."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import creation, lax_numpy, ufuncs
from arrax._src.scipy.special import promote_args_inexact


def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("expon.logpdf", x, loc, scale)
  log_probs = lax.neg(lax.add(lax.div(lax.sub(x, loc), scale), lax.log(scale)))
  return lax_numpy.where(lax.lt(x, loc), -np.inf, log_probs)


def pdf(x, loc=0, scale=1):
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("expon.cdf", x, loc, scale)
  neg_z = lax.div(lax.sub(loc, x), scale)
  return lax_numpy.where(lax.lt(x, loc), creation.zeros_like(neg_z), lax.neg(lax.expm1(neg_z)))


def logcdf(x, loc=0, scale=1):
  return lax.log1p(lax.neg(sf(x, loc, scale)))


def logsf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("expon.sf", x, loc, scale)
  neg_z = lax.div(lax.sub(loc, x), scale)
  return lax_numpy.where(lax.lt(x, loc), creation.zeros_like(neg_z), neg_z)


def sf(x, loc=0, scale=1):
  return lax.exp(logsf(x, loc, scale))


def ppf(q, loc=0, scale=1):
  q, loc, scale = promote_args_inexact("expon.ppf", q, loc, scale)
  return lax_numpy.where(ufuncs.isnan(q) | (q < 0) | (q > 1), np.nan,
                         lax.sub(loc, lax.mul(scale, lax.log1p(lax.neg(q)))))
