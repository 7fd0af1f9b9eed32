"""Python array API metadata: the standard's version, `__array_namespace__` and the inspection
object returned by `arrax.numpy.__array_namespace_info__()`."""
from __future__ import annotations

import importlib

import numpy as np

from arrax._src import backend, config, dtypes

__array_api_version__ = "2024.12"

_SIGNED = ("int8", "int16", "int32", "int64")
_UNSIGNED = ("uint8", "uint16", "uint32", "uint64")
_REAL = ("float32", "float64")
_COMPLEX = ("complex64", "complex128")
_KINDS = {
    "bool": ("bool",),
    "signed integer": _SIGNED,
    "unsigned integer": _UNSIGNED,
    "integral": _SIGNED + _UNSIGNED,
    "real floating": _REAL,
    "complex floating": _COMPLEX,
    "numeric": _SIGNED + _UNSIGNED + _REAL + _COMPLEX,
}
_WIDE = {"int64", "uint64", "float64", "complex128"}


def __array_namespace__(self, *, api_version: None | str = None):
  """The array API namespace of arrax arrays: the `arrax.numpy` module."""
  if api_version is not None and api_version != __array_api_version__:
    raise ValueError(f"{api_version=!r} is not available; "
                     f"available versions are: {[__array_api_version__]}")
  return importlib.import_module("arrax.numpy")


def __array_namespace_info__() -> ArrayNamespaceInfo:
  """The array API inspection object (capabilities, devices and dtypes)."""
  return ArrayNamespaceInfo()


class ArrayNamespaceInfo:
  """What the array API namespace supports: capabilities, devices and dtypes."""
  _capabilities = {
      "boolean indexing": False,   # not inside transformations
      "data-dependent shapes": False,   # not inside transformations
      "max dimensions": 64,   # an XLA limit
  }

  def capabilities(self):
    return self._capabilities

  def default_device(self):
    # None: arrays are uncommitted, XLA picks the device.
    return None

  def devices(self):
    return [None, *backend.devices()]

  def default_dtypes(self, *, device=None):
    del device   # the same on every device
    return {
        "real floating": dtypes.default_float_dtype(),
        "complex floating": dtypes.default_dtype("c"),
        "integral": dtypes.default_int_dtype(),
        "indexing": dtypes.default_int_dtype(),
    }

  def dtypes(self, *, device=None, kind: str | tuple[str, ...] | None = None):
    del device   # the same on every device
    if kind is None:
      names = _KINDS["numeric"] + _KINDS["bool"]
    elif isinstance(kind, tuple):
      names = tuple(n for k in kind for n in _KINDS[k])
    else:
      names = _KINDS[kind]
    x64 = config.x64_enabled()
    return {n: np.dtype(n) for n in names if x64 or n not in _WIDE}
