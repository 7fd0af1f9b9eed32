"""arrax.experimental.pallas.ops.tpu.paged_attention.quantization_utils: int8 quantization of
KV pages."""
from arrax._src.pallas.ops_tpu_paged_attention import (
    MAX_INT8 as MAX_INT8, P as P, QuantizedTensor as QuantizedTensor, from_int8 as from_int8,
    get_quantization_scales as get_quantization_scales, quantize_to_int8 as quantize_to_int8,
    to_int8 as to_int8, unquantize_from_int8 as unquantize_from_int8)
