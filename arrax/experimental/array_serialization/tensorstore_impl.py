"""arrax.experimental.array_serialization.tensorstore_impl: arrays <-> TensorStore specs."""
from arrax._src.array_serialization.tensorstore_impl import (  # noqa: F401
    Future as Future, Transaction as Transaction, _DEFAULT_BASE_DRIVER, _FILE_SIZE_TARGET,
    _LimitInFlightBytes, _PROCESS_DIR_FORMAT, _TS_ARRAY_DRIVER, _TS_CHUNK_LAYOUT, _TS_CONTEXT,
    _compute_chunk_shape, _create_async_array_from_callback, _get_kvstore_for_gcs,
    _get_kvstore_for_s3, _get_tensorstore_metadata, _get_tensorstore_metadata_cached,
    _run_deserialization, _run_serialization, _spec_has_metadata, _transfer_shard_to_host,
    async_deserialize as async_deserialize, async_serialize as async_serialize,
    combine_kvstores as combine_kvstores,
    estimate_read_memory_footprint as estimate_read_memory_footprint,
    get_tensorstore_spec as get_tensorstore_spec,
    is_tensorstore_spec_leaf as is_tensorstore_spec_leaf,
    merge_nested_ts_specs as merge_nested_ts_specs,
    verify_tensorstore_spec as verify_tensorstore_spec)
