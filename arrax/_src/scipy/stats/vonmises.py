"""The von Mises distribution (a circular normal) with concentration kappa."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.lax import special as lax_special
from arrax._src.numpy import lax_numpy, ufuncs
from arrax._src.scipy.special import _const, promote_args_inexact


def logpdf(x, kappa):
  x, kappa = promote_args_inexact("vonmises.logpdf", x, kappa)
  # log(2 pi I0(kappa)) = kappa + log(2 pi i0e(kappa)): the scaled Bessel avoids overflow.
  out = kappa * (ufuncs.cos(x) - 1) - ufuncs.log(2 * np.pi * lax_special.bessel_i0e(kappa))
  return lax_numpy.where(lax.gt(kappa, _const(kappa, 0)), out, np.nan)


def pdf(x, kappa):
  return lax.exp(logpdf(x, kappa))
