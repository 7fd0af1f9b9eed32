"""Student's t distribution with `df` degrees of freedom."""
import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.scipy.special import promote_args_inexact, _const


def logpdf(x, df, loc=0, scale=1):
  x, df, loc, scale = promote_args_inexact("t.logpdf", x, df, loc, scale)
  two = _const(x, 2)
  z = lax.div(lax.sub(x, loc), scale)
  half_df = lax.div(df, two)
  half_df_plus_half = lax.add(half_df, _const(x, 0.5))
  log_norm = lax.div(lax.log(lax.mul(lax.mul(lax.mul(scale, scale), _const(x, np.pi)), df)), two)
  normalizer = lax.sub(lax.add(lax.lgamma(half_df), log_norm), lax.lgamma(half_df_plus_half))
  quadratic = lax.div(lax.mul(z, z), df)
  return lax.neg(lax.add(normalizer, lax.mul(half_df_plus_half, lax.log1p(quadratic))))


def pdf(x, df, loc=0, scale=1):
  return lax.exp(logpdf(x, df, loc, scale))
