"""arrax.scipy.special: special functions, as jax.scipy.special."""
from arrax._src.scipy.special import (  # noqa: F401
    beta, betaln, boxcox, boxcox1p, comb, digamma, entr, erf, erfc, erfinv, expit, factorial,
    gamma, gammainc, gammaincc, gammaln, gammasgn, kl_div, log_ndtr, log_softmax, logit,
    logsumexp, multigammaln, ndtr, ndtri, polygamma, rel_entr, softmax, xlog1py, xlogy)
from arrax._src.scipy.special_more import (  # noqa: F401
    bernoulli as bernoulli, bessel_jn as bessel_jn, betainc as betainc, dawsn as dawsn,
    erfcx as erfcx, i0 as i0, i0e as i0e, i1 as i1, i1e as i1e, loggamma as loggamma,
    owens_t as owens_t, poch as poch, spence as spence, wofz as wofz, zeta as zeta)
from arrax._src.scipy.special_expint import (  # noqa: F401
    exp1 as exp1, expi as expi, expn as expn, fresnel as fresnel, sici as sici)
from arrax._src.scipy.special_hyp import (  # noqa: F401
    hyp1f1 as hyp1f1, hyp2f1 as hyp2f1, sph_harm_y as sph_harm_y)
