"""`Exported` <-> bytes in JAX's flatbuffer schema (jax/_src/export/serialization.fbs), written
and read with arrax's own small flatbuffer code (flatbuf.py).

The table layouts (field slot numbers) and enum values below are the schema's. Writing follows
JAX 0.10.2: serialization version field 3 (what JAX stores for old readers), avals and
shardings both as full vectors and as indices into the unique-value tables, NrDevices as a
uint32. Reading accepts both forms.
"""
from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import ml_dtypes
import numpy as np

from arrax._src import core, dtypes, tree_util
from arrax._src.export import flatbuf, shape_poly


class DisabledSafetyCheck:
  """A safety check to skip when exporting (custom_call) or calling (platform)."""
  _impl: str

  @classmethod
  def platform(cls) -> DisabledSafetyCheck:
    """Lets the module run on a platform other than those it was exported for."""
    return DisabledSafetyCheck("platform")

  @classmethod
  def custom_call(cls, target_name: str) -> DisabledSafetyCheck:
    """Lets the module hold a custom call to `target_name` (not known to be stable)."""
    return DisabledSafetyCheck(f"custom_call:{target_name}")

  def is_custom_call(self) -> str | None:
    """The custom call target this check allows, or None."""
    m = re.match(r"custom_call:(.+)$", self._impl)
    return m.group(1) if m else None

  def __init__(self, _impl: str):
    self._impl = _impl

  def __str__(self):
    return self._impl

  __repr__ = __str__

  def __eq__(self, other) -> bool:
    return isinstance(other, DisabledSafetyCheck) and self._impl == other._impl

  def __hash__(self) -> int:
    return hash(self._impl)


_AXIS_TYPE_NAMES = {1: "Auto", 2: "Explicit", 3: "Manual"}


class SerializedNamedSharding:
  """A NamedSharding as stored in a serialized Exported: its abstract mesh (axis sizes, names,
  types, abstract device), the PartitionSpec's entries and the memory kind."""
  __slots__ = ("axis_sizes", "axis_names", "axis_types", "device", "spec", "memory_kind")

  def __init__(self, axis_sizes, axis_names, axis_types, device, spec, memory_kind):
    self.axis_sizes, self.axis_names, self.axis_types = axis_sizes, axis_names, axis_types
    self.device, self.spec, self.memory_kind = device, spec, memory_kind

  def _mesh_key(self):
    return (self.axis_sizes, self.axis_names, self.axis_types, self.device)

  def _key(self):
    return (*self._mesh_key(), self.spec, self.memory_kind)

  def __eq__(self, other):
    return type(other) is SerializedNamedSharding and self._key() == other._key()

  def __hash__(self):
    return hash(self._key())

  def __repr__(self):
    axes = ", ".join(f"'{n}': {s}" for n, s in zip(self.axis_names, self.axis_sizes))
    types = ", ".join(_AXIS_TYPE_NAMES.get(t, "Auto") for t in self.axis_types)
    mesh = f"{axes}, axis_types=({types}{',' if len(self.axis_types) == 1 else ''})"
    if self.device is not None:
      kind, cores, platform = self.device
      mesh += f", device_kind={kind}, num_cores={cores}, platform={platform}"
    spec = ("P(" + ", ".join(repr(p) for p in self.spec)
            + ("," if len(self.spec) == 1 else "") + ")")
    mem = "" if self.memory_kind is None else f", memory_kind={self.memory_kind}"
    return f"NamedSharding(mesh=AbstractMesh({mesh}), spec={spec}{mem})"


# ---- pytree node serialization registries ----------------------------------------------------
T = TypeVar("T")
PyTreeAuxData = Any


class _SerializeAuxData(Protocol):
  def __call__(self, aux_data: PyTreeAuxData, /) -> bytes:
    """The bytes of a node's auxiliary data."""


class _DeserializeAuxData(Protocol):
  def __call__(self, serialized_aux_data: bytes, /) -> PyTreeAuxData:
    """The auxiliary data back from its bytes."""


class _BuildFromChildren(Protocol):
  def __call__(self, aux_data: PyTreeAuxData, children: Sequence[Any]) -> Any:
    """A node made from its auxiliary data and children."""


serialization_registry: dict = {}
deserialization_registry: dict = {}


def register_pytree_node_serialization(
    nodetype: type[T], *, serialized_name: str, serialize_auxdata: _SerializeAuxData,
    deserialize_auxdata: _DeserializeAuxData,
    from_children: _BuildFromChildren | None = None) -> type[T]:
  """Make pytree nodes of `nodetype` serializable in in_tree/out_tree under the name
  `serialized_name`. Returns `nodetype` (usable as a class decorator)."""
  if nodetype in serialization_registry:
    raise ValueError(
        f"Duplicate serialization registration for type `{nodetype}`. Previous registration "
        f"was with serialized_name `{serialization_registry[nodetype][0]}`.")
  if serialized_name in deserialization_registry:
    raise ValueError(
        f"Duplicate serialization registration for serialized_name `{serialized_name}`. "
        f"Previous registration was for type `{deserialization_registry[serialized_name][0]}`.")
  if from_children is None:
    if nodetype not in tree_util._registry:
      raise ValueError("If `from_children` is not present, you must call first"
                       f"`jax.tree_util.register_pytree_node` for `{nodetype}`")
    from_children = tree_util._registry[nodetype].from_iter
  serialization_registry[nodetype] = (serialized_name, serialize_auxdata)
  deserialization_registry[serialized_name] = (nodetype, deserialize_auxdata, from_children)
  return nodetype


def _is_namedtuple(nodetype) -> bool:
  return (isinstance(nodetype, type) and issubclass(nodetype, tuple)
          and isinstance(getattr(nodetype, "_fields", None), Sequence)
          and all(isinstance(f, str) for f in nodetype._fields))


def register_namedtuple_serialization(nodetype: type[T], *, serialized_name: str) -> type[T]:
  """Make a namedtuple type serializable in in_tree/out_tree (its field names are stored)."""
  if not _is_namedtuple(nodetype):
    raise ValueError("Use `jax.export.register_pytree_node_serialization` for types other "
                     "than `collections.namedtuple`.")

  def build(aux, children):
    assert len(aux) == len(children)
    return nodetype(**dict(zip(aux, children)))

  return register_pytree_node_serialization(
      nodetype, serialized_name=serialized_name,
      serialize_auxdata=lambda _: json.dumps(nodetype._fields).encode("utf-8"),
      deserialize_auxdata=lambda b: json.loads(b.decode("utf-8")),
      from_children=build)


# ---- schema enums ----------------------------------------------------------------------------
_LEAF, _NONE, _TUPLE, _LIST, _DICT, _CUSTOM = range(6)
_SHAPED_ARRAY = 0
_MEMORY_DEVICE = 1
_CHECK_PLATFORM, _CHECK_CUSTOM_CALL = 0, 1

_DTYPE_KINDS = {
    np.dtype(np.bool_): 0, np.dtype(np.int8): 1, np.dtype(np.int16): 2, np.dtype(np.int32): 3,
    np.dtype(np.int64): 4, np.dtype(np.uint8): 5, np.dtype(np.uint16): 6,
    np.dtype(np.uint32): 7, np.dtype(np.uint64): 8, np.dtype(np.float16): 9,
    np.dtype(np.float32): 10, np.dtype(np.float64): 11, np.dtype(np.complex64): 12,
    np.dtype(np.complex128): 13, np.dtype(ml_dtypes.bfloat16): 14,
    np.dtype(ml_dtypes.int4): 15, np.dtype(ml_dtypes.uint4): 16,
    np.dtype(ml_dtypes.float8_e4m3b11fnuz): 17, np.dtype(ml_dtypes.float8_e4m3fn): 18,
    np.dtype(ml_dtypes.float8_e4m3fnuz): 19, np.dtype(ml_dtypes.float8_e5m2): 20,
    np.dtype(ml_dtypes.float8_e5m2fnuz): 21, np.dtype(dtypes.float0): 22,
    np.dtype(ml_dtypes.float8_e4m3): 23, np.dtype(ml_dtypes.float8_e3m4): 24,
    np.dtype(ml_dtypes.float8_e8m0fnu): 25, np.dtype(ml_dtypes.float4_e2m1fn): 26,
}
_KIND_DTYPES = {k: d for d, k in _DTYPE_KINDS.items()}

# Exported table slots.
(_E_VERSION, _E_NAME, _E_IN_TREE, _E_IN_AVALS, _E_OUT_TREE, _E_OUT_AVALS, _E_NR_DEVICES_SHORT,
 _E_IN_SHARDINGS, _E_OUT_SHARDINGS, _E_PLATFORMS, _E_ORDERED, _E_UNORDERED, _E_CHECKS,
 _E_MODULE, _E_CC_VERSION, _E_KEPT, _E_GLOBAL_CONSTS, _E_VJP, _E_NR_DEVICES, _E_UNIQUE_AVALS,
 _E_UNIQUE_MESHES, _E_UNIQUE_SHARDINGS, _E_IN_AVAL_IDXS, _E_OUT_AVAL_IDXS,
 _E_IN_SHARDING_IDXS, _E_OUT_SHARDING_IDXS) = range(26)


# ---- writing ---------------------------------------------------------------------------------
def serialize(exp, vjp_order: int = 0) -> bytearray:
  """The bytes of `exp` with its VJPs up to order `vjp_order`."""
  return flatbuf.encode(_exported_table(exp, vjp_order))


def _exported_table(exp, vjp_order):
  if exp.ordered_effects or exp.unordered_effects:
    raise NotImplementedError("arrax cannot serialize an Exported with effects.")
  unique, index = [], {}
  for a in (*exp.in_avals, *exp.out_avals):
    if a not in index:
      index[a] = len(unique)
      unique.append(a)
  t = flatbuf.Table()
  t.scalar(_E_VERSION, "H", 3)
  t.ref(_E_NAME, flatbuf.String(exp.fun_name))
  t.ref(_E_IN_TREE, _pytreedef_table(exp.in_tree))
  t.ref(_E_IN_AVALS, flatbuf.RefVector(_aval_table(a) for a in exp.in_avals))
  t.ref(_E_OUT_TREE, _pytreedef_table(exp.out_tree))
  t.ref(_E_OUT_AVALS, flatbuf.RefVector(_aval_table(a) for a in exp.out_avals))
  t.scalar(_E_NR_DEVICES, "I", exp.nr_devices)
  shardings, meshes = {}, {}
  for sh in (*exp._in_named_shardings, *exp._out_named_shardings):
    if sh is not None:
      meshes.setdefault(sh._mesh_key(), len(meshes))
      shardings.setdefault(sh, len(shardings))

  def sharding_table(sh):
    t = flatbuf.Table()
    if sh is not None:
      t.ref(2, _named_sharding_table(sh, meshes))
    return t

  t.ref(_E_IN_SHARDINGS, flatbuf.RefVector(sharding_table(s) for s in exp._in_named_shardings))
  t.ref(_E_OUT_SHARDINGS,
        flatbuf.RefVector(sharding_table(s) for s in exp._out_named_shardings))
  t.ref(_E_PLATFORMS, flatbuf.RefVector(flatbuf.String(p) for p in exp.platforms))
  t.ref(_E_ORDERED, flatbuf.RefVector([]))
  t.ref(_E_UNORDERED, flatbuf.RefVector([]))
  t.ref(_E_CHECKS, flatbuf.RefVector(_check_table(c) for c in exp.disabled_safety_checks))
  t.ref(_E_MODULE, flatbuf.Bytes(exp.mlir_module_serialized))
  t.scalar(_E_CC_VERSION, "H", exp.calling_convention_version)
  t.ref(_E_KEPT, flatbuf.Vector("H", exp.module_kept_var_idx))
  t.scalar(_E_GLOBAL_CONSTS, "?", bool(exp.uses_global_constants))
  if vjp_order > 0:
    if not exp.has_vjp():
      raise ValueError("serialization of an Exported that does not have vjps of high-enough "
                       "order")
    t.ref(_E_VJP, _exported_table(exp.vjp(), vjp_order - 1))
  t.ref(_E_UNIQUE_AVALS, flatbuf.RefVector(_aval_table(a) for a in unique))
  t.ref(_E_UNIQUE_MESHES, flatbuf.RefVector(_mesh_table(*m) for m in meshes))
  t.ref(_E_UNIQUE_SHARDINGS,
        flatbuf.RefVector(_named_sharding_table(sh, meshes) for sh in shardings))
  t.ref(_E_IN_AVAL_IDXS, flatbuf.Vector("I", [index[a] for a in exp.in_avals]))
  t.ref(_E_OUT_AVAL_IDXS, flatbuf.Vector("I", [index[a] for a in exp.out_avals]))

  def sharding_idxs(shs):
    return flatbuf.Vector("I", [0 if sh is None else 1 + shardings[sh] for sh in shs])

  t.ref(_E_IN_SHARDING_IDXS, sharding_idxs(exp._in_named_shardings))
  t.ref(_E_OUT_SHARDING_IDXS, sharding_idxs(exp._out_named_shardings))
  return t


def _mesh_table(sizes, names, types, device):
  t = flatbuf.Table()
  t.ref(0, flatbuf.Vector("I", sizes))
  t.ref(1, flatbuf.RefVector(flatbuf.String(n) for n in names))
  t.ref(2, flatbuf.Vector("B", types))
  if device is not None:
    kind, cores, platform = device
    d = flatbuf.Table().ref(0, flatbuf.String(kind))
    if cores is not None:
      d.scalar(1, "I", cores)
    if platform is not None:
      d.ref(2, flatbuf.String(platform))
    t.ref(3, d)
  return t


def _named_sharding_table(sh, meshes):
  spec = flatbuf.Table()
  axes = []
  for p in sh.spec:
    names = () if p is None else (p,) if isinstance(p, str) else tuple(p)
    axes.append(flatbuf.Table().ref(0, flatbuf.RefVector(flatbuf.String(n) for n in names)))
  spec.ref(0, flatbuf.RefVector(axes))
  spec.ref(1, flatbuf.RefVector([]))
  spec.ref(2, flatbuf.RefVector([]))
  t = flatbuf.Table()
  t.ref(0, _mesh_table(*sh._mesh_key()))
  t.ref(1, spec)
  if sh.memory_kind is not None:
    t.ref(2, flatbuf.String(sh.memory_kind))
  t.scalar(3, "I", meshes[sh._mesh_key()])
  return t


def _aval_table(aval):
  try:
    kind = _DTYPE_KINDS[np.dtype(aval.dtype)]
  except (KeyError, TypeError):
    raise NotImplementedError(f"serializing an Exported with dtype {aval.dtype}") from None
  t = flatbuf.Table()
  t.scalar(0, "b", _SHAPED_ARRAY)
  t.ref(1, flatbuf.RefVector(flatbuf.String(str(d)) for d in aval.shape))
  t.scalar(2, "b", kind)
  t.scalar(3, "b", _MEMORY_DEVICE)
  return t


def _check_table(check):
  t = flatbuf.Table()
  target = check.is_custom_call()
  if target is not None:
    t.scalar(0, "b", _CHECK_CUSTOM_CALL)
    t.ref(1, flatbuf.String(target))
  elif check == DisabledSafetyCheck.platform():
    t.scalar(0, "b", _CHECK_PLATFORM)
  else:
    raise NotImplementedError(f"serializing DisabledSafetyCheck: {check}")
  return t


def _pytreedef_table(treedef):
  node = treedef.node_data()
  children = treedef.children()
  t = flatbuf.Table()
  node_type = node and node[0]
  if node is None:
    kind = _LEAF
  elif node_type is type(None):
    kind = _NONE
  elif node_type is tuple:
    kind = _TUPLE
  elif node_type is list:
    kind = _LIST
  elif node_type is dict:
    kind = _DICT
    for k in node[1]:
      if not isinstance(k, str):
        raise TypeError("Serialization is supported only for dictionaries with string keys. "
                        f"Found key {k} of type {type(k)}.")
    t.ref(2, flatbuf.RefVector(flatbuf.String(k) for k in node[1]))
  elif node_type in serialization_registry:
    kind = _CUSTOM
    name, ser_aux = serialization_registry[node_type]
    aux = ser_aux(node[1])
    if not isinstance(aux, (bytes, bytearray)):
      raise ValueError("The custom serialization function for `node_type` must return a "
                       f"`bytes` object. It returned a {type(aux)}.")
    t.ref(3, flatbuf.String(name))
    t.ref(4, flatbuf.Bytes(aux))
  else:
    raise ValueError(
        f"Cannot serialize PyTreeDef containing an unregistered type `{node_type}`. "
        "Use `export.register_pytree_node_serialization` or "
        "`export.register_namedtuple_serialization`.")
  t.scalar(0, "b", kind)
  if children:
    t.ref(1, flatbuf.RefVector(_pytreedef_table(c) for c in children))
  return t


# ---- reading ---------------------------------------------------------------------------------
def deserialize(blob, make_exported):
  """The fields of the Exported in `blob`, passed to `make_exported(**fields)`."""
  return _read_exported(flatbuf.TableReader.root(blob), make_exported)


def _read_exported(t, make_exported):
  scope = shape_poly.SymbolicScope(())
  unique_avals = [_read_aval(a, scope) for a in t.tables(_E_UNIQUE_AVALS)]
  meshes = [_read_mesh(m) for m in t.tables(_E_UNIQUE_MESHES)]
  unique_shardings = [_read_named_sharding(s, meshes) for s in t.tables(_E_UNIQUE_SHARDINGS)]
  fun_name = t.string(_E_NAME).decode("utf-8")
  nr_devices = t.scalar(_E_NR_DEVICES, "I") or t.scalar(_E_NR_DEVICES_SHORT, "h")

  def shardings(idx_slot, full_slot):
    idxs = t.scalars(idx_slot, "I")
    if idxs:
      return tuple(None if i == 0 else unique_shardings[i - 1] for i in idxs)
    return tuple(_read_sharding(s, meshes) for s in t.tables(full_slot))

  in_shardings = shardings(_E_IN_SHARDING_IDXS, _E_IN_SHARDINGS)
  out_shardings = shardings(_E_OUT_SHARDING_IDXS, _E_OUT_SHARDINGS)
  hlo_in = [s for s in in_shardings if isinstance(s, bytes)]
  hlo_out = [s for s in out_shardings if isinstance(s, bytes)]
  if hlo_in or hlo_out:
    raise NotImplementedError("arrax cannot read an Exported with HloSharding protos "
                              "(exports made before 2026-01-15).")

  def avals(idx_slot, full_slot):
    idxs = t.scalars(idx_slot, "I")
    if idxs:
      return tuple(unique_avals[i] for i in idxs)
    return tuple(_read_aval(a, scope) for a in t.tables(full_slot))

  in_avals = avals(_E_IN_AVAL_IDXS, _E_IN_AVALS)
  out_avals = avals(_E_OUT_AVAL_IDXS, _E_OUT_AVALS)
  in_tree = _read_pytreedef(t.table(_E_IN_TREE), in_avals)
  out_tree = _read_pytreedef(t.table(_E_OUT_TREE), out_avals)
  platforms = tuple(p.decode("utf-8") for p in t.strings(_E_PLATFORMS))
  ordered = tuple(_read_effect(e) for e in t.tables(_E_ORDERED))
  unordered = tuple(_read_effect(e) for e in t.tables(_E_UNORDERED))
  checks = tuple(_read_check(c) for c in t.tables(_E_CHECKS))
  module = t.bytes(_E_MODULE)
  vjp = t.table(_E_VJP)
  get_vjp = None if vjp is None else (lambda _: _read_exported(vjp, make_exported))
  return make_exported(
      fun_name=fun_name, in_tree=in_tree, in_avals=in_avals, out_tree=out_tree,
      out_avals=out_avals, nr_devices=nr_devices,
      in_shardings_hlo=(None,) * len(in_avals), out_shardings_hlo=(None,) * len(out_avals),
      _has_named_shardings=True,
      _in_named_shardings=in_shardings or (None,) * len(in_avals),
      _out_named_shardings=out_shardings or (None,) * len(out_avals),
      platforms=platforms, ordered_effects=ordered, unordered_effects=unordered,
      disabled_safety_checks=checks, mlir_module_serialized=module,
      calling_convention_version=t.scalar(_E_CC_VERSION, "H"),
      module_kept_var_idx=tuple(t.scalars(_E_KEPT, "H")),
      uses_global_constants=bool(t.scalar(_E_GLOBAL_CONSTS, "?", False)),
      _get_vjp=get_vjp)


def _read_aval(t, scope):
  kind = t.scalar(2, "b")
  if kind not in _KIND_DTYPES:
    raise NotImplementedError(f"deserializing an Exported with dtype kind {kind}")
  dims = ",".join(s.decode("utf-8") for s in t.strings(1))
  shape = shape_poly.symbolic_shape(dims, scope=scope)
  return core.ShapedArray(shape, _KIND_DTYPES[kind])


def _read_mesh(t):
  sizes = tuple(t.scalars(0, "I"))
  names = tuple(s.decode("utf-8") for s in t.strings(1))
  types = tuple(t.scalars(2, "B"))
  dev = t.table(3)
  device = None
  if dev is not None:
    platform = dev.string(2)
    device = (dev.string(0).decode("utf-8"), dev.scalar(1, "I", None),
              None if platform is None else platform.decode("utf-8"))
  return sizes, names, types, device


def _read_named_sharding(t, meshes):
  if meshes:
    sizes, names, types, device = meshes[t.scalar(3, "I")]
  else:
    sizes, names, types, device = _read_mesh(t.table(0))
  spec_t = t.table(1)
  spec = []
  for axis in spec_t.tables(0) if spec_t is not None else []:
    axes = tuple(a.decode("utf-8") for a in axis.strings(0))
    spec.append(None if not axes else axes[0] if len(axes) == 1 else axes)
  kind = t.string(2)
  return SerializedNamedSharding(sizes, names, types, device, tuple(spec),
                                 None if kind is None else kind.decode("utf-8"))


def _read_sharding(t, meshes):
  ns = t.table(2)
  if ns is not None:
    return _read_named_sharding(ns, meshes)
  proto = t.bytes(1)
  return proto if proto else None


def _read_effect(t):
  name = t.string(0).decode("utf-8")
  raise NotImplementedError(f"cannot deserialize effect type {name}")


def _read_check(t):
  kind = t.scalar(0, "b")
  if kind == _CHECK_CUSTOM_CALL:
    return DisabledSafetyCheck.custom_call(t.string(1).decode("utf-8"))
  if kind == _CHECK_PLATFORM:
    return DisabledSafetyCheck.platform()
  raise ValueError(f"Cannot deserialize DisabledSafetyCheck with unknown kind: {kind}")


def _read_pytreedef(t, leaves):
  it = iter(leaves)
  tree = _read_pytree(t, it)
  return tree_util.tree_structure(tree)


def _read_pytree(t, leaves):
  kind = t.scalar(0, "b")
  children = [_read_pytree(c, leaves) for c in t.tables(1)]
  if kind == _LEAF:
    return next(leaves)
  if kind == _NONE:
    return None
  if kind == _TUPLE:
    return tuple(children)
  if kind == _LIST:
    return list(children)
  if kind == _DICT:
    keys = [k.decode("utf-8") for k in t.strings(2)]
    assert len(keys) == len(children)
    return dict(zip(keys, children))
  if kind == _CUSTOM:
    name = t.string(3).decode("utf-8")
    if name not in deserialization_registry:
      raise ValueError(
          f"Cannot deserialize a PyTreeDef containing an unregistered type `{name}`. "
          "Use `export.register_pytree_node_serialization` or "
          "`export.register_namedtuple_serialization`.")
    _, de_aux, build = deserialization_registry[name]
    return build(de_aux(t.bytes(4)), children)
  raise ValueError(f"Cannot deserialize PyTreeDef with unknown kind: {kind}")
