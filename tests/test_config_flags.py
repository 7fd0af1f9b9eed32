"""Every one of JAX 0.10.2's config options in arrax.config: the same defaults, validation, error
classes and context managers (all 133, differentially), and what the implemented ones do."""
import contextlib
import json
import logging
import os
import re
import subprocess
import sys
import traceback
import warnings

import numpy as np
import pytest

import jax
import jax.numpy as jnp
from jax._src import compiler as jax_compiler, config as jax_config_mod

import arrax
import arrax.numpy as anp
from arrax._src import backend, compilation_cache, compiler, config as config_mod, dispatch

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NAMES = sorted(jax.config._value_holders)
# arrax's persistent compilation cache is on by default (a documented choice), so these two
# start elsewhere.
DEFAULT_DIFFERS = {"jax_compilation_cache_dir", "jax_compilation_cache_max_size"}
# Options arrax cannot honour: values that would change behaviour raise NotImplementedError.
REFUSED = {"eager_constant_folding", "jax_use_simplified_jaxpr_constants",
           "jax_experimental_unsafe_xla_runtime_errors", "jax_send_traceback_to_runtime",
           "jax_error_checking_behavior_nan", "jax_error_checking_behavior_divide",
           "jax_error_checking_behavior_oob", "jax_explicit_x64_dtypes",
           "jax_dump_ir_modes"}
# Options that must be set before the backends exist (both raise RuntimeError afterwards).
BEFORE_BACKENDS = {"jax_num_cpu_devices", "jax_cpu_get_local_topology_timeout_minutes",
                   "jax_cpu_get_global_topology_timeout_minutes"}


@pytest.fixture(scope="module", autouse=True)
def _backends_made():
  jax.devices()
  arrax.devices()


def _jax_read(name):
  return jax.config._read(name)


@contextlib.contextmanager
def _restored(name):
  old_j, old_a = _jax_read(name), arrax.config.read(name)
  try:
    yield
  finally:
    if name in BEFORE_BACKENDS:   # (an update would be refused now; None slips through)
      jax.config._value_holders[name].set_global(old_j)
      arrax.config.flag(name).global_value = old_a
    else:
      jax.config.update(name, old_j)
      arrax.config.update(name, old_a)


def _outcome(update, read, name, value):
  try:
    update(name, value)
  except Exception as e:  # noqa: BLE001
    return ("raises", type(e).__name__)
  return ("ok", read(name))


def _same_value(a, j):
  if isinstance(j, (str, int, float, bool, type(None))) or hasattr(j, "value"):
    return a == j and (type(a) is type(j) or type(a).__name__ == type(j).__name__)
  return a is j


def test_every_jax_option_is_defined():
  assert len(NAMES) == 133
  assert not [n for n in NAMES if not hasattr(arrax.config, n)]
  assert set(NAMES) <= set(arrax.config.values)   # (a property, as in JAX)
  # The same options have per-thread State handles (context managers) as in JAX.
  names = set(NAMES)
  assert ({n for n in config_mod.config_states if n in names}
          == {n for n in jax_config_mod.config_states if n in names})


@pytest.mark.parametrize("name", NAMES)
def test_default(name):
  if name.upper() in os.environ or name in DEFAULT_DIFFERS:
    pytest.skip("set by the environment (checked in test_defaults_from_environment)")
  assert _same_value(arrax.config.read(name), _jax_read(name)), (
      arrax.config.read(name), _jax_read(name))


_BAD = [object(), "bogus_value", 3.5, -7, None, True, {"k": "v"}]


@pytest.mark.parametrize("name", NAMES)
def test_bad_values_fail_as_in_jax(name):
  for value in _BAD:
    with _restored(name):
      j = _outcome(jax.config.update, _jax_read, name, value)
    with _restored(name):
      a = _outcome(arrax.config.update, arrax.config.read, name, value)
    if name in REFUSED and j[0] == "ok" and a == ("raises", "NotImplementedError"):
      continue
    assert a[0] == j[0], (value, a, j)
    if a[0] == "raises":
      assert a[1] == j[1], (value, a, j)
    else:
      assert _same_value(a[1], j[1]), (value, a, j)


def _other_value(name):
  kind, _, meta = jax.config.meta[name]
  default = _jax_read(name)
  if kind is bool:
    return not default
  if kind is int:
    return (default or 0) + 3
  if kind is float:
    return (default or 0.0) + 0.5
  if kind == "enum":
    return next(v for v in meta["enum_values"] if v != default)
  if kind == "enum_class":
    member = next(v for v in meta["enum_class"] if v != default)
    return member.value if isinstance(member.value, str) else member.name.lower()
  return {"jax_platforms": "cpu", "jax_default_device": "cpu", "jax_dump_ir_modes": "jaxpr",
          "jax_debug_log_modules": "jax._src.nothing_here"}.get(name, "some_text")


@pytest.mark.parametrize("name", sorted(set(NAMES) - BEFORE_BACKENDS))
def test_update_and_context_round_trip(name):
  value = _other_value(name)
  with _restored(name):
    j = _outcome(jax.config.update, _jax_read, name, value)
    assert j[0] == "ok"
    if name in REFUSED - {"jax_explicit_x64_dtypes", "jax_dump_ir_modes"}:
      with pytest.raises(NotImplementedError):
        arrax.config.update(name, value)
      return
    arrax.config.update(name, value)
    assert _same_value(arrax.config.read(name), j[1])
    assert _same_value(getattr(arrax.config, name), j[1])
  state, jstate = config_mod.config_states.get(name), jax_config_mod.config_states.get(name)
  assert (state is None) == (jstate is None)
  if state is not None and name != "jax_transfer_guard":
    default = arrax.config.read(name)
    with state(value):
      assert _same_value(arrax.config.read(name), j[1])
    assert _same_value(arrax.config.read(name), default)
    assert state.__name__ == jstate.__name__


def test_before_backends_options_raise_after_backends_exist():
  for name in sorted(BEFORE_BACKENDS):
    for lib in (jax, arrax):
      with _restored(name), pytest.raises(RuntimeError, match="before backends"):
        lib.config.update(name, 3)
      lib.config.update(name, lib.config.read(name) if lib is arrax else _jax_read(name))


# ---- defaults from the environment: one process with every option's variable set ----------------
def _env_text(name):
  value = _other_value(name)
  if isinstance(value, bool):
    return "1" if value else "0"
  return str(value)


_ENV_SKIP = REFUSED | {"jax_default_device", "jax_platforms", "jax_enable_x64",
                      "jax_logging_level", "jax_debug_log_modules", "jax_dump_ir_to",
                      "jax_no_execution", "jax_disable_jit", "jax_num_cpu_devices"}
_ENV_PROGRAM = """
import json, os, sys
import jax, arrax
names = json.loads(sys.argv[1])
def show(v):
  return [type(v).__name__, v.value if hasattr(v, "value") else v]
print(json.dumps({n: [show(jax.config._read(n)), show(arrax.config.read(n))] for n in names}))
"""


def test_defaults_from_environment():
  names = [n for n in NAMES if n not in _ENV_SKIP]
  env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
  env.update({n.upper(): _env_text(n) for n in names})
  env.update(JAX_PLATFORM_NAME="CPU", JAX_ENABLE_X64="true", JAX_DEFAULT_DEVICE="cpu")
  names += ["jax_platform_name", "jax_enable_x64", "jax_default_device"]
  p = subprocess.run([sys.executable, "-c", _ENV_PROGRAM, json.dumps(names)],
                     capture_output=True, text=True, env=env, timeout=240)
  assert p.returncode == 0, p.stderr[-3000:]
  got = json.loads(p.stdout.strip().splitlines()[-1])
  differ = {n: v for n, v in got.items() if v[0] != v[1]}
  assert not differ, "\n".join(f"{n}: {v}" for n, v in sorted(differ.items()))
  # (the variables did change most of them: the test would pass vacuously otherwise)
  changed = [n for n in names if got[n][0][1] != [type(_jax_read(n)).__name__,
                                                  getattr(_jax_read(n), "value",
                                                          _jax_read(n))][1]]
  assert len(changed) > 60


# ---- what the implemented options do ---------------------------------------------------------
def test_cpu_async_dispatch_off_makes_a_synchronous_client(monkeypatch):
  made = []
  real = backend.xc.make_cpu_client

  def spy(**kwargs):
    made.append(kwargs)
    return real(**kwargs)
  monkeypatch.setattr(backend.xc, "make_cpu_client", spy)
  with _restored("jax_cpu_enable_async_dispatch"):
    arrax.config.update("jax_cpu_enable_async_dispatch", False)
    client = backend._make_cpu_client()
  assert made[-1]["asynchronous"] is False
  # A computation on the inline client computes the right values.
  lowered = arrax.jit(lambda: anp.sin(anp.arange(4.0)) * 2).lower()
  device = client.local_devices()[0]
  loaded = client.compile_and_load(lowered.compiler_ir(), backend.xc.DeviceList((device,)),
                                   dispatch._single_device_options(device))
  out = loaded.execute_sharded([]).disassemble_into_single_device_arrays()[0][0]
  np.testing.assert_allclose(np.asarray(out), np.sin(np.arange(4.0)) * 2, rtol=1e-6)


def test_platform_name_chooses_the_default_backend():
  for name in ("jax_platform_name", "jax_xla_backend"):
    with _restored(name):
      arrax.config.update(name, "cpu")
      assert arrax.default_backend() == "cpu"
      arrax.config.update(name, "no_such_platform")
      with pytest.raises(RuntimeError, match="no_such_platform"):
        arrax.devices()
    assert arrax.devices()[0].platform == "cpu"


def _frames(lib, np_mod, mode):
  lib.config.update("jax_traceback_filtering", mode)
  try:
    def g(x):
      return x + "a"

    @lib.jit
    def f(x):
      return g(x) * 2
    try:
      f(np_mod.ones(3))
    except TypeError as e:
      files = {os.path.basename(fs.filename) for fs in traceback.extract_tb(e.__traceback__)}
      return ("test_config_flags.py" in files, files <= {"test_config_flags.py"},
              len(getattr(e, "__notes__", ())), type(e.__cause__).__name__)
  finally:
    lib.config.update("jax_traceback_filtering", "auto")


@pytest.mark.parametrize("mode", ["off", "quiet_remove_frames", "remove_frames", "auto"])
def test_traceback_filtering(mode):
  assert _frames(arrax, anp, mode) == _frames(jax, jnp, mode)


def test_traceback_filtering_through_grad_and_vmap():
  def f(x):
    raise ValueError("user error")
  for transform in (arrax.grad, arrax.vmap):
    with pytest.raises(ValueError) as info:
      transform(f)(anp.ones(()) if transform is arrax.grad else anp.ones(3))
    files = {fs.filename for fs in traceback.extract_tb(info.value.__traceback__)}
    assert not [f for f in files if f"{os.sep}arrax{os.sep}" in f]


class _Collect(logging.Handler):
  def __init__(self):
    super().__init__(logging.NOTSET)
    self.messages = []

  def emit(self, record):
    self.messages.append(record.getMessage())


def test_logging_level_and_debug_log_modules():
  collect = _Collect()
  logging.getLogger("arrax").addHandler(collect)
  try:
    with _restored("jax_logging_level"):
      arrax.config.update("jax_logging_level", "DEBUG")
      arrax_logger = logging.getLogger("arrax")
      assert arrax_logger.level == logging.DEBUG
      assert any(isinstance(h, logging.StreamHandler) and h is not collect
                 for h in arrax_logger.handlers)
      arrax.jit(lambda x: x * 3 + 1)(anp.ones(2))
      assert any("Finished tracing + transforming" in m for m in collect.messages)
    assert logging.getLogger("arrax").level == logging.NOTSET
    assert logging.getLogger("arrax").handlers == [collect]
    collect.messages.clear()
    arrax.jit(lambda x: x * 3 + 2)(anp.ones(2))
    assert not collect.messages
    with _restored("jax_debug_log_modules"):
      arrax.config.update("jax_debug_log_modules", "jax._src.jit")
      assert logging.getLogger("arrax._src.jit").level == logging.DEBUG
      assert logging.getLogger("arrax._src.dispatch").level == logging.NOTSET
      arrax.jit(lambda x: x * 3 + 3)(anp.ones(2))
      assert any("Finished tracing + transforming" in m for m in collect.messages)
      assert not any("XLA compilation" in m for m in collect.messages)
    assert logging.getLogger("arrax._src.jit").level == logging.NOTSET
  finally:
    logging.getLogger("arrax").removeHandler(collect)


_COMPILE_FLAGS = [("jax_optimization_level", "O1"), ("jax_memory_fitting_level", "O0"),
                  ("jax_exec_time_optimization_effort", -0.5),
                  ("jax_memory_fitting_effort", 0.25),
                  ("jax_disable_most_optimizations", True),
                  ("jax_compiler_enable_remat_pass", False), ("jax_xla_profile_version", 7)]


def _options_fields(options):
  b = options.executable_build_options
  d = b.debug_options
  return (b.optimization_level, b.memory_fitting_level, b.exec_time_optimization_effort,
          b.memory_fitting_effort, d.xla_backend_optimization_level,
          d.xla_llvm_disable_expensive_passes, d.xla_disable_hlo_passes, options.profile_version,
          b.use_shardy_partitioner)


def test_compile_options_as_jax_sets_them():
  def both():
    return (_options_fields(compiler.get_compile_options(1, 1)),
            _options_fields(jax_compiler.get_compile_options(1, 1)))
  a, j = both()
  assert a == j
  with contextlib.ExitStack() as stack:
    for name, value in _COMPILE_FLAGS + [("jax_use_shardy_partitioner", False)]:
      stack.enter_context(_restored(name))
      jax.config.update(name, value)
      arrax.config.update(name, value)
    a2, j2 = both()
    assert a2 == j2 and a2 != a
    # Every compilation gets them (and they enter the persistent cache's key with the options).
    opts = compiler.apply_config_options(dispatch._single_device_options(arrax.devices()[0]))
    assert _options_fields(opts)[:8] == a2[:8]
    changed = opts.SerializeAsString()
    out = arrax.jit(lambda x: anp.cos(x) + 4)(anp.arange(3.0))
    np.testing.assert_allclose(out, np.cos(np.arange(3.0)) + 4, rtol=1e-6)
  plain = compiler.apply_config_options(dispatch._single_device_options(arrax.devices()[0]))
  assert plain.SerializeAsString() != changed


def _dumped(lib, np_mod, path, modes):
  with contextlib.ExitStack() as stack:
    for name, value in (("jax_dump_ir_to", str(path)), ("jax_dump_ir_modes", modes)):
      stack.enter_context(_restored(name))
      lib.config.update(name, value)

    @lib.jit
    def dumped_fn(x):
      return np_mod.tanh(x) - 1
    dumped_fn(np.ones(3, np.float32))
  return sorted(re.sub(r"\d+", "N", f) for f in os.listdir(path) if "dumped_fn" in f)


def test_dump_ir(tmp_path):
  a = _dumped(arrax, anp, tmp_path / "a", "stablehlo,jaxpr")
  j = _dumped(jax, jnp, tmp_path / "j", "stablehlo,jaxpr")
  assert a == j == ["jax_N_dumped_fn.jaxpr.txt", "jax_irN_jit_dumped_fn_compile.mlir"]
  (mlir_file,) = (tmp_path / "a").glob("*dumped_fn_compile.mlir")
  text = mlir_file.read_text()
  assert "stablehlo.tanh" in text and "loc(" in text
  with _restored("jax_include_debug_info_in_dumps"):
    arrax.config.update("jax_include_debug_info_in_dumps", False)
    _dumped(arrax, anp, tmp_path / "b", "stablehlo")
  (mlir_file,) = (tmp_path / "b").glob("*dumped_fn_compile.mlir")
  assert "loc(" not in mlir_file.read_text()
  with _restored("jax_dump_ir_modes"), pytest.raises(NotImplementedError):
    arrax.config.update("jax_dump_ir_modes", "jaxpr_html")


def test_random_seed_offset_gives_jax_keys():
  def keys(lib, np_mod):
    f = lib.jit(lambda s: lib.random.key_data(lib.random.key(s)))
    return (np.asarray(lib.random.PRNGKey(3)), np.asarray(lib.random.key_data(lib.random.key(3))),
            np.asarray(f(np_mod.int32(3))), np.asarray(lib.random.normal(lib.random.key(3), (2,))))
  base = keys(arrax, anp)
  with _restored("jax_random_seed_offset"):
    for lib in (jax, arrax):
      lib.config.update("jax_random_seed_offset", 11)
    a, j = keys(arrax, anp), keys(jax, jnp)
  for x, y in zip(a, j):
    np.testing.assert_array_equal(x, y)
  assert not np.array_equal(a[0], base[0])
  # The offset is part of jit's cache key: the jitted seeding sees it come and go.
  np.testing.assert_array_equal(keys(arrax, anp)[2], base[2])


def test_check_static_indices():
  def get(lib, np_mod):
    x = np_mod.arange(3)
    return int(x[5]), int(lib.jit(lambda y: y[-4])(x)), int(x.at[5].get(mode="clip"))
  assert get(arrax, anp) == get(jax, jnp) == (2, 0, 2)
  with _restored("jax_check_static_indices"):
    for lib, np_mod in ((jax, jnp), (arrax, anp)):
      lib.config.update("jax_check_static_indices", True)
      x = np_mod.arange(3)
      with pytest.raises(IndexError, match="index 5 out of bounds for axis 0 with size 3"):
        x[5]
      with pytest.raises(IndexError, match="index -4 out of bounds"):
        lib.jit(lambda y: y[-4])(x)   # (traced again: the option is in jit's cache key)
      assert int(x.at[5].get(mode="clip")) == 2 and int(x[-1]) == 2


def _captured_warnings(lib, frames):
  const = np.arange(64, dtype=np.float32)
  with contextlib.ExitStack() as stack:
    for name, value in (("jax_captured_constants_warn_bytes", 100),
                        ("jax_captured_constants_report_frames", frames)):
      stack.enter_context(_restored(name))
      lib.config.update(name, value)
    with warnings.catch_warnings(record=True) as w:
      warnings.simplefilter("always")
      lib.jit(lambda x: x + const)(np.float32(1))
  return [str(x.message) for x in w if "constants were captured" in str(x.message)]


def test_captured_constants_warning():
  for frames in (0, 2):
    a, j = _captured_warnings(arrax, frames), _captured_warnings(jax, frames)
    assert len(a) == len(j) == 1
    assert a[0].split("total)")[0] == j[0].split("total)")[0]   # (the size: 256.00B)
    assert ("captured at:" in a[0]) == ("captured at:" in j[0]) == bool(frames)


def test_explicit_x64_dtypes_error():
  with _restored("jax_explicit_x64_dtypes"):
    for lib, np_mod in ((jax, jnp), (arrax, anp)):
      lib.config.update("jax_explicit_x64_dtypes", "error")
      with pytest.raises(ValueError, match="Explicitly requested dtype float64"):
        np_mod.zeros(2, dtype=np.float64)
    with pytest.raises(NotImplementedError):
      arrax.config.update("jax_explicit_x64_dtypes", "allow")


def test_high_dynamic_range_gumbel():
  with _restored("jax_high_dynamic_range_gumbel"):
    for lib in (jax, arrax):
      lib.config.update("jax_high_dynamic_range_gumbel", True)
    a = arrax.random.gumbel(arrax.random.key(1), (4,))
    j = jax.random.gumbel(jax.random.key(1), (4,))
  np.testing.assert_allclose(a, j, rtol=1e-6)
  low = arrax.random.gumbel(arrax.random.key(1), (4,))
  assert not np.allclose(low, a)


def test_log_checkpoint_residuals(caplog):
  def run(lib, np_mod):
    f = lib.checkpoint(lambda x, y: np_mod.sin(x) * y)
    with caplog.at_level(logging.WARNING):
      caplog.clear()
      lib.grad(lambda x, y: f(x, y).sum())(np_mod.ones(3), np_mod.ones(3))
    return [r.getMessage().split(" from ")[0] for r in caplog.records
            if "remat-decorated function" in r.getMessage()]
  assert run(arrax, anp) == []
  with _restored("jax_log_checkpoint_residuals"):
    for lib in (jax, arrax):
      lib.config.update("jax_log_checkpoint_residuals", True)
    a, j = run(arrax, anp), run(jax, jnp)
  assert a == j and a


def test_disallow_mesh_context_manager():
  mesh = arrax.make_mesh((1,), ("x",))
  with mesh:
    pass
  with _restored("jax_disallow_mesh_context_manager"):
    arrax.config.update("jax_disallow_mesh_context_manager", True)
    with pytest.raises(RuntimeError, match="Mesh context manager is disabled"):
      with mesh:
        pass


def test_distributed_debug_log(caplog):
  with _restored("jax_distributed_debug"), caplog.at_level(logging.WARNING):
    arrax.config.update("jax_distributed_debug", True)
    arrax.jit(lambda x: x - 7)(anp.ones(2))
  assert any("DISTRIBUTED_DEBUG_BEGIN\nRunning pjit'd function: <lambda>" in r.getMessage()
             for r in caplog.records)


@pytest.fixture
def cache_dir(tmp_path):
  names = ("jax_compilation_cache_dir", "jax_persistent_cache_min_compile_time_secs",
           "jax_enable_compilation_cache")
  with contextlib.ExitStack() as stack:
    for name in names:
      stack.enter_context(_restored(name))
    arrax.config.update("jax_enable_compilation_cache", True)
    arrax.config.update("jax_compilation_cache_dir", str(tmp_path / "cache"))
    arrax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    yield tmp_path / "cache"


def _entries(d):
  return sorted(p.name for p in d.glob("*.xla")) if d.is_dir() else []


def test_persistent_cache_errors_raise_when_asked(cache_dir):
  cache_dir.parent.mkdir(exist_ok=True)
  cache_dir.write_text("a file, not a directory")
  arrax.jit(lambda x: x * 5 - 1)(anp.ones(2))   # (warned, not raised)
  with _restored("jax_raise_persistent_cache_errors"):
    arrax.config.update("jax_raise_persistent_cache_errors", True)
    with pytest.raises(OSError):
      arrax.jit(lambda x: x * 5 - 2)(anp.ones(2))


def _same_program_from_two_lines():
  f = arrax.jit(lambda x: x * 9 - 3)
  f(anp.ones(2))
  g = arrax.jit(
      lambda x: x * 9 - 3)
  g(anp.ones(2))


def test_cache_key_metadata(cache_dir):
  _same_program_from_two_lines()
  plain = len(_entries(cache_dir))
  with _restored("jax_compilation_cache_include_metadata_in_key"):
    arrax.config.update("jax_compilation_cache_include_metadata_in_key", True)
    before = len(_entries(cache_dir))
    _same_program_from_two_lines()
    assert len(_entries(cache_dir)) == before + 2   # (the locations differ: two entries)
  assert plain >= 1


def test_cache_check_contents(cache_dir):
  with _restored("jax_compilation_cache_check_contents"):
    arrax.config.update("jax_compilation_cache_check_contents", True)
    f = arrax.jit(lambda x: x * 11 + 1)
    f(anp.ones(2))
    (entry,) = [e for e in _entries(cache_dir)
                if (cache_dir / e).stat().st_size > 0 and e not in compilation_cache.verified_keys]
    key = entry[:-len(".xla")]
    assert key in compilation_cache.verified_keys
    # A stored executable that differs from a fresh compilation is caught the first time its
    # key is met in a process.
    other = arrax.jit(lambda x: x * 13 + 1)
    other(anp.ones(2))
    other_key = [e for e in _entries(cache_dir) if e != entry][-1]
    (cache_dir / entry).write_bytes((cache_dir / other_key).read_bytes())
    compilation_cache.verified_keys.discard(key)
    with pytest.raises(compilation_cache.CacheVerificationError):
      arrax.jit(lambda x: x * 11 + 1)(anp.ones(2))


@pytest.mark.parametrize("name, value", [
    ("eager_constant_folding", True), ("jax_use_simplified_jaxpr_constants", True),
    ("jax_experimental_unsafe_xla_runtime_errors", True),
    ("jax_send_traceback_to_runtime", "on"), ("jax_error_checking_behavior_nan", "raise"),
    ("jax_error_checking_behavior_divide", "raise"), ("jax_error_checking_behavior_oob", "raise")])
def test_unsupported_values_are_refused(name, value):
  with _restored(name):
    jax.config.update(name, value)   # (JAX takes it; arrax cannot do what it asks)
    with pytest.raises(NotImplementedError, match=name):
      arrax.config.update(name, value)
    with pytest.raises(NotImplementedError):
      with config_mod.config_states[name](value):
        pass
