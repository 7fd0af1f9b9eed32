"""The generalized normal distribution with shape beta: density ~ exp(-|x|**beta)."""
from arrax._src.lax import elementwise as lax
from arrax._src.lax import special as lax_special
from arrax._src.scipy.special import promote_args_inexact


def logpdf(x, beta):
  x, beta = promote_args_inexact("gennorm.logpdf", x, beta)
  return lax.log(.5 * beta) - lax.lgamma(1 / beta) - lax.abs(x) ** beta


def cdf(x, beta):
  x, beta = promote_args_inexact("gennorm.cdf", x, beta)
  return .5 * (1 + lax.sign(x) * lax_special.igamma(1 / beta, lax.abs(x) ** beta))


def pdf(x, beta):
  return lax.exp(logpdf(x, beta))
