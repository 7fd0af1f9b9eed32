"""The differential fuzzer (tests/fuzzing.py) with a small fixed budget: random programs under
random transformation stacks give JAX's values, dtypes, weak types, shapes and error classes.

Derandomized, so CI sees the same programs every run; `make fuzz` runs long campaigns.
"""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests import fuzzing

_SETTINGS = dict(deadline=None, database=None, derandomize=True,
                 suppress_health_check=list(HealthCheck))


@settings(max_examples=60, **_SETTINGS)
@given(st.data())
def test_random_programs_match_jax(data):
  program = fuzzing.draw_program(data.draw)
  note = str(program)
  try:
    fuzzing.run(program)
  except AssertionError as e:
    raise AssertionError(f"{note}\n{e}") from None


@settings(max_examples=40, **_SETTINGS)
@given(st.data())
def test_random_programs_under_jit_and_grad(data):
  # Every program here is differentiated and compiled, whatever else the draw stacks on it.
  program = fuzzing.draw_program(data.draw)
  program.transforms = [("grad", {})] + program.transforms[:1] + [("jit", {})]
  try:
    fuzzing.run(program)
  except AssertionError as e:
    raise AssertionError(f"{program}\n{e}") from None


def _program(steps, transforms, *, shape=(), dtype=np.int32, n_inputs=2, seed=0):
  ops = {o.name: o for o in fuzzing.OPS}
  steps = [(ops[name], ins, params) for name, ins, params in steps]
  return fuzzing.Program(shape=shape, dtype=dtype, n_inputs=n_inputs, steps=steps,
                         outputs=tuple(range(1, n_inputs + len(steps))), transforms=transforms,
                         seed=seed)


@pytest.mark.parametrize("program", [
    # scan over the vjp of an integer function: its float0 cotangents are scan outputs
    _program([("sum", (1,), {"axis": None})],
             [("vjp", {}), ("checkpoint", {}), ("scan", {})], seed=65535),
], ids=lambda p: " ".join(n for n, _ in p.transforms))
def test_fuzzer_findings(program):
  fuzzing.run(program, check_jaxpr=False)
