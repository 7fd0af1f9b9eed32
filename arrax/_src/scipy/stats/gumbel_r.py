"""The right-skewed Gumbel (maximum extreme value) distribution."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.nn.functions import log1mexp
from arrax._src.numpy import lax_numpy
from arrax._src.scipy.special import _const, promote_args_inexact, xlogy


def _ok(scale):
  return lax.gt(scale, _const(scale, 0))


def _standardized(name, x, loc, scale):
  """(z, scale): z = (x - loc) / scale after promoting the arguments (shared with gumbel_l)."""
  x, loc, scale = promote_args_inexact(name, x, loc, scale)
  return lax.div(lax.sub(x, loc), scale), scale


def logpdf(x, loc=0, scale=1):
  z, scale = _standardized("gumbel_r.logpdf", x, loc, scale)
  out = lax.add(xlogy(-1, scale), lax.neg(lax.add(z, lax.exp(lax.neg(z)))))
  return lax_numpy.where(_ok(scale), out, np.nan)


def pdf(x, loc=0, scale=1):
  return lax.exp(logpdf(x, loc, scale))


def logcdf(x, loc=0, scale=1):
  z, scale = _standardized("gumbel_r.logcdf", x, loc, scale)
  return lax_numpy.where(_ok(scale), lax.neg(lax.exp(lax.neg(z))), np.nan)


def cdf(x, loc=0, scale=1):
  return lax.exp(logcdf(x, loc, scale))


def ppf(p, loc=0, scale=1):
  p, loc, scale = promote_args_inexact("gumbel_r.ppf", p, loc, scale)
  ok = lax.bitwise_and(lax.gt(p, _const(p, 0)), lax.lt(p, _const(p, 1)))
  out = lax.sub(loc, lax.mul(scale, lax.log(xlogy(-1, p))))
  return lax_numpy.where(ok, out, np.nan)


def sf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("gumbel_r.sf", x, loc, scale)
  neg_z = lax.div(lax.sub(loc, x), scale)
  out = lax.sub(_const(x, 1), lax.exp(lax.neg(lax.exp(neg_z))))
  return lax_numpy.where(_ok(scale), out, np.nan)


def logsf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("gumbel_r.logsf", x, loc, scale)
  neg_z = lax.div(lax.sub(loc, x), scale)
  return lax_numpy.where(_ok(scale), log1mexp(lax.exp(neg_z)), np.nan)
