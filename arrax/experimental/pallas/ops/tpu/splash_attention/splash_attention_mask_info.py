"""arrax.experimental.pallas.ops.tpu.splash_attention.splash_attention_mask_info: masks turned
into the block-sparse `MaskInfo` the splash kernels take."""
from arrax._src.pallas.ops_tpu_splash_mask_info import (
    MaskInfo as MaskInfo, process_dynamic_mask as process_dynamic_mask,
    process_dynamic_mask_dkv as process_dynamic_mask_dkv, process_mask as process_mask,
    process_mask_dkv as process_mask_dkv)
