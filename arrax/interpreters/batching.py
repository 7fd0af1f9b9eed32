"""arrax.interpreters.batching (`jax.interpreters.batching`): register batching rules."""
from arrax._src.interpreters.batching import (
    axis_primitive_batchers as axis_primitive_batchers,
    bdim_at_front as bdim_at_front,
    broadcast as broadcast,
    defbroadcasting as defbroadcasting,
    defvectorized as defvectorized,
    fancy_primitive_batchers as fancy_primitive_batchers,
    primitive_batchers as primitive_batchers,
)
