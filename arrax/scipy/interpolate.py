"""arrax.scipy.interpolate, as jax.scipy.interpolate."""
from arrax._src.scipy.interpolate import (  # noqa: F401
    RegularGridInterpolator as RegularGridInterpolator)
