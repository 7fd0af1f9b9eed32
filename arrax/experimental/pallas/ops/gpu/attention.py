"""arrax.experimental.pallas.ops.gpu.attention: fused attention with a fused backward kernel."""
from arrax._src.pallas.ops_gpu_attention import (
    DEFAULT_MASK_VALUE as DEFAULT_MASK_VALUE, BlockSizes as BlockSizes, mha as mha,
    mha_backward_kernel as mha_backward_kernel, mha_forward_kernel as mha_forward_kernel,
    mha_reference as mha_reference, segment_mask as segment_mask)
