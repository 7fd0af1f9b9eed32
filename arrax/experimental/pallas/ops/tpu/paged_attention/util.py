"""arrax.experimental.pallas.ops.tpu.paged_attention.util: the dense grouped-query attention
reference."""
from arrax.experimental.pallas.ops.tpu.paged_attention import (  # noqa: F401
    quantization_utils as quantization_utils)
from arrax._src.pallas.ops_tpu_paged_attention import (  # noqa: E402
    MASK_VALUE as MASK_VALUE,
    grouped_query_attention_reference as grouped_query_attention_reference)
