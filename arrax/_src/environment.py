"""Small top-level APIs about the running environment and the tracing context: named scopes,
compile-time evaluation, live arrays, environment info, asynchronous copies to host."""
from __future__ import annotations

import contextlib
import gc
import platform as _platform
import sys

import jaxlib
import numpy as np

from arrax._src import backend, core
from arrax._src.array import Array
from arrax._src.tree_util import tree_map


class _NameScope(contextlib.ContextDecorator):
  """A named scope (a context manager and a decorator): operations staged inside it carry the
  name in their op names ("jit(f)/layer/mul"), as in JAX."""

  def __init__(self, name):
    self.name = name
    self._saved = []

  def __enter__(self):
    ctx = core.trace_ctx
    self._saved.append(ctx.name_stack)
    ctx.name_stack = ctx.name_stack + (self.name,)
    return self

  def __exit__(self, *exc):
    core.trace_ctx.name_stack = self._saved.pop()
    return False


def named_scope(name):
  """Context manager (or decorator) naming the operations staged inside it.

  Example:
    >>> with jax.named_scope("layer"):
    ...   y = jnp.ones(3) * 2
  """
  if not isinstance(name, str):
    raise TypeError("named_scope name argument must be a string.")
  return _NameScope(name)


def named_call(fun, *, name=None):
  """`fun` run inside `named_scope(name)` (default: its `__name__`)."""
  if name is None:
    name = fun.__name__
  return named_scope(name)(fun)


class _CompileTimeEvalTrace(core.Trace):
  """Operations on concrete values run now; those reading tracers go to the trace that was
  current when the context was entered."""

  def __init__(self, parent):
    super().__init__()
    self.parent = parent

  def process_primitive(self, prim, args, params):
    if any(isinstance(a, core.Tracer) for a in args):
      with core.set_current_trace(self.parent):
        return prim.bind(*args, **params)
    return prim.impl(*args, **params)


@contextlib.contextmanager
def ensure_compile_time_eval():
  """Context manager: inside a traced (jitted) function, operations on concrete values run
  eagerly and give concrete Arrays instead of being staged.

  Example:
    >>> @jax.jit
    ... def f(x):
    ...   with jax.ensure_compile_time_eval():
    ...     y = jnp.arange(3) * 2     # a concrete Array, usable as a static value
    ...   return x + y
  """
  parent = core.current_trace()
  trace = parent if parent is core.eval_trace else _CompileTimeEvalTrace(parent)
  with core.set_current_trace(trace):
    yield


def live_arrays(platform=None):
  """The arrax Arrays alive now (on `platform`, default: the default backend)."""
  plat = backend.default_device().platform if platform is None else platform
  plat = {"gpu": "cuda", "host": "cpu"}.get(plat, plat)
  return [a for a in gc.get_objects() if type(a) is Array and not a.is_deleted()
          and a.device.platform == plat]


def copy_to_host_async(x):
  """Start copying every Array of the pytree `x` to the host; returns `x`."""
  def start(a):
    if isinstance(a, Array):
      a.copy_to_host_async()
    return a
  tree_map(start, x)
  return x


def print_environment_info(return_string=False):
  """Print (or return) the versions of arrax, jaxlib, NumPy and Python, and the devices."""
  version = getattr(sys.modules.get("arrax"), "__version__", "unknown")
  devices = backend.get_client().local_devices()
  info = "\n".join([
      f"arrax:  {version}",
      f"jaxlib: {jaxlib.__version__}",
      f"numpy:  {np.__version__}",
      f"python: {sys.version}",
      f"device info: {devices[0].device_kind}-{len(devices)}, {len(devices)} local devices",
      "process_count: 1",
      f"platform: {_platform.uname()}",
      ""])
  if return_string:
    return info
  print(info)
  return None
