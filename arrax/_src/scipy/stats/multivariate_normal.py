"""The multivariate normal distribution N(mean, cov)."""
from functools import partial

import numpy as np

from arrax._src.lax import elementwise as lax
from arrax._src.lax import linalg as lax_linalg
from arrax._src.numpy import creation, reductions, ufuncs, vectorize
from arrax._src.numpy.util import promote_dtypes_inexact


def logpdf(x, mean, cov, allow_singular=None):
  """The log density; `cov` may be a scalar (isotropic) or a (..., n, n) matrix."""
  if allow_singular is not None:
    raise NotImplementedError("allow_singular argument of multivariate_normal.logpdf: "
                              "leave it as None (the covariance must be positive definite).")
  x, mean, cov = (creation.asarray(a) for a in promote_dtypes_inexact(x, mean, cov))
  if not mean.shape:
    return -1/2 * ufuncs.square(x - mean) / cov - 1/2 * (ufuncs.log(2 * np.pi) + ufuncs.log(cov))
  n = mean.shape[-1]
  if not np.shape(cov):
    y = x - mean
    return (-1/2 * reductions.sum(y * y, axis=-1) / cov
            - n/2 * (ufuncs.log(2 * np.pi) + ufuncs.log(cov)))
  if cov.ndim < 2 or cov.shape[-2:] != (n, n):
    raise ValueError("multivariate_normal.logpdf got incompatible shapes: cov must be "
                     f"(..., {n}, {n}) for a mean of size {n}, got {cov.shape}.")
  chol = lax_linalg.cholesky(cov)
  # y = L^-1 (x - mean), so |y|^2 is the Mahalanobis distance.
  solve = partial(lax_linalg.triangular_solve, lower=True, transpose_a=True)
  y = vectorize.vectorize(solve, signature="(n,n),(n)->(n)")(chol, x - mean)
  idx = creation.arange(n)
  log_det_half = ufuncs.log(chol[..., idx, idx]).sum(-1)
  return -1/2 * reductions.sum(y * y, axis=-1) - n/2 * ufuncs.log(2 * np.pi) - log_det_half


def pdf(x, mean, cov):
  return lax.exp(logpdf(x, mean, cov))
