"""`jax.experimental.jet`: Taylor-mode automatic differentiation.

`jet(f, primals, series)` pushes a truncated Taylor polynomial through `f`: each value is carried
as its primal and its higher coefficients (`JetTracer`), and each primitive maps input
coefficients to output coefficients with a rule in `jet_rules`. Rules work on the plain Taylor
coefficients x(t) = x0 + x1 t + x2 t^2 + ...; `jet` scales by factorials at its boundary so the
user's series are derivatives (`jet2` skips the scaling). Nonlinear rules use the recurrences
obtained from the ODE each function satisfies (exp' = exp, tanh' = 1 - tanh^2, ...), computing
one coefficient at a time from the lower ones.
"""
from __future__ import annotations

import functools

import numpy as np

from arrax._src import ad, core
from arrax._src.custom_derivatives import custom_jvp_call_p, custom_vjp_call_p
from arrax._src.jit import jit_p
from arrax._src.lax import broadcasting, elementwise as lax, reductions, shape_ops, stacking
from arrax._src.lax import creation as lax_creation, slicing
from arrax._src.lax.dot import dot_general_p
from arrax._src.numpy import creation
from arrax._src.tree_util import (register_pytree_node, tree_flatten, tree_structure,
                                  tree_unflatten, treedef_is_leaf)


# ---- symbolic zeros ----------------------------------------------------------------------------
class ZeroTerm:
  """A coefficient known to be zero."""


zero_term = ZeroTerm()
register_pytree_node(ZeroTerm, lambda z: ((), None), lambda _, xs: zero_term)


class ZeroSeries:
  """A series all of whose coefficients are zero (a value that does not depend on the input)."""


zero_series = ZeroSeries()
register_pytree_node(ZeroSeries, lambda z: ((), None), lambda _, xs: zero_series)


# ---- the trace ---------------------------------------------------------------------------------
class JetTracer(core.Tracer):
  """A primal (a value of the parent trace) with its Taylor coefficients (a list, or
  `zero_series`)."""
  __slots__ = ("aval", "primal", "terms")

  def __init__(self, trace, primal, terms):
    assert type(terms) in (ZeroSeries, list, tuple)
    self._trace = trace
    self.primal = primal
    self.terms = terms
    self.aval = core.get_aval(primal)

  def _short_repr(self):
    return f"JetTracer(primal={self.primal!r}, terms={self.terms!r})"


class JetTrace(core.Trace):
  """Interprets primitives by their Taylor rules (`jet_rules`), computing on the parent trace."""

  def __init__(self, parent_trace, order):
    super().__init__()
    self.parent_trace = parent_trace
    self.order = order

  def to_primal_terms_pair(self, val):
    if isinstance(val, JetTracer) and val._trace is self:
      return val.primal, val.terms
    return val, zero_series

  def _wrap(self, primal, terms):
    if terms is zero_series:
      return primal
    return JetTracer(self, primal, terms)

  def process_primitive(self, prim, args, params):
    primals, series = zip(*map(self.to_primal_terms_pair, args)) if args else ((), ())
    if all(s is zero_series for s in series):
      with core.set_current_trace(self.parent_trace):
        return prim.bind(*primals, **params)
    if prim in _CALLS:
      # Jaxpr-holding calls (jit, custom_jvp/vjp functions) are inlined: their equations are
      # interpreted by this trace (custom rules are ignored, as JAX's jet does).
      closed = params[_CALLS[prim]]
      return core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
    rule = jet_rules.get(prim)
    if rule is None:
      raise NotImplementedError(f"Jet rule for '{prim.name}' not implemented")
    with core.set_current_trace(self.parent_trace):
      series = [[_zeros(x)] * self.order if s is zero_series else
                [_zeros(x) if t is zero_term else t for t in s]
                for x, s in zip(primals, series)]
      primal_out, terms_out = rule(primals, series, **params)
    if prim.multiple_results:
      return [self._wrap(p, ts) for p, ts in zip(primal_out, terms_out)]
    return self._wrap(primal_out, terms_out)

  def __repr__(self):
    return "JetTrace"


_CALLS = {jit_p: "jaxpr", custom_jvp_call_p: "call_jaxpr", custom_vjp_call_p: "call_jaxpr"}


def _zeros(x):
  aval = core.get_aval(x)
  return creation.zeros(aval.shape, aval.dtype)


# ---- the API -----------------------------------------------------------------------------------
def fact(n):
  """n! as a float (exp(lgamma(n + 1)), as JAX computes it)."""
  return lax.exp(lax.lgamma(n + 1.))


def jet(fun, primals, series, factorial_scaled=True, **_):
  """Taylor-mode differentiation: `fun(*primals)` and the Taylor series of `fun` along the
  input series. `series` has one sequence of terms per primal (all of one length, the order);
  with `factorial_scaled` (default) term k is the k-th derivative along the path, else the
  plain coefficient of t**k. Returns `(primals_out, series_out)` with `fun`'s output
  structure."""
  try:
    order, = set(map(len, series))
  except ValueError:
    raise ValueError("jet terms have inconsistent lengths for different arguments") from None
  for i, (x, terms) in enumerate(zip(primals, series)):
    if not treedef_is_leaf(tree_structure(x)):
      raise ValueError(f"primal value at position {i} is not an array")
    for j, t in enumerate(terms):
      if not treedef_is_leaf(tree_structure(t)):
        raise ValueError(f"term {j} for argument {i} is not an array")
  if factorial_scaled:
    series = [[t / fact(k + 1) for k, t in enumerate(terms)] for terms in series]
  parent = core.current_trace()
  trace = JetTrace(parent, order)
  tracers = [JetTracer(trace, x, list(s)) for x, s in zip(primals, series)]
  with core.set_current_trace(trace):
    ans = fun(*tracers)
  out, out_tree = tree_flatten(ans)
  pairs = [trace.to_primal_terms_pair(v) for v in out]
  trace.invalidate()
  primals_out = [p for p, _ in pairs]
  terms_out = [[creation.zeros_like(p)] * order if s is zero_series else
               [creation.zeros_like(p) if t is zero_term else t for t in s]
               for p, s in pairs]
  if factorial_scaled:
    terms_out = [[t * fact(k + 1) for k, t in enumerate(terms)] for terms in terms_out]
  return tree_unflatten(out_tree, primals_out), tree_unflatten(out_tree, terms_out)


jet2 = functools.partial(jet, factorial_scaled=False)


# ---- rules -------------------------------------------------------------------------------------
jet_rules: dict = {}


def zero_prop(prim, primals_in, series_in, **params):
  """The rule of a primitive whose output does not vary with its inputs' coefficients."""
  return prim.bind(*primals_in, **params), zero_series


def defzero(prim):
  jet_rules[prim] = functools.partial(zero_prop, prim)


def linear_prop(prim, primals_in, series_in, **params):
  """The rule of a primitive linear in all its operands: applied to each coefficient."""
  primal_out = prim.bind(*primals_in, **params)
  terms_out = [prim.bind(*terms, **params) for terms in zip(*series_in)]
  if prim.multiple_results:
    terms_out = [list(ts) for ts in zip(*terms_out)]
  return primal_out, terms_out


def deflinear(prim):
  jet_rules[prim] = functools.partial(linear_prop, prim)


def def_comp(prim, comp, **kwargs):
  """The rule of `prim` from a composite `comp` of primitives that have rules."""
  def rule(primals_in, series_in, **params):
    del params   # (the composite stands for the primitive with these parameters)
    return jet2(functools.partial(comp, **kwargs), primals_in, series_in)
  jet_rules[prim] = rule


for _p in [lax.lt_p, lax.le_p, lax.gt_p, lax.ge_p, lax.eq_p, lax.ne_p, lax.not_p, lax.and_p,
           lax.or_p, lax.xor_p, lax.floor_p, lax.ceil_p, lax.round_p, lax.sign_p,
           ad.stop_gradient_p, lax.is_finite_p, lax.shift_left_p,
           lax.shift_right_arithmetic_p, lax.shift_right_logical_p]:
  defzero(_p)

for _p in [lax.neg_p, lax.real_p, lax.complex_p, lax.conj_p, lax.imag_p, lax.add_p, ad.add_any_p,
           lax.sub_p, lax.convert_element_type_p, broadcasting.broadcast_in_dim_p,
           shape_ops.concatenate_p, shape_ops.split_p, shape_ops.pad_p, broadcasting.reshape_p,
           broadcasting.squeeze_p, shape_ops.rev_p, broadcasting.transpose_p, shape_ops.slice_p,
           broadcasting.reduce_sum_p, reductions.cumsum_p, stacking.copy_p]:
  deflinear(_p)


def _conv(op, xs, ys, k, start=0):
  """sum_{i=start..k} op(xs[i], ys[k - i])."""
  out = op(xs[start], ys[k - start])
  for i in range(start + 1, k + 1):
    out = out + op(xs[i], ys[k - i])
  return out


def _bilinear_rule(prim, primals_in, series_in, **params):
  (x, y), (xs, ys) = primals_in, series_in
  xs, ys = [x, *xs], [y, *ys]
  op = functools.partial(prim.bind, **params)
  out = [_conv(op, xs, ys, k) for k in range(len(xs))]
  return out[0], out[1:]


jet_rules[lax.mul_p] = functools.partial(_bilinear_rule, lax.mul_p)
jet_rules[dot_general_p] = functools.partial(_bilinear_rule, dot_general_p)


def _scaled_sum(xs, us, k):
  """sum_{j=1..k} (j / k) xs[j] us[k - j]: the k-th coefficient of y when y' = u x'."""
  out = xs[1] * us[k - 1] * (1. / k)
  for j in range(2, k + 1):
    out = out + xs[j] * us[k - j] * (j / k)
  return out


def _exp_rule(primals_in, series_in, **_):
  (x,), (xs,) = primals_in, series_in
  xs = [x, *xs]
  ys = [lax.exp(x)]
  for k in range(1, len(xs)):
    ys.append(_scaled_sum(xs, ys, k))
  return ys[0], ys[1:]


jet_rules[lax.exp_p] = _exp_rule


def _log_rule(primals_in, series_in, **_):
  # x y' = x' (y = log x): y_k = (x_k - sum_{j=1..k-1} (j/k) y_j x_{k-j}) / x_0.
  (x,), (xs,) = primals_in, series_in
  xs = [x, *xs]
  ys = [lax.log(x)]
  for k in range(1, len(xs)):
    acc = xs[k]
    for j in range(1, k):
      acc = acc - ys[j] * xs[k - j] * (j / k)
    ys.append(acc / x)
  return ys[0], ys[1:]


jet_rules[lax.log_p] = _log_rule


def _sin_cos_series(x, xs, sign, fs):
  """The series of (s, c) with s' = c x' and c' = sign * s x' (sin/cos: -1, sinh/cosh: +1)."""
  xs = [x, *xs]
  ss, cs = [fs[0](x)], [fs[1](x)]
  for k in range(1, len(xs)):
    s_k, c_k = _scaled_sum(xs, cs, k), _scaled_sum(xs, ss, k)
    ss.append(s_k)
    cs.append(c_k if sign > 0 else -c_k)
  return ss, cs


def _sinusoid_rule(which, sign, fs):
  def rule(primals_in, series_in, **_):
    ss, cs = _sin_cos_series(primals_in[0], series_in[0], sign, fs)
    out = ss if which == 0 else cs
    return out[0], out[1:]
  return rule


jet_rules[lax.sin_p] = _sinusoid_rule(0, -1, (lax.sin, lax.cos))
jet_rules[lax.cos_p] = _sinusoid_rule(1, -1, (lax.sin, lax.cos))
jet_rules[lax.sinh_p] = _sinusoid_rule(0, 1, (lax.sinh, lax.cosh))
jet_rules[lax.cosh_p] = _sinusoid_rule(1, 1, (lax.sinh, lax.cosh))


def _riccati_rule(f, u_of):
  """The rule of y = f(x) with y' = u x', u's coefficient m computed by `u_of(ys, m)` from
  y's coefficients up to m."""
  def rule(primals_in, series_in, **_):
    (x,), (xs,) = primals_in, series_in
    xs = [x, *xs]
    ys, us = [f(x)], []
    for k in range(1, len(xs)):
      us.append(u_of(ys, k - 1))
      ys.append(_scaled_sum(xs, us, k))
    return ys[0], ys[1:]
  return rule


def _square_coeff(ys, m):
  return _conv(lax.mul, ys, ys, m)


def _tanh_u(ys, m):
  # u = 1 - y^2
  sq = _square_coeff(ys, m)
  return (1. - sq) if m == 0 else -sq


def _logistic_u(ys, m):
  # u = y - y^2
  return ys[m] - _square_coeff(ys, m)


jet_rules[lax.tanh_p] = _riccati_rule(lax.tanh, _tanh_u)
jet_rules[lax.logistic_p] = _riccati_rule(lax.logistic, _logistic_u)


def _div_rule(primals_in, series_in, **_):
  # x = z y: z_k = (x_k - sum_{i=0..k-1} z_i y_{k-i}) / y_0.
  (x, y), (xs, ys) = primals_in, series_in
  xs, ys = [x, *xs], [y, *ys]
  zs = [lax.div(x, y)]
  for k in range(1, len(xs)):
    acc = xs[k]
    for i in range(k):
      acc = acc - zs[i] * ys[k - i]
    zs.append(lax.div(acc, y))
  return zs[0], zs[1:]


jet_rules[lax.div_p] = _div_rule


def _mul_series(a, b):
  return [_conv(lax.mul, a, b, k) for k in range(len(a))]


def _integer_pow_rule(primals_in, series_in, *, y):
  (x,), (xs,) = primals_in, series_in
  primal_out = lax.integer_pow(x, y)
  if y == 0:
    return primal_out, zero_series
  # x ** |y| by repeated squaring of the series, then a reciprocal for negative powers.
  base, acc, n = [x, *xs], None, abs(y)
  while n:
    if n & 1:
      acc = base if acc is None else _mul_series(acc, base)
    n >>= 1
    if n:
      base = _mul_series(base, base)
  if y < 0:
    ones = [lax_creation.full_like(x, 1)] + [_zeros(x)] * len(xs)
    _, terms = _div_rule((ones[0], acc[0]), (ones[1:], acc[1:]))
    return primal_out, terms
  return primal_out, acc[1:]


jet_rules[lax.integer_pow_p] = _integer_pow_rule


def _select_n_rule(primals_in, series_in, **params):
  which, *cases = primals_in
  primal_out = lax.select_n(which, *cases)
  terms = [lax.select_n(which, *ts) for ts in zip(*series_in[1:])]
  return primal_out, terms


jet_rules[lax.select_n_p] = _select_n_rule

def deriv_prop(prim, deriv, primals_in, series_in):
  """The rule of a unary `prim` from its derivative function: y' = deriv(x) x', with the
  series of deriv(x) from its own jet."""
  (x,), (xs,) = primals_in, series_in
  u0, us = jet2(deriv, (x,), (xs,))
  us, xs = [u0, *us], [x, *xs]
  ys = [prim.bind(x)]
  for k in range(1, len(xs)):
    ys.append(_scaled_sum(xs, us, k))
  return ys[0], ys[1:]


def def_deriv(prim, deriv):
  """Define `prim`'s rule from its first derivative `deriv` (a function of x)."""
  jet_rules[prim] = functools.partial(deriv_prop, prim, deriv)


def_deriv(lax.erf_p, lambda x: lax.exp(lax.neg(lax.mul(x, x))) * (2. / np.sqrt(np.pi)))


def _linear_in(positions):
  """The rule of a primitive linear in the operands at `positions` whose other operands
  (indices) are used as they are."""
  def rule(prim, primals_in, series_in, **params):
    primal_out = prim.bind(*primals_in, **params)
    terms = []
    for k in range(len(series_in[0])):
      args = [series_in[i][k] if i in positions else p for i, p in enumerate(primals_in)]
      terms.append(prim.bind(*args, **params))
    return primal_out, terms
  return rule


for _p, _pos in [(shape_ops.dynamic_slice_p, {0}), (shape_ops.dynamic_update_slice_p, {0, 1}),
                 (slicing.gather_p, {0}), (slicing.scatter_add_p, {0, 2})]:
  jet_rules[_p] = functools.partial(_linear_in(_pos), _p)


def _abs_rule(primals_in, series_in, **_):
  (x,), (xs,) = primals_in, series_in
  sign = lax.select(lax.lt(x, lax_creation.full_like(x, 0)), lax_creation.full_like(x, -1),
                    lax_creation.full_like(x, 1))
  return lax.abs(x), [sign * t for t in xs]


jet_rules[lax.abs_p] = _abs_rule


def _choose_rule(prim, cmp):
  # max/min: the series of the chosen operand; at ties, the mean of both (as JAX's).
  def rule(primals_in, series_in, **_):
    (x, y), (xs, ys) = primals_in, series_in
    x_wins, y_wins = cmp(x, y), cmp(y, x)
    terms = [lax.select(x_wins, a, lax.select(y_wins, b, (a + b) / 2))
             for a, b in zip(xs, ys)]
    return prim.bind(x, y), terms
  return rule


jet_rules[lax.max_p] = _choose_rule(lax.max_p, lax.gt)
jet_rules[lax.min_p] = _choose_rule(lax.min_p, lax.lt)


def _pow_rule(primals_in, series_in, **_):
  (x, y), (xs, ys) = primals_in, series_in
  _, terms = jet2(lambda x, y: lax.exp(y * lax.log(x)), (x, y), (xs, ys))
  return lax.pow(x, y), terms


jet_rules[lax.pow_p] = _pow_rule


def _atan2_rule(primals_in, series_in, **_):
  # atan2(x, y) = atan(z) with z = x / y: w' = z' / (1 + z^2).
  z0, zs = jet2(lax.div, primals_in, series_in)
  u0, us = jet2(lambda z: 1. / (1. + z * z), (z0,), (zs,))
  zs, us = [z0, *zs], [u0, *us]
  ws = [lax.atan2(*primals_in)]
  for k in range(1, len(zs)):
    ws.append(_scaled_sum(zs, us, k))
  return ws[0], ws[1:]


jet_rules[lax.atan2_p] = _atan2_rule


def _reduce_choose_rule(prim):
  # reduce_max/min: the series at the chosen elements (their mean where several tie).
  def rule(primals_in, series_in, *, axes, **params):
    (x,), (xs,) = primals_in, series_in
    out = prim.bind(x, axes=axes, **params)
    keep = tuple(1 if i in axes else d for i, d in enumerate(x.shape))
    dtype = core.get_aval(xs[0]).dtype
    at = lax.convert_element_type(lax.eq(x, broadcasting.reshape(out, keep)), dtype)
    counts = broadcasting.reduce_sum(at, axes)
    return out, [lax.div(broadcasting.reduce_sum(lax.mul(t, at), axes), counts) for t in xs]
  return rule


jet_rules[reductions.reduce_max_p] = _reduce_choose_rule(reductions.reduce_max_p)
jet_rules[reductions.reduce_min_p] = _reduce_choose_rule(reductions.reduce_min_p)


def _cumulative_rule(combine):
  # Through the parallel prefix scan of `combine` (differentiable to any order).
  def rule(primals_in, series_in, *, axis, reverse):
    def scan(x):
      return reductions.associative_scan_flat(lambda a, b: [combine(a[0], b[0])], [x], axis,
                                              reverse)[0]
    return jet2(scan, primals_in, series_in)
  return rule


jet_rules[reductions.cumprod_p] = _cumulative_rule(lax.mul)
jet_rules[reductions.cummax_p] = _cumulative_rule(lax.max)
jet_rules[reductions.cummin_p] = _cumulative_rule(lax.min)
def_comp(lax.sqrt_p, lambda x: x ** 0.5)
def_comp(lax.rsqrt_p, lambda x: x ** -0.5)
def_comp(lax.square_p, lambda x: x * x)
def_comp(lax.expm1_p, lambda x: lax.exp(x) - 1)
def_comp(lax.log1p_p, lambda x: lax.log(1 + x))
del _p
