"""Pytree structures as JSON-friendly dicts, and the future `nonblocking_save/load` return
(`jax.experimental.array_serialization.pytree_serialization_utils`).

A structure is stored as base64 of the flatbuffer `jax.export` uses for in/out trees, so
custom nodes need `register_pytree_node_serialization`, as there.
"""
import base64
import logging
from concurrent.futures import Future
from types import ModuleType
from typing import Any, TypeVar

from arrax._src.export import flatbuf
from arrax._src.export.serialization import (_pytreedef_table, _read_pytree,
                                             register_pytree_node_serialization)
from arrax._src.tree_util import tree_structure

T = TypeVar("T")
PickleModule = ModuleType
logger = logging.getLogger(__name__)

_READABLE_PYTREE_SERIALIZATION = True
_TREE_REPR_KEY = "__jax_pytreedef_repr"
_LEAF_IDS_KEY = "__jax_leaf_ids"
_NOT_REGISTERED_MESSAGE = (
    "  * If you want to register a custom leaf, register it via "
    "`register_pytree_leaf_serialization` first.\n"
    "  * If you want to register a custom node, register is via "
    "`register_pytree_node_serialization`")

__all__ = ["serialize_pytreedef", "deserialize_pytreedef",
           "register_pytree_node_serialization"]


class PyTreeFuture(Future):
  """A concurrent Future that can also be awaited; `pytree` describes what it will hold."""

  def __init__(self, future: Future):
    self._future, self.pytree = future, None

  def done(self):
    return self._future.done()

  def result(self, *args, **kw):
    return self._future.result(*args, **kw)

  def __await__(self):
    while not self.done():
      yield
    return self.result()

  def __repr__(self):
    return f"PyTreeFuture(done={self.done()}, pytree={self.pytree})"


def serialize_pytreedef(node) -> dict[str, Any]:
  """The dict holding the treedef `node` (base64 flatbuffer) and its leaf ids 0..n-1."""
  blob = flatbuf.encode(_pytreedef_table(node))
  return {_TREE_REPR_KEY: base64.b64encode(bytes(blob)).decode("utf-8"),
          _LEAF_IDS_KEY: list(range(node.num_leaves))}


class _Placeholder:
  pass


def deserialize_pytreedef(pytreedef_repr: dict[str, Any]):
  """The treedef stored in a `serialize_pytreedef` dict."""
  table = flatbuf.TableReader.root(base64.b64decode(pytreedef_repr[_TREE_REPR_KEY]))
  leaf = _Placeholder()
  tree = _read_pytree(table, iter(lambda: leaf, None))
  return tree_structure(tree, is_leaf=lambda x: x is leaf)
