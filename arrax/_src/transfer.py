"""Array transfers between processes (`jax.experimental.transfer`) over jaxlib's transfer server.

JAX hands out jaxlib's `TransferServer`/`TransferConnection` themselves, with Python methods
attached to those classes; arrax leaves the classes alone and wraps their instances. A server
offers arrays under a uuid (`await_pull`); a connection to a server fetches them (`pull`).
jaxlib's pull that builds new arrays imports jax to type them, so arrax's `pull` allocates the
destination arrays itself and has jaxlib fill them (`_pull_into_flat`).
"""
from __future__ import annotations

from typing import Any

import numpy as np
from jaxlib import _jax

from arrax._src import api
from arrax._src.array import Array, ShardedArray
from arrax._src.tree_util import pub_tree_flatten


def _jaxlib_array(x):
  if isinstance(x, ShardedArray):
    return x._gbuf
  if isinstance(x, Array):
    return x._buf
  return x    # (jaxlib raises its TypeError)


class TransferConnection:
  """A connection to exactly one peer server."""
  __slots__ = ("_conn",)

  def __init__(self, conn):
    self._conn = conn

  def _pull_flat(self, uuid, backend, xs_flat, timeout=None):
    del backend   # (the destinations' sharding names the devices)
    # Fresh arrays only this pull can see, which jaxlib overwrites in place.
    dests = [api.device_put(np.zeros(x.shape, x.dtype), x.sharding) for x in xs_flat]
    kw = {} if timeout is None else {"timeout": timeout}
    tokens = self._conn._pull_into_flat(uuid, [_jaxlib_array(d) for d in dests],
                                        [slice(None)] * len(dests), **kw)
    for t in tokens:
      t.block_until_ready()
    return dests

  def pull(self, uuid: int, xs: Any, timeout: Any = None) -> Any:
    """Fetch the arrays the peer offered under `uuid`, described by `xs` (a pytree of
    ShapeDtypeStructs with shardings); `timeout` is an absolute datetime.datetime."""
    flat, tree = pub_tree_flatten(xs)
    if not flat:
      return xs
    backend = next(iter(flat[0].sharding.device_set)).client
    return tree.unflatten(self._pull_flat(uuid, backend, flat, timeout=timeout))


class TransferServer:
  """A server offering arrays to peers (made by `start_transfer_server`)."""
  __slots__ = ("_server",)

  def __init__(self, server):
    self._server = server

  def address(self) -> str:
    """The address peers connect to."""
    return self._server.address()

  def _await_pull_flat(self, uuid, args, timeout=None):
    kw = {} if timeout is None else {"timeout": timeout}
    self._server._await_pull_flat(uuid, [_jaxlib_array(a) for a in args], **kw)

  def connect(self, address: str) -> TransferConnection:
    """A connection to the server at `address`."""
    return TransferConnection(self._server.connect(address))

  def await_pull(self, uuid: int, arrays: Any, timeout: Any = None) -> Any:
    """Offer a pytree of arrays to be pulled once by a peer under `uuid`."""
    self._await_pull_flat(uuid, pub_tree_flatten(arrays)[0], timeout=timeout)


def start_transfer_server(client, address: str = "[::]:0",
                          transport_addresses=(), max_num_parallel_copies: int = 8,
                          transfer_size: int = 256 * 1024 * 1024,
                          supports_pinned_allocator: bool = False,
                          use_raw_buffers: bool = False) -> TransferServer:
  """Start a transfer server for `client`'s devices listening at `address`."""
  return TransferServer(_jax.start_transfer_server(
      client, address, list(transport_addresses), max_num_parallel_copies, transfer_size,
      supports_pinned_allocator, use_raw_buffers))


def make_error_array(aval, message):
  """JAX's array that fails every use with `message`. jaxlib builds such arrays only through
  a path that imports jax, so arrax does not provide them."""
  raise NotImplementedError(
      "make_error_array is not available in arrax: jaxlib makes error arrays only through a "
      "path that imports jax.")
