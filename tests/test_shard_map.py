"""arrax.shard_map (and the sharding names around it) against JAX 0.10.2.

The cases (tests/shard_map_cases.py) run in two fresh interpreters, with 4 and with 8 simulated
CPU devices (XLA_FLAGS set before jaxlib is imported); each runs every case with both libraries
and reports per case. The 8-device run repeats the mesh cases and adds those needing 8 devices.
"""
import inspect

import pytest

from tests import shard_map_cases
from tests.multidevice import cached_case_results

_XFAIL = {
}


def _params(ndev):
  out = []
  for name, (_, need) in shard_map_cases.CASES.items():
    if need > ndev or (ndev > 4 and need <= 4 and not name.startswith("mesh_")):
      continue
    marks = [pytest.mark.xfail(strict=True, reason=_XFAIL[name])] if name in _XFAIL else []
    out.append(pytest.param(ndev, name, marks=marks, id=f"{ndev}dev-{name}"))
  return out


@pytest.mark.parametrize("ndev,name", _params(4) + _params(8))
def test_shard_map_matches_jax(ndev, name):
  result = cached_case_results("shard_map_cases", ndev)[name]
  assert result == "ok", result


def _sig(f):
  return [(p.name, p.kind, repr(p.default)) for p in inspect.signature(f).parameters.values()]


def test_signatures_match_jax():
  import warnings

  import jax
  import jax.experimental.shard_map as jesm

  import arrax
  import arrax.experimental.shard_map as aesm
  assert _sig(arrax.shard_map) == _sig(jax.shard_map)
  assert _sig(arrax.smap) == _sig(jax.smap)
  assert _sig(arrax.reshard) == _sig(jax.reshard)
  for name in ("auto_axes", "explicit_axes", "use_abstract_mesh", "get_abstract_mesh",
               "AbstractMesh"):
    a, j = getattr(arrax.sharding, name), getattr(jax.sharding, name)
    assert [p[:2] for p in _sig(a)] == [p[:2] for p in _sig(j)], name
  with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    assert _sig(aesm.shard_map) == _sig(jesm.shard_map)


def test_deprecated_experimental_module_warns():
  import arrax.experimental.shard_map as aesm
  with pytest.warns(DeprecationWarning, match="jax.experimental.shard_map is deprecated"):
    aesm.shard_map


def test_public_names():
  import jax

  import arrax
  for name in arrax.sharding.__all__:
    assert hasattr(jax.sharding, name), name
  for name in ("shard_map", "smap", "reshard"):
    assert hasattr(jax, name) and hasattr(arrax, name), name


def test_lax_collective_names():
  """psend, precv, ragged_all_to_all and pcast have JAX's signatures; every public jax.lax name
  is in arrax.lax; pvary is gone as in JAX."""
  import jax

  import arrax
  for name in ("psend", "precv", "ragged_all_to_all", "pcast"):
    assert _sig(getattr(arrax.lax, name)) == _sig(getattr(jax.lax, name)), name
  assert arrax.lax.ragged_all_to_all_p.name == jax.lax.ragged_all_to_all_p.name
  public = {n for n in dir(jax.lax) if not n.startswith("_")}
  assert public - set(dir(arrax.lax)) == set()
  for lib in (jax, arrax):
    with pytest.raises(AttributeError, match="removed in JAX v0.10.0"):
      lib.lax.pvary
