"""arrax.experimental.pallas.ops.tpu.paged_attention.paged_attention_kernel: the paged
attention kernels."""
from arrax.experimental.pallas.ops.tpu.paged_attention import (  # noqa: F401
    quantization_utils as quantization_utils)
from arrax._src.pallas.ops_tpu_paged_attention import (  # noqa: E402
    DEFAULT_MASK_VALUE as DEFAULT_MASK_VALUE,
    MultiPageAsyncCopyDescriptor as MultiPageAsyncCopyDescriptor,
    paged_attention as paged_attention,
    paged_flash_attention_kernel as paged_flash_attention_kernel,
    paged_flash_attention_kernel_inline_seq_dim as paged_flash_attention_kernel_inline_seq_dim)
