"""gaussian_kde: a Gaussian kernel density estimate (a pytree, usable under jit and vmap)."""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from arrax._src import dtypes, random
from arrax._src.batching import vmap
from arrax._src.jit import jit
from arrax._src.numpy import (creation, index_tricks, lax_numpy, reductions, statistics,
                              ufuncs)
from arrax._src.numpy import linalg as jnp_linalg
from arrax._src.numpy.util import check_arraylike, promote_dtypes_inexact
from arrax._src.scipy import linalg, special
from arrax._src.tree_util import register_pytree_node_class


def _dtype(x):
  return creation.asarray(x).dtype


@register_pytree_node_class
@dataclass(frozen=True, init=False, slots=True)
class gaussian_kde:  # noqa: N801
  """A kernel density estimate from `dataset` [d, n] (or [n] for d = 1), optionally weighted;
  the bandwidth factor is Scott's rule (default), Silverman's, a scalar or a callable."""
  neff: Any
  dataset: Any
  weights: Any
  covariance: Any
  inv_cov: Any

  def __init__(self, dataset, bw_method=None, weights=None):
    check_arraylike("gaussian_kde", dataset)
    dataset = lax_numpy.atleast_2d(dataset)
    if dtypes.issubdtype(_dtype(dataset), np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex data")
    if not dataset.size > 1:
      raise ValueError("`dataset` input should have multiple elements.")
    d, n = dataset.shape
    if weights is not None:
      check_arraylike("gaussian_kde", weights)
      dataset, weights = promote_dtypes_inexact(dataset, weights)
      weights = lax_numpy.atleast_1d(weights)
      weights = weights / reductions.sum(weights)
      if weights.ndim != 1:
        raise ValueError("`weights` input should be one-dimensional.")
      if len(weights) != n:
        raise ValueError("`weights` input should be of length n")
    else:
      dataset, = promote_dtypes_inexact(dataset)
      weights = creation.full(n, 1.0 / n, dtype=dataset.dtype)
    self._setattr("dataset", dataset)
    self._setattr("weights", weights)
    neff = self._setattr("neff", 1 / reductions.sum(weights ** 2))
    bw_method = "scott" if bw_method is None else bw_method
    if bw_method == "scott":
      factor = ufuncs.power(neff, -1. / (d + 4))
    elif bw_method == "silverman":
      factor = ufuncs.power(neff * (d + 2) / 4.0, -1. / (d + 4))
    elif lax_numpy.isscalar(bw_method) and not isinstance(bw_method, str):
      factor = bw_method
    elif callable(bw_method):
      factor = bw_method(self)
    else:
      raise ValueError("`bw_method` should be 'scott', 'silverman', a scalar, or a callable.")
    data_cov = lax_numpy.atleast_2d(statistics.cov(dataset, rowvar=1, bias=False,
                                                   aweights=weights))
    self._setattr("covariance", data_cov * factor ** 2)
    self._setattr("inv_cov", jnp_linalg.inv(data_cov) / factor ** 2)

  def _setattr(self, name, value):
    object.__setattr__(self, name, value)
    return value

  def tree_flatten(self):
    return (self.neff, self.dataset, self.weights, self.covariance, self.inv_cov), None

  @classmethod
  def tree_unflatten(cls, aux_data, children):
    del aux_data
    kde = cls.__new__(cls)
    for name, value in zip(("neff", "dataset", "weights", "covariance", "inv_cov"), children):
      kde._setattr(name, value)
    return kde

  @property
  def d(self):
    return self.dataset.shape[0]

  @property
  def n(self):
    return self.dataset.shape[1]

  def evaluate(self, points):
    """The density at points [d, m]."""
    check_arraylike("evaluate", points)
    points = self._reshape_points(points)
    return _kernel_sum(False, self.dataset.T, self.weights[:, None], points.T,
                       self.inv_cov)[:, 0]

  def __call__(self, points):
    return self.evaluate(points)

  def pdf(self, x):
    return self.evaluate(x)

  def logpdf(self, x):
    """The log density at points [d, m] (by logsumexp over the kernels)."""
    check_arraylike("logpdf", x)
    x = self._reshape_points(x)
    return _kernel_sum(True, self.dataset.T, self.weights[:, None], x.T, self.inv_cov)[:, 0]

  def integrate_gaussian(self, mean, cov):
    """The integral of the density times a Gaussian N(mean, cov)."""
    mean = lax_numpy.atleast_1d(lax_numpy.squeeze(mean))
    cov = lax_numpy.atleast_2d(cov)
    if mean.shape != (self.d,):
      raise ValueError(f"mean does not have dimension {self.d}")
    if cov.shape != (self.d, self.d):
      raise ValueError(f"covariance does not have dimension {self.d}")
    chol, norm = _gaussian_norm(self.covariance + cov)
    return _convolve(chol, norm, self.dataset, self.weights, mean)

  @jit
  def integrate_box_1d(self, low, high):
    """The probability mass of a 1-D density between low and high."""
    if self.d != 1:
      raise ValueError("integrate_box_1d() only handles 1D pdfs")
    if np.ndim(low) != 0 or np.ndim(high) != 0:
      raise ValueError("the limits of integration in integrate_box_1d must be scalars")
    sigma = lax_numpy.squeeze(ufuncs.sqrt(self.covariance))
    low = lax_numpy.squeeze((low - self.dataset) / sigma)
    high = lax_numpy.squeeze((high - self.dataset) / sigma)
    return reductions.sum(self.weights * (special.ndtr(high) - special.ndtr(low)))

  def integrate_kde(self, other):
    """The integral of the product of this density and another KDE's."""
    if other.d != self.d:
      raise ValueError("KDEs are not the same dimensionality")
    chol, norm = _gaussian_norm(self.covariance + other.covariance)
    small, large = (self, other) if self.n < other.n else (other, self)
    result = vmap(partial(_convolve, chol, norm, large.dataset, large.weights),
                  in_axes=1)(small.dataset)
    return reductions.sum(result * small.weights)

  @jit(static_argnames=("shape",))
  def resample(self, key, shape=()):
    """Random draws [d, *shape] from the density."""
    ind_key, eps_key = random.split(key)
    ind = random.choice(ind_key, self.n, shape=shape, p=self.weights)
    eps = random.multivariate_normal(eps_key, creation.zeros(self.d, self.covariance.dtype),
                                     self.covariance, shape=shape, dtype=self.dataset.dtype).T
    return self.dataset[:, ind] + eps

  def integrate_box(self, low_bounds, high_bounds, maxpts=None):
    del low_bounds, high_bounds, maxpts
    raise NotImplementedError("only 1D box integrations are supported; use `integrate_box_1d`")

  def set_bandwidth(self, bw_method=None):
    del bw_method
    raise NotImplementedError("dynamically changing the bandwidth method is not supported")

  def _reshape_points(self, points):
    if dtypes.issubdtype(_dtype(points), np.complexfloating):
      raise NotImplementedError("gaussian_kde does not support complex coordinates")
    points = lax_numpy.atleast_2d(points)
    d, m = points.shape
    if d != self.d:
      if d == 1 and m == self.d:
        return lax_numpy.reshape(points, (self.d, 1))
      raise ValueError(f"points have dimension {d}, dataset has dimension {self.d}")
    return points


def _gaussian_norm(cov):
  """(cho_factor(cov), 1 / sqrt(det(2 pi cov))): the Gaussian of covariance cov's factors."""
  chol = linalg.cho_factor(cov)
  d = cov.shape[0]
  return chol, 1.0 / (ufuncs.sqrt(2 * np.pi) ** d * reductions.prod(index_tricks.diag(chol[0])))


def _convolve(chol, norm, target, weights, mean):
  diff = target - mean[:, None]
  alpha = linalg.cho_solve(chol, diff)
  return norm * reductions.sum(ufuncs.exp(-0.5 * reductions.sum(diff * alpha, axis=0))
                               * weights)


@jit(static_argnums=0)
def _kernel_sum(in_log, points, values, xi, precision):
  """sum_j values_j N(xi_i; points_j, precision^-1) for each row xi_i (log-sum-exp in_log)."""
  points, values, xi, precision = promote_dtypes_inexact(points, values, xi, precision)
  d = points.shape[1]
  if xi.shape[1] != d:
    raise ValueError("points and xi must have same trailing dim")
  if precision.shape != (d, d):
    raise ValueError("precision matrix must match data dims")
  whitening = linalg.cholesky(precision, lower=True)
  points = lax_numpy.dot(points, whitening)
  xi = lax_numpy.dot(xi, whitening)
  log_norm = (reductions.sum(ufuncs.log(index_tricks.diag(whitening)))
              - 0.5 * d * ufuncs.log(2 * np.pi))

  def kernel(x_test, x_train, y_train):
    arg = log_norm - 0.5 * reductions.sum(ufuncs.square(x_train - x_test))
    return ufuncs.log(y_train) + arg if in_log else y_train * ufuncs.exp(arg)

  reduce = special.logsumexp if in_log else reductions.sum
  return vmap(lambda x: reduce(vmap(kernel, in_axes=(None, 0, 0))(x, points, values),
                               axis=0))(xi)
