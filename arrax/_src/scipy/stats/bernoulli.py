"""The Bernoulli distribution with success probability p."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import creation, lax_numpy, ufuncs
from arrax._src.scipy.special import promote_args_inexact, _const, _select, xlog1py, xlogy


def logpmf(k, p, loc=0):
  k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
  zero, one = _const(k, 0), _const(k, 1)
  x = lax.sub(k, loc)
  log_probs = xlogy(x, p) + xlog1py(lax.sub(one, x), -p)
  return lax_numpy.where(ufuncs.logical_or(lax.lt(x, zero), lax.gt(x, one)), -np.inf, log_probs)


def pmf(k, p, loc=0):
  return ufuncs.exp(logpmf(k, p, loc))


def cdf(k, p):
  k, p = promote_args_inexact("bernoulli.cdf", k, p)
  zero, one = _const(k, 0), _const(k, 1)
  invalid = ufuncs.isnan(k) | ufuncs.isnan(p) | (p < zero) | (p > one)
  between = ufuncs.logical_and(lax.ge(k, zero), lax.lt(k, one))
  return _select([invalid, lax.lt(k, zero), between, lax.ge(k, one)],
                 [np.nan, zero, one - p, one], creation.zeros_like(k))


def ppf(q, p):
  q, p = promote_args_inexact("bernoulli.ppf", q, p)
  zero, one = _const(q, 0), _const(q, 1)
  invalid = ufuncs.isnan(q) | ufuncs.isnan(p) | (p < zero) | (p > one) | (q < zero) | (q > one)
  return lax_numpy.where(invalid, np.nan, lax_numpy.where(lax.le(q, one - p), zero, one))
