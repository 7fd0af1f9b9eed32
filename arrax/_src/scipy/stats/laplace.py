"""The Laplace (double exponential) distribution."""
from arrax._src.lax import elementwise as lax
from arrax._src.scipy.special import promote_args_inexact, _const


def logpdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("laplace.logpdf", x, loc, scale)
  linear = lax.div(lax.abs(lax.sub(x, loc)), scale)
  return lax.neg(lax.add(linear, lax.log(lax.mul(_const(x, 2), scale))))


def pdf(x, loc=0, scale=1):
  return lax.exp(logpdf(x, loc, scale))


def cdf(x, loc=0, scale=1):
  x, loc, scale = promote_args_inexact("laplace.cdf", x, loc, scale)
  half, one = _const(x, 0.5), _const(x, 1)
  z = lax.div(lax.sub(x, loc), scale)
  return lax.select(lax.le(z, _const(x, 0)), lax.mul(half, lax.exp(z)),
                    lax.sub(one, lax.mul(half, lax.exp(lax.neg(z)))))
