"""The Poisson distribution with mean mu, shifted by loc."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs
from arrax._src.numpy.util import ensure_arraylike, promote_dtypes_inexact
from arrax._src.scipy.special import (promote_args_inexact, _const, entr, gammaincc, gammaln,
                                     xlogy)


def logpmf(k, mu, loc=0):
  k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
  x = lax.sub(k, loc)
  log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
  off_support = ufuncs.logical_or(lax.lt(x, _const(k, 0)), lax.ne(ufuncs.round(k), k))
  return lax_numpy.where(off_support, -np.inf, log_probs)


def pmf(k, mu, loc=0):
  return ufuncs.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  k, mu, loc = promote_args_inexact("poisson.cdf", k, mu, loc)
  zero = _const(k, 0)
  x = lax.sub(k, loc)
  return lax_numpy.where(lax.lt(x, zero), zero, gammaincc(ufuncs.floor(1 + x), mu))


def _entropy_sum(mu, max_k, upper):
  """-sum p log p over k < upper (a static bound max_k on the number of terms)."""
  k = creation.arange(max_k, dtype=mu.dtype)[:, None]
  probs = lax_numpy.where(k < ufuncs.ceil(upper).astype(k.dtype)[None, :], pmf(k, mu, 0), 0.0)
  return reductions.sum(entr(probs), axis=0)


def entropy(mu, loc=0):
  """The Shannon entropy of Poisson(mu) (loc does not change it): direct sums below mu = 100
  (over k < mu + 20, or mu + 10 sqrt(mu) + 20 from mu = 10), Stirling's series above."""
  mu, loc = ensure_arraylike("poisson.entropy", mu, loc)
  mu, loc = (creation.asarray(v) for v in promote_dtypes_inexact(mu, loc))
  shape = lax_numpy.broadcast_shapes(mu.shape, loc.shape)
  m = lax_numpy.ravel(mu)
  large = 0.5 * ufuncs.log(2 * np.pi * np.e * m) - 1.0 / (12 * m)
  out = lax_numpy.where(
      m == 0, creation.zeros_like(m),
      lax_numpy.where(m < 10, _entropy_sum(m, 35, m + 20),
                      lax_numpy.where(m < 100, _entropy_sum(m, 250, m + 10 * ufuncs.sqrt(m) + 20),
                                      large)))
  return lax_numpy.broadcast_to(lax_numpy.reshape(out, mu.shape), shape)
