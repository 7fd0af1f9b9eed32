"""Configuration flags, with JAX's names, settable by `config.update` or environment variables."""
import contextlib
import enum
import functools
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


def int_parser(name, validator=None):
  """JAX's int option check: None or an int (ValueError otherwise), then `validator`."""
  def parse(v):
    if v is not None and not isinstance(v, int):
      raise ValueError(f"new int config value must be None or of type int, got {v} of type "
                       f"{type(v)}")
    if v is not None and validator is not None:
      validator(name, v)
    return v
  return parse


def parse_float(v):
  """JAX's float option check: None, a float or an int (ValueError otherwise)."""
  if v is not None and not isinstance(v, (float, int)):
    raise ValueError(f"new float config value must be None or of type float, got {v} of type "
                     f"{type(v)}")
  return v


def parse_optional_str(v):
  """JAX's optional string option check: None or a str (ValueError otherwise)."""
  if v is not None and not isinstance(v, str):
    raise ValueError(f"new string config value must be None or of type str, got {v} of type "
                     f"{type(v)}.")
  return v


def env_number(name, default, kind):
  """A numeric option's start value from the environment variable NAME (checked as JAX does)."""
  text = os.environ.get(name.upper())
  if text is None:
    return default
  try:
    return kind(text)
  except ValueError:
    raise ValueError(f'Invalid value "{text}" for JAX flag {name}') from None


def _env_enum_value(name, default, allowed):
  val = os.environ.get(name.upper(), default)
  if val is not None and val not in allowed:
    raise ValueError(f'Invalid value "{val}" for JAX flag {name}')
  return val


_UNSET = object()


class _ThreadOverrides(threading.local):
  """The flag values context managers set in this thread (JAX's contexts are thread-local)."""

  def __init__(self):
    self.values = {}


_overrides = _ThreadOverrides()
# How many contexts are open in all threads: while none is, a flag's value is read without
# looking at the thread-local overrides (the hot paths read flags on every call).
_open_contexts = [0]
_open_lock = threading.Lock()


class _Flag:
  __slots__ = ("name", "global_value", "parse")

  def __init__(self, name, default, parse):
    self.name, self.global_value, self.parse = name, default, parse

  @property
  def value(self):
    """This thread's value: the innermost open context's, else the global one."""
    if _open_contexts[0]:
      v = _overrides.values.get(self.name, _UNSET)
      if v is not _UNSET:
        return v
    return self.global_value

  @value.setter
  def value(self, v):
    self.global_value = v


def contexts_open() -> bool:
  """True while a config context is open in some thread (per-thread values may differ)."""
  return _open_contexts[0] > 0


class _ThreadLocalSetting:
  """Sets flag `name` to `value` in the current thread for a `with` block (re-entrant)."""
  __slots__ = ("name", "value", "prev")

  def __init__(self, name, value):
    self.name, self.value = name, value

  def __enter__(self):
    with _open_lock:
      _open_contexts[0] += 1
    self.prev = _overrides.values.get(self.name, _UNSET)
    _overrides.values[self.name] = self.value
    config._notify(self.name)

  def __exit__(self, *exc):
    if self.prev is _UNSET:
      _overrides.values.pop(self.name, None)
    else:
      _overrides.values[self.name] = self.prev
    with _open_lock:
      _open_contexts[0] -= 1
    config._notify(self.name)


class Config:
  """Holds arrax's flags. `config.update("jax_enable_x64", True)` as in JAX."""

  def __init__(self):
    self._flags = {}
    self._listeners = []
    self._update_hooks = {}   # name -> fn(new global value), run by `update` only

  def define(self, name, default, parse=lambda v: v):
    self._flags[name] = _Flag(name, default, parse)

  def update(self, name, value):
    flag = self._flags.get(name)
    if flag is None:
      raise AttributeError(f"Unrecognized config option: {name}")
    flag.value = flag.parse(value)
    hook = self._update_hooks.get(name)
    if hook is not None:
      hook(flag.global_value)
    self._notify(name)

  def _notify(self, name):
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

  @property
  def values(self):
    """Every option's value, by name (a property, as in JAX)."""
    return {n: f.value for n, f in self._flags.items()}

  def _override(self, name, value):
    """A context manager setting flag `name` in the current thread only, as JAX's do."""
    flag = self._flags.get(name)
    if flag is None:
      raise AttributeError(f"Unrecognized config option: {name}")
    return _ThreadLocalSetting(name, flag.parse(value))


config = Config()
config.define("jax_enable_x64", _env_bool("jax_enable_x64", False), bool)
config.define("jax_disable_jit", _env_bool("jax_disable_jit", False), bool)
config.define("jax_log_compiles", _env_bool("jax_log_compiles", False), bool)
config.define("jax_explain_cache_misses", _env_bool("jax_explain_cache_misses", False), bool)
config.define("jax_debug_nans", _env_bool("jax_debug_nans", False), bool)
config.define("jax_debug_infs", _env_bool("jax_debug_infs", False), bool)
# The persistent compilation cache (compilation_cache.py). Beyond JAX (where users opt in), it is
# on by default in a per-user directory, so a second process starts warm; JAX's names turn it off
# (JAX_COMPILATION_CACHE_DIR="" or jax_enable_compilation_cache=False) or move it.
config.define("jax_enable_compilation_cache", _env_bool("jax_enable_compilation_cache", True),
              bool)
config.define("jax_compilation_cache_dir", os.environ.get(
    "JAX_COMPILATION_CACHE_DIR", os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.join("~", ".cache"), "arrax", "xla")),
    parse_optional_str)
config.define("jax_persistent_cache_min_compile_time_secs",
              env_number("jax_persistent_cache_min_compile_time_secs", 1.0, float), parse_float)
config.define("jax_persistent_cache_min_entry_size_bytes",
              env_number("jax_persistent_cache_min_entry_size_bytes", 0, int),
              int_parser("jax_persistent_cache_min_entry_size_bytes"))
config.define("jax_compilation_cache_max_size",
              env_number("jax_compilation_cache_max_size", 2 ** 30, int),
              int_parser("jax_compilation_cache_max_size"))
config.define("jax_threefry_partitionable", _env_bool("jax_threefry_partitionable", True), bool)
config.define("jax_platforms", os.environ.get("JAX_PLATFORMS"), parse_optional_str)
MATMUL_PRECISIONS = (
    "default", "high", "highest", "bfloat16", "tensorfloat32", "float32",
    "ANY_F8_ANY_F8_F32", "ANY_F8_ANY_F8_F32_FAST_ACCUM", "ANY_F8_ANY_F8_ANY",
    "ANY_F8_ANY_F8_ANY_FAST_ACCUM", "F16_F16_F16", "F16_F16_F32", "BF16_BF16_BF16",
    "BF16_BF16_F32", "BF16_BF16_F32_X3", "BF16_BF16_F32_X6", "BF16_BF16_F32_X9",
    "TF32_TF32_F32", "TF32_TF32_F32_X3", "F32_F32_F32", "F64_F64_F64")
config.define("jax_default_matmul_precision",
              _env_enum_value("jax_default_matmul_precision", None, MATMUL_PRECISIONS),
              lambda v: _optional_enum("jax_default_matmul_precision", v, MATMUL_PRECISIONS))
# (must be set before the first backend is made: the check is installed by config_flags)
config.define("jax_num_cpu_devices", env_number("jax_num_cpu_devices", -1, int),
              int_parser("jax_num_cpu_devices"))


def _default_device(val):
  if (val is not None and val not in ("cpu", "gpu", "tpu")
      and "Device" not in str(type(val))):
    raise ValueError("jax.default_device must be passed either a Device object (e.g. "
                     "`jax.devices('cpu')[0]`) or a platform name string like 'cpu' or 'gpu'"
                     f", got: {val!r}")
  return val


config.define("jax_default_device", _default_device(os.environ.get("JAX_DEFAULT_DEVICE")),
              _default_device)
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
config.define("jax_no_tracing", _env_bool("jax_no_tracing", False), bool)
# Source locations in lowered modules (mlir.py): each operation's Python traceback (user frames,
# at most this many; negative means all) or, with full tracebacks off, its innermost user frame.
config.define("jax_include_full_tracebacks_in_locations",
              _env_bool("jax_include_full_tracebacks_in_locations", True), bool)
config.define("jax_traceback_in_locations_limit",
              env_number("jax_traceback_in_locations_limit", 100, int),
              int_parser("jax_traceback_in_locations_limit"))
config.define("jax_hlo_source_file_canonicalization_regex",
              os.environ.get("JAX_HLO_SOURCE_FILE_CANONICALIZATION_REGEX"), parse_optional_str)
config.define("jax_check_tracer_leaks", _env_bool("jax_check_tracer_leaks", False), bool)
_GUARD_LEVELS = ("allow", "log", "disallow", "log_explicit", "disallow_explicit")
_DIRECTIONS = ("jax_transfer_guard_host_to_device", "jax_transfer_guard_device_to_host",
               "jax_transfer_guard_device_to_device")
for _name in ("jax_transfer_guard",) + _DIRECTIONS:
  config.define(_name, _env_enum_value(_name, None, _GUARD_LEVELS),
                lambda v, _n=_name: _optional_enum(_n, v, _GUARD_LEVELS))


def _set_all_guards(value):
  # (as in JAX, setting jax_transfer_guard globally sets the three directions' options)
  for name in _DIRECTIONS:
    config.update(name, value)


config._update_hooks["jax_transfer_guard"] = _set_all_guards
# Beyond JAX: warn when tracing unrolls a Python loop into more than this many operations from
# one line (0 turns the warning off).
# Beyond JAX: warn when one jitted function has compiled more than this many times, naming what
# keeps changing (0 turns the warning off).
config.define("arrax_recompile_warning_threshold",
              int(os.environ.get("ARRAX_RECOMPILE_WARNING_THRESHOLD", "8")), int)
config.define("arrax_loop_unroll_warning_threshold",
              int(os.environ.get("ARRAX_LOOP_UNROLL_WARNING_THRESHOLD", "100")), int)
# Internal: the core.OpAttributes entries (compute_on, set_xla_metadata) in force in this
# thread, set only by `core.op_attributes` contexts; a trace flag, so jit traces again under them.
config.define("arrax_op_attributes", (), tuple)


class NumpyDtypePromotion(enum.StrEnum):
  """The type promotion modes of arrax.numpy: 'strict' allows no implicit promotion between
  different dtypes (weak Python scalars still join arrays of their kind or a higher one)."""
  STANDARD = "standard"
  STRICT = "strict"


def _dtype_promotion(value):
  if isinstance(value, str):
    value = NumpyDtypePromotion(value)
  elif not isinstance(value, NumpyDtypePromotion):
    raise TypeError(f"new enum value must be an instance of {NumpyDtypePromotion}, got {value} "
                    f"of type {type(value)}.")
  return value


config.define("jax_numpy_dtype_promotion",
              _dtype_promotion(os.environ.get("JAX_NUMPY_DTYPE_PROMOTION", "standard")),
              lambda v: _dtype_promotion(v))


def _enum(name, value, allowed):
  if value not in allowed:
    raise ValueError(f"new enum value must be in {list(allowed)}, got {value} of type "
                     f"{type(value)}.")
  return value


def _enum_strict(name, value, allowed):
  """JAX's enum_state parser: only a str among `allowed`."""
  if type(value) is not str or value not in allowed:
    raise ValueError(f"new enum value must be in {list(allowed)}, got {value} of type "
                     f"{type(value)}.")
  return value


def _optional_enum(name, value, allowed):
  if value is not None and (type(value) is not str or value not in allowed):
    raise ValueError(f"new enum value must be None or in {list(allowed)}, got {value} of type "
                     f"{type(value)}.")
  return value


def _enum_or_none(name, value, allowed):
  if value not in allowed:
    raise ValueError(f"new enum value must be None or in {list(allowed)}, got {value} of type "
                     f"{type(value)}.")
  return value


def _env_enum(name, default, allowed):
  """An enum flag's start value from the environment variable NAME (checked as JAX does)."""
  val = os.environ.get(name.upper(), default)
  if val is not None and val not in allowed:
    raise ValueError(f'Invalid value "{val}" for JAX flag {name}')
  return val


class LegacyPrngKeyState(enum.StrEnum):
  """What arrax.random does with a raw uint32 key: allow it, warn, or raise."""
  ALLOW = "allow"
  WARN = "warn"
  ERROR = "error"


def _legacy_prng_key(value):
  if isinstance(value, str):
    return LegacyPrngKeyState(value)
  if not isinstance(value, LegacyPrngKeyState):
    raise TypeError(f"new enum value must be an instance of {LegacyPrngKeyState}, got {value} "
                    f"of type {type(value)}.")
  return value


def _env_legacy_prng_key():
  val = os.environ.get("JAX_LEGACY_PRNG_KEY")
  if val is None:
    return LegacyPrngKeyState.ALLOW
  try:
    return LegacyPrngKeyState(val)
  except ValueError as e:
    raise ValueError(f'Invalid value "{val}" for JAX flag jax_legacy_prng_key') from e


PRNG_IMPL_NAMES = ("threefry2x32", "threefry4x32", "rbg", "unsafe_rbg", "philox2x32",
                   "philox4x32")
_GC_GUARD_LEVELS = ("allow", "log", "fatal")

for _name, _default in (("jax_allow_f16_reductions", True), ("jax_enable_checks", False),
                        ("jax_no_execution", False), ("jax_softmax_custom_jvp", False),
                        ("jax_enable_custom_prng", False), ("jax_debug_key_reuse", False),
                        ("jax_auto_pcast", True), ("jax_thread_guard", False),
                        ("jax_remove_size_one_mesh_axis_from_type", False),
                        ("jax2tf_associative_scan_reductions", False)):
  config.define(_name, _env_bool(_name, _default), bool)
config.define("jax_default_prng_impl",
              _env_enum("jax_default_prng_impl", "threefry2x32", PRNG_IMPL_NAMES),
              lambda v: _enum_strict("jax_default_prng_impl", v, PRNG_IMPL_NAMES))
config.define("jax_legacy_prng_key", _env_legacy_prng_key(), _legacy_prng_key)
config.define("jax_array_garbage_collection_guard",
              _env_enum("jax_array_garbage_collection_guard", None, _GC_GUARD_LEVELS),
              lambda v: _optional_enum("jax_array_garbage_collection_guard", v,
                                       _GC_GUARD_LEVELS))


def x64_enabled():
  return config._flags["jax_enable_x64"].value


_x64_flag = config._flags["jax_enable_x64"]
_promotion_flag = config._flags["jax_numpy_dtype_promotion"]
_global_promotion_key = [0]


def promotion_key() -> int:
  """x64 (1) + strict promotion (2) in this thread: what the promotion lattice depends on."""
  if _open_contexts[0]:
    return _x64_flag.value + 2 * (_promotion_flag.value == "strict")
  return _global_promotion_key[0]


def _refresh_promotion_key(name=None):
  if name is None or name in ("jax_enable_x64", "jax_numpy_dtype_promotion"):
    _global_promotion_key[0] = (bool(_x64_flag.global_value)
                                + 2 * (_promotion_flag.global_value == "strict"))


_refresh_promotion_key()
config._listeners.append(_refresh_promotion_key)


_TRACE_FLAGS = ["jax_enable_x64", "jax_threefry_partitionable", "jax_default_matmul_precision",
                "jax_allow_f16_reductions", "jax_softmax_custom_jvp", "arrax_op_attributes",
                "jax_numpy_dtype_promotion"]


def add_trace_flags(*names):
  """Make jit caches key on these flags too (as JAX's include_in_jit_key options)."""
  _TRACE_FLAGS.extend(names)
  _refresh_trace_state()
_trace_state = [None]   # the current tuple, recomputed when one of those flags changes


_user_contexts = []   # every make_user_context value, in the order they were made


def _refresh_trace_state(name=None):
  if name is None or name in _TRACE_FLAGS:
    _trace_state[0] = (tuple(config._flags[n].global_value for n in _TRACE_FLAGS)
                       + tuple(u.value for u in _user_contexts))


_refresh_trace_state()
config._listeners.append(_refresh_trace_state)

# The flags a jitted call checks on every call; `plain_calls[0]` is True while none of them is
# set and no config context is open in any thread, so the call path reads one value for all.
_CALL_FLAGS = ("jax_disable_jit", "jax_no_execution", "jax_debug_nans", "jax_debug_infs")
plain_calls = [True]


def _refresh_plain_calls(name=None):
  plain_calls[0] = not _open_contexts[0] and not any(
      config._flags[n].global_value for n in _CALL_FLAGS if n in config._flags)


_refresh_plain_calls()
config._listeners.append(_refresh_plain_calls)


def trace_state() -> tuple:
  """The values of the flags that change what tracing records (jit caches key on them), in
  this thread."""
  if _open_contexts[0]:
    return (tuple(config._flags[n].value for n in _TRACE_FLAGS)
            + tuple(u.value for u in _user_contexts))
  return _trace_state[0]


def trace_state_change(old: tuple, new: tuple) -> str:
  """Which trace flag differs between two `trace_state()` values, for cache-miss messages."""
  changes = [f"{n} changed" for n, a, b in zip(_TRACE_FLAGS, old, new) if a != b]
  if old[len(_TRACE_FLAGS):] != new[len(_TRACE_FLAGS):]:
    changes.append("a user context (make_user_context) changed")
  return ", ".join(changes)


class UserConfig:
  """A value that jit caches key on (made by `make_user_context`): calling it with a value
  gives a context manager setting it; `.value` reads it."""

  def __init__(self, default_value):
    self._global = default_value
    self._stack = []
    _user_contexts.append(self)
    _refresh_trace_state()

  @property
  def value(self):
    return self._stack[-1] if self._stack else self._global

  def get_global(self):
    return self._global

  def set_global(self, new_value):
    self._global = new_value
    _refresh_trace_state()

  def __call__(self, new_value):
    return _UserContext(self, new_value)


class _UserContext:
  __slots__ = ("_config", "_new_value")

  def __init__(self, config_, new_value):
    self._config, self._new_value = config_, new_value

  def __enter__(self):
    self._config._stack.append(self._new_value)
    _refresh_trace_state()

  def __exit__(self, *exc):
    self._config._stack.pop()
    _refresh_trace_state()


def make_user_context(default_value=None):
  """A new context whose value is part of jit's cache key: under `with ctx(v):` a jitted
  function is traced and compiled again for each new `v` (values must be hashable)."""
  return UserConfig(default_value)


def disable_jit(disable: bool = True):
  """Context manager that runs jitted functions eagerly, op by op (for debugging)."""
  return config._override("jax_disable_jit", disable)


def enable_x64(new_val: bool = True):
  """Context manager that turns 64-bit types on (or off) for its duration."""
  return config._override("jax_enable_x64", new_val)


_NO_DEFAULT = object()
config_states: dict = {}   # option name -> its State (JAX's options of that kind)


class State:
  # A flag's handle, as JAX's config State: `state(new_val)` is a context manager (also usable as
  # a decorator) that sets the flag for its duration; `state.value` reads the flag. Boolean
  # flags default to True when called without a value. (No class docstring: each instance
  # carries its own.) As in JAX, the value a context sets holds in its thread only.

  def __init__(self, name, doc):
    config_states[name] = self
    self._flag = config._flags[name]
    self._default_cm = True if self._flag.parse is bool else _NO_DEFAULT
    self.__name__ = name[len("jax_"):] if name.startswith("jax_") else name
    self.__doc__ = doc

  @property
  def name(self):
    return self._flag.name

  @property
  def value(self):
    return self._flag.value

  def get_global(self):
    return self._flag.value

  def set_global(self, new_val):
    config.update(self._flag.name, new_val)

  def __bool__(self):
    raise TypeError("bool() not supported for instances of type 'State' (did you mean to use "
                    "'State.value' instead?)")

  def __repr__(self):
    return f"<arrax config State {self._flag.name}={self._flag.value!r}>"

  def __call__(self, new_val=_NO_DEFAULT):
    return _StateContext(self, new_val)


class _StateContext:
  __slots__ = ("state", "new_val", "prev")

  def __init__(self, state, new_val):
    if new_val is _NO_DEFAULT:
      if state._default_cm is _NO_DEFAULT:
        raise TypeError(f"Context manager for {state.__name__} config option requires an "
                        "argument representing the new value for the config option.")
      new_val = state._default_cm
    self.state = state
    self.new_val = state._flag.parse(new_val)   # a bad value raises here, as in JAX

  def __enter__(self):
    self.prev = _ThreadLocalSetting(self.state._flag.name, self.new_val)
    self.prev.__enter__()

  def __exit__(self, *exc):
    self.prev.__exit__(*exc)

  def __call__(self, func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
      with _StateContext(self.state, self.new_val):
        return func(*args, **kwargs)
    return wrapper


def _state(name, doc):
  return State(name, doc)


default_device = _state("jax_default_device",
                        "Context manager: new arrays and computations go to this device.")
default_matmul_precision = _state("jax_default_matmul_precision",
                                  "Context manager setting the default precision of matmuls.")
numpy_rank_promotion = _state("jax_numpy_rank_promotion",
                              "Context manager: 'allow', 'warn' or 'raise' on NumPy rank "
                              "promotion in arrax.numpy.")
numpy_dtype_promotion = _state("jax_numpy_dtype_promotion",
                               "Context manager for the dtype promotion mode ('standard' or "
                               "'strict').")
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
                            "Context manager for the leak checker: a tracer outliving its trace raises.")
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


# ---- flags JAX exposes as top-level context managers ------------------------------------------
_NO_EFFECT = " It is accepted and validated as in JAX but has no effect in arrax"


def _flag_doc(name, text):
  return f"Context manager for `{name}` config option.\n\n{text}"


def _flag_state(name, text):
  """`_state` with JAX's docstring form for the flag `name`."""
  return _state(name, _flag_doc(name, text))


threefry_partitionable = _flag_state("jax_threefry_partitionable",
    "Derive threefry random bits in the partitionable way (True, the default) or the older "
    "sequential way (False); the two give different random values.")
allow_f16_reductions = _flag_state("jax_allow_f16_reductions",
    "If False, `reduce_sum` over float16/bfloat16 operands raises a ValueError.")
enable_checks = _flag_state("jax_enable_checks",
    "Type-check every jaxpr arrax traces (slower).")
no_execution = _flag_state("jax_no_execution",
    "If True, running any compiled computation raises RuntimeError (tracing still works).")
softmax_custom_jvp = _flag_state("jax_softmax_custom_jvp",
    "If True, arrax.nn.softmax differentiates through a custom JVP rule instead of through its "
    "implementation.")
enable_custom_prng = _flag_state("jax_enable_custom_prng",
    "If True, arrax.random functions given raw uint32 keys warn (FutureWarning) and return "
    "typed keys from split/fold_in.")
legacy_prng_key = _flag_state("jax_legacy_prng_key",
    "What arrax.random does with raw uint32 keys: 'allow', 'warn' (UserWarning) or 'error' "
    "(ValueError).")
default_prng_impl = _flag_state("jax_default_prng_impl",
    "The PRNG implementation random.key/PRNGKey use when none is given. arrax implements only "
    "'threefry2x32'; using the others raises NotImplementedError.")
debug_key_reuse = _flag_state("jax_debug_key_reuse",
    "Key-reuse checking for typed keys: using a key twice raises KeyReuseError (sampling, "
    "split and static slicing use keys up), eagerly, within a trace and through jit, vmap and "
    "the other transformations.")
auto_pcast = _flag_state("jax_auto_pcast",
    "Automatic pvary insertion for shard_map varying axes." + _NO_EFFECT +
    " (no varying-manual-axes types).")
thread_guard = _flag_state("jax_thread_guard",
    "Raise when a multi-process operation runs from another thread." +
    _NO_EFFECT + " (a single process).")
remove_size_one_mesh_axis_from_type = _state(
    "jax_remove_size_one_mesh_axis_from_type", _flag_doc(
        "jax_remove_size_one_mesh_axis_from_type",
        "Drop mesh axes of size 1 from the sharding in array types." + _NO_EFFECT +
        " (avals carry no sharding)."))
jax2tf_associative_scan_reductions = _state("jax2tf_associative_scan_reductions", _flag_doc(
    "jax2tf_associative_scan_reductions",
    "Lowering choice of cumulative reductions for jax2tf." + _NO_EFFECT + " (no jax2tf)."))
array_garbage_collection_guard = _flag_state("jax_array_garbage_collection_guard",
    "What happens when an Array is freed by the garbage collector rather than by reference "
    "counting: None/'allow', 'log' or 'fatal'." + _NO_EFFECT + " (arrays are never tracked).")

# The other options of JAX's State kind: their handles (`config_states[name](value)` is a context
# manager setting the option in this thread).
for _name in ("jax_compilation_cache_dir", "jax_compilation_cache_max_size",
              "jax_cpu_collectives_implementation", "jax_disable_jit",
              "jax_enable_compilation_cache", "jax_enable_preemption_service",
              "jax_enable_recoverability", "jax_enable_x64",
              "jax_hlo_source_file_canonicalization_regex",
              "jax_include_full_tracebacks_in_locations", "jax_num_cpu_devices",
              "jax_persistent_cache_min_compile_time_secs",
              "jax_persistent_cache_min_entry_size_bytes", "jax_platforms",
              "jax_traceback_in_locations_limit", "jax_transfer_guard"):
  State(_name, _flag_doc(_name, "See the option's description in JAX."))
del _name
if config.jax_transfer_guard is not None:   # (JAX_TRANSFER_GUARD sets the three directions)
  _set_all_guards(config.jax_transfer_guard)
