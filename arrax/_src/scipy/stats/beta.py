"""The beta distribution on [loc, loc + scale]."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy, ufuncs
from arrax._src.scipy.special import promote_args_inexact, _const, betaln, xlog1py, xlogy
from arrax._src.scipy.special_more import betainc


def logpdf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote_args_inexact("beta.logpdf", x, a, b, loc, scale)
  one, zero = _const(x, 1), _const(a, 0)
  y = lax.div(lax.sub(x, loc), scale)
  log_linear = lax.add(xlogy(lax.sub(a, one), y), xlog1py(lax.sub(b, one), lax.neg(y)))
  log_probs = lax.sub(lax.add(lax.neg(betaln(a, b)), log_linear), lax.log(scale))
  outside = ufuncs.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc))
  out = lax_numpy.where(outside, -np.inf, log_probs)
  bad_params = lax.le(a, zero) | lax.le(b, zero) | lax.le(scale, zero)
  return lax_numpy.where(bad_params, np.nan, out)


def pdf(x, a, b, loc=0, scale=1):
  return lax.exp(logpdf(x, a, b, loc, scale))


def _unit(x, loc, scale):
  """(x - loc) / scale clamped to [0, 1]."""
  return lax.clamp(_const(x, 0), lax.div(lax.sub(x, loc), scale), _const(x, 1))


def cdf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote_args_inexact("beta.cdf", x, a, b, loc, scale)
  return betainc(a, b, _unit(x, loc, scale))


def logcdf(x, a, b, loc=0, scale=1):
  return lax.log(cdf(x, a, b, loc, scale))


def sf(x, a, b, loc=0, scale=1):
  x, a, b, loc, scale = promote_args_inexact("beta.sf", x, a, b, loc, scale)
  return betainc(b, a, 1 - _unit(x, loc, scale))


def logsf(x, a, b, loc=0, scale=1):
  return lax.log(sf(x, a, b, loc, scale))
