"""The regularized incomplete gamma functions and the implicit gradient of gamma samples.

`igamma`, `igammac`, `igamma_grad_a` and `random_gamma_grad` are elementwise primitives over
float operands of one dtype. Each lowers from a lax-level program, as XLA's client library
computes them: P(a, x) by its power series where x < a (or x < 1), Q(a, x) by its continued
fraction elsewhere, each evaluated in a while loop in which every element stops updating once
its own terms no longer matter. The derivative with respect to `a` is carried through the same
recurrences. float16 and bfloat16 are computed in float32.

`random_gamma_grad(a, x)` is dx/da for a sample x of Gamma(a, 1) held at a fixed quantile
(implicit reparameterization): -(dP/da) / (dP/dx).
"""
from __future__ import annotations

import enum

import numpy as np

from jaxlib.mlir.dialects import chlo

from arrax._src import ad, batching, core, dtypes
from arrax._src.lax import elementwise as ew
from arrax._src.lax import elementwise as lax, creation, reductions, shape_ops, utils
from arrax._src.lax.control_flow import common, while_loop
from arrax._src.lax.utils import asarray_operand
from arrax._src.lax.utils import FLOAT

__all__ = ["bessel_i0e", "bessel_i0e_p", "bessel_i1e", "bessel_i1e_p", "betainc", "igamma",
           "igamma_grad_a", "igamma_grad_a_p", "igamma_p", "igammac", "igammac_p",
           "random_gamma_grad", "random_gamma_grad_p", "regularized_incomplete_beta_p", "zeta",
           "zeta_p"]


class _Mode(enum.Enum):
  VALUE = "value"            # the function itself
  GRAD_A = "grad_a"          # dP/da
  SAMPLE_GRAD = "sample"     # dx/da at fixed P (the gamma sample's reparameterization gradient)


# ---- small helpers (lax operations only) --------------------------------------------------
def _full(x, value):
  """`value` broadcast to the shape and dtype of `x`."""
  aval = core.get_aval(x)
  return shape_ops.broadcast_in_dim(np.array(value, aval.dtype), aval.shape, ())


def _scalar(x, value):
  return np.array(value, core.get_aval(x).dtype)


def _any(pred):
  ndim = core.get_aval(pred).ndim
  return reductions.reduce_or(pred, tuple(range(ndim))) if ndim else pred


def _or(*preds):
  out = preds[0]
  for p in preds[1:]:
    out = lax.bitwise_or(out, p)
  return out


def _isnan(x):
  return lax.ne(x, x)


def _log_prefactor(a, x):
  """(log of x**a e**-x / Gamma(a), whether it underflows the dtype) for P and Q."""
  log_ax = a * lax.log(x) - x - lax.lgamma(a)
  floor = -np.log(dtypes.finfo(core.get_aval(a).dtype).max)
  return log_ax, lax.lt(log_ax, _scalar(a, floor))


# ---- the two expansions ---------------------------------------------------------------------
# Both loops stop when no element is live; an element stops being live once its last step no
# longer changed the result (or, for the derivative modes, the derivative) by more than eps,
# and from then on keeps its state. Derivative state is carried only when it is asked for.
def _keep(live, new, old):
  return [lax.select(live, n, o) for n, o in zip(new, old)]


def _series(a, x, ax, active, mode):
  """P(a, x) = ax / a * sum_n x**n / ((a+1)...(a+n)), or its a-derivative (see `_Mode`)."""
  eps = _scalar(a, dtypes.finfo(core.get_aval(a).dtype).eps)
  track_da = mode is not _Mode.VALUE

  def body(state):
    live, n, term, total, d = state
    n = n + 1
    ratio = x / n
    if track_da:
      dterm, dtotal = d
      dterm = dterm * ratio - term * x / (n * n)   # d/da of the next term
      d = (dterm, dtotal + dterm)
    term = term * ratio
    total = total + term
    going = lax.gt(lax.abs(d[0] / d[1]) if track_da else term / total, eps)
    new = _keep(live, (n, term, total, *d), state[1:4] + tuple(state[4]))
    return (lax.bitwise_and(live, going), *new[:3], tuple(new[3:]))

  zero, one = _full(a, 0), _full(a, 1)
  init = (active, a, one, one, (zero, zero) if track_da else ())
  _, _, _, total, d = while_loop(lambda s: _any(s[0]), body, init)
  if mode is _Mode.VALUE:
    return total * ax / a
  dtotal = d[1]
  dlog_ax = lax.log(x) - lax.digamma(a + _scalar(a, 1))   # d/da log(ax / a)
  if mode is _Mode.GRAD_A:
    return ax * (total * dlog_ax + dtotal) / a
  return -(dtotal + total * dlog_ax) * x / a


def _continued_fraction(a, x, ax, active, mode):
  """Q(a, x) = ax * (continued fraction), or its a-derivative (see `_Mode`; the signs are
  those of Q's derivatives, the caller negates). The convergents p_k / q_k (and their
  a-derivatives) are scaled down by eps when they grow large; at most 2000 steps are taken."""
  dt = core.get_aval(a).dtype
  eps = _scalar(a, dtypes.finfo(dt).eps)
  huge = _scalar(a, 1 / dtypes.finfo(dt).eps)
  track_da = mode is not _Mode.VALUE

  def cond(state):
    return lax.bitwise_and(lax.lt(state[1], _scalar(a, 2000)), _any(state[0]))

  def body(state):
    live, k, ans, y, z, p1, q1, p2, q2, d = state
    k, y, z = k + 1, y + 1, z + 2
    yk = y * k
    p = p1 * z - p2 * yk
    q = q1 * z - q2 * yk
    q_ok = lax.ne(q, _scalar(q, 0))
    r = p / q
    change = lax.select(q_ok, lax.abs((ans - r) / r), _full(r, 1))
    ans_new = lax.select(q_ok, r, ans)
    big = lax.gt(lax.abs(p), huge)

    def rescale(*vs):
      return [lax.select(big, v * eps, v) for v in vs]

    d_new = ()
    if track_da:
      dp1, dq1, dp2, dq2, dans = d
      dp = dp1 * z - p1 - dp2 * yk + p2 * k
      dq = dq1 * z - q1 - dq2 * yk + q2 * k
      dans_new = lax.select(q_ok, (dp - ans_new * dq) / q, dans)
      change = lax.select(q_ok, lax.abs(dans_new - dans), _full(dans, 1))
      d_new = (*rescale(dp, dq, dp1, dq1), dans_new)
    new = _keep(live, (ans_new, y, z, *rescale(p, q, p1, q1), *d_new),
                state[2:9] + tuple(d))
    # The step counter k is shared: an element's count is right while it is live.
    return (lax.bitwise_and(live, lax.gt(change, eps)), k, *new[:7], tuple(new[7:]))

  y = _scalar(a, 1) - a
  z = x + y + _scalar(x, 1)
  p1, q1 = x + _scalar(x, 1), z * x
  p2, q2 = _full(x, 1), x
  ans = p1 / q1
  d = ()
  if track_da:
    zero = _full(x, 0)
    dq1 = -x
    d = (zero, dq1, zero, zero, (zero - ans * dq1) / q1)   # dp1, dq1, dp2, dq2, dans
  init = (active, _scalar(x, 0), ans, y, z, p1, q1, p2, q2, d)
  out = while_loop(cond, body, init)
  ans = out[2]
  if mode is _Mode.VALUE:
    return ans * ax
  dans = out[-1][4]
  dlog_ax = lax.log(x) - lax.digamma(a)   # d/da log(ax)
  if mode is _Mode.GRAD_A:
    return ax * (ans * dlog_ax + dans)
  return -((dans + ans * dlog_ax) * x)


# ---- the functions (on broadcast operands of the computation dtype) ------------------------
def _domain_error(a, x):
  """x < 0, a < 0, a == x == 0 or a NaN operand: the result is NaN."""
  zero = _scalar(a, 0)
  both_zero = lax.bitwise_and(lax.eq(a, zero), lax.eq(x, zero))
  return _or(lax.lt(x, zero), lax.lt(a, zero), both_zero, _isnan(a), _isnan(x))


def _igamma(a, x):
  zero, one = _scalar(a, 0), _scalar(a, 1)
  x_zero, x_inf = lax.eq(x, zero), lax.eq(x, _scalar(x, np.inf))
  bad = _domain_error(a, x)
  use_cf = lax.bitwise_and(lax.ge(x, one), lax.gt(x, a))   # where the fraction converges fast
  log_ax, underflow = _log_prefactor(a, x)
  ax = lax.exp(log_ax)
  active = lax.bitwise_not(_or(x_zero, bad, underflow, x_inf))
  from_cf = one - _continued_fraction(a, x, ax, lax.bitwise_and(active, use_cf), _Mode.VALUE)
  from_series = _series(a, x, ax, lax.bitwise_and(active, lax.bitwise_not(use_cf)),
                        _Mode.VALUE)
  out = lax.select(use_cf, from_cf, from_series)
  out = lax.select(x_zero, _full(a, 0), out)
  out = lax.select(x_inf, _full(a, 1), out)
  return lax.select(bad, _full(a, np.nan), out)


def _igammac(a, x):
  zero, one = _scalar(a, 0), _scalar(a, 1)
  a_zero, x_inf = lax.eq(a, zero), lax.eq(x, _scalar(x, np.inf))
  bad = _domain_error(a, x)
  use_series = lax.bitwise_or(lax.lt(x, one), lax.lt(x, a))
  log_ax, underflow = _log_prefactor(a, x)
  ax = lax.exp(log_ax)
  active = lax.bitwise_not(_or(bad, underflow, x_inf, a_zero))
  from_series = one - _series(a, x, ax, lax.bitwise_and(active, use_series), _Mode.VALUE)
  from_cf = _continued_fraction(a, x, ax, lax.bitwise_and(active, lax.bitwise_not(use_series)),
                                _Mode.VALUE)
  out = lax.select(use_series, from_series, from_cf)
  out = lax.select(lax.bitwise_or(x_inf, a_zero), _full(a, 0), out)
  return lax.select(bad, _full(a, np.nan), out)


def _derivative(mode):
  """dP/da (GRAD_A) or the sample gradient dx/da (SAMPLE_GRAD), defined for a > 0, x >= 0."""
  def fn(a, x):
    zero, one = _scalar(a, 0), _scalar(a, 1)
    nan = lax.bitwise_or(_isnan(a), _isnan(x))
    x_zero = lax.eq(x, zero)
    bad = lax.bitwise_or(lax.lt(x, zero), lax.le(a, zero))
    use_cf = lax.bitwise_and(lax.gt(x, one), lax.gt(x, a))
    log_ax, underflow = _log_prefactor(a, x)
    ax = lax.exp(log_ax)
    active = lax.bitwise_not(_or(x_zero, bad, underflow, nan))
    # The fraction computes Q's derivative; P's is its negation.
    from_cf = -_continued_fraction(a, x, ax, lax.bitwise_and(active, use_cf), mode)
    from_series = _series(a, x, ax, lax.bitwise_and(active, lax.bitwise_not(use_cf)), mode)
    out = lax.select(use_cf, from_cf, from_series)
    out = lax.select(x_zero, _full(a, 0), out)
    return lax.select(lax.bitwise_or(bad, nan), _full(a, np.nan), out)
  return fn


_NARROW = (np.dtype(np.float16), dtypes.bfloat16)


def _elementwise(impl):
  """`impl` on operands broadcast to their common shape, in float32 for 16-bit floats."""
  def fun(*args):
    avals = [core.get_aval(v) for v in args]
    shape = utils.broadcasting_shape("broadcast", *avals)
    args = [shape_ops.broadcast_in_dim(v, shape, tuple(range(av.ndim)))
            for v, av in zip(args, avals)]
    dtype = avals[0].dtype
    if dtype in _NARROW:
      args = [lax.convert_element_type(v, np.float32) for v in args]
    out = impl(*args)
    return lax.convert_element_type(out, dtype)
  return fun


def _lowering(fun):
  return common.lower_fun(lambda *args: [fun(*args)])


# ---- the primitives -----------------------------------------------------------------------
_igamma_fun = _elementwise(_igamma)
_igammac_fun = _elementwise(_igammac)
_igamma_grad_a_fun = _elementwise(_derivative(_Mode.GRAD_A))
_random_gamma_grad_fun = _elementwise(_derivative(_Mode.SAMPLE_GRAD))


def _primitive(name, fun):
  prim = ew._naryop(name, [FLOAT, FLOAT], None)
  prim.def_lowering(_lowering(fun))
  batching.defbroadcasting(prim)
  return prim


igamma_p = _primitive("igamma", _igamma_fun)
igammac_p = _primitive("igammac", _igammac_fun)
igamma_grad_a_p = _primitive("igamma_grad_a", _igamma_grad_a_fun)   # no derivative rule (as JAX)
random_gamma_grad_p = _primitive("random_gamma_grad", _random_gamma_grad_fun)


def igamma(a, x):
  """Regularized lower incomplete gamma function P(a, x), elementwise."""
  return igamma_p.bind(asarray_operand(a), asarray_operand(x))


def igammac(a, x):
  """Regularized upper incomplete gamma function Q(a, x) = 1 - P(a, x), elementwise."""
  return igammac_p.bind(asarray_operand(a), asarray_operand(x))


def igamma_grad_a(a, x):
  """Derivative of `igamma` with respect to `a`, elementwise."""
  return igamma_grad_a_p.bind(asarray_operand(a), asarray_operand(x))


def random_gamma_grad(a, x):
  """Derivative of a sample `x` of Gamma(a, 1) with respect to `a` (at a fixed quantile)."""
  return random_gamma_grad_p.bind(asarray_operand(a), asarray_operand(x))


# ---- derivatives ----------------------------------------------------------------------------
def _igamma_grad_x(g, a, x):
  # The density of Gamma(a, 1) at x.
  log_density = lax.sub(lax.add(lax.neg(x), lax.mul(lax.sub(a, ew._ones(a)), lax.log(x))),
                        lax.lgamma(a))
  return lax.mul(g, lax.exp(log_density))


def _igamma_grad_a_jvp(g, a, x):
  return lax.mul(g, igamma_grad_a(a, x))


ad.defjvp(igamma_p, _igamma_grad_a_jvp, _igamma_grad_x)
ad.defjvp(igammac_p, lambda g, a, x: lax.neg(_igamma_grad_a_jvp(g, a, x)),
          lambda g, a, x: lax.neg(_igamma_grad_x(g, a, x)))


def _random_gamma_grad_jvp(primals, tangents):
  # JAX computes random_gamma_grad inline, so it differentiates the loops themselves (forward
  # mode only: reverse mode stops at the while loops). Do the same with the implementation.
  outs, t_outs = ad.jvp_flat(lambda a, x: [_random_gamma_grad_fun(a, x)], primals, tangents)
  return outs[0], t_outs[0]


random_gamma_grad_p.def_jvp(_random_gamma_grad_jvp)


# ---- exponentially scaled modified Bessel functions of orders 0 and 1 ------------------------
# i0e(x) = exp(-|x|) I0(x) from Cephes' Chebyshev expansions: one on [0, 8] in t = x/2 - 2,
# one on (8, inf) in t = 32/x - 2 divided by sqrt(x). float64 uses the full coefficient lists;
# float32 their trailing (largest) terms, as Cephes' single-precision version does.
_I0E_SMALL = (
    -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16,
    1.71539128555513303061e-15, -1.16853328779934516808e-14, 7.67618549860493561688e-14,
    -4.85644678311192946090e-13, 2.95505266312963983461e-12, -1.72682629144155570723e-11,
    9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-9,
    -1.30002500998624804212e-8, 6.04699502254191894932e-8, -2.67079385394061173391e-7,
    1.11738753912010371815e-6, -4.41673835845875056359e-6, 1.64484480707288970893e-5,
    -5.75419501008210370398e-5, 1.88502885095841655729e-4, -5.76375574538582365885e-4,
    1.63947561694133579842e-3, -4.32430999505057594430e-3, 1.05464603945949983183e-2,
    -2.37374148058994688156e-2, 4.93052842396707084878e-2, -9.49010970480476444210e-2,
    1.71620901522208775349e-1, -3.04682672343198398683e-1, 6.76795274409476084995e-1)
_I0E_LARGE = (
    -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17,
    3.46122286769746109310e-17, -2.82762398051658348494e-16, -3.42548561967721913462e-16,
    1.77256013305652638360e-15, 3.81168066935262242075e-15, -9.55484669882830764870e-15,
    -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
    7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11,
    -3.14991652796324136454e-11, 1.18891471078464383424e-11, 4.94060238822496958910e-10,
    3.39623202570838634515e-9, 2.26666899049817806459e-8, 2.04891858946906374183e-7,
    2.89137052083475648297e-6, 6.88975834691682398426e-5, 3.36911647825569408990e-3,
    8.04490411014108831608e-1)
_I0E_TERMS = {np.dtype(np.float32): (18, 7), np.dtype(np.float64): (30, 25)}


def _chebyshev(t, coefficients):
  """Clenshaw's recurrence for a Chebyshev series in Cephes' convention (half the first
  coefficient): b_k = t b_{k+1} - b_{k+2} + c_k, result (b_0 - b_2) / 2."""
  b0 = _full(t, 0)
  b1 = b2 = b0
  for c in coefficients:
    b2, b1 = b1, b0
    b0 = lax.add(lax.sub(lax.mul(t, b1), b2), _full(t, c))
  return lax.mul(_scalar(t, 0.5), lax.sub(b0, b2))


def _i0e(x):
  small_n, large_n = _I0E_TERMS[core.get_aval(x).dtype]
  x = lax.abs(x)
  near = _chebyshev(lax.sub(lax.mul(_full(x, 0.5), x), _full(x, 2)), _I0E_SMALL[-small_n:])
  far = lax.div(_chebyshev(lax.sub(lax.div(_full(x, 32), x), _full(x, 2)),
                           _I0E_LARGE[-large_n:]), lax.sqrt(x))
  return lax.select(lax.le(x, _scalar(x, 8)), near, far)


def _unary_in_float32(impl):
  """`impl` computed in float32 for 16-bit floats."""
  def fun(x):
    dtype = core.get_aval(x).dtype
    if dtype in _NARROW:
      return lax.convert_element_type(impl(lax.convert_element_type(x, np.float32)), dtype)
    return impl(x)
  return fun


bessel_i0e_p = ew._unop("bessel_i0e", FLOAT, None)
bessel_i0e_p.def_lowering(common.lower_fun(lambda x: [_unary_in_float32(_i0e)(x)]))
batching.defvectorized(bessel_i0e_p)

bessel_i1e_p = ew._unop("bessel_i1e", FLOAT, lambda ctx, x: chlo.bessel_i1e(x))
batching.defvectorized(bessel_i1e_p)


def bessel_i0e(x):
  """exp(-|x|) I0(x), the exponentially scaled modified Bessel function of order 0."""
  return bessel_i0e_p.bind(asarray_operand(x))


def bessel_i1e(x):
  """exp(-|x|) I1(x), the exponentially scaled modified Bessel function of order 1."""
  return bessel_i1e_p.bind(asarray_operand(x))


# d/dx i0e = i1e(x) - sign(x) i0e(x)
ad.defjvp2(bessel_i0e_p,
           lambda g, y, x: lax.mul(g, lax.sub(bessel_i1e(x), lax.mul(lax.sign(x), y))))


def _bessel_i1e_jvp(g, y, x):
  # d/dx i1e = i0e(x) - i1e(x) (sign(x) + 1/x), which tends to 1/2 at 0: below eps in magnitude
  # x is replaced by eps and the derivative by 1/2.
  dt = core.get_aval(x).dtype
  eps = dtypes.finfo(dt).eps
  # (the magnitude is compared with a strongly typed eps: a weakly typed one is made strong)
  magnitude = lax._convert_element_type(lax.abs(x), dt, weak_type=False)
  not_tiny = lax.gt(magnitude, _scalar(x, eps))
  safe_x = lax.select(not_tiny, x, creation.full_like(x, eps))
  slope = lax.sub(bessel_i0e(safe_x),
                  lax.mul(y, lax.add(lax.sign(safe_x), lax.integer_pow(safe_x, -1))))
  slope = lax.select(not_tiny, slope, creation.full_like(x, 0.5))
  return lax.mul(g, slope)


ad.defjvp2(bessel_i1e_p, _bessel_i1e_jvp)


# ---- Hurwitz zeta function --------------------------------------------------------------------
zeta_p = ew._binop("zeta", FLOAT, lambda ctx, x, q: chlo.zeta(x, q))
batching.defbroadcasting(zeta_p)   # no derivative rule (as JAX)


def zeta(x, q):
  """The Hurwitz zeta function sum_{n >= 0} (n + q) ** -x, elementwise."""
  return zeta_p.bind(asarray_operand(x), asarray_operand(q))


# ---- regularized incomplete beta function -----------------------------------------------------
def _betainc_fraction(a, b, x, steps):
  """The continued fraction of I_x(a, b) (DLMF 8.17.22) by the modified Lentz method:
  1 / (1 + d1 / (1 + d2 / (1 + ...))) with d_{2m+1} = -(a+m)(a+b+m)x / ((a+2m)(a+2m+1)) and
  d_{2m} = m(b-m)x / ((a+2m-1)(a+2m)). Every element takes the same number of steps: the loop
  stops when all have converged (|delta - 1| < eps/2) or after `steps`."""
  dt = core.get_aval(a).dtype
  tiny = _scalar(a, dtypes.finfo(dt).eps / 2)
  one, two = _full(a, 1), _full(a, 2)

  def coefficient(n):
    # a_n of the fraction b0 + a1/(b1 + a2/(b2 + ...)): a1 = 1, a_n = d_{n-1} for n >= 2.
    n_b = shape_ops.broadcast_in_dim(n, core.get_aval(a).shape, ())
    n_even = lax.eq(lax.rem(n_b, _full_int(a, 2)), _full_int(a, 0))   # n even: d_{2m+1}
    m_int = lax.div(lax.sub(n_b, _full_int(a, 1)), _full_int(a, 2))
    m = lax.convert_element_type(m_int, dt)
    a2m = lax.add(a, lax.mul(two, m))
    first = lax.div(lax.mul(lax.neg(lax.add(a, b)), x), lax.add(a, one))
    d_odd = lax.div(lax.mul(lax.mul(lax.neg(lax.add(a, m)), lax.add(lax.add(a, b), m)), x),
                    lax.mul(a2m, lax.add(a2m, one)))
    d_odd = lax.select(lax.eq(m_int, _full_int(a, 0)), first, d_odd)
    d_even = lax.div(lax.mul(lax.mul(m, lax.sub(b, m)), x), lax.mul(lax.sub(a2m, one), a2m))
    out = lax.select(n_even, d_odd, d_even)
    return lax.select(lax.eq(n_b, _full_int(a, 1)), _full(x, 1), out)

  def avoid_zero(v):
    return lax.select(lax.lt(lax.abs(v), tiny), _full(v, tiny), v)

  def cond(state):
    n, going, _, _, _ = state
    return lax.bitwise_and(lax.lt(n, np.int32(steps)), going)

  def body(state):
    n, _, c, d, h = state
    an = coefficient(n)
    c = avoid_zero(lax.add(one, lax.div(an, c)))
    d = lax.div(one, avoid_zero(lax.add(one, lax.mul(an, d))))
    delta = lax.mul(c, d)
    h = lax.mul(h, delta)
    going = _any(lax.ge(lax.abs(lax.sub(delta, one)), tiny))
    return lax.add(n, np.int32(1)), going, c, d, h

  h0 = _full(a, tiny)   # b0 = 0 is replaced by `tiny`
  init = (np.int32(1), np.bool_(True), h0, _full(a, 0), h0)
  return while_loop(cond, body, init)[-1]


def _full_int(x, value):
  return shape_ops.broadcast_in_dim(np.int32(value), core.get_aval(x).shape, ())


def _betainc(a, b, x):
  dt = core.get_aval(a).dtype
  zero, one = _scalar(a, 0), _scalar(a, 1)
  inf = _scalar(a, np.inf)
  a_vanishes = lax.bitwise_or(lax.eq(a, zero), lax.eq(b, inf))   # the mass sits at x = 1
  b_vanishes = lax.bitwise_or(lax.eq(b, zero), lax.eq(a, inf))   # the mass sits at x = 0
  x_zero, x_one = lax.eq(x, zero), lax.eq(x, one)
  gives_zero = lax.bitwise_or(lax.bitwise_and(b_vanishes, lax.bitwise_not(x_one)),
                              lax.bitwise_and(a_vanishes, x_zero))
  gives_one = lax.bitwise_or(lax.bitwise_and(a_vanishes, lax.bitwise_not(x_zero)),
                             lax.bitwise_and(b_vanishes, x_one))
  gives_nan = _or(lax.lt(a, zero), lax.lt(b, zero), lax.lt(x, zero), lax.gt(x, one),
                  lax.bitwise_and(a_vanishes, b_vanishes), _isnan(a), _isnan(b), _isnan(x))
  # The fraction converges fast for x < (a + 1) / (a + b + 2); elsewhere use
  # I_x(a, b) = 1 - I_{1-x}(b, a).
  direct = lax.lt(x, lax.div(lax.add(a, one), lax.add(lax.add(a, b), _scalar(a, 2))))
  a, b = lax.select(direct, a, b), lax.select(direct, b, a)
  x = lax.select(direct, x, lax.sub(_full(x, 1), x))
  fraction = _betainc_fraction(a, b, x, 200 if dt == np.float32 else 600)
  # The prefactor x**a (1-x)**b / (a B(a, b)); for tiny a, a Gamma(a) -> 1 is used instead.
  log_beta_rest = lax.sub(lax.lgamma(b), lax.lgamma(lax.add(a, b)))
  log_beta = lax.add(lax.lgamma(a), log_beta_rest)
  log1m_x = lax.log1p(lax.neg(x))
  tiny_a = lax.lt(a, _scalar(a, dtypes.finfo(dt).tiny * 2))
  prefactor = lax.select(
      tiny_a, lax.exp(lax.sub(lax.mul(log1m_x, b), log_beta_rest)),
      lax.div(lax.exp(lax.sub(lax.add(lax.mul(lax.log(x), a), lax.mul(log1m_x, b)), log_beta)),
              a))
  out = lax.mul(fraction, prefactor)
  out = lax.select(direct, out, lax.sub(_full(out, 1), out))
  out = lax.select(gives_zero, _full(out, 0), out)
  out = lax.select(gives_one, _full(out, 1), out)
  return lax.select(gives_nan, _full(out, np.nan), out)


regularized_incomplete_beta_p = ew._naryop("regularized_incomplete_beta",
                                           [FLOAT, FLOAT, FLOAT], None)
regularized_incomplete_beta_p.def_lowering(_lowering(_elementwise(_betainc)))
batching.defbroadcasting(regularized_incomplete_beta_p)


def betainc(a, b, x):
  """The regularized incomplete beta function I_x(a, b), elementwise."""
  return regularized_incomplete_beta_p.bind(asarray_operand(a), asarray_operand(b),
                                            asarray_operand(x))


def _betainc_grad_ab(g, a, b, x):
  raise ValueError("Betainc gradient with respect to a and b not supported.")


def _betainc_grad_x(g, a, b, x):
  # The Beta(a, b) density at x.
  log_beta = lax.sub(lax.add(lax.lgamma(a), lax.lgamma(b)), lax.lgamma(lax.add(a, b)))
  density = lax.exp(lax.sub(lax.add(lax.mul(lax.sub(b, _const1(b)), lax.log1p(lax.neg(x))),
                                    lax.mul(lax.sub(a, _const1(a)), lax.log(x))), log_beta))
  return lax.mul(density, g)


def _const1(x):
  return ew._const(x, 1)


ad.defjvp(regularized_incomplete_beta_p, _betainc_grad_ab, _betainc_grad_ab, _betainc_grad_x)
