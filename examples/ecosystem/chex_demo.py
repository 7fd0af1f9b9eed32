"""chex: shape/type/tree assertions and chex.dataclass."""
import chex
import jax
import jax.numpy as jnp


@chex.dataclass
class State:
  step: chex.Array
  params: dict


x = jnp.ones((3, 4), jnp.float32)
chex.assert_shape(x, (3, 4))
chex.assert_rank(x, 2)
chex.assert_type(x, jnp.float32)
chex.assert_equal_shape([x, jnp.zeros((3, 4))])
chex.assert_trees_all_close({"a": x}, {"a": x + 1e-7})
chex.assert_tree_all_finite({"a": x})
print("asserts passed")

for bad, what in [(lambda: chex.assert_shape(x, (4, 3)), "assert_shape"),
                  (lambda: chex.assert_rank(x, 3), "assert_rank"),
                  (lambda: chex.assert_type(x, jnp.int32), "assert_type"),
                  (lambda: chex.assert_tree_all_finite({"a": x / 0.0}), "assert_tree_all_finite")]:
  try:
    bad()
    print(what, "did not fail")
  except AssertionError:
    print(what, "failed as expected")

s = State(step=jnp.array(0), params={"w": jnp.arange(3.0)})
leaves, tree = jax.tree_util.tree_flatten(s)
print("leaves", [l.tolist() for l in leaves])
s2 = jax.tree_util.tree_map(lambda v: v + 1, s)
print("mapped", int(s2.step), s2.params["w"].tolist())
s3 = s.replace(step=jnp.array(5))
print("replaced", int(s3.step), type(s3).__name__)


@jax.jit
def update(state):
  chex.assert_shape(state.params["w"], (3,))
  return state.replace(step=state.step + 1, params={"w": state.params["w"] * 2})


out = update(s)
print("jitted", int(out.step), out.params["w"].tolist())


@chex.chexify
def positive_log(v):
  chex.assert_tree_all_finite(v)
  return jnp.log(v)


print("chexify", positive_log(jnp.array([1.0, 2.0])).tolist())
