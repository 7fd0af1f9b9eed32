"""The uniform distribution on [loc, loc + scale]."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import creation, lax_numpy, ufuncs
from arrax._src.scipy.special import promote_args_inexact, _select


def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("uniform.logpdf", x, loc, scale)
  outside = ufuncs.logical_or(lax.gt(x, lax.add(loc, scale)), lax.lt(x, loc))
  return lax_numpy.where(outside, -np.inf, lax.neg(lax.log(scale)))


def pdf(x, loc=0, scale=1):
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("uniform.cdf", x, loc, scale)
  zero, one = creation.array(0, x.dtype), creation.array(1, x.dtype)
  hi = lax.add(loc, scale)
  inside = lax.ge(x, loc) & lax.le(x, hi)
  return _select([lax.lt(x, loc), lax.gt(x, hi), inside],
                 [zero, one, lax.div(lax.sub(x, loc), scale)], creation.zeros_like(x))


def ppf(q, loc=0, scale=1):
  q, loc, scale = promote_args_inexact("uniform.ppf", q, loc, scale)
  return lax_numpy.where(ufuncs.isnan(q) | (q < 0) | (q > 1), np.nan,
                         lax.add(loc, lax.mul(scale, q)))
