"""Cases of tests/test_sharding.py, run in a subprocess with 4 simulated CPU devices.

Each case is a function `(jax, jnp) -> value` run once with arrax and once with JAX 0.10.2;
`describe` turns arrays (values, dtype, shape, sharding repr, every shard's index, device,
replica id and data), shardings, meshes and specs into plain data, and an exception into
(builtin base class, message for the cases that ask), so the two results compare with `==`.
This module imports neither library itself: the subprocess sets XLA_FLAGS first.
"""
import json
import sys
import traceback

import numpy as np

from tests.multidevice import builtin_base, first_difference, rand as _x, same

CASES = {}


def case(fn):
  CASES[fn.__name__] = fn
  return fn


def _slices(idx):
  return [(s.start, s.stop, s.step) for s in idx]


def _value(v):
  v = np.asarray(v)
  if v.dtype.name == "bfloat16":
    v = v.astype(np.float32)
  return [str(v.dtype) if v.dtype.name != "float32" else "f32", v.shape,
          v.astype(object if v.dtype.kind == "c" else v.dtype).tolist()
          if v.dtype.kind != "c" else [str(z) for z in v.ravel()]]


def describe(x):
  """Plain, comparable data for arrays, shardings, meshes, specs and containers."""
  name = type(x).__name__
  if hasattr(x, "addressable_shards") and hasattr(x, "dtype"):
    return {"array": [str(x.dtype), list(x.shape), _value(np.asarray(x))],
            "sharding": repr(x.sharding), "committed": bool(x.committed),
            "repr": repr(x), "replicated": x.is_fully_replicated,
            "addressable": x.is_fully_addressable,
            "devices": sorted(d.id for d in x.devices()),
            "shards": [[_slices(s.index), s.device.id, s.replica_id, _value(s.data),
                        str(s.data.dtype)] for s in x.addressable_shards]}
  if name in ("NamedSharding", "SingleDeviceSharding"):
    out = {"repr": repr(x), "str": str(x), "devices": sorted(d.id for d in x.device_set),
           "replicated": x.is_fully_replicated, "memory_kind": x.memory_kind,
           "num_devices": x.num_devices,
           "addressable": sorted(d.id for d in x.addressable_devices)}
    for shape in [(4, 8), (8,), (4, 4, 2)]:
      try:
        m = x.devices_indices_map(shape)
        out[str(shape)] = sorted((d.id, _slices(i)) for d, i in m.items())
        out["shard" + str(shape)] = list(x.shard_shape(shape))
      except Exception as e:  # noqa: BLE001
        out[str(shape)] = _error(e)
    if name == "NamedSharding":
      out["spec"] = repr(x.spec)
      out["mesh"] = describe(x.mesh)
    return out
  if name == "Mesh" and x.empty:
    return {"repr": repr(x), "str": str(x), "empty": True, "size": x.size,
            "shape": list(x.shape.items()), "axis_names": list(x.axis_names)}
  if name == "Mesh":
    return {"repr": repr(x), "str": str(x), "shape": list(x.shape.items()),
            "axis_names": list(x.axis_names), "ids": x.device_ids.tolist(),
            "devices_shape": list(x.devices.shape), "size": x.size,
            "axis_types": repr(x.axis_types), "axis_sizes": list(x.axis_sizes),
            "shape_tuple": [list(t) for t in x.shape_tuple], "empty": x.empty}
  if name in ("PartitionSpec", "P"):
    return {"repr": repr(x), "str": str(x), "len": len(x), "items": [repr(p) for p in x]}
  if isinstance(x, dict):
    return {str(k): describe(v) for k, v in x.items()}
  if isinstance(x, (list, tuple)):
    return [describe(v) for v in x]
  if isinstance(x, np.ndarray):
    return _value(x)
  if isinstance(x, (bool, int, float, str, type(None))):
    return x
  return repr(x)


def _error(e, message=False):
  return ["error", builtin_base(e).__name__] + ([str(e)] if message else [])


# ---- meshes ------------------------------------------------------------------------------------
@case
def make_mesh_2d(jax, jnp):
  m = jax.make_mesh((2, 2), ("x", "y"))
  return m, m == jax.make_mesh((2, 2), ("x", "y")), hash(m) == hash(jax.make_mesh((2, 2),
                                                                                 ("x", "y")))


@case
def make_mesh_1d_and_subsets(jax, jnp):
  return (jax.make_mesh((4,), ("i",)), jax.make_mesh((3,), ("i",)),
          jax.make_mesh((1, 4), ("a", "b")), jax.make_mesh((2,), ("x",)))


@case
def make_mesh_devices_and_axis_types(jax, jnp):
  AT = jax.sharding.AxisType
  return (jax.make_mesh((2, 2), ("x", "y"), devices=jax.devices()[::-1]),
          jax.make_mesh((4,), ("x",), axis_types=(AT.Auto,)),
          jax.make_mesh((2, 2), ("x", "y"), (AT.Explicit, AT.Auto)),
          repr(AT.Auto), str(AT.Explicit), [repr(a) for a in AT])


@case
def mesh_constructor(jax, jnp):
  Mesh = jax.sharding.Mesh
  devs = np.array(jax.devices())
  m1 = Mesh(devs, ("x",))
  m2 = Mesh(devs.reshape(2, 2), ("a", "b"))
  m3 = Mesh(devs.reshape(2, 2), ("a", "b"), axis_types=(jax.sharding.AxisType.Explicit,) * 2)
  m4 = Mesh(devs, "x")
  return m1, m2, m3, m4, m2 == m3, m2 == Mesh(devs.reshape(2, 2), ("a", "b")), m1 == m4


@case
def mesh_list_of_devices(jax, jnp):
  return jax.sharding.Mesh(jax.devices()[:2], ("x",))


@case
def mesh_context_manager(jax, jnp):
  m = jax.make_mesh((4,), ("x",))
  with m as inner:
    same = inner is m
  return same


@case
def error_mesh_ndim_mismatch(jax, jnp):
  return jax.sharding.Mesh(np.array(jax.devices()), ("x", "y"))


@case
def error_make_mesh_too_many_devices(jax, jnp):
  return jax.make_mesh((8,), ("x",))


@case
def error_make_mesh_names_mismatch(jax, jnp):
  return jax.make_mesh((2, 2), ("x",))


# ---- PartitionSpec ------------------------------------------------------------------------------
@case
def partition_spec_basics(jax, jnp):
  P = jax.sharding.PartitionSpec
  specs = [P(), P(None), P("x"), P("x", None), P(("x", "y")), P(None, ("x",)),
           P("x", ("y", "z"), None)]
  return (specs, P("x") == P("x"), P("x") == P("x", None), P("x") == ("x",),
          hash(P("x", None)) == hash(P("x", None)), isinstance(P(), tuple), P("a", "b")[1],
          P(("x",)) == P("x"), jax.P is P, P(["x", "y"]), P(["x"]), repr(P("x", unreduced={"y"})),
          repr(P(unreduced={"b"})), P("x", unreduced={"y"}) == P("x"),
          P("x", unreduced={"y"}).partitions)


@case
def error_partition_spec_iterate_unreduced(jax, jnp):
  return list(jax.sharding.PartitionSpec("x", unreduced={"y"}))


@case
def error_partition_spec_overlapping_unreduced(jax, jnp):
  return jax.sharding.PartitionSpec("x", unreduced={"x"})


# ---- NamedSharding / SingleDeviceSharding -------------------------------------------------------
@case
def named_sharding_2d(jax, jnp):
  P = jax.sharding.PartitionSpec
  m = jax.make_mesh((2, 2), ("x", "y"))
  return [jax.sharding.NamedSharding(m, s) for s in
          [P(), P("x"), P("x", "y"), P(None, "y"), P("y", "x"), P(("x", "y")),
           P(None, ("y", "x")), P("x", None, "y")]]


@case
def named_sharding_1d_and_size_one_axes(jax, jnp):
  P = jax.sharding.PartitionSpec
  NS = jax.sharding.NamedSharding
  m1 = jax.make_mesh((4,), ("i",))
  m2 = jax.make_mesh((4, 1), ("x", "y"))
  m3 = jax.make_mesh((1, 4), ("x", "y"))
  return (NS(m1, P("i")), NS(m1, P(None, "i")), NS(m2, P("y")), NS(m2, P("x", "y")),
          NS(m3, P("x")), NS(m3, P(None, ("x", "y"))), jax.NamedSharding is NS)


@case
def named_sharding_equality(jax, jnp):
  P = jax.sharding.PartitionSpec
  NS = jax.sharding.NamedSharding
  m = jax.make_mesh((2, 2), ("x", "y"))
  a = NS(m, P("x"))
  return (a == NS(m, P("x")), hash(a) == hash(NS(m, P("x"))), a == NS(m, P("x", None)),
          a == NS(m, P("y")), a == NS(jax.make_mesh((2, 2), ("x", "y")), P("x")),
          a == NS(jax.make_mesh((2, 2), ("a", "y")), P("a")), a.spec == P("x"), a.mesh == m,
          len({a, NS(m, P("x")), NS(m, P("y"))}))


@case
def error_named_sharding_unknown_axis(jax, jnp):
  m = jax.make_mesh((2, 2), ("x", "y"))
  return jax.sharding.NamedSharding(m, jax.sharding.PartitionSpec("z"))


@case
def error_named_sharding_duplicate_axis(jax, jnp):
  m = jax.make_mesh((2, 2), ("x", "y"))
  return jax.sharding.NamedSharding(m, jax.sharding.PartitionSpec("x", ("y", "x")))


@case
def error_named_sharding_list_spec(jax, jnp):
  m = jax.make_mesh((2, 2), ("x", "y"))
  return jax.sharding.NamedSharding(m, ["x", None])


@case
def single_device_sharding(jax, jnp):
  SDS = jax.sharding.SingleDeviceSharding
  d0, d1 = jax.devices()[:2]
  s = SDS(d1)
  return (s, s == SDS(d1), s == SDS(d0), hash(s) == hash(SDS(d1)),
          s == SDS(d1, memory_kind="device"), isinstance(s, jax.sharding.Sharding),
          isinstance(jax.sharding.NamedSharding(jax.make_mesh((4,), ("x",)),
                                                jax.sharding.PartitionSpec()),
                     jax.sharding.Sharding))


@case
def plain_array_sharding(jax, jnp):
  x = jnp.ones(3)
  return repr(x.sharding), x.sharding == jax.sharding.SingleDeviceSharding(jax.devices()[0])


# ---- device_put ---------------------------------------------------------------------------------
def _put_all(jax, mesh_shape, names, specs, x):
  P = jax.sharding.PartitionSpec
  m = jax.make_mesh(mesh_shape, names)
  return [jax.device_put(x, jax.sharding.NamedSharding(m, P(*s))) for s in specs]


@case
def device_put_2d_mesh(jax, jnp):
  return _put_all(jax, (2, 2), ("x", "y"),
                  [(), ("x",), ("y",), ("x", "y"), ("y", "x"), (None, "x"), (None, "y"),
                   (("x", "y"),), (None, ("y", "x")), (("y", "x"), None)], _x(4, 8))


@case
def device_put_1d_mesh(jax, jnp):
  return _put_all(jax, (4,), ("i",), [(), ("i",), (None, "i"), (None, None)], _x(4, 8))


@case
def device_put_3d_array(jax, jnp):
  return _put_all(jax, (2, 2), ("x", "y"), [("x", None, "y"), (None, ("x", "y")), ("y",)],
                  _x(4, 4, 2, seed=2))


@case
def device_put_size_one_mesh_axes(jax, jnp):
  return (_put_all(jax, (4, 1), ("x", "y"), [("x", "y"), ("y",)], _x(4, 4)) +
          _put_all(jax, (1, 2), ("x", "y"), [("x",), (None, "y")], _x(2, 2)))


@case
def device_put_dtypes(jax, jnp):
  out = []
  for dt in [np.bool_, np.int8, np.uint8, np.int32, np.float16, jnp.bfloat16, np.complex64]:
    out += _put_all(jax, (2, 2), ("x", "y"), [("x", "y"), ("y",)], _x(2, 4, dtype=dt))
  return out


@case
def device_put_scalar_and_empty(jax, jnp):
  return (_put_all(jax, (2, 2), ("x", "y"), [()], np.float32(3.5)) +
          _put_all(jax, (2, 2), ("x", "y"), [("x",), ("x", "y")], np.zeros((0, 4), np.int32)))


@case
def device_put_python_scalar_and_list(jax, jnp):
  s = jax.sharding.NamedSharding(jax.make_mesh((4,), ("x",)), jax.sharding.PartitionSpec())
  s2 = jax.sharding.NamedSharding(jax.make_mesh((4,), ("x",)), jax.sharding.PartitionSpec("x"))
  return jax.device_put(2.5, s), jax.device_put(np.arange(4), s2)


@case
def device_put_pytree(jax, jnp):
  s = jax.sharding.NamedSharding(jax.make_mesh((2, 2), ("x", "y")),
                                 jax.sharding.PartitionSpec("y"))
  return jax.device_put({"a": _x(2, 3), "b": (_x(4, seed=1), np.arange(6).reshape(2, 3))}, s)


@case
def device_put_of_arrays_and_resharding(jax, jnp):
  P = jax.sharding.PartitionSpec
  NS = jax.sharding.NamedSharding
  m = jax.make_mesh((2, 2), ("x", "y"))
  a = jax.device_put(jnp.arange(16.0).reshape(4, 4), NS(m, P("x")))
  b = jax.device_put(a, NS(m, P(None, ("x", "y"))))
  c = jax.device_put(b, NS(jax.make_mesh((4,), ("i",)), P("i")))
  d = jax.device_put(c, jax.devices()[2])
  return a, b, c, d, a.sharding == NS(m, P("x"))


@case
def sharded_values_in_computations(jax, jnp):
  P = jax.sharding.PartitionSpec
  m = jax.make_mesh((2, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
  a = jax.device_put(_x(4, 4), jax.sharding.NamedSharding(m, P("x", "y")))
  b = jax.device_put(_x(4, 4, seed=1), jax.sharding.NamedSharding(m, P(None, "x")))
  return (np.asarray(a + b), np.asarray(jnp.sin(a)), np.asarray(jax.jit(lambda u, v: u @ v)(a, b)),
          np.asarray(jax.grad(lambda u: (u * u).sum())(a)), np.asarray(a).sum(), a.shape, a.ndim,
          a.size, str(a.dtype), a.tolist())


@case
def device_put_single_device_sharding(jax, jnp):
  d = jax.devices()[3]
  a = jax.device_put(_x(2, 3), jax.sharding.SingleDeviceSharding(d))
  b = jax.device_put(jnp.arange(3), jax.sharding.SingleDeviceSharding(d))
  return a, b, a.device.id, np.asarray(a + 1)


@case
def error_device_put_indivisible_1d(jax, jnp):
  s = jax.sharding.NamedSharding(jax.make_mesh((4,), ("x",)), jax.sharding.PartitionSpec("x"))
  return jax.device_put(np.arange(3.0), s)


@case
def error_device_put_indivisible_2d(jax, jnp):
  s = jax.sharding.NamedSharding(jax.make_mesh((2, 2), ("x", "y")),
                                 jax.sharding.PartitionSpec(None, ("x", "y")))
  return jax.device_put(np.ones((4, 6)), s)


@case
def error_device_put_rank_too_small(jax, jnp):
  s = jax.sharding.NamedSharding(jax.make_mesh((2, 2), ("x", "y")),
                                 jax.sharding.PartitionSpec("x", None, None))
  return jax.device_put(np.ones((4, 4)), s)


@case
def sharded_result_keeps_sharding(jax, jnp):
  P = jax.sharding.PartitionSpec
  m = jax.make_mesh((2, 2), ("x", "y"), axis_types=(jax.sharding.AxisType.Auto,) * 2)
  a = jax.device_put(_x(4, 4), jax.sharding.NamedSharding(m, P("x", "y")))
  return jnp.sin(a), jax.jit(lambda u: u * 2)(a)


@case
def error_explicit_axes_incompatible_shardings(jax, jnp):
  P = jax.sharding.PartitionSpec
  m = jax.make_mesh((2, 2), ("x", "y"))
  a = jax.device_put(_x(4, 4), jax.sharding.NamedSharding(m, P("x", "y")))
  b = jax.device_put(_x(4, 4, seed=1), jax.sharding.NamedSharding(m, P(None, "x")))
  return a + b


# ---- jit with in_shardings / out_shardings ------------------------------------------------------
def _auto_mesh(jax, shape=(2, 2), names=("x", "y")):
  return jax.make_mesh(shape, names, axis_types=(jax.sharding.AxisType.Auto,) * len(shape))


@case
def jit_in_and_out_shardings(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  f = jax.jit(lambda a: jnp.sin(a) * 2, in_shardings=NS(m, P("x")),
              out_shardings=NS(m, P(None, "y")))
  out = f(_x(4, 8))
  again = jax.jit(lambda a: a + 1, out_shardings=NS(m, P(None, "y")))(out)
  return out, again, f(np.asarray(out)), f(jnp.asarray(out))


@case
def jit_tuple_shardings_matmul_and_reduction(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  g = jax.jit(lambda a, b: (a @ b.T, a.sum(0)), in_shardings=(NS(m, P("x", "y")), NS(m, P())),
              out_shardings=(NS(m, P("x")), NS(m, P())))
  return g(_x(4, 8), _x(4, 8, seed=1))


@case
def jit_contraction_over_sharded_axis(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  f = jax.jit(jnp.matmul, in_shardings=(NS(m, P(None, "x")), NS(m, P("x", "y"))),
              out_shardings=NS(m, P("y", None)))
  return f(_x(4, 8), _x(8, 4, seed=2))


@case
def jit_out_shardings_only(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  return (jax.jit(lambda a: a + 1, out_shardings=NS(m, P("y", "x")))(_x(4, 8)),
          jax.jit(lambda a: a.sum(1), out_shardings=NS(m, P("x")))(
              jax.device_put(_x(4, 8), NS(m, P("x", "y")))))


@case
def jit_inferred_out_shardings_elementwise(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  return (jax.jit(lambda a: a * 3, in_shardings=NS(m, P("x", "y")))(_x(4, 8)),
          jax.jit(lambda a, b: (a - b, a * 2), in_shardings=NS(m, P(None, "y")))(
              _x(4, 8), _x(4, 8, seed=3)),
          jax.jit(lambda a: a.T, in_shardings=NS(m, P("x")))(_x(4, 8)))


@case
def jit_shardings_dtypes(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  out = []
  for dt in [np.int32, np.int8, np.bool_, np.float16, jnp.bfloat16, np.complex64]:
    f = jax.jit(lambda a: (a, a[::-1]), in_shardings=NS(m, P("x", "y")),
                out_shardings=(NS(m, P("y")), NS(m, P(None, "x"))))
    out.append(f(_x(4, 4, dtype=dt)))
  return out


@case
def jit_shardings_1d_and_size_one_meshes(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m1 = _auto_mesh(jax, (4,), ("i",))
  m2 = _auto_mesh(jax, (4, 1), ("a", "b"))
  f = jax.jit(lambda a: jnp.cumsum(a, 0), in_shardings=NS(m1, P("i")),
              out_shardings=NS(m1, P(None, "i")))
  g = jax.jit(lambda a: jnp.exp(a).sum(), in_shardings=NS(m2, P("a", "b")),
              out_shardings=NS(m2, P()))
  return f(_x(4, 8)), g(_x(4, 8))


@case
def jit_shardings_pytrees_scalars_kwargs(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  f = jax.jit(lambda d, s: {"u": d["a"] * s, "v": d["b"].sum() + s},
              in_shardings=({"a": NS(m, P("x")), "b": NS(m, P())}, NS(m, P())),
              out_shardings={"u": NS(m, P(None, "y")), "v": NS(m, P())})
  h = jax.jit(lambda a, *, k: a * k, out_shardings=NS(m, P("x")))
  return f({"a": _x(4, 8), "b": _x(2, 2, seed=5)}, 2.0), h(_x(4, 2), k=np.float32(3.0))


@case
def error_jit_in_shardings_with_kwargs(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  h = jax.jit(lambda a, *, k: a * k, in_shardings=NS(m, P("x")))
  return h(_x(4, 2), k=np.float32(3.0))


@case
def error_jit_committed_arg_other_sharding(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  f = jax.jit(lambda a: a * 2, in_shardings=NS(m, P("x")))
  return f(jax.device_put(_x(4, 8), NS(m, P(None, "y"))))


@case
def error_jit_committed_single_device_arg(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  f = jax.jit(lambda a: a * 2, in_shardings=NS(m, P("x")))
  return f(jax.device_put(_x(4, 8), jax.devices()[1]))


@case
def jit_committed_arg_equivalent_sharding(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  f = jax.jit(lambda a: a * 2, in_shardings=NS(m, P("x")))
  return f(jax.device_put(_x(4, 8), NS(m, P("x", None))))


@case
def jit_shardings_under_transformations(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  f = jax.jit(lambda u: (jnp.sin(u) * u).sum(), in_shardings=NS(m, P("x")),
              out_shardings=NS(m, P()))
  x = _x(4, 8)
  g = jax.grad(f)(x)
  v = jax.vmap(lambda r: jax.jit(lambda a: a * 2, in_shardings=NS(m, P("x")))(r))(_x(3, 4, 2))
  inner = jax.jit(lambda a: f(a) + 1)(x)
  return np.asarray(g), np.asarray(v), np.asarray(inner), np.asarray(f(x))


@case
def jit_shardings_partial_decorator(jax, jnp):
  import functools
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)

  @functools.partial(jax.jit, in_shardings=NS(m, P("x")), out_shardings=NS(m, P("y")))
  def f(a):
    return a * a

  class Model:
    scale = 3.0

    @functools.partial(jax.jit, out_shardings=NS(m, P("x")))
    def apply(self, a):
      return a * self.scale

  return (f(_x(4, 4)), f.__name__, Model().apply(_x(4, 2)),
          [(s.shape, str(s.dtype)) for s in [f.eval_shape(_x(4, 4))]])


@case
def error_jit_shardings_indivisible(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  return jax.jit(lambda a: a, in_shardings=NS(m, P(("x", "y"))))(_x(6, 4))


@case
def error_jit_in_shardings_structure(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  return jax.jit(lambda a, b: a + b, in_shardings=(NS(m, P("x")),))(_x(4, 4), _x(4, 4))


@case
def error_jit_out_shardings_rank(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = _auto_mesh(jax)
  return jax.jit(lambda a: a.sum(), out_shardings=NS(m, P("x")))(_x(4, 4))


@case
def jit_none_shardings_is_plain_jit(jax, jnp):
  f = jax.jit(lambda a: a * 2, in_shardings=None, out_shardings=None)
  out = f(_x(2, 3))
  return np.asarray(out), repr(out.sharding), out.committed


@case
def set_mesh_and_partition_specs(jax, jnp):
  P = jax.sharding.PartitionSpec
  m = _auto_mesh(jax)
  before = jax.sharding.get_mesh()
  with jax.set_mesh(m) as r:
    inside = jax.sharding.get_mesh()
    out = jax.jit(lambda a: a * 2, in_shardings=P("x"), out_shardings=P(None, "y"))(_x(4, 4))
    put = jax.device_put(_x(4, 2, seed=1), P("y"))
    with jax.set_mesh(jax.make_mesh((4,), ("i",))):
      nested = jax.sharding.get_mesh()
      put2 = jax.device_put(_x(4), P("i"))
    back = jax.sharding.get_mesh()
  after = jax.sharding.get_mesh()
  return (before, r, inside, out, put, nested, put2, back, after, jax.set_mesh is
          jax.sharding.set_mesh)


@case
def set_mesh_called_without_with(jax, jnp):
  m = _auto_mesh(jax, (4,), ("i",))
  prev = jax.sharding.get_mesh()
  jax.set_mesh(m)
  now = jax.sharding.get_mesh()
  out = jax.device_put(_x(8), jax.sharding.PartitionSpec("i"))
  jax.set_mesh(None)
  return prev, now, out, jax.sharding.get_mesh()


@case
def error_jit_partition_spec_without_mesh(jax, jnp):
  return jax.jit(lambda a: a, out_shardings=jax.sharding.PartitionSpec("x"))(_x(4))


@case
def error_device_put_partition_spec_without_mesh(jax, jnp):
  return jax.device_put(_x(4), jax.sharding.PartitionSpec("x"))


# ---- object surfaces (tests/test_object_surfaces.py has the one-device cases) -----------------
@case
def sharding_equivalence_and_queries(jax, jnp):
  P, NS = jax.sharding.PartitionSpec, jax.sharding.NamedSharding
  m = jax.make_mesh((2, 2), ("x", "y"))
  m_rev = jax.sharding.Mesh(np.array(jax.devices()[::-1]).reshape(2, 2), ("x", "y"))
  ss = [NS(m, P("x")), NS(m, P("y")), NS(m, P(("x", "y"))), NS(m, P()), NS(m, P(None, "x")),
        NS(m, P("x", None)), NS(m_rev, P()), NS(m, P("x"), memory_kind="pinned_host"),
        jax.sharding.SingleDeviceSharding(jax.devices()[0])]
  return ([[[a.is_equivalent_to(b, nd) for b in ss] for a in ss] for nd in (1, 2)],
          [sorted(s.replicated_axes) for s in ss[:-1]], [s.has_addressable_devices for s in ss],
          [repr(s.with_memory_kind("unpinned_host")) for s in ss],
          [m.auto_axes, m.are_all_axes_auto, m.update(axis_names=("p", "q")).shape_tuple])


@case
def sharded_array_device_facts(jax, jnp):
  s = jax.sharding.NamedSharding(jax.make_mesh((2, 2), ("x", "y")), jax.P("x", "y"))
  x = jax.device_put(np.arange(32, dtype=np.float32).reshape(4, 8), s)
  c = x.clone()
  return (x.on_device_size_in_bytes(), x.platform(), str(x.format), x.traceback is not None,
          c, c.committed)


_MESSAGES = {"error_named_sharding_unknown_axis", "error_named_sharding_duplicate_axis",
             "error_mesh_ndim_mismatch", "error_make_mesh_too_many_devices",
             "error_device_put_rank_too_small", "error_jit_in_shardings_with_kwargs",
             "error_jit_committed_arg_other_sharding",
             "error_partition_spec_iterate_unreduced",
             "error_partition_spec_overlapping_unreduced",
             "error_jit_partition_spec_without_mesh",
             "error_device_put_partition_spec_without_mesh"}


def run_case(name, fn, a_mods, j_mods):
  outs = []
  for mods in (a_mods, j_mods):
    try:
      outs.append(describe(fn(*mods)))
    except Exception as e:  # noqa: BLE001
      outs.append(_error(e, name in _MESSAGES))
  outs = [json.loads(json.dumps(o, default=repr)) for o in outs]
  if same(outs[0], outs[1]):
    return "ok"
  return first_difference(outs[0], outs[1], limit=2000)


def main():
  import warnings
  warnings.simplefilter("ignore")
  import arrax
  import arrax.numpy as anp
  import jax
  import jax.numpy as jnp
  assert jax.device_count() == 4 and arrax.device_count() == 4
  results = {}
  for name, fn in CASES.items():
    try:
      results[name] = run_case(name, fn, (arrax, anp), (jax, jnp))
    except Exception:  # noqa: BLE001
      results[name] = traceback.format_exc()
  sys.stdout.write("RESULTS" + json.dumps(results))
