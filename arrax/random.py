"""arrax.random: PRNG keys and random samplers, bit-identical to jax.random (both threefry modes)."""
from arrax._src.random import (PRNGKey, ball, bernoulli, beta, binomial, bits,  # noqa: F401
                               categorical, cauchy, chisquare, choice, clone, dirichlet,
                               double_sided_maxwell, exponential, f, fold_in, gamma,
                               generalized_normal, geometric, gumbel, key, key_data, key_dtype,
                               key_impl, laplace, loggamma, logistic, lognormal, maxwell,
                               multinomial, multivariate_normal, normal, orthogonal, pareto,
                               permutation, poisson, rademacher, randint, random_gamma_p,
                               rayleigh, split, t, triangular, truncated_normal, uniform, wald,
                               weibull_min, wrap_key_data)
