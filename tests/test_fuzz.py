"""The differential fuzzer (tests/fuzzing.py) with a small fixed budget: random programs under
random transformation stacks give JAX's values, dtypes, weak types, shapes and error classes.

Derandomized, so CI sees the same programs every run; `make fuzz` runs long campaigns.
"""
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
