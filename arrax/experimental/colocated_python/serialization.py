"""arrax.experimental.colocated_python.serialization
(`jax.experimental.colocated_python.serialization`): the device list type colocated calls are
specialized with."""
from jaxlib.xla_client import (
    DeviceList as DeviceList,
)
