"""arrax.experimental.buffer_callback (`jax.experimental.buffer_callback`): host callbacks
writing their results in place."""
from arrax._src.buffer_callback import (
    Buffer as Buffer, ExecutionContext as ExecutionContext, ExecutionStage as ExecutionStage,
    buffer_callback as buffer_callback)
