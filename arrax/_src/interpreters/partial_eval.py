"""`jax.interpreters.partial_eval` compatibility: the parts of JAX's partial-evaluation module
arrax has an equivalent for (tracing Python to jaxprs, partial evaluation of jaxprs)."""
from arrax._src import core as _core
from arrax._src import tracing as _tracing
from arrax._src.ad import PartialEvalTrace, partial_eval_jaxpr  # noqa: F401
from arrax._src.tracing import JaxprTrace as DynamicJaxprTrace  # noqa: F401
from arrax._src.tracing import JitTracer as DynamicJaxprTracer  # noqa: F401

partial_eval_jaxpr_nounits = partial_eval_jaxpr


def convert_constvars_jaxpr(jaxpr):
  """The jaxpr with its constvars turned into leading invars."""
  return _core.Jaxpr([], list(jaxpr.constvars) + list(jaxpr.invars), jaxpr.outvars, jaxpr.eqns)


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
