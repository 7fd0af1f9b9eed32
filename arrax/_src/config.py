"""Configuration flags, with JAX's names, settable by `config.update` or environment variables."""
import contextlib
import logging
import os
import threading

from jaxlib._jax import JaxRuntimeError as _runtime_error

_logger = logging.getLogger("arrax")


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
config.define("jax_debug_infs", _env_bool("jax_debug_infs", False), bool)
# The persistent compilation cache (compilation_cache.py): off unless a directory is set, as in
# JAX (e.g. JAX_COMPILATION_CACHE_DIR=~/.cache/arrax/xla).
config.define("jax_enable_compilation_cache", _env_bool("jax_enable_compilation_cache", True),
              bool)
config.define("jax_compilation_cache_dir", os.environ.get("JAX_COMPILATION_CACHE_DIR") or None)
config.define("jax_persistent_cache_min_compile_time_secs",
              float(os.environ.get("JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS", "1.0")), float)
config.define("jax_persistent_cache_min_entry_size_bytes",
              int(os.environ.get("JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES", "0")), int)
config.define("jax_compilation_cache_max_size",
              int(os.environ.get("JAX_COMPILATION_CACHE_MAX_SIZE", str(2 ** 30))), int)
config.define("jax_threefry_partitionable", _env_bool("jax_threefry_partitionable", True), bool)
config.define("jax_platforms", os.environ.get("JAX_PLATFORMS", ""), str)
config.define("jax_default_matmul_precision", os.environ.get("JAX_DEFAULT_MATMUL_PRECISION"))
config.define("jax_num_cpu_devices", int(os.environ.get("JAX_NUM_CPU_DEVICES", "-1")), int)
config.define("jax_default_device", None)
# Multi-process (arrax.distributed): cross-process collectives on CPU and the preemption service.
config.define("jax_cpu_collectives_implementation",
              os.environ.get("JAX_CPU_COLLECTIVES_IMPLEMENTATION", "gloo"),
              lambda v: None if v is None else _enum_or_none(
                  "jax_cpu_collectives_implementation", v, ("gloo", "mpi", "megascale")))
config.define("jax_enable_preemption_service",
              _env_bool("jax_enable_preemption_service", True), bool)
config.define("jax_enable_recoverability", _env_bool("jax_enable_recoverability", False), bool)
config.define("jax_numpy_rank_promotion",
              os.environ.get("JAX_NUMPY_RANK_PROMOTION", "allow"),
              lambda v: _enum("jax_numpy_rank_promotion", v, ("allow", "warn", "raise")))
config.define("jax_numpy_dtype_promotion",
              os.environ.get("JAX_NUMPY_DTYPE_PROMOTION", "standard"),
              lambda v: _dtype_promotion(v))
config.define("jax_no_tracing", False, bool)
config.define("jax_check_tracer_leaks", False, bool)
for _name in ("jax_transfer_guard", "jax_transfer_guard_host_to_device",
              "jax_transfer_guard_device_to_host", "jax_transfer_guard_device_to_device"):
  config.define(_name, None, lambda v, _n=_name: None if v is None else _enum(
      _n, v, ("allow", "log", "disallow", "log_explicit", "disallow_explicit")))
# Beyond JAX: warn when tracing unrolls a Python loop into more than this many operations from
# one line (0 turns the warning off).
config.define("arrax_loop_unroll_warning_threshold",
              int(os.environ.get("ARRAX_LOOP_UNROLL_WARNING_THRESHOLD", "100")), int)


def _dtype_promotion(value):
  if value == "strict":
    raise NotImplementedError("jax_numpy_dtype_promotion='strict' is not supported by arrax")
  return _enum("jax_numpy_dtype_promotion", value, ("standard",))


def _enum(name, value, allowed):
  if value not in allowed:
    raise ValueError(f"new enum value must be in {list(allowed)}, got {value} of type "
                     f"{type(value)}.")
  return value


def _enum_or_none(name, value, allowed):
  if value not in allowed:
    raise ValueError(f"new enum value must be None or in {list(allowed)}, got {value} of type "
                     f"{type(value)}.")
  return value


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


def _state(name, doc):
  def context(new_val):
    return config._override(name, new_val)
  context.__name__ = name[len("jax_"):]
  context.__doc__ = doc
  return context


default_device = _state("jax_default_device",
                        "Context manager: new arrays and computations go to this device.")
default_matmul_precision = _state("jax_default_matmul_precision",
                                  "Context manager setting the default precision of matmuls.")
numpy_rank_promotion = _state("jax_numpy_rank_promotion",
                              "Context manager: 'allow', 'warn' or 'raise' on NumPy rank "
                              "promotion in arrax.numpy.")
numpy_dtype_promotion = _state("jax_numpy_dtype_promotion",
                               "Context manager for the dtype promotion mode ('standard').")
debug_nans = _state("jax_debug_nans", "Context manager: raise FloatingPointError on a NaN "
                    "result, naming the operation that made it.")
debug_infs = _state("jax_debug_infs", "Context manager: raise FloatingPointError on an inf "
                    "result, naming the operation that made it.")
log_compiles = _state("jax_log_compiles", "Context manager: log every XLA compilation.")
explain_cache_misses = _state("jax_explain_cache_misses",
                              "Context manager: explain why jit traces again.")
no_tracing = _state("jax_no_tracing",
                    "Context manager: tracing a jitted function raises RuntimeError.")
check_tracer_leaks = _state("jax_check_tracer_leaks",
                            "Context manager for the leak checker (tracers are not tracked).")
transfer_guard_host_to_device = _state(
    "jax_transfer_guard_host_to_device",
    "Context manager guarding implicit host-to-device transfers ('allow', 'disallow', ...).")
transfer_guard_device_to_host = _state(
    "jax_transfer_guard_device_to_host",
    "Context manager guarding implicit device-to-host transfers ('allow', 'disallow', ...).")
transfer_guard_device_to_device = _state(
    "jax_transfer_guard_device_to_device",
    "Context manager guarding implicit device-to-device transfers ('allow', 'disallow', ...).")


def checking_leaks():
  """Context manager turning the tracer-leak checker on."""
  return check_tracer_leaks(True)


@contextlib.contextmanager
def transfer_guard(new_val):
  """Context manager setting all three transfer guards ('allow', 'log', 'disallow', ...)."""
  with contextlib.ExitStack() as stack:
    for cm in (transfer_guard_host_to_device, transfer_guard_device_to_host,
               transfer_guard_device_to_device):
      stack.enter_context(cm(new_val))
    yield


def transfer_guard_level(kind):
  """The guard for `kind` ("host_to_device", ...), falling back to jax_transfer_guard."""
  val = config._flags[f"jax_transfer_guard_{kind}"].value
  if val is None:
    val = config._flags["jax_transfer_guard"].value
  return "allow" if val is None else val


class _Explicit(threading.local):
  depth = 0


_explicit = _Explicit()


@contextlib.contextmanager
def explicit_transfers():
  """Transfers inside (device_put, device_get) are explicit: guards set to 'disallow' allow
  them ('disallow_explicit' does not)."""
  _explicit.depth += 1
  try:
    yield
  finally:
    _explicit.depth -= 1


def check_transfer(kind, describe):
  """Apply the transfer guard of `kind` to a transfer (`describe()` says what moves)."""
  level = transfer_guard_level(kind)
  if level == "allow":
    return
  explicit = _explicit.depth > 0
  if level in ("log", "log_explicit"):
    if not explicit or level == "log_explicit":
      _logger.warning("%s%s transfer: %s", "explicit " if explicit else "",
                      kind.replace("_", "-"), describe())
    return
  if explicit and level == "disallow":
    return
  raise _runtime_error(f"INVALID_ARGUMENT: Disallowed {kind.replace('_', '-')} transfer: "
                       f"{describe()}")
