"""The chi-squared distribution with df degrees of freedom (a gamma(df / 2, scale 2))."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy
from arrax._src.scipy.special import _const, gammainc, gammaincc, promote_args_inexact


def logpdf(x, df, loc=0, scale=1):
  x, df, loc, scale = promote_args_inexact("chi2.logpdf", x, df, loc, scale)
  one, two = _const(x, 1), _const(x, 2)
  y = lax.div(lax.sub(x, loc), scale)
  half_df = lax.div(df, two)
  kernel = lax.sub(lax.mul(lax.sub(half_df, one), lax.log(y)), lax.div(y, two))
  log_norm = lax.neg(lax.add(lax.lgamma(half_df), lax.div(lax.mul(lax.log(two), df), two)))
  out = lax.add(lax.sub(log_norm, lax.log(scale)), kernel)
  return lax_numpy.where(lax.lt(x, loc), -np.inf, out)


def pdf(x, df, loc=0, scale=1):
  return lax.exp(logpdf(x, df, loc, scale))


def _half_x(x, loc, scale):
  return lax.clamp(_const(x, 0), lax.div(lax.sub(x, loc), lax.mul(scale, _const(scale, 2))),
                   _const(x, np.inf))


def cdf(x, df, loc=0, scale=1):
  x, df, loc, scale = promote_args_inexact("chi2.cdf", x, df, loc, scale)
  return gammainc(lax.div(df, _const(scale, 2)), _half_x(x, loc, scale))


def logcdf(x, df, loc=0, scale=1):
  return lax.log(cdf(x, df, loc, scale))


def sf(x, df, loc=0, scale=1):
  x, df, loc, scale = promote_args_inexact("chi2.sf", x, df, loc, scale)
  return gammaincc(lax.div(df, _const(scale, 2)), _half_x(x, loc, scale))


def logsf(x, df, loc=0, scale=1):
  return lax.log(sf(x, df, loc, scale))
