"""Unreduced/reduced manual axes in shard_map's types and nested shard_map, against JAX 0.10.2.

The cases (tests/shard_map_reduced_cases.py) run in one fresh interpreter with 4 simulated CPU
devices; each runs with both libraries and reports per case.
"""
import pytest

from tests import shard_map_reduced_cases
from tests.multidevice import cached_case_results, xfail_params

_XFAIL = {
}


@pytest.mark.parametrize("name", xfail_params(list(shard_map_reduced_cases.CASES), _XFAIL))
def test_matches_jax(name):
  result = cached_case_results("shard_map_reduced_cases", 4, "main()")[name]
  assert result == "ok", result
