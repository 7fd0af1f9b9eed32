"""Python logging of arrax's modules as `jax_logging_level` and `jax_debug_log_modules` ask
(JAX does the same for its own loggers). Module names may be given by their JAX names: "jax"
and "jax.X" mean "arrax" and "arrax.X". (JAX also sets the C++ log level from
jax_logging_level; arrax leaves jaxlib's process-wide C++ logging alone.)"""
import logging
import sys

from arrax._src import config_flags
from arrax._src.config import config

_formatter = logging.Formatter("{levelname}:{asctime}:{name}:{lineno}: {message}", style="{")
_level_handler = logging.StreamHandler(sys.stderr)
_level_handler.setFormatter(_formatter)
_levels_set: dict[str, int] = {}   # logger name -> the level it had before


def _arrax_name(name: str) -> str:
  name = name.strip()
  if name == "jax" or name.startswith("jax."):
    return "arrax" + name[3:]
  return name


def update_logging_level(level: str | None) -> None:
  """Set `level` (a name such as "DEBUG") on the arrax and jaxlib loggers, which then print to
  stderr; None or "NOTSET" undo a previous setting."""
  for name, prev in _levels_set.items():
    logger = logging.getLogger(name)
    logger.removeHandler(_level_handler)
    logger.setLevel(prev)
  _levels_set.clear()
  if level is None:
    return
  num = logging.getLevelName(level)
  for name in ("arrax", "jaxlib"):
    logger = logging.getLogger(name)
    _levels_set[name] = logger.level
    logger.setLevel(num)
    if num != logging.NOTSET:
      logger.addHandler(_level_handler)


class _UnlessLevelHandlerPrints(logging.Filter):
  def filter(self, record):
    return logging.getLogger("arrax").level > logging.DEBUG


_debug_handler = logging.StreamHandler(sys.stderr)
_debug_handler.setLevel(logging.DEBUG)
_debug_handler.setFormatter(_formatter)
_debug_handler.addFilter(_UnlessLevelHandlerPrints())
_debug_loggers: list = []   # (logger, the level it had before)


def update_debug_log_modules(names: str | None) -> None:
  """Log everything of the comma-separated modules `names` to stderr (undoing the last call)."""
  for logger, prev in _debug_loggers:
    logger.removeHandler(_debug_handler)
    logger.setLevel(prev)
  _debug_loggers.clear()
  for name in (names or "").split(","):
    if name.strip():
      logger = logging.getLogger(_arrax_name(name))
      _debug_loggers.append((logger, logger.level))
      logger.addHandler(_debug_handler)
      logger.setLevel(logging.DEBUG)


_LEVEL = config_flags.logging_level.name
_MODULES = config_flags.debug_log_modules.name


def _on_update(name):
  # (JAX applies these when set globally only; contexts do not reconfigure logging)
  if name == _LEVEL:
    update_logging_level(config.flag(name).global_value)
  elif name == _MODULES:
    update_debug_log_modules(config.flag(name).global_value)


def install():
  """Apply the two options' start values (from the environment) and follow their updates."""
  if _on_update not in config._listeners:
    config._listeners.append(_on_update)
    update_logging_level(config.flag(_LEVEL).global_value)
    update_debug_log_modules(config.flag(_MODULES).global_value)
