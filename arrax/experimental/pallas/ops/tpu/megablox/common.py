"""arrax.experimental.pallas.ops.tpu.megablox.common: dtype and device helpers."""
from arrax._src.pallas.ops_tpu_megablox import (
    assert_is_supported_dtype as assert_is_supported_dtype, is_tpu as is_tpu,
    select_input_dtype as select_input_dtype,
    supports_bfloat16_matmul as supports_bfloat16_matmul, tpu_generation as tpu_generation,
    tpu_kind as tpu_kind)
