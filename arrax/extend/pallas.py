"""arrax.extend.pallas (`jax.extend.pallas`): extension points of Pallas."""
from arrax._src.pallas.core import (
    GridMapping as GridMapping,
    register_lowering_rule as register_lowering_rule,
)
