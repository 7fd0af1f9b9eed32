"""arrax.extend.mlir (`jax.extend.mlir`): jaxlib's StableHLO module conversions and the
lowering helper for sharding in types."""
from jaxlib import _jax as _jax

from arrax._src.interpreters.mlir import (
    lower_with_sharding_in_types as lower_with_sharding_in_types)

deserialize_portable_artifact = _jax.mlir.deserialize_portable_artifact
serialize_portable_artifact = _jax.mlir.serialize_portable_artifact
refine_polymorphic_shapes = _jax.mlir.refine_polymorphic_shapes
hlo_to_stablehlo = _jax.mlir.hlo_to_stablehlo

del _jax
