"""arrax.scipy.optimize: `minimize` with BFGS, jit-able (everything is a `while_loop`).

BFGS keeps a dense inverse-Hessian estimate H; each step searches along -H g with a line search
satisfying the strong Wolfe conditions (Nocedal & Wright, algorithms 3.5 and 3.6: bracketing by
doubling, then zooming with cubic, quadratic or bisection trial steps), then applies the BFGS
rank-two update. The arithmetic follows JAX's, so iterates agree.
"""
from __future__ import annotations

from functools import partial
from typing import NamedTuple

import numpy as np

from arrax._src import dtypes
from arrax._src.ad_api import value_and_grad
from arrax._src.lax.control_flow.while_loop import while_loop
from arrax._src.lax.dot import Precision
from arrax._src.numpy import creation, lax_numpy, ufuncs
from arrax._src.numpy import einsum as np_einsum
from arrax._src.numpy import linalg as jnp_linalg
from arrax._src.numpy.util import promote_dtypes_inexact

_dot = partial(lax_numpy.dot, precision=Precision.HIGHEST)


class OptimizeResults(NamedTuple):
  """The result of `minimize`: the solution x, success flag and status code (0 converged,
  1 maximum iterations, 2+ line search failure), the value and gradient at x, the inverse
  Hessian estimate, and the counts of function and gradient evaluations and iterations."""
  x: object
  success: object
  status: object
  fun: object
  jac: object
  hess_inv: object
  nfev: object
  njev: object
  nit: object


def _pick(flag, old, new, keys=None):
  """old with the entries `keys` (default: all of new's) replaced by new's where flag."""
  keys = new.keys() if keys is None else keys
  return {**old, **{k: lax_numpy.where(flag, new[k], old[k]) for k in keys}}


# ---- line search -------------------------------------------------------------------------------
def _cubic_min(a, fa, fpa, b, fb, c, fc):
  """The minimizer of the cubic through (a, fa) with slope fpa, (b, fb) and (c, fc)."""
  dtype = dtypes.result_type(a, fa, fpa, b, fb, c, fc)
  db, dc = b - a, c - a
  denom = (db * dc) ** 2 * (db - dc)
  m = creation.array([[dc ** 2, -db ** 2], [-dc ** 3, db ** 3]], dtype=dtype)
  rhs = creation.array([fb - fa - fpa * db, fc - fa - fpa * dc], dtype=dtype)
  ca, cb = _dot(m, rhs) / denom
  return a + (-cb + ufuncs.sqrt(cb * cb - 3. * ca * fpa)) / (3. * ca)


def _quad_min(a, fa, fpa, b, fb):
  """The minimizer of the quadratic through (a, fa) with slope fpa and (b, fb)."""
  db = b - a
  curv = (fb - fa - fpa * db) / (db ** 2)
  return a - fpa / (2. * curv)


def _zoom(phi_grad, wolfe1, wolfe2, a_lo, phi_lo, dphi_lo, a_hi, phi_hi, dphi_hi, g_0, skip):
  """Shrink [a_lo, a_hi] until a step satisfies both Wolfe conditions (or give up)."""
  s = dict(done=False, failed=False, j=0, a_lo=a_lo, phi_lo=phi_lo, dphi_lo=dphi_lo,
           a_hi=a_hi, phi_hi=phi_hi, dphi_hi=dphi_hi, a_rec=(a_lo + a_hi) / 2.,
           phi_rec=(phi_lo + phi_hi) / 2., a_star=1., phi_star=phi_lo, dphi_star=dphi_lo,
           g_star=g_0, nfev=0, ngev=0)

  def body(s):
    width = s["a_hi"] - s["a_lo"]
    lo, hi = ufuncs.minimum(s["a_hi"], s["a_lo"]), ufuncs.maximum(s["a_hi"], s["a_lo"])
    cubic_margin, quad_margin = 0.2 * width, 0.1 * width
    threshold = lax_numpy.where(dtypes.finfo(width.dtype).bits < 64, 1e-5, 1e-10)
    s = {**s, "failed": s["failed"] | (width <= threshold)}
    a_cubic = _cubic_min(s["a_lo"], s["phi_lo"], s["dphi_lo"], s["a_hi"], s["phi_hi"],
                         s["a_rec"], s["phi_rec"])
    use_cubic = (s["j"] > 0) & (a_cubic > lo + cubic_margin) & (a_cubic < hi - cubic_margin)
    a_quad = _quad_min(s["a_lo"], s["phi_lo"], s["dphi_lo"], s["a_hi"], s["phi_hi"])
    use_quad = (~use_cubic) & (a_quad > lo + quad_margin) & (a_quad < hi - quad_margin)
    use_bisect = (~use_cubic) & (~use_quad)
    a_j = lax_numpy.where(use_cubic, a_cubic, s["a_rec"])
    a_j = lax_numpy.where(use_quad, a_quad, a_j)
    a_j = lax_numpy.where(use_bisect, (s["a_lo"] + s["a_hi"]) / 2., a_j)
    phi_j, dphi_j, g_j = phi_grad(a_j)
    phi_j = phi_j.astype(s["phi_lo"].dtype)
    dphi_j = dphi_j.astype(s["dphi_lo"].dtype)
    g_j = g_j.astype(s["g_star"].dtype)
    s = {**s, "nfev": s["nfev"] + 1, "ngev": s["ngev"] + 1}
    hi_to_j = wolfe1(a_j, phi_j) | (phi_j >= s["phi_lo"])
    star_to_j = wolfe2(dphi_j) & (~hi_to_j)
    hi_to_lo = (dphi_j * (s["a_hi"] - s["a_lo"]) >= 0.) & (~hi_to_j) & (~star_to_j)
    lo_to_j = (~hi_to_j) & (~star_to_j)
    s = _pick(hi_to_j, s, dict(a_hi=a_j, phi_hi=phi_j, dphi_hi=dphi_j, a_rec=s["a_hi"],
                               phi_rec=s["phi_hi"]))
    s = {**_pick(star_to_j, s, dict(a_star=a_j, phi_star=phi_j, dphi_star=dphi_j,
                                    g_star=g_j)),
         "done": star_to_j | s["done"]}
    s = _pick(hi_to_lo, s, dict(a_hi=s["a_lo"], phi_hi=s["phi_lo"], dphi_hi=s["dphi_lo"],
                                a_rec=s["a_hi"], phi_rec=s["phi_hi"]))
    s = _pick(lo_to_j & ~hi_to_lo, s, dict(a_rec=s["a_lo"], phi_rec=s["phi_lo"]))
    s = _pick(lo_to_j, s, dict(a_lo=a_j, phi_lo=phi_j, dphi_lo=dphi_j))
    j = s["j"] + 1
    return {**s, "j": j, "failed": s["failed"] | (j >= 30)}

  return while_loop(lambda s: (~s["done"]) & (~skip) & (~s["failed"]), body, s)


class _LineSearch(NamedTuple):
  failed: object
  nit: object
  nfev: object
  ngev: object
  k: object
  a_k: object
  f_k: object
  g_k: object
  status: object


def _line_search(f, xk, pk, old_fval, old_old_fval, gfk, c1=1e-4, c2=0.9, maxiter=20):
  """A step a along pk from xk satisfying the strong Wolfe conditions."""
  xk, pk = promote_dtypes_inexact(xk, pk)

  def phi_grad(t):
    t = creation.array(t, dtype=pk.dtype)
    phi, g = value_and_grad(f)(xk + t * pk)
    return phi, ufuncs.real(_dot(g, pk)), g

  phi_0 = old_fval
  dphi_0 = ufuncs.real(_dot(gfk, pk))
  first = 1.01 * 2 * (phi_0 - old_old_fval) / dphi_0
  start = lax_numpy.where(first > 1, 1.0, first)

  def wolfe1(a, phi):   # sufficient decrease
    return phi > phi_0 + c1 * a * dphi_0

  def wolfe2(dphi):     # curvature
    return ufuncs.abs(dphi) <= -c2 * dphi_0

  s = dict(done=creation.array(False, dtype=bool), failed=creation.array(False, dtype=bool),
           i=1, a_i1=0., phi_i1=phi_0, dphi_i1=dphi_0, nfev=0, ngev=0, a_star=0.,
           phi_star=phi_0, dphi_star=dphi_0, g_star=gfk)
  star_keys = ["a_star", "phi_star", "dphi_star", "g_star"]

  def body(s):
    a_i = lax_numpy.where(s["i"] == 1, start, s["a_i1"] * 2.)
    phi_i, dphi_i, g_i = phi_grad(a_i)
    s = {**s, "nfev": s["nfev"] + 1, "ngev": s["ngev"] + 1}
    to_zoom1 = wolfe1(a_i, phi_i) | ((phi_i >= s["phi_i1"]) & (s["i"] > 1))
    to_i = wolfe2(dphi_i) & (~to_zoom1)
    to_zoom2 = (dphi_i >= 0.) & (~to_zoom1) & (~to_i)
    z1 = _zoom(phi_grad, wolfe1, wolfe2, s["a_i1"], s["phi_i1"], s["dphi_i1"], a_i, phi_i,
               dphi_i, gfk, ~to_zoom1)
    s = {**s, "nfev": s["nfev"] + z1["nfev"], "ngev": s["ngev"] + z1["ngev"]}
    z2 = _zoom(phi_grad, wolfe1, wolfe2, a_i, phi_i, dphi_i, s["a_i1"], s["phi_i1"],
               s["dphi_i1"], gfk, ~to_zoom2)
    s = {**s, "nfev": s["nfev"] + z2["nfev"], "ngev": s["ngev"] + z2["ngev"]}
    s = {**_pick(to_zoom1, s, z1, star_keys), "done": to_zoom1 | s["done"],
         "failed": (to_zoom1 & z1["failed"]) | s["failed"]}
    s = {**_pick(to_i, s, dict(a_star=a_i, phi_star=phi_i, dphi_star=dphi_i, g_star=g_i)),
         "done": to_i | s["done"]}
    s = {**_pick(to_zoom2, s, z2, star_keys), "done": to_zoom2 | s["done"],
         "failed": (to_zoom2 & z2["failed"]) | s["failed"]}
    return {**s, "i": s["i"] + 1, "a_i1": a_i, "phi_i1": phi_i, "dphi_i1": dphi_i}

  s = while_loop(lambda s: (~s["done"]) & (s["i"] <= maxiter) & (~s["failed"]), body, s)
  status = lax_numpy.where(s["failed"], creation.array(1),
                           lax_numpy.where(s["i"] > maxiter, creation.array(3),
                                           creation.array(0)))
  a_k = creation.asarray(s["a_star"])
  # Below 64 bits a tiny step is raised to 1e-8 (keeping its sign), as JAX does.
  a_k = lax_numpy.where((dtypes.finfo(a_k.dtype).bits != 64) & (ufuncs.abs(a_k) < 1e-8),
                        ufuncs.sign(a_k) * 1e-8, a_k)
  return _LineSearch(failed=s["failed"] | (~s["done"]), nit=s["i"] - 1, nfev=s["nfev"],
                     ngev=s["ngev"], k=s["i"], a_k=a_k, f_k=s["phi_star"], g_k=s["g_star"],
                     status=status)


# ---- BFGS --------------------------------------------------------------------------------------
def _bfgs(fun, x0, maxiter=None, norm=np.inf, gtol=1e-5, line_search_maxiter=10):
  if maxiter is None:
    maxiter = np.size(x0) * 200
  d = x0.shape[0]
  f_0, g_0 = value_and_grad(fun)(x0)
  s = dict(converged=jnp_linalg.norm(g_0, ord=norm) < gtol, failed=False, k=0, nfev=1, ngev=1,
           nhev=0, x_k=x0, f_k=f_0, g_k=g_0, H_k=creation.eye(d, dtype=x0.dtype),
           old_old_fval=f_0 + jnp_linalg.norm(g_0) / 2, status=0, line_search_status=0)

  def body(s):
    p_k = -_dot(s["H_k"], s["g_k"])
    ls = _line_search(fun, s["x_k"], p_k, old_fval=s["f_k"], old_old_fval=s["old_old_fval"],
                      gfk=s["g_k"], maxiter=line_search_maxiter)
    s = {**s, "nfev": s["nfev"] + ls.nfev, "ngev": s["ngev"] + ls.ngev, "failed": ls.failed,
         "line_search_status": ls.status}
    step = ls.a_k * p_k
    y_k = ls.g_k - s["g_k"]
    rho = ufuncs.reciprocal(_dot(y_k, step))
    w = creation.eye(d, dtype=rho.dtype) - rho * (step[:, np.newaxis] * y_k[np.newaxis, :])
    h_new = (np_einsum.einsum("ij,jk,lk", w, s["H_k"], w, precision=Precision.HIGHEST)
             + rho * step[:, np.newaxis] * step[np.newaxis, :])
    h_new = lax_numpy.where(ufuncs.isfinite(rho), h_new, s["H_k"])
    return {**s, "converged": jnp_linalg.norm(ls.g_k, ord=norm) < gtol, "k": s["k"] + 1,
            "x_k": s["x_k"] + step, "f_k": ls.f_k, "g_k": ls.g_k, "H_k": h_new,
            "old_old_fval": s["f_k"]}

  s = while_loop(lambda s: (~s["converged"]) & (~s["failed"]) & (s["k"] < maxiter), body, s)
  status = lax_numpy.where(s["converged"], 0, lax_numpy.where(
      s["k"] == maxiter, 1, lax_numpy.where(s["failed"], 2 + s["line_search_status"], -1)))
  return {**s, "status": status}


def minimize(fun, x0, args=(), *, method, tol=None, options=None):
  """Minimize fun(x, *args) over a 1-D x from x0; method='BFGS' (options: maxiter, norm, gtol,
  line_search_maxiter). Returns OptimizeResults."""
  options = {} if options is None else options
  if not isinstance(args, tuple):
    raise TypeError("args argument to jax.scipy.optimize.minimize must be a tuple, got "
                    f"{args}")
  if method.lower() == "bfgs":
    r = _bfgs(lambda x: fun(x, *args), x0, **options)
    return OptimizeResults(x=r["x_k"], success=r["converged"] & ufuncs.logical_not(r["failed"]),
                           status=r["status"], fun=r["f_k"], jac=r["g_k"], hess_inv=r["H_k"],
                           nfev=r["nfev"], njev=r["ngev"], nit=r["k"])
  raise ValueError(f"Method {method} not recognized")
