"""arrax.experimental.pallas.ops.tpu.paged_attention
(`jax.experimental.pallas.ops.tpu.paged_attention`): attention over a paged KV cache."""
from arrax.experimental.pallas.ops.tpu.paged_attention import (  # noqa: F401
    paged_attention_kernel as paged_attention_kernel, quantization_utils as quantization_utils,
    util as util)
from arrax._src.pallas.ops_tpu_paged_attention import (  # noqa: E402
    paged_attention as paged_attention)
