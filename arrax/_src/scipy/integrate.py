"""arrax.scipy.integrate: the trapezoidal rule (jnp.trapezoid under its own jit)."""
from arrax._src.jit import jit
from arrax._src.numpy import statistics


@jit(static_argnames=("axis",))
def trapezoid(y, x=None, dx=1.0, axis=-1):
  """The integral of y along `axis` by the trapezoidal rule (sample points x, or spacing dx)."""
  return statistics.trapezoid(y, x, dx, axis)
