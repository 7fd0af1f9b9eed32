"""Several processes: arrax.distributed, multihost_utils, global arrays, jit and pmap across
processes, against JAX 0.10.2.

Each job is 2 processes on 127.0.0.1 (a free port), each with 2 simulated CPU devices; the
same case script (tests/distributed_cases.py) runs once with arrax and once with jax, and
every process's results are compared case by case. Every process runs under a deadline and is
killed (by its pid) if it outlives it, so a hang fails the test instead of blocking the run.
"""
import inspect
import json
import os
import pathlib
import socket
import subprocess
import sys
import tempfile
import time

import numpy as np
import pytest

from tests import distributed_cases
from tests.multidevice import xfail_params, xla_flags

ROOT = pathlib.Path(__file__).resolve().parents[1]
CASES = ROOT / "tests" / "distributed_cases.py"
JOB_TIMEOUT = 60   # seconds for one job (all its processes)


def _free_port():
  with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
    s.bind(("127.0.0.1", 0))
    return s.getsockname()[1]


_last_pids: list = []


def run_job(lib, scenario, nproc, ndev=2, timeout=JOB_TIMEOUT, only=None, env=None):
  """Run the case script as `nproc` processes (or only those in `only`); their results (one
  dict per process). `env(pid)` gives extra environment variables of a process."""
  port = _free_port()
  base = dict(os.environ, XLA_FLAGS=xla_flags(ndev),
              PYTHONPATH=str(ROOT), JAX_PLATFORMS="cpu")
  for var in ("JAX_COORDINATOR_ADDRESS", "JAX_LOCAL_DEVICE_IDS", "JAX_PARTITION_INDEX"):
    base.pop(var, None)
  procs, files = [], []
  try:
    for pid in (range(nproc) if only is None else only):
      out = tempfile.TemporaryFile("w+")
      err = tempfile.TemporaryFile("w+")
      files += [out, err]
      procs.append(subprocess.Popen(
          [sys.executable, str(CASES), lib, scenario, str(pid), str(nproc), str(port)],
          stdout=out, stderr=err, env=dict(base, **(env(pid) if env else {})),
          cwd=str(ROOT), text=True))
    _last_pids[:] = [p.pid for p in procs]
    deadline = time.monotonic() + timeout
    for p in procs:
      try:
        p.wait(timeout=max(deadline - time.monotonic(), 0.1))
      except subprocess.TimeoutExpired:
        pass
    hung = [p.pid for p in procs if p.poll() is None]
    results = []
    for pid, p in enumerate(procs):
      out, err = files[2 * pid], files[2 * pid + 1]
      out.seek(0)
      err.seek(0)
      text = out.read()
      if p.poll() is None or p.returncode != 0 or "RESULTS" not in text:
        tail = "\n".join(line for line in err.read().splitlines()
                         if not line.startswith(("I1", "W1", "I0", "W0")))[-3000:]
        raise AssertionError(f"{lib} {scenario}: process {pid} "
                             f"{'hung' if hung else f'exited with {p.returncode}'}:\n{tail}")
      results.append(json.loads(text.split("RESULTS", 1)[1]))
    return results
  finally:
    for p in procs:   # never leave a process behind, whatever happened
      if p.poll() is None:
        p.kill()
      p.wait()
    for f in files:
      f.close()


_jobs: dict = {}


def job(lib, scenario, nproc):
  key = (lib, scenario, nproc)
  if key not in _jobs:
    try:
      _jobs[key] = run_job(lib, scenario, nproc)
    except AssertionError as e:
      _jobs[key] = e
  if isinstance(_jobs[key], AssertionError):
    raise _jobs[key]
  return _jobs[key]


# ---- the two-process job ------------------------------------------------------------------------
_XFAIL = {
    "case_eager_on_global": "arrax runs eager operations on one device (a multi-device array "
                            "is gathered first), so an array with shards in other processes "
                            "only works inside jit with shardings (NotImplementedError); JAX "
                            "computes it as a sharded program",
}


@pytest.mark.parametrize("name", xfail_params(distributed_cases.MAIN_CASES, _XFAIL))
def test_two_processes_match_jax(name):
  mine = [r[name] for r in job("arrax", "main", 2)]
  theirs = [r[name] for r in job("jax", "main", 2)]
  for pid, (a, j) in enumerate(zip(mine, theirs)):
    assert "crashed" not in j, f"jax crashed in process {pid}: {j['crashed']}"
    assert a == j, f"process {pid}:\narrax: {a}\njax:   {j}"


def test_two_processes_values():
  """What the job computes (not only that it matches): topology, sums, gathers."""
  p0, p1 = job("arrax", "main", 2)
  t0, t1 = p0["case_topology"], p1["case_topology"]
  assert (t0["process_index"], t1["process_index"]) == (0, 1)
  assert t0["process_count"] == t1["process_count"] == 2
  assert t0["device_count"] == 4 and t0["local_device_count"] == 2
  assert t0["devices"] == t1["devices"] and len(t0["devices"]) == 4
  assert set(t0["local_devices"]) | set(t1["local_devices"]) == set(t0["devices"])
  assert t0["device_processes"] == [0, 0, 1, 1]
  # jit over the global mesh: rows 0..5 and 100..105
  total = sum(range(6)) + sum(range(100, 106))
  assert p0["case_jit_global_sum"]["total"]["value"] == total
  assert p1["case_jit_global_sum"]["total"]["value"] == total
  assert p0["case_pmap"]["psum"][0] == [22.0, 22.0]   # 0 + 1 + 10 + 11
  gathered = p1["case_process_allgather"]["stacked"][0]["value"]
  assert gathered == [[0.0, 1.0, 2.0], [10.0, 11.0, 12.0]]
  assert p1["case_broadcast_one_to_all"]["other"]["value"] == [10.0, 11.0, 12.0]
  assert p0["after_shutdown"] is False and p1["after_shutdown"] is False


# ---- bad input ---------------------------------------------------------------------------------
_ERROR_KEYS = ["before", "shutdown_noop", "no_address", "no_count", "no_id", "no_address_auto", "no_id_auto",
               "id_too_big",
               "negative_id", "float_count", "str_id", "first", "initialized", "twice",
               "count", "one_gather", "one_bcast", "after", "shutdown_again"]


@pytest.mark.parametrize("key", _ERROR_KEYS)
def test_initialize_errors_match_jax(key):
  (mine,), (theirs,) = job("arrax", "errors", 1), job("jax", "errors", 1)
  a, j = mine[key], theirs[key]
  if isinstance(j, dict) and "error" in j:
    assert a["error"] == j["error"], (a, j)
  else:
    assert a == j


def test_initialize_errors_values():
  (r,) = job("arrax", "errors", 1)
  assert r["no_address"]["error"] == "ValueError"
  assert r["float_count"]["error"] == "TypeError"
  assert r["twice"]["error"] == "RuntimeError" and "once" in r["twice"]["message"]
  assert r["first"]["error"] is None and r["initialized"] is True and r["after"] is False


def test_initialize_after_backend():
  (mine,), (theirs,) = job("arrax", "late", 1), job("jax", "late", 1)
  assert mine["late"]["error"] == theirs["late"]["error"] == "RuntimeError"
  assert "before any JAX calls" in mine["late"]["message"]
  assert mine["initialized"] is theirs["initialized"] is False


def test_hung_job_is_killed():
  """A process that never finishes is killed at the deadline and reported (no orphan): here
  process 1 of a two-process job, alone, waits for a coordinator that never starts."""
  with pytest.raises(AssertionError, match="hung"):
    run_job("arrax", "main", 2, timeout=3, only=[1])
  for pid in _last_pids:
    with pytest.raises(ProcessLookupError):
      os.kill(pid, 0)


# ---- API surface -------------------------------------------------------------------------------
def _params(f):
  return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


@pytest.mark.parametrize("name", ["initialize", "shutdown", "is_initialized"])
def test_distributed_signatures(name):
  import jax

  import arrax
  assert _params(getattr(arrax.distributed, name)) == _params(getattr(jax.distributed, name))


@pytest.mark.parametrize("name", [
    "process_index", "process_count", "process_indices", "devices", "local_devices",
    "device_count", "local_device_count", "make_array_from_callback",
    "make_array_from_single_device_arrays", "make_array_from_process_local_data"])
def test_top_level_signatures(name):
  import jax

  import arrax
  assert _params(getattr(arrax, name)) == _params(getattr(jax, name))


_MHU = ["process_allgather", "broadcast_one_to_all", "sync_global_devices", "assert_equal",
        "host_local_array_to_global_array", "global_array_to_host_local_array",
        "reached_preemption_sync_point", "host_local_array_to_global_array_impl",
        "global_array_to_host_local_array_impl"]


@pytest.mark.parametrize("name", _MHU)
def test_multihost_utils_signatures(name):
  from jax.experimental import multihost_utils as jm

  from arrax.experimental import multihost_utils as am
  assert _params(getattr(am, name)) == _params(getattr(jm, name))


def test_multihost_utils_names():
  from jax.experimental import multihost_utils as jm

  from arrax.experimental import multihost_utils as am
  for name in _MHU + ["live_devices", "ProcessFailureError", "host_local_array_to_global_array_p",
                      "global_array_to_host_local_array_p"]:
    assert hasattr(jm, name) and hasattr(am, name), name
  assert issubclass(am.ProcessFailureError, Exception)


def test_single_process_defaults():
  """Without initialize: one process, as JAX."""
  import jax

  import arrax
  assert arrax.process_index() == jax.process_index() == 0
  assert arrax.process_count() == jax.process_count() == 1
  assert arrax.process_indices() == jax.process_indices() == [0]
  assert arrax.distributed.is_initialized() is jax.distributed.is_initialized() is False
  assert arrax.devices()[0].process_index == 0
  assert len(arrax.local_devices(process_index=0)) == arrax.local_device_count()
  with pytest.raises(ValueError):
    arrax.local_devices(process_index=1)
  with pytest.raises(ValueError):
    jax.local_devices(process_index=1)
  from arrax.experimental import multihost_utils as am
  assert am.reached_preemption_sync_point(1) is False
  with pytest.raises(RuntimeError):
    with am.live_devices(arrax.devices()):
      pass


def test_cpu_collectives_option():
  import jax

  import arrax
  assert arrax.config.jax_cpu_collectives_implementation == \
      jax.config.jax_cpu_collectives_implementation == "gloo"
  with pytest.raises(ValueError):
    arrax.config.update("jax_cpu_collectives_implementation", "carrier-pigeon")
  with pytest.raises(ValueError):
    jax.config.update("jax_cpu_collectives_implementation", "carrier-pigeon")


def _one_device_mesh(lib):
  return lib.sharding.Mesh(np.array(lib.devices()[:1]), ("x",))


def test_one_process_global_arrays_match_jax():
  """The same APIs in an ordinary one-process run (a one-device mesh)."""
  import jax

  import arrax
  from arrax.experimental import multihost_utils as am
  from jax.experimental import multihost_utils as jm
  out = []
  for lib, mhu in ((arrax, am), (jax, jm)):
    mesh = _one_device_mesh(lib)
    P = lib.sharding.PartitionSpec
    s = lib.sharding.NamedSharding(mesh, P("x"))
    a = lib.make_array_from_callback((4,), s, lambda i: np.arange(4.0, dtype=np.float32)[i])
    b = lib.make_array_from_process_local_data(s, np.arange(6, dtype=np.int32).reshape(3, 2))
    c = lib.make_array_from_single_device_arrays(
        (2,), lib.sharding.NamedSharding(mesh, P()),
        [lib.device_put(np.ones(2, np.int8), lib.devices()[0])])
    d = lib.jit(lambda v: v * 2, out_shardings=lib.sharding.NamedSharding(mesh, P()))(a)
    g = mhu.host_local_array_to_global_array(np.arange(3.0), mesh, P("x"))
    h = lib.jit(lambda v: mhu.global_array_to_host_local_array(v * 2, mesh, P("x")))(g)
    out.append([(np.asarray(x).tolist(), str(np.asarray(x).dtype), x.shape)
                for x in (a, b, c, d, g, h)])
    with pytest.raises(ValueError):
      lib.make_array_from_process_local_data(s, np.arange(4.0), (8,))
    with pytest.raises(ValueError):
      lib.make_array_from_single_device_arrays((4,), s, [])
    with pytest.raises(ValueError):
      mhu.host_local_array_to_global_array(np.arange(3.0), mesh, None)
  assert out[0] == out[1]
