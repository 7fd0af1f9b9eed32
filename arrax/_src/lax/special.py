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

from arrax._src import ad, batching, core, dtypes
from arrax._src.lax import elementwise as ew
from arrax._src.lax import elementwise as lax, reductions, shape_ops, utils
from arrax._src.lax.control_flow import common, while_loop
from arrax._src.lax.utils import asarray_operand
from arrax._src.lax.utils import FLOAT

__all__ = ["igamma", "igamma_grad_a", "igamma_grad_a_p", "igamma_p", "igammac", "igammac_p",
           "random_gamma_grad", "random_gamma_grad_p"]


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
  def fun(a, x):
    avals = [core.get_aval(v) for v in (a, x)]
    shape = utils.broadcasting_shape("broadcast", *avals)
    a, x = (shape_ops.broadcast_in_dim(v, shape, tuple(range(av.ndim)))
            for v, av in zip((a, x), avals))
    dtype = avals[0].dtype
    if dtype in _NARROW:
      a, x = (lax.convert_element_type(v, np.float32) for v in (a, x))
    out = impl(a, x)
    return lax.convert_element_type(out, dtype)
  return fun


def _lowering(fun):
  return common.lower_fun(lambda a, x: [fun(a, x)])


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
