"""arrax.scipy.integrate, as jax.scipy.integrate."""
from arrax._src.scipy.integrate import trapezoid as trapezoid  # noqa: F401
