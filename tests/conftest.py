"""Shared pytest set-up: the JAX oracle runs on CPU beside arrax in the same process.

The differential-testing helpers live in oracle.py; this file holds the fixtures."""
import os

os.environ.setdefault("JAX_PLATFORMS", "cpu")
# The persistent compilation cache (on by default in arrax) is tested by
# test_compilation_cache.py with directories of its own; elsewhere in the suite it would only
# add a key computation and a disk lookup to every compilation.
os.environ.setdefault("JAX_COMPILATION_CACHE_DIR", "")
# Both libraries compile every test's programs with the same XLA, so the differential
# comparisons hold under any compiler settings; these three cut the suite's XLA compile time,
# which is most of its CPU time. Level 0 skips LLVM's optimization of the generated machine code
# (XLA's HLO passes still run); without the fusion emitters XLA's CPU backend emits fused loops
# through its older, cheaper elemental path (~35% less CPU time over a sample of test files);
# one codegen split stops each compile from starting threads that the test workers' own
# compiles then contend with (~20% less again). Subprocess tests inherit them
# (tests/multidevice.py's xla_flags adds the device count).
_TEST_XLA_FLAGS = ("--xla_backend_optimization_level=0", "--xla_cpu_use_fusion_emitters=false",
                   "--xla_cpu_parallel_codegen_split_count=1")
_flags = os.environ.get("XLA_FLAGS", "")
os.environ["XLA_FLAGS"] = " ".join(
    [_flags] + [f for f in _TEST_XLA_FLAGS if f.split("=")[0] not in _flags]).strip()

import gc  # noqa: E402

import pytest  # noqa: E402


def _memory_mappings():
  try:
    with open("/proc/self/maps") as f:
      return sum(1 for _ in f)
  except OSError:
    return 0


@pytest.fixture(autouse=True, scope="module")
def _free_executables_after_module():
  """Drop both libraries' compiled executables after a test module once the process holds
  many memory mappings. Each XLA executable holds a few, and a process may have only ~65k
  (vm.max_map_count): a worker running thousands of tests would otherwise crash inside XLA's
  compiler. Below the threshold the caches stay warm for the next module."""
  yield
  if _memory_mappings() > 20000:
    import jax

    import arrax
    arrax.clear_caches()
    jax.clear_caches()
    gc.collect()


@pytest.fixture
def x64():
  """Run a test with jax_enable_x64 on in both arrax and the JAX oracle."""
  import jax

  import arrax
  arrax.config.update("jax_enable_x64", True)
  jax.config.update("jax_enable_x64", True)
  try:
    yield
  finally:
    arrax.config.update("jax_enable_x64", False)
    jax.config.update("jax_enable_x64", False)
