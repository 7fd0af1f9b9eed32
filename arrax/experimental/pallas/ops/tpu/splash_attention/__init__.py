"""arrax.experimental.pallas.ops.tpu.splash_attention
(`jax.experimental.pallas.ops.tpu.splash_attention`): block-sparse flash attention kernels
and their masks."""
from arrax._src.pallas.ops_tpu_splash_kernel import (
    BlockSizes as BlockSizes, QKVLayout as QKVLayout, SegmentIds as SegmentIds,
    make_masked_mha_reference as make_masked_mha_reference,
    make_masked_mqa_reference as make_masked_mqa_reference, make_splash_mha as make_splash_mha,
    make_splash_mha_single_device as make_splash_mha_single_device,
    make_splash_mqa as make_splash_mqa,
    make_splash_mqa_single_device as make_splash_mqa_single_device)
from arrax._src.pallas.ops_tpu_splash_mask import (
    CausalMask as CausalMask, FullMask as FullMask, LocalMask as LocalMask, Mask as Mask,
    MultiHeadMask as MultiHeadMask, NumpyMask as NumpyMask, make_causal_mask as make_causal_mask,
    make_local_attention_mask as make_local_attention_mask, make_random_mask as make_random_mask)
