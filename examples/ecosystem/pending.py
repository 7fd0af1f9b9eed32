"""Placeholders for names arrax does not have yet (abstract meshes, mutable array references,
hijax, ...), so the ecosystem libraries import. Each is installed only where arrax lacks the name,
so once the real one is merged it takes over. Used by run.py, never by arrax itself."""
import sys
import types

import arrax


def _placeholder_class(name):
  def __init__(self, *args, **kwargs):
    raise NotImplementedError(f"jax.{name} is not provided by arrax yet (placeholder)")
  return type(name.rpartition(".")[2], (), {"__init__": __init__})


def _placeholder_fn(name):
  def fn(*args, **kwargs):
    raise NotImplementedError(f"jax.{name} is not provided by arrax yet (placeholder)")
  fn.__name__ = name.rpartition(".")[2]
  return fn


def _module(path, classes=(), fns=()):
  full = "arrax." + path if path else "arrax"
  mod = sys.modules.get(full)
  if mod is None:
    try:
      __import__(full)
      mod = sys.modules[full]
    except ImportError:
      parent, _, child = full.rpartition(".")
      if parent not in sys.modules:
        _module(parent[len("arrax."):])
      mod = types.ModuleType(full, "placeholder module (examples/ecosystem/pending.py)")
      mod.__path__ = []
      sys.modules[full] = mod
      setattr(sys.modules[parent], child, mod)
  for c in classes:
    if not hasattr(mod, c):
      setattr(mod, c, _placeholder_class(f"{path}.{c}"))
  for f in fns:
    if not hasattr(mod, f):
      setattr(mod, f, _placeholder_fn(f"{path}.{f}"))
  return mod


def install():
  _module("sharding", fns=["use_mesh"])   # (not in JAX 0.10.2; some libraries probe it)
  # flax.nnx: mutable array references and hijax (jax.experimental.hijax).
  _module("_src.state.types", classes=["AbstractRef"])
  hjx = _module("experimental.hijax", classes=["HiPrim", "VJPHiPrimitive", "HiType",
                                               "AbstractValue"], fns=["instantiate_zeros"])
  hjx.register_hitype = lambda cls, fn: None
  hjx.aval_method = hjx.aval_property = lambda f=None, **kw: f if f is not None else kw.get("fget")
  _module("", classes=["Ref"], fns=["new_ref"])
  _module("stages", classes=["OutInfo"])
