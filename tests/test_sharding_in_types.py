"""Shardings in types (Explicit mesh axes) against JAX 0.10.2 on 8 simulated CPU devices.

The cases (tests/sharding_in_types_cases.py) run in one fresh interpreter whose XLA_FLAGS ask
for 8 CPU devices before jaxlib is imported; it runs every case with both libraries and
reports per case: types as printed, the shardings of types and arrays, jaxpr text, values and
the errors raised.
"""
import pytest

from tests import sharding_in_types_cases
from tests.multidevice import cached_case_results, xfail_params

_XFAIL = {}


@pytest.mark.parametrize("name", xfail_params(sharding_in_types_cases.CASES, _XFAIL))
def test_sharding_in_types_matches_jax(name):
  result = cached_case_results("sharding_in_types_cases", 8, "main()")[name]
  assert result == "ok", result


def test_one_device_mesh_and_unsharded_types():
  """In the one-device process: a size-1 Explicit mesh axis stays in the type (as in JAX);
  values placed on no mesh have types without a sharding that equal the plain ones."""
  import jax
  import numpy as np

  import arrax
  import arrax.numpy as anp
  outs = []
  for lib in (arrax, jax):
    m = lib.make_mesh((1,), ("x",))
    a = lib.device_put(np.ones((4, 2), np.float32), lib.NamedSharding(m, lib.P("x")))
    errs = []
    for f in (lambda v: v.T @ v, lambda v: v @ v.T):
      try:
        lib.jit(f)(a)
      except Exception as e:  # noqa: BLE001
        errs.append(str(e).split("\n")[0])
    outs.append((str(lib.typeof(a)), str(lib.typeof(a * 2)), repr((a * 2).sharding),
                 np.asarray(a * 2).tolist(), str(lib.make_jaxpr(lambda v: v.sum(1))(a)), errs))
  assert outs[0] == outs[1]
  t = arrax.typeof(anp.ones((4, 2)))
  assert t.sharding is None and str(t) == "float32[4,2]"
  assert t == arrax.core.ShapedArray((4, 2), np.float32)
