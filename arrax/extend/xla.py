"""arrax.extend.xla (`jax.extend.xla`): XLA compiler extensions."""
from arrax._src.xla_transform import (
    PipelineStage as PipelineStage,
    clear_hlo_module_transformation as clear_hlo_module_transformation,
    register_hlo_module_transformation as register_hlo_module_transformation,
)
