"""arrax.scipy.stats: probability distributions, as jax.scipy.stats."""
from arrax.scipy.stats import (bernoulli, beta, cauchy, expon, gamma, laplace,  # noqa: F401
                               logistic, multivariate_normal, norm, poisson, t, uniform)
