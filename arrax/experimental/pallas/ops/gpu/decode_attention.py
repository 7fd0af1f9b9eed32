"""arrax.experimental.pallas.ops.gpu.decode_attention: split-kv decode attention (mqa, gqa)."""
from arrax._src.pallas.ops_gpu_decode_attention import (
    attn_forward_kernel as attn_forward_kernel, decode_attn_unbatched as decode_attn_unbatched,
    gqa as gqa, gqa_reference as gqa_reference, mha_reference as mha_reference, mqa as mqa,
    mqa_reference as mqa_reference)
