"""arrax.experimental.serialize_executable (`jax.experimental.serialize_executable`): compiled
executables as bytes, loaded back (in this process or another) as Compiled objects."""
from arrax._src.serialize_executable import (
    deserialize_and_load as deserialize_and_load, serialize as serialize)
