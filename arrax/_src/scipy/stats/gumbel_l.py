"""The left-skewed Gumbel (minimum extreme value) distribution."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy, ufuncs
from arrax._src.scipy.special import _const, promote_args_inexact, xlog1py, xlogy
from arrax._src.scipy.stats.gumbel_r import _ok, _standardized


def logpdf(x, loc=0, scale=1):
  z, scale = _standardized("gumbel_l.logpdf", x, loc, scale)
  out = lax.add(xlogy(-1, scale), lax.sub(z, lax.exp(z)))
  return lax_numpy.where(_ok(scale), out, np.nan)


def pdf(x, loc=0, scale=1):
  return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  z, scale = _standardized("gumbel_l.logcdf", x, loc, scale)
  out = lax.log(-lax.expm1(lax.neg(lax.exp(z))))
  return lax_numpy.where(_ok(scale), out, np.nan)


def cdf(x, loc=0, scale=1):
  return lax.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
  p, loc, scale = promote_args_inexact("gumbel_l.ppf", p, loc, scale)
  ok = lax.bitwise_and(lax.gt(p, _const(p, 0)), lax.lt(p, _const(p, 1)))
  out = lax.add(loc, lax.mul(scale, lax.log(xlog1py(-1, lax.neg(p)))))
  return lax_numpy.where(ok, out, np.nan)


def logsf(x, loc=0, scale=1):
  z, scale = _standardized("gumbel_l.logsf", x, loc, scale)
  return lax_numpy.where(_ok(scale), lax.neg(lax.exp(z)), np.nan)


def sf(x, loc=0, scale=1):
  return ufuncs.exp(logsf(x, loc, scale))
