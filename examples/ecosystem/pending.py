"""Placeholders for names other open issues add to arrax (jax.sharding, jax.pmap, ...), so the
ecosystem libraries import before those land. Each is installed only where arrax lacks the name,
so once the real one is merged it takes over. Used by run.py, never by arrax itself."""
import contextlib
import sys
import types

import arrax


def _placeholder_class(name):
  def __init__(self, *args, **kwargs):
    raise NotImplementedError(f"jax.{name} is not provided by arrax yet (placeholder)")
  return type(name.rpartition(".")[2], (), {"__init__": __init__})


def _placeholder_fn(name):
  if name == "pmap":      # transformations: wrapping works, calling fails
    def transform(fun=None, *args, **kwargs):
      def wrapped(*a, **k):
        raise NotImplementedError(f"jax.{name} is not provided by arrax yet (placeholder)")
      return wrapped
    return transform

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
  _module("sharding", classes=["Sharding", "Mesh", "AbstractMesh", "NamedSharding",
                               "PartitionSpec", "SingleDeviceSharding", "AxisType"],
          fns=["get_abstract_mesh", "use_mesh", "set_mesh", "reshard"])
  _module("experimental", fns=["io_callback"])
  # flax.nnx: mutable array references and hijax (jax.experimental.hijax).
  _module("_src.state.types", classes=["AbstractRef"])
  hjx = _module("experimental.hijax", classes=["HiPrim", "VJPHiPrimitive", "HiType",
                                               "AbstractValue"], fns=["instantiate_zeros"])
  hjx.register_hitype = lambda cls, fn: None
  hjx.aval_method = hjx.aval_property = lambda f=None, **kw: f if f is not None else kw.get("fget")
  _module("", classes=["Ref"], fns=["new_ref"])
  _module("stages", classes=["Lowered", "Compiled", "Wrapped", "Traced", "OutInfo"])
  if not hasattr(arrax, "named_scope"):
    arrax.named_scope = contextlib.contextmanager(lambda name: (yield))
  if not hasattr(arrax, "log_compiles"):
    @contextlib.contextmanager
    def log_compiles(enable=True):
      prev = arrax.config.jax_log_compiles
      arrax.config.update("jax_log_compiles", enable)
      try:
        yield
      finally:
        arrax.config.update("jax_log_compiles", prev)
    arrax.log_compiles = log_compiles
  for cm in ["numpy_dtype_promotion", "checking_leaks", "check_tracer_leaks"]:
    if not hasattr(arrax, cm):     # config context managers: accepted, not enforced
      setattr(arrax, cm, contextlib.contextmanager(lambda *args, **kwargs: (yield)))
  for f in ["pmap", "pure_callback"]:
    if not hasattr(arrax, f):
      setattr(arrax, f, _placeholder_fn(f))
