"""Module attributes JAX still serves with a DeprecationWarning, or has removed (an
AttributeError naming the replacement): one module `__getattr__` for every public module."""
import warnings


def deprecation_getattr(module, deprecated, removed=None):
  """A module-level `__getattr__` for `module` (its name): `deprecated[name] = (message, value)`
  warns and returns the value; `removed[name] = message` raises AttributeError(message)."""
  removed = removed or {}

  def __getattr__(name):
    if name in deprecated:
      msg, value = deprecated[name]
      warnings.warn(msg, DeprecationWarning, stacklevel=2)
      return value
    if name in removed:
      raise AttributeError(removed[name])
    raise AttributeError(f"module {module!r} has no attribute {name!r}")
  return __getattr__
