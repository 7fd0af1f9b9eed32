"""arrax.experimental.pallas.ops.gpu.paged_attention: paged grouped-query decode attention."""
from arrax._src.pallas.ops_gpu_paged_attention import (
    DEFAULT_MASK_VALUE as DEFAULT_MASK_VALUE, paged_attention as paged_attention,
    paged_attention_kernel as paged_attention_kernel,
    paged_attention_reference as paged_attention_reference,
    paged_attention_unbatched as paged_attention_unbatched)
