"""arrax.interpreters.batching (`jax.interpreters.batching`): register batching rules."""
from arrax._src.interpreters.batching import (
    axis_primitive_batchers as axis_primitive_batchers,
    bdim_at_front as bdim_at_front,
    broadcast as broadcast,
    defbroadcasting as defbroadcasting,
    defreducer as defreducer,
    defvectorized as defvectorized,
    fancy_primitive_batchers as fancy_primitive_batchers,
    primitive_batchers as primitive_batchers,
    register_vmappable as register_vmappable,
    unregister_vmappable as unregister_vmappable,
)
