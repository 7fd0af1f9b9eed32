"""arrax.experimental.pallas.ops.tpu.ragged_paged_attention
(`jax.experimental.pallas.ops.tpu.ragged_paged_attention`): attention of mixed prefill and
decode sequences over a paged KV cache."""
from arrax.experimental.pallas.ops.tpu.ragged_paged_attention import (  # noqa: F401
    kernel as kernel, tuned_block_sizes as tuned_block_sizes)
from arrax._src.pallas.ops_tpu_ragged_paged_attention import (  # noqa: E402
    dynamic_validate_inputs as dynamic_validate_inputs,
    get_tuned_block_sizes as get_tuned_block_sizes,
    ragged_paged_attention as ragged_paged_attention,
    ref_ragged_paged_attention as ref_ragged_paged_attention,
    static_validate_inputs as static_validate_inputs)
