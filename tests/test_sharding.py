"""arrax.sharding and device_put onto shardings, against JAX 0.10.2 on 4 simulated CPU devices.

The cases (tests/sharding_cases.py) run in one fresh interpreter whose XLA_FLAGS ask for 4 CPU
devices before jaxlib is imported; it runs every case with both libraries and reports per case.
"""
import inspect

import pytest

from tests import sharding_cases
from tests.multidevice import cached_case_results, run_script, xfail_params

_XFAIL = {
    "sharded_result_keeps_sharding": "eager ops and jit gather a multi-device array on one "
                                     "device (JAX keeps and propagates the NamedSharding)",
}


@pytest.mark.parametrize("name", xfail_params(sharding_cases.CASES, _XFAIL))
def test_sharding_matches_jax(name):
  result = cached_case_results("sharding_cases", 4, "main()")[name]
  assert result == "ok", result


def _params(f):
  return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]


def test_signatures_match_jax():
  import jax
  import arrax
  assert _params(arrax.make_mesh) == _params(jax.make_mesh)
  assert _params(arrax.sharding.Mesh) == _params(jax.sharding.Mesh)
  assert _params(arrax.sharding.PartitionSpec) == _params(jax.sharding.PartitionSpec)


def test_public_names():
  import jax
  import arrax
  for name in arrax.sharding.__all__:
    assert hasattr(jax.sharding, name), name
  assert arrax.P is arrax.sharding.PartitionSpec
  assert arrax.NamedSharding is arrax.sharding.NamedSharding
  assert [a.name for a in arrax.sharding.AxisType] == [a.name for a in jax.sharding.AxisType]


def test_one_device_process():
  """In the main (one-device) process a mesh of one device works as in JAX."""
  import numpy as np
  import jax
  import arrax
  outs = []
  for lib in (arrax, jax):
    m = lib.make_mesh((1,), ("x",))
    s = lib.NamedSharding(m, lib.P("x"))
    a = lib.device_put(np.arange(6.0).reshape(2, 3), s)
    outs.append((repr(m), repr(s), repr(a.sharding), np.asarray(a).tolist(),
                 [(sh.index, sh.device.id, sh.replica_id, np.asarray(sh.data).tolist())
                  for sh in a.addressable_shards], s.is_fully_replicated))
  assert outs[0] == outs[1]
  with pytest.raises(ValueError, match="must be >= the product"):
    arrax.make_mesh((2,), ("x",))


def test_pickle_partition_spec_and_sharded_array():
  import pickle
  import arrax
  p = arrax.P("x", ("y", "z"), None)
  assert pickle.loads(pickle.dumps(p)) == p
  import numpy as np
  a = arrax.device_put(np.arange(3.0), arrax.NamedSharding(arrax.make_mesh((1,), ("x",)),
                                                           arrax.P()))
  assert pickle.loads(pickle.dumps(a)).tolist() == [0.0, 1.0, 2.0]


def test_multi_device_paths_do_not_import_jax():
  """device_put onto meshes (incl. partially replicated layouts), host reads and jit with
  shardings never import jax."""
  code = """
import sys
import numpy as np
import arrax, arrax.numpy as jnp
P, NS = arrax.P, arrax.NamedSharding
m = arrax.make_mesh((2, 2), ("x", "y"), axis_types=(arrax.sharding.AxisType.Auto,) * 2)
a = arrax.device_put(np.arange(16.0).reshape(4, 4), NS(m, P("x")))
f = arrax.jit(lambda u: u * 2, in_shardings=NS(m, P("x", "y")), out_shardings=NS(m, P(None, "y")))
b = f(np.arange(16.0).reshape(4, 4)) + arrax.jit(lambda u: u, out_shardings=NS(m, P(None, "y")))(a)
b = f(b / 2)
print(np.asarray(a).sum(), np.asarray(b).sum(), [s.data.shape for s in b.addressable_shards])
print(any(m == "jax" or m.startswith("jax.") for m in sys.modules))
"""
  res = run_script(code)
  assert res.returncode == 0, res.stderr[-3000:]
  lines = res.stdout.splitlines()
  assert lines[0] == "120.0 360.0 [(4, 2), (4, 2), (4, 2), (4, 2)]"
  assert lines[1] == "False"
