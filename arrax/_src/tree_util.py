"""Pytree utilities for arrax.

Pytrees are nested containers (tuples, lists, dicts, namedtuples, ``None`` and
registered custom nodes) whose non-container contents are leaves.  Flattening
and unflattening run in jaxlib's C++ pytree implementation, using a registry
owned by arrax (jax's own registries are never touched).
"""
from __future__ import annotations

import collections
import dataclasses
import difflib
import functools
import operator
import textwrap
from collections.abc import Callable, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from jaxlib import _jax

_pytree = _jax.pytree

__all__ = [
    "PyTreeDef", "KeyEntry", "KeyPath", "default_registry", "registry",
    "DictKey", "SequenceKey", "GetAttrKey", "FlattenedIndexKey", "keystr",
    "tree_flatten", "tree_unflatten", "tree_leaves", "tree_structure",
    "tree_map", "tree_reduce", "tree_reduce_associative", "tree_all",
    "tree_transpose", "tree_broadcast", "tree_flatten_with_path",
    "tree_leaves_with_path", "tree_map_with_path", "treedef_children",
    "treedef_is_leaf", "treedef_tuple", "all_leaves", "is_tree_node",
    "flatten_one_level", "flatten_one_level_with_keys",
    "register_pytree_node", "register_pytree_node_class",
    "register_pytree_with_keys", "register_pytree_with_keys_class",
    "register_dataclass", "register_static", "Partial", "static",
]

T = TypeVar("T")
Typ = TypeVar("Typ", bound=type)

PyTreeDef = _pytree.PyTreeDef
KeyEntry = Any
KeyPath = tuple[Any, ...]

DictKey = _pytree.DictKey
SequenceKey = _pytree.SequenceKey
GetAttrKey = _pytree.GetAttrKey
FlattenedIndexKey = _pytree.FlattenedIndexKey

# arrax's own registry; None is an empty node (not a leaf), as in JAX.
registry = _pytree.PyTreeRegistry(
    enable_none=True, enable_tuple=True, enable_namedtuple=True,
    enable_list=True, enable_dict=True)
# PyTreeDef pickles its registry by reference through these attributes.
registry.__module__ = __name__
registry.__name__ = "registry"
default_registry = registry


class _Missing:
  """Sentinel type for omitted optional arguments."""

  def __repr__(self):
    return "<missing>"


_MISSING = _Missing()


# ---------------------------------------------------------------------------
# Flattening and treedefs
# ---------------------------------------------------------------------------

def tree_flatten(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                 ) -> tuple[list[Any], PyTreeDef]:
  """Flattens ``tree`` into a list of leaves and a treedef."""
  return registry.flatten(tree, is_leaf)


def tree_unflatten(treedef: PyTreeDef, leaves: Iterable[Any]) -> Any:
  """Rebuilds a pytree with structure ``treedef`` from ``leaves``."""
  return treedef.unflatten(leaves)


def tree_leaves(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                ) -> list[Any]:
  """Returns the leaves of ``tree`` in flattening order."""
  return registry.flatten(tree, is_leaf)[0]


def tree_structure(tree: Any, is_leaf: Callable[[Any], bool] | None = None
                   ) -> PyTreeDef:
  """Returns the treedef describing the structure of ``tree``."""
  return registry.flatten(tree, is_leaf)[1]


def treedef_tuple(treedefs: Iterable[PyTreeDef]) -> PyTreeDef:
  """Returns the treedef of a tuple whose children have ``treedefs``."""
  return _pytree.treedef_tuple(registry, list(treedefs))


def treedef_children(treedef: PyTreeDef) -> list[PyTreeDef]:
  """Returns the treedefs of the root's immediate children."""
  return treedef.children()


def treedef_is_leaf(treedef: PyTreeDef) -> bool:
  """True if ``treedef`` consists of a single node (a leaf or empty node)."""
  return treedef.num_nodes == 1


def _is_strict_leaf(treedef: PyTreeDef) -> bool:
  return treedef.num_nodes == 1 and treedef.num_leaves == 1


def all_leaves(iterable: Iterable[Any],
               is_leaf: Callable[[Any], bool] | None = None) -> bool:
  """True if every element of ``iterable`` is a pytree leaf."""
  if is_leaf is None:
    return _pytree.all_leaves(registry, iterable)
  items = list(iterable)
  leaves = tree_leaves(items, is_leaf)
  return len(leaves) == len(items) and all(
      a is b for a, b in zip(items, leaves))


def is_tree_node(typ: type) -> bool:
  """True if ``typ`` is a pytree node type (built-in or registered)."""
  return registry.is_node(typ)


def flatten_one_level(tree: Any) -> tuple[Iterable[Any], Hashable]:
  """Splits a pytree node into its children and its node metadata."""
  out = registry.flatten_one_level(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


def flatten_one_level_with_keys(tree: Any) -> tuple[Iterable[Any], Hashable]:
  """Like :func:`flatten_one_level`, but children come as (key, child)."""
  out = registry.flatten_one_level_with_keys(tree)
  if out is None:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return out


# ---------------------------------------------------------------------------
# Key paths
# ---------------------------------------------------------------------------

def _simple_key_str(key: Any) -> str:
  if isinstance(key, SequenceKey):
    return str(key.idx)
  if isinstance(key, DictKey | FlattenedIndexKey):
    return str(key.key)
  if isinstance(key, GetAttrKey):
    return str(key.name)
  return str(key)


def keystr(keys: KeyPath, *, simple: bool = False, separator: str = "") -> str:
  """Formats a key path as a string, e.g. ``['a'][0].b``.

  With ``simple=True`` only the bare keys are printed (``a``, ``0``, ``b``),
  joined by ``separator``.
  """
  to_str = _simple_key_str if simple else str
  return separator.join(to_str(k) for k in keys)


def _path_predicate(is_leaf, takes_path):
  if is_leaf is None or takes_path:
    return is_leaf
  return lambda _, x: is_leaf(x)


def tree_flatten_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                           is_leaf_takes_path: bool = False
                           ) -> tuple[list[tuple[KeyPath, Any]], PyTreeDef]:
  """Flattens ``tree`` into ``(key_path, leaf)`` pairs and a treedef."""
  return registry.flatten_with_path(
      tree, _path_predicate(is_leaf, is_leaf_takes_path))


def tree_leaves_with_path(tree: Any, is_leaf: Callable[..., bool] | None = None,
                          is_leaf_takes_path: bool = False
                          ) -> list[tuple[KeyPath, Any]]:
  """Returns the ``(key_path, leaf)`` pairs of ``tree``."""
  return tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)[0]


# ---------------------------------------------------------------------------
# Mapping, reducing, transposing
# ---------------------------------------------------------------------------

def _child_keys(tree: Any) -> tuple[Any, ...]:
  return tuple(k for k, _ in flatten_one_level_with_keys(tree)[0])


def _structure_mismatch(path: KeyPath, prefix: Any, full: Any, is_leaf):
  """Finds where ``prefix`` fails to be a tree prefix of ``full``.

  Returns a function mapping the argument name to a ValueError, or None.
  """
  if _is_strict_leaf(tree_structure(prefix, is_leaf)):
    return None  # a leaf is a prefix of anything
  where = lambda name: f"    {name}{keystr(path)}\n"

  if type(prefix) is not type(full):
    return lambda name: ValueError(
        "pytree structure error: different types at key path\n" + where(name)
        + f"There the prefix pytree {name} has a subtree of type\n"
        f"    {type(prefix)}\nwhile the full pytree has type\n"
        f"    {type(full)}.")

  prefix_children, prefix_meta = flatten_one_level(prefix)
  full_children, full_meta = flatten_one_level(full)
  prefix_children, full_children = tuple(prefix_children), tuple(full_children)
  prefix_keys, full_keys = _child_keys(prefix), _child_keys(full)

  if isinstance(prefix, list | tuple):
    if len(prefix) != len(full):
      tname = type(prefix).__name__
      return lambda name: ValueError(
          f"pytree structure error: different lengths of {tname} at key path\n"
          + where(name) + f"There the prefix pytree {name} has a {tname} of "
          f"length {len(prefix)}, while the full pytree has a {tname} of "
          f"length {len(full)}.")
  elif len(prefix_children) != len(full_children):
    def keys_str(ks):
      return " ".join(str(getattr(k, "key", k)) for k in ks)
    try:
      diff = "\nsymmetric difference of the key sets:\n    " + keys_str(
          set(prefix_keys) ^ set(full_keys))
    except TypeError:
      diff = ""
    return lambda name: ValueError(
        "pytree structure error: different numbers of pytree children at key "
        "path\n" + where(name) + f"There the prefix pytree {name} has a "
        f"subtree of type\n    {type(prefix)}\nwith {len(prefix_children)} "
        f"child keys\n    {keys_str(prefix_keys)}\nwhile the full pytree has "
        f"{len(full_children)} child keys\n    {keys_str(full_keys)}" + diff)

  if prefix_meta != full_meta:
    a, b = str(prefix_meta), str(full_meta)
    ndiff = textwrap.indent(
        "\n".join(difflib.ndiff(a.splitlines(), b.splitlines())), "    ")
    return lambda name: ValueError(
        "pytree structure error: different pytree metadata at key path\n"
        + where(name) + f"There the prefix pytree {name} has a subtree of "
        f"type\n    {type(prefix)}\nwith metadata\n    {a}\nwhile the full "
        f"pytree's metadata is\n    {b}\ndiff:\n{ndiff}")

  for k, p, f in zip(prefix_keys, prefix_children, full_children):
    err = _structure_mismatch((*path, k), p, f, is_leaf)
    if err is not None:
      return err
  return None


def _flatten_rest(treedef, tree, rest, is_leaf, what):
  """Flattens each of ``rest`` up to ``treedef``, explaining mismatches."""
  out = []
  for r in rest:
    try:
      out.append(treedef.flatten_up_to(r))
    except Exception as e:
      err = _structure_mismatch((), tree, r, is_leaf)
      raise (err(what) if err is not None else e) from None
  return out


def tree_map(f: Callable[..., Any], tree: Any, *rest: Any,
             is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Applies ``f`` leafwise; each of ``rest`` must have ``tree`` as a prefix."""
  leaves, treedef = tree_flatten(tree, is_leaf)
  others = _flatten_rest(treedef, tree, rest, is_leaf, "tree_map tree")
  return treedef.unflatten(f(*xs) for xs in zip(leaves, *others))


def tree_map_with_path(f: Callable[..., Any], tree: Any, *rest: Any,
                       is_leaf: Callable[..., bool] | None = None,
                       is_leaf_takes_path: bool = False) -> Any:
  """Like :func:`tree_map`, but ``f`` receives the key path first."""
  pairs, treedef = tree_flatten_with_path(tree, is_leaf, is_leaf_takes_path)
  others = _flatten_rest(treedef, tree, rest,
                         None if is_leaf_takes_path else is_leaf,
                         "tree_map_with_path tree")
  return treedef.unflatten(
      f(path, x, *xs) for (path, x), *xs in zip(pairs, *others))


def tree_reduce(function: Callable[[T, Any], T], tree: Any,
                initializer: Any = _MISSING,
                is_leaf: Callable[[Any], bool] | None = None) -> T:
  """Folds ``function`` over the leaves of ``tree`` (like functools.reduce)."""
  leaves = tree_leaves(tree, is_leaf)
  if initializer is _MISSING:
    return functools.reduce(function, leaves)
  return functools.reduce(function, leaves, initializer)


def tree_reduce_associative(operation: Callable[[T, T], T], tree: Any, *,
                            identity: Any = _MISSING,
                            is_leaf: Callable[[Any], bool] | None = None) -> T:
  """Reduces the leaves with an associative ``operation`` as a balanced tree."""
  def reduce(xs):
    if len(xs) == 1:
      return xs[0]
    mid = len(xs) // 2
    return operation(reduce(xs[:mid]), reduce(xs[mid:]))

  leaves = tree_leaves(tree, is_leaf)
  if not leaves:
    if identity is _MISSING:
      raise TypeError("tree_reduce_associative: the tree has no leaves and "
                      "no identity was given.")
    return identity
  return reduce(leaves)


def tree_all(tree: Any, *, is_leaf: Callable[[Any], bool] | None = None
             ) -> bool:
  """True if every leaf of ``tree`` is truthy."""
  return all(tree_leaves(tree, is_leaf))


def tree_transpose(outer_treedef: PyTreeDef, inner_treedef: PyTreeDef | None,
                   pytree_to_transpose: Any) -> Any:
  """Turns an outer-of-inner pytree into an inner-of-outer pytree.

  If ``inner_treedef`` is None it is inferred from the first outer leaf.
  """
  flat, treedef = tree_flatten(pytree_to_transpose)
  if inner_treedef is None:
    inner_treedef = tree_structure(
        outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  n_in, n_out = inner_treedef.num_leaves, outer_treedef.num_leaves
  if treedef.num_leaves != n_in * n_out:
    expected = outer_treedef.compose(inner_treedef)
    raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
  rows = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
  return inner_treedef.unflatten(
      outer_treedef.unflatten(col) for col in zip(*rows))


def _broadcast_prefix(prefix_tree: Any, full_tree: Any,
                      is_leaf: Callable[[Any], bool] | None = None,
                      structure: Callable[[Any], Any] | None = None) -> list[Any]:
  """Repeats each prefix leaf once per leaf of the matching full subtree (its leaves counted
  by `structure`, tree_structure by default)."""
  structure = structure or tree_structure
  out: list[Any] = []
  def extend(x, subtree):
    out.extend([x] * structure(subtree).num_leaves)
  try:
    tree_map(extend, prefix_tree, full_tree, is_leaf=is_leaf)
  except ValueError:
    err = _structure_mismatch((), prefix_tree, full_tree, None)
    if err is None:
      raise
    raise err("broadcast_prefix prefix_tree") from None
  return out


def tree_broadcast(prefix_tree: Any, full_tree: Any,
                   is_leaf: Callable[[Any], bool] | None = None) -> Any:
  """Broadcasts ``prefix_tree`` leaves to the structure of ``full_tree``."""
  leaves = _broadcast_prefix(prefix_tree, full_tree, is_leaf)
  return tree_structure(full_tree).unflatten(leaves)


# ---------------------------------------------------------------------------
# Registration
# ---------------------------------------------------------------------------

# The node types registered from Python, with their flatten/unflatten functions, as JAX keeps
# them in `jax._src.tree_util._registry` (libraries test membership: flax.nnx does).
_RegistryEntry = collections.namedtuple("_RegistryEntry", ["to_iter", "from_iter"])
_registry = {
    tuple: _RegistryEntry(lambda xs: (xs, None), lambda _, xs: tuple(xs)),
    list: _RegistryEntry(lambda xs: (xs, None), lambda _, xs: list(xs)),
    dict: _RegistryEntry(lambda d: (tuple(d[k] for k in sorted(d)), tuple(sorted(d))),
                         lambda keys, xs: dict(zip(keys, xs))),
    type(None): _RegistryEntry(lambda z: ((), None), lambda _, xs: None),
}

def register_pytree_node(nodetype: type, flatten_func: Callable,
                         unflatten_func: Callable,
                         flatten_with_keys_func: Callable | None = None
                         ) -> None:
  """Registers ``nodetype`` as a pytree node.

  ``flatten_func(x) -> (children, aux_data)`` and
  ``unflatten_func(aux_data, children) -> x``; ``aux_data`` must be hashable.
  ``flatten_with_keys_func(x)`` optionally returns ``((key, child), ...)``
  pairs instead of children.
  """
  registry.register_node(nodetype, flatten_func, unflatten_func,
                         flatten_with_keys_func)
  _registry[nodetype] = _RegistryEntry(flatten_func, unflatten_func)


def register_pytree_node_class(cls: Typ) -> Typ:
  """Class decorator using ``cls.tree_flatten``/``cls.tree_unflatten``."""
  register_pytree_node(cls, operator.methodcaller("tree_flatten"),
                       cls.tree_unflatten)
  return cls


def register_pytree_with_keys(nodetype: type, flatten_with_keys: Callable,
                              unflatten_func: Callable,
                              flatten_func: Callable | None = None) -> None:
  """Registers ``nodetype`` with a key-aware flatten function.

  ``flatten_with_keys(x) -> (((key, child), ...), aux_data)``.  The optional
  ``flatten_func`` is a faster keyless equivalent.
  """
  if not flatten_func:
    def flatten_func(x):
      pairs, aux = flatten_with_keys(x)
      return [child for _, child in pairs], aux
  register_pytree_node(nodetype, flatten_func, unflatten_func,
                       flatten_with_keys)


def register_pytree_with_keys_class(cls: Typ) -> Typ:
  """Class decorator using ``tree_flatten_with_keys``/``tree_unflatten``."""
  flatten = (operator.methodcaller("tree_flatten")
             if hasattr(cls, "tree_flatten") else None)
  register_pytree_with_keys(cls, operator.methodcaller("tree_flatten_with_keys"),
                            cls.tree_unflatten, flatten)
  return cls


def register_dataclass(nodetype: Typ, data_fields: Sequence[str] | None = None,
                       meta_fields: Sequence[str] | None = None,
                       drop_fields: Sequence[str] = ()) -> Typ:
  """Registers a dataclass-like type as a pytree node.

  ``data_fields`` become children and ``meta_fields`` static metadata.  For
  dataclasses both may be omitted: fields whose ``metadata`` has
  ``static=True`` are meta fields, the rest data fields.  Instances are
  rebuilt with ``nodetype(**fields)``.
  """
  if data_fields is None or meta_fields is None:
    if (data_fields is None) != (meta_fields is None):
      raise TypeError(
          "register_dataclass: data_fields and meta_fields must be given "
          f"together. Got {data_fields=} {meta_fields=}.")
    if not dataclasses.is_dataclass(nodetype):
      raise TypeError(
          "register_dataclass: data_fields and meta_fields are required for "
          f"types that are not dataclasses. Got {nodetype=}.")
    fields = dataclasses.fields(nodetype)
    data_fields = [f.name for f in fields if not f.metadata.get("static")]
    meta_fields = [f.name for f in fields if f.metadata.get("static")]
  data_fields, meta_fields = tuple(data_fields), tuple(meta_fields)

  if dataclasses.is_dataclass(nodetype):
    init = {f.name for f in dataclasses.fields(nodetype) if f.init}
    init -= set(drop_fields)
    given = {*data_fields, *meta_fields}
    if given != init:
      msg = ("data_fields and meta_fields must list exactly the dataclass "
             "fields with ``init=True``.")
      if missing := init - given:
        msg += f" Missing fields: {missing} (list them in drop_fields to skip)."
      if unexpected := given - init:
        msg += f" Unexpected fields: {unexpected}."
      raise ValueError(msg)
  if overlap := set(data_fields) & set(meta_fields):
    raise ValueError(
        f"data_fields and meta_fields overlap. Overlapping fields: {overlap}.")

  registry.register_dataclass_node(nodetype, list(data_fields),
                                   list(meta_fields))

  def flatten_func(x):
    return (tuple(getattr(x, n) for n in data_fields),
            tuple(getattr(x, n) for n in meta_fields))

  def unflatten_func(meta, data):
    return nodetype(**dict(zip(meta_fields, meta)), **dict(zip(data_fields, data)))
  _registry[nodetype] = _RegistryEntry(flatten_func, unflatten_func)
  return nodetype


def register_static(cls: Typ) -> Typ:
  """Registers ``cls`` as a pytree node with no children (hashable aux)."""
  register_pytree_with_keys(cls, lambda x: ((), x), lambda x, _: x)
  return cls


def static(**kwargs):
  """``dataclasses.field`` that marks the field static for register_dataclass."""
  metadata = {"static": True, **(kwargs.pop("metadata", None) or {})}
  return dataclasses.field(metadata=metadata, **kwargs)


register_pytree_with_keys(
    collections.OrderedDict,
    lambda d: (tuple((DictKey(k), v) for k, v in d.items()), tuple(d)),
    lambda keys, values: collections.OrderedDict(zip(keys, values,
                                                     strict=True)))


def _flatten_defaultdict_with_keys(d):
  keys = tuple(sorted(d))
  return tuple((DictKey(k), d[k]) for k in keys), (d.default_factory, keys)


register_pytree_with_keys(
    collections.defaultdict,
    _flatten_defaultdict_with_keys,
    lambda aux, values: collections.defaultdict(
        aux[0], zip(aux[1], values, strict=True)))


# ---------------------------------------------------------------------------
# Partial
# ---------------------------------------------------------------------------

class _WrappedPartial:
  """Hides a functools.partial from partial.__new__'s argument merging.

  Calls, hashing and equality delegate to the wrapped partial; ``func``,
  ``args`` and ``keywords`` mirror it.
  """

  def __init__(self, fun: functools.partial):
    self.fun = fun

  def __call__(self, *args, **kwargs):
    return self.fun(*args, **kwargs)

  def __hash__(self):
    return hash(self.fun)

  def __eq__(self, other):
    if isinstance(other, _WrappedPartial):
      other = other.fun
    return self.fun == other

  def __repr__(self):
    return f"_WrappedPartial({self.fun!r})"

  func = property(lambda self: self.fun.func)
  args = property(lambda self: self.fun.args)
  keywords = property(lambda self: self.fun.keywords)


class Partial(functools.partial):
  """A ``functools.partial`` that is a pytree.

  The bound positional and keyword arguments are the children; the wrapped
  function is static metadata.  A ``functools.partial`` passed as ``func`` is
  kept intact rather than merged, so its arguments stay static.
  """

  def __new__(cls, func, *args, **kwargs):
    if isinstance(func, functools.partial):
      func = _WrappedPartial(func)
    return super().__new__(cls, func, *args, **kwargs)


Partial.__module__ = "arrax.tree_util"  # its public home (repr, pickling)


register_pytree_node(
    Partial,
    lambda p: ((p.args, p.keywords), p.func),
    lambda func, children: Partial(func, *children[0], **children[1]))


# ---------------------------------------------------------------------------
# The public view: typed PRNG key arrays are leaves
# ---------------------------------------------------------------------------
# In JAX a key array is one array (of an extended dtype), so a pytree leaf. arrax's key arrays
# wrap their uint32 key data and are registered as nodes above, so that every transformation
# (which flattens with the functions above) passes the data through. The public tree utilities
# (jax.tree_util, jax.tree) see them as leaves, as JAX's do: they are the functions below.
_LEAF_TYPES: set = set()


def register_leaf_type(cls: type) -> None:
  """Make `cls` (a registered node type) a leaf of the public tree utilities (prng registers
  its key array class)."""
  _LEAF_TYPES.add(cls)


def _leafy(is_leaf):
  lt = _LEAF_TYPES
  if is_leaf is None:
    return lambda x: type(x) in lt
  return lambda x: type(x) in lt or is_leaf(x)


def _leafy_path(is_leaf, takes_path):
  """(is_leaf, is_leaf_takes_path) with the public leaf types added."""
  lt = _LEAF_TYPES
  if is_leaf is None:
    return (lambda x: type(x) in lt), False
  if takes_path:
    return (lambda p, x: type(x) in lt or is_leaf(p, x)), True
  return (lambda x: type(x) in lt or is_leaf(x)), False


def pub_tree_flatten(tree, is_leaf=None):
  """Flattens ``tree`` into a list of leaves and a treedef."""
  return registry.flatten(tree, _leafy(is_leaf))


def pub_tree_leaves(tree, is_leaf=None):
  """Returns the leaves of ``tree`` in flattening order."""
  return registry.flatten(tree, _leafy(is_leaf))[0]


def pub_tree_structure(tree, is_leaf=None):
  """Returns the treedef describing the structure of ``tree``."""
  return registry.flatten(tree, _leafy(is_leaf))[1]


def pub_all_leaves(iterable, is_leaf=None):
  """True if every element of ``iterable`` is a pytree leaf."""
  return all_leaves(iterable, _leafy(is_leaf))


def pub_flatten_one_level(tree):
  """Splits a pytree node into its children and its node metadata."""
  if type(tree) in _LEAF_TYPES:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return flatten_one_level(tree)


def pub_flatten_one_level_with_keys(tree):
  """Like :func:`flatten_one_level`, but children come as (key, child)."""
  if type(tree) in _LEAF_TYPES:
    raise ValueError(f"can't tree-flatten type: {type(tree)}")
  return flatten_one_level_with_keys(tree)


def pub_is_tree_node(typ):
  """True if ``typ`` is a pytree node type (built-in or registered)."""
  return typ not in _LEAF_TYPES and is_tree_node(typ)


def pub_tree_flatten_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
  """Flattens ``tree`` into ``(key_path, leaf)`` pairs and a treedef."""
  return tree_flatten_with_path(tree, *_leafy_path(is_leaf, is_leaf_takes_path))


def pub_tree_leaves_with_path(tree, is_leaf=None, is_leaf_takes_path=False):
  """Returns the ``(key_path, leaf)`` pairs of ``tree``."""
  return tree_flatten_with_path(tree, *_leafy_path(is_leaf, is_leaf_takes_path))[0]


def pub_tree_map(f, tree, *rest, is_leaf=None):
  """Applies ``f`` leafwise; each of ``rest`` must have ``tree`` as a prefix."""
  return tree_map(f, tree, *rest, is_leaf=_leafy(is_leaf))


def pub_tree_map_with_path(f, tree, *rest, is_leaf=None, is_leaf_takes_path=False):
  """Like :func:`tree_map`, but ``f`` receives the key path first."""
  leaf, takes = _leafy_path(is_leaf, is_leaf_takes_path)
  return tree_map_with_path(f, tree, *rest, is_leaf=leaf, is_leaf_takes_path=takes)


def pub_tree_reduce(function, tree, initializer=_MISSING, is_leaf=None):
  """Folds ``function`` over the leaves of ``tree`` (like functools.reduce)."""
  return tree_reduce(function, tree, initializer, is_leaf=_leafy(is_leaf))


def pub_tree_reduce_associative(operation, tree, *, identity=_MISSING, is_leaf=None):
  """Reduces the leaves with an associative ``operation`` as a balanced tree."""
  return tree_reduce_associative(operation, tree, identity=identity, is_leaf=_leafy(is_leaf))


def pub_tree_all(tree, *, is_leaf=None):
  """True if every leaf of ``tree`` is truthy."""
  return all(pub_tree_leaves(tree, is_leaf))


def pub_tree_transpose(outer_treedef, inner_treedef, pytree_to_transpose):
  """Turns an outer-of-inner pytree into an inner-of-outer pytree.

  If ``inner_treedef`` is None it is inferred from the first outer leaf.
  """
  flat, treedef = pub_tree_flatten(pytree_to_transpose)
  if inner_treedef is None:
    inner_treedef = pub_tree_structure(outer_treedef.flatten_up_to(pytree_to_transpose)[0])
  n_in, n_out = inner_treedef.num_leaves, outer_treedef.num_leaves
  if treedef.num_leaves != n_in * n_out:
    expected = outer_treedef.compose(inner_treedef)
    raise TypeError(f"Mismatch\n{treedef}\n != \n{expected}")
  rows = [flat[i * n_in:(i + 1) * n_in] for i in range(n_out)]
  return inner_treedef.unflatten(outer_treedef.unflatten(col) for col in zip(*rows))


def pub_tree_broadcast(prefix_tree, full_tree, is_leaf=None):
  """Broadcasts ``prefix_tree`` leaves to the structure of ``full_tree``."""
  out = _broadcast_prefix(prefix_tree, full_tree, _leafy(is_leaf), pub_tree_structure)
  return pub_tree_structure(full_tree).unflatten(out)
