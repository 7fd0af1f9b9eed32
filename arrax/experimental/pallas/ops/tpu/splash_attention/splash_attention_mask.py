"""arrax.experimental.pallas.ops.tpu.splash_attention.splash_attention_mask: splash attention
mask objects (host-side NumPy)."""
from arrax._src.pallas.ops_tpu_splash_mask import (
    CausalMask as CausalMask, ChunkedCausalMask as ChunkedCausalMask, FullMask as FullMask,
    LocalMask as LocalMask, LogicalAnd as LogicalAnd, LogicalOr as LogicalOr, Mask as Mask,
    MultiHeadMask as MultiHeadMask, NumpyMask as NumpyMask,
    make_causal_mask as make_causal_mask, make_chunk_attention_mask as make_chunk_attention_mask,
    make_local_attention_mask as make_local_attention_mask, make_random_mask as make_random_mask)
