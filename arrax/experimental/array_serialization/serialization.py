"""arrax.experimental.array_serialization.serialization: asynchronous array checkpointing."""
from arrax._src.array_serialization.serialization import (  # noqa: F401
    AsyncManager as AsyncManager, BarrierTimeoutError as BarrierTimeoutError,
    GlobalAsyncCheckpointManager as GlobalAsyncCheckpointManager,
    GlobalAsyncCheckpointManagerBase as GlobalAsyncCheckpointManagerBase,
    _CHECKPOINT_SUCCESS, _get_key, _get_metadata, get_tensorstore_spec as get_tensorstore_spec,
    is_remote_storage as is_remote_storage, ts_impl)
# (the TensorStore functions this module has always exported)
from arrax._src.array_serialization.tensorstore_impl import (  # noqa: F401
    _DEFAULT_BASE_DRIVER as _DEFAULT_DRIVER, _LimitInFlightBytes, _TS_CONTEXT as TS_CONTEXT,
    _run_deserialization as run_deserialization, _run_serialization as run_serialization,
    async_deserialize as async_deserialize, async_serialize as async_serialize)
