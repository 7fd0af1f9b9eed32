"""jax.experimental.xla_metadata: XLA frontend attributes on the ops of a block of code (a
context manager and decorator), or on the ops producing given values (`xla_metadata_value`).

In a context, equations carry an OpAttributes entry ("metadata") on the name stack, which
lowering turns into `mhlo.frontend_attributes` on their ops (values as strings, booleans
lower-cased; an inner key wins, a None value removes the key)."""
from __future__ import annotations

import functools
import threading

from arrax._src import ad, batching, core, mlir, tree_util


class _XlaMetadataWrapper:
  """A function decorated with set_xla_metadata(...): it (and its callable attributes, such as
  a jitted function's `lower`) runs in the metadata context."""

  def __init__(self, f, ctx):
    self._f = f
    self._ctx = ctx
    functools.wraps(f)(self)

  def __call__(self, *args, **kwargs):
    with self._ctx:
      return self._f(*args, **kwargs)

  def __getattr__(self, name):
    attr = getattr(self._f, name)
    if not callable(attr):
      return attr

    @functools.wraps(attr)
    def in_context(*args, **kwargs):
      with self._ctx:
        return attr(*args, **kwargs)
    return in_context


class XlaMetadataContextManager:
  """Attaches its metadata to the ops staged in its `with` block; decorates functions too."""

  def __init__(self, updates):
    self.updates = updates
    self._entry = (core.OpAttributes("metadata", tuple(sorted(updates.items())))
                   if updates else None)
    self._open = threading.local()   # (the contexts this thread has open, innermost last)

  def __enter__(self):
    if self._entry is not None:
      hash(self._entry)   # (a TypeError for unhashable values, as JAX's)
      ctx = core.op_attributes(self._entry)
      ctx.__enter__()
      self._open.__dict__.setdefault("stack", []).append(ctx)

  def __exit__(self, exc_type, exc_value, traceback):
    if self._entry is not None:
      self._open.stack.pop().__exit__(exc_type, exc_value, traceback)

  def __call__(self, f):
    return _XlaMetadataWrapper(f, self)


def set_xla_metadata(x=None, **kwargs):
  """With no `x`, a context manager (and decorator) attaching `kwargs` as XLA frontend
  attributes to the operations staged in it; with `x` (a pytree of arrays), `x` with `kwargs`
  attached to the operations that produce its leaves."""
  if x is None:
    return XlaMetadataContextManager(kwargs)
  kvs = tuple(sorted(kwargs.items()))
  return tree_util.tree_map(lambda v: xla_metadata_value_p.bind(v, xla_metadata_kvs=kvs), x)


xla_metadata_value_p = core.Primitive("xla_metadata_value")
xla_metadata_value_p.def_abstract_eval(lambda aval, *, xla_metadata_kvs: aval)
batching.defvectorized(xla_metadata_value_p)
ad.deflinear(xla_metadata_value_p, lambda ct, x, *, xla_metadata_kvs: [ct])


@xla_metadata_value_p.def_lowering
def _xla_metadata_value_lowering(ctx, x, *, xla_metadata_kvs):
  if xla_metadata_kvs:
    mlir.set_frontend_attributes(
        x.owner, {k: mlir.attribute_string(v) for k, v in xla_metadata_kvs})
  return [x]
