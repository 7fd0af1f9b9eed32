"""Cluster auto-detection for `distributed.initialize()` (arrax/_src/clusters.py) against JAX
0.10.2's ClusterEnv classes, given the same (faked) environment variables; and one real
2-process job started with Open MPI's variables faked on 127.0.0.1."""
import warnings

import pytest

from arrax._src import clusters as aclusters

_ALL_VARS = ["OMPI_MCA_orte_hnp_uri", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK",
             "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_JOB_ID", "SLURM_STEP_NODELIST", "SLURM_NTASKS",
             "SLURM_PROCID", "SLURM_LOCALID", "SLURM_STEP_NUM_NODES", "JAX_COORDINATOR_PORT",
             "KUBERNETES_SERVICE_HOST", "JOB_COMPLETION_INDEX", "TPU_SKIP_MDS_QUERY"]

_OMPI = {"OMPI_MCA_orte_hnp_uri": "1531576320.0;tcp://10.96.0.1,10.148.0.1,10.108.0.1:34911",
         "OMPI_COMM_WORLD_SIZE": "8", "OMPI_COMM_WORLD_RANK": "5",
         "OMPI_COMM_WORLD_LOCAL_RANK": "1"}
_OMPI6 = dict(_OMPI, OMPI_MCA_orte_hnp_uri=(
    "1314521088.0;tcp6://[fe80::b9b:ac5d:9cf0:b858,2620:10d:c083:150e::3000:2]:43370"))
_SLURM = {"SLURM_JOB_ID": "123456", "SLURM_STEP_NODELIST": "node001", "SLURM_NTASKS": "4",
          "SLURM_PROCID": "3", "SLURM_LOCALID": "0", "SLURM_STEP_NUM_NODES": "2"}

_ENVS = {
    "none": {},
    "ompi": _OMPI,
    "ompi_tcp6": _OMPI6,
    "ompi_port_override": dict(_OMPI, JAX_COORDINATOR_PORT="4321"),
    "ompi_bad_uri": dict(_OMPI, OMPI_MCA_orte_hnp_uri="42.0;udp://nowhere"),
    "slurm": _SLURM,
    "slurm_list": dict(_SLURM, SLURM_STEP_NODELIST="node001,host2"),
    "slurm_range": dict(_SLURM, SLURM_STEP_NODELIST="node[001-0015],host2"),
    "slurm_ranges": dict(_SLURM, SLURM_STEP_NODELIST="node[001,007-015],host2"),
    "slurm_one_bracket": dict(_SLURM, SLURM_STEP_NODELIST="gpu[7]"),
    "slurm_incomplete": {k: v for k, v in _SLURM.items() if k != "SLURM_LOCALID"},
    "ompi_and_slurm": {**_SLURM, **_OMPI},
    "k8s_without_package": {"KUBERNETES_SERVICE_HOST": "10.0.0.1"},
}

# (arguments given, cluster_detection_method)
_CALLS = {
    "nothing_given": ((None, None, None, None), None),
    "some_given": (("host:1", None, 2, [0, 1]), None),
    "all_given_but_devices": (("host:1", 3, 2, None), None),
    "method_ompi": ((None, None, None, None), "ompi"),
    "method_slurm": ((None, None, None, None), "slurm"),
    "method_unknown": ((None, None, None, None), "carrier-pigeon"),
}


def _outcome(fn):
  try:
    with warnings.catch_warnings(record=True) as caught:
      warnings.simplefilter("always")
      out = fn()
  except Exception as e:  # noqa: BLE001
    return ["error", next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")]
  return [list(out) if isinstance(out, tuple) else out,
          sorted({type(w.message).__name__ for w in caught})]


def _detect(cls, args, method):
  return lambda: cls.auto_detect_unset_distributed_params(*args, method, 300)


@pytest.fixture
def fake_env(monkeypatch):
  def use(env):
    for k in _ALL_VARS:
      monkeypatch.delenv(k, raising=False)
    for k, v in env.items():
      monkeypatch.setenv(k, v)
  return use


def test_detection_matches_jax(fake_env):
  from jax._src import clusters as jclusters
  diffs = []
  for env_name, env in _ENVS.items():
    fake_env(env)
    for call_name, (args, method) in _CALLS.items():
      mine = _outcome(_detect(aclusters.ClusterEnv, args, method))
      theirs = _outcome(_detect(jclusters.ClusterEnv, args, method))
      if mine != theirs:
        diffs.append(f"{env_name}/{call_name}: arrax {mine} jax {theirs}")
  assert not diffs, "\n".join(diffs)


def test_detected_values(fake_env):
  """What the detection gives (not only that it matches JAX)."""
  fake_env(_OMPI)
  got = aclusters.ClusterEnv.auto_detect_unset_distributed_params(None, None, None, None, None,
                                                                  300)
  # job id 1531576320 // 4096 = 373920; % 4096 = 1184; + 61440
  assert got == ("10.96.0.1:62624", 8, 5, [1])
  fake_env(dict(_SLURM, SLURM_STEP_NODELIST="node[001,007-015],host2"))
  got = aclusters.ClusterEnv.auto_detect_unset_distributed_params(None, None, None, None, None,
                                                                  300)
  assert got == ("node001:" + str(123456 % 4096 + 61440), 4, 3, [0])
  fake_env({})
  assert aclusters.detect(None, None, None, None, None, 300) == (None, None, None, None)
  # a Cloud TPU environment named when absent: JAX then queries the TPU metadata (failing
  # here for want of its HTTP package); arrax says it does not run there
  with pytest.raises(NotImplementedError):
    aclusters.detect(None, None, None, None, "gketpu", 300)
  fake_env(_OMPI)
  assert aclusters.detect(None, None, None, None, "deactivate", 300) == (None, None, None, None)


def test_cluster_names_match_jax():
  from jax._src import clusters as jclusters
  mine = [(c.__name__, c.name, c.opt_in_only_method) for c in aclusters.ClusterEnv._cluster_types]
  theirs = [(c.__name__, c.name, c.opt_in_only_method)
            for c in jclusters.ClusterEnv._cluster_types]
  assert mine == theirs


def test_ompi_job_initializes_from_environment():
  """Two real processes, started with Open MPI's variables (and JAX_COORDINATOR_PORT) faked on
  127.0.0.1: `initialize()` without arguments joins them into one job."""
  from tests import test_distributed
  port = test_distributed._free_port()

  def env(pid):
    return {"OMPI_MCA_orte_hnp_uri": "4096.0;tcp://127.0.0.1:1", "OMPI_COMM_WORLD_SIZE": "2",
            "OMPI_COMM_WORLD_RANK": str(pid), "OMPI_COMM_WORLD_LOCAL_RANK": str(pid),
            "JAX_COORDINATOR_PORT": str(port)}
  p0, p1 = test_distributed.run_job("arrax", "auto", 2, env=env)
  for pid, r in enumerate((p0, p1)):
    assert r["process_index"] == pid and r["process_count"] == 2
    assert r["device_count"] == 4 and r["local_device_count"] == 2
    assert r["total"] == 6.0 * 4
