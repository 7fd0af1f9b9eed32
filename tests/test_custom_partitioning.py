"""jax.experimental.custom_partitioning and jax.experimental.topologies against JAX 0.10.2.

One device: values eagerly and under jit, the jaxpr (parameters included), static_argnums and
pytrees, the missing grad/vmap rules, def_partition's keyword handling, and the Shardy rule
classes and rule strings (parsed forms and errors). Four simulated devices (a subprocess):
jit with NamedShardings of custom_partitioning functions (JAX runs the partition callbacks,
arrax partitions the plain body: the results agree), and the topology functions."""
import jax
import jax.experimental.custom_partitioning as jcp
import pytest

import arrax
import arrax.experimental.custom_partitioning as acp
from tests.multidevice import script_results
from tests.oracle import check, check_jaxpr, check_raises, make_with, rand, same_exception

CP = {arrax: acp, jax: jcp}


def _partition(mesh, arg_shapes, result_shape):
  return mesh, None, result_shape.sharding, tuple(a.sharding for a in arg_shapes)


def scale_add(top, **def_kw):
  @CP[top].custom_partitioning
  def f(x, y):
    return {"s": x * 2 + y["a"], "d": x - y["b"]}
  f.def_partition(_partition, **def_kw)
  return f


def with_static(top):
  f = CP[top].custom_partitioning(lambda x, n, y: x * n + y, static_argnums=(1,))
  f.def_partition(_partition, sharding_rule="i, i -> i")
  return lambda x, y: f(x, 3, y=y)


ARGS = (rand((2, 3)), {"a": rand((2, 3), seed=1), "b": rand((2, 3), seed=2)})


def test_values_jit_and_jaxpr():
  check(lambda top: scale_add(top, sharding_rule="i j, i j, i j -> i j, i j"), *ARGS,
        build=make_with("top"), jit=True, strict_tree=True)
  check(with_static, rand((4,)), rand((4,), seed=1), build=make_with("top"), jit=True, strict_tree=True)
  check_jaxpr(lambda top: scale_add(top, sharding_rule="i j, i j, i j -> i j, i j"), *ARGS,
              build=make_with("top"))
  check_jaxpr(with_static, rand((4,)), rand((4,), seed=1), build=make_with("top"))
  # Without any rule (one device: no partitioner runs).
  check(lambda top: scale_add(top), *ARGS, build=make_with("top"), jit=True, strict_tree=True)


def test_transformations_and_errors():
  grad = lambda top: lambda x, y: top.grad(lambda x: scale_add(top)(x, y)["s"].sum())(x)  # noqa: E731
  check_raises(grad, *ARGS, build=make_with("top"), match=("custom_partitioning",))
  vmap = lambda top: top.vmap(scale_add(top))  # noqa: E731
  check_raises(vmap, *ARGS, build=make_with("top"), match=("custom_partitioning",))
  # Shardy (JAX's default) refuses propagation callbacks without a sharding rule.
  cb = lambda top: scale_add(top, infer_sharding_from_operands=lambda *a: None)  # noqa: E731
  check_raises(cb, *ARGS, build=make_with("top"), match=("sharding_rule",))
  # Factor keywords only go with a rule string.
  for kw in [{"k": 2}, {"reduction_factors": ("i",)}]:
    j = pytest.raises(ValueError, jcp.custom_partitioning(len).def_partition, _partition, **kw)
    same_exception(lambda: acp.custom_partitioning(len).def_partition(_partition, **kw), j.value,
                   match=("Unknown keyword arguments",))
  # A tracer in a static position.
  f = lambda top: lambda x: CP[top].custom_partitioning(  # noqa: E731
      lambda x, n: x * n, static_argnums=(1,))(x, x)
  check_raises(lambda top: top.jit(f(top)), rand((3,)), build=make_with("top"))
  # Keyword arguments are bound to positions; unknown ones are errors.
  g = lambda top: lambda x: CP[top].custom_partitioning(lambda x, *, k: x)(x, k=1)  # noqa: E731
  check_raises(g, rand((3,)), build=make_with("top"), match=("positions",))


RULES = [
    ("i j, j k -> i k", {}),
    ("... i j, ... j k -> ... i k", {}),
    ("...2 i, ...1 -> ...2 i", {}),
    ("(a b) c -> a b c", {}),
    ("(a b) -> c", {"b": 2}),
    ("i j -> i", {"reduction_factors": ("j",)}),
    ("i j -> j i", {"permutation_factors": ("i",), "need_replication_factors": ("j",)}),
    (" -> i", {}),
    ("i, -> ", {}),
    ("i j -> i", {"j": 3}),
    ("i j", {}),
    ("i (j) -> i", {}),
    ("i ((a b)) -> i", {}),
    ("i (a b -> i", {}),
    ("i a b) -> i", {}),
    ("1i -> i", {}),
    ("i$ -> i", {}),
    ("i .. -> i", {}),
    ("i ... -> i", {}),
    ("i j -> i", {"reduction_factors": ("k",)}),
    ("i j -> i", {"reduction_factors": ("j", "j")}),
    ("i j -> i", {"reduction_factors": ["j"]}),
    ("i j -> i", {"reduction_factors": ("j",), "permutation_factors": ("j",)}),
    ("i -> i", {"z": 2}),
    ("i -> (i j)", {"j": 2.0}),
    ("\u2026 i -> i", {}),
]


def describe_rule(cp, rule, kw):
  @cp.custom_partitioning
  def f(x):
    return x
  try:
    f.def_partition(_partition, sharding_rule=rule, **kw)
  except Exception as e:  # noqa: BLE001
    return ("error", type(e).__name__, str(e))
  r = f.sharding_rule
  return (str(r), type(r).__name__, [type(m).__name__ for m in r.operand_mappings],
          r.factor_sizes, r.reduction_factors, r.need_replication_factors,
          r.permutation_factors)


def test_sharding_rules():
  diffs = [(rule, kw, describe_rule(acp, rule, kw), describe_rule(jcp, rule, kw))
           for rule, kw in RULES]
  diffs = [d for d in diffs if d[2] != d[3]]
  assert not diffs, "\n".join(map(str, diffs))
  assert acp.BATCHING == jcp.BATCHING
  built = []
  for cp in (acp, jcp):
    m = cp.ArrayMapping(cp.BATCHING, cp.CompoundFactor("b", "c"), "d")
    r = cp.SdyShardingRule((m,), (cp.ArrayMapping("d"),), b=2, c=3)
    built.append((str(r), m, isinstance(m, tuple), str(cp.SdyShardingRule((), ()))))
  assert built[0] == built[1]
  for bad in [lambda cp: cp.CompoundFactor("a"), lambda cp: cp.CompoundFactor("a", 1),
              lambda cp: cp.CompoundFactor(cp.BATCHING, "b"),
              lambda cp: cp.ArrayMapping("a", cp.BATCHING), lambda cp: cp.ArrayMapping(3),
              lambda cp: cp.ArrayMapping("a-b"),
              lambda cp: cp.SdyShardingRule((cp.ArrayMapping("a"),), (), a=2)]:
    j = pytest.raises(ValueError, bad, jcp)
    same_exception(lambda: bad(acp), j.value, match=(str(j.value),))


CODE = (
    "import runpy; runpy.run_path('tests/custom_partitioning_cases.py', run_name='__main__')")


def test_multidevice_partitioning_and_topologies():
  res = script_results(CODE, ndev=4)
  j, a = res["jax"], res["arrax"]
  assert set(a) == set(j)
  diffs = [f"{k}: arrax {a[k]} jax {j[k]}" for k in j if a[k] != j[k]]
  assert not diffs, "\n".join(diffs)
