"""Automatic differentiation: forward mode (JVP), partial evaluation and transposition.

ARCHITECTURE.md decision 6. `JVPTrace` pushes tangents forward through each primitive's `jvp`
rule. `linearize` runs the JVP under a `PartialEvalTrace`: work that depends only on primals is
*known* and runs at once on the enclosing trace; work touching tangents is *unknown* and is
recorded into a linear jaxpr whose constants are the residuals. `backward_pass` transposes such a
linear jaxpr with each primitive's `transpose` rule, so `vjp` = linearize + transpose and `grad`
= vjp with a cotangent of 1.

Rule conventions (set on the primitive, in its own module):
  jvp(primals, tangents, **params) -> (primal_out, tangent_out); tangents may be `Zero`.
  transpose(ct, *args, **params) -> one cotangent (or None/Zero) per arg; linear args are
    `UndefinedPrimal`s; for multiple-result primitives `ct` is a list (entries may be `Zero`).
"""
from __future__ import annotations


import contextlib
import numpy as np
from jaxlib.mlir.dialects import stablehlo as hlo

from arrax._src import batching, core, dtypes
from arrax._src.core import ShapedArray, Tracer
from arrax._src.tracing import (JaxprTrace, JitTracer, closed_with_host_consts, stage_literal,
                                trace_to_jaxpr)


# ---- symbolic zeros and tangent types -------------------------------------------------------
class Zero:
  """A symbolic zero tangent/cotangent of type `aval`: costs nothing until instantiated."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"Zero({self.aval})"


def tangent_dtype(dtype):
  """The tangent dtype of a primal dtype: float0 for integers and booleans."""
  return dtype if dtypes.issubdtype(dtype, np.inexact) else dtypes.float0


def tangent_aval(aval: ShapedArray) -> ShapedArray:
  if type(aval) is core.AbstractRef:
    return aval.update(inner_aval=tangent_aval(aval.inner_aval))
  dt = tangent_dtype(aval.dtype)
  return aval if dt is aval.dtype else aval.update(dtype=dt)


def ct_aval(aval):
  """The type of a cotangent of a value of type `aval`: the tangent type, with unreduced and
  reduced manual axes swapped (shard_map's types)."""
  t = tangent_aval(aval)
  if type(t) is ShapedArray and t.ur is not core.NO_UR:
    return t.update(ur=(t.ur[1], t.ur[0]))
  return t


def is_float0(aval) -> bool:
  return aval.dtype == dtypes.float0


class _ZeroMaker:
  """What zeros are made of: lax registers its `broadcast_in_dim_p` and `scalar_literal` here
  when it defines them (ad sits below lax and never imports it)."""
  broadcast_in_dim_p = None
  scalar_literal = None


_zeros = _ZeroMaker()


def register_zero_maker(broadcast_in_dim_p, scalar_literal):
  _zeros.broadcast_in_dim_p = broadcast_in_dim_p
  _zeros.scalar_literal = scalar_literal


def zeros_like_aval(aval: ShapedArray):
  """A concrete (or traced) zero array of type `aval`; float0 zeros are host NumPy arrays."""
  if is_float0(aval):
    return np.zeros(aval.shape, dtypes.float0)
  zero = _zeros.scalar_literal(0, aval.dtype, aval.weak_type)
  if not aval.shape:
    # A literal (API functions turn literals they return into Arrays); while staging, a tracer
    # holding it, so linearization keeps it as a residual as JAX does.
    return stage_literal(zero)
  return _zeros.broadcast_in_dim_p.bind(zero, shape=aval.shape, broadcast_dimensions=(),
                                        sharding=None)


def tangent_zeros(aval: ShapedArray):
  """Zeros that start a tangent computation (a loop's tangent carry, say): while linearizing
  they are staged with the linear work, as JAX does, not computed with the primal one."""
  trace = core.current_trace()
  if aval.shape and type(trace) is PartialEvalTrace:
    zero = _zeros.scalar_literal(0, aval.dtype, aval.weak_type)
    return trace.record(_zeros.broadcast_in_dim_p, [zero],
                        {"shape": aval.shape, "broadcast_dimensions": (), "sharding": None})
  return zeros_like_aval(aval)


def instantiate(t):
  return zeros_like_aval(t.aval) if type(t) is Zero else t


instantiate_zeros = instantiate


def add_tangents(x, y):
  if type(x) is Zero:
    return y
  if type(y) is Zero:
    return x
  return add_any_p.bind(x, y)


# The addition of tangents / cotangents (printed `add_any` as in JAX).
add_any_p = core.Primitive("add_any")


def _add_any_abstract_eval(x, y):
  if x.shape != y.shape or x.dtype != y.dtype:
    raise TypeError(f"add_any requires equal types, got {x} and {y}")
  return ShapedArray(x.shape, x.dtype, x.weak_type and y.weak_type)


add_any_p.def_abstract_eval(_add_any_abstract_eval)
add_any_p.def_lowering(lambda ctx, x, y: [hlo.add(x, y)])
add_any_p.def_jvp(lambda primals, tangents: (add_any_p.bind(*primals),
                                          add_tangents(*tangents)))
add_any_p.def_transpose(lambda ct, x, y: [ct, ct])


# ---- forward mode -----------------------------------------------------------------------------
class JVPTracer(Tracer):
  """A primal value (of the parent trace) paired with its tangent (`Zero` or a value)."""
  __slots__ = ("aval", "primal", "tangent")

  def __init__(self, trace, primal, tangent):
    self._trace = trace
    self.primal = primal
    self.tangent = tangent
    self.aval = core.get_aval(primal)

  def _short_repr(self):
    return f"JVPTracer(primal={self.primal!r}, tangent={self.tangent!r})"


class JVPTrace(core.Trace):
  """Interprets primitives by their JVP rules; primal and tangent work run on the parent."""

  def __init__(self, parent):
    super().__init__()
    self.parent = parent

  def to_primal_tangent(self, x):
    if isinstance(x, JVPTracer) and x._trace is self:
      return x.primal, x.tangent
    return x, Zero(tangent_aval(core.get_aval(x)))

  def process_primitive(self, prim, args, params):
    primals, tangents = [], []
    nonzero = False
    for x in args:
      if isinstance(x, JVPTracer) and x._trace is self:
        primals.append(x.primal)
        tangents.append(x.tangent)
        nonzero = nonzero or type(x.tangent) is not Zero   # (float0 inputs carry a Zero)
      else:
        primals.append(x)
        tangents.append(Zero(tangent_aval(core.get_aval(x))))
    if not nonzero and not prim.ref_primitive:   # (ref operations always run their rule)
      with core.set_current_trace(self.parent):
        return prim.bind(*primals, **params)
    parent = self.parent
    with core.set_current_trace(parent):
      if (prim.linearize is not None and type(parent) is PartialEvalTrace
          and parent.linearizing(primals, tangents)):
        p_out, t_out = prim.linearize(parent, primals, tangents, **params)
      else:
        p_out, t_out = prim.jvp(primals, tangents, **params)
    if prim.multiple_results:
      return [self.make(p, t) for p, t in zip(p_out, t_out)]
    return self.make(p_out, t_out)

  def make(self, primal, tangent):
    if type(tangent) is Zero:
      return primal
    return JVPTracer(self, primal, tangent)

  def __repr__(self):
    return "JVPTrace"


# ---- partial evaluation -----------------------------------------------------------------------
class PartialEvalTrace(JaxprTrace):
  """Runs known work on the parent trace and records work on unknown values into a jaxpr.

  Its own tracers (from `new_arg` and recorded equations) are the unknowns; every other value
  is known. Known values used by recorded equations become the jaxpr's constvars: residuals.
  A primitive may customize its split with `prim.partial_eval(trace, args, params)`.
  """
  literalize_arrays = False

  def __init__(self, parent):
    super().__init__()
    self.parent = parent

  def is_unknown(self, x):
    return isinstance(x, JitTracer) and x._trace is self

  def linearizing(self, primals, tangents) -> bool:
    """Whether a JVP on these values is linearization: known primals, tangents unknown (or
    symbolic zeros)."""
    return (not any(self.is_unknown(p) for p in primals)
            and all(type(t) is Zero or self.is_unknown(t) for t in tangents))

  def process_primitive(self, prim, args, params):
    for x in args:
      if isinstance(x, JitTracer) and x._trace is self:
        break
    else:
      with core.set_current_trace(self.parent):
        return prim.bind(*args, **params)
    rule = prim.partial_eval
    if rule is not None:
      return rule(self, args, params)
    return self.record(prim, args, params)

  def record(self, prim, args, params):
    """Stage `prim` applied to `args` as an equation of the unknown jaxpr (known arguments
    become residuals); the custom partial-eval rules call this for their unknown parts."""
    return JaxprTrace.process_primitive(self, prim, args, params)

  def __repr__(self):
    return "PartialEvalTrace"


# ---- transposition ---------------------------------------------------------------------------
class UndefinedPrimal:
  """A linear input of a transposed equation: only its type is known."""
  __slots__ = ("aval",)

  def __init__(self, aval):
    self.aval = aval

  def __repr__(self):
    return f"UndefinedPrimal({self.aval})"


def is_undefined(x) -> bool:
  return type(x) is UndefinedPrimal


_ref_discharge: list = []


def register_ref_discharge(fn):
  """`fn(jaxpr, consts) -> (jaxpr, consts)`: the state module's discharge of ref operations
  (the same program without refs), applied before a jaxpr using refs is transposed."""
  _ref_discharge[:] = [fn]


def backward_pass(jaxpr: core.Jaxpr, consts, primals_in, cts_out, transform_stack=False):
  """Transpose a jaxpr that is linear in its `UndefinedPrimal` inputs.

  Returns one cotangent per invar (`Zero` where none flows back). Equations with no linear
  input are evaluated forward first; the rest are transposed in reverse order.
  """
  if _ref_discharge and core.jaxpr_uses_refs(jaxpr):
    # Operations on mutable refs (made while linearizing) become pure ones first.
    jaxpr, consts = _ref_discharge[0](jaxpr, consts)
  ctx = core.trace_ctx
  base, outer_tb = ctx.name_stack, ctx.user_tb
  try:
    return _backward_pass(jaxpr, consts, primals_in, cts_out, ctx, base, transform_stack)
  finally:
    ctx.name_stack, ctx.user_tb = base, outer_tb


def _backward_pass(jaxpr, consts, primals_in, cts_out, ctx, base, transform_stack):
  # Forward equations run under their own recorded names; transposed ones under
  # transpose(their names) when `transform_stack` (grad, vjp, linear_transpose; not the
  # transpose rules of primitives holding jaxprs), as in JAX ("transpose(jvp())/mul").
  transposed = base + (core.TRANSFORM_TRANSPOSE,) if transform_stack else base
  outer_tb = ctx.user_tb
  primal_env: dict = {}
  for v, c in zip(jaxpr.constvars, consts):
    primal_env[v] = c
  for v, p in zip(jaxpr.invars, primals_in):
    if type(p) is not UndefinedPrimal:
      primal_env[v] = p

  def read_primal(v):
    if type(v) is core.Literal:
      return v.val
    val = primal_env.get(v)
    return UndefinedPrimal(v.aval) if val is None else val

  linear_eqns = []
  for eqn in jaxpr.eqns:
    invals = [read_primal(v) for v in eqn.invars]
    if any(type(x) is UndefinedPrimal for x in invals):
      linear_eqns.append(eqn)
      continue
    ctx.name_stack = base + eqn.source_info if eqn.source_info else base
    ctx.user_tb = eqn.traceback or outer_tb
    ans = eqn.primitive.bind(*invals, **eqn.params)
    outs = ans if eqn.primitive.multiple_results else [ans]
    for v, val in zip(eqn.outvars, outs):
      if not isinstance(v, core.DropVar):
        primal_env[v] = val

  ct_env: dict = {}

  def write_ct(v, ct):
    if ct is None or type(ct) is Zero or type(v) is core.Literal or v in primal_env:
      return
    prev = ct_env.get(v)
    ct_env[v] = ct if prev is None else add_tangents(prev, ct)

  for v, ct in zip(jaxpr.outvars, cts_out):
    write_ct(v, ct)
  for eqn in reversed(linear_eqns):
    cts = [ct_env.pop(v, None) for v in eqn.outvars]
    if all(c is None for c in cts):
      continue
    cts = [Zero(v.aval) if c is None else c for v, c in zip(eqn.outvars, cts)]
    rule = eqn.primitive.transpose
    invals = [read_primal(v) for v in eqn.invars]
    ct_arg = cts if eqn.primitive.multiple_results else cts[0]
    ctx.name_stack = transposed + eqn.source_info if eqn.source_info else transposed
    ctx.user_tb = eqn.traceback or outer_tb
    cts_in = rule(ct_arg, *invals, **eqn.params)
    for v, x, ct in zip(eqn.invars, invals, cts_in):
      if type(x) is UndefinedPrimal:
        write_ct(v, ct)
  return [ct_env.get(v, Zero(v.aval)) if type(p) is UndefinedPrimal else Zero(v.aval)
          for v, p in zip(jaxpr.invars, primals_in)]


# ---- linearize: JVP + partial evaluation -----------------------------------------------------
class LinearFunction:
  """The linear map `tangents_in -> tangents_out` found by `linearize`, as a jaxpr + residuals.

  `out_zeros[i]` marks outputs whose tangent is symbolically zero (not jaxpr outputs).
  """

  def __init__(self, jaxpr, consts, in_avals, out_avals, out_zeros):
    self.jaxpr = jaxpr
    self.consts = consts
    self.in_avals = in_avals
    self.out_avals = out_avals
    self.out_zeros = out_zeros

  def jvp(self, tangents):
    outs = iter(core.eval_jaxpr(self.jaxpr, self.consts, *map(instantiate, tangents)))
    return [Zero(a) if z else next(outs) for a, z in zip(self.out_avals, self.out_zeros)]

  def transpose(self, cts, consts=None):
    """Cotangents of the inputs (Zero where none) for output cotangents `cts`; `consts`
    replaces the residuals (when they went through a transformation, e.g. a jit boundary)."""
    lin_cts = [ct for ct, z in zip(cts, self.out_zeros) if not z]
    args = [UndefinedPrimal(a) for a in self.in_avals]
    return backward_pass(self.jaxpr, self.consts if consts is None else consts, args, lin_cts,
                         transform_stack=True)


def linearize_flat(fun, primals):
    """Run `fun(*primals)` (flat in, flat out) forward; return (out_primals, LinearFunction)."""
    parent = core.current_trace()
    pe = PartialEvalTrace(parent)
    jvp_trace = JVPTrace(pe)
    in_avals = [tangent_aval(core.get_aval(p)) for p in primals]
    tangents = [pe.new_arg(a) for a in in_avals]
    tracers = [JVPTracer(jvp_trace, p, Zero(a) if is_float0(a) else t)
               for p, a, t in zip(primals, in_avals, tangents)]
    try:
      with core.set_current_trace(jvp_trace), core.extend_name_stack(core.TRANSFORM_JVP):
        outs = fun(*tracers)
      out_primals, out_tangents = [], []
      for o in outs:
        p, t = jvp_trace.to_primal_tangent(o)
        out_primals.append(p)
        out_tangents.append(t)
      if any(isinstance(p, core.Tracer) and p._trace is pe for p in out_primals):
        raise ValueError(
            "Linearization failed to produce known values for all output primals. This is "
            "typically caused by attempting to differentiate a function uses an operation that "
            "does not support reverse-mode autodiff.")
      out_zeros = [type(t) is Zero for t in out_tangents]
      jaxpr, consts = pe.to_jaxpr([t for t in out_tangents if type(t) is not Zero])
    finally:
      jvp_trace.invalidate()
      pe.invalidate()
    out_avals = [tangent_aval(core.get_aval(p)) for p in out_primals]
    return out_primals, LinearFunction(jaxpr, consts, in_avals, out_avals, out_zeros)


def jvp_flat(fun, primals, tangents, transform_stack=True):
  """Push `tangents` (values or Zero) through `fun`; returns (out_primals, out_tangents).
  `transform_stack`: name the staged operations jvp(...) (JAX does so except for the JVP of
  a jaxpr held by a primitive)."""
  trace = JVPTrace(core.current_trace())
  # float0 tangents (of integer/boolean primals) are symbolic zeros, as in JAX.
  tracers = [p if type(t) is Zero or is_float0(core.get_aval(t)) else JVPTracer(trace, p, t)
             for p, t in zip(primals, tangents)]
  try:
    with core.set_current_trace(trace), (core.extend_name_stack(core.TRANSFORM_JVP)
                                         if transform_stack else contextlib.nullcontext()):
      outs = fun(*tracers)
    pairs = [trace.to_primal_tangent(o) for o in outs]
  finally:
    trace.invalidate()
  return [p for p, _ in pairs], [t for _, t in pairs]


# ---- rule builders ----------------------------------------------------------------------------
def defjvp(prim, *jvp_fns):
  """JVP from one function per operand: `fn(tangent, *primals, **params)` -> contribution.

  `None` marks an operand the output does not depend on differentiably (its tangent is ignored).
  """
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t_out = Zero(tangent_aval(core.get_aval(out)))
    for fn, t in zip(jvp_fns, tangents):
      if fn is not None and type(t) is not Zero:
        t_out = add_tangents(t_out, fn(t, *primals, **params))
    return out, t_out
  prim.def_jvp(rule)
  return rule


def defjvp2(prim, *jvp_fns):
  """Like defjvp, but each function also gets the primal output: `fn(t, ans, *primals)`."""
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t_out = Zero(tangent_aval(core.get_aval(out)))
    for fn, t in zip(jvp_fns, tangents):
      if fn is not None and type(t) is not Zero:
        t_out = add_tangents(t_out, fn(t, out, *primals, **params))
    return out, t_out
  prim.def_jvp(rule)
  return rule


def defjvp_zero(prim):
  """The output does not depend differentiably on the inputs (comparisons, integer ops...)."""
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    if prim.multiple_results:
      return out, [Zero(tangent_aval(core.get_aval(o))) for o in out]
    return out, Zero(tangent_aval(core.get_aval(out)))
  prim.def_jvp(rule)
  return rule


def deflinear(prim, transpose_rule):
  """A primitive linear in all its operands: its JVP applies it to the tangents."""
  def rule(primals, tangents, **params):
    out = prim.bind(*primals, **params)
    t_out = prim.bind(*map(instantiate, tangents), **params)
    return out, t_out
  prim.def_jvp(rule)
  prim.def_transpose(transpose_rule)
  return rule


def deflinear2(prim, transpose_rule):
  """A primitive linear in its operands whose transpose needs the operand's type."""
  return deflinear(prim, transpose_rule)


# ---- stop_gradient ------------------------------------------------------------------------
stop_gradient_p = core.Primitive("stop_gradient")
stop_gradient_p.def_abstract_eval(lambda x: x)
stop_gradient_p.def_lowering(lambda ctx, x: [x])
defjvp_zero(stop_gradient_p)
stop_gradient_p.def_batch(lambda args, dims: (stop_gradient_p.bind(*args), dims[0]))


def _add_any_batch(args, dims):
  # Operands of add_any have equal types: line the batch axes up, broadcasting an unbatched one.
  (x, y), (dx, dy) = args, dims
  if dx is None:
    x, y, dx, dy = y, x, dy, dx
  size = core.get_aval(x).shape[dx]
  return add_any_p.bind(x, batching.matchaxis(dy, dx, y, size)), dx


add_any_p.def_batch(_add_any_batch)


# ---- jaxpr-to-jaxpr transformations (for primitives holding jaxprs: jit, control flow) --------
def _trace_closed(fun, in_avals):
  jaxpr, consts = trace_to_jaxpr(fun, in_avals)
  assert not any(isinstance(c, Tracer) for c in consts), "unexpected outer tracer"
  return core.ClosedJaxpr(jaxpr, consts)


def _flags(flag, n):
  return list(flag) if isinstance(flag, (list, tuple)) else [flag] * n


def jvp_jaxpr(closed: core.ClosedJaxpr, nonzeros, instantiate=False):
  """The JVP of `closed`: takes (primals, nonzero tangents), returns (primals, tangents).

  Returns (jvp_closed, out_nonzeros); output tangents that are symbolically zero are left out
  unless `instantiate` (a bool or one per output) asks for them.
  """
  in_avals = closed.in_avals
  t_avals = [tangent_aval(a) for a, nz in zip(in_avals, nonzeros) if nz]
  n = len(in_avals)
  box = []

  def fun(*args):
    ts = iter(args[n:])
    tangents = [next(ts) if nz else Zero(tangent_aval(a)) for a, nz in zip(in_avals, nonzeros)]
    outs_p, outs_t = jvp_flat(lambda *xs: core.eval_jaxpr(closed.jaxpr, closed.consts, *xs),
                              list(args[:n]), tangents, transform_stack=False)
    inst = _flags(instantiate, len(outs_t))
    out_nz = [type(t) is not Zero or i for t, i in zip(outs_t, inst)]
    box.append(out_nz)
    return outs_p + [instantiate_zeros(t) for t, nz in zip(outs_t, out_nz) if nz]
  return _trace_closed(fun, list(in_avals) + t_avals), box[0]


def partial_eval_jaxpr(closed: core.ClosedJaxpr, unknowns, instantiate=False):
  """Split `closed` into a known part and an unknown part.

  known:   (known inputs) -> (known outputs, residuals)
  unknown: (residuals, unknown inputs) -> (unknown outputs)
  Residuals that are known inputs are forwarded rather than returned: `res_fwd[i]` is the index
  of the known input giving residual i, or None when the known jaxpr outputs it.
  Returns (known_closed, unknown_closed, out_unknowns, res_fwd).
  """
  in_avals = closed.in_avals
  known_avals = [a for a, u in zip(in_avals, unknowns) if not u]
  box = {}

  def known_fun(*known_args):
    pe = PartialEvalTrace(core.current_trace())
    it = iter(known_args)
    args = [pe.new_arg(a) if u else next(it) for a, u in zip(in_avals, unknowns)]
    try:
      with core.set_current_trace(pe):
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *args)
      inst = _flags(instantiate, len(outs))
      out_unk = [pe.is_unknown(o) or i for o, i in zip(outs, inst)]
      unk_jaxpr, res_vals = pe.to_jaxpr([o for o, u in zip(outs, out_unk) if u])
    finally:
      pe.invalidate()
    unk_closed, res = closed_with_host_consts(unk_jaxpr, res_vals)
    arg_pos = {id(a): i for i, a in enumerate(known_args)}
    res_fwd = [arg_pos.get(id(r)) for r in res]
    box["out"] = (unk_closed, out_unk, res_fwd)
    return ([o for o, u in zip(outs, out_unk) if not u]
            + [r for r, f in zip(res, res_fwd) if f is None])

  known_closed = _trace_closed(known_fun, known_avals)
  unk_closed, out_unk, res_fwd = box["out"]
  return known_closed, unk_closed, out_unk, res_fwd


def linearize_jaxpr(closed: core.ClosedJaxpr, nonzeros):
  """Linearize `closed` (tangents for the inputs where `nonzeros`) as JAX's linearize of a jit
  does: the JVP runs under partial evaluation inside the trace of the primal jaxpr, so values
  the tangent computation reads become residuals; both parts are then dead-code eliminated.

  primal:  (primals) -> (primal outputs, residuals not forwarded)
  tangent: (residuals, nonzero tangents) -> (nonzero output tangents)
  Returns (primal, tangent, out_nonzeros, res_fwd): res_fwd[i] is the index into (consts of
  `closed`, primal inputs) that residual i repeats, or None when the primal jaxpr outputs it.
  """
  in_avals = closed.in_avals
  box = {}

  def primal_fun(*primals):
    pe = PartialEvalTrace(core.current_trace())
    jvp_trace = JVPTrace(pe)
    tracers = []
    for p, a, nz in zip(primals, in_avals, nonzeros):
      t_aval = tangent_aval(a)
      t = pe.new_arg(t_aval) if nz else None
      tracers.append(p if t is None or is_float0(t_aval) else JVPTracer(jvp_trace, p, t))
    try:
      with core.set_current_trace(jvp_trace):
        outs = core.eval_jaxpr(closed.jaxpr, closed.consts, *tracers)
      pairs = [jvp_trace.to_primal_tangent(o) for o in outs]
      out_nz = [type(t) is not Zero for _, t in pairs]
      lin, res = pe.to_jaxpr([t for _, t in pairs if type(t) is not Zero])
    finally:
      jvp_trace.invalidate()
      pe.invalidate()
    tangent = core.Jaxpr([], lin.constvars + lin.invars, lin.outvars, lin.eqns)
    n_res = len(res)
    tangent, used = core.dce_jaxpr(tangent, [True] * len(tangent.outvars),
                              [False] * n_res + [True] * len(lin.invars))
    res = [r for r, u in zip(res, used[:n_res]) if u]
    pos = {id(x): i for i, x in enumerate([*closed.consts, *primals])}
    res_fwd = [pos.get(id(r)) for r in res]
    box["out"] = (core.ClosedJaxpr(tangent, []), out_nz, res_fwd)
    return [p for p, _ in pairs] + [r for r, f in zip(res, res_fwd) if f is None]

  primal = _trace_closed(primal_fun, list(in_avals))
  dced, _ = core.dce_jaxpr(primal.jaxpr, [True] * len(primal.jaxpr.outvars),
                      [True] * len(primal.jaxpr.invars))
  tangent, out_nz, res_fwd = box["out"]
  return core.ClosedJaxpr(dced, primal.consts), tangent, out_nz, res_fwd


def transpose_jaxpr(closed: core.ClosedJaxpr, linear, ct_nonzeros, keep=None, zeros=None):
  """The transpose of `closed` (linear in inputs where `linear`).

  The result takes (non-linear inputs, nonzero output cotangents) and returns the cotangents
  of the linear inputs (those `keep` marks, default all), instantiated as zeros where none
  flows back. A list `zeros` is filled with, per linear input, whether no cotangent flows.
  """
  in_avals = closed.in_avals
  res_avals = [a for a, lin in zip(in_avals, linear) if not lin]
  ct_avals = [ct_aval(a) for a, nz in zip(closed.out_avals, ct_nonzeros) if nz]
  n_res = len(res_avals)

  def fun(*args):
    res = iter(args[:n_res])
    cts_it = iter(args[n_res:])
    primals = [UndefinedPrimal(a) if lin else next(res) for a, lin in zip(in_avals, linear)]
    cts = [next(cts_it) if nz else Zero(ct_aval(a))
           for a, nz in zip(closed.out_avals, ct_nonzeros)]
    cts_in = [ct for ct, lin in zip(backward_pass(closed.jaxpr, closed.consts, primals, cts),
                                    linear) if lin]
    if zeros is not None:
      zeros[:] = [type(ct) is Zero for ct in cts_in]
    return [instantiate(ct) for ct, k in zip(cts_in, keep or [True] * len(cts_in)) if k]
  return _trace_closed(fun, res_avals + ct_avals)


def forward_inputs(closed: core.ClosedJaxpr, n_outs):
  """Drop the first `n_outs` outputs that merely return an input.

  Returns (closed', fwd): fwd[i] is the input index output i repeats, or None if kept.
  """
  jaxpr = closed.jaxpr
  pos = {v: i for i, v in enumerate(jaxpr.invars)}
  fwd = [pos.get(v) if type(v) is core.Var else None for v in jaxpr.outvars[:n_outs]]
  if all(f is None for f in fwd):
    return closed, fwd
  outvars = [v for v, f in zip(jaxpr.outvars, fwd) if f is None] + jaxpr.outvars[n_outs:]
  new = core.Jaxpr(jaxpr.constvars, jaxpr.invars, outvars, jaxpr.eqns, jaxpr.debug_info)
  return core.ClosedJaxpr(new, closed.consts), fwd
