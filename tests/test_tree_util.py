"""Differential tests of arrax's pytree utilities against jax.tree_util."""
import collections
import dataclasses
import functools
import importlib.util
import operator
import pathlib
import pickle
import re
import sys
import typing

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import jax
import jax.tree_util as jtu

try:
  import arrax.tree as atree
  import arrax.tree_util as atu
  from arrax._src import tree_util as _impl
except Exception:  # other arrax modules may be mid-development
  _path = pathlib.Path(__file__).parents[1] / "arrax" / "_src" / "tree_util.py"
  _spec = importlib.util.spec_from_file_location("arrax._src.tree_util", _path)
  _impl = importlib.util.module_from_spec(_spec)
  sys.modules[_spec.name] = _impl
  _spec.loader.exec_module(_impl)
  atu = _impl

  class atree:  # noqa: N801 -- stand-in for the arrax.tree module
    flatten, unflatten, leaves = atu.tree_flatten, atu.tree_unflatten, atu.tree_leaves
    structure, map, reduce = atu.tree_structure, atu.tree_map, atu.tree_reduce
    all, transpose, broadcast = atu.tree_all, atu.tree_transpose, atu.tree_broadcast
    flatten_with_path = atu.tree_flatten_with_path
    leaves_with_path = atu.tree_leaves_with_path
    map_with_path = atu.tree_map_with_path
    reduce_associative = atu.tree_reduce_associative
    static = _impl.static


# --------------------------------------------------------------------------
# Custom node types, registered identically in jax and arrax.
# --------------------------------------------------------------------------

def register_both(name, *args, **kwargs):
  getattr(jtu, name)(*args, **kwargs)
  getattr(atu, name)(*args, **kwargs)
  return args[0]


class Point:
  def __init__(self, x, y):
    self.x, self.y = x, y

  def __eq__(self, other):
    return type(other) is Point and (self.x, self.y) == (other.x, other.y)

register_both("register_pytree_node", Point,
              lambda p: ((p.x, p.y), "pt"), lambda aux, c: Point(*c))


class Keyed:
  def __init__(self, a, b, tag):
    self.a, self.b, self.tag = a, b, tag

register_both("register_pytree_with_keys", Keyed,
              lambda k: (((jtu.GetAttrKey("a"), k.a),
                          (jtu.GetAttrKey("b"), k.b)), k.tag),
              lambda tag, c: Keyed(*c, tag))


class NodeClass:
  def __init__(self, children, meta):
    self.children, self.meta = children, meta

  def tree_flatten(self):
    return self.children, self.meta

  @classmethod
  def tree_unflatten(cls, meta, children):
    return cls(tuple(children), meta)

register_both("register_pytree_node_class", NodeClass)


class KeysClass:
  def __init__(self, u, v):
    self.u, self.v = u, v

  def tree_flatten_with_keys(self):
    return ((jtu.DictKey("u"), self.u), (jtu.SequenceKey(7), self.v)), None

  @classmethod
  def tree_unflatten(cls, _, children):
    return cls(*children)

register_both("register_pytree_with_keys_class", KeysClass)


@dataclasses.dataclass
class DC:
  b: typing.Any
  a: typing.Any
  name: str = dataclasses.field(default="dc", metadata=dict(static=True))

register_both("register_dataclass", DC)


@dataclasses.dataclass
class DCExplicit:
  w: typing.Any
  mode: int
  cache: typing.Any = None

register_both("register_dataclass", DCExplicit, data_fields=["w"],
              meta_fields=["mode"], drop_fields=["cache"])


class PlainFields:  # not a dataclass: explicit fields required
  def __init__(self, p, q):
    self.p, self.q = p, q

register_both("register_dataclass", PlainFields, data_fields=["q", "p"],
              meta_fields=[])


@dataclasses.dataclass(frozen=True)
class StaticThing:
  label: str

register_both("register_static", StaticThing)


NT = collections.namedtuple("NT", ["x", "y"])


class TNT(typing.NamedTuple):
  first: typing.Any
  second: typing.Any = None


class DictSub(dict):  # unregistered dict subclass: a leaf
  pass


def fn(*args, **kwargs):
  return args, kwargs


ARR = np.arange(6.0).reshape(2, 3)
OBJ = object()

# Each case builds a tree given the pytree module (so Partial matches).
CASES = {
    "scalar": lambda m: 1,
    "none": lambda m: None,
    "empty_tuple": lambda m: (),
    "empty_list": lambda m: [],
    "empty_dict": lambda m: {},
    "tuple": lambda m: (1, 2.5, "s"),
    "list": lambda m: [ARR, OBJ, True],
    "nested": lambda m: (1, [2, (3, [4, [5]])], {"a": 6}),
    "dict_unsorted": lambda m: {"z": 1, "a": 2, "m": {"y": 3, "b": 4}},
    "dict_int_keys": lambda m: {3: "c", 1: "a", 2: "b"},
    "nones_inside": lambda m: [None, (None, 1), {"a": None, "b": 2}],
    "namedtuple": lambda m: NT(x=1, y=[2, 3]),
    "typed_namedtuple": lambda m: TNT(first={"k": 1}),
    "namedtuple_nested": lambda m: [NT(NT(1, 2), None), TNT(3, (4,))],
    "ordered_dict": lambda m: collections.OrderedDict([("b", 1), ("a", [2])]),
    "defaultdict": lambda m: collections.defaultdict(list, {"b": 1, "a": 2}),
    "dict_subclass_leaf": lambda m: [DictSub(a=1), 2],
    "custom_node": lambda m: Point(1, (2, 3)),
    "custom_keys": lambda m: [Keyed(1, {"q": 2}, "t")],
    "node_class": lambda m: NodeClass((1, [2]), "meta"),
    "keys_class": lambda m: KeysClass([1, 2], {"c": 3}),
    "dataclass": lambda m: DC(b=1, a=[2, 3]),
    "dataclass_explicit": lambda m: DCExplicit(w=(1, 2), mode=3),
    "non_dataclass_fields": lambda m: PlainFields(p=1, q=[2]),
    "static": lambda m: {"s": StaticThing("x"), "v": 1},
    "partial": lambda m: m.Partial(fn, 1, [2, 3], key={"z": 4}),
    "partial_noargs": lambda m: m.Partial(fn),
    "partial_of_partial": lambda m: m.Partial(functools.partial(fn, 0), 1),
    "mixed": lambda m: {"p": Point(NT(1, None), [2]), "d": DC(a=(), b={}),
                        "l": [OBJ, ARR, None]},
}
IDS = list(CASES)


def both(name):
  """Returns (jax_tree, arrax_tree) for a named case."""
  return CASES[name](jtu), CASES[name](atu)


def norm(s):
  return str(s).replace("_HashableCallableShim", "_WrappedPartial")


def same_leaves(xs, ys):
  assert len(xs) == len(ys)
  for x, y in zip(xs, ys):
    if x is y:
      continue
    if isinstance(x, jtu.Partial):  # each library has its own Partial
      assert isinstance(y, atu.Partial)
    else:
      assert type(x) is type(y)
    try:
      if bool(x == y):
        continue
    except Exception:  # noqa: BLE001 -- e.g. arrays
      pass
    # Separately built but equivalent objects (e.g. custom nodes as leaves).
    assert atu.tree_structure(y).num_nodes > 1 or isinstance(y, jtu.Partial)
    same_tree(x, y)


def same_tree(jt, at):
  jl, jd = jtu.tree_flatten(jt)
  al, ad = atu.tree_flatten(at)
  same_leaves(jl, al)
  assert norm(jd) == norm(ad)


def same_outcome(jfn, afn, compare=same_tree):
  """Runs both; they must raise the same exception class or agree."""
  try:
    jr = jfn()
  except Exception as je:  # noqa: BLE001
    with pytest.raises(type(je)):
      afn()
    return
  compare(jr, afn())


def _eq(a, b):
  assert a == b


# --------------------------------------------------------------------------
# Flattening
# --------------------------------------------------------------------------

@pytest.mark.parametrize("case", IDS)
def test_flatten(case):
  jt, at = both(case)
  jl, jd = jtu.tree_flatten(jt)
  al, ad = atu.tree_flatten(at)
  same_leaves(jl, al)
  assert isinstance(ad, atu.PyTreeDef)
  assert norm(jd) == norm(ad)
  assert norm(repr(jd)) == norm(repr(ad))
  assert (jd.num_leaves, jd.num_nodes) == (ad.num_leaves, ad.num_nodes)
  same_leaves(jtu.tree_leaves(jt), atu.tree_leaves(at))
  assert norm(jtu.tree_structure(jt)) == norm(atu.tree_structure(at))
  assert norm(jax.tree.structure(jt)) == norm(atree.structure(at))
  same_leaves(jax.tree.leaves(jt), atree.leaves(at))


@pytest.mark.parametrize("case", IDS)
def test_unflatten_roundtrip(case):
  _, at = both(case)
  leaves, treedef = atu.tree_flatten(at)
  rebuilt = atu.tree_unflatten(treedef, leaves)
  assert type(rebuilt) is type(at)
  assert atu.tree_structure(rebuilt) == treedef
  same_leaves(atu.tree_leaves(rebuilt), leaves)
  rebuilt = atree.unflatten(treedef, [0] * treedef.num_leaves)
  assert atu.tree_leaves(rebuilt) == [0] * treedef.num_leaves


@pytest.mark.parametrize("case", IDS)
def test_treedef_children(case):
  jt, at = both(case)
  jd, ad = jtu.tree_structure(jt), atu.tree_structure(at)
  assert [norm(c) for c in jtu.treedef_children(jd)] == [
      norm(c) for c in atu.treedef_children(ad)]
  assert jtu.treedef_is_leaf(jd) == atu.treedef_is_leaf(ad)
  assert norm(jtu.treedef_tuple([jd, jd])) == norm(atu.treedef_tuple([ad, ad]))
  assert atu.treedef_tuple([ad, ad]) == atu.tree_structure((at, at))


@pytest.mark.parametrize("case", IDS)
def test_flatten_one_level(case):
  jt, at = both(case)
  jd = jtu.tree_structure(jt)
  if jd.num_nodes == 1 and jd.num_leaves == 1:  # a true leaf
    with pytest.raises(ValueError):
      jtu.flatten_one_level(jt)
    with pytest.raises(ValueError):
      atu.flatten_one_level(at)
    return
  jc, jm = jtu.flatten_one_level(jt)
  ac, am = atu.flatten_one_level(at)
  same_tree(list(jc), list(ac))
  assert norm(jm) == norm(am)
  jkc, _ = jtu.flatten_one_level_with_keys(jt)
  akc, _ = atu.flatten_one_level_with_keys(at)
  assert [k for k, _ in jkc] == [k for k, _ in akc]


def test_is_tree_node_and_all_leaves():
  for typ in (tuple, list, dict, type(None), NT, TNT, Point, DC, DictSub, int,
              collections.OrderedDict, StaticThing):
    assert jtu.is_tree_node(typ) == atu.is_tree_node(typ), typ
  assert atu.is_tree_node(atu.Partial) and not atu.is_tree_node(jtu.Partial)
  for xs in ([1, 2], [1, (2,)], [None], [], [OBJ, ARR], [Point(1, 2)]):
    assert jtu.all_leaves(xs) == atu.all_leaves(xs)
    pred = lambda x: isinstance(x, (tuple, Point))
    assert jtu.all_leaves(xs, pred) == atu.all_leaves(xs, pred)


# --------------------------------------------------------------------------
# Key paths
# --------------------------------------------------------------------------

@pytest.mark.parametrize("case", IDS)
def test_flatten_with_path(case):
  jt, at = both(case)
  jpl, jd = jtu.tree_flatten_with_path(jt)
  apl, ad = atu.tree_flatten_with_path(at)
  assert norm(jd) == norm(ad)
  assert [p for p, _ in jpl] == [p for p, _ in apl]
  same_leaves([x for _, x in jpl], [x for _, x in apl])
  for (jp, _), (ap, _) in zip(jpl, apl):
    assert jtu.keystr(jp) == atu.keystr(ap)
    assert repr(jp) == repr(ap)
    for kw in (dict(simple=True), dict(simple=True, separator="/"),
               dict(separator=" -> ")):
      assert jtu.keystr(jp, **kw) == atu.keystr(ap, **kw)
  assert [p for p, _ in jax.tree.leaves_with_path(jt)] == [
      p for p, _ in atree.leaves_with_path(at)]


def test_keystr_examples():
  params = {"foo": {"bar": {"baz": 1, "bat": [2, 3]}}}
  paths = [atu.keystr(p) for p, _ in atu.tree_leaves_with_path(params)]
  assert paths == ["['foo']['bar']['bat'][0]", "['foo']['bar']['bat'][1]",
                   "['foo']['bar']['baz']"]
  simple = [atu.keystr(p, simple=True, separator="/")
            for p, _ in atu.tree_leaves_with_path(params)]
  assert simple == ["foo/bar/bat/0", "foo/bar/bat/1", "foo/bar/baz"]
  keys = (atu.GetAttrKey("w"), atu.FlattenedIndexKey(2), "raw", 5)
  assert atu.keystr(keys) == jtu.keystr(keys)
  assert atu.keystr(keys, simple=True, separator=".") == jtu.keystr(
      keys, simple=True, separator=".")
  assert atu.DictKey is jtu.DictKey and atu.SequenceKey is jtu.SequenceKey


@pytest.mark.parametrize("case", IDS)
def test_map_with_path(case):
  jt, at = both(case)
  f = lambda p, x: (jtu.keystr(p), x)
  same_tree(jtu.tree_map_with_path(f, jt), atu.tree_map_with_path(f, at))
  g = lambda p, x, y: len(p)
  same_tree(jax.tree.map_with_path(g, jt, jt), atree.map_with_path(g, at, at))


def test_is_leaf_takes_path():
  tree = {"a": [1, 2], "b": {"c": [3]}}
  pred = lambda p, x: len(p) == 1 and isinstance(x, list)
  j = jtu.tree_flatten_with_path(tree, pred, is_leaf_takes_path=True)
  a = atu.tree_flatten_with_path(tree, pred, is_leaf_takes_path=True)
  assert j[0] == a[0] and str(j[1]) == str(a[1])
  f = lambda p, x: atu.keystr(p)
  assert (jtu.tree_map_with_path(f, tree, is_leaf=pred, is_leaf_takes_path=True)
          == atu.tree_map_with_path(f, tree, is_leaf=pred,
                                    is_leaf_takes_path=True))


# --------------------------------------------------------------------------
# Map / reduce / all
# --------------------------------------------------------------------------

@pytest.mark.parametrize("case", IDS)
def test_tree_map(case):
  jt, at = both(case)
  f = lambda x: ("leaf", type(x).__name__)
  same_tree(jtu.tree_map(f, jt), atu.tree_map(f, at))
  g = lambda x, y, z: (x is y) and (y is z)
  same_tree(jax.tree.map(g, jt, jt, jt), atree.map(g, at, at, at))


PREDICATES = {
    "tuples": lambda x: isinstance(x, tuple),
    "lists": lambda x: isinstance(x, list),
    "none": lambda x: x is None,
    "dicts": lambda x: isinstance(x, dict),
    "custom": lambda x: isinstance(x, (Point, DC, NodeClass)),
    "everything": lambda x: True,
    "nothing": lambda x: False,
}


@pytest.mark.parametrize("pred", list(PREDICATES))
@pytest.mark.parametrize("case", IDS)
def test_is_leaf(case, pred):
  jt, at = both(case)
  p = PREDICATES[pred]
  same_outcome(lambda: jtu.tree_flatten(jt, is_leaf=p),
               lambda: atu.tree_flatten(at, is_leaf=p),
               lambda j, a: (same_leaves(j[0], a[0]),
                             _eq(norm(j[1]), norm(a[1]))))
  f = lambda x: type(x).__name__
  same_outcome(lambda: jtu.tree_map(f, jt, is_leaf=p),
               lambda: atu.tree_map(f, at, is_leaf=p))
  same_outcome(lambda: [k for k, _ in jtu.tree_leaves_with_path(jt, p)],
               lambda: [k for k, _ in atu.tree_leaves_with_path(at, p)], _eq)
  same_outcome(lambda: jtu.tree_all(jt, is_leaf=p),
               lambda: atu.tree_all(at, is_leaf=p), _eq)
  r = lambda acc, x: acc + 1
  same_outcome(lambda: jtu.tree_reduce(r, jt, 0, p),
               lambda: atu.tree_reduce(r, at, 0, p), _eq)


REDUCE_TREES = [[1, 2, (3, 4)], {"b": 2, "a": [1]}, [[], (5,)],
                NT(1, NT(2, 3)), DC(a=(1, 2), b=[3, 4]), Point(10, [20])]


@pytest.mark.parametrize("tree", REDUCE_TREES)
def test_tree_reduce(tree):
  for op in (operator.add, lambda a, b: f"({a}{b})", max):
    assert jtu.tree_reduce(op, tree) == atu.tree_reduce(op, tree)
    assert jtu.tree_reduce(op, tree, 0 if op is not max else -1) == \
        atree.reduce(op, tree, 0 if op is not max else -1)
  cat = lambda a, b: f"({a}{b})"
  assert (jax.tree.reduce_associative(cat, tree)
          == atree.reduce_associative(cat, tree))
  assert (jtu.tree_reduce_associative(operator.add, tree, identity=0)
          == atu.tree_reduce_associative(operator.add, tree, identity=0))


def test_tree_reduce_empty():
  for tree in ([], None, {}, [(), {"a": None}]):
    with pytest.raises(TypeError):
      jtu.tree_reduce(operator.add, tree)
    with pytest.raises(TypeError):
      atu.tree_reduce(operator.add, tree)
    assert atu.tree_reduce(operator.add, tree, 7) == 7
    with pytest.raises(TypeError):
      jtu.tree_reduce_associative(operator.add, tree)
    with pytest.raises(TypeError):
      atu.tree_reduce_associative(operator.add, tree)
    assert atu.tree_reduce_associative(operator.add, tree, identity=3) == 3


@pytest.mark.parametrize("tree", [[], None, [1, 0], [1, (2, [3])], {"a": 0},
                                  [None, True], Point(1, ""), [[], [[]]]])
def test_tree_all(tree):
  assert jtu.tree_all(tree) == atu.tree_all(tree) == atree.all(tree)


# --------------------------------------------------------------------------
# Structure mismatches
# --------------------------------------------------------------------------

MISMATCHES = [
    ((1, 2), (1, 2, 3)),
    ((1, 2), [1, 2]),
    ([1, 2], [1]),
    ({"a": 1}, {"b": 1}),
    ({"a": 1, "b": 2}, {"a": 1}),
    ({"a": 1}, {"a": 1, "b": 2}),
    ([1, {"a": (2, 3)}], [1, {"a": (2,)}]),
    ({"x": [1, 2]}, {"x": [1, 2, 3]}),
    (None, 1),
    (None, [1]),
    ((None,), (1,)),
    ([1], None),
    (NT(1, 2), (1, 2)),
    (NT(1, 2), TNT(1, 2)),
    (Point(1, 2), (1, 2)),
    (DC(a=1, b=2), DC(a=1, b=2, name="other")),
    (DC(a=[1], b=2), DC(a=[1, 2], b=2)),
    (Keyed(1, 2, "t"), Keyed(1, 2, "u")),
    (NodeClass((1,), "m"), NodeClass((1, 2), "m")),
    (collections.OrderedDict(a=1, b=2), collections.OrderedDict(b=1, a=2)),
    ({"a": {"b": {"c": 1}}}, {"a": {"b": {"d": 1}}}),
    ([StaticThing("x")], [StaticThing("y")]),
]


def _raise(fn):
  try:
    fn()
  except Exception as e:  # noqa: BLE001
    return e
  return None


@pytest.mark.parametrize("pair", MISMATCHES, ids=[str(i) for i in range(len(MISMATCHES))])
def test_tree_map_mismatch_errors(pair):
  x, y = pair
  f = lambda *a: None
  je = _raise(lambda: jtu.tree_map(f, x, y))
  ae = _raise(lambda: atu.tree_map(f, x, y))
  assert je is not None and type(ae) is type(je)
  # Headline and key path lines match JAX's.
  assert str(ae).splitlines()[:2] == str(je).splitlines()[:2]
  je = _raise(lambda: jtu.tree_map(f, x, x, y))
  ae = _raise(lambda: atu.tree_map(f, x, x, y))
  assert type(ae) is type(je)
  g = lambda p, *a: None
  je = _raise(lambda: jtu.tree_map_with_path(g, x, y))
  ae = _raise(lambda: atu.tree_map_with_path(g, x, y))
  assert type(ae) is type(je)
  assert str(ae).splitlines()[:2] == str(je).splitlines()[:2]


def test_tree_map_prefix_allowed():
  prefix, full = [1, {"a": 2}], [(3, 4), {"a": [5, None, 6]}]
  f = lambda x, y: (x, y)
  same_tree(jtu.tree_map(f, prefix, full), atu.tree_map(f, prefix, full))


@pytest.mark.parametrize("prefix,full", [
    ((1, 2, 3), (0, {"a": 0, "b": 0}, (0, 0))),
    (1, [0, (0, 0)]),
    ({"a": 1, "b": [2, 3]}, {"b": [(0, 0), None], "a": Point(0, 0)}),
    ([1, None], [[0, 0], None]),
])
def test_tree_broadcast(prefix, full):
  same_tree(jtu.tree_broadcast(prefix, full), atu.tree_broadcast(prefix, full))
  same_tree(jax.tree.broadcast(prefix, full), atree.broadcast(prefix, full))


@pytest.mark.parametrize("prefix,full", [((1, 2), (0, 0, 0)),
                                         ({"a": 1}, {"b": 0})])
def test_tree_broadcast_error(prefix, full):
  je = _raise(lambda: jtu.tree_broadcast(prefix, full))
  ae = _raise(lambda: atu.tree_broadcast(prefix, full))
  assert type(ae) is type(je) is ValueError
  assert str(ae).splitlines()[:2] == str(je).splitlines()[:2]


# --------------------------------------------------------------------------
# Transpose
# --------------------------------------------------------------------------

TRANSPOSE_CASES = [
    ([(1, 2), (3, 4), (5, 6)], [0, 0, 0], (0, 0)),
    ({"a": [1, 2], "b": [3, 4]}, {"a": 0, "b": 0}, [0, 0]),
    ((NT(1, 2), NT(3, 4)), (0, 0), NT(0, 0)),
    ([{"x": 1, "y": (2, 3)}], [0], {"x": 0, "y": (0, 0)}),
    ([Point(1, 2), Point(3, 4)], [0, 0], Point(0, 0)),
]


@pytest.mark.parametrize("tree,outer,inner", TRANSPOSE_CASES)
def test_tree_transpose(tree, outer, inner):
  jo, ji = jtu.tree_structure(outer), jtu.tree_structure(inner)
  ao, ai = atu.tree_structure(outer), atu.tree_structure(inner)
  same_tree(jtu.tree_transpose(jo, ji, tree), atu.tree_transpose(ao, ai, tree))
  same_tree(jax.tree.transpose(jo, None, tree), atree.transpose(ao, None, tree))


def test_tree_transpose_mismatch():
  tree = [(1, 2), (3, 4)]
  jo, ji = jtu.tree_structure([0, 0]), jtu.tree_structure((0, 0, 0))
  ao, ai = atu.tree_structure([0, 0]), atu.tree_structure((0, 0, 0))
  je = _raise(lambda: jtu.tree_transpose(jo, ji, tree))
  ae = _raise(lambda: atu.tree_transpose(ao, ai, tree))
  assert type(je) is type(ae) is TypeError
  assert str(je) == str(ae)


# --------------------------------------------------------------------------
# Registration details, Partial, registry isolation
# --------------------------------------------------------------------------

def test_register_dataclass_errors():
  @dataclasses.dataclass
  class A:
    x: int
    y: int

  for kwargs, exc in [
      (dict(data_fields=["x"]), TypeError),
      (dict(data_fields=["x"], meta_fields=[]), ValueError),
      (dict(data_fields=["x", "y", "z"], meta_fields=[]), ValueError),
      (dict(data_fields=["x", "y"], meta_fields=["x"]), ValueError),
  ]:
    with pytest.raises(exc):
      jtu.register_dataclass(A, **kwargs)
    with pytest.raises(exc):
      atu.register_dataclass(A, **kwargs)
  with pytest.raises(TypeError):
    atu.register_dataclass(Point)
  with pytest.raises(TypeError):
    jtu.register_dataclass(Point)


def test_tree_static_field():
  @dataclasses.dataclass
  class Op:
    x: typing.Any
    op: str = atree.static(default="add")

  atu.register_dataclass(Op)
  leaves, treedef = atu.tree_flatten(Op(x=1))
  assert leaves == [1] and str(treedef) == "PyTreeDef(CustomNode(Op[('add',)], [*]))"
  assert atu.tree_unflatten(treedef, [5]) == Op(x=5)


def test_partial():
  p = atu.Partial(fn, 1, b=2)
  assert isinstance(p, functools.partial)
  assert p(3, c=4) == ((1, 3), {"b": 2, "c": 4})
  mapped = atu.tree_map(lambda x: x * 10, p)
  assert isinstance(mapped, atu.Partial) and mapped() == ((10,), {"b": 20})
  inner = functools.partial(fn, 0, k=1)
  pp = atu.Partial(inner, 2)
  assert atu.tree_leaves(pp) == [2]  # inner's arguments stay static
  assert pp(3) == ((0, 2, 3), {"k": 1})
  assert pp.func.func is fn and pp.func.args == (0,)
  assert pp.func.keywords == {"k": 1}
  assert atu.tree_structure(pp) == atu.tree_structure(atu.Partial(inner, 9))
  assert atu.tree_map(lambda x: -x, pp)() == ((0, -2), {"k": 1})
  assert pickle.loads(pickle.dumps(pp))(1) == pp(1)


def test_registry_isolation():
  class OnlyArrax:
    def __init__(self, v):
      self.v = v

  atu.register_pytree_node(OnlyArrax, lambda o: ((o.v,), None),
                           lambda _, c: OnlyArrax(*c))
  obj = OnlyArrax([1, 2])
  assert atu.tree_leaves(obj) == [1, 2]
  assert jtu.tree_leaves(obj) == [obj]  # jax does not see arrax's registry
  assert atu.default_registry is not jtu.default_registry
  jp = jtu.Partial(fn, 1)
  assert atu.tree_leaves(jp)[0] is jp  # jax's Partial is an arrax leaf


def test_treedef_methods_and_pickle():
  tree = {"b": [1, None, (2,)], "a": NT(3, 4)}
  treedef = atu.tree_structure(tree)
  assert pickle.loads(pickle.dumps(treedef)) == treedef
  assert treedef.flatten_up_to(tree) == atu.tree_leaves(tree)
  assert treedef.unflatten(range(4)) == {"a": NT(0, 1), "b": [2, None, (3,)]}
  composed = atu.tree_structure([0, 0]).compose(atu.tree_structure((0, 0)))
  assert composed == atu.tree_structure([(0, 0), (0, 0)])
  assert atu.treedef_is_leaf(atu.tree_structure(None))
  assert atu.treedef_is_leaf(atu.tree_structure(5))
  assert not atu.treedef_is_leaf(atu.tree_structure([5]))


def test_public_modules():
  names = ("flatten unflatten leaves structure map reduce all transpose "
           "flatten_with_path leaves_with_path map_with_path broadcast "
           "reduce_associative static").split()
  for name in names:
    assert hasattr(atree, name) and hasattr(jax.tree, name), name
  if hasattr(atu, "__all__"):
    missing = set(jtu.__all__ if hasattr(jtu, "__all__") else ()) - set(dir(atu))
    assert not missing
    for name in atu.__all__:
      # (the public view, where typed key arrays are leaves, is `pub_<name>`)
      assert getattr(atu, name) is getattr(_impl, "pub_" + name, getattr(_impl, name))
    src = pathlib.Path(_impl.__file__).read_text()
    assert not re.search(r"^\s*(import jax\b|from jax\b)", src, re.M)


# --------------------------------------------------------------------------
# Random trees
# --------------------------------------------------------------------------

_leaf = st.one_of(st.integers(-5, 5), st.text(max_size=2), st.floats(
    allow_nan=False), st.booleans())
_key = st.one_of(st.text(max_size=3), st.integers(-3, 3))
_trees = st.recursive(
    st.one_of(_leaf, st.none()),
    lambda kids: st.one_of(
        st.lists(kids, max_size=4),
        st.lists(kids, max_size=4).map(tuple),
        st.builds(NT, kids, kids),
        st.builds(Point, kids, kids),
        st.builds(DC, kids, kids),
        st.dictionaries(st.text(max_size=3), kids, max_size=4),
        st.dictionaries(st.integers(-3, 3), kids, max_size=4),
    ),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(_trees)
def test_random_trees(tree):
  jl, jd = jtu.tree_flatten(tree)
  al, ad = atu.tree_flatten(tree)
  same_leaves(jl, al)
  assert str(jd) == str(ad)
  assert (jd.num_leaves, jd.num_nodes) == (ad.num_leaves, ad.num_nodes)
  jp = [atu.keystr(p) for p, _ in jtu.tree_leaves_with_path(tree)]
  ap = [atu.keystr(p) for p, _ in atu.tree_leaves_with_path(tree)]
  assert jp == ap
  assert str(jtu.tree_structure(jtu.tree_map(lambda x: [x], tree))) == str(
      atu.tree_structure(atu.tree_map(lambda x: [x], tree)))
  assert atu.tree_unflatten(ad, al) is not None or tree is None
