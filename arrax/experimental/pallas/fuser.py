"""arrax.experimental.pallas.fuser (`jax.experimental.pallas.fuser`): fusing the computations
around a `fusible` kernel into it (`fuse`), and carrying block specs through the fused
computations (`pull_block_spec`, `push_block_spec`)."""
from arrax._src.pallas.fuser_block_spec import (
    BlockIndexTransform as BlockIndexTransform, get_fusion_values as get_fusion_values,
    get_stateful_input_fusion_values as get_stateful_input_fusion_values,
    get_stateful_output_fusion_values as get_stateful_output_fusion_values,
    make_scalar_prefetch_handler as make_scalar_prefetch_handler,
    pull_block_spec as pull_block_spec, push_block_spec as push_block_spec)
from arrax._src.pallas.fusion import (Fusion as Fusion, custom_fusion as custom_fusion,
                                      evaluate as evaluate, fusible as fusible, fuse as fuse)
