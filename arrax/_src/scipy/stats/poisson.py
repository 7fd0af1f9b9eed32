"""The Poisson distribution with mean mu, shifted by loc."""
import numpy as np

import arrax.lax as lax
import arrax.numpy as jnp
from arrax._src.scipy.special import promote_args_inexact, _const, gammaincc, gammaln, xlogy


def logpmf(k, mu, loc=0):
  k, mu, loc = promote_args_inexact("poisson.logpmf", k, mu, loc)
  x = lax.sub(k, loc)
  log_probs = xlogy(x, mu) - gammaln(x + 1) - mu
  off_support = jnp.logical_or(lax.lt(x, _const(k, 0)), lax.ne(jnp.round(k), k))
  return jnp.where(off_support, -np.inf, log_probs)


def pmf(k, mu, loc=0):
  return jnp.exp(logpmf(k, mu, loc))


def cdf(k, mu, loc=0):
  k, mu, loc = promote_args_inexact("poisson.cdf", k, mu, loc)
  zero = _const(k, 0)
  x = lax.sub(k, loc)
  return jnp.where(lax.lt(x, zero), zero, gammaincc(jnp.floor(1 + x), mu))
