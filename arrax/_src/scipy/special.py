"""arrax.scipy.special: special functions with JAX's (and SciPy's) signatures.

Most are thin wrappers over lax primitives after JAX's inexact promotion; the rest are short
lax/jnp programs (ndtri's Cephes rational approximations, log_ndtr's asymptotic series, betaln's
large-argument correction). `xlogy`, `xlog1py`, `logit` and `log_ndtr` carry custom JVPs, as in
JAX, so their derivatives stay finite where the naive program's would not.
"""
from __future__ import annotations

from functools import partial

import numpy as np

from arrax._src import core, dtypes
from arrax._src.custom_derivatives import custom_jvp
from arrax._src.errors import ConcretizationTypeError
from arrax._src.lax import elementwise as lax
from arrax._src.lax import special as lax_special
from arrax._src.nn import functions as _nn
from arrax._src.numpy import creation, lax_numpy, reductions, ufuncs
_const = lax._const   # JAX's lax._const: re-exported for the distributions
from arrax._src.numpy.util import promote_args_inexact as _promote_args_inexact

__all__ = [
    "beta", "betaln", "digamma", "entr", "erf", "erfc", "erfinv", "expit", "factorial", "gamma",
    "gammainc", "gammaincc", "gammaln", "gammasgn", "kl_div", "log_ndtr", "log_softmax", "logit",
    "logsumexp", "multigammaln", "ndtr", "ndtri", "polygamma", "rel_entr", "softmax", "xlog1py",
    "xlogy", "comb", "boxcox", "boxcox1p",
]


def promote_args_inexact(fun_name, *args):
  """NumPy promotion to an inexact dtype, the results as arrays (so operators work on them)."""
  return [creation.asarray(a) for a in _promote_args_inexact(fun_name, *args)]


def _dtype(x):
  return core.get_aval(x).dtype


def _select(conds, vals, default):
  """jnp.select for a short list: the first true condition picks its value."""
  out = default
  for c, v in reversed(list(zip(conds, vals))):
    out = lax_numpy.where(c, v, out)
  return out


def _polyval(coeffs, x):
  """Horner's rule with static coefficients, highest degree first."""
  out = creation.zeros_like(x)
  for c in coeffs:
    out = out * x + c
  return out


# ---- gamma family ---------------------------------------------------------------------------
def gammaln(x):
  """log|Gamma(x)|."""
  x, = promote_args_inexact("gammaln", x)
  return lax.lgamma(x)


def gammasgn(x):
  """The sign of Gamma(x): nan at poles and nan, -1 where Gamma is negative, else 1."""
  x, = promote_args_inexact("gammasgn", x)
  _no_complex("gammasgn", x)
  typ = _dtype(x).type
  floor_x = lax.floor(x)
  neg = x < 0
  return _select([(neg & (x == floor_x)) | ufuncs.isnan(x),
                  (neg & (floor_x % 2 != 0)) | ((x == 0) & ufuncs.signbit(x))],
                 [typ(np.nan), typ(-1.0)], typ(1.0))


def gamma(x):
  """The gamma function (real arguments)."""
  x, = promote_args_inexact("gamma", x)
  _no_complex("gamma", x)
  return gammasgn(x) * lax.exp(lax.lgamma(x))


def _algdiv(a, b):
  """log(Gamma(b) / Gamma(a + b)) for b >= 8, by a Stirling correction series (ACM TOMS 708)."""
  h = a / b
  c = h / (1 + h)
  x2 = c * c
  d = b + (a - 0.5)
  s3 = 1.0 + (c + x2)
  s5 = 1.0 + (c + x2 * s3)
  s7 = 1.0 + (c + x2 * s5)
  s9 = 1.0 + (c + x2 * s7)
  s11 = 1.0 + (c + x2 * s9)
  t = (1.0 / b) ** 2
  w = ((((-0.165322962780713e-02 * s11 * t + 0.837308034031215e-03 * s9) * t
         - 0.595202931351870e-03 * s7) * t + 0.793650666825390e-03 * s5) * t
       - 0.277777777760991e-02 * s3) * t + 0.833333333333333e-01
  w = w * (c / b)
  u = d * lax.log1p(a / b)
  v = a * (lax.log(b) - 1.0)
  return lax_numpy.where(u <= v, (w - v) - u, (w - u) - v)


def betaln(a, b):
  """log|B(a, b)|, accurate when one argument is large."""
  a, b = promote_args_inexact("betaln", a, b)
  a, b = ufuncs.minimum(a, b), ufuncs.maximum(a, b)
  small_b = lax.lgamma(a) + (lax.lgamma(b) - lax.lgamma(a + b))
  large_b = lax.lgamma(a) + _algdiv(a, b)
  return lax_numpy.where(b < 8, small_b, large_b)


def beta(a, b):
  """The beta function B(a, b) (real arguments)."""
  a, b = promote_args_inexact("beta", a, b)
  _no_complex("beta", a)
  sign = gammasgn(a) * gammasgn(b) * gammasgn(a + b)
  return sign * lax.exp(betaln(a, b))


def factorial(n, exact=False):
  """n! = Gamma(n + 1) in floating point, 0 for negative n."""
  if exact:
    raise NotImplementedError("factorial with exact=True: use exact=False (the float result).")
  n, = promote_args_inexact("factorial", n)
  return lax_numpy.where(n < 0, 0, lax.exp(lax.lgamma(n + 1)))


def comb(N, k, *, repetition=False):
  """Binomial coefficient C(N, k) in floating point (0 outside 0 <= k <= N)."""
  N, k = promote_args_inexact("comb", N, k)
  if repetition:
    return lax_numpy.where((k == 0) & (N >= 0), 1.0, comb(N + k - 1, k))
  ok = (k <= N) & (N >= 0) & (k >= 0)
  n_, k_ = lax_numpy.where(ok, N, 0.0), lax_numpy.where(ok, k, 0.0)
  value = lax.exp(gammaln(n_ + 1) - gammaln(k_ + 1) - gammaln(n_ + 1 - k_))
  return lax_numpy.where(ok, value, 0.0)


def digamma(x):
  """The logarithmic derivative of the gamma function."""
  x, = promote_args_inexact("digamma", x)
  return lax.digamma(x)


def polygamma(n, x):
  """The n-th derivative of digamma; `n` must have an integer dtype."""
  n_dtype = np.asarray(n).dtype if not hasattr(n, "dtype") else np.dtype(n.dtype)
  if not dtypes.issubdtype(n_dtype, np.integer):
    raise ValueError(f"Argument `n` to polygamma must be of integer type. Got dtype {n_dtype}.")
  n, x = promote_args_inexact("polygamma", n, x)
  _no_complex("polygamma", x)
  return lax.polygamma(n, x)


def multigammaln(a, d):
  """The log of the multivariate gamma function of dimension `d` (a static int)."""
  d = _static_int(d, "d argument of multigammaln")
  a, d_ = promote_args_inexact("multigammaln", a, d)
  constant = _const(a, 0.25) * d_ * (d_ - _const(a, 1)) * lax.log(_const(a, np.pi))
  b = creation.arange(d, dtype=_dtype(d_)) / _const(a, 2)
  shifted = lax_numpy.expand_dims(a, -1) - lax_numpy.expand_dims(b, tuple(range(lax_numpy.ndim(a))))
  return reductions.sum(gammaln(shifted), axis=-1) + constant


def gammainc(a, x):
  """The regularized lower incomplete gamma function P(a, x)."""
  a, x = promote_args_inexact("gammainc", a, x)
  return lax_special.igamma(a, x)


def gammaincc(a, x):
  """The regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x)."""
  a, x = promote_args_inexact("gammaincc", a, x)
  return lax_special.igammac(a, x)


# ---- error function family ------------------------------------------------------------------
def erf(x):
  x, = promote_args_inexact("erf", x)
  return lax.erf(x)


def erfc(x):
  x, = promote_args_inexact("erfc", x)
  return lax.erfc(x)


def erfinv(x):
  x, = promote_args_inexact("erfinv", x)
  return lax.erf_inv(x)


# ---- logistic ---------------------------------------------------------------------------------
@custom_jvp
def logit(x):
  """log(x / (1 - x)), the inverse of expit."""
  x, = promote_args_inexact("logit", x)
  return lax.log(lax.div(x, lax.sub(_const(x, 1), x)))


logit.defjvps(lambda g, ans, x: lax.div(g, lax.mul(x, lax.sub(_const(x, 1), x))))


def expit(x):
  """The logistic sigmoid 1 / (1 + exp(-x))."""
  x, = promote_args_inexact("expit", x)
  return lax.logistic(x)


# ---- x log y --------------------------------------------------------------------------------
# Both return 0 where x == 0 (even where log y is -inf), but propagate a nan y, as SciPy does.
@custom_jvp
def xlogy(x, y):
  """x * log(y), defined as 0 where x == 0."""
  x, y = promote_args_inexact("xlogy", x, y)
  keep = (x != 0.) | ufuncs.isnan(y)
  return lax_numpy.where(keep, lax.mul(x, lax.log(y)), creation.zeros_like(x))


@xlogy.defjvp
def _xlogy_jvp(primals, tangents):
  (x, y), (x_dot, y_dot) = primals, tangents
  out = xlogy(x, y)
  return out, (x_dot * lax.log(y) + y_dot * x / y).astype(out.dtype)


@custom_jvp
def xlog1py(x, y):
  """x * log1p(y), defined as 0 where x == 0."""
  x, y = promote_args_inexact("xlog1py", x, y)
  keep = (x != 0.) | ufuncs.isnan(y)
  return lax_numpy.where(keep, lax.mul(x, lax.log1p(y)), creation.zeros_like(x))


@xlog1py.defjvp
def _xlog1py_jvp(primals, tangents):
  (x, y), (x_dot, y_dot) = primals, tangents
  out = xlog1py(x, y)
  return out, (x_dot * lax.log1p(y) + y_dot * x / (1 + y)).astype(out.dtype)


@custom_jvp
def _xlogx(x):
  return xlogy(x, x)


@_xlogx.defjvp
def _xlogx_jvp(primals, tangents):
  (x,), (x_dot,) = primals, tangents
  # One derivative for both occurrences of x: log(x) + 1 (xlogy's rule would give it twice).
  return _xlogx(x), x_dot * (lax.log(x) + 1)


def entr(x):
  """Elementwise entropy -x log x (0 at 0, -inf for negative x)."""
  x, = promote_args_inexact("entr", x)
  _no_complex("entr", x)
  return lax.select(lax.lt(x, _const(x, 0)), creation.full_like(x, -np.inf), lax.neg(_xlogx(x)))


def rel_entr(p, q):
  """Elementwise relative entropy p log(p / q) (0 where p == 0 <= q, inf off the domain)."""
  p, q = promote_args_inexact("rel_entr", p, q)
  _no_complex("rel_entr", p)
  zero = _const(p, 0.0)
  both_pos = lax.bitwise_and(lax.gt(p, zero), lax.gt(q, zero))
  p_zero = lax.bitwise_and(lax.eq(p, zero), lax.ge(q, zero))
  safe_p, safe_q = lax_numpy.where(both_pos, p, 1), lax_numpy.where(both_pos, q, 1)
  value = lax.sub(_xlogx(safe_p), xlogy(safe_p, safe_q))
  return lax_numpy.where(both_pos, value, lax_numpy.where(p_zero, zero, np.inf))


def kl_div(p, q):
  """Elementwise Kullback-Leibler divergence p log(p / q) - p + q."""
  p, q = promote_args_inexact("kl_div", p, q)
  _no_complex("kl_div", p)
  return rel_entr(p, q) - p + q


def boxcox(x, lmbda):
  """The Box-Cox transform: (x**lmbda - 1) / lmbda, log(x) where lmbda == 0."""
  x, lmbda = promote_args_inexact("boxcox", x, lmbda)
  return _boxcox(lax.log(x), lmbda)


def boxcox1p(x, lmbda):
  """boxcox(1 + x, lmbda), accurate for small x."""
  x, lmbda = promote_args_inexact("boxcox1p", x, lmbda)
  return _boxcox(lax.log1p(x), lmbda)


def _boxcox(log_x, lmbda):
  is_zero = lmbda == 0
  safe = lax_numpy.where(is_zero, creation.ones_like(lmbda), lmbda)
  return lax_numpy.where(is_zero, log_x, ufuncs.expm1(safe * log_x) / safe)


# ---- logsumexp and softmax --------------------------------------------------------------------
# One implementation, jax.nn's (as in JAX, where both names come from one module).
logsumexp = _nn.logsumexp


def softmax(x, /, *, axis=None):
  """exp(x) / sum(exp(x)) over `axis` (all axes by default, as SciPy)."""
  return _nn.softmax(x, axis=axis)


def log_softmax(x, /, *, axis=None):
  """x - logsumexp(x) over `axis` (all axes by default, as SciPy)."""
  return _nn.log_softmax(x, axis=axis)


# ---- the normal distribution --------------------------------------------------------------------
def _check_float(x):
  dt = _dtype(x)
  if dt not in (np.float32, np.float64):
    raise TypeError(f"x.dtype={dt} is not supported: pass float32 or float64 values.")


def ndtr(x):
  """The standard normal CDF."""
  x = creation.asarray(x)
  _check_float(x)
  return _ndtr(x)


def _ndtr(x):
  # erf near 0 (where 1 - erfc would cancel), erfc in the tails.
  typ = _dtype(x).type
  half_sqrt_2 = typ(0.5) * np.sqrt(2., dtype=typ)
  w = x * half_sqrt_2
  z = lax.abs(w)
  y = lax.select(lax.lt(z, half_sqrt_2), typ(1.) + lax.erf(w),
                 lax.select(lax.gt(w, typ(0.)), typ(2.) - lax.erfc(z), lax.erfc(z)))
  return typ(0.5) * y


# Cephes ndtri rational approximations: P0/Q0 for the centre (p > exp(-2)), P1/Q1 and P2/Q2 for
# the tails, the latter where sqrt(-2 log p) >= 8.
_NDTRI_P0 = [-5.99633501014107895267E1, 9.80010754185999661536E1, -5.66762857469070293439E1,
             1.39312609387279679503E1, -1.23916583867381258016E0]
_NDTRI_Q0 = [1.0, 1.95448858338141759834E0, 4.67627912898881538453E0, 8.63602421390890590575E1,
             -2.25462687854119370527E2, 2.00260212380060660359E2, -8.20372256168333339912E1,
             1.59056225126211695515E1, -1.18331621121330003142E0]
_NDTRI_P1 = [4.05544892305962419923E0, 3.15251094599893866154E1, 5.71628192246421288162E1,
             4.40805073893200834700E1, 1.46849561928858024014E1, 2.18663306850790267539E0,
             -1.40256079171354495875E-1, -3.50424626827848203418E-2, -8.57456785154685413611E-4]
_NDTRI_Q1 = [1.0, 1.57799883256466749731E1, 4.53907635128879210584E1, 4.13172038254672030440E1,
             1.50425385692907503408E1, 2.50464946208309415979E0, -1.42182922854787788574E-1,
             -3.80806407691578277194E-2, -9.33259480895457427372E-4]
_NDTRI_P2 = [3.23774891776946035970E0, 6.91522889068984211695E0, 3.93881025292474443415E0,
             1.33303460815807542389E0, 2.01485389549179081538E-1, 1.23716634817820021358E-2,
             3.01581553508235416007E-4, 2.65806974686737550832E-6, 6.23974539184983293730E-9]
_NDTRI_Q2 = [1.0, 6.02427039364742014255E0, 3.67983563856160859403E0, 1.37702099489081330271E0,
             2.16236993594496635890E-1, 1.34204006088543189037E-2, 3.28014464682127739104E-4,
             2.89247864745380683936E-6, 6.79019408009981274425E-9]


def ndtri(p):
  """The inverse of ndtr: the standard normal quantile function."""
  p = creation.asarray(p)
  _check_float(p)
  return _ndtri(p)


def _ratio(pc, qc, x, typ):
  return (_polyval(np.array(pc, typ), x) / _polyval(np.array(qc, typ), x))


def _ndtri(p):
  typ = _dtype(p).type
  # Work with the smaller of p and 1 - p; 0 is replaced by a harmless value (its result is
  # overwritten by -inf below) so no nan reaches the gradient.
  mcp = lax_numpy.where(p > typ(-np.expm1(-2.)), typ(1.) - p, p)
  mcp = lax_numpy.where(mcp == typ(0.), creation.full_like(mcp, typ(0.5)), mcp)
  w = mcp - typ(0.5)
  ww = lax.square(w)
  x_centre = (w + w * ww * _ratio(_NDTRI_P0, _NDTRI_Q0, ww, typ)) * -typ(np.sqrt(2. * np.pi))
  z = lax.sqrt(typ(-2.) * lax.log(mcp))
  first = z - lax.log(z) / z
  x_far = first - _ratio(_NDTRI_P2, _NDTRI_Q2, 1 / z, typ) / z
  x_tail = first - _ratio(_NDTRI_P1, _NDTRI_Q1, 1 / z, typ) / z
  x = lax_numpy.where(mcp > typ(np.exp(-2.)), x_centre,
                      lax_numpy.where(z >= typ(8.0), x_far, x_tail))
  x = lax_numpy.where(p > typ(1. - np.exp(-2.)), x, -x)
  inf = creation.full_like(p, typ(np.inf))
  return lax_numpy.where(p == typ(0.0), -inf, lax_numpy.where(p == typ(1.0), inf, x))


# log_ndtr switches to the asymptotic series below `lower` and to -ndtr(-x) above `upper`.
_LOG_NDTR_BOUNDS = {np.dtype(np.float32): (-10.0, 5.0), np.dtype(np.float64): (-20.0, 8.0)}


@partial(custom_jvp, nondiff_argnums=(1,))
def log_ndtr(x, series_order=3):
  """log of the standard normal CDF, accurate far into both tails."""
  if not isinstance(series_order, int):
    raise TypeError("series_order must be a Python integer.")
  if series_order < 0:
    raise ValueError("series_order must be non-negative.")
  if series_order > 30:
    raise ValueError("series_order must be <= 30.")
  x = creation.asarray(x)
  dt = _dtype(x)
  if dt not in _LOG_NDTR_BOUNDS:
    raise TypeError(f"x.dtype={dt} is not supported: pass float32 or float64 values.")
  lo, hi = (np.array(v, dt) for v in _LOG_NDTR_BOUNDS[dt])
  above = lax.gt(x, hi)
  # Clamped arguments keep the unselected branches finite (a select's gradient would
  # otherwise multiply a zero by an inf).
  ndtr_val = _ndtr(lax_numpy.where(above, -x, lax.max(x, lo)))
  return lax_numpy.where(above, -ndtr_val,
                         lax_numpy.where(lax.gt(x, lo), lax.log(ndtr_val),
                                         _log_ndtr_lower(lax.min(x, lo), series_order)))


@log_ndtr.defjvp
def _log_ndtr_jvp(series_order, primals, tangents):
  (x,), (t,) = primals, tangents
  out = log_ndtr(x, series_order=series_order)
  return out, lax.mul(t, lax.exp(lax.sub(_norm_logpdf(x), out)))


def _log_ndtr_lower(x, series_order):
  typ = _dtype(x).type
  x2 = lax.square(x)
  log_scale = -typ(0.5) * x2 - lax.log(-x) - typ(0.5 * np.log(2. * np.pi))
  return log_scale + lax.log(_log_ndtr_series(x, series_order))


def _log_ndtr_series(x, series_order):
  """1 + sum_n (-1)^n (2n-1)!! / x^(2n): the asymptotic series of the Mills ratio."""
  typ = _dtype(x).type
  if series_order <= 0:
    return np.array(1, typ)
  x2 = lax.square(x)
  even, odd = creation.zeros_like(x), creation.zeros_like(x)
  x2n = x2
  for n in range(1, series_order + 1):
    term = np.array(np.prod(np.arange(2 * n - 1, 1, -2)), typ) / x2n
    if n % 2:
      odd = odd + term
    else:
      even = even + term
    x2n = x2n * x2
  return typ(1.) + even - odd


def _norm_logpdf(x):
  return lax.sub(lax.mul(_const(x, -0.5), lax.square(x)),
                 _const(x, np.log(np.sqrt(2 * np.pi))))


# ---- helpers ------------------------------------------------------------------------------------
def _no_complex(name, x):
  if dtypes.issubdtype(_dtype(x), np.complexfloating):
    raise ValueError(f"{name} does not support complex-valued inputs.")


def _static_int(x, what):
  if isinstance(x, core.Tracer):
    raise ConcretizationTypeError(x, f"The problem arose with the {what}.\n")
  return int(x)
