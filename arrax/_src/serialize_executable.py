"""Serializing compiled executables (`jax.experimental.serialize_executable`).

`serialize` turns an arrax `Compiled` into bytes: the XLA executable as PJRT serializes it (the
persistent compilation cache's format) plus the types of its arguments and results, pickled.
Pytree definitions are not serialized: they are handed back for the caller to keep, and given
again to `deserialize_and_load`, which loads the executable onto a device of this process (or
another one) as a `Compiled` that checks its arguments like the original. The bytes are arrax's
own: JAX cannot read them, nor arrax JAX's.
"""
from __future__ import annotations

import io
import pickle
from collections.abc import Sequence

from jaxlib import xla_client as xc

from arrax._src import backend as backend_mod
from arrax._src import core, dispatch, dtypes
from arrax._src.jit import Compiled
from arrax._src.tree_util import tree_unflatten

# The first item of every payload: bytes of another format (or version) are refused.
_FORMAT = "arrax-serialized-executable/2"


class _Pickler(pickle.Pickler):
  """Writes the XLA executable as a persistent id (its PJRT serialization)."""

  def persistent_id(self, obj):
    if isinstance(obj, _Blob):
      return ("exec", obj.data)
    return None


class _Blob:
  __slots__ = ("data",)

  def __init__(self, data):
    self.data = data


class _Unpickler(pickle.Unpickler):
  """Reads only what `serialize` writes: plain data, NumPy dtypes and the executable (so bytes
  of another origin, JAX's for one, are refused instead of running their code)."""

  def find_class(self, module, name):
    if (module, name) == ("numpy", "dtype") or (module == "ml_dtypes" and name.isidentifier()):
      return super().find_class(module, name)
    raise pickle.UnpicklingError(
        f"{module}.{name} is not part of an executable serialized by "
        "arrax.experimental.serialize_executable.serialize")

  def persistent_load(self, pid):
    if type(pid) is tuple and len(pid) == 2 and pid[0] == "exec":
      return _Blob(pid[1])
    raise pickle.UnpicklingError(f"unsupported persistent id {pid!r}")


def _aval_spec(aval):
  if type(aval) is not core.ShapedArray or isinstance(aval.dtype, dtypes.ExtendedDType):
    raise ValueError("Compilation does not support serialization: an argument or result of "
                     f"type {aval} cannot be serialized")
  return (aval.shape, aval.dtype, aval.weak_type)


class _Signature:
  """What a deserialized Compiled knows of its program: argument and result types."""
  __slots__ = ("in_avals", "out_avals")

  def __init__(self, in_avals, out_avals):
    self.in_avals = in_avals
    self.out_avals = out_avals


def serialize(compiled: Compiled):
  """Serialize a compiled executable (from `jit(f).lower(...).compile()`).

  Returns `(serialized, in_tree, out_tree)`: the bytes, and the argument and result pytree
  definitions (pytrees are not serializable: keep them and pass them to
  `deserialize_and_load`). An executable that calls back into Python (`jax.debug.print`,
  `pure_callback`, `io_callback`, ...) cannot be serialized.
  """
  if not isinstance(compiled, Compiled):
    raise AttributeError(f"'{type(compiled).__name__}' object has no attribute '_executable': "
                         "serialize expects a Compiled, from jit(f).lower(...).compile()")
  if compiled._host_callbacks:
    raise AttributeError("Can't pickle local object: the executable calls back into Python "
                         "(a host callback such as jax.debug.print or pure_callback), and "
                         "its callbacks cannot be serialized")
  exe = compiled._exe
  if exe.token_outs:
    raise ValueError("Compilation does not support serialization")
  # (every argument's type: the executable takes only the `kept` ones, as the call checks all)
  in_specs = [_aval_spec(a) for a in compiled._closed.in_avals]
  out_specs = [_aval_spec(a) for a in exe.out_avals]
  donated = tuple(compiled._donated) if compiled._donated else None
  device = exe.device
  payload = (_FORMAT, exe.name, device.platform, device.id, in_specs, out_specs, donated,
             exe.kept, _Blob(exe.loaded.serialize()))
  with io.BytesIO() as f:
    _Pickler(f).dump(payload)
    return f.getvalue(), compiled.in_tree, compiled.out_tree


def _client_of(backend):
  if backend is None or isinstance(backend, str):
    return backend_mod.devices(backend)[0].client
  return backend


def deserialize_and_load(serialized, in_tree, out_tree,
                         backend: str | xc.Client | None = None,
                         execution_devices: Sequence[xc.Device] | None = None):
  """Load bytes made by `serialize` as a `Compiled`, given back its `in_tree` and `out_tree`.

  `backend` (a platform name or a client; default: the default backend) and
  `execution_devices` (default: the backend's devices) say where it runs: on the device the
  executable was compiled for if it is among them. Loading an executable may run arbitrary
  code: never pass bytes from a source you do not trust.
  """
  client = _client_of(backend)
  if execution_devices is None:
    execution_devices = client.devices()
  else:
    device_client = execution_devices[0].client
    if device_client != client:
      raise ValueError(
          "Execution devices belong to a client other than `backend`. Got backend client: "
          f"{(client.platform, client.platform_version)} and execution devices client: "
          f"{(device_client.platform, device_client.platform_version)}")
  payload = _Unpickler(io.BytesIO(serialized)).load()
  if type(payload) is not tuple or len(payload) != 9 or payload[0] != _FORMAT:
    raise ValueError("The bytes are not an executable serialized by "
                     "arrax.experimental.serialize_executable.serialize")
  _, name, platform, device_id, in_specs, out_specs, donated, kept, blob = payload
  in_avals = [core.ShapedArray(s, d, w) for s, d, w in in_specs]
  out_avals = [core.ShapedArray(s, d, w) for s, d, w in out_specs]
  # (as JAX does, the argument tree must hold one leaf per argument)
  tree_unflatten(in_tree, in_avals)
  if client.platform != platform:
    raise ValueError(f"The executable was compiled for {platform!r} and cannot run on the "
                     f"{client.platform!r} backend")
  by_id = {d.id: d for d in execution_devices}
  if device_id not in by_id:
    raise KeyError(f"The executable was compiled for device {device_id}, which is not among the "
                   f"execution devices {list(execution_devices)}")
  device = by_id[device_id]
  loaded = dispatch.load_serialized(blob.data, device, client)
  exe = dispatch.Executable(loaded, [in_avals[i] for i in kept] if kept else in_avals,
                            out_avals, device, kept, name=name)
  return Compiled(exe, in_tree, out_tree, None, None, _Signature(in_avals, out_avals),
                  donated)
