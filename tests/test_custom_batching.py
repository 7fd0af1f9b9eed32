"""jax.custom_batching (custom_vmap, def_vmap, sequential_vmap) against JAX 0.10.2: what the rule
sees (printed), values, under vmap, nested vmap, jit, jvp, grad, errors, jaxprs."""
import jax
import jax.custom_batching  # noqa: F401
import numpy as np
import pytest

import arrax
from tests.oracle import assert_prints_like_jax, check_jaxpr, rand

PRELUDE = """
cb = jax.custom_batching
@cb.custom_vmap
def f(x, y):
  return x + y
@f.def_vmap
def rule(axis_size, in_batched, xs, ys):
  print("rule", axis_size, in_batched, jnp.shape(xs), jnp.shape(ys))
  return xs * ys, True
@cb.sequential_vmap
def s(x, y):
  jax.debug.print("s {} {}", x, y)
  return x + 1, y
a3 = jnp.arange(3.)
"""

CASES = {
    "eager_unbatched": "print(f(1., 2.))",
    "jit_unbatched": "print(jax.jit(f)(1., 2.))",
    "vmap": "print(jax.vmap(f)(a3, a3))",
    "vmap_partial": "print(jax.vmap(f, in_axes=(0, None))(a3, 2.))",
    "vmap_axis1": "print(jax.vmap(f, in_axes=(1, 1))(jnp.ones((2, 3)), jnp.ones((2, 3))))",
    "vmap_out_axes": "print(jax.vmap(f, out_axes=1)(jnp.ones((3, 2)), jnp.ones((3, 2))))",
    "jit_vmap": "print(jax.jit(jax.vmap(f))(a3, a3))",
    "vmap_jit": "print(jax.vmap(jax.jit(f))(a3, a3))",
    "nested_vmap": "print(jax.vmap(jax.vmap(f))(jnp.ones((2, 3)), jnp.ones((2, 3))))",
    "nested_vmap_mixed": "print(jax.vmap(jax.vmap(f, in_axes=(0, None)), in_axes=(None, 0))(a3, jnp.arange(2.)))",
    "unbatched_axis_size": "print(jax.vmap(f, in_axes=(None, None), axis_size=2)(1., 2.))",
    "jvp": "print(jax.jvp(f, (1., 2.), (1., 1.)))",
    "vmap_of_jvp": "print(jax.vmap(lambda x, y: jax.jvp(f, (x, y), (1., 1.)))(a3, a3))",
    "jvp_of_vmap": "print(jax.jvp(jax.vmap(f), (a3, a3), (jnp.ones(3), jnp.ones(3))))",
    "grad_raises": "print(jax.grad(f)(1., 2.))",
    "grad_of_vmap": "print(jax.grad(lambda x: jax.vmap(f)(x, x).sum())(a3))",
    "no_rule": "g = cb.custom_vmap(lambda x: x); g(1.)",
    "rule_tree_mismatch": """
      @cb.custom_vmap
      def h(x): return x
      @h.def_vmap
      def hr(n, b, x): return (x, x), True
      jax.vmap(h)(jnp.ones(2))
    """,
    "rule_spec_mismatch": """
      @cb.custom_vmap
      def h(x): return x
      @h.def_vmap
      def hr(n, b, x): return x, [True]
      jax.vmap(h)(jnp.ones(2))
    """,
    "rule_out_unbatched": """
      @cb.custom_vmap
      def h(x): return x
      @h.def_vmap
      def hr(n, b, x): return x[0], False
      print(jax.vmap(h)(jnp.arange(2.)))
    """,
    "pytree_args_and_out": """
      @cb.custom_vmap
      def p(d, t):
        return {"a": d["u"] * t[0], "b": t[1]}
      @p.def_vmap
      def pr(n, b, d, t):
        print("pr", n, b)
        return {"a": d["u"] + t[0], "b": t[1]}, {"a": True, "b": b[1][1]}
      print(jax.vmap(p, in_axes=({"u": 0}, (0, None)))({"u": a3}, (a3, 5.)))
    """,
    "kwargs": """
      @cb.custom_vmap
      def k(x, y=2.):
        return x * y
      @k.def_vmap
      def kr(n, b, x, y):
        print("kr", b)
        return x - y, True
      print(k(3., y=4.), jax.vmap(lambda x: k(x, y=1.))(a3))
    """,
    "closure_consts": """
      c = jnp.array([1., 2., 3.])
      @cb.custom_vmap
      def q(x):
        return x * c
      @q.def_vmap
      def qr(n, b, x):
        print("qr", b)
        return x[:, None] + c, True
      print(q(2.), jax.vmap(q)(a3))
    """,
    "sequential_vmap": "print(jax.vmap(s, in_axes=(0, None))(jnp.arange(3), 5))",
    "sequential_vmap_jit": "print(jax.jit(jax.vmap(s))(jnp.arange(3), jnp.arange(3)))",
    "sequential_vmap_nested": "print(jax.vmap(jax.vmap(s))(jnp.arange(4).reshape(2, 2), jnp.ones((2, 2), jnp.int32)))",
    "sequential_vmap_eager": "print([float(v) for v in s(1., 2.)])",
    "sequential_vmap_jaxpr": "print(jax.make_jaxpr(jax.vmap(s, in_axes=(0, None)))(jnp.arange(3), 5))",
    "jaxpr_unbatched": "print(jax.make_jaxpr(f)(1., 2.))",
    "jaxpr_vmap": "print(jax.make_jaxpr(jax.vmap(f))(a3, a3))",
    "custom_vjp_outside": """
      @jax.custom_vjp
      @cb.custom_vmap
      def v(x, y):
        return jnp.sin(x) * y
      @v.def_vmap
      def vr(n, b, xs, ys):
        return jnp.cos(xs) * ys, True
      def v_fwd(x, y):
        return v(x, y), (jnp.cos(x), jnp.sin(x), y)
      def v_bwd(res, g):
        cx, sx, y = res
        return (cx * g * y, sx * g)
      v.defvjp(v_fwd, v_bwd)
      print(jax.vmap(v)(jnp.zeros(3), jnp.ones(3)))
      print(jax.grad(v)(0., 1.))
      print(jax.vmap(jax.grad(v))(jnp.zeros(3), jnp.ones(3)))
    """,
    "name_and_type": "print(f.__name__, type(f).__name__, s.__name__)",
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_custom_batching_like_jax(name):
  assert_prints_like_jax(CASES[name], PRELUDE)


@pytest.mark.parametrize("dtype", [np.int32, np.float32, np.float16, np.complex64, np.bool_])
def test_sequential_vmap_dtypes(dtype):
  x = rand((3, 2), dtype, seed=3)
  code = f"""
  @cb.sequential_vmap
  def t(x):
    return x.T if x.ndim == 2 else x[::-1]
  x = jnp.asarray(np.array({x.tolist()!r}, dtype=np.{np.dtype(dtype).name}))
  out = jax.vmap(t)(x)
  print(out.dtype, out.shape, np.asarray(out).tolist())
  """
  assert_prints_like_jax(code, PRELUDE)


def test_def_vmap_returns_rule():
  f = arrax.custom_batching.custom_vmap(lambda x: x)
  r = lambda n, b, x: (x, True)  # noqa: E731
  assert f.def_vmap(r) is r
  assert {n for n in dir(arrax.custom_batching) if not n.startswith("_")} == {
      "custom_vmap", "sequential_vmap"}


def test_custom_vmap_jaxpr_check():
  def make(np_, top):
    g = top.custom_batching.custom_vmap(lambda x: x * 2)
    g.def_vmap(lambda n, b, x: (x * 3, True))
    return top.vmap(g)
  check_jaxpr(make, np.arange(3, dtype=np.float32))


def test_vmap_of_jvp_with_only_tangents_batched():
  # JAX 0.10.2 raises an IndexError inside its jvp-of-rule here; arrax follows the rule:
  # the primal out is x * y unbatched-then-broadcast, the tangent is its derivative.
  cbm = arrax.custom_batching
  f = cbm.custom_vmap(lambda x, y: x + y)
  f.def_vmap(lambda n, b, xs, ys: (xs * ys, True))
  p, t = arrax.vmap(lambda t: arrax.jvp(f, (1., 2.), (t, t)))(arrax.numpy.arange(3.))
  np.testing.assert_allclose(np.asarray(p), [2., 2., 2.])
  np.testing.assert_allclose(np.asarray(t), [0., 3., 6.])
