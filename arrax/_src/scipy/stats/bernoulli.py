"""The Bernoulli distribution with success probability p."""
import numpy as np

import arrax.lax as lax
import arrax.numpy as jnp
from arrax._src.scipy.special import promote_args_inexact, _const, _select, xlog1py, xlogy


def logpmf(k, p, loc=0):
  k, p, loc = promote_args_inexact("bernoulli.logpmf", k, p, loc)
  zero, one = _const(k, 0), _const(k, 1)
  x = lax.sub(k, loc)
  log_probs = xlogy(x, p) + xlog1py(lax.sub(one, x), -p)
  return jnp.where(jnp.logical_or(lax.lt(x, zero), lax.gt(x, one)), -np.inf, log_probs)


def pmf(k, p, loc=0):
  return jnp.exp(logpmf(k, p, loc))


def cdf(k, p):
  k, p = promote_args_inexact("bernoulli.cdf", k, p)
  zero, one = _const(k, 0), _const(k, 1)
  invalid = jnp.isnan(k) | jnp.isnan(p) | (p < zero) | (p > one)
  between = jnp.logical_and(lax.ge(k, zero), lax.lt(k, one))
  return _select([invalid, lax.lt(k, zero), between, lax.ge(k, one)],
                 [np.nan, zero, one - p, one], jnp.zeros_like(k))


def ppf(q, p):
  q, p = promote_args_inexact("bernoulli.ppf", q, p)
  zero, one = _const(q, 0), _const(q, 1)
  invalid = jnp.isnan(q) | jnp.isnan(p) | (p < zero) | (p > one) | (q < zero) | (q > one)
  return jnp.where(invalid, np.nan, jnp.where(lax.le(q, one - p), zero, one))
