"""Staging Python functions into jaxprs: the trace used by jit, make_jaxpr and eval_shape."""
from __future__ import annotations

import dis
import linecache
import os
import sys
import warnings

import numpy as np

from arrax._src import core, source_info_util
from arrax._src.tree_util import tree_flatten, tree_unflatten
from arrax._src.array import made_while_tracing
from arrax._src.config import config
from arrax._src.core import ClosedJaxpr, Jaxpr, JaxprEqn, Literal, Tracer, Var

_trace_ctx = core.trace_ctx

_enable_checks = config.flag("jax_enable_checks")
_unroll_threshold = config.flag("arrax_loop_unroll_warning_threshold")


class JitTracer(Tracer):
  """A value being staged into a jaxpr."""
  __slots__ = ("aval", "_var", "_debug_name")

  def __init__(self, trace, aval, var, debug_name=None):
    self._trace = trace
    self.aval = aval
    self._var = var
    self._debug_name = debug_name

  def _short_repr(self):
    return f"JitTracer({self.aval})"


class JaxprTrace(core.Trace):
  """Records every primitive applied to its tracers as an equation of a new jaxpr."""
  # Rank-0 Arrays made while tracing (array.made_while_tracing) become literals, as in JAX.
  literalize_arrays = True
  leak_name = "DynamicJaxprTrace"   # (JAX's name, in leak reports)
  _loop_watch = None         # a _LoopWatch while trace_to_jaxpr runs the traced function
  # Identity broadcasts are forwarded (not recorded) while staging, as JAX's staging trace does;
  # JAX's partial-eval trace (linear_transpose) records them, and so does a trace with False.
  forward_identities = True

  def __init__(self):
    super().__init__()
    self.eqns: list[JaxprEqn] = []
    self.invars: list[Var] = []
    self.constvars: list[Var] = []
    self.const_vals: list = []
    self._const_ids: dict[int, Var] = {}
    # Equations record the name stack relative to where this trace began, after the
    # OpAttributes in force then (they apply to everything staged here, as in JAX).
    ns0 = self._ns0 = _trace_ctx.name_stack
    self._si0 = tuple(e for e in ns0 if type(e) is core.OpAttributes) if ns0 else ()

  def new_arg(self, aval, debug_name=None):
    var = Var(aval)
    self.invars.append(var)
    return JitTracer(self, aval, var, debug_name)

  def get_var(self, x):
    if isinstance(x, JitTracer) and x._trace is self:
      return x._var
    if isinstance(x, Tracer) and not x._trace.valid:
      core._raise_escaped(x)
    if isinstance(x, Literal):
      return x
    if not isinstance(x, Tracer):
      aval = core.get_aval(x)
      if aval.shape == () and (not hasattr(x, "_buf") or (
          self.literalize_arrays and made_while_tracing.get(id(x)) is x)):
        return Literal(_host_scalar(x, aval), aval)
    var = self._const_ids.get(id(x))
    if var is None:
      var = Var(core.get_aval(x))
      self._const_ids[id(x)] = var
      self.constvars.append(var)
      self.const_vals.append(x)
    return var

  def process_primitive(self, prim, args, params):
    if not self.valid:
      raise core.UnexpectedTracerError(f"Trace already ended; cannot apply {prim.name}.")
    vma_hook = core.vma_hooks.get("stage") if core.vma_state.axes is not None else None
    if vma_hook is not None:   # (a shard_map body with check_vma: JAX's implicit pvary)
      args = vma_hook(self, prim, args, params)
    invars = [self.get_var(a) for a in args]
    if prim.const_fold is not None and all(type(v) is Literal for v in invars):
      folded = prim.const_fold(*invars, **params)
      if folded is not None:
        return JitTracer(self, folded.aval, folded)
    in_avals = [v.aval for v in invars]
    out = prim.abstract_eval(*in_avals, **params)
    if core.sharding_typing.on:   # (shardings in types: the primitive's sharding rule)
      out = core.sharding_typing.hook(prim, in_avals, params, out)
    out_avals = out if prim.multiple_results else [out]
    if vma_hook is not None:
      out_avals = core.vma_hooks["type"](prim, in_avals, params, out_avals)
    outvars = [Var(a) for a in out_avals]
    ns = _trace_ctx.name_stack
    si = (self._si0 if ns is self._ns0 else
          self._si0 + ns[len(self._ns0):] if self._si0 else ns[len(self._ns0):])
    self.eqns.append(JaxprEqn(invars, outvars, prim, params, si or None,
                              source_info_util.current_traceback()))
    watch = self._loop_watch
    if watch is not None and not len(self.eqns) & _SAMPLE_MASK and watch.sample():
      self._loop_watch = None
    tracers = [JitTracer(self, a, v) for a, v in zip(out_avals, outvars)]
    return tracers if prim.multiple_results else tracers[0]

  def to_jaxpr(self, out_tracers) -> tuple[ClosedJaxpr, list]:
    """The traced jaxpr; consts that are outer tracers are returned separately as `const_vals`."""
    outvars = [self.get_var(t) for t in out_tracers]
    jaxpr = Jaxpr(self.constvars, self.invars, outvars, self.eqns)
    return jaxpr, list(self.const_vals)

  def __repr__(self):
    return "DynamicJaxprTrace"


def stage_literal(lit: Literal):
  """A rank-0 constant made by an operation (`full_like`, zeros), as JAX has it: a tracer of
  the innermost staging trace holding the literal. It still prints inline where it is used,
  but partial evaluation sees a known value made by the primal computation, so linearization
  passes it as a residual (as JAX does) instead of inlining it. Without a staging trace it is
  the Literal itself."""
  trace = core.current_trace()
  while type(trace) is not JaxprTrace:
    trace = getattr(trace, "parent", None)   # JVP, batching, partial eval: known values go up
    if trace is None:
      return lit
  return JitTracer(trace, lit.aval, lit)


def _host_scalar(x, aval):
  """The value of a rank-0 literal; weakly typed ones stay Python scalars (so they stay weak
  when the jaxpr is evaluated again)."""
  if type(x) in (int, float, complex, bool):
    return x
  val = x._value[()] if hasattr(x, "_value") else np.asarray(x, aval.dtype)[()]
  return val.item() if aval.weak_type else val


def trace_to_jaxpr(fun, in_avals, debug_names=None, *, forward_identities=True):
  """Trace `fun(*tracers)` (flat in, flat out) into a jaxpr.

  Returns (jaxpr, consts): `consts` are the values of its constvars, concrete arrays or tracers
  of enclosing traces.
  """
  trace = JaxprTrace()
  trace.forward_identities = forward_identities
  if _unroll_threshold.value > 0:
    trace._loop_watch = _LoopWatch(sys._getframe(1), _unroll_threshold.value)
  names = debug_names or [None] * len(in_avals)
  in_tracers = [trace.new_arg(a, n) for a, n in zip(in_avals, names)]
  ctx = core.trace_ctx
  name_stack, user_tb = ctx.name_stack, ctx.user_tb
  try:
    with core.set_current_trace(trace):
      outs = fun(*in_tracers)
    jaxpr, consts = trace.to_jaxpr(outs)
  finally:
    # (also the name stack and traceback: an interrupt landing in an inner restore is undone)
    ctx.name_stack, ctx.user_tb = name_stack, user_tb
    trace.invalidate()
    trace._loop_watch = None
  del in_tracers, outs
  core.check_leaks(trace)
  if _enable_checks.value:
    core.check_jaxpr(jaxpr)
  return jaxpr, consts


def trace_pytree_fun(fun, in_tree, in_avals, **kwargs):
  """Trace `fun(*tree_unflatten(in_tree, leaves))` for leaves of `in_avals` (options as for
  `trace_to_jaxpr`): (jaxpr, consts, the treedef of its result)."""
  box = []

  def flat(*leaves):
    out_leaves, out_tree = tree_flatten(fun(*tree_unflatten(in_tree, leaves)))
    box.append(out_tree)
    return out_leaves

  jaxpr, consts = trace_to_jaxpr(flat, list(in_avals), **kwargs)
  return jaxpr, consts, box[0]


def wrap_closed(closed: ClosedJaxpr, in_avals, pre, post) -> ClosedJaxpr:
  """The closed jaxpr of `post(closed(*pre(args)))` for arguments of `in_avals` (`pre` and
  `post` map lists of values)."""
  def fun(*xs):
    return post(core.eval_jaxpr(closed.jaxpr, closed.consts, *pre(list(xs))))
  jaxpr, consts = trace_to_jaxpr(fun, list(in_avals))
  return ClosedJaxpr(jaxpr, consts)


def consts_as_inputs(jaxpr: Jaxpr) -> Jaxpr:
  """`jaxpr` closing over nothing: its constvars become its leading invars (JAX's
  convert_constvars_jaxpr)."""
  return Jaxpr([], [*jaxpr.constvars, *jaxpr.invars], jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info)


# ---- the unrolled-loop warning (beyond JAX) ---------------------------------------------------
class UnrolledLoopWarning(UserWarning):
  """Tracing recorded many operations from one line inside a Python loop."""


_SAMPLE_MASK = 7            # look at the Python stack for one equation in eight
_MAX_DEPTH = 64             # frames looked at per sample
_ARRAX_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_loop_ranges_cache: dict = {}


def _loop_ranges(code):
  """Bytecode offset ranges of the loops in `code` (none for arrax's own code)."""
  ranges = _loop_ranges_cache.get(code)
  if ranges is None:
    ranges = ()
    if not code.co_filename.startswith(_ARRAX_DIR):
      jumps = set(dis.hasjrel) | set(dis.hasjabs)
      ranges = tuple((ins.argval, ins.offset) for ins in dis.get_instructions(code)
                     if ins.opcode in jumps and isinstance(ins.argval, int)
                     and ins.argval <= ins.offset)
    _loop_ranges_cache[code] = ranges
  return ranges


class _LoopWatch:
  """Counts sampled equations by the innermost line of the traced function that runs inside a
  Python loop; warns once when one line passes the threshold. Only frames newer than the one
  that started tracing are looked at, so loops around a jitted call do not count."""
  __slots__ = ("stop", "threshold", "counts")

  def __init__(self, stop_frame, threshold):
    self.stop = stop_frame
    self.threshold = threshold
    self.counts: dict = {}

  def sample(self) -> bool:
    """Count the current equation; True once the warning is given (stop watching)."""
    frame = sys._getframe(2)
    for _ in range(_MAX_DEPTH):   # bounded, so deep recursion stays cheap
      if frame is None or frame is self.stop:
        break
      code = frame.f_code
      offset = frame.f_lasti
      for lo, hi in _loop_ranges(code):
        if lo <= offset <= hi:
          key = (code, frame.f_lineno)
          n = self.counts[key] = self.counts.get(key, 0) + _SAMPLE_MASK + 1
          if n > self.threshold:
            _warn_unrolled(frame, n)
            return True
          return False
      frame = frame.f_back
    return False


def _warn_unrolled(frame, n):
  filename, lineno = frame.f_code.co_filename, frame.f_lineno
  line = linecache.getline(filename, lineno).strip()
  msg = (f"Tracing recorded about {n} operations from line {lineno} of {filename} "
         f"({line!r}), which runs inside a Python loop: the loop is unrolled into the traced "
         "program, so tracing and compilation grow with the number of iterations. Consider "
         "`lax.fori_loop` or `lax.scan` (set the config option "
         "'arrax_loop_unroll_warning_threshold' to 0 to silence this warning).")
  registry = frame.f_globals.setdefault("__warningregistry__", {})
  warnings.warn_explicit(msg, UnrolledLoopWarning, filename, lineno,
                         module=frame.f_globals.get("__name__"), registry=registry)


def closed_with_host_consts(jaxpr: Jaxpr, consts):
  """Split consts: concrete ones stay closed over; tracers of outer traces become new invars.

  Returns (closed_jaxpr, outer_tracers): the closed jaxpr takes the outer tracers first.
  """
  if not any(isinstance(c, Tracer) for c in consts):
    return ClosedJaxpr(jaxpr, consts), []
  kept_vars, kept_vals, lifted_vars, lifted_vals = [], [], [], []
  for v, c in zip(jaxpr.constvars, consts):
    if isinstance(c, Tracer):
      lifted_vars.append(v)
      lifted_vals.append(c)
    else:
      kept_vars.append(v)
      kept_vals.append(c)
  new = Jaxpr(kept_vars, lifted_vars + jaxpr.invars, jaxpr.outvars, jaxpr.eqns, jaxpr.debug_info)
  return ClosedJaxpr(new, kept_vals), lifted_vals
