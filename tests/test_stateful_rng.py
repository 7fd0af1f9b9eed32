"""jax.experimental.random (stateful_rng, StatefulPRNG) against JAX 0.10.2: the same draws
eagerly, under jit and vmap, split and spawn, and the same errors."""
import jax.experimental.random as jax_random
import pytest

import arrax.experimental.random as arrax_random
from tests.oracle import assert_prints_like_jax

CASES = {
    "repr_and_key": "r = R.stateful_rng(42); print(r); print(r.key()); print(r.key((2,)))",
    "draws": """
      r = R.stateful_rng(0)
      print(r.random(), r.random(3), r.uniform(2, 5, size=(2, 2)))
      print(r.normal(), r.normal(1.0, jnp.array([1.0, 2.0])), r.integers(10, size=4))
      print(r.integers(3, 7, size=2, dtype=jnp.int8), r.random(dtype=jnp.bfloat16))
      print(r.uniform(size=0))
    """,
    "jit": """
      r = R.stateful_rng(7)
      f = jax.jit(lambda r, x: x + r.uniform(size=x.shape))
      print(f(r, jnp.zeros(2)), f(r, jnp.zeros(2)), r.integers(5))
    """,
    "vmap_split": """
      r = R.stateful_rng(123)
      print(jax.vmap(lambda g, x: x + g.uniform())(r.split(3), jnp.zeros(3)))
      print(r.split((2, 2))._base_key.shape)
    """,
    "spawn": "print([c.integers(10, size=2) for c in R.stateful_rng(1).spawn(2)])",
    "x64": """
      with jax.enable_x64(True):
        r = R.stateful_rng(3)
        print(r.random().dtype, r.integers(4, size=2).dtype)
    """,
    "split_generator_draw": "R.stateful_rng(0).split(2).random()",
    "bad_key": "R.StatefulPRNG(jnp.zeros(2, jnp.uint32), None)",
    "no_seed_under_jit": "jax.jit(lambda x: R.stateful_rng().random() + x)(1.0)",
}


@pytest.mark.parametrize("name", CASES)
def test_stateful_rng_like_jax(name):
  assert_prints_like_jax(CASES[name], jax_scope={"R": jax_random},
                         arrax_scope={"R": arrax_random})


def test_unseeded_at_top_level_draws():
  r = arrax_random.stateful_rng()
  assert r.random(4).shape == (4,)
