"""Hypergeometric functions and spherical harmonics of jax.scipy.special: hyp1f1, hyp2f1,
sph_harm_y.

hyp1f1 and hyp2f1 follow Pearson, Olver & Porter (2014), as JAX: per element (under
`vectorize`), 1F1 is its Taylor series for |x| < 100 and its large-x asymptotic series
otherwise; 2F1 is its Taylor series (or the terminating polynomial when a or b is a
non-positive integer), with Euler's transformation for c - a - b <= -1 and the digamma
(AMS 15.3.10-12) expansion near x = 1 when c - a - b is an integer. The JVPs are JAX's: series
for the parameter derivatives and the shifted function for d/dx. sph_harm_y evaluates the
normalized associated Legendre functions by their three-term recurrences up to `n_max`.
"""
from __future__ import annotations

import numpy as np

from arrax._src import core, dtypes
from arrax._src.custom_derivatives import custom_jvp
from arrax._src.jit import jit
from arrax._src.lax import elementwise as lax
from arrax._src.lax.control_flow import conditionals
from arrax._src.lax.control_flow.loops import fori_loop
from arrax._src.lax.control_flow.while_loop import while_loop
from arrax._src.numpy import assembly, creation, lax_numpy, reductions, ufuncs
from arrax._src.numpy.vectorize import vectorize
from arrax._src.scipy.special import digamma, gamma, promote_args_inexact

__all__ = ["hyp1f1", "hyp2f1", "sph_harm_y"]

_MAX_TERMS = 250


def _k(x, v):
  return lax._const(x, v)


def _sum_series(first, update, x):
  """sum of the terms t_k (k = 1, 2, ...: t_1 = `first`, t_(k+1) = update(t_k, k)) added to
  1, until 250 terms or a term relatively below eps (a weakly typed start, as JAX's)."""
  eps = dtypes.finfo(x.dtype).eps

  def body(c):
    total, k, term = c
    return total + term, k + 1, update(term, k)

  return while_loop(
      lambda c: (c[1] < _MAX_TERMS) & (ufuncs.abs(c[2]) / ufuncs.abs(c[0]) > eps), body,
      (1, 1, first))[0]


# ---- 1F1 -----------------------------------------------------------------------------------------
def _hyp1f1_taylor(a, b, x):
  return _sum_series(a / b * x, lambda t, k: t * ((a + k) / (b + k) * x / (k + 1)), x)


def _hyp1f1_large_x(a, b, x):
  s = _sum_series((b - a) * (1 - a) / x,
                  lambda t, k: t * ((b - a + k) * (1 - a + k) / (k + 1) / x), x)
  return gamma(b) / gamma(a) * ufuncs.exp(x) * x ** (a - b) * s


def _param_series(first, ratio, weight, x):
  """sum_k t_k w_k with t_1 = first, t_(k+1) = t_k ratio(k): the parameter derivatives."""
  eps = dtypes.finfo(x.dtype).eps

  def body(c):
    total, k, term = c
    return total + term * weight(k), k + 1, term * ratio(k)

  return while_loop(
      lambda c: (c[1] < _MAX_TERMS) & (ufuncs.abs(c[2]) / ufuncs.abs(c[0]) > eps), body,
      (0, 1, first))[0]


@jit
@vectorize
def _hyp1f1_da(a, b, x):
  return _param_series(a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1),
                       lambda k: digamma(a + k) - digamma(a), x)


@jit
@vectorize
def _hyp1f1_db(a, b, x):
  return _param_series(a / b * x, lambda k: (a + k) / (b + k) * x / (k + 1),
                       lambda k: digamma(b) - digamma(b + k), x)


@jit
def _hyp1f1_dx(a, b, x):
  return a / b * hyp1f1(a + 1, b + 1, x)


@custom_jvp
@jit
@vectorize
def hyp1f1(a, b, x):
  """The confluent hypergeometric function 1F1(a; b; x) (real arguments; 1 at a = b = 0)."""
  a, b, x = promote_args_inexact("hyp1f1", a, b, x)
  if dtypes.issubdtype(x.dtype, np.complexfloating):
    raise ValueError("hyp1f1 does not support complex-valued inputs.")
  value = conditionals.cond(ufuncs.abs(x) < 100, _hyp1f1_taylor, _hyp1f1_large_x, a, b, x)
  which = ((a == 0) * 1 + ((a == b) & (a != 0)) * 2 + ((b == 0) & (a != 0)) * 3)
  return lax.select_n(which, value, _k(x, 1), ufuncs.exp(x), _k(x, np.inf))


hyp1f1.defjvps(lambda g, ans, a, b, x: _hyp1f1_da(a, b, x) * g,
               lambda g, ans, a, b, x: _hyp1f1_db(a, b, x) * g,
               lambda g, ans, a, b, x: _hyp1f1_dx(a, b, x) * g)


# ---- 2F1 -----------------------------------------------------------------------------------------
def _hyp2f1_polynomial(a, b, c, x):
  """The terminating series when a (or b) is a non-positive integer: the one of larger
  magnitude that still terminates before a non-positive integer c is the length."""
  eps = dtypes.finfo(x.dtype).eps * 50
  c_blocks = (ufuncs.remainder(c, 1) == 0) & (c <= 0) & (c > b)
  swap = (b < a) & (ufuncs.abs(b - ufuncs.round(b)) < eps) & ~c_blocks
  a, b = lax_numpy.where(swap, b, a), lax_numpy.where(swap, a, b)
  a = ufuncs.abs(a)
  one = _k(x, 1)

  def body(carry):
    i, total, term = carry
    term = term * (-(a - i + 1) / (c + i - 1) * (b + i - 1) / i * x)
    return i + one, total + term, term

  return while_loop(lambda carry: carry[0] < a + 1, body, (_k(a, 1), one, one))[1]


def _hyp2f1_taylor(a, b, c, x):
  eps = dtypes.finfo(x.dtype).eps

  def body(carry):
    total, k, term = carry
    return total + term, k + 1, term * ((a + k - 1) * (b + k - 1) / (c + k - 1) / k * x)

  return while_loop(
      lambda carry: (carry[1] < _MAX_TERMS) & (ufuncs.abs(carry[2]) > eps * ufuncs.abs(carry[0])),
      body, (_k(x, 0), _k(x, 1), _k(x, 1)))[0]


def _hyp2f1_near_one(a, b, c, x):
  """2F1 for x near 1 with c - a - b = d near an integer (AMS 15.3.10-12): a psi series in
  1 - x plus, for d != 0, a finite sum of |d| terms."""
  eps = dtypes.finfo(x.dtype).eps
  d = c - a - b
  s = 1 - x
  rd = ufuncs.round(d)
  up = rd >= 0
  zero = _k(d, 0)
  e = lax_numpy.where(up, d, -d)
  d1 = lax_numpy.where(up, d, zero)
  d2 = lax_numpy.where(up, zero, d)
  ard = lax_numpy.where(up, rd, -rd).astype("int32")
  log_s = ufuncs.log(s)
  y = digamma(1.0) + digamma(1.0 + e) - digamma(a + d1) - digamma(b + d1) - log_s
  y = y / gamma(e + 1.0)
  p = (a + d1) * (b + d1) * s / gamma(e + 2.0)

  def body(carry):
    p, q, t, y = carry
    r = (digamma(1.0 + t) + digamma(1.0 + t + e) - digamma(a + t + d1) - digamma(b + t + d1)
         - log_s)
    q = p * r
    y = y + q
    p = p * (s * (a + t + d1) / (t + 1.0))
    p = p * ((b + t + d1) / (t + 1.0 + e))
    return p, q, t + 1.0, y

  _, _, _, y = while_loop(
      lambda carry: (carry[2] < _MAX_TERMS) & (ufuncs.abs(carry[1]) >= eps * ufuncs.abs(carry[3])),
      body, (p, y, _k(x, 1), y))

  def with_finite_sum(y):
    def term(i, carry):
      p, t, y1 = carry
      p = p * (s * (a + t + d2) * (b + t + d2) / (1.0 - e + t))
      t = t + 1.0
      p = p / t
      return p, t, y1 + p

    _, _, y1 = fori_loop(1, ard, term, (_k(x, 1), _k(x, 0), _k(x, 1)))
    gc = gamma(c)
    y1 = y1 * (gamma(e) * gc / (gamma(a + d1) * gamma(b + d1)))
    y = y * (gc / (gamma(a + d2) * gamma(b + d2)))
    y = lax_numpy.where((ard & 1) != 0, -y, y)
    q = s ** rd
    return lax_numpy.where(rd > 0, y * q + y1, y + y1 * q)

  return lax_numpy.where(rd == 0, y * gamma(c) / (gamma(a) * gamma(b)), with_finite_sum(y))


def _hyp2f1_series(a, b, c, x):
  """Taylor series, terminating polynomial, or the expansion near 1."""
  eps = dtypes.finfo(x.dtype).eps * 50
  d = c - a - b

  def nonpos_int(v):
    return (v <= 0) & (ufuncs.abs(v - ufuncs.round(v)) < eps)

  terminates = nonpos_int(a) | nonpos_int(b)
  d_int = ufuncs.abs(d - ufuncs.round(d)) < eps
  which = lax_numpy.where((x > 0.9) & ~terminates, lax_numpy.where(d_int, 1, 0),
                          lax_numpy.where(terminates, 2, 0))
  return lax.select_n(which, _hyp2f1_taylor(a, b, c, x), _hyp2f1_near_one(a, b, c, x),
                      _hyp2f1_polynomial(a, b, c, x))


def _hyp2f1_param_series(a, b, c, x, weight):
  return _param_series(a * b / c * x, lambda k: (a + k) * (b + k) / (c + k) / (k + 1) * x,
                       weight, x)


@jit
@vectorize
def _hyp2f1_da(a, b, c, x):
  return _hyp2f1_param_series(a, b, c, x, lambda k: digamma(a + k) - digamma(a))


@jit
@vectorize
def _hyp2f1_db(a, b, c, x):
  return _hyp2f1_param_series(a, b, c, x, lambda k: digamma(b + k) - digamma(b))


@jit
@vectorize
def _hyp2f1_dc(a, b, c, x):
  return _hyp2f1_param_series(a, b, c, x, lambda k: digamma(c) - digamma(c + k))


@jit
def _hyp2f1_dx(a, b, c, x):
  return a * b / c * hyp2f1(a + 1, b + 1, c + 1, x)


@custom_jvp
@jit
@vectorize
def hyp2f1(a, b, c, x):
  """The Gauss hypergeometric function 2F1(a, b; c; x) (real arguments, x <= 1)."""
  a, b, c, x = promote_args_inexact("hyp2f1", a, b, c, x)
  eps = dtypes.finfo(x.dtype).eps * 50
  d = c - a - b
  s = 1 - x
  ca, cb = c - a, c - b
  d_off_int = ufuncs.abs(d - ufuncs.round(d)) >= eps
  # the first case that applies, in order
  cases = [
      ((x == 0) | (((a == 0) | (b == 0)) & (c != 0)), 0),            # 1
      ((c == 0) | ((c < 0) & (ufuncs.remainder(c, 1) == 0)), 1),     # pole: inf
      ((d <= -1) & ~(d_off_int & (s < 0)), 2),                       # Euler's transformation
      ((d <= 0) & (x == 1), 1),
      ((x < 1) & (b == c), 3),                                       # (1 - x)^-a
      ((x < 1) & (a == c), 4),                                       # (1 - x)^-b
      (x > 1, 1),
      (x == 1, 5),                                                   # Gauss' theorem
  ]
  which = 6
  for cond, i in reversed(cases):
    which = lax_numpy.where(cond, i, which)
  return lax.select_n(which, _k(x, 1), _k(x, np.inf), s ** d * _hyp2f1_series(ca, cb, c, x),
                      s ** (-a), s ** (-b), gamma(c) * gamma(d) / (gamma(ca) * gamma(cb)),
                      _hyp2f1_series(a, b, c, x))


hyp2f1.defjvps(lambda g, ans, a, b, c, x: _hyp2f1_da(a, b, c, x) * g,
               lambda g, ans, a, b, c, x: _hyp2f1_db(a, b, c, x) * g,
               lambda g, ans, a, b, c, x: _hyp2f1_dc(a, b, c, x) * g,
               lambda g, ans, a, b, c, x: _hyp2f1_dx(a, b, c, x) * g)


# ---- spherical harmonics -------------------------------------------------------------------------
def _normalized_legendre(l_max, x):
  """P[m, l, i]: the orthonormalized associated Legendre functions of order m and degree l at
  x[i], for 0 <= m, l <= l_max (zero where m > l)."""
  dt = x.dtype
  size = l_max + 1
  p = creation.zeros((size, size, x.shape[0]), dtype=dt)
  start = 0.5 / ufuncs.sqrt(np.pi)
  a_idx = creation.arange(1, size, dtype=dt)
  b_idx = creation.arange(l_max, dtype=dt)
  f_a = reductions.cumprod(-1 * ufuncs.sqrt(1.0 + 0.5 / a_idx))
  f_b = ufuncs.sqrt(2.0 * b_idx + 3.0)
  p = p.at[0, 0].set(start)
  # P[l, l] from the sine powers, then P[l, l + 1] from P[l, l]
  sines = reductions.cumprod(lax_numpy.broadcast_to(ufuncs.sqrt(1.0 - x * x),
                                                    (l_max, x.shape[0])), axis=0)
  diag = np.arange(size)
  p = p.at[diag[1:], diag[1:]].set(start * (f_a[:, None] * sines))
  p = p.at[diag[:-1], diag[:-1] + 1].set((f_b[:, None] * x[None, :]) * p[diag[:-1], diag[:-1]])
  # P[m, l] = d0(m, l) x P[m, l - 1] - d1(m, l) P[m, l - 2], one diagonal band per step
  m, l = np.meshgrid(np.arange(size), np.arange(size), indexing="ij")
  m, l = m.astype(dt), l.astype(dt)
  with np.errstate(divide="ignore", invalid="ignore"):
    d0 = np.sqrt((4.0 * l * l - 1.0) / (l * l - m * m))
    d1 = np.sqrt(((2.0 * l + 1.0) * ((l - 1.0) ** 2 - m * m)) / ((2.0 * l - 3.0) * (l * l - m * m)))
  d0 = np.where(l - m >= 1, d0, 0).astype(dt)
  d1 = np.where(l - m >= 2, d1, 0).astype(dt)
  band = (np.arange(size)[:, None, None] + np.arange(size)[None, :, None]
          == np.arange(size)[None, None, :])
  d0_bands = creation.asarray(d0[None] * band, dtype=dt)
  d1_bands = creation.asarray(d1[None] * band, dtype=dt)

  def step(i, p):
    up1 = assembly.roll(p, 1, axis=1) * x
    up2 = assembly.roll(p, 2, axis=1)
    return p + (d0_bands[i][:, :, None] * up1 - d1_bands[i][:, :, None] * up2)

  if l_max > 1:
    p = fori_loop(2, l_max + 1, step, p)
  return p


@jit(static_argnums=(4,))
def _sph_harm(n, m, theta, phi, n_max):
  legendre = _normalized_legendre(n_max, ufuncs.cos(theta))
  am = ufuncs.abs(m)
  values = legendre.at[am, n, creation.arange(len(n))].get(mode="clip")
  angle = am * phi
  harmonics = lax.complex(values * ufuncs.cos(angle), values * ufuncs.sin(angle))
  return lax_numpy.where(m < 0, (-1.0) ** am * ufuncs.conjugate(harmonics), harmonics)


def sph_harm_y(n, m, theta, phi, diff_n=None, n_max=None):
  """Spherical harmonics Y_n^m(theta, phi) of degree n and order m (|m| <= n) at colatitude
  theta and longitude phi; `n_max` (static) bounds n, which is clipped to it."""
  if diff_n is not None:
    raise NotImplementedError(
        "The 'diff_n' argument to jax.scipy.special.sph_harm_y is not supported.")
  if lax_numpy.isscalar(theta):
    theta = creation.array([theta])
  if n_max is None:
    n_max = np.max(n)
  n_max = core.concrete_or_error(
      int, n_max, "The `n_max` argument of `jnp.scipy.special.sph_harm` must be statically "
      "specified to use `sph_harm` within JAX transformations.")
  return _sph_harm(n, m, theta, phi, n_max)
