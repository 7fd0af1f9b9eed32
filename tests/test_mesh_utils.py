"""jax.experimental.mesh_utils against JAX 0.10.2, with 8 simulated CPU devices (in a
subprocess): the device arrays create_device_mesh and create_hybrid_device_mesh build (ids and
shapes), their errors and messages, kind handlers, and meshes made from them."""

import pytest

from tests.multidevice import script_results

CODE = r"""
import json
import numpy as np
import jax, jax.experimental.mesh_utils as jmu
import arrax, arrax.experimental.mesh_utils as amu

CASES = {
    "1d": lambda mu, devs: mu.create_device_mesh((8,)),
    "2x4": lambda mu, devs: mu.create_device_mesh([2, 4]),
    "2x1x4 numpy sizes": lambda mu, devs: mu.create_device_mesh(np.array([2, 1, 4])),
    "reversed devices": lambda mu, devs: mu.create_device_mesh((4, 2), devs[::-1]),
    "subset": lambda mu, devs: mu.create_device_mesh((3,), devs[2:5],
                                                     contiguous_submeshes=True),
    "wrong product": lambda mu, devs: mu.create_device_mesh((3, 2)),
    "not ints": lambda mu, devs: mu.create_device_mesh(("a", 8)),
    "hybrid per process": lambda mu, devs: mu.create_hybrid_device_mesh(
        (2, 4), (1, 1), process_is_granule=True),
    "hybrid unsorted": lambda mu, devs: mu.create_hybrid_device_mesh(
        [8], [1], devs[::-1], process_is_granule=True, should_sort_granules_by_key=False),
    "hybrid no slice_index": lambda mu, devs: mu.create_hybrid_device_mesh((2, 4), (1, 1)),
    "hybrid wrong dcn": lambda mu, devs: mu.create_hybrid_device_mesh(
        (2, 2), [2, 1], devs[:4], process_is_granule=True),
    "hybrid wrong ici": lambda mu, devs: mu.create_hybrid_device_mesh(
        (2, 2), (1,), process_is_granule=True),
}

def describe(thunk):
  try:
    r = thunk()
  except Exception as e:
    return ["error", type(e).__name__, str(e)]
  return ["ok", type(r).__name__, str(r.dtype), list(r.shape),
          [d.id for d in r.ravel()], type(r.ravel()[0]).__name__]

out = {}
for lib, mu in (("jax", jmu), ("arrax", amu)):
  devs = (jax if lib == "jax" else arrax).devices()
  out[lib] = {name: describe(lambda: case(mu, devs)) for name, case in CASES.items()}

# A registered handler for the device kind is used first (None falls back to the default).
seen = []
def handler(shape, devices, *, contiguous_submeshes):
  seen.append((shape, len(devices), contiguous_submeshes))
  return None if shape == (8,) else np.asarray(devices[::-1]).reshape(shape)
amu.device_kind_handler_dict["cpu"] = handler
try:
  flat = [d.id for d in amu.create_device_mesh((8,))]
  rev = [d.id for d in amu.create_device_mesh((2, 4)).ravel()]
finally:
  del amu.device_kind_handler_dict["cpu"]
out["handler"] = [flat, rev, [list(map(str, s)) for s in seen]]

# The array feeds Mesh and a sharded computation.
m = arrax.sharding.Mesh(amu.create_device_mesh((2, 4)), ("x", "y"))
s = arrax.sharding.NamedSharding(m, arrax.P("x", "y"))
a = arrax.device_put(np.arange(32.0).reshape(4, 8), s)
out["mesh"] = [dict(m.shape), float(np.asarray(arrax.jit(lambda u: u * 2)(a)).sum()),
               len(a.addressable_shards)]
print("RESULTS" + json.dumps(out))
"""


@pytest.fixture(scope="module")
def results():
  return script_results(CODE, ndev=8)


def test_meshes_and_errors_match_jax(results):
  j, a = results["jax"], results["arrax"]
  assert set(a) == set(j)
  diffs = [f"{k}: arrax {a[k]} jax {j[k]}" for k in j if a[k] != j[k]]
  assert not diffs, "\n".join(diffs)
  # The cases exercise both outcomes.
  assert {v[0] for v in j.values()} == {"ok", "error"}
  assert j["reversed devices"][4] == [7, 6, 5, 4, 3, 2, 1, 0]


def test_kind_handler_and_mesh(results):
  flat, rev, seen = results["handler"]
  assert flat == list(range(8)) and rev == list(range(7, -1, -1))
  assert seen == [["(8,)", "8", "False"], ["(2, 4)", "8", "False"]]
  assert results["mesh"] == [{"x": 2, "y": 4}, 992.0, 8]
