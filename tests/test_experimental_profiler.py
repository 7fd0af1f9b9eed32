"""jax.experimental.profiler.get_profiled_instructions_proto against JAX 0.10.2, on a trace
written by arrax.profiler.trace."""
import glob
import os

import jax.experimental.profiler as jax_profiler
import pytest
from jaxlib import _jax

import arrax
import arrax.numpy as jnp
from arrax.experimental import profiler


def test_profiled_instructions_proto_like_jax(tmp_path):
  with arrax.profiler.trace(str(tmp_path)):
    (jnp.ones(3) * 2).block_until_ready()
  (run,) = glob.glob(os.path.join(str(tmp_path), "plugins", "profile", "*"))
  got = profiler.get_profiled_instructions_proto(run)
  assert isinstance(got, bytes)
  assert got == jax_profiler.get_profiled_instructions_proto(run)   # (empty on CPU)
  with pytest.raises(_jax.JaxRuntimeError, match="NOT_FOUND"):
    profiler.get_profiled_instructions_proto(str(tmp_path / "missing"))
