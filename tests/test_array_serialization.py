"""arrax.experimental.array_serialization against JAX 0.10.2: checkpoints written by either
library are read by the other (pytree_serialization and the zarr checkpoint manager), the
TensorStore specs and metadata are JAX's, and so are the errors. Multi-device cases run in one
subprocess with 4 simulated CPU devices."""
import collections
import importlib
import inspect
import json
import sys

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest

ts = pytest.importorskip("tensorstore")   # (an optional dependency, in the test extra)
from jax.experimental.array_serialization import pytree_serialization as jps
from jax.experimental.array_serialization import pytree_serialization_utils as jutils
from jax.experimental.array_serialization import serialization as jser
from jax.experimental.array_serialization import tensorstore_impl as jts

import arrax
import arrax.numpy as anp
from arrax.experimental.array_serialization import pytree_serialization as aps
from arrax.experimental.array_serialization import pytree_serialization_utils as autils
from arrax.experimental.array_serialization import serialization as aser
from arrax.experimental.array_serialization import tensorstore_impl as ats
from tests.multidevice import script_results
from tests.oracle import assert_same as _assert_same
from tests.oracle import error_of

A_DEV = arrax.sharding.SingleDeviceSharding(arrax.devices()[0])
J_DEV = jax.sharding.SingleDeviceSharding(jax.devices()[0])



def assert_same(a, j, **kw):
  """The same pytree structure (None leaves included) and the same arrays."""
  is_none = lambda x: x is None   # noqa: E731
  assert str(arrax.tree.structure(a, is_leaf=is_none)) == str(jax.tree.structure(
      j, is_leaf=is_none))
  _assert_same(arrax.tree.leaves(a), jax.tree.leaves(j), **kw)


PUBLIC = {
    "tensorstore_impl": (jts, ats, ["async_serialize", "async_deserialize",
                                    "get_tensorstore_spec", "verify_tensorstore_spec",
                                    "merge_nested_ts_specs", "combine_kvstores",
                                    "estimate_read_memory_footprint", "is_tensorstore_spec_leaf",
                                    "_run_serialization", "_run_deserialization",
                                    "_compute_chunk_shape", "_get_tensorstore_metadata"]),
    "serialization": (jser, aser, ["async_serialize", "async_deserialize", "run_serialization",
                                   "run_deserialization", "get_tensorstore_spec",
                                   "is_remote_storage", "_get_metadata", "AsyncManager",
                                   "GlobalAsyncCheckpointManager"]),
    "pytree_serialization": (jps, aps, ["save", "load", "load_pytreedef", "nonblocking_save",
                                        "nonblocking_load"]),
    "pytree_serialization_utils": (jutils, autils, ["serialize_pytreedef",
                                                    "deserialize_pytreedef", "PyTreeFuture",
                                                    "register_pytree_node_serialization"]),
}


def _params(fn):
  """(name, kind, default) per parameter; defaults that are objects compare by type."""
  out = []
  for p in inspect.signature(fn).parameters.values():
    d = p.default
    if not (d is inspect.Parameter.empty or d is None or isinstance(d, (bool, int, str))):
      d = type(d).__name__
    out.append((p.name, p.kind, d))
  return out


@pytest.mark.parametrize("module", sorted(PUBLIC))
def test_public_names_and_signatures(module):
  jmod, amod, names = PUBLIC[module]
  for name in names:
    assert hasattr(amod, name), name
    jo, ao = getattr(jmod, name), getattr(amod, name)
    assert _params(ao) == _params(jo), name
  public = lambda m: {n for n in dir(m) if not n.startswith("_")}   # noqa: E731
  for cls in ("GlobalAsyncCheckpointManager", "AsyncManager"):
    if hasattr(jmod, cls):
      assert public(getattr(jmod, cls)) <= public(getattr(amod, cls)), cls
      for meth in public(getattr(jmod, cls)):
        assert (_params(getattr(getattr(amod, cls), meth))
                == _params(getattr(getattr(jmod, cls), meth))), (cls, meth)
  assert list(aps.__all__) == list(jps.__all__) and autils.__all__ == jutils.__all__


def _tree(np_, dtype, shape):
  """A pytree with arrays of `dtype` and `shape`, None leaves and nested containers."""
  rng = np.random.default_rng(0)
  x = rng.normal(size=shape) * 3
  if dtype == "complex64":
    x = x + 1j * np.cos(x)
  x = x.astype(dtype)
  return {"w": np_.asarray(x), "n": None,
          "l": [np_.arange(3, dtype=np_.int32), (np_.ones((2, 1), np_.float16), None)]}


_DTYPES = ["float32", "int8", "bool", ml_dtypes.bfloat16, "uint16", "complex64"]


@pytest.mark.parametrize("dtype", _DTYPES, ids=str)
@pytest.mark.parametrize("shape", [(), (0, 3), (2, 3)])
def test_pytree_saved_by_arrax_loads_in_jax_and_back(tmp_path, dtype, shape):
  aps.save(_tree(anp, dtype, shape), tmp_path / "a")
  jgot = jps.load(tmp_path / "a", J_DEV)
  assert_same(aps.load(tmp_path / "a", A_DEV), jgot, exact=True)
  assert_same(_tree(anp, dtype, shape), jgot, exact=True)
  jps.save(_tree(jnp, dtype, shape), tmp_path / "j")
  assert_same(aps.load(tmp_path / "j", A_DEV), jps.load(tmp_path / "j", J_DEV), exact=True)
  # The same directory contents: the JSON (leaf descriptions; each library's structure text
  # decodes to the same tree in the other) and the array store's keys.
  ja, jj = (json.loads((tmp_path / d / "pytreedef.json").read_text()) for d in "aj")
  assert ja["__jax_leaf_ids"] == jj["__jax_leaf_ids"]
  assert jutils.deserialize_pytreedef(ja) == jutils.deserialize_pytreedef(jj)
  assert str(autils.deserialize_pytreedef(jj)) == str(autils.deserialize_pytreedef(ja))


def _sds(x):
  return (type(x).__name__, tuple(x.shape), str(x.dtype)) if hasattr(x, "shape") else x


def test_load_pytreedef_mask_and_shape_dtype_struct_shardings(tmp_path):
  jps.save({"a": jnp.ones((2, 2)), "b": [jnp.zeros(3, jnp.int32), None]}, tmp_path / "c")
  a = aps.load_pytreedef(tmp_path / "c")
  j = jps.load_pytreedef(tmp_path / "c")
  assert jax.tree.map(_sds, j) == arrax.tree.map(_sds, a)
  mask = {"a": False, "b": True}
  assert_same(aps.load(tmp_path / "c", A_DEV, mask=mask),
              jps.load(tmp_path / "c", J_DEV, mask=mask))
  got = aps.load(tmp_path / "c", {"a": arrax.ShapeDtypeStruct((2, 2), np.float32,
                                                              sharding=A_DEV), "b": A_DEV})
  assert_same(got, jps.load(tmp_path / "c", J_DEV))


def test_numpy_64_bit_leaves_load_canonicalized(tmp_path):
  x = {"f": np.arange(3, dtype=np.float64) / 3, "i": np.arange(3, dtype=np.int64)}
  aps.save(x, tmp_path / "w")
  assert (arrax.tree.map(_sds, aps.load_pytreedef(tmp_path / "w"))
          == jax.tree.map(_sds, jps.load_pytreedef(tmp_path / "w")))
  assert_same(aps.load(tmp_path / "w", A_DEV), jps.load(tmp_path / "w", J_DEV), exact=True)


def test_nonblocking_save_and_load(tmp_path):
  fut = aps.nonblocking_save({"x": anp.arange(4.0), "y": None}, tmp_path / "n")
  assert fut.pytree["y"] is None and _sds(fut.pytree["x"]) == ("ShapeDtypeStruct", (4,),
                                                               "float32")
  assert fut.result() is None and fut.done()
  lf = aps.nonblocking_load(tmp_path / "n", A_DEV)
  assert _sds(lf.pytree["x"]) == ("ShapeDtypeStruct", (4,), "float32")
  assert_same(lf.result(), jps.load(tmp_path / "n", J_DEV))
  assert repr(lf).startswith("PyTreeFuture(done=True")


def test_save_and_load_errors_like_jax(tmp_path):
  (tmp_path / "full").mkdir()
  (tmp_path / "full" / "other.txt").write_text("x")
  cases = [
      lambda lib, np_, d: lib.save({"a": np_.ones(2)}, d / "full", overwrite=False),
      lambda lib, np_, d: lib.save({"a": np_.ones(2)}, d / "full"),
      lambda lib, np_, d: lib.save({"a": 1.0}, d / "s"),
      lambda lib, np_, d: lib.save({"a": np_.ones(2)}, d / "p", ts_specs=[None, None]),
      lambda lib, np_, d: lib.save({"a": np_.ones(2)}, "gs://bucket/ckpt"),  # (no etils)
      lambda lib, np_, d: lib.load("gs://bucket/ckpt", None),
      lambda lib, np_, d: lib.load(d / "missing", None),
  ]
  for case in cases:
    j = error_of(lambda: case(jps, jnp, tmp_path))
    a = error_of(lambda: case(aps, anp, tmp_path))
    assert j is not None and a is not None
    assert a[0] == j[0]
    # (arrax words the prefix mismatch's details differently)
    assert a[1] == j[1] or a[1].splitlines()[:4] == j[1].splitlines()[:4]


def test_ts_specs_prefix_changes_the_driver_options(tmp_path):
  x = {"a": np.arange(6, dtype=np.float32).reshape(2, 3), "b": np.ones(2, np.int8)}
  meta = dict(jts._get_tensorstore_metadata(x["a"]), codecs=[{"name": "zstd"}])
  spec = {"driver": "zarr3", "metadata": meta}
  aps.save(x, tmp_path / "z", ts_specs={"a": spec, "b": None})
  stored = ts.open(jts.get_tensorstore_spec(str(tmp_path / "z" / "array_store" / "0"))).result()
  assert "zstd" in json.dumps(stored.spec().to_json())
  assert_same(aps.load(tmp_path / "z", A_DEV), jps.load(tmp_path / "z", J_DEV))
  # A spec naming another shape, or a dict that is not a spec, is refused as in JAX.
  for bad in [{"driver": "zarr3", "metadata": dict(meta, shape=(3, 3))},
              {"metadata": {"shape": (3, 3)}}]:
    j = error_of(lambda: jps.save(x, tmp_path / "q", ts_specs={"a": bad, "b": None}))
    assert j is not None
    assert error_of(lambda: aps.save(x, tmp_path / "q", ts_specs={"a": bad, "b": None}))[0] == j[0]


@pytest.mark.parametrize("path", ["/tmp/ckpt/arr", "/tmp/ckpt/arr/", "gs://bucket/dir/arr",
                                  "s3://bucket/d/arr", "rel/arr", "gs://bucket"])
@pytest.mark.parametrize("ocdbt", [True, False])
@pytest.mark.parametrize("driver", ["zarr3", "zarr"])
def test_get_tensorstore_spec_like_jax(path, ocdbt, driver):
  for pidx in (None, 1):
    call = lambda m, arr: m.get_tensorstore_spec(path, ocdbt=ocdbt, process_idx=pidx,  # noqa
                                                 arr=arr, driver=driver)
    j = error_of(lambda: call(jts, None))
    if j is not None:
      assert error_of(lambda: call(ats, None)) == j
      continue
    assert call(ats, anp.ones((4, 6), anp.int8)) == call(jts, jnp.ones((4, 6), jnp.int8))
  assert (aser.get_tensorstore_spec("/a/b", arr=np.ones(3))
          == jser.get_tensorstore_spec("/a/b", arr=np.ones(3)))


def test_spec_helpers_like_jax():
  for shape, dt, target in [((1024, 1024), np.float32, 2 ** 20), ((6, 10, 35), np.int8, 100),
                            ((7, 13), np.float32, 10), ((0, 5), np.float32, 1), ((), "f4", 1)]:
    assert ats._compute_chunk_shape(shape, dt, target) == jts._compute_chunk_shape(shape, dt,
                                                                                   target)
  # (JAX fails with an IndexError on a size-1 axis when the chunk must shrink; arrax skips it)
  with pytest.raises(IndexError):
    jts._compute_chunk_shape((7, 1, 13), np.float32, 10)
  assert ats._compute_chunk_shape((4, 1, 13), np.float32, 10) == [2, 1, 13]
  for spec in ["gs://b/x", "/local", {"kvstore": {"driver": "s3", "path": "p"}},
               {"driver": "zarr", "kvstore": {"driver": "file", "path": "/x"}},
               {"base": {"driver": "gcs"}}]:
    assert aser.is_remote_storage(spec) == jser.is_remote_storage(spec)
  d1 = {"driver": "zarr3", "kvstore": {"driver": "file", "path": "/a"}, "metadata": {"x": 1}}
  d2 = {"kvstore": {"path": "/b"}, "dtype": "int8"}
  assert ats.merge_nested_ts_specs(d1, d2) == jts.merge_nested_ts_specs(d1, d2)
  assert ats.merge_nested_ts_specs(d1, None) is d1
  for leaf in [None, {"driver": "zarr"}, {"kvstore": {}}, {"metadata": {}}, 3]:
    assert ats.is_tensorstore_spec_leaf(leaf) == jts.is_tensorstore_spec_leaf(leaf)
  spec = jts.get_tensorstore_spec("/c/d", arr=np.ones((4, 4), np.float32))
  for arr, path, ocdbt, meta in [(np.ones((4, 4), np.float32), "/c", True, True),
                                 (np.ones((4, 4), np.int32), "/c", True, True),
                                 (np.ones((2, 4), np.float32), "/c", True, True),
                                 (None, "/c", True, True), (None, "/x", True, False),
                                 (None, "/c", False, False)]:
    args = (dict(spec), arr, path, ocdbt, meta)
    assert error_of(lambda: ats.verify_tensorstore_spec(*args)) == error_of(
        lambda: jts.verify_tensorstore_spec(*args))


def test_estimate_read_memory_footprint(tmp_path):
  t = ts.open({"driver": "zarr3", "kvstore": {"driver": "file", "path": str(tmp_path / "e")},
               "metadata": {"shape": [10, 7], "data_type": "float32",
                            "chunk_grid": {"name": "regular",
                                           "configuration": {"chunk_shape": [4, 3]}}}},
              create=True).result()
  for dom in [t.domain, t[1:5, 2:4].domain, t[9:10, 0:1].domain, None]:
    assert ats.estimate_read_memory_footprint(t, dom) == jts.estimate_read_memory_footprint(t,
                                                                                            dom)
  arr = ts.array(np.ones((3, 4), np.int16))
  assert ats.estimate_read_memory_footprint(arr, None) == 24


def test_checkpoint_manager_zarr_both_ways(tmp_path):
  calls = []
  am = aser.GlobalAsyncCheckpointManager()
  am.serialize_with_paths([anp.arange(6.0).reshape(2, 3), anp.array([1, 2], anp.int32)],
                          [str(tmp_path / "a0"), str(tmp_path / "a1")],
                          on_commit_callback=lambda: calls.append(1))
  am.wait_until_finished()
  assert calls == [1]
  jm = jser.GlobalAsyncCheckpointManager()
  paths = [str(tmp_path / "a0"), str(tmp_path / "a1")]
  assert_same(am.deserialize_with_paths([A_DEV] * 2, paths),
              jm.deserialize_with_paths([J_DEV] * 2, paths))
  # Reading into a larger shape (zero-filled) and another dtype.
  args = ([(3, 4), (5,)], [np.int32, np.float32])
  assert_same(am.deserialize_with_paths([A_DEV] * 2, paths, *args),
              jm.deserialize_with_paths([J_DEV] * 2, paths, *args))
  jm.serialize_with_paths([jnp.arange(4, dtype=jnp.uint8)], [str(tmp_path / "j0")])
  jm.wait_until_finished()
  specs = [jser.get_tensorstore_spec(str(tmp_path / "j0"))]
  assert_same(aser.run_deserialization([A_DEV], specs),
              jser.run_deserialization([J_DEV], specs))
  aser.run_serialization([np.arange(3, dtype=np.int16)],
                         [aser.get_tensorstore_spec(str(tmp_path / "r"))])
  assert_same(aser.run_deserialization([A_DEV], [aser.get_tensorstore_spec(str(tmp_path / "r"))]),
              jser.run_deserialization([J_DEV], [jser.get_tensorstore_spec(str(tmp_path / "r"))]))


def test_checkpoint_manager_reports_the_commit_error(tmp_path):
  def boom():
    raise RuntimeError("commit failed")
  for ser, np_ in [(aser, anp), (jser, jnp)]:
    m = ser.GlobalAsyncCheckpointManager()
    m.serialize_with_paths([np_.ones(2)], [str(tmp_path / f"e{ser is aser}")],
                           on_commit_callback=boom)
    with pytest.raises(RuntimeError, match="commit failed"):
      m.wait_until_finished()
    m.check_for_errors()     # (raised once)
  with pytest.raises(NotImplementedError):
    aser.GlobalAsyncCheckpointManagerBase.register(int)
  with pytest.raises(TypeError):
    aser.GlobalAsyncCheckpointManagerBase()


def test_pytreedef_serialization_utils_like_jax():
  Point = collections.namedtuple("Point", "x y")
  trees = [({"b": 1, "a": (2, None)}, [3]), [], {"k": [1, 2, {"z": 3}]}]
  for t in trees:
    a = autils.serialize_pytreedef(arrax.tree.structure(t))
    j = jutils.serialize_pytreedef(jax.tree.structure(t))
    assert a[autils._LEAF_IDS_KEY] == j[jutils._LEAF_IDS_KEY]
    assert jutils.deserialize_pytreedef(a) == jax.tree.structure(t)
    assert str(autils.deserialize_pytreedef(j)) == str(arrax.tree.structure(t))
  ja = error_of(lambda: jutils.serialize_pytreedef(jax.tree.structure(Point(1, 2))))
  aa = error_of(lambda: autils.serialize_pytreedef(arrax.tree.structure(Point(1, 2))))
  assert ja[0] == aa[0] == "ValueError"


def test_missing_tensorstore_is_jax_import_error():
  """Without tensorstore, importing the submodules fails as JAX's do."""
  names = ["tensorstore_impl", "serialization", "pytree_serialization"]
  ours = lambda k: k == "tensorstore" or "array_serialization" in k   # noqa: E731
  saved = {k: v for k, v in sys.modules.items() if ours(k)}
  errors = {}
  try:
    for k in saved:
      del sys.modules[k]
    sys.modules["tensorstore"] = None
    for lib in ("jax", "arrax"):
      for n in names:
        try:
          importlib.import_module(f"{lib}.experimental.array_serialization.{n}")
        except ImportError as e:
          errors[lib, n] = (type(e).__name__, str(e))
  finally:
    for k in [k for k in sys.modules if ours(k)]:
      del sys.modules[k]
    sys.modules.update(saved)
    for k, v in saved.items():     # (the packages' attributes too)
      parent, _, child = k.rpartition(".")
      if parent in sys.modules:
        setattr(sys.modules[parent], child, v)
  assert len(errors) == 6, errors
  for n in names:
    assert errors["arrax", n] == errors["jax", n]
  assert errors["arrax", "serialization"][0] == "ModuleNotFoundError"


_MULTI = r"""
import json, tempfile, numpy as np
import jax, arrax
from arrax.experimental.array_serialization import pytree_serialization as aps, serialization as aser
from jax.experimental.array_serialization import pytree_serialization as jps, serialization as jser
d = tempfile.mkdtemp()
x = np.arange(64, dtype=np.float32).reshape(8, 8)
am, jm = arrax.make_mesh((2, 2), ("x", "y")), jax.make_mesh((2, 2), ("x", "y"))
A = lambda *s: arrax.sharding.NamedSharding(am, arrax.P(*s))
J = lambda *s: jax.sharding.NamedSharding(jm, jax.P(*s))
def desc(a):
  return [str(a.sharding.spec), np.asarray(a).tolist(),
          sorted((s.device.id, str(s.index), s.replica_id) for s in a.addressable_shards)]
out = {}
# arrax writes sharded (and partially replicated) arrays; both read them in other layouts.
aps.save({"w": arrax.device_put(x, A("x", "y")), "r": arrax.device_put(x[:4], A("x"))}, d + "/a")
out["a_by_jax"] = {k: desc(v) for k, v in jps.load(d + "/a", {"w": J("y", None), "r": J(None, "x")}).items()}
out["a_by_arrax"] = {k: desc(v) for k, v in aps.load(d + "/a", {"w": A("y", None), "r": A(None, "x")}).items()}
jps.save([jax.device_put(x, J(None, ("x", "y")))], d + "/j")
out["j_by_arrax"] = [desc(v) for v in aps.load(d + "/j", [A(("y", "x"))])]
out["j_by_jax"] = [desc(v) for v in jps.load(d + "/j", [J(("y", "x"))])]
m = aser.GlobalAsyncCheckpointManager()
m.serialize_with_paths([arrax.device_put(x, A(None, "y"))], [d + "/z"])
m.wait_until_finished()
out["z_by_jax"] = [desc(v) for v in jser.GlobalAsyncCheckpointManager().deserialize_with_paths([J("x")], [d + "/z"])]
out["z_by_arrax"] = [desc(v) for v in m.deserialize_with_paths([A("x")], [d + "/z"])]
print("RESULTS" + json.dumps(out))
"""


def test_sharded_arrays_round_trip_across_libraries():
  res = script_results(_MULTI, ndev=4)
  assert res["a_by_arrax"] == res["a_by_jax"]
  assert res["j_by_arrax"] == res["j_by_jax"]
  assert res["z_by_arrax"] == res["z_by_jax"]
  x = np.arange(64, dtype=np.float32).reshape(8, 8)
  assert res["a_by_jax"]["w"][1] == x.tolist() and res["z_by_jax"][0][1] == x.tolist()
  assert len(res["a_by_jax"]["w"][2]) == 4
