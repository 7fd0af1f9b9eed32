"""arrax.experimental.pallas.ops.tpu.ragged_paged_attention.kernel: the kernel, its reference
and input validation."""
from arrax._src.pallas.ops_tpu_ragged_paged_attention import (
    DEFAULT_MASK_VALUE as DEFAULT_MASK_VALUE,
    MultiPageAsyncCopyDescriptor as MultiPageAsyncCopyDescriptor,
    dynamic_validate_inputs as dynamic_validate_inputs, get_dtype_packing as get_dtype_packing,
    get_min_heads_per_blk as get_min_heads_per_blk,
    get_tuned_block_sizes as get_tuned_block_sizes,
    ragged_paged_attention as ragged_paged_attention,
    ragged_paged_attention_kernel as ragged_paged_attention_kernel,
    ref_ragged_paged_attention as ref_ragged_paged_attention,
    static_validate_inputs as static_validate_inputs)
