"""Configuration flags, with JAX's names, settable by `config.update` or environment variables."""
import contextlib
import os
import threading


def _env_bool(name, default):
  """A boolean flag's value from the environment variable NAME, read as JAX reads it."""
  varname = name.upper()
  val = os.environ.get(varname, str(default)).lower()
  if val in ("y", "yes", "t", "true", "on", "1"):
    return True
  if val in ("n", "no", "f", "false", "off", "0"):
    return False
  raise ValueError(f"invalid truth value {val!r} for environment {varname!r}")


class _Flag:
  __slots__ = ("name", "value", "parse")

  def __init__(self, name, default, parse):
    self.name, self.value, self.parse = name, default, parse


_local = threading.local()


class Config:
  """Holds arrax's flags. `config.update("jax_enable_x64", True)` as in JAX."""

  def __init__(self):
    self._flags = {}
    self._listeners = []

  def define(self, name, default, parse=lambda v: v):
    self._flags[name] = _Flag(name, default, parse)

  def update(self, name, value):
    flag = self._flags.get(name)
    if flag is None:
      raise AttributeError(f"Unrecognized config option: {name}")
    flag.value = flag.parse(value)
    for listener in self._listeners:
      listener(name)

  def read(self, name):
    return self._flags[name].value

  def flag(self, name):
    """The flag object itself; reading `.value` is the fastest way to check it on hot paths."""
    return self._flags[name]

  def __getattr__(self, name):
    flags = self.__dict__.get("_flags", {})
    if name in flags:
      return flags[name].value
    raise AttributeError(f"Unrecognized config option: {name}")

  def values(self):
    return {n: f.value for n, f in self._flags.items()}

  @contextlib.contextmanager
  def _override(self, name, value):
    old = self.read(name)
    self.update(name, value)
    try:
      yield
    finally:
      self.update(name, old)


config = Config()
config.define("jax_enable_x64", _env_bool("jax_enable_x64", False), bool)
config.define("jax_disable_jit", _env_bool("jax_disable_jit", False), bool)
config.define("jax_log_compiles", _env_bool("jax_log_compiles", False), bool)
config.define("jax_explain_cache_misses", _env_bool("jax_explain_cache_misses", False), bool)
config.define("jax_debug_nans", _env_bool("jax_debug_nans", False), bool)
config.define("jax_threefry_partitionable", _env_bool("jax_threefry_partitionable", True), bool)
config.define("jax_platforms", os.environ.get("JAX_PLATFORMS", ""), str)
config.define("jax_default_matmul_precision", os.environ.get("JAX_DEFAULT_MATMUL_PRECISION"))
config.define("jax_num_cpu_devices", int(os.environ.get("JAX_NUM_CPU_DEVICES", "-1")), int)
# Beyond JAX: warn when tracing unrolls a Python loop into more than this many operations from
# one line (0 turns the warning off).
config.define("arrax_loop_unroll_warning_threshold",
              int(os.environ.get("ARRAX_LOOP_UNROLL_WARNING_THRESHOLD", "100")), int)


def x64_enabled():
  return config._flags["jax_enable_x64"].value


_TRACE_FLAGS = ("jax_enable_x64", "jax_threefry_partitionable", "jax_default_matmul_precision")
_trace_state = [None]   # the current tuple, recomputed when one of those flags changes


def _refresh_trace_state(name=None):
  if name is None or name in _TRACE_FLAGS:
    _trace_state[0] = tuple(config._flags[n].value for n in _TRACE_FLAGS)


_refresh_trace_state()
config._listeners.append(_refresh_trace_state)


def trace_state() -> tuple:
  """The values of the flags that change what tracing records (jit caches key on them)."""
  return _trace_state[0]


def trace_state_change(old: tuple, new: tuple) -> str:
  """Which trace flag differs between two `trace_state()` values, for cache-miss messages."""
  return ", ".join(f"{n} changed" for n, a, b in zip(_TRACE_FLAGS, old, new) if a != b)


def disable_jit(disable: bool = True):
  """Context manager that runs jitted functions eagerly, op by op (for debugging)."""
  return config._override("jax_disable_jit", disable)


def enable_x64(new_val: bool = True):
  """Context manager that turns 64-bit types on (or off) for its duration."""
  return config._override("jax_enable_x64", new_val)
