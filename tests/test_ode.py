"""jax.experimental.ode against JAX 0.10.2: odeint's values (decay, pendulum, pytree states,
closures, extra args, tolerances, hmax/mxstep), its adjoint gradients (checked numerically too),
jit and vmap over it, its errors, and the module's helper functions."""
import jax
import jax.experimental.ode as jode
import jax.numpy as jnp
import numpy as np
import pytest

import arrax
import arrax.experimental.ode as aode
import arrax.numpy as anp
from arrax.test_util import check_grads
from tests.oracle import assert_same, check, check_all, make_with

ODE = {arrax: aode, jax: jode}
T = np.linspace(0., 2., 5, dtype=np.float32)


def decay(np_, top):
  return lambda y, t, k: -k * y


def pendulum(np_, top):
  def f(y, t, b, c):
    th, om = y
    return (om, -b * om - c * np_.sin(th))
  return f


def forced(np_, top):
  # Depends on t and on a dict of parameters; the state is a dict.
  def f(y, t, p):
    return {"x": y["v"], "v": -p["w"] ** 2 * y["x"] + np_.cos(t)}
  return f


def solve(make, **kw):
  def build(np_, top):
    f = make(np_, top)
    return lambda y0, t, *args: ODE[top].odeint(f, y0, t, *args, **kw)
  return build


Y_PEND = (np.float32(2.), np.float32(0.))
Y_FORCED = {"x": np.array([1., 0.5], np.float32), "v": np.zeros(2, np.float32)}
P_FORCED = {"w": np.array([1.5, 0.5], np.float32)}


def test_odeint_values():
  tol = 1e-6
  check_all([
      ("decay loose", lambda: check(solve(decay, rtol=1e-3, atol=1e-3),
                                    np.array([1., -2., 3.], np.float32), T, 0.7,
                                    build=make_with("np", "top"), tol=tol)),
      ("pendulum", lambda: check(solve(pendulum), Y_PEND, T, 0.25, 5.0,
                                 build=make_with("np", "top"), tol=tol)),
      # Steps of at most 0.05, at most 4 per output time: the solution falls behind.
      ("pendulum hmax mxstep", lambda: check(solve(pendulum, hmax=0.05, mxstep=4), Y_PEND, T,
                                             0.25, 5.0, build=make_with("np", "top"), tol=tol)),
      ("complex state", lambda: check(solve(lambda np_, top: lambda y, t: 1j * y),
                                      np.complex64(1. + 0.5j), T[:3],
                                      build=make_with("np", "top"), tol=tol)),
      ("int state, one time", lambda: check(solve(decay), np.int32(3), T[:1], 0.5,
                                            build=make_with("np", "top"), tol=tol)),
      ("forced dict", lambda: check(solve(forced), Y_FORCED, T, P_FORCED,
                                    build=make_with("np", "top"), tol=tol, strict_tree=True)),
  ])


def test_odeint_x64(x64):
  check(solve(pendulum), (2., 0.), np.linspace(0., 2., 4), 0.25, 5.0,
        build=make_with("np", "top"), tol=1e-12)


def closure(np_, top):
  # The vector field closes over an array (hoisted by closure_convert, so it is differentiated).
  def loss(w, y0):
    ys = ODE[top].odeint(lambda y, t: -w * y + np_.sin(t), y0, np_.asarray(T))
    return (ys ** 2).sum()
  return loss


def test_odeint_gradients():
  def grad_pend(np_, top):
    def loss(y0, t, b, c):
      th, om = ODE[top].odeint(pendulum(np_, top), y0, t, b, c)
      return (th ** 2).sum() + om[-1]
    return top.grad(loss, argnums=(0, 1, 2, 3))

  def grad_forced(np_, top):
    def loss(y0, p):
      ys = ODE[top].odeint(forced(np_, top), y0, np_.asarray(T), p)
      return ys["x"].sum() - (ys["v"][-1] ** 2).sum()
    return top.grad(loss, argnums=(0, 1))

  b = make_with("np", "top")
  check_all([
      ("pendulum", lambda: check(grad_pend, Y_PEND, T, np.float32(0.25), np.float32(5.0),
                                 build=b, tol=2e-5, eager=False, jit=True)),
      ("forced dict", lambda: check(grad_forced, Y_FORCED, P_FORCED, build=b, tol=2e-5,
                                    strict_tree=True, eager=False, jit=True)),
      ("jit grad closure", lambda: check(
          lambda np_, top: top.jit(top.grad(closure(np_, top), (0, 1))),
                                 np.array([0.5, 1.5], np.float32),
                                 np.array([1., -1.], np.float32), build=b, tol=2e-5)),
  ])


def test_odeint_gradients_numerically(x64):
  t = anp.linspace(0., 1., 3)

  def f(y0, k):
    return aode.odeint(lambda y, t, k: -k * y * anp.cos(t), y0, t, k)
  check_grads(arrax.jit(f), (anp.array([1.0, 2.0]), anp.array(0.7)), order=1, modes=["rev"],
              atol=1e-5, rtol=1e-5)


def test_odeint_vmap():
  def build(np_, top):
    return top.vmap(lambda y0, k: ODE[top].odeint(decay(np_, top), y0, np_.asarray(T), k),
                    in_axes=(0, None))
  check(build, np.array([1., 2., -1.], np.float32), np.float32(0.4),
        build=make_with("np", "top"), tol=1e-6)


def test_odeint_errors():
  b = make_with("np", "top")
  check_all([
      ("int times", lambda: check(solve(decay), np.float32(1.), np.arange(3), 0.5, build=b)),
      ("string arg", lambda: check(lambda np_, top: lambda y0, t: ODE[top].odeint(
          lambda y, t, s: y, y0, t, "a"), np.float32(1.), T, build=b)),
  ])
  with pytest.raises(TypeError, match="must be arrays or scalars"):
    aode.odeint(lambda y, t, s: y, 1., anp.asarray(T), "a")


def test_helpers():
  # (each helper under jit: one compilation per case)
  y0, y1 = np.array([1., 2.], np.float32), np.array([1.5, 1.], np.float32)
  k = np.linspace(-1., 1., 14, dtype=np.float32).reshape(7, 2)
  dt = np.float32(0.1)
  H = lambda m, lib: m(lib.top)  # noqa: E731
  jit_only = {"eager": False, "jit": True}
  check_all([
      ("optimal_step_size", lambda: check(
          lambda lib: lambda d, r: ODE[lib].optimal_step_size(d, r),
          dt, np.array([0., 0.5, 1.5, 100.], np.float32), build=H, **jit_only)),
      ("mean_error_ratio", lambda: check(
          lambda lib: lambda e: ODE[lib].mean_error_ratio(e, 1e-3, 1e-6, y0, y1),
          np.array([1e-4, -3e-4], np.float32), build=H, **jit_only)),
      ("abs2 complex", lambda: check(lambda lib: ODE[lib].abs2,
                                     np.array([1 + 2j, -3j], np.complex64),
                                     build=H, **jit_only)),
      ("interp_fit_dopri", lambda: check(
          lambda lib: ODE[lib].interp_fit_dopri, y0, y1, k, dt,
          build=H, tol=1e-6, **jit_only)),
      ("runge_kutta_step", lambda: check(
          lambda lib: lambda y, f, t0, h: ODE[lib].runge_kutta_step(lambda y, t: -y * t,
                                                                    y, f, t0, h),
          y0, -y0, np.float32(0.5), dt, build=H, tol=1e-6, **jit_only)),
      ("initial_step_size", lambda: check(
          lambda lib: lambda y, f: ODE[lib].initial_step_size(lambda y, t: -y, 0., y, 4,
                                                              1e-6, 1e-6, f),
          y0, -y0, build=H, tol=1e-6, **jit_only)),
  ])
  a = aode.fit_4th_order_polynomial(*map(anp.asarray, (y0, y1, y0, y1, y0)), anp.float32(.1))
  j = jode.fit_4th_order_polynomial(*map(jnp.asarray, (y0, y1, y0, y1, y0)), jnp.float32(.1))
  assert_same(a, j, tol=1e-6)
  flat = aode.ravel_first_arg(lambda y, s: {"a": y["a"] * s}, lambda v: {"a": v})
  assert_same(flat(anp.arange(3.), 2.), anp.arange(3.) * 2)
