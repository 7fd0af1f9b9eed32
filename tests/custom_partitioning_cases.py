"""The multi-device cases of test_custom_partitioning.py (run in a subprocess with four
simulated CPU devices): jit with NamedShardings of custom_partitioning functions, and the
topology functions; prints both libraries' results as JSON after "RESULTS"."""
import json
import numpy as np
import jax, jax.experimental.custom_partitioning as jcp, jax.experimental.topologies as jtp
import arrax, arrax.experimental.custom_partitioning as acp, arrax.experimental.topologies as atp

def case_results(top, cp):
  P, NS = top.sharding.PartitionSpec, top.sharding.NamedSharding
  mesh = top.sharding.Mesh(np.array(top.devices()).reshape(2, 2), ("x", "y"))
  res = {}

  @cp.custom_partitioning
  def scale_add(x, y):
    return x * 2 + y

  def part_elementwise(mesh, arg_shapes, result_shape):
    arg_sh = tuple(a.sharding for a in arg_shapes)
    return mesh, lambda x, y: x * 2 + y, arg_sh[0], arg_sh
  scale_add.def_partition(part_elementwise, sharding_rule="i j, i j -> i j")

  @cp.custom_partitioning
  def colsum(x):
    return x.sum(axis=0)

  def part_colsum(mesh, arg_shapes, result_shape):
    # every device gets whole columns (rows replicated), sums them locally
    s = NS(mesh, P(None, "y"))
    return mesh, lambda x: x.sum(axis=0), NS(mesh, P("y")), (s,)
  colsum.def_partition(part_colsum, sharding_rule="i j -> j", reduction_factors=("i",))

  a = np.arange(32, dtype=np.float32).reshape(4, 8)
  b = np.ones((4, 8), np.float32)
  sh = NS(mesh, P("x", "y"))
  f1 = top.jit(scale_add, in_shardings=(sh, sh))
  out = f1(a, b)
  res["elementwise"] = [np.asarray(out).tolist(), len(out.addressable_shards)]
  f2 = top.jit(colsum, in_shardings=sh)
  out = f2(a)
  res["colsum"] = [np.asarray(out).tolist(), out.shape]
  f3 = top.jit(lambda x, y: colsum(scale_add(x, y)) * 3, in_shardings=(sh, sh))
  res["composed"] = np.asarray(f3(a, b)).tolist()
  return res

def topo_results(tp):
  res = {}
  for args in [("", "cpu"), ("v5e:2x2", "cpu"), ("", None), ("v4:2x2", "tpu")]:
    try:
      tp.get_topology_desc(*args)
      res[str(args)] = "ok"
    except Exception as e:
      res[str(args)] = [type(e).__name__, str(e)[:60]]
  t = tp.get_attached_topology()
  res["attached"] = [d.id for d in t.devices]
  t2 = tp.get_attached_topology("cpu")
  m = tp.make_mesh(t2, (2, 2), ("a", "b"))
  res["mesh"] = [str(dict(m.shape)), np.vectorize(lambda d: d.id)(m.devices).tolist()]
  m = tp.make_mesh(tp.TopologyDescription(t.devices[:2]), (2,), ("a",))
  res["mesh2"] = [str(dict(m.shape)), [d.id for d in m.devices.ravel()]]
  try:
    tp.make_mesh(t, (3,), ("a",))
  except Exception as e:
    res["bad"] = type(e).__name__
  return res

def main():
  out = {}
  for name, top, cp, tp in (("jax", jax, jcp, jtp), ("arrax", arrax, acp, atp)):
    out[name] = dict(case_results(top, cp), **topo_results(tp))
  print("RESULTS" + json.dumps(out, default=str))


if __name__ == "__main__":
  main()
