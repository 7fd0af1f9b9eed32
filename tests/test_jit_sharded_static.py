"""jit with in_shardings/out_shardings together with static, donated and unused arguments,
device/backend and compiler options, against JAX 0.10.2 on 4 simulated CPU devices (the cases,
tests/jit_sharded_static_cases.py, run in one fresh interpreter)."""
import pytest

from tests import jit_sharded_static_cases
from tests.multidevice import cached_case_results


@pytest.mark.parametrize("name", list(jit_sharded_static_cases.CASES))
def test_jit_sharded_static_matches_jax(name):
  result = cached_case_results("jit_sharded_static_cases", 4, "main()")[name]
  assert result == "ok", result


def test_one_device_mesh_static_and_donation():
  """In the main (one-device) process: a one-device mesh with static and donated arguments."""
  import numpy as np
  import jax
  import arrax
  outs = []
  for lib in (arrax, jax):
    s = lib.NamedSharding(lib.make_mesh((1,), ("x",)), lib.P("x"))
    a = lib.device_put(np.arange(4.0, dtype=np.float32), s)
    g = lib.jit(lambda a, n: a * n, static_argnums=1, in_shardings=s, out_shardings=s,
                donate_argnums=0)
    out = g(a, 3)
    outs.append((np.asarray(out).tolist(), repr(out.sharding), a.is_deleted()))
  assert outs[0] == outs[1]
