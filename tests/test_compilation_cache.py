"""The persistent compilation cache (arrax/_src/compilation_cache.py), in fresh processes."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np

import arrax
import arrax.numpy as jnp
from arrax._src import compilation_cache

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

PROGRAM = textwrap.dedent("""
    import json, logging, sys
    import arrax, arrax.numpy as jnp
    arrax.config.update("jax_compilation_cache_dir", sys.argv[1])
    arrax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    arrax.config.update("jax_log_compiles", True)
    compiled = []
    class H(logging.Handler):
      def emit(self, record):
        if "XLA compilation" in record.getMessage() and "jit(f)" in record.getMessage():
          compiled.append(1)
    logging.getLogger("arrax").addHandler(H())
    @arrax.jit
    def f(x):
      for _ in range(20):
        x = jnp.tanh(x @ x.T) * 0.5 + jnp.sin(x)
      return x.sum(axis=0)
    out = f(jnp.arange(64.0).reshape(8, 8) / 64)
    print(json.dumps({"compiled": len(compiled), "out": [float(v) for v in out]}))
""")


def _run(cache_dir, env_extra=None):
  env = dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS="cpu")
  env.update(env_extra or {})
  p = subprocess.run([sys.executable, "-c", PROGRAM, cache_dir], capture_output=True, text=True,
                     env=env, timeout=300)
  assert p.returncode == 0, p.stderr
  return json.loads(p.stdout.strip().splitlines()[-1])


def _entries(d):
  return sorted(n for n in os.listdir(d) if n.endswith(".xla")) if os.path.isdir(d) else []


def test_second_process_loads_from_cache(tmp_path):
  d = str(tmp_path / "cache")
  first = _run(d)
  stored = _entries(d)   # f's executable and the eager operations' (min time 0)
  assert first["compiled"] == 1 and stored
  second = _run(d)
  assert second["compiled"] == 0          # loaded, not compiled
  assert second["out"] == first["out"]    # the same executable's results, bit for bit
  assert _entries(d) == stored


def test_key_changes_with_xla_flags_and_x64(tmp_path):
  d = str(tmp_path / "cache")
  _run(d)
  n = len(_entries(d))
  other = _run(d, {"XLA_FLAGS": "--xla_cpu_enable_fast_math=false"})
  assert other["compiled"] == 1 and len(_entries(d)) > n
  n = len(_entries(d))
  x64 = _run(d, {"JAX_ENABLE_X64": "1"})
  assert x64["compiled"] == 1 and len(_entries(d)) > n


def test_damaged_entry_is_recompiled(tmp_path):
  d = str(tmp_path / "cache")
  first = _run(d)
  for name in _entries(d):
    with open(os.path.join(d, name), "wb") as f:
      f.write(b"not an executable")
  again = _run(d)
  assert again["compiled"] == 1 and again["out"] == first["out"]


def test_disabled_with_empty_dir_or_flag(tmp_path):
  old = arrax.config.jax_compilation_cache_dir
  try:
    arrax.config.update("jax_compilation_cache_dir", str(tmp_path))
    assert compilation_cache.cache_dir() == str(tmp_path)
    arrax.config.update("jax_compilation_cache_dir", "")
    assert compilation_cache.cache_dir() is None
    arrax.config.update("jax_compilation_cache_dir", str(tmp_path))
    arrax.config.update("jax_enable_compilation_cache", False)
    assert compilation_cache.cache_dir() is None
  finally:
    arrax.config.update("jax_compilation_cache_dir", old)
    arrax.config.update("jax_enable_compilation_cache", True)


def test_in_process_roundtrip_and_min_time(tmp_path):
  d = str(tmp_path / "c")
  old = (arrax.config.jax_compilation_cache_dir,
         arrax.config.jax_persistent_cache_min_compile_time_secs)
  arrax.config.update("jax_compilation_cache_dir", d)
  try:
    arrax.config.update("jax_persistent_cache_min_compile_time_secs", 1e9)
    arrax.jit(lambda x: x * 3 + 1)(np.ones(7, np.float32))
    assert _entries(d) == []   # too quick to be worth storing
    arrax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
    f = lambda x: jnp.cumsum(x * 5) - 2   # noqa: E731
    want = arrax.jit(f)(np.arange(9, dtype=np.float32))
    assert len(_entries(d)) >= 1
    arrax.clear_caches()
    got = arrax.jit(f)(np.arange(9, dtype=np.float32))   # loaded from disk
    np.testing.assert_array_equal(got, want)
  finally:
    arrax.config.update("jax_compilation_cache_dir", old[0])
    arrax.config.update("jax_persistent_cache_min_compile_time_secs", old[1])


def test_size_bound_evicts_oldest(tmp_path):
  d = str(tmp_path)
  for i in range(5):
    compilation_cache.put(d, f"k{i}", os.urandom(4000))
    os.utime(os.path.join(d, f"k{i}.xla"), (i, i))
  compilation_cache._trim(d, 9000)
  assert _entries(d) == ["k3.xla", "k4.xla"]
  assert compilation_cache.get(d, "k4") is not None and compilation_cache.get(d, "nope") is None


def test_callback_executables_are_not_cached(tmp_path):
  d = str(tmp_path / "cb")
  old = (arrax.config.jax_compilation_cache_dir,
         arrax.config.jax_persistent_cache_min_compile_time_secs)
  arrax.config.update("jax_compilation_cache_dir", d)
  arrax.config.update("jax_persistent_cache_min_compile_time_secs", 0.0)
  try:
    seen = []
    arrax.jit(lambda x: arrax.debug.callback(seen.append, x) or x + 1)(np.float32(2))
    assert seen and _entries(d) == []
  finally:
    arrax.config.update("jax_compilation_cache_dir", old[0])
    arrax.config.update("jax_persistent_cache_min_compile_time_secs", old[1])


def test_on_by_default_in_a_per_user_directory(tmp_path):
  # Beyond JAX (opt-in there): with no setting, the cache lives under $XDG_CACHE_HOME/arrax/xla.
  env = {k: v for k, v in os.environ.items() if k != "JAX_COMPILATION_CACHE_DIR"}
  env["XDG_CACHE_HOME"] = str(tmp_path)
  code = "from arrax._src import compilation_cache as c; print(c.cache_dir())"
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                     timeout=300)
  assert p.returncode == 0, p.stderr
  assert p.stdout.strip().splitlines()[-1] == str(tmp_path / "arrax" / "xla")
  env["JAX_COMPILATION_CACHE_DIR"] = ""
  p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                     timeout=300)
  assert p.stdout.strip().splitlines()[-1] == "None"
