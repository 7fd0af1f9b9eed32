"""arrax.experimental.pallas.ops.tpu.flash_attention: blockwise attention kernels."""
from arrax._src.pallas.ops_tpu_flash_attention import (
    DEFAULT_MASK_VALUE as DEFAULT_MASK_VALUE, MIN_BLOCK_SIZE as MIN_BLOCK_SIZE,
    NUM_LANES as NUM_LANES, NUM_SUBLANES as NUM_SUBLANES, BlockSizes as BlockSizes,
    SegmentIds as SegmentIds, below_or_on_diag as below_or_on_diag,
    flash_attention as flash_attention, mha_reference as mha_reference,
    mha_reference_bwd as mha_reference_bwd,
    mha_reference_no_custom_vjp as mha_reference_no_custom_vjp)
