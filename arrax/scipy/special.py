"""arrax.scipy.special: special functions, as jax.scipy.special."""
from arrax._src.scipy.special import (  # noqa: F401
    beta, betaln, boxcox, boxcox1p, comb, digamma, entr, erf, erfc, erfinv, expit, factorial,
    gamma, gammainc, gammaincc, gammaln, gammasgn, kl_div, log_ndtr, log_softmax, logit,
    logsumexp, multigammaln, ndtr, ndtri, polygamma, rel_entr, softmax, xlog1py, xlogy)
