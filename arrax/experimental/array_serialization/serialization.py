"""arrax.experimental.array_serialization.serialization: asynchronous array checkpointing."""
from arrax._src.array_serialization.serialization import (  # noqa: F401
    AsyncManager as AsyncManager, BarrierTimeoutError as BarrierTimeoutError,
    GlobalAsyncCheckpointManager as GlobalAsyncCheckpointManager,
    GlobalAsyncCheckpointManagerBase as GlobalAsyncCheckpointManagerBase,
    TS_CONTEXT as TS_CONTEXT, _CHECKPOINT_SUCCESS, _DEFAULT_DRIVER, _LimitInFlightBytes,
    _get_key, _get_metadata, async_deserialize as async_deserialize,
    async_serialize as async_serialize, get_tensorstore_spec as get_tensorstore_spec,
    is_remote_storage as is_remote_storage, run_deserialization as run_deserialization,
    run_serialization as run_serialization, ts_impl)
