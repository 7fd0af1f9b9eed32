"""The Pareto distribution with shape b, support x >= loc + scale."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy, ufuncs
from arrax._src.scipy.special import _const, promote_args_inexact


def _below(x, loc, scale):
  return lax.lt(x, lax.add(loc, scale))


def logpdf(x, b, loc=0, scale=1):
  x, b, loc, scale = promote_args_inexact("pareto.logpdf", x, b, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  out = lax.neg(lax.add(lax.log(lax.div(scale, b)),
                        lax.mul(lax.add(b, _const(x, 1)), lax.log(z))))
  return lax_numpy.where(_below(x, loc, scale), -np.inf, out)


def pdf(x, b, loc=0, scale=1):
  return lax.exp(logpdf(x, b, loc, scale))


def cdf(x, b, loc=0, scale=1):
  x, b, loc, scale = promote_args_inexact("pareto.cdf", x, b, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  out = lax.sub(_const(x, 1), lax.pow(z, lax.neg(b)))
  return lax_numpy.where(_below(x, loc, scale), _const(x, 0), out)


def logcdf(x, b, loc=0, scale=1):
  x, b, loc, scale = promote_args_inexact("pareto.logcdf", x, b, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  out = lax.log1p(lax.neg(lax.pow(z, lax.neg(b))))
  return lax_numpy.where(_below(x, loc, scale), -np.inf, out)


def logsf(x, b, loc=0, scale=1):
  x, b, loc, scale = promote_args_inexact("pareto.logsf", x, b, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  return lax_numpy.where(_below(x, loc, scale), _const(x, 0), lax.neg(lax.mul(b, lax.log(z))))


def sf(x, b, loc=0, scale=1):
  return lax.exp(logsf(x, b, loc, scale))


def ppf(q, b, loc=0, scale=1):
  q, b, loc, scale = promote_args_inexact("pareto.ppf", q, b, loc, scale)
  one = _const(q, 1)
  out = lax.add(loc, lax.mul(scale, lax.pow(lax.sub(one, q), lax.neg(lax.div(one, b)))))
  return lax_numpy.where(ufuncs.isnan(q) | (q < 0) | (q > 1), np.nan, out)
