"""Running unchanged JAX programs on arrax: `import jax` resolves to arrax.

`install_as_jax()` puts a finder first on `sys.meta_path` that answers every import of `jax` or
`jax.X.Y` with the module `arrax` or `arrax.X.Y` itself (the same module object, registered in
`sys.modules` under both names). A `jax.X.Y` arrax does not have is a ModuleNotFoundError: a real
jax installed next to arrax is never consulted. Nothing is installed by importing arrax; a process
opts in with `python -m arrax ...` or by calling `arrax.install_as_jax()` before importing jax.
"""
import importlib
import importlib.machinery
import logging
import sys

ALIAS = "jax"
TARGET = "arrax"


def _target_name(fullname):
  if fullname == ALIAS:
    return TARGET
  if fullname.startswith(ALIAS + "."):
    return TARGET + fullname[len(ALIAS):]
  return None


class _AliasLoader:
  """Hands the already imported arrax module to the import system under its jax name (a
  loader by protocol: importlib.abc is not imported, it costs import time)."""

  def __init__(self, module):
    self._module = module
    self._spec = getattr(module, "__spec__", None)

  def create_module(self, spec):
    return self._module

  def exec_module(self, module):
    # The import system stamped the alias spec on the module; arrax's own spec stays its spec.
    if self._spec is not None:
      module.__spec__ = self._spec


class JaxAliasFinder:
  """Resolves `jax` and `jax.*` imports to `arrax` and `arrax.*` (see the module docstring)."""

  def find_spec(self, fullname, path=None, target=None):
    target_name = _target_name(fullname)
    if target_name is None:
      return None
    try:
      module = importlib.import_module(target_name)
    except ModuleNotFoundError as e:
      if e.name is not None and e.name != target_name and not target_name.startswith(e.name + "."):
        raise   # something the arrax module itself imports is missing
      raise ModuleNotFoundError(
          f"No module named {fullname!r}: arrax, standing in for jax, has no module "
          f"{target_name!r}", name=fullname) from None
    is_pkg = hasattr(module, "__path__")
    spec = importlib.machinery.ModuleSpec(fullname, _AliasLoader(module), is_package=is_pkg)
    if is_pkg:
      spec.submodule_search_locations = list(module.__path__)
    return spec


_FINDER = JaxAliasFinder()


def is_installed():
  """Whether this process resolves `import jax` to arrax."""
  return _FINDER in sys.meta_path


def install_as_jax():
  """Make every later `import jax` / `import jax.X.Y` in this process import arrax's module.

  Raises RuntimeError if a real jax is already imported (its modules and arrax's cannot be
  mixed). Calling it again is harmless.
  """
  if is_installed():
    return
  real = sorted(n for n, m in sys.modules.items()
                if (n == ALIAS or n.startswith(ALIAS + ".")) and m is not None
                and not getattr(m, "__name__", "").startswith(TARGET))
  if real:
    raise RuntimeError(
        "arrax.install_as_jax() must run before jax is imported, but this process already "
        f"imported the real jax ({', '.join(real[:3])}{', ...' if len(real) > 3 else ''}). "
        "Call it first, or start the program with `python -m arrax script.py`.")
  sys.meta_path.insert(0, _FINDER)
  # Libraries listen to JAX's log records (compilations, ...) on the "jax" logger: arrax's
  # records reach its handlers too (after arrax's own).
  logging.getLogger(TARGET).parent = logging.getLogger(ALIAS)
