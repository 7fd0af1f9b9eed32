"""The wrapped Cauchy distribution on [0, 2 pi] with shape 0 < c < 1."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import lax_numpy, ufuncs
from arrax._src.scipy.special import _const, promote_args_inexact


def logpdf(x, c):
  x, c = promote_args_inexact("wrapcauchy.logpdf", x, c)
  density = (ufuncs.log(1 - c * c) - ufuncs.log(2 * np.pi)
             - ufuncs.log(1 + c * c - 2 * c * ufuncs.cos(x)))
  in_range = lax.ge(x, _const(x, 0)) & lax.le(x, _const(x, np.pi * 2))
  return lax_numpy.where(lax.gt(c, _const(c, 0)) & lax.lt(c, _const(c, 1)),
                         lax_numpy.where(in_range, density, -np.inf), np.nan)


def pdf(x, c):
  return lax.exp(logpdf(x, c))
