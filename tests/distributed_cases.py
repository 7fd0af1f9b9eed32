"""Cases run in every process of a small multi-process job (test_distributed.py launches them).

    python tests/distributed_cases.py LIB SCENARIO PROCESS_ID NUM_PROCESSES PORT

LIB is "arrax" or "jax" (imported as `jax`; the other is never imported). Each case returns
something JSON can hold; the results are printed after "RESULTS". Every process runs the same
cases in the same order (the collectives inside them must match up across processes).
This module imports neither library at the top, so the test can read the case names.
"""
import importlib
import json
import sys
import traceback

import numpy as np


def _v(x):
  """A comparable record of a value: dtype, shape and contents."""
  x = np.asarray(x)
  return {"dtype": str(x.dtype), "shape": list(x.shape), "value": x.tolist()}


def _err(fn):
  try:
    fn()
  except Exception as e:   # the class is what the test compares
    return {"error": next(c.__name__ for c in type(e).__mro__
                          if c.__module__ == "builtins"), "message": str(e)[:200]}
  return {"error": None}


def _mesh(jax):
  return jax.sharding.Mesh(np.array(jax.devices()).reshape(jax.process_count(),
                                                           jax.local_device_count()),
                           ("p", "d"))


def _shards(arr):
  return [[_v(s.data), [[i.start, i.stop] for i in s.index], s.device.id]
          for s in arr.addressable_shards]


# ---- the job (2 processes x 2 devices) -------------------------------------------------------
def case_topology(jax, pid):
  return {"process_index": jax.process_index(), "process_count": jax.process_count(),
          "process_indices": jax.process_indices(), "device_count": jax.device_count(),
          "local_device_count": jax.local_device_count(),
          "devices": [d.id for d in jax.devices()],
          "local_devices": [d.id for d in jax.local_devices()],
          "other_local_devices": [d.id for d in jax.local_devices(process_index=1 - pid)],
          "device_processes": [d.process_index for d in jax.devices()],
          "initialized": jax.distributed.is_initialized()}


def case_bad_process_index(jax, pid):
  return _err(lambda: jax.local_devices(process_index=5))


def case_jit_global_sum(jax, pid):
  P = jax.sharding.PartitionSpec
  mesh = _mesh(jax)
  local = (np.arange(6, dtype=np.float32) + 100 * pid).reshape(2, 3)
  x = jax.make_array_from_process_local_data(jax.sharding.NamedSharding(mesh, P("p")), local)
  total = jax.jit(lambda v: v.sum(), out_shardings=jax.sharding.NamedSharding(mesh, P()))(x)
  cols = jax.jit(lambda v: v.sum(0), out_shardings=jax.sharding.NamedSharding(mesh, P()))(x)
  return {"shape": list(x.shape), "addressable": x.is_fully_addressable, "shards": _shards(x),
          "total": _v(total), "cols": _v(cols), "total_addressable": total.is_fully_addressable}


def case_jit_sharded_result(jax, pid):
  P = jax.sharding.PartitionSpec
  mesh = _mesh(jax)
  s = jax.sharding.NamedSharding(mesh, P(("p", "d")))
  x = jax.make_array_from_callback((8,), s, lambda idx: np.arange(8, dtype=np.int32)[idx])
  y = jax.jit(lambda v: v * 2 + 1, out_shardings=s)(x)
  z = jax.jit(lambda v: v[::-1], out_shardings=s)(x)
  return {"y": _shards(y), "z": _shards(z),
          "global_shards": sorted([g.device.id, g.data is None, [[i.start, i.stop] for i in g.index]]
                                  for g in y.global_shards)}


def case_fetch_global_value(jax, pid):
  P = jax.sharding.PartitionSpec
  s = jax.sharding.NamedSharding(_mesh(jax), P("p"))
  x = jax.make_array_from_callback((4,), s, lambda idx: np.arange(4.0)[idx])
  return _err(lambda: np.asarray(x))


def case_single_device_arrays(jax, pid):
  P = jax.sharding.PartitionSpec
  s = jax.sharding.NamedSharding(_mesh(jax), P(("p", "d")))
  pieces = [jax.device_put(np.full((2,), 10 * pid + i, np.float32), d)
            for i, d in enumerate(jax.local_devices())]
  x = jax.make_array_from_single_device_arrays((8,), s, pieces)
  bad = _err(lambda: jax.make_array_from_single_device_arrays((8,), s, pieces[:1]))
  return {"shards": _shards(x), "bad": bad["error"],
          "sum": _v(jax.jit(lambda v: v.sum(),
                            out_shardings=jax.sharding.NamedSharding(_mesh(jax), P()))(x))}


def case_pmap(jax, pid):
  f = jax.pmap(lambda x: jax.lax.psum(x, "i"), axis_name="i")
  out = [np.asarray(f(np.arange(2.0, dtype=np.float32) + 10 * pid + k)).tolist()
         for k in range(2)]
  g = jax.pmap(lambda x, y: (jax.lax.axis_index("i") + x * y, jax.lax.all_gather(x, "i")),
               axis_name="i", in_axes=(0, None))
  a, b = g(np.arange(2.0, dtype=np.float32) + 10 * pid, np.float32(2))
  r = f(np.arange(2, dtype=np.int32))
  return {"psum": out, "index": _v(a), "gather": _v(b), "shape": list(r.shape),
          "addressable": r.is_fully_addressable, "int": _v(r)}


def case_process_allgather(jax, pid):
  mhu = importlib.import_module(jax.__name__ + ".experimental.multihost_utils")
  x = np.arange(3, dtype=np.float32) + 10 * pid
  tree = {"a": x, "b": [np.int32(pid), np.ones((2, 2), np.int8) * pid]}
  out = mhu.process_allgather(tree)
  tiled = mhu.process_allgather(tree, tiled=True)
  arr = mhu.process_allgather(jax.numpy.arange(2) + pid)
  P = jax.sharding.PartitionSpec
  g = jax.make_array_from_callback(
      (4, 2), jax.sharding.NamedSharding(_mesh(jax), P("p", "d")),
      lambda idx: np.arange(8, dtype=np.float32).reshape(4, 2)[idx])
  return {"stacked": [_v(v) for v in jax.tree_util.tree_leaves(out)],
          "tiled": [_v(v) for v in jax.tree_util.tree_leaves(tiled)],
          "array": _v(arr), "global": _v(mhu.process_allgather(g, tiled=True)),
          "global_untiled": _err(lambda: mhu.process_allgather(g))["error"]}


def case_broadcast_one_to_all(jax, pid):
  mhu = importlib.import_module(jax.__name__ + ".experimental.multihost_utils")
  x = {"a": np.arange(3, dtype=np.float32) + 10 * pid, "b": np.int32(pid + 5),
       "c": np.array([pid == 0, True])}
  out = mhu.broadcast_one_to_all(x)
  other = mhu.broadcast_one_to_all(x["a"], is_source=pid == 1)
  return {"out": [_v(v) for v in jax.tree_util.tree_leaves(out)], "other": _v(other),
          "types": sorted({type(v).__name__ for v in jax.tree_util.tree_leaves(out)})}


def case_sync_and_assert(jax, pid):
  mhu = importlib.import_module(jax.__name__ + ".experimental.multihost_utils")
  mhu.sync_global_devices("arrax test barrier")
  same = _err(lambda: mhu.assert_equal({"x": np.ones(3), "y": np.int32(4)}))
  differ = _err(lambda: mhu.assert_equal(np.arange(2) + pid, "values differ"))
  return {"same": same["error"], "differ": differ["error"],
          "differ_prefix": differ.get("message", "")[:15],
          "preemption": mhu.reached_preemption_sync_point(0)}


def case_host_local_global(jax, pid):
  mhu = importlib.import_module(jax.__name__ + ".experimental.multihost_utils")
  P = jax.sharding.PartitionSpec
  mesh = _mesh(jax)
  local = {"x": np.arange(4.0, dtype=np.float32) + 100 * pid,
           "y": np.full((2, 2), pid, np.int32)}
  g = mhu.host_local_array_to_global_array(local, mesh, {"x": P(("p", "d")), "y": P("p")})
  doubled = jax.jit(lambda t: jax.tree_util.tree_map(lambda v: v * 2, t),
                    out_shardings={"x": jax.sharding.NamedSharding(mesh, P(("p", "d"))),
                                   "y": jax.sharding.NamedSharding(mesh, P("p"))})(g)
  back = mhu.global_array_to_host_local_array(doubled, mesh, {"x": P(("p", "d")), "y": P("p")})
  none = _err(lambda: mhu.host_local_array_to_global_array(local["x"], mesh, None))
  return {"gx": list(g["x"].shape), "gy": list(g["y"].shape),
          "gx_shards": _shards(g["x"]), "back_x": _v(back["x"]), "back_y": _v(back["y"]),
          "back_shape": list(back["x"].shape), "none": none["error"]}


def case_device_put_global(jax, pid):
  P = jax.sharding.PartitionSpec
  s = jax.sharding.NamedSharding(_mesh(jax), P(("p", "d")))
  x = jax.device_put(np.arange(8.0, dtype=np.float32), s)
  r = jax.sharding.NamedSharding(_mesh(jax), P())
  return {"shards": _shards(x), "addressable": x.is_fully_addressable,
          "sum": _v(jax.jit(lambda v: v.sum(), out_shardings=r)(x))}


def case_jit_numpy_input(jax, pid):
  P = jax.sharding.PartitionSpec
  s = jax.sharding.NamedSharding(_mesh(jax), P("p"))
  r = jax.sharding.NamedSharding(_mesh(jax), P())
  f = jax.jit(lambda v: v * 3, in_shardings=s, out_shardings=r)
  out = {}
  try:
    out["value"] = _v(f(np.arange(4, dtype=np.int32)))
  except Exception as e:
    out["error"] = next(c.__name__ for c in type(e).__mro__ if c.__module__ == "builtins")
  return out


def case_eager_on_global(jax, pid):
  P = jax.sharding.PartitionSpec
  s = jax.sharding.NamedSharding(_mesh(jax), P(("p", "d")))
  x = jax.make_array_from_callback((8,), s, lambda idx: np.arange(8.0, dtype=np.float32)[idx])
  y = x + 1
  return {"shards": _shards(y), "addressable": y.is_fully_addressable}


MAIN_CASES = [name for name in list(globals()) if name.startswith("case_")]


# ---- one-process scenarios (bad input) ----------------------------------------------------------
def errors_scenario(jax, port):
  """Bad arguments, double initialization, a one-process job."""
  d = jax.distributed
  addr = f"127.0.0.1:{port}"
  out = {"before": d.is_initialized(), "shutdown_noop": _err(d.shutdown)["error"]}
  out["no_address"] = _err(lambda: d.initialize(cluster_detection_method="deactivate"))
  out["no_count"] = _err(lambda: d.initialize(addr, cluster_detection_method="deactivate"))
  out["no_id"] = _err(lambda: d.initialize(addr, 2, cluster_detection_method="deactivate"))
  out["no_address_auto"] = _err(d.initialize)
  out["no_id_auto"] = _err(lambda: d.initialize(addr, 2))
  out["id_too_big"] = _err(lambda: d.initialize(addr, 2, 2))
  out["negative_id"] = _err(lambda: d.initialize(addr, 2, -1))
  out["float_count"] = _err(lambda: d.initialize(addr, 2.0, 0))
  out["str_id"] = _err(lambda: d.initialize(addr, 2, "0"))
  out["first"] = _err(lambda: d.initialize(addr, 1, 0))
  out["initialized"] = d.is_initialized()
  out["twice"] = _err(lambda: d.initialize(addr, 1, 0))
  out["count"] = [jax.process_count(), jax.process_index(), jax.device_count()]
  mhu = importlib.import_module(jax.__name__ + ".experimental.multihost_utils")
  out["one_gather"] = _v(mhu.process_allgather(np.arange(3)))
  out["one_bcast"] = _v(mhu.broadcast_one_to_all(np.arange(3)))
  d.shutdown()
  out["after"] = d.is_initialized()
  out["shutdown_again"] = _err(d.shutdown)["error"]
  return out


def late_scenario(jax, port):
  """initialize after the backend exists."""
  jax.devices()
  return {"late": _err(lambda: jax.distributed.initialize(f"127.0.0.1:{port}", 1, 0)),
          "initialized": jax.distributed.is_initialized()}


def main(lib, scenario, pid, nproc, port):
  jax = importlib.import_module(lib)
  importlib.import_module(lib + ".experimental.multihost_utils")
  if scenario == "main":
    jax.distributed.initialize(f"127.0.0.1:{port}", nproc, pid, initialization_timeout=60,
                               heartbeat_timeout_seconds=30, shutdown_timeout_seconds=30)
    results = {}
    for name in MAIN_CASES:
      try:
        results[name] = globals()[name](jax, pid)
      except Exception:
        results[name] = {"crashed": traceback.format_exc()[-1500:]}
    jax.distributed.shutdown()
    results["after_shutdown"] = jax.distributed.is_initialized()
  elif scenario == "auto":   # (the cluster's variables are in the environment)
    jax.distributed.initialize(initialization_timeout=60, heartbeat_timeout_seconds=30,
                               shutdown_timeout_seconds=30)
    mhu = importlib.import_module(lib + ".experimental.multihost_utils")
    results = {"process_index": jax.process_index(), "process_count": jax.process_count(),
               "device_count": jax.device_count(),
               "local_device_count": jax.local_device_count(),
               "total": float(np.asarray(mhu.process_allgather(np.full(3, 4.0))).sum())}
    jax.distributed.shutdown()
  elif scenario == "errors":
    results = errors_scenario(jax, port)
  else:
    results = late_scenario(jax, port)
  print("RESULTS" + json.dumps(results), flush=True)


if __name__ == "__main__":
  main(sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5])
