"""jax.experimental.shard_alike against JAX 0.10.2: values, jaxprs, jit, grad, vmap, errors
(one device; the layout hint itself is the partitioner's business, see _src/shard_alike.py)."""
import jax.experimental.shard_alike as jax_shard_alike
import pytest

import arrax.experimental.shard_alike as arrax_shard_alike
from tests.oracle import assert_prints_like_jax

CASES = {
    "values": "print(sa(jnp.arange(4.), jnp.ones(4))); print(sa(jnp.int8(3), jnp.bool_(True)))",
    "pytrees": "print(sa({'a': jnp.ones(2), 'b': (jnp.zeros(()),)}, {'a': jnp.arange(2), 'b': (1.0,)}))",
    "empty": "print(sa(jnp.ones((0, 3)), jnp.zeros((0, 3), jnp.bfloat16)))",
    "jaxpr": "print(jax.make_jaxpr(sa)(jnp.ones((2, 3)), jnp.ones((2, 3), jnp.int32)))",
    "jit": "print(jax.jit(sa)(jnp.arange(3.), jnp.arange(3)))",
    "grad": """
      f = lambda a, b: (sa(a, b)[0] * jnp.sin(sa(a, b)[1])).sum()
      print(jax.grad(f, (0, 1))(jnp.arange(3.), jnp.ones(3)))
      print(jax.make_jaxpr(jax.grad(f, (0, 1)))(jnp.arange(3.), jnp.ones(3)))
    """,
    "jvp": "print(jax.jvp(sa, (jnp.ones(2), jnp.zeros(2)), (jnp.ones(2), jnp.ones(2))))",
    "vmap": """
      x, y = jnp.arange(6.).reshape(2, 3), jnp.ones(3)
      print(jax.vmap(sa, in_axes=(0, None))(x, y)); print(jax.vmap(sa, in_axes=(None, 0))(y, x))
      print(jax.vmap(sa, in_axes=(1, 0))(x.T, x))
      print(jax.make_jaxpr(jax.vmap(sa, in_axes=(1, 0)))(x.T, x))
    """,
    "tree_mismatch": "sa((jnp.ones(2),), [jnp.ones(2)])",
    "shape_mismatch": "sa(jnp.ones(2), jnp.ones(3))",
}


@pytest.mark.parametrize("name", CASES)
def test_shard_alike_like_jax(name):
  assert_prints_like_jax(CASES[name],
                         jax_scope={"sa": jax_shard_alike.shard_alike},
                         arrax_scope={"sa": arrax_shard_alike.shard_alike})
