"""arrax.scipy.stats: probability distributions, as jax.scipy.stats."""
from arrax.scipy.stats import (bernoulli, beta, betabinom, binom, cauchy, chi2,  # noqa: F401
                               dirichlet, expon, gamma, gennorm, geom, gumbel_l, gumbel_r,
                               laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
                               pareto, poisson, t, uniform, vonmises, wrapcauchy)
