"""pmap against JAX 0.10.2 on simulated CPU devices.

The main test process has one device, so the cases (tests/pmap_cases.py) run in a fresh
interpreter whose XLA_FLAGS ask for 4 (or 8) CPU devices before jaxlib is imported; one
subprocess per device count runs every case with both libraries and reports per case.
"""
import pytest

from tests import pmap_cases
from tests.multidevice import ROOT, cached_case_results, run_script, xfail_params

_XFAIL = {
    "in_axes_negative": "JAX 0.10.2 splits axis 0 for a negative in_axes (and fails here); "
                        "arrax counts it from the end, as vmap and the pmap docs do",
    "out_axes_negative": "JAX 0.10.2 stacks along axis 0 for a negative out_axes; arrax "
                         "counts it from the end, as vmap and the pmap docs do",
    "eager_op_on_result_stays_sharded": "eager ops and jit on a multi-device array gather it "
                                        "on one device (JAX keeps the NamedSharding)",
}


@pytest.mark.parametrize("name", xfail_params(sorted(pmap_cases.CASES), _XFAIL))
def test_pmap_matches_jax(name):
  ndev = pmap_cases.CASES[name][1]
  result = cached_case_results("pmap_cases", ndev)[name]
  assert result == "ok", result


def test_single_device_process_maps_one():
  """In the main (one-device) process pmap maps size 1 and rejects more."""
  import arrax
  import arrax.numpy as jnp
  out = arrax.pmap(lambda x: arrax.lax.psum(x, "i"), "i")(jnp.ones((1, 3)))
  assert out.shape == (1, 3) and out.tolist() == [[1.0, 1.0, 1.0]]
  assert type(out.sharding).__name__ == "NamedSharding"
  with pytest.raises(ValueError, match="logical devices"):
    arrax.pmap(lambda x: x)(jnp.ones((2, 3)))


def test_nested_pmap_raises_clearly():
  import arrax
  import arrax.numpy as jnp
  inner = arrax.pmap(lambda x: x * 2)
  with pytest.raises(NotImplementedError, match="nested pmap"):
    arrax.pmap(inner)(jnp.ones((1, 1, 3)))


def test_signature_matches_jax():
  import inspect
  import jax
  import arrax

  def params(f):
    return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]
  assert params(arrax.pmap) == params(jax.pmap)


DATA_PARALLEL = ROOT / "examples" / "data_parallel.py"


@pytest.mark.skipif(not DATA_PARALLEL.exists(), reason="example not written")
def test_data_parallel_example_matches_single_device_training():
  res = run_script(f"import runpy; runpy.run_path({str(DATA_PARALLEL)!r}, "
                    "run_name='__main__')", 4)
  assert res.returncode == 0, res.stderr[-3000:]
  assert "devices: 4" in res.stdout
  assert "max |data-parallel - single-device| parameter difference" in res.stdout
  assert res.stdout.rstrip().endswith("OK"), res.stdout


def test_reading_results_does_not_import_jax():
  """Host reads of multi-device results avoid jaxlib's per-device views (which import jax)."""
  code = """
import sys
import numpy as np
import arrax, arrax.numpy as jnp
f = arrax.pmap(lambda x, w: (arrax.lax.psum(x, "i") * w, x > 0), "i", in_axes=(0, None))
s, b = f(np.arange(8.0).reshape(4, 2), 2.0)
print(s.tolist(), np.asarray(b).tolist(), [sh.data.tolist() for sh in s.addressable_shards])
out = arrax.pmap(lambda x: x, out_axes=None)(np.ones((4, 3), np.int8))
print(repr(out), (s + 1).tolist())
print(any(m == "jax" or m.startswith("jax.") for m in sys.modules))
"""
  res = run_script(code, 4)
  assert res.returncode == 0, res.stderr[-3000:]
  lines = res.stdout.splitlines()
  assert lines[0] == ("[[24.0, 32.0], [24.0, 32.0], [24.0, 32.0], [24.0, 32.0]] "
                      "[[False, True], [True, True], [True, True], [True, True]] "
                      "[[[24.0, 32.0]], [[24.0, 32.0]], [[24.0, 32.0]], [[24.0, 32.0]]]")
  assert lines[1] == ("Array([1, 1, 1], dtype=int8) [[25.0, 33.0], [25.0, 33.0], [25.0, 33.0], "
                      "[25.0, 33.0]]")
  assert lines[2] == "False"
