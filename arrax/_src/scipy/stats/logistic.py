"""The logistic distribution."""
from arrax._src.lax import elementwise as lax
from arrax._src.numpy import ufuncs
from arrax._src.scipy.special import promote_args_inexact, _const, expit, logit


def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("logistic.logpdf", x, loc, scale)
  z = lax.div(lax.sub(x, loc), scale)
  two = _const(z, 2)
  half_z = lax.div(z, two)
  # -2 log(e^(z/2) + e^(-z/2)), symmetric and overflow-free.
  return lax.sub(lax.mul(lax.neg(two), ufuncs.logaddexp(half_z, lax.neg(half_z))), lax.log(scale))


def pdf(x, loc=0, scale=1):
  return lax.exp(logpdf(x, loc, scale))


def ppf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("logistic.ppf", x, loc, scale)
  return lax.add(lax.mul(logit(x), scale), loc)


def sf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("logistic.sf", x, loc, scale)
  return expit(lax.neg(lax.div(lax.sub(x, loc), scale)))


def isf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("logistic.isf", x, loc, scale)
  return lax.add(lax.mul(lax.neg(logit(x)), scale), loc)


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("logistic.cdf", x, loc, scale)
  return expit(lax.div(lax.sub(x, loc), scale))
