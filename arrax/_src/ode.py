"""`jax.experimental.ode`: adaptive Dormand-Prince (RK45) integration of ODEs, `odeint`.

The solution at each requested time is found by stepping an embedded 5(4) Runge-Kutta pair
with error control (Hairer, Norsett and Wanner's step-size rules) inside a `while_loop`, one
`scan` step per output time, and evaluated from a quartic interpolant fitted to the last
accepted step. The gradient is a `custom_vjp`: the adjoint system (Chen et al. 2018, appendix
C) is integrated backwards in time between consecutive output times. The arithmetic follows
JAX's step for step so solutions agree with JAX's to rounding.
"""
from __future__ import annotations

import operator
from functools import partial

import numpy as np

from arrax._src import core, dtypes
from arrax._src.ad_api import vjp
from arrax._src.batching import vmap
from arrax._src.config import default_matmul_precision
from arrax._src.custom_derivatives import closure_convert, custom_vjp
from arrax._src.flatten_util import ravel_pytree
from arrax._src.jit import jit
from arrax._src.lax.control_flow.loops import fori_loop, scan
from arrax._src.lax.control_flow.while_loop import while_loop
from arrax._src.numpy import creation, lax_numpy, linalg, polynomial, reductions, ufuncs
from arrax._src.numpy.util import promote_dtypes_inexact
from arrax._src.tree_util import tree_leaves, tree_map


def ravel_first_arg(f, unravel, debug_info=None):
  """`f(y, *args)` for a pytree `y` turned into a function of the flat vector of `y`'s leaves,
  returning the flat vector of its result."""
  def flat_f(y_flat, *args):
    out_flat, _ = ravel_pytree(f(unravel(y_flat), *args))
    return out_flat
  return flat_f


def interp_fit_dopri(y0, y1, k, dt):
  """The quartic interpolant's coefficients over one Dormand-Prince step from y0 to y1 with
  stage derivatives k (7 rows)."""
  c_mid = creation.array([
      6025192743 / 30085553152 / 2, 0, 51252292925 / 65400821598 / 2,
      -2691868925 / 45128329728 / 2, 187940372067 / 1594534317056 / 2,
      -1776094331 / 19743644256 / 2, 11237099 / 235043384 / 2], dtype=y0.dtype)
  y_mid = y0 + dt.astype(y0.dtype) * lax_numpy.dot(c_mid, k)
  return creation.asarray(fit_4th_order_polynomial(y0, y1, y_mid, k[0], k[-1], dt))


def fit_4th_order_polynomial(y0, y1, y_mid, dy0, dy1, dt):
  """Coefficients (highest power first) of the quartic on [0, 1] through y0, y_mid and y1 with
  end slopes dy0 and dy1 (per unit time, scaled by dt)."""
  dt = dt.astype(y0.dtype)
  a = -2. * dt * dy0 + 2. * dt * dy1 - 8. * y0 - 8. * y1 + 16. * y_mid
  b = 5. * dt * dy0 - 3. * dt * dy1 + 18. * y0 + 14. * y1 - 32. * y_mid
  c = -4. * dt * dy0 + dt * dy1 - 11. * y0 - 5. * y1 + 16. * y_mid
  d = dt * dy0
  e = y0
  return a, b, c, d, e


def initial_step_size(fun, t0, y0, order, rtol, atol, f0):
  """The first step's size (Hairer, Norsett and Wanner, Solving ODEs I, sec. II.4)."""
  y0, f0 = promote_dtypes_inexact(y0, f0)
  dtype = y0.dtype
  scale = atol + ufuncs.abs(y0) * rtol
  d0 = linalg.norm(y0 / scale.astype(dtype))
  d1 = linalg.norm(f0 / scale.astype(dtype))
  h0 = lax_numpy.where((d0 < 1e-5) | (d1 < 1e-5), 1e-6, 0.01 * d0 / d1)
  y1 = y0 + h0.astype(dtype) * f0
  f1 = fun(y1, t0 + h0)
  d2 = linalg.norm((f1 - f0) / scale.astype(dtype)) / h0
  h1 = lax_numpy.where((d1 <= 1e-15) & (d2 <= 1e-15),
                       ufuncs.maximum(1e-6, h0 * 1e-3),
                       (0.01 / ufuncs.maximum(d1, d2)) ** (1. / (order + 1.)))
  return ufuncs.minimum(100. * h0, h1)


_ALPHA = [1 / 5, 3 / 10, 4 / 5, 8 / 9, 1., 1., 0]
_BETA = [[1 / 5, 0, 0, 0, 0, 0, 0],
         [3 / 40, 9 / 40, 0, 0, 0, 0, 0],
         [44 / 45, -56 / 15, 32 / 9, 0, 0, 0, 0],
         [19372 / 6561, -25360 / 2187, 64448 / 6561, -212 / 729, 0, 0, 0],
         [9017 / 3168, -355 / 33, 46732 / 5247, 49 / 176, -5103 / 18656, 0, 0],
         [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]]
_C_SOL = [35 / 384, 0, 500 / 1113, 125 / 192, -2187 / 6784, 11 / 84, 0]
_C_ERR = [35 / 384 - 1951 / 21600, 0, 500 / 1113 - 22642 / 50085, 125 / 192 - 451 / 720,
          -2187 / 6784 + 12231 / 42400, 11 / 84 - 649 / 6300, -1. / 60.]


def runge_kutta_step(func, y0, f0, t0, dt):
  """One Dormand-Prince step of size dt from (t0, y0) with f0 = func(y0, t0). Returns the new
  state, its derivative, the embedded error estimate and the 7 stage derivatives."""
  alpha = creation.array(_ALPHA, dtype=dt.dtype)
  beta = creation.array(_BETA, dtype=f0.dtype)
  c_sol = creation.array(_C_SOL, dtype=f0.dtype)
  c_error = creation.array(_C_ERR, dtype=f0.dtype)

  def stage(i, k):
    ti = t0 + dt * alpha[i - 1]
    yi = y0 + dt.astype(f0.dtype) * lax_numpy.dot(beta[i - 1, :], k)
    return k.at[i, :].set(func(yi, ti))

  k = creation.zeros((7, f0.shape[0]), f0.dtype).at[0, :].set(f0)
  k = fori_loop(1, 7, stage, k)
  y1 = dt.astype(f0.dtype) * lax_numpy.dot(c_sol, k) + y0
  y1_error = dt.astype(f0.dtype) * lax_numpy.dot(c_error, k)
  return y1, k[-1], y1_error, k


def abs2(x):
  """|x|**2 elementwise (real for complex x)."""
  if lax_numpy.iscomplexobj(x):
    return x.real ** 2 + x.imag ** 2
  return x ** 2


def mean_error_ratio(error_estimate, rtol, atol, y0, y1):
  """The RMS of the error estimate relative to the mixed tolerance."""
  err_tol = atol + rtol * ufuncs.maximum(ufuncs.abs(y0), ufuncs.abs(y1))
  err_ratio = error_estimate / err_tol.astype(error_estimate.dtype)
  return ufuncs.sqrt(reductions.mean(abs2(err_ratio)))


def optimal_step_size(last_step, mean_error_ratio, safety=0.9, ifactor=10.0, dfactor=0.2,
                      order=5.0):
  """The next step's size from the last one and its error ratio (grows at most ifactor-fold,
  shrinks at most to dfactor of it after a rejected step)."""
  dfactor = lax_numpy.where(mean_error_ratio < 1, 1.0, dfactor)
  factor = ufuncs.minimum(ifactor,
                          ufuncs.maximum(mean_error_ratio ** (-1.0 / order) * safety, dfactor))
  return lax_numpy.where(mean_error_ratio == 0, last_step * ifactor, last_step * factor)


def odeint(func, y0, t, *args, rtol=1.4e-8, atol=1.4e-8, mxstep=np.inf, hmax=np.inf):
  """Solve dy/dt = func(y, t, *args) from y(t[0]) = y0 (a pytree of arrays) with adaptive
  Dormand-Prince steps; returns y at each time of the increasing float array `t`, with a new
  leading axis of length len(t). `rtol`/`atol` are the local error tolerances, `mxstep` the
  largest number of steps per output time and `hmax` the largest step. Differentiable (by the
  adjoint method) in y0, t and args."""
  for arg in tree_leaves(args):
    if not core.valid_jaxtype(arg):
      raise TypeError(
          f"The contents of odeint *args must be arrays or scalars, but got {arg}.")
  if not dtypes.issubdtype(t.dtype, np.floating):
    raise TypeError(f"t must be an array of floats, but got {t}.")
  converted, consts = closure_convert(func, y0, t[0], *args)
  return _odeint_wrapper(converted, rtol, atol, mxstep, hmax, y0, t, *args, *consts)


@partial(jit, static_argnums=(0, 1, 2, 3, 4))
@default_matmul_precision("highest")
def _odeint_wrapper(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  y0, unravel = ravel_pytree(y0)
  func = ravel_first_arg(func, unravel)
  out = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return vmap(unravel)(out)


@partial(custom_vjp, nondiff_argnums=(0, 1, 2, 3, 4))
@default_matmul_precision("highest")
def _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  func_ = lambda y, t: func(y, t, *args)

  def scan_fun(carry, target_t):
    def cond_fun(state):
      i, _, _, t, dt, _, _ = state
      return (t < target_t) & (i < mxstep) & (dt > 0)

    def body_fun(state):
      i, y, f, t, dt, last_t, interp_coeff = state
      next_y, next_f, next_y_error, k = runge_kutta_step(func_, y, f, t, dt)
      next_t = t + dt
      error_ratio = mean_error_ratio(next_y_error, rtol, atol, y, next_y)
      new_interp_coeff = interp_fit_dopri(y, next_y, k, dt)
      dt = lax_numpy.clip(optimal_step_size(dt, error_ratio), min=0., max=hmax)
      new = [i + 1, next_y, next_f, next_t, dt, t, new_interp_coeff]
      old = [i + 1, y, f, t, dt, last_t, interp_coeff]
      accept = error_ratio <= 1.
      return [lax_numpy.where(accept, a, b) for a, b in zip(new, old)]

    _, *carry = while_loop(cond_fun, body_fun, [0] + carry)
    _, _, t, _, last_t, interp_coeff = carry
    relative_output_time = (target_t - last_t) / (t - last_t)
    y_target = polynomial.polyval(interp_coeff,
                                  relative_output_time.astype(interp_coeff.dtype))
    return carry, y_target

  f0 = func_(y0, ts[0])
  dt = lax_numpy.clip(initial_step_size(func_, ts[0], y0, 4, rtol, atol, f0), min=0., max=hmax)
  interp_coeff = creation.array([y0] * 5)
  init_carry = [y0, f0, ts[0], dt, ts[0], interp_coeff]
  _, ys = scan(scan_fun, init_carry, ts[1:])
  return lax_numpy.concatenate((y0[None], ys))


def _odeint_fwd(func, rtol, atol, mxstep, hmax, y0, ts, *args):
  ys = _odeint(func, rtol, atol, mxstep, hmax, y0, ts, *args)
  return ys, (ys, ts, args)


@default_matmul_precision("highest")
def _odeint_rev(func, rtol, atol, mxstep, hmax, res, g):
  ys, ts, args = res

  def aug_dynamics(augmented_state, t, *args):
    # The augmented system runs in negated time: y, the adjoint of y, of t and of args.
    y, y_bar, *_ = augmented_state
    y_dot, vjp_fun = vjp(func, y, -t, *args)
    return (-y_dot, *vjp_fun(y_bar))

  def scan_fun(carry, i):
    y_bar, t0_bar, args_bar = carry
    # The output time's own cotangent (real: time is real).
    t_bar = lax_numpy.dot(func(ys[i], ts[i], *args), g[i]).real
    t0_bar = t0_bar - t_bar
    # Integrate the adjoint system back to the previous output time.
    _, y_bar, t0_bar, args_bar = odeint(
        aug_dynamics, (ys[i], y_bar, t0_bar, args_bar),
        creation.array([-ts[i], -ts[i - 1]]),
        *args, rtol=rtol, atol=atol, mxstep=mxstep, hmax=hmax)
    y_bar, t0_bar, args_bar = tree_map(operator.itemgetter(1), (y_bar, t0_bar, args_bar))
    y_bar = y_bar + g[i - 1]
    return (y_bar, t0_bar, args_bar), t_bar

  init_carry = (g[-1], 0., tree_map(creation.zeros_like, args))
  (y_bar, t0_bar, args_bar), rev_ts_bar = scan(
      scan_fun, init_carry, creation.arange(len(ts) - 1, 0, -1))
  ts_bar = lax_numpy.concatenate([creation.array([t0_bar]), rev_ts_bar[::-1]])
  return (y_bar, ts_bar, *args_bar)


_odeint.defvjp(_odeint_fwd, _odeint_rev)
