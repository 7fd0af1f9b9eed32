"""arrax.experimental.control_deps (jax.experimental.control_deps)."""
from arrax._src.control_deps import control_dep as control_dep, schedule as schedule
