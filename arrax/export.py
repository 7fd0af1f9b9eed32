"""jax.export: serialize jitted functions as StableHLO with JAX's calling convention, and call
serialized functions (made by arrax or JAX)."""
from arrax._src.export._export import (
    DisabledSafetyCheck as DisabledSafetyCheck,
    Exported as Exported,
    default_export_platform as default_export_platform,
    deserialize as deserialize,
    export as export,
    maximum_supported_calling_convention_version as maximum_supported_calling_convention_version,
    minimum_supported_calling_convention_version as minimum_supported_calling_convention_version,
    register_pytree_node_serialization as register_pytree_node_serialization,
)
from arrax._src.export.serialization import (
    register_namedtuple_serialization as register_namedtuple_serialization,
)
from arrax._src.export.shape_poly import (
    SymbolicScope as SymbolicScope,
    is_symbolic_dim as is_symbolic_dim,
    symbolic_args_specs as symbolic_args_specs,
    symbolic_shape as symbolic_shape,
)
