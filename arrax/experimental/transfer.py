"""arrax.experimental.transfer (`jax.experimental.transfer`): array transfers between
processes through jaxlib's transfer server."""
from arrax._src.transfer import (
    TransferConnection as TransferConnection, TransferServer as TransferServer,
    make_error_array as make_error_array, start_transfer_server as start_transfer_server)
