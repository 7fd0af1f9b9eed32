"""arrax.scipy.stats: probability distributions and sample statistics, as jax.scipy.stats."""
from arrax.scipy.stats import (bernoulli, beta, betabinom, binom, cauchy, chi2,  # noqa: F401
                               dirichlet, expon, gamma, gennorm, geom, gumbel_l, gumbel_r,
                               laplace, logistic, multinomial, multivariate_normal, nbinom, norm,
                               pareto, poisson, t, truncnorm, uniform, vonmises, wrapcauchy)
from arrax._src.scipy.stats._core import (  # noqa: F401
    mode as mode, rankdata as rankdata, sem as sem)
from arrax._src.scipy.stats.kde import gaussian_kde as gaussian_kde  # noqa: F401
