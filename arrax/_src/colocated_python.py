"""`jax.experimental.colocated_python`: Python functions and objects run on the CPU devices
colocated with the arrays they receive.

JAX serializes the function (cloudpickle) and runs it on the host of the arguments' devices
through an IFRT program, asynchronously once its output specs are known. arrax has one
process's devices only: the colocated CPU devices of CPU devices are themselves, and a
colocated function runs in this process, synchronously, on the arrays as given. What it
keeps of JAX's contract: arguments and results must be arrays (pytrees of them), all on one
device list; a function without array arguments needs `specialize(devices=...)`; given
`in_specs` / `out_specs_fn`, the arguments and results must match them; each specialization
is given at most once; objects of a `colocated_python_class` are created on their first
method call.
"""
from __future__ import annotations

import collections
import dataclasses
import functools
import inspect
import itertools
import threading
from typing import Any, NamedTuple

import numpy as np

from arrax._src import backend, dtypes
from arrax._src.array import Array
from arrax._src.sharding_impls import Mesh
from arrax._src.tree_util import tree_flatten, tree_map


# ---- colocated CPU devices ------------------------------------------------------------------
def colocated_cpu_devices(devices_or_mesh):
  """The CPU devices on the hosts of `devices_or_mesh` (in order, one per device; a Mesh of
  them for a Mesh). CPU devices are their own colocated devices."""
  if isinstance(devices_or_mesh, Mesh):
    mesh = devices_or_mesh
    flat = colocated_cpu_devices(tuple(mesh.devices.flat))
    return Mesh(np.array(flat, dtype=object).reshape(mesh.devices.shape), mesh.axis_names,
                axis_types=mesh.axis_types)
  devices = tuple(devices_or_mesh)
  if devices and all(d.platform == "cpu" for d in devices):
    return list(devices)
  spare = collections.defaultdict(list)
  for d in reversed(backend.devices("cpu")):
    spare[d.process_index].append(d)
  out = []
  for d in devices:
    if d.platform == "cpu":
      out.append(d)
      continue
    if not spare[d.process_index]:
      raise ValueError(f"Process {d.process_index} does not have enough local CPU devices")
    out.append(spare[d.process_index].pop())
  return out


# ---- functions ------------------------------------------------------------------------------
@dataclasses.dataclass(frozen=True)
class FunctionInfo:
  """A user function wrapped by colocated_python, with where it was defined."""
  fun: Any
  fun_sourceinfo: str | None
  fun_signature: inspect.Signature | None


class Specialization(NamedTuple):
  """What a colocated function was specialized with (`.specialize(...)`)."""
  in_specs_treedef: Any = None
  in_specs_leaves: tuple | None = None
  out_specs_fn: Any = None
  devices: tuple | None = None

  def update(self, in_specs_treedef=None, in_specs_leaves=None, out_specs_fn=None,
             devices=None):
    fields = self._asdict()
    for name, what, new in [("in_specs_treedef", "in_specs", in_specs_treedef),
                            ("in_specs_leaves", "in_specs", in_specs_leaves),
                            ("out_specs_fn", "out_specs_fn", out_specs_fn),
                            ("devices", "devices", devices)]:
      if new is None:
        continue
      if fields[name] is not None:
        raise ValueError(f"{what} already specified")
      fields[name] = tuple(new) if name == "devices" else new
    return Specialization(**fields)


def _spec_of(x):
  if not isinstance(x, Array):
    raise ValueError("colocated_python only supports jax.Array as input and output, but got"
                     f" {type(x)}.")
  return (tuple(x.shape), np.dtype(x.dtype))


def _is_spec(x):
  return hasattr(x, "shape") and hasattr(x, "dtype")


def _device_set(leaves):
  sets = {frozenset(x.devices()) for x in leaves}
  if len(sets) > 1:
    raise ValueError("All arguments must use the same device list, but got multiple device "
                     f"lists: {[sorted(d.id for d in s) for s in sets]}.")
  return next(iter(sets), None)


def _check_specs(what, leaves, treedef, spec_leaves, spec_treedef):
  got = [_spec_of(x) for x in leaves]
  want = [(tuple(s.shape), np.dtype(s.dtype)) for s in spec_leaves]
  if treedef != spec_treedef or got != want:
    raise ValueError(f"colocated_python {what} do not match the specialized specs: expected "
                     f"{spec_treedef} with {want}, got {treedef} with {got}.")


def _make_callable(fun, spec: Specialization):
  lock = threading.Lock()

  @functools.wraps(fun)
  def call(*args, **kwargs):
    leaves, treedef = tree_flatten((args, kwargs))
    if not leaves and spec.devices is None:
      raise ValueError("No devices found. colocated_python function without input arguments "
                       "must be first specialized with devices.")
    for x in leaves:
      _spec_of(x)
    _device_set(leaves)
    if spec.in_specs_treedef is not None:
      _check_specs("inputs", leaves, treedef, spec.in_specs_leaves, spec.in_specs_treedef)
    with lock:   # (JAX runs one execution at a time while output specs are discovered)
      result = fun(*args, **kwargs)
    out_leaves, out_tree = tree_flatten(result)
    for x in out_leaves:
      _spec_of(x)
    if spec.out_specs_fn is not None:
      in_specs = tree_map(lambda x: _SpecLike(*_spec_of(x)), (args, kwargs))
      expected = spec.out_specs_fn(*in_specs[0], **in_specs[1])
      exp_leaves, exp_tree = tree_flatten(expected, is_leaf=_is_spec)
      _check_specs("outputs", out_leaves, out_tree, exp_leaves, exp_tree)
    return result

  def specialize(in_specs=None, out_specs_fn=None, devices=None):
    """A callable with more of its specialization given: `in_specs` (a pytree of
    ShapeDtypeStructs for `(args, kwargs)`), `out_specs_fn` (output specs from input specs)
    and `devices` (needed when it takes no arrays)."""
    if in_specs is None:
      leaves, treedef = None, None
    else:
      leaves, treedef = tree_flatten(in_specs, is_leaf=_is_spec)
      leaves = tuple(leaves)
    return _make_callable(fun, spec.update(treedef, leaves, out_specs_fn, devices))

  call.specialize = specialize
  return call


class _SpecLike(NamedTuple):
  """The spec of an argument handed to `out_specs_fn` (shape and dtype)."""
  shape: tuple
  dtype: Any


def is_prng_key_dtype(dtype) -> bool:
  """Whether `dtype` is a typed PRNG key dtype (key<fry>, ...)."""
  return dtype is not None and dtypes.issubdtype(dtype, dtypes.prng_key)


def _sourceinfo(obj):
  try:
    return f"{inspect.getsourcefile(obj)}:{inspect.getsourcelines(obj)[1]}"
  except (TypeError, OSError):
    return None


def _signature(fun):
  try:
    return inspect.signature(fun)
  except (TypeError, ValueError):
    return None


def make_callable(fun, fun_sourceinfo, fun_signature):
  """The colocated callable of `fun` (defined at `fun_sourceinfo`, with `fun_signature`),
  not specialized yet."""
  del fun_sourceinfo, fun_signature
  return _make_callable(fun, Specialization())


def colocated_python(fun):
  """Wrap `fun` to run on the CPU devices colocated with its array arguments (in this
  process, for arrax); the result has `.specialize(in_specs, out_specs_fn, devices)`."""
  return make_callable(fun, _sourceinfo(fun), _signature(fun))


# ---- classes --------------------------------------------------------------------------------
class _ResultStore:
  """Results of colocated function calls by call id, until fetched (JAX's backend keeps the
  outputs of synchronous executions here; arrax's calls return theirs directly)."""

  def __init__(self):
    self._lock = threading.Lock()
    self._storage = {}

  def push(self, uid: int, out) -> None:
    with self._lock:
      if uid in self._storage:
        raise ValueError(f"uid {uid} already exists")
      self._storage[uid] = out

  def pop(self, uid: int):
    with self._lock:
      if uid not in self._storage:
        raise ValueError(f"uid {uid} does not exist")
      return self._storage.pop(uid)


class _ObjectStore:
  """The live objects of colocated classes by instance id, each created once, on first use."""

  def __init__(self):
    self._cond = threading.Condition()
    self._storage = {}   # uid -> ("pending", None) / ("ok", obj) / ("error", exc)

  def get_or_create(self, uid: int, initializer):
    """The object of `uid`, made with `initializer()` if there is none yet (other threads
    asking meanwhile wait for it; an initializer's exception is raised to them all)."""
    with self._cond:
      while uid in self._storage:
        state, value = self._storage[uid]
        if state == "ok":
          return value
        if state == "error":
          raise value
        self._cond.wait()
      self._storage[uid] = ("pending", None)
    try:
      obj = initializer()
    except Exception as e:
      with self._cond:
        self._storage[uid] = ("error", e)
        self._cond.notify_all()
      raise
    with self._cond:
      self._storage[uid] = ("ok", obj)
      self._cond.notify_all()
    return obj

  def remove(self, uid: int) -> None:
    with self._cond:
      self._storage.pop(uid, None)


SINGLETON_RESULT_STORE = _ResultStore()
SINGLETON_OBJECT_STORE = _ObjectStore()
_instance_ids = itertools.count()


def wrap_class(cls, cls_sourceinfo):
  """A wrapper class of `cls` (defined at `cls_sourceinfo`) whose methods run colocated with
  their arrays; the wrapped object is created (with the constructor arguments) in
  SINGLETON_OBJECT_STORE on the first method call, and dropped with the wrapper."""
  del cls_sourceinfo

  class WrappedClass:
    @functools.wraps(cls.__init__)
    def __init__(self, *init_args, **init_kwargs):
      uid = self._colocated_python_uid = next(_instance_ids)

      def instance():
        return SINGLETON_OBJECT_STORE.get_or_create(uid, lambda: cls(*init_args, **init_kwargs))

      for name in dir(cls):
        member = getattr(cls, name)
        if (not inspect.isfunction(member)
            or name in ("__init__", "__del__", "__reduce__", "__reduce_ex__")):
          continue
        method = functools.wraps(member)(
            lambda *a, _name=name, **k: getattr(instance(), _name)(*a, **k))
        setattr(self, name, colocated_python(method))

    def __del__(self):
      uid = getattr(self, "_colocated_python_uid", None)
      if uid is not None:
        SINGLETON_OBJECT_STORE.remove(uid)

  WrappedClass.__name__ = cls.__name__
  WrappedClass.__doc__ = cls.__doc__
  return WrappedClass


def colocated_python_class(cls):
  """A wrapper class of `cls` whose methods run colocated with their arrays; the wrapped
  object is created (with the constructor arguments) on the first method call."""
  return wrap_class(cls, _sourceinfo(cls))
