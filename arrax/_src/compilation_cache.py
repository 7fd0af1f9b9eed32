"""The persistent compilation cache: XLA executables serialized to disk, keyed so that a
different program, jaxlib, platform, XLA flag or compile option never finds another's entry.

Used when `jax_compilation_cache_dir` names a directory: by default (beyond JAX, which makes
users opt in) `$XDG_CACHE_HOME/arrax/xla` or `~/.cache/arrax/xla`; None or "" (or
`jax_enable_compilation_cache=False`) turn it off. As in JAX, only compilations that took at least `jax_persistent_cache_min_compile_time_secs` are
written, and `jax_compilation_cache_max_size` bytes bound the directory (least recently used
entries go first; -1: unbounded). Entries are written atomically (a temporary file renamed into
place), so concurrent processes share the directory safely. Executables that call back into
Python are never cached: their callbacks cannot be serialized.
"""
from __future__ import annotations

import hashlib
import logging
import os
import tempfile
import zlib

import jaxlib

from arrax._src.config import config

logger = logging.getLogger(__name__)

_SUFFIX = ".xla"


def cache_dir() -> str | None:
  """The directory in use, or None when the cache is off."""
  if not config.jax_enable_compilation_cache:
    return None
  d = config.jax_compilation_cache_dir
  return os.path.expanduser(d) if d else None


def cache_key(module_text: str, client, device, options_bytes: bytes) -> str:
  """sha256 of everything the executable depends on: the program, jaxlib, the platform and its
  version, the XLA flags, the device and the compile options."""
  h = hashlib.sha256()
  for part in (module_text, jaxlib.__version__, client.platform, client.platform_version,
               os.environ.get("XLA_FLAGS", ""), device.device_kind, str(device.id)):
    h.update(part.encode())
    h.update(b"\0")
  h.update(options_bytes)
  return h.hexdigest()


def get(directory: str, key: str) -> bytes | None:
  """The serialized executable stored under `key`, or None."""
  path = os.path.join(directory, key + _SUFFIX)
  try:
    with open(path, "rb") as f:
      blob = zlib.decompress(f.read())
    os.utime(path)   # recently used: evicted last
    return blob
  except FileNotFoundError:
    return None
  except (OSError, zlib.error) as e:
    if config.jax_raise_persistent_cache_errors:
      raise
    logger.warning("arrax: ignoring unreadable compilation cache entry %s: %s", path, e)
    return None


def put(directory: str, key: str, blob: bytes) -> None:
  """Store `blob` under `key` (atomically), then trim the directory to its size bound."""
  data = zlib.compress(blob)
  if len(data) < config.jax_persistent_cache_min_entry_size_bytes:
    return
  try:
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=directory, suffix=".tmp")
    with os.fdopen(fd, "wb") as f:
      f.write(data)
    os.replace(tmp, os.path.join(directory, key + _SUFFIX))
  except OSError as e:
    if config.jax_raise_persistent_cache_errors:
      raise
    logger.warning("arrax: could not write to the compilation cache %s: %s", directory, e)
    return
  _trim(directory, config.jax_compilation_cache_max_size)


def _trim(directory: str, max_size: int) -> None:
  if max_size is None or max_size < 0:
    return
  entries = []
  with os.scandir(directory) as it:
    for e in it:
      if e.name.endswith(_SUFFIX):
        try:
          st = e.stat()
        except OSError:
          continue
        entries.append((st.st_mtime, st.st_size, e.path))
  total = sum(size for _, size, _ in entries)
  for _, size, path in sorted(entries):
    if total <= max_size:
      break
    try:
      os.remove(path)
      total -= size
    except OSError:
      pass


class CacheVerificationError(RuntimeError):
  """A freshly compiled executable differs from the one the cache holds under its key
  (jax_compilation_cache_check_contents)."""

  def __init__(self, message, cache_key, executable_on_disk, executable_new):
    super().__init__(message)
    self.cache_key = cache_key
    self.executable_on_disk = executable_on_disk
    self.executable_new = executable_new


verified_keys: set[str] = set()   # keys checked against a fresh compilation in this process


def verify(key: str, on_disk: bytes | None, fresh: bytes) -> None:
  """Raise CacheVerificationError if the stored executable `on_disk` differs from `fresh`."""
  if on_disk is not None and on_disk != fresh:
    raise CacheVerificationError(
        f"Persistent compilation cache inconsistency for key {key}. Executable found in the disk "
        "cache does not match the freshly compiled executable.", key, on_disk, fresh)
  verified_keys.add(key)


def clear(directory: str | None = None) -> None:
  """Remove every entry of the cache directory (the one in use by default)."""
  directory = directory or cache_dir()
  if not directory or not os.path.isdir(directory):
    return
  for name in os.listdir(directory):
    if name.endswith(_SUFFIX):
      try:
        os.remove(os.path.join(directory, name))
      except OSError:
        pass


def set_cache_dir(path) -> None:
  """Use `path` as the persistent compilation cache's directory (jax_compilation_cache_dir).
  The cache is trusted: do not point it at a directory others may write to."""
  config.update("jax_compilation_cache_dir", path)


def reset_cache() -> None:
  """JAX's way back to an uninitialized cache. arrax's cache keeps no state between
  compilations (each reads the directory setting), so there is nothing to reset."""
