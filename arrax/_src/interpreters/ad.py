"""`jax.interpreters.ad` / `jax._src.interpreters.ad` compatibility over arrax's ad module."""
from arrax._src import ad as _ad
from arrax._src.ad import (JVPTrace, JVPTracer, UndefinedPrimal, Zero, add_tangents,  # noqa: F401
                           defjvp, defjvp2, defjvp_zero, deflinear, deflinear2,
                           instantiate_zeros, is_undefined, jvp_jaxpr, zeros_like_aval)
from arrax._src.interpreters.registry import RuleTable

primitive_jvps = RuleTable("jvp")
primitive_transposes = RuleTable("transpose")
add_jaxvals_p = _ad.add_any_p
add_any_p = _ad.add_any_p
is_undefined_primal = is_undefined
zeros_like_jaxval = zeros_like_aval


def zero_from_primal(x, instantiate=False):
  """The symbolic (or, with `instantiate`, concrete) zero tangent of primal `x`."""
  z = Zero(_ad.tangent_aval(_ad.core.get_aval(x)))
  return instantiate_zeros(z) if instantiate else z
