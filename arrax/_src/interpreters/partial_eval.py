"""`jax.interpreters.partial_eval` compatibility: the parts of JAX's partial-evaluation module
arrax has an equivalent for (tracing Python to jaxprs, partial evaluation of jaxprs)."""
from typing import Any

from arrax._src import call as _call
from arrax._src import core as _core
from arrax._src import tracing as _tracing
from arrax._src.ad import PartialEvalTrace, partial_eval_jaxpr  # noqa: F401
from arrax._src.interpreters.registry import RuleTable
from arrax._src.tracing import JaxprTrace as DynamicJaxprTrace  # noqa: F401
from arrax._src.tracing import JitTracer as DynamicJaxprTracer  # noqa: F401
from arrax._src.tracing import JitTracer as JaxprTracer  # noqa: F401

partial_eval_jaxpr_nounits = partial_eval_jaxpr
Val = Any


def _pe_rule(prim, rule):
  """JAX's `rule(trace, *tracers, **params)` in arrax's `partial_eval` slot convention."""
  return lambda trace, args, params: rule(trace, *args, **params)


def _dce_rule(prim, rule):
  """JAX's `rule(used_outputs, eqn) -> (used_inputs, eqn or None)` as arrax's `dce` slot."""
  return lambda eqn, used: rule(list(used), eqn)[1]


class _DceRules(RuleTable):
  """`dce_rules[p]` reads arrax's own rules in JAX's convention too."""

  def __getitem__(self, prim):
    rule = super().__getitem__(prim)
    if prim in self._set:
      return rule

    def jax_rule(used_outputs, eqn):
      new = rule(eqn, list(used_outputs))
      kept = set() if new is None else {id(v) for v in new.invars}
      return [id(v) in kept for v in eqn.invars], new
    return jax_rule


# Partial evaluation rules of primitives, JAX's form: `rule(trace, *tracers, **params)` (the
# tracers are arrax's: `trace.is_unknown(t)`, `trace.record(prim, args, params)` stages).
custom_partial_eval_rules = RuleTable("partial_eval", _pe_rule)
# Dead-code elimination rules, JAX's form: `rule(used_outputs, eqn) -> (used_inputs, new eqn
# or None)`.
dce_rules = _DceRules("dce", _dce_rule)
dce_jaxpr_call_rule = _call.dce_call_rule
dce_jaxpr_closed_call_rule = _call.dce_call_rule

# JAX's rules for splitting an equation under remat's saveability policy. arrax's remat splits
# every equation by the policy itself, so rules put here are kept and not consulted.
partial_eval_jaxpr_custom_rules: dict = {}


def dce_jaxpr_consts(jaxpr, used_outputs, instantiate=False):
  """`dce_jaxpr` that also prunes the constvars: (jaxpr, used_consts, used_inputs)."""
  n = len(jaxpr.constvars)
  inst = (list(instantiate) if isinstance(instantiate, (list, tuple))
          else [instantiate] * len(jaxpr.invars))
  new, used = _core.dce_jaxpr(_tracing.consts_as_inputs(jaxpr), used_outputs, [False] * n + inst)
  used_consts, used_inputs = used[:n], used[n:]
  constvars = [v for v, u in zip(jaxpr.constvars, used_consts) if u]
  invars = new.invars[len(constvars):]
  return (_core.Jaxpr(constvars, invars, new.outvars, new.eqns, jaxpr.debug_info),
          used_consts, used_inputs)


convert_constvars_jaxpr = _tracing.consts_as_inputs


def trace_to_jaxpr_dynamic(fun, in_avals, debug_info=None, **kwargs):
  """Trace flat `fun` (a callable or a linear_util WrappedFun) to a jaxpr:
  (jaxpr, out_avals, consts), as JAX's function returns."""
  jaxpr, consts = _tracing.trace_to_jaxpr(lambda *xs: list(fun(*xs)), list(in_avals))
  return jaxpr, [v.aval for v in jaxpr.outvars], consts


class PartialVal(tuple):
  """(aval, const): aval None for a known value `const`, else an unknown value of type aval."""

  def __new__(cls, xs):
    return tuple.__new__(cls, xs)

  @classmethod
  def known(cls, const):
    return PartialVal((None, const))

  @classmethod
  def unknown(cls, aval):
    return PartialVal((aval, None))

  def is_known(self):
    return self[0] is None

  def get_known(self):
    return self[1] if self[0] is None else None

  def get_aval(self):
    return _core.get_aval(self[1]) if self[0] is None else self[0]


def trace_to_jaxpr_nounits(fun, pvals, instantiate=False):
  """Trace `fun` with every input unknown: (jaxpr, out PartialVals, consts). Outputs that do
  not depend on the inputs are still reported unknown (arrax does not split them)."""
  del instantiate
  avals = [pv.get_aval() for pv in pvals]
  jaxpr, out_avals, consts = trace_to_jaxpr_dynamic(fun, avals)
  return jaxpr, [PartialVal.unknown(a) for a in out_avals], consts


def dce_jaxpr(jaxpr, used_outputs, instantiate=False):
  """Drop unused work: (jaxpr, used_inputs)."""
  return _core.dce_jaxpr(jaxpr, used_outputs, keep_inputs=instantiate)
