"""Loops: the `scan` primitive and the APIs built on it and on `while` (fori_loop, scan, map,
associative_scan).

`scan_p` operands are (*consts, *carry, *xs); params `jaxpr` (consts, carry, x slices ->
carry, y slices), `length`, `reverse`, `unroll`, `num_consts`, `num_carry`. It lowers, like
JAX's, to a `while` written with lax operations (`_scan_impl`), unrolled `unroll` times.

Its transformation rules follow JAX's: the JVP is a scan of the body's JVP (tangents of consts,
carries and xs become extra consts, carries and xs); partial evaluation splits it into a known
scan, which also stacks the per-step residuals as extra ys (loop-invariant ones are hoisted out
of the loop instead), and an unknown scan reading them as extra xs; the transpose is a scan of
the transposed body run in the other direction, accumulating the cotangents of the linear
consts in its carry; batching is a scan of the batched body (xs batched at axis 1).
"""
from __future__ import annotations

import operator
import weakref

import numpy as np

from arrax._src import ad, batching, core, dtypes
from arrax._src.config import config
from arrax._src.core import ClosedJaxpr, Jaxpr, ShapedArray, Tracer
from arrax._src.errors import ConcretizationTypeError
from arrax._src.lax import elementwise as lax, reductions, shape_ops
from arrax._src.lax.control_flow import common
from arrax._src.lax.control_flow.while_loop import _weak_promotions, while_loop, while_p
from arrax._src.tree_util import tree_flatten, tree_map, tree_unflatten

__all__ = ["while_loop", "fori_loop", "scan", "map", "associative_scan", "while_p", "scan_p"]


# ---- fori_loop --------------------------------------------------------------------------------
_fori_scan_bodies: weakref.WeakKeyDictionary = core.register_cache(weakref.WeakKeyDictionary())
_fori_while_bodies: weakref.WeakKeyDictionary = core.register_cache(weakref.WeakKeyDictionary())


def _wrapper(cache, body_fun, make):
  # One wrapper per body function, so repeated loops reuse traces and executables.
  try:
    w = cache.get(body_fun)
  except TypeError:
    return make(lambda: body_fun)
  if w is None:
    ref = weakref.ref(body_fun)
    w = cache[body_fun] = make(ref)
  return w


def _make_fori_scan_body(ref):
  def scanned(loop_carry, _):   # (JAX's parameter name, which carry errors show)
    i, x = loop_carry
    return (lax.add(i, _one_like(i)), ref()(i, x)), None
  return scanned


def _make_fori_while_body(ref):
  def body(loop_carry):
    i, upper, x = loop_carry
    return lax.add(i, _one_like(i)), upper, ref()(i, x)
  return body


def _fori_cond(carry):
  return lax.lt(carry[0], carry[1])


def _one_like(i):
  dt, weak = dtypes.dtype_and_weak_type(i)
  return lax.scalar_literal(1, dt, weak)


def fori_loop(lower, upper, body_fun, init_val, *, unroll=None):
  """Run `val = body_fun(i, val)` for i in range(lower, upper); return the final `val`.

  With concrete bounds the loop is a `scan` (reverse-differentiable, `unroll` allowed);
  with traced bounds it is a `while_loop`.

  Example:
    >>> lax.fori_loop(0, 5, lambda i, x: x + i, 0)
    Array(10, dtype=int32, weak_type=True)
  """
  if not callable(body_fun):
    raise TypeError("lax.fori_loop: body_fun argument should be callable.")
  lower_dtype, lower_weak = dtypes.dtype_and_weak_type(lower)
  upper_dtype, upper_weak = dtypes.dtype_and_weak_type(upper)
  dtype = lower_dtype if lower_dtype == upper_dtype else None
  if dtype is None and lower_dtype.kind == "i" and upper_dtype.kind == "i":
    if lower_weak and not upper_weak:
      dtype = upper_dtype
    elif upper_weak and not lower_weak:
      dtype = lower_dtype
  if dtype is None:
    raise TypeError("lower and upper arguments to fori_loop must have equal types, got "
                    f"{lower_dtype.name} and {upper_dtype.name}")
  use_scan = False
  if not isinstance(lower, Tracer) and not isinstance(upper, Tracer):
    try:
      lower_, upper_ = int(lower), int(upper)
      use_scan = True
    except TypeError:
      pass
  if use_scan:
    length = max(upper_ - lower_, 0)
    if config.jax_disable_jit and length == 0:
      return init_val
    body = _wrapper(_fori_scan_bodies, body_fun, _make_fori_scan_body)
    (_, result), _ = scan(body, (lower_, init_val), None, length=length,
                          unroll=False if unroll is None else unroll)
    return result
  if unroll is not None and unroll is not False and unroll != 1:
    raise ValueError("Can only use `unroll` in `fori_loop` if the loop bounds are statically "
                     "known.")
  if lower_dtype != dtype:
    lower = lax.convert_element_type(lower, dtype)
  if upper_dtype != dtype:
    upper = lax.convert_element_type(upper, dtype)
  body = _wrapper(_fori_while_bodies, body_fun, _make_fori_while_body)
  _, _, result = while_loop(_fori_cond, body, (lower, upper, init_val))
  return result


# ---- scan: the primitive ----------------------------------------------------------------------
scan_p = core.Primitive("scan")
scan_p.multiple_results = True


def _scan_abstract_eval(*avals, reverse, length, jaxpr, num_consts, num_carry, unroll):
  if len(avals) != len(jaxpr.in_avals):
    raise TypeError(f"scan: jaxpr takes {len(jaxpr.in_avals)} inputs but got {len(avals)}")
  consts, carry, xs = common.split_list(avals, [num_consts, num_carry])
  for x, a in zip(xs, jaxpr.in_avals[num_consts + num_carry:]):
    if x.shape[:1] != (length,) or not common.typematch(a, x.update(shape=x.shape[1:])):
      raise TypeError(f"scan: scanned operand {x.str_short()} does not match the body's "
                      f"slice type {a.str_short()} with length {length}")
  carry_out, ys = common.split_list(jaxpr.out_avals, [num_carry])
  if not common.all_typematch(carry, carry_out):
    raise TypeError(f"scan: the body maps carry ({common.avals_str(carry)}) to "
                    f"({common.avals_str(carry_out)})")
  return carry_out + [y.update(shape=(length, *y.shape)) for y in ys]


def _scan_impl(*args, reverse, length, jaxpr, num_consts, num_carry, unroll):
  """scan in lax operations: a while loop running `unroll` steps per iteration (the leftover
  steps, or all of them when fully unrolled, run straight-line after it)."""
  consts, carry, xs = common.split_list(args, [num_consts, num_carry])
  all_y_avals = jaxpr.out_avals[num_carry:]
  # float0 outputs (integer inputs' cotangents) hold no data: no buffer, zeros at the end
  is_f0 = [a.dtype == dtypes.float0 for a in all_y_avals]
  y_avals = [a for a, f in zip(all_y_avals, is_f0) if not f]
  ys = [shape_ops.broadcast_in_dim(lax.scalar_literal(0, a.dtype), (length, *a.shape), ())
        for a in y_avals]
  if core.vma_state.axes is not None:   # (buffers vary as the ys they hold, as JAX's)
    ys = [core.vma_hooks["cast"](b, a.vma) for b, a in zip(ys, y_avals)]

  def step(s, carry, ys):
    # s counts steps (a Python int or an int32 tracer); step s handles element `idx`.
    if isinstance(s, int):
      idx = length - 1 - s if reverse else s
    else:
      idx = lax.sub(np.int32(length - 1), s) if reverse else s
    x = [_index(x, idx) for x in xs]
    outs = core.eval_jaxpr(jaxpr.jaxpr, jaxpr.consts, *consts, *carry, *x)
    new_carry, y = outs[:num_carry], outs[num_carry:]
    y = [v for v, f in zip(y, is_f0) if not f]
    return new_carry, [_update(b, v, idx) for b, v in zip(ys, y)]

  per_trip = unroll if unroll > 0 else max(length, 1)
  trips = length // per_trip
  if trips == 1 and unroll != 1:
    trips = 0   # fully unrolled: no loop at all
  if trips:
    def body(state):
      t, carry, ys = state
      for k in range(per_trip):
        s = lax.add(lax.mul(t, np.int32(per_trip)), np.int32(k))
        carry, ys = step(s, carry, ys)
      return lax.add(t, np.int32(1)), carry, ys
    _, carry, ys = while_loop(lambda st: lax.lt(st[0], np.int32(trips)), body,
                              (np.int32(0), list(carry), ys))
  for s in range(trips * per_trip, length):
    carry, ys = step(s, carry, ys)
  it = iter(ys)
  return [*carry, *(np.zeros((length, *a.shape), dtypes.float0) if f else next(it)
                    for a, f in zip(all_y_avals, is_f0))]


def _index(x, idx):
  aval = core.get_aval(x)
  if isinstance(idx, int):
    return shape_ops.index_in_dim(x, idx, 0, keepdims=False)
  starts = [idx] + [np.int32(0)] * (aval.ndim - 1)
  out = shape_ops.dynamic_slice(x, starts, (1, *aval.shape[1:]), allow_negative_indices=False)
  return shape_ops.squeeze(out, (0,))


def _update(buf, y, idx):
  aval = core.get_aval(buf)
  if isinstance(idx, int):
    idx = np.int32(idx)
  starts = [idx] + [np.int32(0)] * (aval.ndim - 1)
  y = shape_ops.broadcast_in_dim(y, (1, *aval.shape[1:]), tuple(range(1, aval.ndim)))
  return shape_ops.dynamic_update_slice(buf, y, starts, allow_negative_indices=False)


scan_p.def_abstract_eval(_scan_abstract_eval)
scan_p.def_lowering(common.lower_fun(_scan_impl))


# ---- scan: transformation rules ---------------------------------------------------------------
def _permute(closed, in_order, out_order=None) -> ClosedJaxpr:
  """`closed` with its binders (and outputs) reordered: new binder i is old `in_order[i]`."""
  j = closed.jaxpr
  outvars = j.outvars if out_order is None else [j.outvars[i] for i in out_order]
  return ClosedJaxpr(Jaxpr(j.constvars, [j.invars[i] for i in in_order], outvars, j.eqns,
                           j.debug_info), closed.consts)


def _or(xs, ys):
  return [x or y for x, y in zip(xs, ys)]


def _fixpoint(n_carry, carry_in, step):
  """Grow the flags of the carries (nonzero / unknown / batched) until the body maps them to
  themselves; `step(carry_flags)` returns (result, carry_out_flags). At most n_carry rounds."""
  for _ in range(n_carry + 1):
    result, carry_out = step(carry_in)
    if list(carry_out) == list(carry_in):
      return result, carry_in
    carry_in = _or(carry_in, carry_out)
  raise AssertionError("scan: carry fixed point not reached")


# JVP: the scan of the body's JVP, tangents after their primals in each group.
def _scan_jvp(primals, tangents, *, reverse, length, jaxpr, num_consts, num_carry, unroll):
  nz = tuple(type(t) is not ad.Zero for t in tangents)
  # Derived jaxprs are memoized, so transforming the same scan again (eager grad in a Python
  # loop) reuses them and their compiled executables.
  body, carry_nz, out_nz = core.memo(
      (jaxpr,), ("jvp", num_consts, num_carry, nz),
      lambda: _jvp_body(jaxpr, num_consts, num_carry, nz))
  consts, init, xs = common.split_list(primals, [num_consts, num_carry])
  c_dot, i_dot, x_dot = common.split_list(tangents, [num_consts, num_carry])
  c_dot = [t for t in c_dot if type(t) is not ad.Zero]
  x_dot = [t for t in x_dot if type(t) is not ad.Zero]
  # A carry whose tangent the body makes nonzero starts from an instantiated zero.
  i_dot = [ad.tangent_zeros(t.aval) if type(t) is ad.Zero else t
           for t, n in zip(i_dot, carry_nz) if n]
  outs = scan_p.bind(*consts, *c_dot, *init, *i_dot, *xs, *x_dot, reverse=reverse,
                     length=length, jaxpr=body, num_consts=num_consts + len(c_dot),
                     num_carry=num_carry + len(i_dot), unroll=unroll)
  n_ys = len(jaxpr.out_avals) - num_carry
  carry, carry_dot, ys, ys_dot = common.split_list(outs, [num_carry, len(i_dot), n_ys])
  p_out = carry + ys
  t_it = iter(carry_dot + ys_dot)
  return p_out, [next(t_it) if n else ad.Zero(ad.tangent_aval(core.get_aval(p)))
                 for p, n in zip(p_out, out_nz)]


def _jvp_body(jaxpr, num_consts, num_carry, nz):
  """(jvp body in scan layout, carry_nonzero, out_nonzero)."""
  const_nz, init_nz, xs_nz = common.split_list(list(nz), [num_consts, num_carry])
  n_ys = len(jaxpr.out_avals) - num_carry

  def step(carry_nz):
    closed, out_nz = ad.jvp_jaxpr(jaxpr, const_nz + carry_nz + xs_nz,
                                  instantiate=carry_nz + [False] * n_ys)
    return (closed, out_nz), out_nz[:num_carry]
  (closed, out_nz), carry_nz = _fixpoint(num_carry, init_nz, step)
  # jvp_jaxpr's layout: (consts, carry, xs, tangents...) -> (carry, ys, tangents...); scan's
  # puts each group's tangents right after its primals.
  n_in, n_out = len(jaxpr.in_avals), len(jaxpr.out_avals)
  p_c, p_k, p_x = common.split_list(list(range(n_in)), [num_consts, num_carry])
  t_c, t_k, t_x = common.split_list(list(range(n_in, n_in + sum(const_nz + carry_nz + xs_nz))),
                         [sum(const_nz), sum(carry_nz)])
  p_kout, p_y = common.split_list(list(range(n_out)), [num_carry])
  t_kout, t_y = common.split_list(list(range(n_out, n_out + sum(out_nz))), [sum(carry_nz)])
  in_order = p_c + t_c + p_k + t_k + p_x + t_x
  out_order = p_kout + t_kout + p_y + t_y
  return _permute(closed, in_order, out_order), carry_nz, out_nz


# Partial evaluation (linearize / grad): a known scan run now and an unknown scan recorded.
class _PePlan:
  """How a scan with given unknown operands splits (depends only on types, so memoized).

  known:   the known scan's body: (consts, known carry, known xs) -> (known carry, known ys,
           stacked residuals); its consts are the known ones, or what `hoist` makes of them
  hoist:   None, or a jaxpr run once before the loop: (known consts) -> (hoisted residuals,
           values the known body reads as consts); `hoist_fwd` says which of the latter are
           known consts themselves (their index) rather than its outputs
  unknown: the unknown scan's body: (intensive residuals, unknown consts, unknown carry,
           unknown xs, extensive residuals) -> (unknown carry, unknown ys)
  int_src / ext_src: where each intensive / extensive residual comes from: ("const", i),
           ("hoist", i), ("xs", i) or ("ext", i) (the i-th stacked residual of the known scan).
  """
  __slots__ = ("known", "hoist", "hoist_fwd", "unknown", "int_src", "ext_src", "carry_uk",
               "out_uk", "n_known_out")


def _pe_plan(jaxpr, num_consts, num_carry, unknowns):
  const_uk, init_uk, xs_uk = common.split_list(list(unknowns), [num_consts, num_carry])
  n_ys = len(jaxpr.out_avals) - num_carry

  def step(carry_uk):
    split = ad.partial_eval_jaxpr(jaxpr, const_uk + carry_uk + xs_uk,
                                  instantiate=carry_uk + [False] * n_ys)
    return split, split[2][:num_carry]
  (known, unknown, out_uk, res_fwd), carry_uk = _fixpoint(num_carry, init_uk, step)
  n_kc, n_kk = num_consts - sum(const_uk), num_carry - sum(carry_uk)
  n_kout = len(out_uk) - sum(out_uk)
  known, unknown, res_fwd = _dce_split(known, unknown, res_fwd, n_kout)
  kj = known.jaxpr
  # Residuals forwarded from known consts or xs are passed as they are; one forwarded from a
  # known carry changes every step, so the known scan stacks it like the others.
  res_it = iter(kj.outvars[n_kout:])
  res_out, src = [], []
  for f in res_fwd:
    if f is None or n_kc <= f < n_kc + n_kk:
      src.append(("out", len(res_out)))
      res_out.append(next(res_it) if f is None else kj.invars[f])
    elif f < n_kc:
      src.append(("const", f))
    else:
      src.append(("xs", f - n_kc - n_kk))
  known = ClosedJaxpr(Jaxpr(kj.constvars, kj.invars, kj.outvars[:n_kout] + res_out, kj.eqns,
                            kj.debug_info), known.consts)
  plan = _PePlan()
  plan.carry_uk, plan.out_uk, plan.n_known_out = carry_uk, out_uk, n_kout
  plan.hoist = plan.hoist_fwd = None
  if n_kc and not core.jaxpr_has_effects(known.jaxpr):
    known, src = _hoist(plan, known, n_kc, n_kout, src)
  else:
    src = [("ext", i) if kind == "out" else (kind, i) for kind, i in src]
  plan.known = known
  # The unknown body takes (residuals in `src` order, unknown inputs); scan's layout wants
  # the intensive residuals first and the extensive ones last.
  n_res = len(src)
  ext = [s[0] in ("xs", "ext") for s in src]
  n_unk_in = len(unknown.in_avals) - n_res
  order = ([i for i in range(n_res) if not ext[i]] + list(range(n_res, n_res + n_unk_in))
           + [i for i in range(n_res) if ext[i]])
  plan.unknown = _permute(unknown, order)
  plan.int_src = [s for s, e in zip(src, ext) if not e]
  plan.ext_src = [s for s, e in zip(src, ext) if e]
  return plan


def _dce_split(known, unknown, res_fwd, n_kout):
  """Drop the work no output needs from both sides of a split (unused ys of nested scans, and
  the residuals only they read), as JAX's dead-code elimination does."""
  n_res = len(res_fwd)
  uj = unknown.jaxpr
  uj, used = core.dce_jaxpr(uj, [True] * len(uj.outvars), [False] * n_res + [True] * (
      len(uj.invars) - n_res))
  unknown = ClosedJaxpr(uj, unknown.consts)
  res_used = used[:n_res]
  kj = known.jaxpr
  out_it = iter(kj.outvars[n_kout:])
  res_out = [next(out_it) for f in res_fwd if f is None]
  keep_out = [u for f, u in zip(res_fwd, res_used) if f is None]
  outvars = kj.outvars[:n_kout] + [v for v, u in zip(res_out, keep_out) if u]
  kj, _ = core.dce_jaxpr(Jaxpr(kj.constvars, kj.invars, outvars, kj.eqns, kj.debug_info),
                    [True] * len(outvars), [True] * len(kj.invars))
  res_fwd = [f for f, u in zip(res_fwd, res_used) if u]
  return ClosedJaxpr(kj, known.consts), unknown, res_fwd


def _scan_dce(eqn, used):
  """The scan equation `eqn` computing only its `used` outputs (None when it can go), with a
  fixed point on the carries: a carry is kept when a kept output reads it."""
  if all(used):
    return eqn
  params = eqn.params
  body, nc, nk = params["jaxpr"], params["num_consts"], params["num_carry"]
  if not any(used) and not core.jaxpr_has_effects(body.jaxpr):
    return None
  n_xs = len(body.in_avals) - nc - nk
  used_ys = used[nk:]

  def step(used_carry):
    j, used_in = core.dce_jaxpr(body.jaxpr, used_carry + used_ys,
                           [False] * nc + used_carry + [False] * n_xs)
    return (j, used_in), used_in[nc:nc + nk]
  (j, used_in), used_carry = _fixpoint(nk, used[:nk], step)
  new_params = dict(params, jaxpr=ClosedJaxpr(j, body.consts), num_consts=sum(used_in[:nc]),
                    num_carry=sum(used_carry))
  return core.JaxprEqn([v for v, u in zip(eqn.invars, used_in) if u],
                       [v for v, u in zip(eqn.outvars, used_carry + used_ys) if u],
                       scan_p, new_params, eqn.source_info, eqn.traceback)


def _hoist(plan, known, n_kc, n_kout, src):
  """Move the work of the known body that depends on its consts only out of the loop (as JAX
  does): residuals computed that way are hoisted (intensive), not stacked `length` times."""
  n_in = len(known.in_avals)
  n_res_out = len(known.out_avals) - n_kout
  hoist, body, out_uk, fwd = ad.partial_eval_jaxpr(
      known, [False] * n_kc + [True] * (n_in - n_kc),
      instantiate=[True] * n_kout + [False] * n_res_out)
  # Residual output k is now the i-th hoisted value, or the i-th still computed per step.
  counts, where = {"hoist": 0, "ext": 0}, []
  for uk in out_uk[n_kout:]:
    kind = "ext" if uk else "hoist"
    where.append((kind, counts[kind]))
    counts[kind] += 1
  plan.hoist, plan.hoist_fwd = hoist, fwd
  return body, [where[i] if kind == "out" else (kind, i) for kind, i in src]


def _scan_partial_eval(trace, args, params):
  common.check_no_refs("scan", args)
  jaxpr, nc, nk = params["jaxpr"], params["num_consts"], params["num_carry"]
  unknowns = tuple(trace.is_unknown(a) for a in args)
  plan = core.memo((jaxpr,), ("pe", nc, nk, unknowns),
                             lambda: _pe_plan(jaxpr, nc, nk, unknowns))
  consts, init, xs = common.split_list(args, [nc, nk])
  const_uk, _, xs_uk = common.split_list(list(unknowns), [nc, nk])
  k_consts = [c for c, u in zip(consts, const_uk) if not u]
  k_init = [c for c, u in zip(init, plan.carry_uk) if not u]
  k_xs = [x for x, u in zip(xs, xs_uk) if not u]
  scan_params = {k: params[k] for k in ("reverse", "length", "unroll")}
  with core.set_current_trace(trace.parent):
    hoisted, body_consts = [], k_consts
    if plan.hoist is not None:
      h_outs = core.eval_jaxpr(plan.hoist.jaxpr, plan.hoist.consts, *k_consts)
      n_h = len(plan.hoist.out_avals) - sum(f is None for f in plan.hoist_fwd)
      hoisted, h_it = h_outs[:n_h], iter(h_outs[n_h:])
      body_consts = [next(h_it) if f is None else k_consts[f] for f in plan.hoist_fwd]
    known_outs = []
    if plan.known.out_avals:
      known_outs = scan_p.bind(*body_consts, *k_init, *k_xs, jaxpr=plan.known,
                               num_consts=len(body_consts), num_carry=len(k_init),
                               **scan_params)
  k_out, ext_res = known_outs[:plan.n_known_out], known_outs[plan.n_known_out:]
  pick = {"const": k_consts, "hoist": hoisted, "xs": k_xs, "ext": ext_res}
  int_res = [pick[s][i] for s, i in plan.int_src]
  ext_res = [pick[s][i] for s, i in plan.ext_src]
  u_consts = [c for c, u in zip(consts, const_uk) if u]
  u_init = [c for c, u in zip(init, plan.carry_uk) if u]
  u_xs = [x for x, u in zip(xs, xs_uk) if u]
  u_params = dict(scan_params, jaxpr=plan.unknown, num_consts=len(int_res) + len(u_consts),
                  num_carry=len(u_init))
  u_out = []
  if plan.unknown.out_avals:
    u_out = trace.record(scan_p,
                                         [*int_res, *u_consts, *u_init, *u_xs, *ext_res],
                                         u_params)
  k_it, u_it = iter(k_out), iter(u_out)
  return [next(u_it) if u else next(k_it) for u in plan.out_uk]


# Transpose: the scan of the transposed body, run in the other direction. Its consts are the
# non-linear consts (residuals); its carry the cotangents of the linear consts (accumulated
# from zeros) and of the carry; its xs the cotangents of the ys and the non-linear xs.
def _scan_transpose(cts, *args, reverse, length, jaxpr, num_consts, num_carry, unroll):
  consts, init, xs = common.split_list(args, [num_consts, num_carry])
  const_lin = tuple(ad.is_undefined(c) for c in consts)
  xs_lin = tuple(ad.is_undefined(x) for x in xs)
  ct_carry, ct_ys = cts[:num_carry], cts[num_carry:]
  ys_nz = tuple(type(ct) is not ad.Zero for ct in ct_ys)
  body = core.memo(
      (jaxpr,), ("transpose", num_consts, num_carry, const_lin, xs_lin, ys_nz),
      lambda: _transpose_body(jaxpr, num_consts, num_carry, const_lin, xs_lin, ys_nz))
  ires = [c for c, lin in zip(consts, const_lin) if not lin]
  eres = [x for x, lin in zip(xs, xs_lin) if not lin]
  ct_consts = [ad.zeros_like_aval(ad.tangent_aval(c.aval)) for c, lin in zip(consts, const_lin)
               if lin]
  # Carry cotangents are carried values: symbolic zeros become real ones.
  ct_carry = [_instantiate_as(ct, ad.tangent_aval(a))
              for ct, a in zip(ct_carry, jaxpr.out_avals[:num_carry])]
  ct_ys = [ct for ct in ct_ys if type(ct) is not ad.Zero]
  outs = scan_p.bind(*ires, *ct_consts, *ct_carry, *ct_ys, *eres, reverse=not reverse,
                     length=length, jaxpr=body,
                     num_consts=len(ires), num_carry=len(ct_consts) + num_carry, unroll=unroll)
  ct_c, ct_init, ct_x = common.split_list(outs, [len(ct_consts), num_carry])
  c_it, x_it = iter(ct_c), iter(ct_x)
  return ([next(c_it) if lin else None for lin in const_lin]
          + [ct if ad.is_undefined(a) else None for a, ct in zip(init, ct_init)]
          + [next(x_it) if lin else None for lin in xs_lin])


def _transpose_body(jaxpr, num_consts, num_carry, const_lin, xs_lin, ys_nz):
  c_avals, k_avals, x_avals = common.split_list(jaxpr.in_avals, [num_consts, num_carry])
  y_avals = jaxpr.out_avals[num_carry:]
  tan = ad.tangent_aval
  groups = [[a for a, lin in zip(c_avals, const_lin) if not lin],
            [tan(a) for a, lin in zip(c_avals, const_lin) if lin],
            [tan(a) for a in jaxpr.out_avals[:num_carry]],   # typed as JAX: by the carry out
            [tan(a) for a, nz in zip(y_avals, ys_nz) if nz],
            [a for a, lin in zip(x_avals, xs_lin) if not lin]]

  # As in JAX, the linear carry inputs take the type of their cotangents (the carry outputs'):
  # a carry whose weak type the body drops then needs no conversion back.
  j = _retype_invars(jaxpr.jaxpr, dict(zip(range(num_consts, num_consts + num_carry),
                                           groups[2])))
  k_avals = [v.aval for v in j.invars[num_consts:num_consts + num_carry]]
  with_consts_out = Jaxpr(j.constvars, j.invars, [v for v, lin in zip(j.invars, const_lin) if lin]
                          + j.outvars, j.eqns, j.debug_info)

  def transposed(*args):
    ires, ct_consts, ct_carry, ct_ys, eres = common.split_list(args, [len(g) for g in groups[:4]])
    ires_it, eres_it, ys_it = iter(ires), iter(eres), iter(ct_ys)
    # Carries are linear: every carry of a linear scan is a tangent (an instantiated zero
    # passed as a known value included).
    primals = ([ad.UndefinedPrimal(a) if lin else next(ires_it)
                for a, lin in zip(c_avals, const_lin)]
               + [ad.UndefinedPrimal(a) for a in k_avals]
               + [ad.UndefinedPrimal(a) if lin else next(eres_it)
                  for a, lin in zip(x_avals, xs_lin)])
    cts_out = list(ct_carry) + [next(ys_it) if nz else ad.Zero(tan(a))
                                for a, nz in zip(y_avals, ys_nz)]
    # The accumulators enter as cotangents of extra outputs that return the linear consts
    # themselves, so each contribution is added to them as it is found (as JAX does).
    cts_in = ad.backward_pass(with_consts_out, jaxpr.consts, primals, list(ct_consts) + cts_out)
    ct_c, ct_k, ct_x = common.split_list(cts_in, [num_consts, num_carry])
    return ([ct for ct, lin in zip(ct_c, const_lin) if lin]
            + [_instantiate_as(ct, tan(a)) for ct, a in zip(ct_k, k_avals)]
            + [_instantiate_as(ct, tan(a)) for ct, a, lin in zip(ct_x, x_avals, xs_lin) if lin])
  return ad._trace_closed(transposed, [a for g in groups for a in g])


def _retype_invars(jaxpr, new_avals):
  """`jaxpr` with invar i (for i in `new_avals`) replaced by a variable of type new_avals[i]
  (the types may differ in weak type only)."""
  sub = {}
  for i, aval in new_avals.items():
    v = jaxpr.invars[i]
    if v.aval != aval:
      sub[v] = core.Var(aval)
  if not sub:
    return jaxpr
  eqns = [core.JaxprEqn([sub.get(v, v) if type(v) is core.Var else v for v in e.invars],
                        e.outvars, e.primitive, e.params, e.source_info, e.traceback) for e in jaxpr.eqns]
  return Jaxpr(jaxpr.constvars, [sub.get(v, v) for v in jaxpr.invars],
               [sub.get(v, v) if type(v) is core.Var else v for v in jaxpr.outvars], eqns,
               jaxpr.debug_info)


def _instantiate_as(ct, aval):
  return ad.zeros_like_aval(aval) if type(ct) is ad.Zero else ct


# Batching: the scan of the batched body; the carries batched in or out are batched in both.
def _scan_batch(axis_data, args, dims, *, reverse, length, jaxpr, num_consts, num_carry,
                unroll):
  const_b, init_b, xs_b = common.split_list([d is not None for d in dims], [num_consts, num_carry])
  n_ys = len(jaxpr.out_avals) - num_carry

  def step(carry_b):
    in_dims = [0 if b else None for b in const_b + carry_b + xs_b]
    batched, out_dims = batching.batch_jaxpr(jaxpr, axis_data, in_dims,
                                             list(carry_b) + [False] * n_ys)
    out_b = [d is not None for d in out_dims]
    return (batched, out_b), out_b[:num_carry]
  (body, out_b), carry_b = _fixpoint(num_carry, init_b, step)
  consts, init, xs = common.split_list(args, [num_consts, num_carry])
  c_dims, i_dims, x_dims = common.split_list(list(dims), [num_consts, num_carry])
  consts = [x if d is None else batching.moveaxis(x, d, 0) for x, d in zip(consts, c_dims)]
  init = [batching.matchaxis(d, 0, x, axis_data.size) if b else x
          for x, d, b in zip(init, i_dims, carry_b)]
  # Dimension 0 of xs is the scanned one: their batch axis goes right after it.
  xs = [x if d is None else batching.moveaxis(x, d, 1) for x, d in zip(xs, x_dims)]
  outs = scan_p.bind(*consts, *init, *xs, reverse=reverse, length=length, jaxpr=body,
                     num_consts=num_consts, num_carry=num_carry, unroll=unroll)
  return outs, ([0 if b else None for b in carry_b]
                + [1 if b else None for b in out_b[num_carry:]])


scan_p.def_jvp(_scan_jvp)
scan_p.def_partial_eval(_scan_partial_eval)
scan_p.def_transpose(_scan_transpose)
scan_p.def_batch_axis(_scan_batch)
scan_p.def_dce(_scan_dce)


# ---- scan -------------------------------------------------------------------------------------
def scan(f, init, xs=None, length=None, reverse=False, unroll=1, _split_transpose=False):
  """Loop `carry, y = f(carry, x)` over the leading axis of `xs`; return (carry, stacked ys).

  `init`, `xs` and the outputs may be pytrees; `xs=None` with `length` scans without inputs.
  `reverse` runs from the last element; `unroll` steps run per loop iteration (True: all).

  Example:
    >>> lax.scan(lambda c, x: (c + x, c), 0., jnp.arange(3.))
    (Array(3., dtype=float32), Array([0., 0., 1.], dtype=float32))
  """
  if not callable(f):
    raise TypeError("lax.scan: f argument should be a callable.")
  init_flat, init_tree = tree_flatten(init)
  xs_flat, _ = tree_flatten(xs)
  length = _infer_scan_length(xs_flat, length)
  if config.jax_disable_jit:
    return _scan_python(f, init, xs_flat, xs, length, reverse)
  unroll = _check_unroll(unroll, length)
  in_tree = tree_flatten((init, xs))[1]
  init_avals = tuple(core.get_aval(x) for x in init_flat)
  xs_avals = tuple(core.get_aval(x) for x in xs_flat)
  plan = core.memo((f,), ("scan", in_tree, init_tree, init_avals, xs_avals, length),
                       lambda: _scan_plan(f, in_tree, init_tree, init_avals, xs_avals))
  init_flat = [lax.convert_element_type(x, dt) if dt is not None else x
               for x, dt in zip(init_flat, plan.promote)]
  moved = [x for x, m in zip(init_flat, plan.move_to_const) if m]
  carry = [x for x, m in zip(init_flat, plan.move_to_const) if not m]
  consts = [*moved, *plan.consts]
  outs = scan_p.bind(*consts, *carry, *xs_flat, reverse=bool(reverse), length=length,
                     jaxpr=plan.jaxpr, num_consts=len(consts), num_carry=len(carry),
                     unroll=unroll)
  carry_out, ys = outs[:len(carry)], iter(outs[len(carry):])
  ys = [next(ys) if i is None else common.as_array(xs_flat[i]) for i in plan.ys_fwd]
  carry_out = common.merge_lists(plan.move_to_const, carry_out, moved)
  return tree_unflatten(plan.out_tree, [*carry_out, *ys])


class _ScanPlan:
  __slots__ = ("jaxpr", "consts", "promote", "move_to_const", "ys_fwd", "out_tree")


def _x_aval(a):
  """The aval of one slice of the scanned-over `a` (its type's sharding without axis 0, which
  must not be split, as in JAX)."""
  s = getattr(a, "sharding", None)
  if s is None:
    return a.update(shape=a.shape[1:])
  if s.spec[0] is not None:
    raise ValueError(f"0th dimension of all xs should be replicated. Got {s.spec}")
  return a.update(shape=a.shape[1:],
                  sharding=s.update(spec=type(s.spec)(*s.spec.partitions[1:])))


def _scan_plan(f, in_tree, init_tree, init_avals, xs_avals):
  x_avals = tuple(_x_aval(a) for a in xs_avals)
  traced, carry_tree, carry_avals = _trace_scan(f, in_tree, init_avals + x_avals)
  if carry_tree.num_leaves != len(init_avals):
    common.check_carry_type("scan body", f, init_tree, init_avals, carry_tree, carry_avals)
  promote = _weak_promotions(init_avals, carry_avals)
  if any(dt is not None for dt in promote):
    init_avals = tuple(a if dt is None else ShapedArray(a.shape, dt)
                       for a, dt in zip(init_avals, promote))
    traced, carry_tree, carry_avals = _trace_scan(f, in_tree, init_avals + x_avals)
  common.check_carry_type("scan body", f, init_tree, init_avals, carry_tree, carry_avals)
  n_consts, n_carry = len(traced.consts), len(init_avals)
  jaxpr = traced.jaxpr
  fwd = common.forwarding(jaxpr.jaxpr)
  carry_fwd, ys_fwd = fwd[:n_carry], fwd[n_carry:]
  # A carry the body returns unchanged is a const; a y that is its x is not stacked again.
  move = [n_consts + i == f for i, f in enumerate(carry_fwd)]
  n_ys = len(ys_fwd)
  if any(move):
    jaxpr = common.prune_outputs(jaxpr, [not m for m in move] + [True] * n_ys)
    jaxpr = common.move_binders_to_front(
        jaxpr, [False] * n_consts + move + [False] * len(x_avals))
  first_x = n_consts + n_carry
  ys_fwd = [f - first_x if f is not None and f >= first_x else None for f in ys_fwd]
  jaxpr = common.prune_outputs(jaxpr, [True] * (n_carry - sum(move))
                               + [f is None for f in ys_fwd])
  plan = _ScanPlan()
  plan.jaxpr, plan.consts, plan.promote, plan.move_to_const = jaxpr, traced.consts, promote, move
  plan.ys_fwd, plan.out_tree = ys_fwd, traced.out_tree
  return plan


def _trace_scan(f, in_tree, avals):
  traced = common.trace_body(f, in_tree, avals)
  out = common.leaves_like(traced.out_tree)
  if not isinstance(out, (tuple, list)) or len(out) != 2:
    shown = (traced.out_avals[0] if traced.out_tree.num_leaves == 1 and
             traced.out_tree.num_nodes == 1 else tree_unflatten(traced.out_tree,
                                                                traced.out_avals))
    raise TypeError(f"scan body output must be a pair, got {shown}.")
  carry_tree = traced.out_tree.children()[0]
  carry_avals = traced.out_avals[:carry_tree.num_leaves]
  return traced, carry_tree, carry_avals


def _infer_scan_length(xs_flat, length):
  try:
    lengths = [x.shape[0] for x in xs_flat]
  except AttributeError:
    bad = ", ".join(str(x) for x in xs_flat if not hasattr(x, "shape"))
    raise ValueError(f"scan got value with no leading axis to scan over: {bad}.") from None
  if length is not None:
    try:
      length = int(length)
    except (ConcretizationTypeError, TypeError):
      raise ConcretizationTypeError(
          length, "The `length` argument to `scan` expects a concrete `int` value. For "
          "scan-like iteration with a dynamic length, use `while_loop` or `fori_loop`.") from None
    if not all(length == n for n in lengths):
      raise ValueError(f"scan got `length` argument of {length} which disagrees with leading "
                       f"axis sizes {lengths}.")
    return length
  if len(set(lengths)) > 1:
    raise ValueError("scan got values with different leading axis sizes: "
                     f"{', '.join(str(n) for n in lengths)}.")
  if not lengths:
    raise ValueError("scan got no values to scan over and `length` not provided.")
  return lengths[0]


def _check_unroll(unroll, length):
  if isinstance(unroll, Tracer):
    raise ConcretizationTypeError(
        unroll, "The `unroll` argument to `scan` expects a concrete `int` or `bool` value.")
  if isinstance(unroll, (bool, np.bool_)):
    return max(length, 1) if unroll else 1
  unroll = int(unroll)
  if unroll < 0:
    raise ValueError("`unroll` must be a `bool` or a non-negative `int`.")
  return unroll


def _scan_python(f, init, xs_flat, xs, length, reverse):
  # jax_disable_jit: run the body op by op in Python.
  if length == 0:
    raise ValueError("zero-length scan is not supported in disable_jit() mode because the "
                     "output type is unknown.")
  xs_tree = tree_flatten(xs)[1]
  carry, ys = init, []
  for i in (reversed(range(length)) if reverse else range(length)):
    x = tree_unflatten(xs_tree, [shape_ops.index_in_dim(x, i, keepdims=False) for x in xs_flat])
    carry, y = f(carry, x)
    ys.append(y)
  if reverse:
    ys.reverse()
  stacked = tree_map(lambda *ys: shape_ops.concatenate(
      [shape_ops.expand_dims(common.as_array(y), (0,)) for y in ys], 0), *ys)
  return carry, stacked


# ---- map --------------------------------------------------------------------------------------
_map_bodies: weakref.WeakKeyDictionary = core.register_cache(weakref.WeakKeyDictionary())


def _make_map_body(ref):
  return lambda _, x: ((), ref()(x))


def map(f, xs, *, batch_size=None):  # noqa: A001
  """Apply `f` to each slice of `xs` along its leading axis and stack the results (a scan).

  With `batch_size`, `batch_size` slices at a time go through `vmap(f)`.

  Example:
    >>> lax.map(lambda x: x * 2, jnp.arange(3))
    Array([0, 2, 4], dtype=int32)
  """
  if batch_size is None:
    _, ys = scan(_wrapper(_map_bodies, f, _make_map_body), (), xs)
    return ys
  batch_size = int(batch_size)
  leaves, tree = tree_flatten(xs)
  batched = batching.vmap(f)
  if not leaves:
    return batched(xs)
  n = core.get_aval(leaves[0]).shape[0]
  n_batches, rem = (0, n) if batch_size == 0 else divmod(n, batch_size)
  cut = n_batches * batch_size
  if not n_batches:
    return batched(tree_unflatten(tree, [_rows(x, cut, n) for x in leaves]))
  scan_leaves, rest_leaves = [], []
  for x in leaves:
    shape = core.get_aval(x).shape
    scan_leaves.append(shape_ops.reshape(_rows(x, 0, cut), (n_batches, batch_size, *shape[1:])))
    if rem:
      rest_leaves.append(_rows(x, cut, n))
  _, ys = scan(lambda _, x: ((), batched(x)), (), tree_unflatten(tree, scan_leaves))
  flatten = lambda y: shape_ops.reshape(y, (cut, *core.get_aval(y).shape[2:]))  # noqa: E731
  if not rem:
    return tree_map(flatten, ys)
  rest_ys = batched(tree_unflatten(tree, rest_leaves))
  return tree_map(lambda a, b: shape_ops.concatenate([flatten(a), b], 0), ys, rest_ys)


def _rows(x, start, stop):
  shape = core.get_aval(x).shape
  return shape_ops.slice(x, (start, *[0] * (len(shape) - 1)), (stop, *shape[1:]))


# ---- associative_scan -------------------------------------------------------------------------
def associative_scan(fn, elems, reverse=False, axis=0):
  """Inclusive scan of the associative `fn` along `axis`, by parallel prefix (log depth).

  Example:
    >>> lax.associative_scan(jnp.add, jnp.arange(4))
    Array([0, 1, 3, 6], dtype=int32)
  """
  if not callable(fn):
    raise TypeError("lax.associative_scan: fn argument should be callable.")
  flat, tree = tree_flatten(elems)
  if not flat:
    raise ValueError("associative_scan needs at least one array in `elems`.")
  axis = _canonical_axis(axis, core.get_aval(flat[0]).ndim)
  n = core.get_aval(flat[0]).shape[axis]
  if not all(core.get_aval(e).shape[axis] == n for e in flat[1:]):
    raise ValueError("Array inputs to associative_scan must have the same first dimension. "
                     f"(saw: {[core.get_aval(e).shape for e in flat]})")

  def combine(a, b):
    out = fn(tree_unflatten(tree, a), tree_unflatten(tree, b))
    return tree_flatten(out)[0]

  return tree_unflatten(tree, reductions.associative_scan_flat(combine, flat, axis, reverse))


def _canonical_axis(axis, ndim):
  axis = operator.index(axis)
  if not -ndim <= axis < ndim:
    raise ValueError(f"axis {axis} is out of bounds for array of dimension {ndim}")
  return axis % ndim


