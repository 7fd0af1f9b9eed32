"""arrax.experimental.pallas.ops.tpu.splash_attention.splash_attention_kernel: splash
(block-sparse flash) attention kernels and their references."""
from arrax._src.pallas.ops_tpu_splash_kernel import (
    DEFAULT_MASK_VALUE as DEFAULT_MASK_VALUE, NN_DIM_NUMBERS as NN_DIM_NUMBERS,
    NT_DIM_NUMBERS as NT_DIM_NUMBERS, NUM_LANES as NUM_LANES, NUM_SUBLANES as NUM_SUBLANES,
    BlockSizes as BlockSizes, MaskFunctionType as MaskFunctionType, QKVLayout as QKVLayout,
    SegmentIds as SegmentIds, SplashAttentionKernel as SplashAttentionKernel,
    SplashCustomReturnType as SplashCustomReturnType,
    SplashResidualsType as SplashResidualsType, attention_reference as attention_reference,
    attention_reference_custom as attention_reference_custom,
    flash_attention_kernel as flash_attention_kernel, from_head_minor as from_head_minor,
    get_kernel_name as get_kernel_name, make_attention_reference as make_attention_reference,
    make_masked_mha_reference as make_masked_mha_reference,
    make_masked_mqa_reference as make_masked_mqa_reference, make_splash_mha as make_splash_mha,
    make_splash_mha_single_device as make_splash_mha_single_device,
    make_splash_mqa as make_splash_mqa,
    make_splash_mqa_single_device as make_splash_mqa_single_device, partial as partial)
