"""arrax.experimental.pallas.ops.tpu.ragged_paged_attention.tuned_block_sizes: block sizes of
the kernel per TPU (arrax has no tuned table: TPUs v5 and later get the defaults)."""
from arrax._src.pallas.ops_tpu_ragged_paged_attention import (
    MAX_PAGES_PER_SEQ as MAX_PAGES_PER_SEQ, TUNED_BLOCK_SIZES as TUNED_BLOCK_SIZES,
    get_device_name as get_device_name, get_min_page_size as get_min_page_size,
    get_tpu_version as get_tpu_version, get_tuned_block_sizes as get_tuned_block_sizes,
    next_power_of_2 as next_power_of_2, simplify_key as simplify_key)
